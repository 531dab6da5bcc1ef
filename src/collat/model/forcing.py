"""Whether the runs ran what their logs name: the algorithm forced, the placement mapped.

OpenMPI reads ``coll_tuned_<op>_algorithm`` only beside ``coll_tuned_use_dynamic_rules 1``. Without
it every "forced" run measures the fixed rules' choice, and logs named alg1, alg5, ... say nothing
of it. Likewise ``--map-by node`` within an allocation of one node places ranks as ``--map-by
core`` does, and under ``srun`` its ``--distribution`` places them: logs named by mapping then hold
one placement.
Where the openmpi mode prices two algorithms (or two mappings of one algorithm) at least
:data:`APART` times apart, real runs differ too. The median measured ratio of such pairs is
2.9-4.9x per operation and mapping on the study's data and 2.3x / 2.8x on a 16-core node, 1.9-5.0x
per operation and pair of mappings on the study; the same data forged as one algorithm (or one
placement) with a run-to-run noise of sd 0.1-0.3 per run measure 1.1-1.35x (benchmarks/README.md,
"forced_runs.py"). Runs that measure within :data:`WITHIN` of each other there ran as one.
"""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import pandas as pd

from collat import InputError

APART = 2.0  # the openmpi mode's ratio from which two algorithms (or placements) count as different
WITHIN = 1.4  # a median measured ratio below this: one ran (forged 1.34-1.35x; real 2.3x, placements 1.93x)
MIN_CELLS = 20  # fewer such cells: no verdict

SEPARATION_COLUMNS = ["operation", "mapping", "pairs", "cells", "median_ratio", "source_a", "source_b"]
PLACEMENT_COLUMNS = ["operation", "mapping_a", "mapping_b", "algorithms", "cells", "median_ratio", "source_a",
                     "source_b"]
KEYS = ["operation", "algorithm", "mapping", "P", "size"]


def measured_cells(measured: pd.DataFrame, priced: pd.DataFrame) -> pd.DataFrame:
    """Each cell's median avg over the tidy collective rows not flagged as outliers, a log of it
    (``source``) and the openmpi mode's price (``predicted``)."""
    rows = measured.loc[~measured["outlier"].astype(bool)]
    cells = rows.groupby(KEYS, observed=True, as_index=False).agg(avg=("avg", "median"), source=("source", "first"))
    return cells.merge(priced[KEYS + ["predicted"]], on=KEYS)


def apart_ratios(wide: pd.DataFrame, a, b, apart: float) -> pd.Series:
    """|log(measured a / measured b)| at the rows of ``wide`` (columns avg and predicted, each by
    label) where the prices of ``a`` and ``b`` are at least ``apart`` times apart."""
    measured_log = np.log(wide["avg"][a] / wide["avg"][b])
    priced_log = np.log(wide["predicted"][a] / wide["predicted"][b])
    return measured_log[measured_log.notna() & (priced_log.abs() >= np.log(apart))].abs()


def forced_separation(measured: pd.DataFrame, priced: pd.DataFrame, apart: float = APART) -> pd.DataFrame:
    """Per operation and mapping, over the pairs of algorithms (the default included) measured at
    one P and size where ``priced`` (the openmpi mode, target avg: columns operation, algorithm,
    mapping, P, size, predicted) puts them at least ``apart`` times apart: how many pairs and
    cells, the median measured ratio (the larger latency over the smaller, from each cell's median
    avg of ``measured``, the tidy collective rows not flagged as outliers) and a log of each
    algorithm of the pair with the most such cells (:data:`SEPARATION_COLUMNS`)."""
    out = []
    for (op, mapping), group in measured_cells(measured, priced).groupby(["operation", "mapping"], observed=True):
        wide = group.pivot_table(index=["P", "size"], columns="algorithm", values=["avg", "predicted"])
        sources = group.set_index(["algorithm", "P", "size"])["source"]
        ratios, best = [], (0, None)
        for a, b in itertools.combinations(sorted(group["algorithm"].unique()), 2):
            pair = apart_ratios(wide, a, b, apart)
            if len(pair):
                ratios.append(pair)
                if len(pair) > best[0]:
                    P, size = pair.index[-1]
                    best = (len(pair), (sources[(a, P, size)], sources[(b, P, size)]))
        if ratios:
            pooled = pd.concat(ratios)
            out.append((op, mapping, len(ratios), len(pooled), float(np.exp(pooled.median())), *best[1]))
    return pd.DataFrame(out, columns=SEPARATION_COLUMNS)


def measured_as_one(separation: pd.DataFrame, within: float = WITHIN, min_cells: int = MIN_CELLS) -> pd.DataFrame:
    """The rows of :func:`forced_separation` or :func:`placement_separation` whose two sides (the
    algorithms, the mappings) measure as one: at least ``min_cells`` cells, median ratio below
    ``within``."""
    return separation.loc[(separation["cells"] >= min_cells) & (separation["median_ratio"] < within)]


