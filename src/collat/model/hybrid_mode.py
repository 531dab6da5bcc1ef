"""Nearest measurements in log latency: the naive baseline, and the hybrid mode's residual correction.

Both take the inverse-distance-weighted mean of a log quantity over the k nearest measured cells
(:func:`knn_log`, every cell tied with the k-th included). The distance (:func:`features`): log2 P
and log2 size, one unit per doubling, plus 10 units for another algorithm or mapping and 100 for
another operation, so that a cell of the same (operation, algorithm, mapping) comes first unless it
is more than 2^10 away in P or size, and another operation's cells last.

* The baseline (:func:`nearest_neighbour`) regresses log latency itself: it interpolates the
  measurements and knows nothing about the machine.
* The ``hybrid`` mode (:func:`hybrid`) corrects the calibrated mode by its log residual,
  log(measured) - log(predicted), and multiplies the calibrated prediction by exp of the residual
  at the cell asked for. On a curve (operation, algorithm, mapping, size) with measured cells the
  residual is interpolated linearly in log2 P between the measured P (:func:`curve_residuals`), so
  that at a measured cell the hybrid returns the measurement and between measured P it follows the
  schedule model's shape, or as much of its bend away from a straight line as inner folds find
  worth keeping (:mod:`collat.model.bend`); on a curve with no measured cell (another algorithm,
  mapping or size) it is the k nearest residuals of other curves (:func:`knn_log`), which carry the machine's
  systematic error (for an algorithm nobody measured beside measured ones, weighted also by how
  alike the model prices its run and theirs, their weighted mean or median, times the share of the
  other algorithms' residual
  that the measured algorithms were found to share with each other: :func:`unseen_algorithm_residual`,
  :func:`transfer`), except at a cell where the model prices a measured cell of another algorithm
  as the same run (:func:`default_twins`: OpenMPI's default running this algorithm's tree there):
  that measurement is then the prediction, and between two such P of the curve its residual is
  interpolated in log2 P as along a measured curve (so that a curve does not zigzag between the
  P the default was measured at and the others). Beyond the measured P of a curve the residual of
  its nearest end is carried, and where a trend is given (the regression stage's segmented fit, study eq. 12) the prediction is
  the geometric mean of the two: two forecasts that fail in opposite ways (one holds the model's
  error constant, the other extends the fitted slope) combined with equal weights, nothing tuned;
  but on a curve where the trend and the schedule model go opposite ways beyond the measured P
  (one rises with P, the other falls: :func:`against`), the model's shape is kept with its carried
  residual: the trend extends a slope fitted before the curve turns, where the model knows the turn
  from the machine (a reduce's ranks on a second node that finish early lower its mean).
  Where no algorithm was measured at the cell's operation and mapping (another mapping), likewise,
  the geometric mean with the openmpi mode (priced from the point-to-point and NBFT
  stages alone): where residuals of far cells are all the evidence, a second model fitted on no
  collective measurement halves the bet. Not for an algorithm nobody measured beside measured ones:
  the openmpi mode's bias would then differ between the candidates of one cell, and the selection
  among them would suffer (measured: within 10 % of the best in 0.71 of map-by-core bcast cells of
  the unseen_algorithm folds instead of 0.97).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from collat.model.bend import model_bend

CARRIED = "hybrid_carried"  # the hybrid without the trend: a what-if machine's P beyond the measured ones
UNTWINNED = "hybrid_untwinned"  # the hybrid without default_twins: a twin is a measurement, not a prediction
CATEGORY_WEIGHT = 10.0  # log2 units (an algorithm or mapping apart weighs as 2^10 in P or size)
OPERATION_WEIGHT = 100.0  # another operation's cells (whose algorithm ids mean other shapes) come last


@dataclass(frozen=True)
class HybridOptions:
    """Config ``model.hybrid``, checked by the schema."""

    neighbours: int

    @classmethod
    def from_config(cls, cfg: dict) -> "HybridOptions":
        return cls(int(cfg["neighbours"]))


def features(cells: pd.DataFrame, operations: list, algorithms: list, mappings: list) -> np.ndarray:
    """[cells, 2 + categories]: log2 P, log2 size, then the one-hot operation x OPERATION_WEIGHT,
    algorithm and mapping x CATEGORY_WEIGHT."""
    cols = [np.log2(cells["P"].to_numpy(float)), np.log2(cells["size"].to_numpy(float))]
    for column, values, weight in (("operation", operations, OPERATION_WEIGHT), ("algorithm", algorithms,
                                   CATEGORY_WEIGHT), ("mapping", mappings, CATEGORY_WEIGHT)):
        own = cells[column].to_numpy()
        cols += [weight * (own == v) for v in values]
    return np.column_stack(cols)


GROUP = ["operation", "algorithm", "mapping"]
CELL = ["operation", "algorithm", "mapping", "P", "size"]


def knn_log(train: pd.DataFrame, values: np.ndarray, test: pd.DataFrame, k: int) -> np.ndarray:
    """Inverse-distance-weighted mean of ``values`` (one per train cell, finite) over the ``k`` train
    cells nearest each test cell in :func:`features`, every cell tied with the k-th included (so that
    the order of the data does not matter: on a grid, an unseen algorithm has many neighbours at the
    same distance); a train cell at distance 0 takes all the weight. NaN everywhere without a train
    cell. The neighbours come from :func:`nearest_cells`."""
    out = np.full(len(test), np.nan)
    if train.empty or test.empty:
        return out
    values = np.asarray(values, float)
    for rows, dist, ind in nearest_cells(train, test, k):
        w = _idw(dist, min(k, len(train)))
        out[rows] = (w * values[ind]).sum(axis=1) / w.sum(axis=1)
    return out


def _idw(dist: np.ndarray, k: int) -> np.ndarray:
    """:func:`knn_log`'s weights of the neighbours at ``dist`` [cells, n] (sorted): 1 / distance for the
    k nearest and every tie with the k-th, 0 beyond; all of it on a neighbour at distance 0."""
    take = dist <= dist[:, k - 1:k] * (1 + 1e-9)
    exact = take & (dist == 0)
    return np.where(exact.any(axis=1, keepdims=True), exact, np.where(take, 1 / np.maximum(dist, 1e-300), 0.0))


def nearest_cells(train: pd.DataFrame, test: pd.DataFrame, k: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per group (operation, algorithm, mapping) of test cells: (their rows, the distances [rows, n]
    to their n >= k nearest train cells in :func:`features`, sorted, those cells' rows [rows, n]),
    with every train cell tied with the k-th among them as long as up to 8 k are kept.

    The one-hot part of the squared distance between two cells is a constant per pair of groups, so
    the train cells are indexed in two dimensions, log2 P and log2 size (scipy's cKDTree, one index
    per set of train groups at one such constant from a test group, reused by the test groups that
    see the same set), and a test group asks them in increasing order of the constant, stopping
    when no cell at the next one can be nearer than the k-th found: the distances of the one-hot
    features at a fraction of their cost. The answer for the last few (train, test, k) is kept: a
    validation fold asks the same question twice (the nearest-neighbour baseline of its
    measurements and the hybrid's of its residuals)."""
    key = (k, _digest(train), _digest(test))
    if key not in _NEAREST:
        if len(_NEAREST) >= 4:
            _NEAREST.pop(next(iter(_NEAREST)))
        _NEAREST[key] = _nearest_cells(train, test, k)
    return _NEAREST[key]


