"""Ingest of one large raw OSU log through the workflow (rules ingest_raw and tidy), beside reading
the same file line by line in plain Python, measured in the same run.

    .venv/bin/python benchmarks/ingest_large.py [--megabytes 200] [--keep DIR]

Writes a synthetic SLURM stdout of osu_latency runs (a marker line before each run, a job banner,
23 sizes per run) of about --megabytes, runs `snakemake results/tidy/quality.csv` on it with
config/thin.yaml's settings, and prints each rule's wall time and peak RSS (Snakemake's
`benchmark:` files) beside the baseline. The last line is
`ingest_seconds=<ingest_raw + tidy> peak_rss_mb=<max of the two> baseline_seconds=<line read>`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]


def write_log(path: Path, megabytes: float) -> int:
    """A SLURM stdout of osu_latency runs; returns its line count."""
    sizes = [0] + [2 ** e for e in range(23)]
    run = ["# OSU MPI Latency Test v7.3\n", "# Size          Latency (us)\n"]
    run += [f"{s:<20d}{0.2 + 1e-4 * s + 0.01 * (i % 7):>12.2f}\n" for i, s in enumerate(sizes)]
    block = "".join(["Running latency between core 0 and core 1 on thin006\n", *run, "\n"])
    n = max(1, int(megabytes * 1e6 / len(block)))
    with open(path, "w") as fh:
        fh.write("SLURM_JOB_ID=821238\n")
        for _ in range(n):
            fh.write(block)
    return 1 + n * block.count("\n")


def baseline(path: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of a child process that reads every line of ``path``."""
    code = "import sys\nn = 0\nfor line in open(sys.argv[1]):\n    n += 1\n"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    return time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megabytes", type=float, default=200, help="size of the log to write (default 200)")
    ap.add_argument("--keep", type=Path, help="work in this (new) directory and keep it (default: a temporary one, removed)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="collat-ingest-"))
    try:
        raw = work / "raw"
        raw.mkdir(parents=True, exist_ok=True)
        log = raw / "thin-osu_latency-core.txt"
        lines = write_log(log, args.megabytes)
        print(f"log: {log.stat().st_size / 1e6:.0f} MB, {lines} lines")
        base_s, base_mb = baseline(log)
        cfg = yaml.safe_load((REPO / "config" / "thin.yaml").read_text())
        cfg["data"]["raw"].update(dir=str(raw), on_bad_run="error")
        cfg["stages"] = ["pt2pt"]
        (work / "config").mkdir(exist_ok=True)
        (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        snakemake = Path(sys.executable).with_name("snakemake")
        t = time.perf_counter()
        subprocess.run([str(snakemake), "-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "1",
                        "results/tidy/quality.csv", "--quiet", "rules"], check=True)
        wall = time.perf_counter() - t
        rows = []
        for tsv in sorted((work / "benchmarks" / "rules" / "ingest").rglob("*.tsv")):
            b = pd.read_csv(tsv, sep="\t").iloc[0]
            rows.append({"rule": tsv.relative_to(work / "benchmarks" / "rules").with_suffix("").as_posix(),
                         "seconds": b["s"], "peak_rss_mb": b["max_rss"]})
        table = pd.DataFrame(rows)
        print(table.to_string(index=False))
        print(f"baseline (read every line in Python): {base_s:.1f} s, {base_mb:.0f} MB")
        print(f"snakemake wall {wall:.1f} s; rows in tidy pt2pt: "
              f"{len(pd.read_parquet(work / 'results' / 'tidy' / 'pt2pt.parquet'))}")
        ingest = table["seconds"].sum()
        print(f"ingest_seconds={ingest:.1f} peak_rss_mb={table['peak_rss_mb'].max():.0f} baseline_seconds={base_s:.1f} "
              f"ratio={ingest / base_s:.1f}")
    finally:  # a failed run leaves no temporary folder behind either
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
