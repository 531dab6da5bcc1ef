"""How far one machine's campaign carries to another machine of the same description: two runs of
score_heldout.py kept with ``--keep`` (A and B), compared launch by launch.

    python benchmarks/cross_lease.py A B

Prints (target avg) the cells both measured (every launch, rounds and held-out) with the median
relative difference and the median ratio A / B, overall and per operation and size band; then each
run's model (fitted on its rounds) scored on every launch of the other: median relative error, the
median ratio predicted / measured, and the share inside the 80 % interval.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from collat.selection.choice import CELL, measured_table  # noqa: E402

TARGET = "avg"
BANDS = pd.IntervalIndex.from_breaks([0, 1024, 65536, np.inf])  # up to 1 KiB, to 64 KiB, above


def measured(run: Path) -> pd.DataFrame:
    """Every launch a kept run read (rounds and held-out), one row per cell."""
    parts = [pd.read_parquet(run / part / "results/tidy/collective.parquet") for part in ("rounds", "heldout")]
    rows = pd.concat(parts, ignore_index=True)
    return measured_table(rows, TARGET)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    args = ap.parse_args()
    a, b = measured(args.a), measured(args.b)
    keys = CELL + ["algorithm"]
    both = a.merge(b, on=keys, suffixes=("_a", "_b"))
    both["log_ratio"] = np.log(both["measured_a"] / both["measured_b"])
    both["band"] = pd.cut(both["size"], BANDS)
    launches = both.groupby(["operation", "algorithm", "mapping", "P"]).ngroups
    difference = np.median(np.abs(np.exp(both["log_ratio"]) - 1))
    print(f"measured by both: {launches} launches, {len(both)} cells; median |A/B - 1| {difference:.3f}, "
          f"median A/B {np.exp(both['log_ratio'].median()):.3f}")
    per = both.groupby(["operation", "band"], observed=True)["log_ratio"]
    print(pd.DataFrame({"cells": per.size(), "median_ratio": np.exp(per.median()),
                        "median_abs_difference": per.apply(lambda s: np.median(np.abs(np.exp(s) - 1)))})
          .to_string(float_format=lambda v: f"{v:.3f}"))
    for fit, test, name in ((args.a, b, "A's model on B's launches"), (args.b, a, "B's model on A's launches")):
        pred = pd.read_parquet(fit / "rounds/results/model/predictions.parquet", filters=[("target", "==", TARGET)])
        m = pred[pred["mode"].isin(["openmpi", "calibrated", "hybrid"])].merge(test, on=keys)
        m["error"] = (m["predicted"] / m["measured"] - 1).abs()
        m["log_ratio"] = np.log(m["predicted"] / m["measured"])
        inside = (m["measured"] >= m["lower"]) & (m["measured"] <= m["upper"])
        m["inside"] = inside.astype(float).where(m["lower"].notna())  # NaN: a mode without an interval
        g = m.groupby(["mode", "operation"])
        print(f"\n{name}:")
        print(pd.DataFrame({"cells": g.size(), "median_error": g["error"].median(),
                            "median_ratio": np.exp(g["log_ratio"].median()),
                            "in_80_interval": g["inside"].mean()})
              .to_string(float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
