"""How far the calibrated mode's prices carry to an algorithm nobody measured.

The calibration fits the machine's costs on the algorithms that were measured. Those costs price
any other algorithm too, but on some machines the fitted costs describe the measured algorithms
better than the machine: the calibrated price of an unmeasured algorithm is then worse than the
openmpi mode's, priced from the point-to-point and NBFT stages alone (a 16-core node:
benchmarks/README.md). The price of an unmeasured algorithm is therefore the geometric blend
c^w o^(1-w) of the calibrated price c and the openmpi mode's o, with the weight w chosen on the
measured algorithms themselves: each held out in turn, the others calibrated, and w the value
whose worst held-out algorithm is priced best (:func:`transfer_weight`). w = 1 trusts the calibration
fully, w = 0 not at all.

The held-out algorithms can only say how far the calibration carries to algorithms of their own
kind. An algorithm of a :func:`family` that no measured algorithm of its operation covers
(:func:`foreign`: Rabenseifner's reduce beside measured trees, the linear algorithm's P - 1
receivers beside trees of a few children each) sends messages the calibration was never fitted
on, and nothing measured says how far it carries there: it gets the openmpi mode's price (w = 0),
and the hybrid borrows no residual for it (:func:`collat.model.hybrid_mode.hybrid`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the weights tried, from the openmpi mode's price (0) to the calibrated one (1)
WEIGHTS = np.round(np.linspace(0.0, 1.0, 11), 1)


#: the families of :func:`family`
TREE, FLAT, BLOCKS = "tree", "flat", "blocks"
#: for each family, those whose measured algorithms tell how far the calibration carries to it: a
#: tree's parents have a few children, as a flat tree's root has at small P; a flat tree's root has
#: P - 1, which no other tree's parent has
COVERED_BY = {TREE: {TREE, FLAT}, FLAT: {FLAT}, BLOCKS: {BLOCKS}}


def family(trees, operation: str, algorithm: int) -> str:
    """The kind of messages an algorithm sends, from its shape in ``trees`` (config
    ``model.openmpi.trees``): :data:`FLAT`, the whole message between the root and each other rank
    (the ``linear`` tree: a fan-out, or fan-in, of P - 1); :data:`TREE`, the whole message (or its
    segments) along a tree of a few children per parent, every other ``tree`` shape, and the
    default (0), whose fixed rules run such trees at most sizes and P; :data:`BLOCKS`, the message
    cut into blocks that ranks exchange, every ``schedule`` shape (the split binary tree, the
    scatter-allgathers, Rabenseifner's reduce)."""
    for shape in trees:
        if shape["operation"] == operation and int(shape["algorithm"]) == int(algorithm):
            if "tree" not in shape:
                return BLOCKS
            return FLAT if shape["tree"] == "linear" else TREE
    return TREE


def foreign(cells: pd.DataFrame, known: pd.DataFrame, trees) -> np.ndarray:
    """True for each of ``cells`` (columns operation, algorithm) whose algorithm's :func:`family`
    no algorithm of its operation in ``known`` (the same columns) covers (:data:`COVERED_BY`),
    where ``known`` holds some of that operation."""
    pair = ["operation", "algorithm"]
    have = {(op, family(trees, op, a)) for op, a in known[pair].drop_duplicates().itertuples(index=False)}
    ops = {op for op, _ in have}
    asked = cells[pair].drop_duplicates()
    alone = [op in ops and not any((op, f) in have for f in COVERED_BY[family(trees, op, a)])
             for op, a in asked.itertuples(index=False)]
    if not any(alone):
        return np.zeros(len(cells), dtype=bool)
    return pd.MultiIndex.from_frame(cells[pair]).isin(pd.MultiIndex.from_frame(asked[alone]))


def physics_width(measured, price, level: float = 0.8) -> float:
    """The ``level`` quantile of |log(measured / price)| over the cells both hold: how far the
    physics' ``price`` (the openmpi mode's, fitted on no collective measurement, with the machine's
    costs a calibration measured: :func:`collat.model.calibrated_mode.physics_price`) errs on what
    was measured. NaN where no cell has both."""
    with np.errstate(divide="ignore", invalid="ignore"):
        error = np.abs(np.log(np.asarray(measured, float) / np.asarray(price, float)))
    error = error[np.isfinite(error)]
    return float(np.quantile(error, level)) if len(error) else float("nan")


def unmeasured_bounds(grid: pd.DataFrame, physics: pd.DataFrame, measured: dict, trees, lower, upper,
                      level: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of the fitted modes' rows of the model stage's ``grid`` (mode, operation,
    algorithm, mapping, P, size, target, predicted) with, for an algorithm nobody measured at its
    operation (``measured``: target -> measured cells) that is :func:`foreign` to the measured ones,
    or for a curve (operation, algorithm, mapping) nobody measured that has no interval (the
    validation found no width for it: one algorithm of its operation measured, or one mapping), an
    interval at least as wide as the error of ``physics`` (rows of the openmpi mode as the fitted
    modes build on them, :func:`collat.model.calibrated_mode.with_machine_terms`: the price such an
    algorithm gets) on what was measured (:func:`physics_width` over the measured cells of its
    operation and target). Nothing measured says how far the calibration carries there but how far
    that price misses the rest. A row whose column ``twin`` is True (a measurement of the same run
    prices it) keeps its interval."""
    lower, upper = np.asarray(lower, float).copy(), np.asarray(upper, float).copy()
    key = ["operation", "algorithm", "mapping", "P", "size"]
    curve = ["operation", "algorithm", "mapping"]
    predicted = grid["predicted"].to_numpy(float)
    for target, rows in grid.groupby("target", sort=False).indices.items():
        cells = measured.get(target)
        if cells is None or cells.empty:
            continue
        here = grid.iloc[rows]
        fitted = here["mode"].isin(["calibrated", "hybrid"]).to_numpy()
        unseen = ~pd.MultiIndex.from_frame(here[curve]).isin(pd.MultiIndex.from_frame(cells[curve].drop_duplicates()))
        bare = ~(np.isfinite(lower[rows]) & np.isfinite(upper[rows]))
        wide = fitted & (foreign(here, cells, trees) | (unseen & bare))
        if "twin" in here:  # a price that is a measurement of the same run: its own interval
            wide &= ~here["twin"].fillna(False).to_numpy(bool)
        if not wide.any():
            continue
        at = cells.merge(physics[physics["target"] == target][key + ["predicted"]], on=key, how="inner")
        widths = {op: physics_width(g["measured"], g["predicted"], level)
                  for op, g in at.groupby("operation", sort=False)}
        width = here["operation"].map(widths).to_numpy(float)
        use = wide & np.isfinite(width)
        idx, half = rows[use], width[use]
        lower[idx] = np.fmin(lower[idx], predicted[idx] * np.exp(-half))
        upper[idx] = np.fmax(upper[idx], predicted[idx] * np.exp(half))
    return lower, upper


def transferred(calibrated, openmpi, weight) -> np.ndarray:
    """The blend calibrated^weight x openmpi^(1 - weight), cell by cell (``weight``: one, or one per
    cell); the calibrated price where the openmpi mode has none (NaN)."""
    c, o, weight = np.asarray(calibrated, float), np.asarray(openmpi, float), np.asarray(weight, float)
    blend = np.exp(weight * np.log(c) + (1.0 - weight) * np.log(np.where(o > 0, o, np.nan)))
    return np.where(np.isfinite(blend), blend, c)


def transfer_weight(measured, calibrated, openmpi, held_out) -> float:
    """The weight of :data:`WEIGHTS` whose :func:`transferred` prices have the smallest worst
    error over the held-out algorithms: per algorithm (``held_out``, one label per cell) the median
    |log(measured / price)| over its cells, each priced by a calibration that did not see it; the
    weight that makes the worst of them least. A held-out algorithm stands for the one nobody
    measured: the weight must not give any of them away to the other mode's errors (the pooled
    median let the algorithms the openmpi mode prices well outvote one it prices badly). Ties go
    to the larger weight; 1 without a cell that both modes price."""
    y, c, o = (np.log(np.asarray(v, float)) for v in (measured, calibrated, openmpi))
    ok = np.isfinite(y) & np.isfinite(c) & np.isfinite(o)
    if not ok.any():
        return 1.0
    groups = pd.Series(np.asarray(held_out)[ok]).groupby(np.asarray(held_out)[ok]).indices.values()
    y, c, o = y[ok], c[ok], o[ok]
    worst = [max(np.median(np.abs(y[g] - (w * c[g] + (1.0 - w) * o[g]))) for g in groups) for w in WEIGHTS]
    best = min(worst)
    return float(max(w for w, e in zip(WEIGHTS, worst) if e <= best + 1e-12))


TRANSFER_COLUMNS = ["operation", "target", "weight", "algorithms", "cells", "error_calibrated", "error_openmpi",
                    "error_transferred"]


def held_out_weights(cells_of: dict, openmpi_of: dict, start: dict, options, placements, opts, max_receivers: int,
                     processes: int = 1) -> pd.DataFrame:
    """The transfer weight of each (operation, target) with two measured algorithms or more: every
    algorithm held out in turn, the others calibrated (:func:`collat.model.calibration.calibrate`),
    the held-out cells priced by that calibration and by the openmpi mode, and :func:`transfer_weight`
    over all of them but the held-out algorithms :func:`foreign` to the others (the weight is not
    theirs). ``cells_of``: target -> measured cells; ``openmpi_of``: target -> the openmpi
    mode's price of each of those cells (NaN where it has none). Columns :data:`TRANSFER_COLUMNS`,
    with each price's median |log error| on the held-out cells."""
    from dataclasses import replace

    from collat.model.calibration import calibrate_all, fanout_shapes, predict_cells
    from collat.runner import fork_map

    channels = list(next(iter(start.values())).channels)
    shapes = fanout_shapes(start, opts.nbft_shape, options.openmpi.small_limit)
    trees = options.openmpi.trees

    def alike(g, alg) -> bool:  # the held-out algorithm's family among the others'
        return not foreign(pd.DataFrame({"operation": [g["operation"].iat[0]], "algorithm": [alg]}),
                           g[g["algorithm"] != alg], trees)[0]
    jobs = [(target, op, alg) for target, cells in cells_of.items()
            for op, g in cells.groupby("operation", sort=True) if op in start and g["algorithm"].nunique() > 1
            for alg in sorted(g["algorithm"].unique()) if alike(g, alg)]

    def one(i):  # the held-out algorithm's cells priced by a calibration of the operation's others
        target, op, alg = jobs[i]
        cells = cells_of[target]
        same = (cells["operation"] == op).to_numpy()
        test = same & (cells["algorithm"] == alg).to_numpy()
        table = calibrate_all({target: cells[same & ~test]}, start, options, placements,
                              replace(opts, targets=(target,)), max_receivers)
        return predict_cells(table, cells[test], target, channels, options, placements, max_receivers, shapes)

    priced = fork_map(one, len(jobs), processes)
    rows = []
    for (target, op), idx in pd.DataFrame(jobs, columns=["target", "op", "alg"]).groupby(["target", "op"],
                                                                                         sort=True).indices.items():
        cells, openmpi = cells_of[target], np.asarray(openmpi_of[target], float)
        masks = [((cells["operation"] == op) & (cells["algorithm"] == jobs[i][2])).to_numpy() for i in idx]
        y = np.concatenate([cells["measured"].to_numpy(float)[m] for m in masks])
        c = np.concatenate([priced[i] for i in idx])
        o = np.concatenate([openmpi[m] for m in masks])
        w = transfer_weight(y, c, o, np.concatenate([np.full(m.sum(), jobs[i][2]) for i, m in zip(idx, masks)]))

        def error(p):
            e = np.abs(np.log(y) - np.log(p))
            return float(np.median(e[np.isfinite(e)])) if np.isfinite(e).any() else float("nan")
        rows.append({"operation": op, "target": target, "weight": w, "algorithms": len(idx), "cells": len(y),
                     "error_calibrated": error(c), "error_openmpi": error(o),
                     "error_transferred": error(transferred(c, o, w))})
    return pd.DataFrame(rows, columns=TRANSFER_COLUMNS)


def transfer_grid(calibrated: pd.DataFrame, openmpi: pd.DataFrame, measured: dict, weights: pd.DataFrame,
                  trees=()) -> np.ndarray:
    """The calibrated mode's grid (rows: operation, algorithm, mapping, P, size, target,
    predicted) with each algorithm that ``measured`` (target -> measured cells) holds no cell of,
    at its operation, priced by :func:`transferred` with its (operation, target) weight and the
    openmpi mode's grid ``openmpi`` at the same cell, or by the openmpi mode alone where it is
    :func:`foreign` to the measured ones (``trees``: their shapes); the other rows as they are."""
    key = ["operation", "algorithm", "mapping", "P", "size", "target"]
    out = calibrated["predicted"].to_numpy(float).copy()
    o = calibrated[key].merge(openmpi[key + ["predicted"]], on=key, how="left")["predicted"].to_numpy(float)
    w = calibrated[["operation", "target"]].merge(weights[["operation", "target", "weight"]],
                                                  on=["operation", "target"], how="left")["weight"].to_numpy(float)
    w = w.copy()  # writable: a foreign algorithm's weight is set to 0 below
    pair = ["operation", "algorithm"]
    unseen = np.zeros(len(calibrated), dtype=bool)
    for target, rows in calibrated.groupby("target", sort=False).indices.items():
        have = measured.get(target)
        known = (pd.MultiIndex.from_frame(calibrated.iloc[rows][pair]).isin(
            pd.MultiIndex.from_frame(have[pair].drop_duplicates())) if have is not None else np.zeros(len(rows), bool))
        unseen[rows] = ~known
        if have is not None:
            w[rows[~known & foreign(calibrated.iloc[rows], have, trees)]] = 0.0
    blend = unseen & np.isfinite(w) & (w < 1.0)
    for weight in np.unique(w[blend]):
        rows = blend & (w == weight)
        out[rows] = transferred(out[rows], o[rows], float(weight))
    return out
