"""Cold run of the whole study: wall time of `snakemake --cores N` from an empty working directory,
beside the per-rule table Snakemake's `benchmark:` files record (benchmarks/rules/ of that run).

    .venv/bin/python benchmarks/cold_run.py [--cores 2] [--keep DIR]

Reads the study data from STUDY_DATA_MIRROR (default ../shared/data/orfeo-epyc-2024). The last
line is `cold_run_seconds=<wall> job_seconds=<sum over jobs> cores=<N>`; the ratio of the two is
how well the DAG keeps the cores busy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=2, help="snakemake --cores (default 2)")
    ap.add_argument("--keep", type=Path, help="run in this (new) directory and keep it (default: a temporary one, removed)")
    args = ap.parse_args()
    mirror = os.environ.get("STUDY_DATA_MIRROR") or str(REPO.parent / "shared" / "data" / "orfeo-epyc-2024")
    wd = args.keep or Path(tempfile.mkdtemp(prefix="collat-cold-"))
    try:
        (wd / "config").mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "config" / "config.yaml", wd / "config" / "config.yaml")
        cmd = [str(Path(sys.executable).with_name("snakemake")), "-s", str(REPO / "Snakefile"), "-d", str(wd),
               "--cores", str(args.cores), "--quiet"]
        start = time.perf_counter()
        res = subprocess.run(cmd, env={**os.environ, "STUDY_DATA_MIRROR": mirror}, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if res.returncode != 0:
            print(res.stdout[-3000:], res.stderr[-3000:], sep="\n")
            return 1
        rows = []
        for tsv in sorted((wd / "benchmarks" / "rules").rglob("*.tsv")):
            b = pd.read_csv(tsv, sep="\t")
            rows.append({"job": str(tsv.relative_to(wd / "benchmarks" / "rules").with_suffix("")),
                         "seconds": float(b["s"].iloc[0]), "max_rss_MB": float(b["max_rss"].iloc[0])})
        table = pd.DataFrame(rows).sort_values("seconds", ascending=False)
        table["rule"] = table["job"].str.split("/").str[0]
        with pd.option_context("display.width", 120, "display.max_rows", 100):
            print(table[["job", "seconds", "max_rss_MB"]].to_string(index=False, float_format="%.1f"))
            print()
            print(table.groupby("rule")["seconds"].agg(["count", "sum"]).sort_values("sum", ascending=False)
                  .to_string(float_format="%.1f"))
    finally:  # a failed run leaves no temporary folder behind either
        if not args.keep:
            shutil.rmtree(wd, ignore_errors=True)
    print(f"cold_run_seconds={wall:.1f} job_seconds={table['seconds'].sum():.1f} cores={args.cores}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
