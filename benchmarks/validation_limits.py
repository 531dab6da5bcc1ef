"""What limits each validation split: diagnostics read from a default run's outputs, no refit.

    .venv/bin/python benchmarks/validation_limits.py [--results results] [--target avg]

Reads results/model/validation.csv, results/model/validation_predictions.parquet (the test cells
of every split and fold, robust cleaning) and results/tidy/collective.parquet, and prints:

1. **goals**: per split with a goal of issue 13 (sparse_P: 1.5 x the noise floor; extrapolation
   0.15; unseen_algorithm 0.20), the hybrid's median over cells and how many of its cells above
   the goal would have to fall below it for the median to meet it;
2. **level oracle**: each model's median error after shifting every test curve (operation,
   algorithm, mapping) by the one constant factor that fits its test measurements best (the
   median log residual, read from the test data: an oracle). What is left is the model's shape
   along P and size, which no correction of its level (residuals borrowed from other curves, a
   per-call overhead) can remove;
3. **sparse_P by distance**: the median error by the distance in P from a test P to the nearest
   training P of its curve (training P: the curve's measured P the split did not test), the
   hybrid beside ``training_neighbours`` (the straight line between the training measurements on
   either side) and ``measured_neighbours`` (the measurements at the nearest measured P on either side);
4. **best forecaster per cell** (extrapolation): the median over cells of the smallest error among
   the calibrated mode, the hybrid with and without the segmented trend, and the segmented fit,
   each cell choosing with its own test data (an oracle): what a better choice among these
   forecasters could gain at most.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

GROUP = ["operation", "algorithm", "mapping"]
GOALS = {"extrapolation": 0.15, "unseen_algorithm": 0.20}  # sparse_P: 1.5 x the floor (issue 13)
FORECASTERS = ["calibrated", "hybrid_carried", "segmented", "hybrid"]


def cell_errors(rows: pd.DataFrame, predicted: pd.Series | np.ndarray) -> pd.Series:
    """Median relative error per cell (operation, algorithm, mapping) of ``predicted`` against ``rows.measured``."""
    rel = np.abs(np.asarray(predicted, float) - rows["measured"].to_numpy(float)) / rows["measured"].to_numpy(float)
    return pd.Series(rel, index=rows.index).groupby([rows[g] for g in GROUP], observed=True).median()


def level_oracle(rows: pd.DataFrame) -> pd.Series:
    """Median relative error per cell after scaling each cell's predictions by exp(median log residual)."""
    ok = (rows["predicted"] > 0) & (rows["measured"] > 0)
    rows = rows[ok]
    residual = np.log(rows["measured"] / rows["predicted"])
    shift = residual.groupby([rows[g] for g in GROUP], observed=True).transform("median")
    return cell_errors(rows, rows["predicted"] * np.exp(shift))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=Path("results"), help="a default run's results/ (default results)")
    ap.add_argument("--target", default="avg", choices=["avg", "max"], help="the target scored (default avg)")
    args = ap.parse_args()
    needed = [args.results / "model" / "validation.csv", args.results / "model" / "validation_predictions.parquet",
              args.results / "tidy" / "collective.parquet"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        print(f"error: {', '.join(missing)}: expected a run's validation outputs (run the pipeline first, e.g. "
              f"`.venv/bin/snakemake --cores 2`, or pass --results)", file=sys.stderr)
        return 2
    board = pd.read_csv(args.results / "model" / "validation.csv")
    board = board[(board["cleaning"] == "robust") & (board["target"] == args.target)]
    rows = pd.read_parquet(args.results / "model" / "validation_predictions.parquet",
                           filters=[("target", "==", args.target), ("scored", "==", True)])
    for c in ("split", "model", "operation", "mapping"):
        rows[c] = rows[c].astype(str)
    floor = float(board["floor"].median())
    pd.set_option("display.width", 160)

    print(f"# 1. goals (target {args.target}, robust cleaning, noise floor {floor:.3f})")
    for split, goal in {"sparse_P": 1.5 * floor, **GOALS}.items():
        cells = board[(board["split"] == split) & (board["model"] == "hybrid")]["mape"].dropna()
        above = int((cells > goal).sum())
        need = max(0, above - (len(cells) - 1) // 2)
        print(f"{split:17s} hybrid {cells.median():.3f}  goal {goal:.3f}  cells above it {above} of {len(cells)}:"
              f" {need} must fall below it")

    print("\n# 2. median over cells: as predicted / with each test curve's level set by its own test data")
    table = {}
    for (split, model), g in rows.groupby(["split", "model"], sort=True):
        if model in ("openmpi", "paper", "nearest_neighbour", "measured_neighbours"):
            continue
        table[(split, model)] = (cell_errors(g, g["predicted"]).median(), level_oracle(g).median())
    print(pd.DataFrame(table, index=["as predicted", "level oracle"]).T.round(3).to_string())

    print("\n# 3. sparse_P: median error by distance in P to the nearest training P of the curve")
    sp = rows[(rows["split"] == "sparse_P") & rows["model"].isin(["hybrid", "training_neighbours", "measured_neighbours",
                                                                      "calibrated"])]
    if len(sp):
        measured = pd.read_parquet(args.results / "tidy" / "collective.parquet", columns=GROUP + ["P"])
        for c in ("operation", "mapping"):
            measured[c] = measured[c].astype(str)
        every = measured.groupby(GROUP)["P"].unique()
        tested = sp.groupby(GROUP)["P"].unique()
        near = {}
        for key, test_P in tested.items():
            train = np.setdiff1d(every[key], test_P)
            for P in test_P:
                near[key + (P,)] = np.abs(train - P).min() if train.size else np.nan
        distance = [near[k] for k in zip(*(sp[c] for c in GROUP + ["P"]))]
        sp = sp.assign(distance=pd.cut(distance, [0, 2, 4, 8, 16, 64, 1024]),
                       error=np.abs(sp["predicted"] - sp["measured"]) / sp["measured"])
        by = sp.groupby(["model", "distance"], observed=True)["error"]
        print(pd.concat({"median error": by.median().unstack(), "cells": by.size().unstack()}, axis=0)
              .round(3).to_string())

    print("\n# 4. extrapolation: per cell, the smallest error of " + ", ".join(FORECASTERS))
    ex = board[(board["split"] == "extrapolation") & board["model"].isin(FORECASTERS)]
    per_cell = ex.pivot_table(index=GROUP, columns="model", values="mape")
    if len(per_cell):
        best = per_cell.min(axis=1)
        print(f"median of the best per cell {best.median():.3f}; hybrid {per_cell['hybrid'].median():.3f};"
              f" the hybrid is the best in {(per_cell.idxmin(axis=1) == 'hybrid').sum()} of {len(per_cell)} cells")
        print(per_cell.assign(best=per_cell.idxmin(axis=1)).sort_values("hybrid").round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
