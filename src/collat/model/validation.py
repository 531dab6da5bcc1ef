"""What each model predicts outside the data it was fitted or tuned on: splits, baselines, noise floor.

The measured cells are the medians over runs of one (operation, algorithm, mapping, P, size), rows
the ingest flagged as outliers left out (the ``robust`` cleaning). A split divides them into a
training part and a test part; a model is fitted on the training part only and scored on the test
part (:func:`splits`). Where a split cuts the outlier rule's series (along P or along sizes), the
training part's flags are set again on its own rows (:func:`training_cells`): no test row decides
which training row counts. The other splits hold out whole curves, whose flags are their own.

* ``sparse_P``: every ``sparse_every``-th measured P of each (operation, algorithm, mapping, size)
  trains, the P values between its first and last training P are tested (interpolation; a curve
  with fewer than two training P is not tested);
* ``extrapolation``: P <= ``extrapolation_P`` (config null: half the machine's cores) trains, larger P
  are tested;
* ``unseen_algorithm``: one fold per (operation, algorithm): the operation's other algorithms
  train, the left-out algorithm is tested: can the model price an algorithm nobody measured?
* ``unseen_mapping``: one fold per mapping;
* ``sizes``: sizes <= ``size_max_train`` train, larger sizes are tested.

Models: ``openmpi`` (the model stage's openmpi mode: fitted on no collective measurement, its test
part is every measured cell of the split), ``paper`` (the study's model; its segment counts were
tuned by the study on all of this data, so its scores are not out of sample), ``segmented`` (study
eq. 12 refitted on the training part of each (operation, algorithm, mapping, size); it cannot
predict an unseen algorithm, mapping or size), and ``nearest_neighbour``, the naive baseline:
a k-nearest-neighbours regression of log latency on (log2 P, log2 size, operation, algorithm,
mapping), inverse-distance-weighted, categories one-hot and scaled so that a cell of
the same operation, algorithm and mapping is nearer than any other (:mod:`collat.model.hybrid_mode`).
``hybrid`` (the calibrated mode times its own residuals on the training cells, interpolated along
P; averaged in log with the segmented regression's trend beyond a curve's training P where the two
go the same way with P, and with the openmpi mode where no training cell has the operation and
mapping: :mod:`collat.model.hybrid_mode`)
is refitted with the calibrated mode on every training part; ``hybrid_carried``, the hybrid without
the trend (what a what-if machine's P beyond the measured ones get: workflow/scripts/model_what_if.py), is
scored in the extrapolation split, the one where the two differ; ``hybrid_untwinned``, the hybrid
without the measurement of a training cell the model prices as the same run (a twin is a
measurement, not a prediction), in the unseen_algorithm split.

The fitted models give an 80 % prediction interval with each prediction: the prediction times
exp(+-(w + v d)), d the octaves from the cell to its curve's nearest training P (or size, in the
sizes split; 0 where a split holds out whole curves), w + v d the 80th percentile of the model's
|log error| given d, a line fitted to its errors on inner folds of the fold's training part that
hold out of it what the split holds out (:func:`inner_folds`, :func:`distances`,
:func:`interval_width`; split conformal prediction with a width that depends on where a cell
stands, nothing seen of the test part; each inner fold is calibrated
again on its own training cells); the scores' ``coverage`` is the share of test cells inside it.
In the unseen_algorithm split the same inner folds choose how far the calibration carries to the
held-out algorithm (:mod:`collat.model.transfer`), and the width of a held-out algorithm comes
from the inner folds that held out one of its kind (foreign to the rest or not). A test cell in a
regime that no training cell of its curve is in (:func:`unseen_regime`: along P, a socket or node the mapping had not filled yet;
along sizes, beyond a channel's protocol switch or its half-performance length) differs from
anything the inner folds along the axis can hold out: its half-width adds, in quadrature, the
model's half-width for a mapping nobody measured, from inner folds that hold out each mapping of
the training part (a curve priced from the machine model and the other curves alone), or, where
the held-out cells of some mapping span more nodes than the rest of the training part reaches,
from those cells alone (:func:`regime_folds`: what a node nobody measured changes).

The noise floor (:func:`noise_floor`) is the median relative difference between repeated
measurements of one cell (|a - b| / b over ordered pairs of runs): the error of predicting a
measurement with another measurement of the same thing; :func:`noise_floors` gives it per mapping
and number of nodes the communicator spans too (the data's noise is not the same everywhere), and
between jobs: OpenMPI's default where its fixed rules run a forced algorithm's tree, against that
algorithm's own run (kind ``another_run``; on the study 2-11 times the repeats' floor on two nodes).
Beside it in the sparse_P split, the
reference ``measured_neighbours`` (:func:`measured_neighbours`): each test cell interpolated from
the measurements at the nearest measured P on either side, which the split held out. It is no
model (it uses test data); it is what measurements a few P apart, instead of ``sparse_every``
times farther apart, tell about a P between them: noise plus how fast the curve bends. And the
baseline ``training_neighbours`` (:func:`training_neighbours`): the same straight line in log
between the training part's measurements, no model of the machine; what a fitted model must beat
at P held out for its physics to be worth anything there.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from collat.model.hybrid_mode import CARRIED, UNTWINNED, nearest_neighbour
from collat.model.placement import active_units, total_cores
from collat.regression.segmented import design, fit_predict, form_of, group_scores
from collat.runner import fork_map
from collat.config.settings import FITTED_MODES

SPLITS = ("sparse_P", "extrapolation", "unseen_algorithm", "unseen_mapping", "sizes")
REFERENCE = "measured_neighbours"  # no model: the sparse_P test cells interpolated from their measured neighbours
LINE = "training_neighbours"  # no model: the sparse_P test cells interpolated from the training measurements
CELL = ["operation", "algorithm", "mapping", "P", "size"]
GROUP = ["operation", "algorithm", "mapping", "size"]
COLUMNS = ["model", "split", "operation", "algorithm", "mapping", "target", "cleaning", "n", "r2", "mape", "floor",
           "coverage"]


@dataclass(frozen=True)
class ValidationOptions:
    """Config ``validation``, checked by the schema."""

    sparse_every: int
    extrapolation_P: int
    size_max_train: int
    neighbours: int
    targets: tuple[str, ...]

    @classmethod
    def from_config(cls, cfg: dict, machine: dict) -> "ValidationOptions":
        """``extrapolation_P`` null: half the cores of ``machine`` (config ``machine``)."""
        last = cfg["extrapolation_P"]
        return cls(int(cfg["sparse_every"]), total_cores(machine) // 2 if last is None else int(last),
                   int(cfg["size_max_train"]), int(cfg["neighbours"]), tuple(cfg["targets"]))


def measured_cells(collective: pd.DataFrame, target: str) -> pd.DataFrame:
    """Median over runs per cell of ``target``, outliers left out (the robust cleaning)."""
    c = collective[~collective["outlier"].astype(bool) & collective[target].notna() & (collective[target] > 0)]
    out = c.groupby(CELL, as_index=False)[target].median().rename(columns={target: "measured"})
    out["algorithm"] = out["algorithm"].astype(int)
    return out


def noise_floor(collective: pd.DataFrame, target: str) -> float:
    """Median of |a - b| / b over ordered pairs of repeated measurements of one cell (NaN without repeats)."""
    rel = np.abs(np.expm1(_repeat_differences(collective, target)[0]))
    return float(np.median(rel)) if len(rel) else float("nan")


def _repeat_differences(collective: pd.DataFrame, target: str) -> tuple[np.ndarray, pd.DataFrame]:
    """(log(a / b) over every ordered pair of repeated measurements of one cell, outliers left out;
    the cell of each pair). |a - b| / b is |exp(.) - 1| of it."""
    c = collective[~collective["outlier"].astype(bool) & (collective[target] > 0)][CELL + [target]]
    c = c[c.groupby(CELL)[target].transform("size") > 1].reset_index(drop=True)
    c["row"] = np.arange(len(c))
    pairs = c.merge(c, on=CELL, suffixes=("_a", "_b"))  # every ordered pair within a cell ...
    pairs = pairs[pairs["row_a"] != pairs["row_b"]]  # ... but a row with itself
    ratio = np.log(pairs[f"{target}_a"].to_numpy(float)) - np.log(pairs[f"{target}_b"].to_numpy(float))
    return ratio, pairs[CELL].reset_index(drop=True)


def _default_twin_differences(collective: pd.DataFrame, target: str, default_rules: dict,
                               trees: list) -> tuple[np.ndarray, pd.DataFrame]:
    """:func:`twin_pairs` of the measured cells of ``target`` (two jobs of the study)."""
    return twin_pairs(measured_cells(collective, target), default_rules, trees)


def default_run(cells: pd.DataFrame, default_rules: dict) -> np.ndarray:
    """The algorithm OpenMPI's fixed rules (``default_rules``, config ``model.openmpi.default_rules``)
    run at each of ``cells`` (operation, P, size), -1 for an operation without rules."""
    from collat.model.shapes.openmpi import default_algorithms

    out = np.full(len(cells), -1, dtype=np.int64)
    for op, rows in cells.groupby("operation", sort=False).indices.items():
        if op in default_rules:
            d = cells.iloc[rows]
            Ps, sizes = np.sort(d["P"].unique()), np.sort(d["size"].unique())
            out[rows] = default_algorithms(op, Ps, sizes, default_rules)[np.searchsorted(Ps, d["P"]),
                                                                         np.searchsorted(sizes, d["size"])]
    return out


def twin_pairs(c: pd.DataFrame, default_rules: dict, trees: list) -> tuple[np.ndarray, pd.DataFrame]:
    """(log(a / b) over both orders of every pair (OpenMPI's default, a forced algorithm) of the
    measured cells ``c`` (:func:`measured_cells`) at one (operation, mapping, P, size) where the
    fixed rules (``default_rules``, config ``model.openmpi.default_rules``) run that algorithm with
    its forced shape (``trees``, config ``model.openmpi.trees``; a chain by default is another shape:
    :func:`collat.model.shapes.openmpi.as_run`), each side the median of its runs; the cell of each
    pair): one configuration measured in two runs (two jobs of the study), where
    :func:`_repeat_differences` compares runs within one job."""
    from collat.model.shapes.openmpi import as_run, tree_spec

    key = ["operation", "mapping", "P", "size"]
    default = c[c["algorithm"] == 0]
    runs = default_run(default, default_rules)
    same = np.array([(spec := tree_spec(trees, op, a)) is not None and as_run(spec, True) == spec
                     for op, a in zip(default["operation"], runs)], dtype=bool)
    if not same.any():
        return np.zeros(0), pd.DataFrame(columns=CELL)
    pairs = default.assign(algorithm=runs)[same].merge(c[c["algorithm"] != 0], on=key + ["algorithm"],
                                                       suffixes=("_default", ""))
    ratio = np.log(pairs["measured_default"].to_numpy(float)) - np.log(pairs["measured"].to_numpy(float))
    cells = pairs[CELL].reset_index(drop=True)
    return np.r_[ratio, -ratio], pd.concat([cells, cells], ignore_index=True)


def nodes_spanned(cells: pd.DataFrame, machine: dict) -> np.ndarray:
    """How many nodes the communicator of each of ``cells`` (mapping, P) spans on ``machine`` (its
    placement, :func:`collat.model.placement.place_arrays`)."""
    from collat.model.placement import place_arrays

    spans = {(m, P): len(np.unique(place_arrays(int(P), m, machine)["node"]))
             for m, P in cells[["mapping", "P"]].drop_duplicates().itertuples(index=False)}
    return np.array([spans[(m, P)] for m, P in zip(cells["mapping"], cells["P"])], dtype=np.int64)


FLOOR_COLUMNS = ["target", "kind", "operation", "mapping", "nodes", "cells", "pairs", "floor", "spread"]
FLOOR_KINDS = ("repeats", "another_run")  # runs of one cell in one job; the default and a forced run of one tree


def noise_floors(collective: pd.DataFrame, machine: dict, targets, default_rules: dict | None = None,
                 trees: list | None = None) -> pd.DataFrame:
    """:func:`noise_floor` of each target over all the repeats (kind ``repeats``, mapping and nodes
    ``all``: the floor the validation's scores stand beside), then per mapping and number of nodes
    the communicator spans (from the placement of P on ``machine``), where the data hold repeats:
    how much the same measurement differs from itself there. With OpenMPI's ``default_rules`` and
    the forced ``trees``, the same for kind ``another_run``: the default's measurement against the
    forced algorithm's where the default runs that algorithm's tree
    (:func:`_default_twin_differences`), one configuration measured by two jobs. Columns
    :data:`FLOOR_COLUMNS` (cells: cells compared; pairs: ordered pairs of their runs; ``spread``:
    the :data:`INTERVAL` quantile of |log(a / b)| over the pairs, how far one run of a
    configuration lies from another: what a new run adds to a prediction's interval,
    :func:`new_run_spread`)."""
    rows = []
    for target in targets:
        kinds = {"repeats": _repeat_differences(collective, target)}
        if default_rules is not None and trees is not None:
            kinds["another_run"] = _default_twin_differences(collective, target, default_rules, trees)
        for kind, (ratio, cells) in kinds.items():
            rows += _floor_rows(target, kind, ratio, cells, machine)
    return pd.DataFrame(rows, columns=FLOOR_COLUMNS)


def _floor_rows(target: str, kind: str, ratio: np.ndarray, cells: pd.DataFrame, machine: dict) -> list[dict]:
    """The rows of :func:`noise_floors` of one target and kind from the log ratios of its pairs
    (``ratio``, one per pair, the pair's cell in ``cells``): over all, then per mapping and number
    of nodes spanned (operation ``all``); then the same per operation; none without a pair."""
    if not len(ratio):
        return []
    rel, spread = np.abs(np.expm1(ratio)), np.abs(ratio)
    nodes = nodes_spanned(cells, machine)
    operation = cells["operation"].astype(str).to_numpy()

    def row(op, mapping, n, idx):
        return {"target": target, "kind": kind, "operation": op, "mapping": mapping, "nodes": n,
                "cells": len(cells.iloc[idx].drop_duplicates()), "pairs": len(idx),
                "floor": float(np.median(rel[idx])), "spread": float(np.quantile(spread[idx], INTERVAL))}
    rows = []
    for op in ["all", *sorted(set(operation))]:
        mine = np.arange(len(rel)) if op == "all" else np.flatnonzero(operation == op)
        rows.append(row(op, "all", "all", mine))
        spanned = pd.DataFrame({"m": cells["mapping"].to_numpy()[mine], "n": nodes[mine]}).groupby(["m", "n"]).indices
        rows += [row(op, mapping, str(n), mine[idx]) for (mapping, n), idx in spanned.items()]
    return rows


def measured_neighbours(cells: pd.DataFrame) -> np.ndarray:
    """Each cell's measured latency interpolated linearly in log2 P (log latency) between the
    nearest other measured P below and above it on its curve (operation, algorithm, mapping,
    size); NaN at a curve's first and last P."""
    out = np.full(len(cells), np.nan)
    P, y = np.log2(cells["P"].to_numpy(float)), np.log(cells["measured"].to_numpy(float))
    for rows in cells.groupby(GROUP, sort=False).indices.values():
        if len(rows) < 3:
            continue
        rows = rows[np.argsort(P[rows], kind="stable")]
        x, v = P[rows], y[rows]
        out[rows[1:-1]] = np.exp(v[:-2] + (v[2:] - v[:-2]) * (x[1:-1] - x[:-2]) / (x[2:] - x[:-2]))
    return out


def training_neighbours(train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """Each test cell's latency interpolated linearly in log2 P (log latency) between the
    measurements of ``train`` at the nearest P below and above it on its curve (operation,
    algorithm, mapping, size): a straight line between measured P, no model of the machine. NaN
    where the curve has no training P on one side."""
    out = np.full(len(test), np.nan)
    have = train.groupby(GROUP, sort=False).indices
    P, y = np.log2(train["P"].to_numpy(float)), np.log(train["measured"].to_numpy(float))
    at = np.log2(test["P"].to_numpy(float))
    for key, rows in test.groupby(GROUP, sort=False).indices.items():
        known = have.get(key)
        if known is None:
            continue
        known = known[np.argsort(P[known], kind="stable")]
        x = P[known]
        inside = rows[(at[rows] >= x[0]) & (at[rows] <= x[-1])]
        out[inside] = np.exp(np.interp(at[inside], x, y[known]))
    return out


def interpolated(cells: pd.DataFrame, train: np.ndarray) -> np.ndarray:
    """The rows of ``cells`` outside ``train`` whose P lies between their curve's first and last
    training P: what interpolation tests. A P beyond them is an extrapolation, and a curve with
    fewer than two training P (a sweep of powers of two on a small machine) has none."""
    keys = [cells[g].to_numpy() for g in GROUP]
    P = cells["P"].to_numpy()
    trained = pd.Series(np.where(train, P, np.nan)).groupby(keys)
    return ~train & (P >= trained.transform("min").to_numpy()) & (P <= trained.transform("max").to_numpy())


def splits(cells: pd.DataFrame, options: ValidationOptions):
    """Yield (split, fold, train mask, test mask) over the rows of ``cells``; the masks never overlap,
    and neither is empty: a fold with nothing to train on (one mapping in the data: no
    unseen_mapping; no measured P above ``extrapolation_P``: no extrapolation) is no test of a fitted
    model, and an unfitted one scored there would be scored on data the others could not see."""
    P = cells["P"].to_numpy()
    rank = cells.groupby(GROUP)["P"].rank(method="dense").to_numpy().astype(int) - 1

    def kept(split, fold, train, test):
        return [(split, fold, train, test)] if train.any() and test.any() else []

    train = rank % options.sparse_every == 0
    yield from kept("sparse_P", "all", train, interpolated(cells, train))
    train = P <= options.extrapolation_P
    yield from kept("extrapolation", "all", train, ~train)
    for (op, alg), _ in cells.groupby(["operation", "algorithm"]):
        same_op = (cells["operation"] == op).to_numpy()
        test = same_op & (cells["algorithm"] == alg).to_numpy()
        yield from kept("unseen_algorithm", f"{op} {alg}", same_op & ~test, test)
    for mapping in sorted(cells["mapping"].unique()):
        test = (cells["mapping"] == mapping).to_numpy()
        yield from kept("unseen_mapping", mapping, ~test, test)
    train = cells["size"].to_numpy() <= options.size_max_train
    yield from kept("sizes", "all", train, ~train)


def odd_and_even(cells: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train mask, test mask) of each curve's odd and even measured P in turn, the test cells
    those between two of the others (:func:`interpolated`); a fold with nothing to test is left out."""
    rank = cells.groupby(GROUP)["P"].rank(method="dense").to_numpy().astype(int) - 1
    pairs = [(train, interpolated(cells, train)) for train in (rank % 2 == 0, rank % 2 == 1)]
    return [(a, b) for a, b in pairs if a.any() and b.any()]


def inner_folds(split: str, cells: pd.DataFrame, options: ValidationOptions) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train mask, test mask) pairs over the rows of a training part ``cells`` that hold out of it
    what ``split`` holds out of the data, so that what a model may not see in a fold (the width of
    its prediction interval) is chosen inside the fold's training part: sparse_P, the curves' odd
    and even measured P in turn, each between two of the others (:func:`interpolated`); extrapolation, P above half
    ``extrapolation_P``; unseen_algorithm, each of the part's algorithms of an operation that has
    more than one; unseen_mapping, each of its mappings; sizes, the sizes above its median size.
    Folds with nothing to train or test on are left out."""
    P = cells["P"].to_numpy()
    if split == "sparse_P":
        pairs = odd_and_even(cells)
    elif split == "extrapolation":
        test = P > options.extrapolation_P // 2
        pairs = [(~test, test)]
    elif split == "unseen_algorithm":
        pairs = []
        for (op, alg), _ in cells.groupby(["operation", "algorithm"]):
            same = (cells["operation"] == op).to_numpy()
            test = same & (cells["algorithm"] == alg).to_numpy()
            pairs.append((same & ~test, test))  # an operation with one algorithm: nothing to train on, left out
    elif split == "unseen_mapping":
        tests = [(cells["mapping"] == m).to_numpy() for m in sorted(cells["mapping"].unique())]
        pairs = [(~test, test) for test in tests]
    elif split == "sizes":
        size = cells["size"].to_numpy()
        test = size > np.median(size)
        pairs = [(~test, test)]
    else:
        raise ValueError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    return [(a, b) for a, b in pairs if a.any() and b.any()]


def regime_folds(cells: pd.DataFrame, options: "ValidationOptions",
                 machine: dict) -> list[tuple[np.ndarray, np.ndarray]]:
    """The inner folds whose error is the width a cell in an unseen regime adds: each mapping of a
    training part ``cells`` held out (:func:`inner_folds`, unseen_mapping). Where holding a mapping
    out leaves the others on fewer nodes than some of its cells span, those cells alone: what a
    node the training cells never reached changes, as a test cell past the last measured node
    meets it; else every held-out cell."""
    folds = inner_folds("unseen_mapping", cells, options)
    nodes = nodes_spanned(cells, machine)
    crossing = [(a, b & (nodes > nodes[a].max())) for a, b in folds]
    crossing = [(a, b) for a, b in crossing if b.any()]
    return crossing or folds


INTERVAL = 0.8  # the nominal coverage of the fitted models' prediction intervals
SCORED_ON = {CARRIED: "extrapolation", UNTWINNED: "unseen_algorithm"}  # the hybrid's variants: the split of each


@dataclass(frozen=True)
class InnerFolds:
    """The inner folds of a fold's training part (:func:`inner_folds`): (train mask, test mask, the
    segmented regression's and the openmpi mode's predictions of its test cells, their
    :func:`distances`) per inner fold, the models whose interval they choose, the split whose
    held-out part they mimic, and ``regime``: folds of the same form that hold out each mapping,
    whose interval width a test cell in an unseen regime adds (:func:`unseen_regime`)."""

    folds: tuple
    models: tuple[str, ...]
    split: str = ""
    regime: tuple = ()


@dataclass(frozen=True)
class Width:
    """The half-width of a prediction interval, in log latency: ``base`` at a cell that stands where
    the training cells are (distance 0), plus ``per_octave`` for each octave further along the
    split's axis (:func:`distances`)."""

    base: float
    per_octave: float = 0.0

    def at(self, distance) -> np.ndarray:
        """The half-width at ``distance`` octaves (NaN where either part is unknown)."""
        return self.base + self.per_octave * np.asarray(distance, float)


NO_WIDTH = Width(float("nan"), float("nan"))


def interval_width(measured: np.ndarray, predicted: np.ndarray, distance: np.ndarray | None = None) -> Width:
    """The :class:`Width` of a prediction interval that holds :data:`INTERVAL` of the cells at every
    distance: the conditional quantile at :data:`INTERVAL` of |log(measured / predicted)| given the
    cells' ``distance`` from the training cells, a line in the distance (statsmodels' QuantReg;
    split conformal prediction, with the width learnt as a function of where a
    cell stands), neither part negative. How fast a model's errors grow with distance is the data's:
    an interpolation's grow, a calibration's errors of form do not. Without distances, or all at one,
    the quantile itself; :data:`NO_WIDTH` without a cell."""
    r = np.abs(np.log(np.asarray(measured, float)) - np.log(np.asarray(predicted, float)))
    d = np.zeros(len(r)) if distance is None else np.asarray(distance, float)
    keep = np.isfinite(r) & np.isfinite(d)
    r, d = r[keep], d[keep]
    if not len(r):
        return NO_WIDTH
    flat = Width(float(np.quantile(r, INTERVAL)))
    if np.ptp(d) == 0:
        return flat
    from statsmodels.regression.quantile_regression import QuantReg

    with warnings.catch_warnings():  # a fit that stops at its iteration limit is still a line
        warnings.simplefilter("ignore")
        base, slope = (float(v) for v in QuantReg(r, np.column_stack([np.ones(len(d)), d])).fit(q=INTERVAL).params)
    if slope <= 0:  # errors that do not grow with distance: one width
        return flat
    if base < 0:  # a line through the origin: the quantile of the error per octave
        far = d > 0
        return Width(0.0, float(np.quantile(r[far] / d[far], INTERVAL)))
    return Width(base, slope)


#: the axis a split holds cells out along, and what else makes a curve along it; the other splits
#: hold out whole curves
ALONG = {"sparse_P": ("P", GROUP), "extrapolation": ("P", GROUP),
         "sizes": ("size", ["operation", "algorithm", "mapping", "P"])}


def _octaves(cells: pd.DataFrame, known: pd.DataFrame, axis: str, curve: list[str]):
    """(octaves from each of ``cells`` to the nearest of the ``known`` cells of its curve along
    ``axis``, NaN where the curve has none; per row the smallest and largest known log2 value)."""
    out, low, high = (np.full(len(cells), np.nan) for _ in range(3))
    values = {k: np.log2(np.sort(v[axis].to_numpy(float))) for k, v in known.groupby(curve)}
    x = np.log2(cells[axis].to_numpy(float))
    for k, rows in cells.groupby(curve).indices.items():
        if k in values:
            out[rows] = np.abs(x[rows, None] - values[k][None, :]).min(axis=1)
            low[rows], high[rows] = values[k][0], values[k][-1]
    return out, low, high


def size_bounds(hockney: pd.DataFrame) -> np.ndarray:
    """The sizes where a point-to-point channel changes regime (results/pt2pt/hockney.parquet),
    sorted: the first size of each Hockney regime after a channel's first (a protocol switch), and
    the half-performance length alpha / beta of its first regime (Hockney's n_1/2: below it a
    message's time is mostly latency, above it mostly bytes, whose costs cells below it hardly
    constrain)."""
    h = hockney.sort_values(["channel", "regime"])
    later = h.groupby("channel", sort=False).cumcount() > 0
    first = h[~later]
    half = (first["alpha_us"] / first["beta_us_per_byte"]).where((first["alpha_us"] > 0)
                                                                 & (first["beta_us_per_byte"] > 0))
    return np.unique(np.r_[h.loc[later, "size_min"].to_numpy(float), half.dropna().to_numpy(float)])


def regime(cells: pd.DataFrame, axis: str, machine: dict, bounds: np.ndarray) -> np.ndarray:
    """Each cell's regime along ``axis``: along P, the sockets (map-by core) or nodes (map-by
    socket) its mapping fills (:func:`collat.model.placement.active_units`, the segmented
    regression's bins); along size, how many of ``bounds`` (:func:`size_bounds`) it reaches."""
    if axis == "P":
        out = np.zeros(len(cells), dtype=np.int64)
        for mapping, rows in cells.groupby("mapping", sort=False).indices.items():
            out[rows] = active_units(cells["P"].to_numpy()[rows], mapping, machine)
        return out
    return np.searchsorted(np.asarray(bounds, float), cells["size"].to_numpy(float), side="right")


def unseen_regime(cells: pd.DataFrame, known: pd.DataFrame, axis: str, curve: list[str], machine: dict,
                  bounds: np.ndarray) -> np.ndarray:
    """Whether each of ``cells`` lies in a :func:`regime` along ``axis`` that none of the ``known``
    cells of its curve is in; False where the curve has no known cell (its interval is another
    split's)."""
    if not len(cells):
        return np.zeros(0, dtype=bool)
    label = "_regime"
    have = known[curve].assign(**{label: regime(known, axis, machine, bounds)}).drop_duplicates()
    ask = cells[curve].assign(**{label: regime(cells, axis, machine, bounds)})
    inside = ask.merge(have, on=[*curve, label], how="left", indicator=True)["_merge"].to_numpy() == "both"
    on_curve = ask[curve].merge(have[curve].drop_duplicates(), on=curve, how="left",
                                indicator=True)["_merge"].to_numpy() == "both"
    return on_curve & ~inside


def regime_half_width(along: np.ndarray, regime_width: float, unseen: np.ndarray) -> np.ndarray:
    """The half-width of each cell's interval: ``along`` (its split's, grown with its distance), and
    where the cell is in an ``unseen`` regime that and ``regime_width`` (a mapping held out) added in
    quadrature, two independent errors: how far the cell lies along its curve, and what the new
    regime changes (``along`` alone where the regime width is unknown)."""
    along = np.asarray(along, float)
    both = np.sqrt(along ** 2 + regime_width ** 2) if np.isfinite(regime_width) else along
    return np.where(unseen, both, along)


def distances(split: str, train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """Octaves from each ``test`` cell to the nearest ``train`` cell of its curve along the axis
    ``split`` holds out (:data:`ALONG`: P, or the size); 0 for a split of whole curves and for a
    cell whose curve has no training cell."""
    if split not in ALONG or not len(test):
        return np.zeros(len(test))
    return np.nan_to_num(_octaves(test, train, *ALONG[split])[0], nan=0.0)


def segmented(train: pd.DataFrame, test: pd.DataFrame, machine: dict, forms: list[dict]) -> np.ndarray:
    """Study eq. 12 fitted per (operation, algorithm, mapping, size) on the training cells; NaN for a
    test cell whose group has no training cells or too few distinct P for the form's parameters."""
    out = np.full(len(test), np.nan)
    pos = {key: rows for key, rows in test.groupby(GROUP).indices.items()}
    P_train, y_train, P_test = train["P"].to_numpy(), train["measured"].to_numpy(float), test["P"].to_numpy()
    for key, rows in train.groupby(GROUP).indices.items():
        if key not in pos:
            continue
        op, alg, mapping, _ = key
        form = form_of(forms, op, int(alg))
        Ptr, Pte = P_train[rows], P_test[pos[key]]
        btr, bte = active_units(Ptr, mapping, machine), active_units(Pte, mapping, machine)
        if len(np.unique(Ptr)) <= design(Ptr, btr, form)[0].shape[1]:
            continue
        out[pos[key]] = fit_predict(Ptr, y_train[rows], btr, Pte, bte, form)
    return out


#: splits whose parts cut the outlier rule's series (along P, along sizes): the training part's flags
#: are recomputed from its own rows; the other splits hold out whole curves, whose flags are their own
CROSSING = ("sparse_P", "extrapolation", "sizes")


def training_cells(collective: pd.DataFrame, train: pd.DataFrame, target: str, outliers: dict) -> pd.DataFrame:
    """The ``train`` cells measured again with outlier flags the rule (collat.ingest.quality, config
    ``quality.outliers``) sets on the training part's rows alone, so that no test row decides
    which training row counts; a cell all of whose rows are then flagged is left out."""
    from collat.ingest.quality import flag_outliers

    rows = collective.merge(train[CELL], on=CELL)
    rows["outlier"] = flag_outliers(rows, "collective", **outliers).to_numpy()
    return train[CELL].merge(measured_cells(rows, target), on=CELL)


def _priced(tr: pd.DataFrame, te: pd.DataFrame, split: str) -> pd.DataFrame:
    """The cells a refitted model prices in one fold: its test cells (``scored`` True), and in the
    unseen_algorithm split also its training cells after them (``scored`` False), so that the
    selection can ask whether the fold's model tells when the unseen algorithm wins."""
    if split == "unseen_algorithm":
        return pd.concat([te.assign(scored=True), tr.assign(scored=False)], ignore_index=True)
    return te.assign(scored=True)


def validate(collective: pd.DataFrame, predictions: pd.DataFrame, machine: dict, forms: list[dict],
             options: ValidationOptions, fitted: dict | None = None, processes: int = 1,
             outliers: dict | None = None,
             bounds: np.ndarray | None = None, trees=(),
             default_rules: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(scores per model x split x operation x algorithm x mapping x target, test-part predictions:
    ``scored`` False marks a fitted model's predictions of its own training cells in the
    unseen_algorithm split, kept for :func:`collat.selection.choice.regret_unseen_algorithm`).

    ``predictions`` is the model stage's table: its modes fitted on no collective measurement
    (``openmpi``, ``paper``) are scored as they are; ``fitted`` maps a name to a function (train cells, test
    cells, target, trend, unfitted) -> {model: predictions of the test cells}, ``trend`` being the
    segmented regression's prediction of each test cell from the same training part and
    ``unfitted`` the openmpi mode's (NaN where they have none) for the models fitted on collective
    measurements (``calibrated``, ``hybrid``), called on the training part of every split and fold;
    those models' rows of ``predictions`` (fitted on all the data) are not scored. The folds (the
    segmented regression, the baseline and ``fitted``) run in ``processes`` worker processes.
    ``forms`` is config ``regression.forms``. With ``outliers`` (config ``quality.outliers``), the
    training part of a split in :data:`CROSSING` is measured with flags set on its own rows
    (:func:`training_cells`); without, every part keeps the tidy table's flags. ``bounds``: the
    sizes where a channel changes regime (:func:`size_bounds`); with them, a test cell of a split
    along an axis in a regime no training cell of its curve is in adds the interval width of a
    mapping held out of the training part (:func:`regime_folds`, :func:`unseen_regime`,
    :func:`regime_half_width`). In the unseen_algorithm split, a held-out algorithm has the width of
    the inner folds that held out one of its kind: :func:`collat.model.transfer.foreign` to the
    training ones (``trees``: config ``model.openmpi.trees``) or not. A foreign one's interval is at
    least as wide as its price's error on the training cells: the openmpi mode's with the machine's
    costs the fold's calibration measured (:func:`collat.model.transfer.physics_width`,
    :func:`collat.model.calibrated_mode.physics_price`), and so is one whose training part has no inner
    fold (one algorithm), as the model stage's grid gives an algorithm nobody measured
    (:func:`collat.model.transfer.unmeasured_bounds`). With OpenMPI's ``default_rules``, a hybrid
    price that is a twin's measurement (a fitted model's ``twin`` cells,
    :func:`collat.model.hybrid_mode.twin_answers`; column ``twin``) has the interval of a run by
    another job instead: the spread of the training part's own pairs of the default and the forced
    run of its tree (:func:`twin_pairs`, :func:`new_run_spread`).
    """
    from collat.model.transfer import foreign, physics_width

    fitted = fitted or {}
    folds = []  # (target, cells, fixed predictions, split, fold, train mask, test mask)
    floors = {target: noise_floor(collective, target) for target in options.targets}
    for target in options.targets:
        cells = measured_cells(collective, target).reset_index(drop=True)
        stage = predictions[predictions["target"] == target]
        stage = stage[~stage["mode"].isin(FITTED_MODES)]  # in-sample: never scored
        fixed = {mode: cells.merge(g[CELL + ["predicted"]], on=CELL, how="left")["predicted"].to_numpy()
                 for mode, g in stage.groupby("mode")}
        folds += [(target, cells, fixed, split, fold, train, test) for split, fold, train, test in splits(cells, options)]

    def one_fold(i):
        """The refitted models of one fold, in a worker: {model: predictions of its test cells
        (the fitted models': of :func:`_priced` cells)}."""
        target, cells, fixed, split, _, train, test = folds[i]
        tr, te = cells[train].reset_index(drop=True), cells[test].reset_index(drop=True)
        if outliers is not None and split in CROSSING:
            tr = training_cells(collective, tr, target, outliers)
        out = {"segmented": segmented(tr, te, machine, forms),
               "nearest_neighbour": nearest_neighbour(tr, te, options.neighbours)}
        if split == "sparse_P":
            out[LINE] = training_neighbours(tr, te)
        if fitted:
            # the hybrid's other forecasts: the segmented fit of this training part beyond a curve's
            # training P, the openmpi mode (no collective data) where the training part has nothing
            # at the operation and mapping (collat.model.hybrid_mode.hybrid)
            priced = _priced(tr, te, split)
            also = len(priced) > len(te)  # the training cells priced after the test cells
            openmpi = fixed.get("openmpi", np.full(len(cells), np.nan))
            trend = np.r_[out["segmented"], np.full(len(tr), np.nan)] if also else out["segmented"]
            unfitted = np.r_[openmpi[test], openmpi[train]] if also else openmpi[test]
            # the inner folds of the training part: what a fitted model's interval is chosen on
            at_train = tr[CELL].merge(cells[CELL].assign(openmpi=openmpi), on=CELL, how="left")["openmpi"].to_numpy()

            def held_out(kind):  # the inner folds that hold out of the training part what ``kind`` holds out
                pairs = regime_folds(tr, options, machine) if kind == "regime" else inner_folds(kind, tr, options)
                parts = [(a, b, tr[a].reset_index(drop=True), tr[b].reset_index(drop=True)) for a, b in pairs]
                return tuple((a, b, segmented(ta, tb, machine, forms), at_train[b], distances(kind, ta, tb))
                             for a, b, ta, tb in parts)
            # and each mapping held out: the width a cell in an unseen regime adds
            models = ("calibrated", "hybrid", *(m for m, s in SCORED_ON.items() if s == split))
            inner = InnerFolds(held_out(split), models, split,
                               held_out("regime") if bounds is not None and split in ALONG else ())
            widths, regime_widths, foreign_widths, twin, physics = {}, {}, {}, None, None
            for fit in fitted.values():
                got = fit(tr, priced, target, trend, unfitted, inner=inner)
                widths.update(got.pop("interval", {}))
                foreign_widths.update(got.pop("interval_foreign", {}))
                regime_widths.update(got.pop("interval_regime", {}))
                twin = got.pop("twin", twin)
                physics = got.pop("physics", physics)
                out.update(got)
            out["interval"] = widths
            out["interval_regime"] = regime_widths
            out["interval_foreign"] = foreign_widths
            out["interval_twin_cells"] = twin
            # the physics' price of the training cells, with the machine's costs this fold's calibration
            # measured: what a foreign algorithm's price is, and so what its interval's floor is measured on
            out["interval_physics"] = physics[len(te):] if also and physics is not None else None
        return out

    results = fork_map(one_fold, len(folds), processes)
    rows, later = [], []
    for (target, cells, fixed, split, fold, train, test), out in zip(folds, results):
        tr, te = cells[train].reset_index(drop=True), cells[test].reset_index(drop=True)
        preds = {mode: p[test] for mode, p in fixed.items()}
        preds.update({m: out[m] for m in ("segmented", "nearest_neighbour", LINE) if m in out})
        if split == "sparse_P":
            preds[REFERENCE] = measured_neighbours(cells)[test]
        for model, p in preds.items():
            rows.append(te.assign(model=model, split=split, fold=fold, target=target, predicted=p, scored=True))
        widths, regime_widths = out.get("interval", {}), out.get("interval_regime", {})
        twin = out.get("interval_twin_cells")
        # a hybrid price that is a twin's measurement errs as two jobs' runs of one configuration
        # differ: the spread of the training part's own pairs (the default against a forced run of its
        # tree) for the cell's mapping and nodes (new_run_spread), where the training part has pairs
        runs = (pd.DataFrame(_floor_rows(target, "another_run", *twin_pairs(tr, default_rules, trees), machine),
                             columns=FLOOR_COLUMNS)
                if default_rules is not None and twin is not None and np.any(twin) else pd.DataFrame())
        fits = {m: p for m, p in out.items()
                if m not in preds and not m.startswith("interval") and SCORED_ON.get(m, split) == split}
        if fits and split == "unseen_algorithm" and "openmpi" in fixed:
            # an algorithm foreign to the training ones errs as the inner folds' foreign ones did,
            # and is at least as unsure as its price, the physics', is on what the part measured; so
            # is one no inner fold speaks for (a training part of one algorithm)
            physics = out.get("interval_physics")
            floor = physics_width(tr["measured"], fixed["openmpi"][train] if physics is None else physics, INTERVAL)
            alien = bool(foreign(te.head(1), tr, trees).any())
            if alien:
                widths = {m: out.get("interval_foreign", {}).get(m, NO_WIDTH) for m in fits}
            widths = {m: Width(np.fmax(w.base, floor), w.per_octave if np.isfinite(w.per_octave) else 0.0)
                      if alien or not np.isfinite(w.base) else w
                      for m, w in ((m, widths.get(m, NO_WIDTH)) for m in fits)}
        if fits:
            priced = _priced(tr, te, split)
            # the training cells priced after the test cells (unseen_algorithm) are measured: no interval
            extra = np.full(len(priced) - len(te), np.nan)
            far = 1.0 + np.r_[distances(split, tr, te), extra]
            unseen = np.r_[unseen_regime(te, tr, *ALONG[split], machine, bounds) if bounds is not None
                           and split in ALONG else np.zeros(len(te), dtype=bool), np.zeros(len(extra), dtype=bool)]
            for m, p in fits.items():
                # no regime width where the training part holds one mapping (no mapping to hold out)
                regime_width = regime_widths.get(m, NO_WIDTH).base
                widened = unseen & np.isfinite(regime_width)
                half = regime_half_width(widths.get(m, NO_WIDTH).at(far - 1.0), regime_width, widened)
                twinned = (np.asarray(twin, dtype=bool) if m == "hybrid" and twin is not None
                           else np.zeros(len(priced), dtype=bool))
                if len(runs) and twinned.any():
                    half = np.where(twinned, new_run_spread(priced, runs, target, machine), half)
                later.append(priced.assign(model=m, split=split, fold=fold, target=target, predicted=p,
                                           lower=p * np.exp(-half), upper=p * np.exp(half), distance=far - 1.0,
                                           regime=widened, twin=twinned))
    rows += later  # the refitted models' rows after the others, fold by fold
    table = pd.concat(rows, ignore_index=True)
    for bound in ("lower", "upper", "distance"):  # the models without an interval: none
        table[bound] = table[bound].astype(float) if bound in table else np.nan
    for flag in ("regime", "twin"):
        table[flag] = table[flag].fillna(False).astype(bool) if flag in table else False
    keys = ["model", "split", "operation", "algorithm", "mapping", "target"]
    scores = group_scores(table[table["scored"]], keys)
    scores = scores.merge(coverage(table[table["scored"]], keys), on=keys, how="left")
    scores["algorithm"] = scores["algorithm"].astype(int)
    scores["n"] = scores["n"].astype(int)
    scores["cleaning"] = "robust"
    scores["floor"] = scores["target"].map(floors)
    return scores[COLUMNS], table


def inside_interval(table: pd.DataFrame) -> pd.Series:
    """1.0 where a cell's measurement lies inside its prediction interval (columns lower, upper),
    0.0 outside it, NaN without an interval or a measurement."""
    has = table["lower"].notna() & table["upper"].notna() & table["measured"].notna()
    within = (table["measured"] >= table["lower"]) & (table["measured"] <= table["upper"])
    return within.astype(float).where(has)


def coverage(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: the share of its cells whose measurement lies inside the prediction
    interval (:func:`inside_interval`; NaN for a group without one)."""
    return inside_interval(table).groupby([table[k] for k in keys]).mean().rename("coverage").reset_index()


#: a resampled unit of :func:`coverage_range`: a curve, whose cells err together
CURVE = ["operation", "algorithm", "mapping"]
#: the level of :func:`coverage_range`
RANGE_LEVEL = 0.95


def coverage_range(table: pd.DataFrame, keys: list[str], level: float = RANGE_LEVEL,
                   resamples: int = 2000) -> pd.DataFrame:
    """Per group of ``keys``: the ``level`` range (``coverage_low``, ``coverage_high``) of the share of
    cells inside their interval (:func:`coverage`) when the group's curves (:data:`CURVE`) are drawn
    again with replacement (scipy's percentile bootstrap, seeded). The cells of a curve err together,
    so the share is as sure as the number of curves allows, not the number of cells: how far it could
    move on other curves of the same kinds. NaN with fewer than two curves or no curve columns."""
    from scipy.stats import bootstrap

    t = table.assign(_inside=inside_interval(table)).dropna(subset=["_inside"])
    rows = []
    for key, g in t.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        low = high = np.nan
        if set(CURVE) <= set(g.columns):
            per = g.groupby(CURVE)["_inside"].agg(["sum", "size"])
            if len(per) > 1:
                got = bootstrap((per["sum"].to_numpy(float), per["size"].to_numpy(float)),
                                lambda inside, n, axis=-1: inside.sum(axis) / n.sum(axis), paired=True,
                                vectorized=True, n_resamples=resamples, confidence_level=level,
                                method="percentile", rng=np.random.default_rng(0)).confidence_interval
                low, high = float(got.low), float(got.high)
        rows.append({**dict(zip(keys, key)), "coverage_low": low, "coverage_high": high})
    return pd.DataFrame(rows, columns=keys + ["coverage_low", "coverage_high"])


INTERVAL_COLUMNS = ["model", "target", "split", "cells", "width", "per_octave", "coverage", "coverage_low",
                    "coverage_high"]


def interval_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per fitted model, target and split: the half-width, in log latency, of the 80 % interval of
    a model fitted on all the data, for a cell in the situation the split tests (:func:`interval_width`
    over the scored test cells of every fold, each out of sample for its fold's model; split
    conformal prediction), and the share of those cells inside their own fold's interval
    (``coverage``). A prediction p at d octaves from its curve's nearest measured P (or size) has the
    interval p exp(+-(width + per_octave d)). The width comes from the cells in a regime their
    curve's training part holds (column ``regime`` False: the cells whose interval did not add the
    width of a mapping nobody measured, :func:`regime_half_width`; every cell where none is), and
    not a price that is a twin's measurement (column ``twin``: the spread between jobs is its
    interval, :func:`grid_bounds`). ``coverage_low`` and ``coverage_high``: the coverage's range over
    the curves (:func:`coverage_range`). Columns :data:`INTERVAL_COLUMNS`."""
    keys = ["model", "target", "split"]
    t = table[table["scored"] & table["lower"].notna() & table["predicted"].notna()]

    def width(g):
        if "twin" in g and (~g["twin"]).any():
            g = g[~g["twin"]]
        same = g[~g["regime"]] if "regime" in g and (~g["regime"]).any() else g
        return interval_width(same["measured"], same["predicted"], same["distance"].fillna(0.0))
    rows = []
    for key, g in t.groupby(keys, sort=True):
        w = width(g)
        rows.append({**dict(zip(keys, key)), "cells": len(g), "width": w.base, "per_octave": w.per_octave})
    out = pd.DataFrame(rows, columns=keys + ["cells", "width", "per_octave"])
    out = out.merge(coverage(t, keys), on=keys, how="left")
    return out.merge(coverage_range(t, keys), on=keys, how="left")[INTERVAL_COLUMNS]


def situations(cells: pd.DataFrame, measured: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(split, distance) of each of ``cells`` (operation, algorithm, mapping, P, size) given the
    ``measured`` cells: which validation split tests a prediction made where it stands, and its
    octaves from the nearest measurement along that split's axis. A cell on a measured curve
    (operation, algorithm, mapping, size) is ``sparse_P`` between the curve's measured P and
    ``extrapolation`` beyond them (octaves to the nearest measured P); else ``sizes`` where the
    algorithm was measured at the mapping at other sizes (octaves to the nearest measured size);
    else ``unseen_mapping`` where it was measured under another mapping, else ``unseen_algorithm``
    (distance 0 for both)."""
    split = np.full(len(cells), "unseen_algorithm", dtype=object)
    along_P, low, high = _octaves(cells, measured, "P", GROUP)
    logP = np.log2(cells["P"].to_numpy(float))
    on_curve = np.isfinite(along_P)
    split[on_curve] = np.where((logP >= low) & (logP <= high), "sparse_P", "extrapolation")[on_curve]
    along_size = _octaves(cells, measured, "size", ["operation", "algorithm", "mapping"])[0]
    other_size = ~on_curve & np.isfinite(along_size)
    split[other_size] = "sizes"
    distance = np.where(on_curve, along_P, np.where(other_size, along_size, 0.0))
    done = on_curve | other_size
    pair = ["operation", "algorithm"]
    other = pd.MultiIndex.from_frame(cells[pair]).isin(pd.MultiIndex.from_frame(measured[pair].drop_duplicates()))
    split[~done & other] = "unseen_mapping"
    return split, distance


# a situation whose split the data could not form (curves of two measured P: no sparse_P) takes
# the width of a harder one: interpolating between measured P is no harder than extrapolating as
# far beyond them; an algorithm measured under another mapping no harder than one never measured
FALLBACK = {"sparse_P": "extrapolation", "unseen_mapping": "unseen_algorithm"}


def new_run_spread(cells: pd.DataFrame, runs: pd.DataFrame, target: str, machine: dict) -> np.ndarray:
    """How far a new run of each of ``cells`` (operation, mapping, P) may lie from a measurement of
    the same configuration by another job: column ``spread`` of ``runs`` (the rows of kind
    ``another_run`` of :func:`noise_floors`) for the target, the cell's operation, mapping and the
    number of nodes its P spans there, else its operation's over every mapping, else the cell's
    mapping and nodes over every operation, else the target's over all, else 0 (the data hold no
    configuration measured by two jobs). An operation's own pairs come first: a bcast's two jobs
    differ more than a reduce's on the study's data (80th percentile of |log(a / b)|, avg, per
    mapping and nodes: bcast 0.10-0.54, reduce 0.06-0.25)."""
    have = runs[runs["target"] == target]
    op = have["operation"].astype(str) if "operation" in have else pd.Series("all", index=have.index)
    spread = {(o, str(m), str(n)): float(v)
              for o, m, n, v in zip(op, have["mapping"], have["nodes"], have["spread"])}
    ops = cells["operation"].astype(str) if "operation" in cells else pd.Series("all", index=cells.index)
    out = []
    for o, m, n in zip(ops, cells["mapping"], nodes_spanned(cells, machine)):
        n = str(n)
        for key in ((o, m, n), (o, "all", "all"), ("all", m, n), ("all", "all", "all")):
            if key in spread:
                out.append(spread[key])
                break
        else:
            out.append(0.0)
    return np.array(out, dtype=float)


#: the situations whose validation splits test a curve's cells against the curve's other cells: where
#: one job measured the whole curve, their widths know nothing of the differences between two jobs
SAME_JOB = ("sparse_P", "extrapolation", "sizes")


MEASURED_CURVE = ["operation", "algorithm", "mapping"]  # what one job of a study measures: every P and size


def one_file_curves(collective: pd.DataFrame) -> pd.DataFrame:
    """The curves (operation, algorithm, mapping) whose measurements all come from one file: taken
    for one job's (a study's job per algorithm and mapping), whose validation widths along the
    curve hold one job's noise only; a curve whose P come from files of their own (a launch per P,
    as stage measure runs them) holds the differences between launches in its widths already."""
    files = collective.groupby(MEASURED_CURVE, observed=True)["source"].nunique()
    return files[files == 1].reset_index()[MEASURED_CURVE]


def grid_bounds(grid: pd.DataFrame, measured: dict, widths: pd.DataFrame, machine: dict | None = None,
                bounds: np.ndarray | None = None, runs: pd.DataFrame | None = None,
                one_job: pd.DataFrame | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of the 80 % interval of each row of the model stage's ``grid`` (mode,
    operation, algorithm, mapping, P, size, target, predicted): the prediction times exp(+-(w + v
    d)), d and the split from :func:`situations` against ``measured`` (target -> measured cells),
    w and v (columns width, per_octave) from ``widths`` (results/model/intervals.csv, :func:`interval_table`) for the row's mode,
    target and split, or the split it falls back on where the validation ran none (:data:`FALLBACK`);
    NaN where the table has neither (a mode the validation does not refit). With the ``machine`` and
    the size ``bounds`` (:func:`size_bounds`), a cell in a regime that no measured cell of its curve
    is in adds the width of ``unseen_mapping`` where ``widths`` has one (:func:`regime_half_width`),
    as in the validation where every measured mapping reaches the same nodes (there
    :func:`regime_folds` hold out each mapping whole; where one mapping alone reaches a node, the
    validation takes that mapping's cells there and the grid still the whole unseen_mapping width).
    With the ``machine`` and ``runs`` (results/model/noise_floor.csv, kind
    ``another_run``), the interval is for a new run: a cell in a situation whose split tested a
    curve's cells against its other cells (:data:`SAME_JOB`), on a curve that ``one_job`` lists
    (:func:`one_file_curves`; every curve where None), adds in quadrature how far two jobs' runs of
    one configuration lie apart (:func:`new_run_spread`). The other splits hold out whole curves,
    which a study measures by jobs of their own (a job per algorithm and mapping), so their widths
    hold that already. A row whose column ``twin`` is True (the hybrid's price is a measurement of
    the same run, :func:`collat.model.hybrid_mode.twin_answers`: OpenMPI's default running the
    row's shape) is a measured cell (``sparse_P`` at distance 0) whose run is always another job's:
    with ``runs``, the spread is added whatever ``one_job`` says."""
    lower, upper = np.full(len(grid), np.nan), np.full(len(grid), np.nan)
    w = {key: Width(float(r["width"]), float(r["per_octave"]))
         for key, r in widths.set_index(["model", "target", "split"]).iterrows()}
    predicted = grid["predicted"].to_numpy(float)

    def of(mode, target, name) -> Width:
        return w.get((mode, target, name), w.get((mode, target, FALLBACK.get(name)), NO_WIDTH))
    for (mode, target), rows in grid.groupby(["mode", "target"], sort=False).indices.items():
        cells = measured.get(target)
        if cells is None or not any((mode, target) == k[:2] for k in w):
            continue
        here = grid.iloc[rows]
        split, distance = situations(here, cells)
        # a price that is a twin's measurement: a measured cell's, whose run was another job's
        twin = here["twin"].fillna(False).to_numpy(bool) if "twin" in here else np.zeros(len(rows), dtype=bool)
        split, distance = np.where(twin, "sparse_P", split), np.where(twin, 0.0, distance)
        width = np.full(len(rows), np.nan)
        for name in set(split):
            at = split == name
            width[at] = of(mode, target, name).at(distance[at])
        if machine is not None and bounds is not None:
            unseen = np.zeros(len(rows), dtype=bool)
            for names, axis, curve in ((("sparse_P", "extrapolation"), "P", GROUP),
                                       (("sizes",), "size", ["operation", "algorithm", "mapping"])):
                at = np.flatnonzero(np.isin(split, names))
                if len(at):
                    unseen[at] = unseen_regime(here.iloc[at], cells, axis, curve, machine, bounds)
            # as in the validation: no regime width without a mapping held out (one mapping measured)
            width = regime_half_width(width, w.get((mode, target, "unseen_mapping"), NO_WIDTH).base, unseen)
        if machine is not None and runs is not None:
            same_job = np.isin(split, SAME_JOB)
            if one_job is not None:
                same_job &= pd.MultiIndex.from_frame(here[MEASURED_CURVE]).isin(
                    pd.MultiIndex.from_frame(one_job[MEASURED_CURVE]))
            same_job |= twin
            width = np.where(same_job, np.hypot(width, new_run_spread(here, runs, target, machine)), width)
        lower[rows], upper[rows] = predicted[rows] * np.exp(-width), predicted[rows] * np.exp(width)
    return lower, upper


def gather(scores: list[pd.DataFrame], tables: list[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The :func:`validate` results of several runs (one per target) as one: the scores sorted as one
    run of every target sorts them (by model, split, operation, algorithm, mapping, target), the
    test-part predictions one run after the other. A target may come once only."""
    seen = [t for s in scores for t in s["target"].unique()]
    if len(seen) != len(set(seen)):
        raise ValueError(f"a target validated twice: {sorted(seen)}")
    keys = COLUMNS[:COLUMNS.index("target") + 1]
    out = pd.concat(scores, ignore_index=True).sort_values(keys, kind="stable", ignore_index=True)
    return out[COLUMNS], pd.concat(tables, ignore_index=True)


def _pooled(scores: pd.DataFrame, keys: list[str], **columns) -> pd.DataFrame:
    """``scores`` of the cells a model predicts (n > 0) grouped by ``keys``: the aggregations
    ``columns`` (pandas named aggregation) and ``coverage``, the share of the test points inside a
    fitted model's prediction interval (each cell's coverage weighted by its n; NaN without one)."""
    s = scores[scores["n"] > 0]
    cover = s["coverage"] if "coverage" in s else pd.Series(np.nan, index=s.index)
    s = s.assign(_inside=cover * s["n"], _with=s["n"].where(cover.notna(), 0))
    out = s.groupby(keys).agg(**columns, _inside=("_inside", "sum"), _with=("_with", "sum"))
    out["coverage"] = out.pop("_inside") / out.pop("_with").where(lambda w: w > 0)
    return out


def leaderboard(scores: pd.DataFrame) -> pd.DataFrame:
    """Median over (operation, algorithm, mapping) cells of the relative error and R², per model,
    split and target, beside the noise floor, and the share of the test cells inside a fitted
    model's prediction interval (``coverage``; NaN for a model without one); cells a model cannot
    predict (n = 0) left out."""
    board = _pooled(scores, ["split", "target", "model"], cells=("n", "size"), points=("n", "sum"),
                    median_mape=("mape", "median"), median_r2=("r2", "median"), floor=("floor", "first"))
    board.insert(len(board.columns) - 1, "mape_over_floor", board["median_mape"] / board["floor"])
    return board.reset_index()


def by_operation_mapping(scores: pd.DataFrame, split: str = "unseen_algorithm") -> pd.DataFrame:
    """One ``split`` of the validation per (operation, mapping, target, model): ``curves``, its held-out
    (operation, algorithm, mapping) cells a model predicts; ``median_mape``, the median over them of
    each one's median relative error (as :func:`leaderboard`, within one operation and mapping); and
    ``coverage``, the share of their test points inside the model's 80 % interval (NaN without one)."""
    return _pooled(scores[scores["split"] == split], ["operation", "mapping", "target", "model"],
                   curves=("n", "size"), median_mape=("mape", "median")).reset_index()


def by_kind(scores: pd.DataFrame, trees) -> pd.DataFrame:
    """The unseen_algorithm split per target, model and ``foreign``: whether each held-out algorithm
    is of a kind none of the other measured algorithms of its operation is
    (:func:`collat.model.transfer.foreign`, ``trees``: config ``model.openmpi.trees``), so priced by
    the physics (:func:`collat.model.calibrated_mode.physics_price`) with an interval at least as wide
    as that price's error on the training cells.
    Columns ``algorithms`` ("bcast 1; reduce 1"), ``points`` and ``coverage`` (:func:`_pooled`)."""
    from collat.model.transfer import foreign

    s = scores[(scores["split"] == "unseen_algorithm") & (scores["n"] > 0)]
    held = s[["operation", "algorithm"]].drop_duplicates().reset_index(drop=True)
    alone = {(op, int(a)): bool(foreign(held.iloc[[i]], held[(held["operation"] == op) & (held["algorithm"] != a)],
                                        trees).any())
             for i, (op, a) in enumerate(held.itertuples(index=False))}
    s = s.assign(foreign=[alone[(op, int(a))] for op, a in zip(s["operation"], s["algorithm"])])

    def named(rows):  # "bcast 0, 2; reduce 1"
        pairs = sorted({(op, int(a)) for op, a in zip(s.loc[rows.index, "operation"], rows)})
        ops = dict.fromkeys(op for op, _ in pairs)
        return "; ".join(f"{op} " + ", ".join(str(a) for o, a in pairs if o == op) for op in ops)

    out = _pooled(s, ["target", "model", "foreign"], points=("n", "sum"), algorithms=("algorithm", named))
    return out.reset_index()[["target", "model", "foreign", "algorithms", "points", "coverage"]]


def by_default_run(table: pd.DataFrame, default_rules: dict) -> pd.DataFrame:
    """OpenMPI's default held out (split unseen_algorithm, algorithm 0), scored by the algorithm its
    fixed rules (``default_rules``, config ``model.openmpi.default_rules``) run at each test point:
    how each model prices an algorithm as the default runs it, with the default's own segment size
    and fan-out. Where that algorithm was never forced (``forced`` False: no measured curve of it at
    the operation), these points are measurements of an algorithm nobody measured, out of sample for
    every model: the only ones a campaign gets without forcing it. ``table``: the validation's
    test-part predictions (:func:`validate`). Per operation, ``algorithm`` (what the default runs),
    mapping, target and model: ``points``, ``median_error`` (the median relative error over the
    points) and ``coverage`` (the share inside the model's 80 % interval; NaN without one).
    Operations without rules are left out."""
    t = table[(table["split"] == "unseen_algorithm") & table["scored"].astype(bool)]
    forced = {(op, int(a)) for op, a in t[["operation", "algorithm"]].drop_duplicates().itertuples(index=False)}
    t = t[t["algorithm"] == 0]
    d = t.assign(algorithm=default_run(t, default_rules))
    d = d[d["algorithm"] >= 0].reset_index(drop=True)
    keys = ["operation", "algorithm", "mapping", "target", "model"]
    columns = keys + ["forced", "points", "median_error", "coverage"]
    if d.empty:
        return pd.DataFrame(columns=columns)
    measured, predicted = d["measured"].to_numpy(float), d["predicted"].to_numpy(float)
    d = d.assign(error=np.abs(predicted - measured) / measured, inside=inside_interval(d))
    d = d[np.isfinite(predicted)]
    out = d.groupby(keys, sort=True).agg(points=("error", "size"), median_error=("error", "median"),
                                         coverage=("inside", "mean")).reset_index()
    out["forced"] = [(op, int(a)) in forced for op, a in zip(out["operation"], out["algorithm"])]
    return out[columns]