def one_algorithm_message(row, apart: float = APART) -> tuple[str, str, str]:
    """The (where, expected, found) of the one line that refuses ``row`` of :func:`forced_separation`
    (for :class:`collat.InputError`, the logs named as given in ``row``)."""
    op = row["operation"]
    return (f"{row['source_a']}, {row['source_b']}",
            f"{op} runs under map-by {row['mapping']} that ran the algorithms they name (the openmpi mode prices "
            f"{row['pairs']} pairs of them at least {apart:g}x apart in {row['cells']} measured cells)",
            f"within {row['median_ratio']:.2f}x of each other there (median): without --mca "
            f"coll_tuned_use_dynamic_rules 1 OpenMPI runs its default whatever coll_tuned_{op}_algorithm says; "
            "rerun with it, or set quality.forced_check: false")


def check_forced_runs(measured: pd.DataFrame, priced: pd.DataFrame, name: Callable[[str], str] = str,
                      stop: bool = True) -> pd.DataFrame:
    """:func:`forced_separation` of the tidy collective rows against the openmpi mode's prices
    (target avg); where runs measure as one algorithm (:func:`measured_as_one`) and ``stop``
    (config ``quality.forced_check``), one line naming two of their logs (``name``: a source as the
    user knows it)."""
    return refused(forced_separation(measured, priced), one_algorithm_message, name, stop)


def refused(separation: pd.DataFrame, message: Callable, name: Callable[[str], str], stop: bool) -> pd.DataFrame:
    """``separation``, unless ``stop`` and a row of it measures as one (:func:`measured_as_one`):
    then the :class:`collat.InputError` of ``message`` (where, expected, found) for its first such
    row, its logs named by ``name``."""
    flagged = measured_as_one(separation)
    if stop and len(flagged):
        row = flagged.iloc[0].copy()
        row["source_a"], row["source_b"] = name(row["source_a"]), name(row["source_b"])
        where, expected, found = message(row)
        raise InputError(where, None, expected, found)
    return separation


def placement_separation(measured: pd.DataFrame, priced: pd.DataFrame, apart: float = APART) -> pd.DataFrame:
    """Per operation and pair of mappings, over the algorithms measured under both at one P and size
    where ``priced`` (the openmpi mode, target avg) puts the two placements at least ``apart``
    times apart: how many algorithms and cells, the median measured ratio (the larger latency over
    the smaller) and a log of each mapping for the algorithm with the most such cells
    (:data:`PLACEMENT_COLUMNS`). Pairs of mappings are not pooled: one mislabelled mapping leaves
    the other two apart."""
    ratios: dict[tuple, list] = {}
    for (op, algorithm), group in measured_cells(measured, priced).groupby(["operation", "algorithm"], observed=True):
        wide = group.pivot_table(index=["P", "size"], columns="mapping", values=["avg", "predicted"])
        sources = group.set_index(["mapping", "P", "size"])["source"]
        for a, b in itertools.combinations(sorted(group["mapping"].unique()), 2):
            pair = apart_ratios(wide, a, b, apart)
            if len(pair):
                P, size = pair.index[-1]
                ratios.setdefault((op, a, b), []).append((pair, sources[(a, P, size)], sources[(b, P, size)]))
    out = []
    for (op, a, b), found in ratios.items():
        pooled = pd.concat([pair for pair, _, _ in found])
        _, source_a, source_b = max(found, key=lambda f: len(f[0]))
        out.append((op, a, b, len(found), len(pooled), float(np.exp(pooled.median())), source_a, source_b))
    return pd.DataFrame(out, columns=PLACEMENT_COLUMNS)


def one_placement_message(row, apart: float = APART) -> tuple[str, str, str]:
    """The (where, expected, found) of the one line that refuses ``row`` of :func:`placement_separation`."""
    return (f"{row['source_a']}, {row['source_b']}",
            f"{row['operation']} runs under map-by {row['mapping_a']} and map-by {row['mapping_b']} placed as they "
            f"name (the openmpi mode prices the two placements of {row['algorithms']} algorithms at least "
            f"{apart:g}x apart in {row['cells']} measured cells)",
            f"within {row['median_ratio']:.2f}x of each other there (median): one placement ran under both names "
            "(--map-by node within an allocation of one node places ranks as --map-by core; under srun its "
            "--distribution places them); rerun them placed, or set quality.placement_check: false")


def check_placements(measured: pd.DataFrame, priced: pd.DataFrame, name: Callable[[str], str] = str,
                     stop: bool = True) -> pd.DataFrame:
    """:func:`placement_separation` of the tidy collective rows against the openmpi mode's prices
    (target avg); where two mappings measure as one placement (:func:`measured_as_one`) and ``stop``
    (config ``quality.placement_check``), one line naming a log of each."""
    return refused(placement_separation(measured, priced), one_placement_message, name, stop)
