"""How often a fitted mode's 80 % interval at a measured cell holds another job's measurement of the
same configuration: a finished run's grid (results/model/predictions.parquet) at the cells where
OpenMPI's default ran a forced algorithm's tree (the twin pairs of kind ``another_run`` in
results/model/noise_floor.csv), the forced algorithm's interval against the default's measurement.

    python benchmarks/new_run_coverage.py [--results results] [--config config/config.yaml]

Printed per target, mode, mapping and nodes spanned: the share inside the interval without the
spread between jobs (the validation's band alone), and with it, the spread estimated on the other
operation's pairs only (so that no pair sets its own interval), beside the share with the spread
from every pair, as the pipeline has it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from collat.config.defaults import complete
from collat.config.schema import validate_config  # noqa: E402
from collat.ingest.tidy import read_parquet  # noqa: E402
from collat.model.validation import (INTERVAL, SAME_JOB, _default_twin_differences, measured_cells,  # noqa: E402
                                     new_run_spread, nodes_spanned, one_file_curves, situations, MEASURED_CURVE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results")
    ap.add_argument("--config", default="config/config.yaml")
    args = ap.parse_args()
    res = Path(args.results)
    cfg = yaml.safe_load(open(args.config))
    validate_config(cfg, REPO / "workflow/schemas/config.schema.yaml", str(args.config))  # its defaults
    complete(cfg)  # the MPI facts the config leaves out
    machine, o = cfg["machine"], cfg["model"]["openmpi"]
    collective = read_parquet(res / "tidy" / "collective.parquet", "collective")
    grid = pd.read_parquet(res / "model" / "predictions.parquet",
                           columns=["mode", "operation", "algorithm", "mapping", "P", "size", "target", "predicted",
                                    "lower", "upper"])
    floors = pd.read_csv(res / "model" / "noise_floor.csv", dtype={"nodes": str})
    key = ["operation", "algorithm", "mapping", "P", "size"]
    rows = []
    for target in sorted(grid["target"].unique()):
        ratio, cells = _default_twin_differences(collective, target, o["default_rules"], o["trees"])
        half = len(ratio) // 2  # the pairs in one order: log(default / forced)
        pairs = cells.iloc[:half].assign(ratio=ratio[:half])
        pairs["nodes"] = nodes_spanned(pairs, machine).astype(str)
        runs = floors[floors["kind"] == "another_run"]
        # the spread of each (operation, mapping, nodes) from the other operation's pairs alone
        crossed = {}
        for (op, m, n), _ in pairs.groupby(["operation", "mapping", "nodes"]):
            other = pairs[(pairs["operation"] != op) & (pairs["mapping"] == m) & (pairs["nodes"] == n)]["ratio"]
            crossed[(op, m, n)] = float(np.quantile(np.abs(other), INTERVAL)) if len(other) else np.nan
        measured = measured_cells(collective, target)
        one_job = one_file_curves(collective)
        for mode in ("calibrated", "hybrid"):
            g = grid[(grid["mode"] == mode) & (grid["target"] == target)]
            m = pairs.merge(measured[key + ["measured"]], on=key).merge(g, on=key)
            split = situations(m[key], measured)[0]
            h = np.log(m["upper"] / m["predicted"]).to_numpy()
            s_all = new_run_spread(m, runs, target, machine)  # the spread the pipeline added there
            # where the pipeline added the spread: a situation along a curve, on a curve one file measured
            same = np.isin(split, SAME_JOB) & pd.MultiIndex.from_frame(m[MEASURED_CURVE]).isin(
                pd.MultiIndex.from_frame(one_job))
            band = np.where(same, np.sqrt(np.maximum(h ** 2 - s_all ** 2, 0.0)), h)  # the validation's band alone
            s_cross = np.array([crossed[(op, a, n)] for op, a, n in zip(m["operation"], m["mapping"], m["nodes"])])
            with_cross = np.where(same, np.hypot(band, s_cross), band)
            # the default's measurement (another job) against the forced cell's prediction, in log
            other = np.log(m["measured"].to_numpy(float)) + m["ratio"].to_numpy() - np.log(m["predicted"].to_numpy())
            for (op, mapping, n), idx in m.groupby(["operation", "mapping", "nodes"]).indices.items():
                ok = np.isfinite(with_cross[idx])
                rows.append({"target": target, "mode": mode, "operation": op, "mapping": mapping, "nodes": n, "pairs": len(idx),
                             "band_alone": float(np.mean(np.abs(other[idx]) <= band[idx])),
                             "with_spread_cross": float(np.mean(np.abs(other[idx][ok]) <= with_cross[idx][ok]))
                             if ok.any() else np.nan,
                             "with_spread_all": float(np.mean(np.abs(other[idx]) <= h[idx]))})
    print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
