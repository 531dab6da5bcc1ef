"""Whether the forced runs ran the algorithms their logs name.

OpenMPI reads ``coll_tuned_<op>_algorithm`` only beside ``coll_tuned_use_dynamic_rules 1``. Without
it every "forced" run measures the fixed rules' choice, and logs named alg1, alg5, ... say nothing
of it. Where the openmpi mode prices two algorithms at least :data:`APART` times apart, real runs
differ too: the median measured ratio of such pairs, per operation and mapping, is 2.9-4.9x on the
study's data and 2.3x / 2.8x on a 16-core node; the same data forged as one algorithm with a
run-to-run noise of sd 0.1-0.3 per run measure 1.1-1.3x (benchmarks/README.md, "forced_runs.py").
An operation and mapping whose algorithms measure within :data:`WITHIN` of each other there ran as
one.
"""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import pandas as pd

from collat import InputError

APART = 2.0  # the openmpi mode's ratio from which two algorithms count as different
WITHIN = 1.4  # a median measured ratio below this: one algorithm ran (between the forged 1.34x and the real 2.3x)
MIN_CELLS = 20  # fewer such cells: no verdict

SEPARATION_COLUMNS = ["operation", "mapping", "pairs", "cells", "median_ratio", "source_a", "source_b"]


def forced_separation(measured: pd.DataFrame, priced: pd.DataFrame, apart: float = APART) -> pd.DataFrame:
    """Per operation and mapping, over the pairs of algorithms (the default included) measured at
    one P and size where ``priced`` (the openmpi mode, target avg: columns operation, algorithm,
    mapping, P, size, predicted) puts them at least ``apart`` times apart: how many pairs and
    cells, the median measured ratio (the larger latency over the smaller, from each cell's median
    avg of ``measured``, the tidy collective rows not flagged as outliers) and a log of each
    algorithm of the pair with the most such cells (:data:`SEPARATION_COLUMNS`)."""
    keys = ["operation", "algorithm", "mapping", "P", "size"]
    rows = measured.loc[~measured["outlier"].astype(bool)]
    cells = rows.groupby(keys, observed=True, as_index=False).agg(avg=("avg", "median"), source=("source", "first"))
    cells = cells.merge(priced[keys + ["predicted"]], on=keys)
    out = []
    for (op, mapping), group in cells.groupby(["operation", "mapping"], observed=True):
        wide = group.pivot_table(index=["P", "size"], columns="algorithm", values=["avg", "predicted"])
        sources = group.set_index(["algorithm", "P", "size"])["source"]
        ratios, best = [], (0, None)
        for a, b in itertools.combinations(sorted(group["algorithm"].unique()), 2):
            measured_log = np.log(wide["avg"][a] / wide["avg"][b])
            priced_log = np.log(wide["predicted"][a] / wide["predicted"][b])
            apart_cells = measured_log.notna() & (priced_log.abs() >= np.log(apart))
            if apart_cells.any():
                ratios.append(measured_log[apart_cells].abs())
                if apart_cells.sum() > best[0]:
                    P, size = apart_cells[apart_cells].index[-1]
                    best = (int(apart_cells.sum()), (sources[(a, P, size)], sources[(b, P, size)]))
        if ratios:
            pooled = pd.concat(ratios)
            out.append((op, mapping, len(ratios), len(pooled), float(np.exp(pooled.median())), *best[1]))
    return pd.DataFrame(out, columns=SEPARATION_COLUMNS)


def one_algorithm_ran(separation: pd.DataFrame, within: float = WITHIN, min_cells: int = MIN_CELLS) -> pd.DataFrame:
    """The rows of :func:`forced_separation` whose algorithms measure as one: at least ``min_cells``
    cells, median ratio below ``within``."""
    return separation.loc[(separation["cells"] >= min_cells) & (separation["median_ratio"] < within)]


def one_algorithm_message(row, apart: float = APART) -> tuple[str, str, str]:
    """The (where, expected, found) of the one line that refuses ``row`` of :func:`one_algorithm_ran`
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
    (target avg); where :func:`one_algorithm_ran` finds runs that measure as one algorithm and
    ``stop`` (config ``quality.forced_check``), one line naming two of their logs (``name``: a
    source as the user knows it)."""
    separation = forced_separation(measured, priced)
    flagged = one_algorithm_ran(separation)
    if stop and len(flagged):
        row = flagged.iloc[0].copy()
        row["source_a"], row["source_b"] = name(row["source_a"]), name(row["source_b"])
        where, expected, found = one_algorithm_message(row)
        raise InputError(where, None, expected, found)
    return separation