_NEAREST: dict = {}


def _digest(cells: pd.DataFrame) -> tuple[int, bytes]:
    """What :func:`nearest_cells` reads of ``cells`` (group and position of every row), as a key."""
    import hashlib

    rows = pd.util.hash_pandas_object(cells[GROUP + ["P", "size"]], index=False).to_numpy()
    return len(cells), hashlib.blake2b(rows.tobytes(), digest_size=16).digest()


def _nearest_cells(train: pd.DataFrame, test: pd.DataFrame, k: int) -> list:
    from scipy.spatial import cKDTree  # scipy: loaded by the calibration anyway (scikit-learn's import: 1.3 s)

    out = []
    want = min(8 * k, len(train))  # neighbours kept per test cell (the k-th's ties within them)
    x_train, x_test = features(train, [], [], []), features(test, [], [], [])
    weight = np.array([OPERATION_WEIGHT, CATEGORY_WEIGHT, CATEGORY_WEIGHT])
    groups = train.groupby(GROUP, sort=True).indices
    keys, members = list(groups), list(groups.values())
    index: dict[tuple, tuple] = {}  # train groups at one one-hot distance -> (rows, their 2-D index)
    asked: dict[tuple, tuple] = {}  # (those groups, the test points) -> the query's answer: test groups
    # that differ only in what no train group has (another unmeasured algorithm) ask the same
    for key, rows in test.groupby(GROUP, sort=False).indices.items():
        q = np.ascontiguousarray(x_test[rows])
        apart = np.array([float((2.0 * weight ** 2 * np.array([a != b for a, b in zip(g, key)])).sum())
                          for g in keys])  # one-hot squared distance to each train group
        dist = np.full((len(rows), 0), np.inf)
        ind = np.zeros((len(rows), 0), dtype=np.int64)
        for level in np.unique(apart):
            if dist.shape[1] >= k and np.sqrt(level) > dist[:, k - 1].max() * (1 + 1e-9):
                break  # every cell at this distance and beyond is farther than every k-th
            at = tuple(np.flatnonzero(apart == level))
            if at not in index:
                cells = np.concatenate([members[j] for j in at])
                index[at] = (cells, cKDTree(x_train[cells]))
            cells, tree = index[at]
            key_q = (at, q.tobytes())
            if key_q not in asked:
                asked[key_q] = tree.query(q, k=np.arange(1, min(want, len(cells)) + 1))
            d, i = asked[key_q]
            dist = np.hstack([dist, np.sqrt(d ** 2 + level)])
            ind = np.hstack([ind, cells[i]])
            if dist.shape[1] > want:
                order = np.argsort(dist, axis=1, kind="stable")[:, :want]
                dist, ind = np.take_along_axis(dist, order, axis=1), np.take_along_axis(ind, order, axis=1)
        out.append((rows, dist, ind))
    return out


def nearest_neighbour(train: pd.DataFrame, test: pd.DataFrame, k: int) -> np.ndarray:
    """The naive baseline: the ``measured`` latency of the train cells interpolated in log."""
    return np.exp(knn_log(train, np.log(train["measured"].to_numpy(float)), test, k))


CURVE = ["operation", "algorithm", "mapping", "size"]


#: the column of a cell frame that marks a run where some node has a rank on every core, on an
#: operation whose calibration measured a slowdown there (:func:`mark_full`)
FULL = "full_node"


def mark_full(cells: pd.DataFrame, machine: dict, slowed) -> pd.DataFrame:
    """``cells`` with the column :data:`FULL`: some node of ``machine`` has a rank on every core
    (:func:`collat.model.placement.full_node`) and the cell's operation is one of ``slowed``
    (:func:`collat.model.calibrated_mode.slowed_operations`)."""
    from collat.model.placement import full_node

    full = full_node(cells["P"].to_numpy(), cells["mapping"].to_numpy(), machine)
    return cells.assign(**{FULL: full & cells["operation"].isin(list(slowed)).to_numpy()})


