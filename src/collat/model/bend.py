"""How much of the calibrated mode's bend between two measured P the hybrid keeps.

Between two measured P of a curve the hybrid is the calibrated price times its residual, both
interpolated: in log, the straight line between the two measurements plus the model's *bend*, how
far the calibrated price at P departs from the straight line between its own prices at the two
measured P (:func:`model_bend`). Where the model's shape between measured P is right, the bend is
worth keeping; where it is wrong (on the study, the bcast under map-by core), a straight line
between the measurements does better (sparse_P split of results/model/validation.csv: the
baseline ``training_neighbours``). So the hybrid keeps w x bend, the weight w of :data:`WEIGHTS`
chosen per (operation, target) on inner folds of the training data: each curve's odd and even
measured P in turn, the others priced by a calibration of them alone (:func:`bend_weight`). w = 1
keeps the model's shape (the hybrid before this weight), w = 0 draws the straight line. With no
cell between two training P of an inner fold (two measured P per curve), w = 1: only the model
knows a curve's shape there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the weights tried, from the straight line between the measurements (0) to the model's shape (1)
WEIGHTS = np.round(np.linspace(0.0, 1.0, 11), 1)
BEND_COLUMNS = ["operation", "target", "weight", "cells", "error_line", "error_model", "error_weighted"]


def model_bend(train: pd.DataFrame, train_predicted, test: pd.DataFrame, test_predicted) -> np.ndarray:
    """log(``test_predicted``) less the straight line, in log latency against log2 P, between the
    ``train_predicted`` prices at the nearest train P on either side of each test cell on its curve
    (operation, algorithm, mapping, size); NaN where the cell is not between two train P of its
    curve, or a price is missing."""
    from collat.model.hybrid_mode import curve_residuals

    logs = np.log(np.asarray(train_predicted, float))
    ok = np.isfinite(logs)
    line, where = curve_residuals(train[ok].reset_index(drop=True), logs[ok], test)
    return np.where(where == 1, np.log(np.asarray(test_predicted, float)) - line, np.nan)


def bend_weight(error, bend) -> float:
    """The weight w of :data:`WEIGHTS` whose prices keeping w x bend have the smallest median
    |log error| over the cells, from ``error`` = log(hybrid / measured) with the whole bend and the
    cells' ``bend``. Ties go to the larger weight; 1 without a cell that has both."""
    e, b = np.asarray(error, float), np.asarray(bend, float)
    ok = np.isfinite(e) & np.isfinite(b)
    if not ok.any():
        return 1.0
    e, b = e[ok], b[ok]
    errors = [float(np.median(np.abs(e - (1.0 - w) * b))) for w in WEIGHTS]
    best = min(errors)
    return float(max(w for w, x in zip(WEIGHTS, errors) if x <= best + 1e-12))


def weights_by_operation(cells: pd.DataFrame, error, bend) -> dict[str, float]:
    """:func:`bend_weight` of each operation of ``cells`` (one ``error`` and ``bend`` per cell)."""
    e, b = np.asarray(error, float), np.asarray(bend, float)
    return {op: bend_weight(e[rows], b[rows])
            for op, rows in cells.groupby("operation", sort=True).indices.items()}


def inner_fold_errors(train: pd.DataFrame, folds) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(the inner folds' test cells, the hybrid's log error with the whole bend there, their bend),
    pooled over ``folds``: (train rows, test rows, the prices of ``train`` by a calibration of the
    fold's train rows alone) each. Only the test cells between two train P of their curve count:
    elsewhere nothing is bent."""
    from collat.model.hybrid_mode import curve_residuals

    measured = np.log(train["measured"].to_numpy(float))
    parts, errors, bends = [], [], []
    for a, b, prices in folds:
        tr, te = train[a].reset_index(drop=True), train[b].reset_index(drop=True)
        residual = measured[a] - np.log(prices[a])
        ok = np.isfinite(residual)
        along, where = curve_residuals(tr[ok].reset_index(drop=True), residual[ok], te)
        bend = model_bend(tr, prices[a], te, prices[b])
        inside = (where == 1) & np.isfinite(bend)
        parts.append(te[inside])
        errors.append((np.log(prices[b]) + along - measured[b])[inside])
        bends.append(bend[inside])
    if not parts:
        return train.iloc[:0], np.empty(0), np.empty(0)
    return pd.concat(parts, ignore_index=True), np.concatenate(errors), np.concatenate(bends)


def bend_weights(cells_of: dict, start: dict, options, placements, opts, max_receivers: int,
                 processes: int = 1) -> pd.DataFrame:
    """The bend weight of each (operation, target) on all the measured cells (``cells_of``: target
    -> measured cells): :func:`collat.model.validation.odd_and_even` folds, each calibrated on its train cells alone
    (:func:`collat.model.calibration.calibrate`), and :func:`bend_weight` over the test cells of
    both. Columns :data:`BEND_COLUMNS`, with each variant's median |log error| there."""
    from dataclasses import replace

    from collat.model.calibrated_mode import slowed_operations
    from collat.model.calibration import calibrate_all, fanout_shapes, predict_cells
    from collat.model.hybrid_mode import mark_full
    from collat.model.validation import odd_and_even
    from collat.runner import fork_map

    channels = list(next(iter(start.values())).channels)
    shapes = fanout_shapes(start, opts.nbft_shape, options.openmpi.small_limit)
    jobs = [(target, a, b) for target, cells in cells_of.items()
            for a, b in odd_and_even(cells[cells["operation"].isin(set(start))].reset_index(drop=True))]
    kept = {target: cells[cells["operation"].isin(set(start))].reset_index(drop=True)
            for target, cells in cells_of.items()}

    def one(i):  # every cell of the target priced by a calibration of the fold's train cells, and the
        # operations that calibration finds a full node slower on
        target, a, _ = jobs[i]
        cells = kept[target]
        table = calibrate_all({target: cells[a]}, start, options, placements, replace(opts, targets=(target,)),
                              max_receivers)
        prices = np.full(len(cells), np.nan)
        known = cells["operation"].isin(set(table["operation"])).to_numpy()
        prices[known] = predict_cells(table, cells[known], target, channels, options, placements, max_receivers,
                                      shapes)
        return prices, slowed_operations(table, target)

    priced = fork_map(one, len(jobs), processes)
    rows = []
    for target, cells in kept.items():
        folds = [(a, b, p) for (t, a, b), (p, _) in zip(jobs, priced) if t == target]
        # a full node's residuals apart, as the hybrid reads them, where both folds' calibrations say so
        slowed = set.intersection(*[s for (t, *_), (_, s) in zip(jobs, priced) if t == target] or [set()])
        if slowed:
            cells = mark_full(cells, placements.machine, slowed)
        at, error, bend = inner_fold_errors(cells, folds)
        inside = at.groupby("operation", sort=True).indices
        for op in sorted(cells["operation"].unique()):
            idx = inside.get(op, np.empty(0, dtype=int))
            w = bend_weight(error[idx], bend[idx])

            def miss(weight):
                return float(np.median(np.abs(error[idx] - (1.0 - weight) * bend[idx]))) if len(idx) else np.nan
            rows.append({"operation": op, "target": target, "weight": w, "cells": len(idx),
                         "error_line": miss(0.0), "error_model": miss(1.0), "error_weighted": miss(w)})
    return pd.DataFrame(rows, columns=BEND_COLUMNS)

