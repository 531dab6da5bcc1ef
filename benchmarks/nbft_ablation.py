"""What the NBFT measurements are worth to prediction: the study run twice, with its NBFT files and
without them (every fan-out then priced by the line ``nbft.unmeasured_slope`` assumes), and the
validation's leaderboard of both side by side (median over cells of the median relative error,
robust cleaning; results/model/validation.csv of each run) with the selection's regret.

    .venv/bin/python benchmarks/nbft_ablation.py [--slope 0.5] [--cores 2]

Reads the study data from STUDY_DATA_MIRROR (default ../shared/data/orfeo-epyc-2024). Two whole
runs: about two minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
MODELS = ["openmpi", "calibrated", "hybrid", "segmented", "nearest_neighbour"]


def run(config: dict, wd: Path, cores: int, mirror: str) -> Path:
    (wd / "config").mkdir(parents=True, exist_ok=True)
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    cmd = [str(Path(sys.executable).with_name("snakemake")), "-s", str(REPO / "Snakefile"), "-d", str(wd),
           "--cores", str(cores), "--quiet", "all", "--", "results/model/validation.csv", "results/selection/regret.csv"]
    res = subprocess.run(cmd, env={**os.environ, "STUDY_DATA_MIRROR": mirror}, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{wd}: the run failed\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return wd / "results"


def board(results: Path) -> pd.DataFrame:
    v = pd.read_csv(results / "model" / "validation.csv")
    v = v[v["cleaning"] == "robust"]
    t = v.groupby(["split", "target", "model"])["mape"].median().unstack("model")
    return t[[m for m in MODELS if m in t]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slope", type=float, default=0.5, help="nbft.unmeasured_slope of the run without NBFT (default 0.5)")
    ap.add_argument("--cores", type=int, default=2, help="snakemake --cores of each run (default 2)")
    args = ap.parse_args()
    mirror = os.environ.get("STUDY_DATA_MIRROR") or str(REPO.parent / "shared" / "data" / "orfeo-epyc-2024")
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    without = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    files = without["data"]["published"]["files"]
    for name in [n for n, e in files.items() if e["table"] == "nbft"]:
        del files[name]
    without["nbft"]["unmeasured_slope"] = args.slope
    tmp = Path(tempfile.mkdtemp(prefix="collat-nbft-ablation-"))
    try:
        measured = run(base, tmp / "measured", args.cores, mirror)
        assumed = run(without, tmp / "assumed", args.cores, mirror)
        both = pd.concat({"NBFT measured": board(measured), f"assumed, slope {args.slope:g}": board(assumed)}, axis=1)
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print("median relative error over cells (results/model/validation.csv, robust cleaning)")
            print(both.round(3).to_string())
            keys = ["operation", "mapping", "target"]
            regret = pd.concat({name: pd.read_csv(r / "selection" / "regret_unseen_P.csv").set_index(keys)
                                [["within_10pct", "geomean_regret"]]
                                for name, r in (("measured", measured), ("assumed", assumed))}, axis=1)
            print()
            print("selection at the P the sparse_P split held out (results/selection/regret_unseen_P.csv)")
            print(regret.round(3).to_string())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