def curve_residuals(train: pd.DataFrame, values: np.ndarray, test: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (one per train cell, finite) interpolated linearly in log2 P along each curve
    (operation, algorithm, mapping, size) of the test cells, the value of the nearest end beyond the
    curve's measured P: (values [test], where [test]: 0 for a test cell whose curve has no train
    cell (value NaN), 1 inside the curve's measured P, 2 beyond them). Where both frames have the
    column :data:`FULL`, a test cell's value is read from the train cells of its own kind (a node
    full or not) where its curve has some: a slowdown the calibration prices as one factor differs
    by algorithm, and what is left of it at a full node's P is not carried to P where none is, nor
    the other way."""
    out, where = np.full(len(test), np.nan), np.zeros(len(test), dtype=np.int8)
    values = np.asarray(values, float)
    if train.empty or test.empty:
        return out, where
    own = train.groupby(CURVE, sort=False).indices
    x_all, q_all = np.log2(train["P"].to_numpy(float)), np.log2(test["P"].to_numpy(float))
    split = FULL in train and FULL in test
    kind_train = train[FULL].to_numpy(bool) if split else np.zeros(len(train), dtype=bool)
    kind_test = test[FULL].to_numpy(bool) if split else np.zeros(len(test), dtype=bool)
    for key, rows in test.groupby(CURVE, sort=False).indices.items():
        if key not in own:
            continue
        t = own[key][np.argsort(x_all[own[key]], kind="stable")]
        x, q = x_all[t], q_all[rows]
        where[rows] = np.where((q >= x[0]) & (q <= x[-1]), 1, 2)
        for kind in np.unique(kind_test[rows]):
            mine = kind_test[rows] == kind
            same = t[kind_train[t] == kind]
            use = same if len(same) else t
            out[rows[mine]] = np.interp(q[mine], x_all[use], values[use])
    return out, where


def hybrid(train: pd.DataFrame, train_predicted: np.ndarray, test: pd.DataFrame, test_predicted: np.ndarray,
           k: int, trend: np.ndarray | None = None, unfitted: np.ndarray | None = None,
           turned: np.ndarray | None = None, twins: np.ndarray | None = None,
           grid: pd.DataFrame | None = None, bend=1.0, bent: np.ndarray | None = None,
           foreign: np.ndarray | None = None) -> np.ndarray:
    """The hybrid mode: ``test_predicted`` x exp(residual), the residual being log(measured /
    train_predicted) interpolated along the test cell's curve (:func:`curve_residuals`), or the k
    nearest of other curves' (:func:`knn_log`) where its curve has no train cell; for an algorithm
    nobody measured beside measured ones, weighted by how alike the model prices the runs
    (:func:`unseen_algorithm_residual`, its prices of the test cells' algorithms at the neighbours'
    cells read from ``grid``, cells with their ``predicted`` column, where the test cells are not
    the grid whose prices count, e.g. a what-if machine's P: :func:`hybrid_predictions`).

    Two other forecasts (one per test cell, NaN for none; only positive values count) enter where
    the residuals say least, each as the geometric mean with the corrected prediction: ``trend``
    (the segmented regression) beyond the train cells' P of the test cell's curve, but on a curve
    where it goes the other way from the model's prediction there (:func:`against` over the test
    cells beyond the curve's train P; ``turned``, one per test cell, says so instead where those
    cells are not the curve's whole range beyond its train P: :func:`hybrid_predictions`), ``unfitted`` (the
    openmpi mode, fitted on no collective measurement) where no train cell has the test cell's
    operation and mapping (another mapping; not another size of a measured mapping, where the
    nearest sizes' residuals on the same curves know more, nor an algorithm nobody measured beside
    measured ones, whose prediction must stay comparable with theirs). On a curve with no train
    cell, the train cells the model prices as the same run answer (:func:`default_twins` over the
    test cells; ``twins``, one per test cell, NaN for none, gives their answers instead where the
    test cells are not the grid they were found on: :func:`hybrid_predictions`). ``bend`` (one
    weight, or one per test cell): how much of the model's bend between two train P of a curve the
    prediction keeps (:mod:`collat.model.bend`; 1, all of it), the bend of the prices ``bent`` (one
    per test cell; ``test_predicted`` without: on a what-if machine's grid, the measured machine's
    prices of the same cells, so that what the what-if machine changes is kept whole). ``foreign``
    (one per test cell): an algorithm of a kind no train algorithm of its operation is
    (:func:`collat.model.transfer.foreign`), whose prediction is ``unfitted`` where it has one:
    neither the calibration nor the other algorithms' residuals were fitted on its messages (a
    twin's measurement still answers). Train cells
    the model could not price are left out; a test cell the model could not price stays NaN."""
    residual = np.log(train["measured"].to_numpy(float)) - np.log(np.asarray(train_predicted, float))
    ok = np.isfinite(residual)
    out = np.asarray(test_predicted, float).copy()
    if not ok.any():
        return out
    train, residual = train[ok].reset_index(drop=True), residual[ok]
    along, where = curve_residuals(train, residual, test)
    if np.any(np.asarray(bend, float) < 1.0):  # between two train P: keep only part of the model's bend
        along = along - (1.0 - np.asarray(bend, float)) * np.nan_to_num(
            model_bend(train, np.asarray(train_predicted, float)[ok], test,
                       test_predicted if bent is None else bent))
    if (where == 0).any():
        rows = np.flatnonzero(where == 0)
        unseen = beside_measured(train, test.iloc[rows])
        if (~unseen).any():
            along[rows[~unseen]] = knn_log(train, residual, test.iloc[rows[~unseen]], k)
        if unseen.any():
            along[rows[unseen]] = unseen_algorithm_residual(
                train, residual, np.asarray(train_predicted, float)[ok], test, np.asarray(test_predicted, float),
                rows[unseen], k, grid)
    out = out * np.exp(along)
    if foreign is not None and unfitted is not None:  # messages nothing was fitted on: the openmpi mode
        price = np.asarray(unfitted, float)
        use = np.asarray(foreign, dtype=bool) & np.isfinite(price) & (price > 0)
        out[use] = price[use]
    if (where == 0).any():  # a curve with no train cell: where the model prices a train cell of another
        # algorithm as the same run, that cell's measurement is one of this cell's, and between two
        # such P its residual is interpolated as a measured curve's (default_twins)
        rows = np.flatnonzero(where == 0)
        twin = (twin_answers(train, np.asarray(train_predicted, float)[ok], test, test_predicted) if twins is None
                else np.asarray(twins, float))[rows]
        out[rows[np.isfinite(twin)]] = twin[np.isfinite(twin)]
    # where the openmpi mode counts: no algorithm measured at the cell's (operation, mapping). An
    # algorithm nobody measured beside measured ones keeps their residuals alone, so that the
    # candidates of one cell stay comparable for the selection; so does another size of a measured
    # mapping (split sizes, hybrid median error, avg: 0.44 with the openmpi mode, 0.36 without;
    # max 0.30, 0.27; results/model/validation.csv)
    key = ["operation", "mapping"]
    alone = ~pd.MultiIndex.from_frame(test[key]).isin(pd.MultiIndex.from_frame(train[key]))
    beyond = where == 2
    if trend is not None:
        beyond &= ~(against(test, np.asarray(trend, float), np.asarray(test_predicted, float), beyond)
                    if turned is None else np.asarray(turned, dtype=bool))
    for other, use in ((trend, beyond), (unfitted, alone)):
        if other is not None:
            other = np.asarray(other, float)
            use = use & np.isfinite(other) & (other > 0)
            out[use] = np.sqrt(out[use] * other[use])
    return out


SHARE_BY = ["operation", "mapping"]
SIMILARITY_SCALES = (0.25, 0.5, 1.0, 2.0, np.inf)  # e-folds of the ratio of two priced runs; inf: all alike
#: how the neighbours' residuals make one: their weighted mean, or their weighted median, which one
#: launch far off (a run disturbed on a full node) does not move; :func:`transfer` chooses
CENTRES = ("mean", "median")


@dataclass(frozen=True)
class Transfer:
    """What the measured algorithms' residuals say of an algorithm nobody measured (:func:`transfer`):
    ``scale``, how alike two algorithms' runs must be priced for their errors to be alike (a
    neighbour's weight falls by e per ``scale`` in |log| of the ratio of the two prices; inf: every
    algorithm alike), ``slopes``, the share of the weighted residual an algorithm takes, per
    (operation, mapping), in [0, 1], and ``centre``, how the neighbours' residuals are weighed into
    one (:data:`CENTRES`)."""

    scale: float
    slopes: pd.Series
    centre: str = "mean"


def beside_measured(train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """True for the test cells of an algorithm nobody measured beside measured ones: no train cell has
    its (operation, algorithm, mapping), some have its (operation, mapping)."""
    own = pd.MultiIndex.from_frame(test[GROUP]).isin(pd.MultiIndex.from_frame(train[GROUP]))
    return ~own & pd.MultiIndex.from_frame(test[SHARE_BY]).isin(pd.MultiIndex.from_frame(train[SHARE_BY]))


def unseen_algorithm_residual(train: pd.DataFrame, residual: np.ndarray, train_predicted: np.ndarray,
                              test: pd.DataFrame, test_predicted: np.ndarray, rows: np.ndarray, k: int,
                              grid: pd.DataFrame | None = None) -> np.ndarray:
    """The residual :func:`hybrid` gives the ``rows`` of ``test`` (cells of algorithms nobody measured
    beside measured ones, :func:`beside_measured`): the weighted mean or median (the transfer's
    ``centre``) of the k nearest train residuals (:func:`knn_log`'s neighbours and inverse-distance
    weights), each weight also times exp(-|log(p_a / p_b)| / scale), p_b the model's price of the
    neighbour's run and p_a its price of the test cell's algorithm at the neighbour's (mapping, P,
    size) (from ``test_predicted``, or ``grid``'s column ``predicted`` where given, else
    ``train_predicted``; a neighbour without one counts only where no neighbour has one), times the
    share of its (operation, mapping); centre, scale and shares from :func:`transfer`. Two
    algorithms the model prices alike run alike, so their errors are alike; the limit, a run priced
    identically, is :func:`default_twins`' measurement.

    Measured on the study's unseen_algorithm folds at e6e583b (hybrid, medians over cells, avg / max):
    0.221 / 0.261 with the other algorithms' whole residual, equal weights; 0.206 / 0.243 with the
    shares alone (scale inf); 0.195 / 0.232 with the shares and the scale chosen per fold (bcast:
    0.25-1 in every fold but one, max, inf; reduce: inf in every fold but one, max, 0.25). Shares:
    under map-by core bcast 0-0.38 and reduce 0.04-0.51, under map-by socket 0.33-0.65, under
    map-by node bcast 0-0.66 and reduce 0-0.24."""
    own, own_predicted = (test, test_predicted) if grid is None else (grid, grid["predicted"].to_numpy(float))
    prices = _Prices(pd.concat([own[CELL], train[CELL]], ignore_index=True),
                     np.r_[np.asarray(own_predicted, float), np.asarray(train_predicted, float)])
    out = np.full(len(rows), np.nan)
    operation = test["operation"].to_numpy()[rows]
    for op in np.unique(operation):
        fit = transfer(train, residual, train_predicted, k, op)
        mine = np.flatnonzero(operation == op)
        cells = test.iloc[rows[mine]]
        value = _weighted(_neighbours(train, train_predicted, cells, k, prices), residual, len(cells), fit.scale,
                          fit.centre)
        out[mine] = _share(fit.slopes, cells) * value
    return out


def transfer(train: pd.DataFrame, residual: np.ndarray, predicted: np.ndarray, k: int, operation: str) -> Transfer:
    """The :class:`Transfer` of ``operation`` in ``train`` (its cells, their residuals and the model's
    ``predicted`` prices), estimated on the training cells alone by leaving out one training algorithm at a time,
    the question :func:`hybrid` asks of an algorithm nobody measured asked of the measured ones: for
    every centre of :data:`CENTRES` and scale of :data:`SIMILARITY_SCALES`, each train algorithm's
    residuals are predicted from the other algorithms of its operation and mapping alone
    (:func:`unseen_algorithm_residual`'s weights); the share of an (operation, mapping) is the
    least-squares slope through the origin of the residuals on those predictions, clipped to [0, 1]
    (1 where the model's error is the machine's, common to every algorithm; 0 where it is each
    algorithm's own, or the others' say the opposite); the centre and scale are those whose shared
    predictions have the least mean absolute error (the loss of the median relative error the
    validation reports; the first of ties, the mean before the median). An (operation, mapping)
    with one train algorithm has no share (missing from ``slopes``). The answers for the last few
    (train, residual, predicted, k, operation) are kept: a validation fold asks twice (the hybrid and
    :data:`CARRIED`)."""
    residual, predicted = np.asarray(residual, float), np.asarray(predicted, float)
    key = (k, operation, _digest(train), residual.tobytes(), predicted.tobytes())
    if key not in _TRANSFER:
        if len(_TRANSFER) >= 4:
            _TRANSFER.pop(next(iter(_TRANSFER)))
        _TRANSFER[key] = _transfer(train, residual, predicted, k, operation)
    return _TRANSFER[key]


_TRANSFER: dict = {}  # (k, operation, train, residual, predicted) -> Transfer


def _transfer(train: pd.DataFrame, residual: np.ndarray, predicted: np.ndarray, k: int, operation: str) -> Transfer:
    prices = _Prices(train, predicted)
    op_of, mapping_of, alg_of = (train[c].to_numpy() for c in ("operation", "mapping", "algorithm"))
    folds = []  # (rows of one train algorithm at one mapping, the other algorithms' rows there, neighbours)
    for (op, mapping, alg), rows in train.groupby(SHARE_BY + ["algorithm"], sort=True).indices.items():
        if op != operation:
            continue
        others = np.flatnonzero((op_of == op) & (mapping_of == mapping) & (alg_of != alg))
        if len(others):
            folds.append((rows, others, _neighbours(train.iloc[others], predicted[others], train.iloc[rows], k, prices)))
    best = Transfer(np.inf, pd.Series(dtype=float))
    if not folds:
        return best
    least = np.inf
    for centre, scale in itertools.product(CENTRES, SIMILARITY_SCALES):
        guess = np.full(len(train), np.nan)
        for rows, others, near in folds:
            guess[rows] = _weighted(near, residual[others], len(rows), scale, centre)
        ok = np.isfinite(guess)
        d = pd.DataFrame({"xy": guess * residual, "xx": guess ** 2}).assign(
            **{c: train[c].to_numpy() for c in SHARE_BY})[ok]
        sums = d.groupby(SHARE_BY, sort=True)[["xy", "xx"]].sum()
        sums = sums[sums["xx"] > 0]
        slopes = (sums["xy"] / sums["xx"]).clip(0.0, 1.0)
        share = _share(slopes, train[ok])
        loss = float(np.mean(np.abs(share * guess[ok] - residual[ok])))
        if loss < least:
            least, best = loss, Transfer(float(scale), slopes, centre)
    return best


def _share(slopes: pd.Series, cells: pd.DataFrame) -> np.ndarray:
    """The share in ``slopes`` of each cell's (operation, mapping), 1 where it has none."""
    if slopes.empty:
        return np.ones(len(cells))
    share = slopes.reindex(pd.MultiIndex.from_frame(cells[SHARE_BY])).to_numpy(float)
    return np.where(np.isfinite(share), share, 1.0)


class _Prices:
    """The model's price of each cell (operation, algorithm, mapping, P, size), the first of duplicates,
    looked up by the integer codes of the cells' values (a MultiIndex of the cells asked, built for
    every lookup, cost more than the neighbour search)."""

    def __init__(self, cells: pd.DataFrame, predicted: np.ndarray):
        self.values = [pd.Index(np.asarray(pd.factorize(cells[c])[1])) for c in CELL]
        self.dims = [len(v) + 1 for v in self.values]  # the last code of each: a value the cells lack
        keys = self.key([self.codes(cells, c) for c in CELL])
        first = ~pd.Index(keys).duplicated()
        self.index, self.prices = pd.Index(keys[first]), np.asarray(predicted, float)[first]

    def codes(self, cells: pd.DataFrame, column: str) -> np.ndarray:
        i = CELL.index(column)
        local, values = pd.factorize(cells[column])  # a string column's few values looked up once each
        found = self.values[i].get_indexer(np.asarray(values))[local]
        return np.where(found < 0, self.dims[i] - 1, found)

    def key(self, codes: list[np.ndarray]) -> np.ndarray:
        return np.ravel_multi_index(codes, self.dims)

    def of(self, codes: list[np.ndarray]) -> np.ndarray:
        """The price at each cell whose codes (one array per column of CELL) are given; NaN where none."""
        key = self.key(codes)
        at = self.index.get_indexer(key.ravel()).reshape(key.shape)
        return np.where(at >= 0, self.prices[np.maximum(at, 0)], np.nan)


def _neighbours(train: pd.DataFrame, train_predicted: np.ndarray, test: pd.DataFrame, k: int,
                prices: _Prices) -> list[tuple]:
    """:func:`nearest_cells` of ``test`` among ``train`` with :func:`knn_log`'s weights and, per neighbour,
    |log| of the ratio between the ``prices`` of the test cell's algorithm at the neighbour's (mapping,
    P, size) and of the neighbour's own run (NaN where either is unknown or not positive):
    [(test rows, weights, train rows, that distance)]."""
    out = []
    train_predicted = np.asarray(train_predicted, float)
    at = [prices.codes(train, c) for c in ("mapping", "P", "size")]
    own = [prices.codes(test, c) for c in ("operation", "algorithm")]
    for rows, dist, ind in nearest_cells(train, test, k):
        w = _idw(dist, min(k, len(train)))
        asked = [np.broadcast_to(c[rows][:, None], ind.shape) for c in own] + [c[ind] for c in at]
        mine, theirs = prices.of(asked), train_predicted[ind]
        with np.errstate(divide="ignore", invalid="ignore"):
            apart = np.abs(np.log(mine) - np.log(theirs))
        apart[~((mine > 0) & (theirs > 0))] = np.nan
        out.append((rows, w, ind, apart))
    return out


def _weighted(neighbours: list[tuple], values: np.ndarray, n: int, scale: float, centre: str = "mean") -> np.ndarray:
    """The weighted ``centre`` (:data:`CENTRES`) of ``values`` (one per train cell) over
    :func:`_neighbours`, each weight times exp(-apart / ``scale``) in a row where some neighbour
    has a price of the test cell's algorithm (the others then none), the weights alone elsewhere
    and with ``scale`` inf: [n]."""
    out = np.full(n, np.nan)
    values = np.asarray(values, float)
    for rows, w, ind, apart in neighbours:
        if np.isfinite(scale):
            known = (w > 0) & np.isfinite(apart)
            alike = w * np.where(known, np.exp(-np.where(known, apart, 0.0) / scale), 0.0)
            use = alike.sum(axis=1) > 0
            w = np.where(use[:, None], alike, w)
        out[rows] = (weighted_median(values[ind], w) if centre == "median"
                     else (w * values[ind]).sum(axis=1) / w.sum(axis=1))
    return out


def weighted_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row of ``values`` [rows, n] with ``weights`` [rows, n] (not negative, some positive in
    each row): the weighted median, the mean of the lower and the upper one (the weighted
    ``inverted_cdf`` quantile from below and from above), so that where the cumulative weight reaches
    exactly half the median lies between the two values, as two equal weights give their mean."""
    values, weights = np.asarray(values, float), np.asarray(weights, float)
    if values.ndim != 2 or not values.size:
        return np.full(len(values), np.nan)
    return 0.5 * (_lower_half(values, weights) - _lower_half(-values, weights))


def _lower_half(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row, the first value in sorted order whose cumulative weight reaches half the row's: what
    ``np.quantile(values, 0.5, axis=1, weights=weights, method="inverted_cdf")`` gives, bit for bit
    (the same sort and sums), in one pass over every row instead of numpy's loop over them."""
    order = np.argsort(values.T, axis=0)  # numpy's own order: its rows along axis 0
    ranked = np.take_along_axis(values.T, order, axis=0)
    cdf = np.take_along_axis(weights.T, order, axis=0).cumsum(axis=0, dtype=np.float64)
    cdf /= cdf[-1]
    if np.isnan(cdf[-1]).any():
        raise ValueError("weights included NaN, inf or were all zero")
    at = np.minimum((cdf < 0.5).sum(axis=0), len(ranked) - 1)  # searchsorted(cdf, 0.5, "left") per row
    out = ranked[at, np.arange(ranked.shape[1])]
    return np.where(np.isnan(ranked[-1]), np.nan, out)  # a row with a NaN value: NaN, as numpy


TWIN = ["operation", "mapping", "P", "size"]
TWIN_RTOL = 1e-9  # predictions this close are one priced run (the same shape, channels and costs)


def twin_answers(train: pd.DataFrame, train_predicted: np.ndarray, test: pd.DataFrame,
                 test_predicted: np.ndarray) -> np.ndarray:
    """What :func:`hybrid` prices each test cell at by a train cell's measurement of the same run
    (:func:`default_twins` on a curve with no train cell, train cells the model could not price
    left out); NaN elsewhere. Passed to :func:`hybrid` as ``twins``, it is computed once for every
    variant that takes it. Where it is finite the price is a measurement, taken by another job than
    a forced run of it would be, and its interval that of a run by another job
    (:func:`collat.model.validation.validate`, :func:`collat.model.validation.grid_bounds`)."""
    tp = np.asarray(train_predicted, float)
    out = np.full(len(test), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = np.isfinite(np.log(train["measured"].to_numpy(float)) - np.log(tp))
    if not ok.any() or test.empty:
        return out
    train = train[ok].reset_index(drop=True)
    rows = np.flatnonzero(~pd.MultiIndex.from_frame(test[CURVE]).isin(pd.MultiIndex.from_frame(train[CURVE])))
    out[rows] = default_twins(train, tp[ok], test.iloc[rows], np.asarray(test_predicted, float)[rows])
    return out


def default_twins(train: pd.DataFrame, train_predicted: np.ndarray, test: pd.DataFrame,
                  test_predicted: np.ndarray) -> np.ndarray:
    """For every test cell, what the train cells of other algorithms priced as the same run say of
    it; NaN where they say nothing.

    A train cell at the test cell's (operation, mapping, P, size) whose prediction equals the test
    cell's (relative difference at most :data:`TWIN_RTOL`) is its twin: the model prices the two as
    one run. That is OpenMPI's default running the algorithm's shape there (its fixed rules pick
    binary trees for bcast at 128 <= P < 256 and 2 B <= size < 16 KiB, the binomial tree at
    32 <= P < 64 below 2 KiB, ...), or two algorithms whose trees coincide at a small P (every
    algorithm is one message at P = 2). The measurement of the default there is then a
    measurement of the algorithm, which nobody forced, and the forced algorithms' measurements
    are the default's where it runs their trees. At a twin the answer is its measurement; between
    two P at which one other algorithm (the provider) was measured and is a twin both times, with
    no measured P of the provider between them, the test cell's residual log(measured /
    predicted) is interpolated in log2 P from theirs, as along a measured curve; several
    providers: the geometric mean of their answers. Elsewhere (another shape between, or beyond a
    provider's twins) nothing: the default's shape changes there.

    Measured on the study's unseen_algorithm folds at 309f505 (hybrid, medians over cells, avg /
    max): 0.241 / 0.286 -> 0.225 / 0.265; the default bcast, map-by core, 0.28 / 0.49 -> 0.16 /
    0.24; the binary bcast 0.24 -> 0.16 (map-by core, avg) and 0.37 -> 0.22 (socket), but 0.12 ->
    0.20 under map-by node, where the default's and the forced binary tree's measurements differ by 35 % (the median
    ratio over their 474 common cells: two runs of one tree, the data's own disagreement)."""
    out = np.full(len(test), np.nan)
    if train.empty or test.empty:
        return out
    own = np.asarray(test_predicted, float)
    asked = test[TWIN].reset_index(drop=True).assign(row=np.arange(len(test)), own=own)
    have = train[TWIN].reset_index(drop=True).assign(provider=train["algorithm"].to_numpy(),
                                                     theirs=np.asarray(train_predicted, float),
                                                     measured=train["measured"].to_numpy(float))
    probes = asked.merge(have, on=TWIN, how="inner")  # every P a provider was measured at, twin or not
    probes = probes[np.isfinite(probes["theirs"]) & np.isfinite(probes["own"]) & (probes["own"] > 0)]
    if probes.empty:
        return out
    twin = (np.abs(probes["theirs"] - probes["own"]) <= TWIN_RTOL * probes["own"].abs()).to_numpy() \
        & (probes["measured"] > 0).to_numpy()
    probes = probes.assign(twin=twin, r=np.where(twin, np.log(probes["measured"].where(twin, 1.0) / probes["own"]),
                                                 np.nan))
    curve_of = test[CURVE].reset_index(drop=True)
    probes = probes.join(curve_of.drop(columns=["operation", "mapping", "size"]), on="row")  # the asked algorithm
    rows_of = curve_of.groupby(CURVE, sort=False).indices
    x_all = np.log2(asked["P"].to_numpy(float))
    total, count = np.zeros(len(test)), np.zeros(len(test))
    for key, g in probes.groupby(CURVE + ["provider"], sort=False):
        if not g["twin"].any():
            continue
        g = g.sort_values("P", kind="stable")
        x, r, ok = np.log2(g["P"].to_numpy(float)), g["r"].to_numpy(), g["twin"].to_numpy()
        rows = rows_of[key[:-1]]
        q = x_all[rows]
        i = np.clip(np.searchsorted(x, q, side="right") - 1, 0, len(x) - 1)
        j = np.minimum(i + 1, len(x) - 1)
        exact = (x[i] == q) & ok[i]
        between = (x[i] < q) & (q < x[j]) & ok[i] & ok[j]
        w = np.where(between, (q - x[i]) / np.where(between, x[j] - x[i], 1.0), 0.0)
        value = np.where(exact, r[i], (1 - w) * r[i] + w * r[j])
        use = exact | between
        total[rows[use]] += np.log(own[rows[use]]) + value[use]
        count[rows[use]] += 1
    found = count > 0
    out[found] = np.exp(total[found] / count[found])
    return out


def against(test: pd.DataFrame, trend: np.ndarray, model: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """True for the ``cells`` (a mask of ``test``) of every curve (operation, algorithm, mapping, size)
    on which ``trend`` and ``model`` go opposite ways: the least-squares slopes of their logs
    against log2 P over the curve's ``cells`` have opposite signs. False elsewhere, and on a curve
    whose cells span one P or where either is not positive."""
    out = np.zeros(len(test), dtype=bool)
    rows = np.flatnonzero(cells & np.isfinite(trend) & (trend > 0) & np.isfinite(model) & (model > 0))
    if not len(rows):
        return out
    sub = test.iloc[rows]
    by = [sub[c].to_numpy() for c in CURVE]
    frame = pd.DataFrame({"x": np.log2(sub["P"].to_numpy(float)), "t": np.log(trend[rows]),
                          "m": np.log(model[rows])})
    centred = frame - frame.groupby(by, sort=False).transform("mean")
    products = centred[["t", "m"]].mul(centred["x"], axis=0).assign(xx=centred["x"] ** 2)
    sums = products.groupby(by, sort=False).transform("sum")
    out[rows] = (sums["xx"].to_numpy() > 0) & (sums["t"].to_numpy() * sums["m"].to_numpy() < 0)
    return out


def hybrid_predictions(calibrated: pd.DataFrame, measured: dict[str, pd.DataFrame], k: int,
                       trend: pd.DataFrame | None = None, unfitted: pd.DataFrame | None = None,
                       at_measured: pd.DataFrame | None = None, bend: pd.DataFrame | None = None,
                       trees=(), slowed: dict | None = None, machine: dict | None = None,
                       grid_machine: dict | None = None) -> pd.DataFrame:
    """The hybrid mode's rows of the model stage's grid: ``calibrated`` (its rows of mode
    ``calibrated``) corrected, per target, by the residuals at the cells of ``measured[target]``
    (:func:`collat.model.validation.measured_cells`) that lie on the grid, or, with ``at_measured`` (the
    calibrated mode's rows on another grid that prices the same placements, e.g. the measured
    machine's for a what-if machine's P), on that grid; mode set to ``hybrid``.
    ``trend`` (the regression stage's grid) and ``unfitted`` (the openmpi mode's rows), each with
    columns operation, algorithm, mapping, P, size, target, predicted: :func:`hybrid`'s other forecasts.
    ``bend`` (:func:`collat.model.bend.bend_weights`' table): how much of the model's bend between
    two measured P each (operation, target) keeps (all of it without); on another grid, of the
    measured machine's bend, at the cells that grid shares with it. ``trees`` (config
    ``model.openmpi.trees``): the shapes that tell an algorithm foreign to the measured ones
    (:func:`collat.model.transfer.foreign`). Column ``twin``: the price is a measured cell's of the
    same run (:func:`twin_answers`). ``slowed`` (target -> operations,
    :func:`collat.model.calibrated_mode.slowed_operations`): on those, a cell where a node is full
    reads the residuals of measured cells where one is, and the others of those where none is
    (:func:`mark_full`, :func:`curve_residuals`); ``machine``: the measured one, ``grid_machine``: the
    grid's (the measured one where not given)."""
    from collat.model.transfer import foreign
    parts = []
    for target, g in calibrated.groupby("target", sort=True):
        cells = measured.get(target)
        g = g.reset_index(drop=True)
        if cells is None or cells.empty:
            continue
        priced = g if at_measured is None else at_measured[at_measured["target"] == target]
        ops = (slowed or {}).get(target, set())
        if ops and machine is not None:
            cells = mark_full(cells, machine, ops)
            g = mark_full(g, grid_machine or machine, ops)
            priced = g if at_measured is None else mark_full(priced, machine, ops)
        train = cells.merge(priced[CELL + ["predicted"]], on=CELL, how="inner")
        line, free = (None if other is None else _aligned(other, target, g) for other in (trend, unfitted))
        turned = twins = None  # on another grid: whether the trend goes against the model, curve by
        # curve, from the measured machine's grid beyond each curve's measured P (a what-if grid holds
        # few of those P), the twins found on the measured machine's grid, whose P they interpolate,
        # and its prices of an algorithm nobody measured at the measured cells (its neighbours' weights)
        if at_measured is not None:
            priced = priced.reset_index(drop=True)
            residual = np.log(train["measured"].to_numpy(float)) - np.log(train["predicted"].to_numpy(float))
            ok = np.isfinite(residual)
            _, where = curve_residuals(train[ok].reset_index(drop=True), residual[ok], priced)
            if trend is not None:
                turned = _turned(priced, where, _aligned(trend, target, priced), g)
            twins = _twins(train[ok].reset_index(drop=True), priced, where, g)
        kept, bent = 1.0, None
        if bend is not None:
            weights = bend[bend["target"] == target].set_index("operation")["weight"]
            kept = g["operation"].astype(str).map(weights).fillna(1.0).to_numpy(float)
            if at_measured is not None:  # the measured machine's bend; the what-if machine's difference whole
                bent = _aligned(at_measured, target, g)
        if twins is None:  # the twins of this grid, found once for the price and its column
            twins = twin_answers(train, train["predicted"].to_numpy(), g, g["predicted"].to_numpy())
        parts.append(g.assign(mode="hybrid", predicted=hybrid(train, train["predicted"].to_numpy(), g,
                                                                g["predicted"].to_numpy(), k, line, free, turned,
                                                                twins, None if at_measured is None else priced,
                                                                bend=kept, bent=bent,
                                                                foreign=foreign(g, cells, trees)),
                              twin=np.isfinite(twins)).drop(columns=FULL, errors="ignore"))
    if not parts:
        return calibrated.iloc[:0].assign(mode="hybrid", twin=False)
    out = pd.concat(parts, ignore_index=True)
    out["mode"] = out["mode"].astype(calibrated["mode"].dtype)
    return out


def _turned(priced: pd.DataFrame, where: np.ndarray, trend: np.ndarray, cells: pd.DataFrame) -> np.ndarray:
    """True for the ``cells`` of every curve on which :func:`against` holds over the ``priced`` grid's
    cells beyond the curve's train P (``where`` == 2, :func:`curve_residuals`; ``trend``: one per
    priced cell)."""
    flagged = against(priced, trend, priced["predicted"].to_numpy(float), where == 2)
    keys = pd.MultiIndex.from_frame(priced.loc[flagged, CURVE].drop_duplicates())
    return pd.MultiIndex.from_frame(cells[CURVE]).isin(keys)


def _twins(train: pd.DataFrame, priced: pd.DataFrame, where: np.ndarray, cells: pd.DataFrame) -> np.ndarray:
    """:func:`default_twins` of the ``priced`` grid's cells on curves with no ``train`` cell (``where``
    == 0, :func:`curve_residuals`), taken at the same ``cells`` (NaN elsewhere, e.g. beyond the
    priced grid's P)."""
    rows = np.flatnonzero(where == 0)
    found = default_twins(train, train["predicted"].to_numpy(float), priced.iloc[rows],
                          priced["predicted"].to_numpy(float)[rows])
    value = priced.iloc[rows][CELL].assign(twin=found).dropna(subset=["twin"]).drop_duplicates(CELL)
    return cells[CELL].merge(value, on=CELL, how="left")["twin"].to_numpy(float)


def _aligned(other: pd.DataFrame, target: str, cells: pd.DataFrame) -> np.ndarray:
    """``other``'s prediction of each of ``cells`` for ``target`` (NaN where it has none)."""
    o = other[other["target"] == target][CELL + ["predicted"]].drop_duplicates(CELL)
    return cells[CELL].merge(o.rename(columns={"predicted": "other"}), on=CELL, how="left")["other"].to_numpy(float)
