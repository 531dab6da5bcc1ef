"""How far apart forced algorithms measure where the openmpi mode prices them 2x apart, on a run's own
data and on that data as a missing ``coll_tuned_use_dynamic_rules 1`` would have recorded it; then
the same for two mappings of one algorithm, as measured and as one placement under both names.

Usage: .venv/bin/python benchmarks/forced_runs.py [WORKDIR]   (a finished run: results/tidy,
results/model/unfitted_predictions.parquet; default: the repository's own results)

The forged data: every run's latency replaced by the default's at its cell (the fixed rules' choice,
what every run measures without the flag), times a log-normal run-to-run noise of sd s per row. For
the mappings, per pair (a, b): mapping a's runs under both names (what --map-by node within one
node records), each row times the same noise.
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from collat.ingest.tidy import read_parquet
from collat.model.forcing import WITHIN, forced_separation, measured_as_one, placement_separation


def main(workdir: Path) -> None:
    measured = read_parquet(workdir / "results/tidy/collective.parquet", "collective")
    priced = pd.read_parquet(workdir / "results/model/unfitted_predictions.parquet",
                             filters=[("mode", "==", "openmpi"), ("target", "==", "avg")])
    cell = ["operation", "mapping", "P", "size"]
    default = measured.loc[(measured["algorithm"] == 0) & ~measured["outlier"]].groupby(cell, as_index=False)["avg"].median()
    show = ["operation", "mapping", "pairs", "cells", "median_ratio"]
    print(f"{workdir}: as measured")
    print(forced_separation(measured, priced)[show].to_string(index=False, float_format="%.3f"))
    rng = np.random.default_rng(0)
    for sd in (0.1, 0.2, 0.3):
        forged = measured.drop(columns="avg").merge(default, on=cell)
        forged["avg"] *= np.exp(rng.normal(0.0, sd, len(forged)))
        sep = forced_separation(forged, priced)
        print(f"one algorithm ran, run-to-run noise sd {sd}: {len(measured_as_one(sep))} of {len(sep)} "
              f"refused (median ratio below {WITHIN})")
        print(sep[show].to_string(index=False, float_format="%.3f"))
    placements(measured, priced)


def placements(measured: pd.DataFrame, priced: pd.DataFrame) -> None:
    """Per operation and pair of mappings: the median measured ratio, then one placement forged."""
    show = ["operation", "mapping_a", "mapping_b", "algorithms", "cells", "median_ratio"]
    real = placement_separation(measured, priced)
    print("two mappings, as measured")
    print(real[show].to_string(index=False, float_format="%.3f"))
    rng = np.random.default_rng(0)
    kept = measured.loc[~measured["outlier"]]
    for sd in (0.1, 0.2, 0.3):
        rows = []
        for _, pair in real.iterrows():
            a = kept.loc[(kept["operation"] == pair["operation"]) & (kept["mapping"] == pair["mapping_a"])]
            both = pd.concat([a, a.assign(mapping=pair["mapping_b"])], ignore_index=True)
            both["avg"] = both["avg"] * np.exp(rng.normal(0.0, sd, len(both)))
            rows.append(placement_separation(both, priced))
        print(f"one placement under two names, run-to-run noise sd {sd}")
        print(pd.concat(rows)[show].to_string(index=False, float_format="%.3f"))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
