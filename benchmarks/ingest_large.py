"""Ingest of one large raw OSU log through the workflow (rules ingest_raw and tidy), beside reading
the same file line by line in plain Python, measured in the same run.

    .venv/bin/python benchmarks/ingest_large.py [--megabytes 200] [--repeat 3] [--keep DIR]

Writes a synthetic SLURM stdout of osu_latency runs (a banner line before each run, a job banner,
23 sizes per run) of about --megabytes, runs the rules ingest_raw and tidy_table (pt2pt) on it with
config/thin.yaml's settings, one Snakemake each, and prints each rule's job time (Snakemake's
`benchmark:` file), its true peak RSS (the kernel's high-water mark of that Snakemake's process tree,
os.wait4) beside the peak Snakemake's benchmark file sampled, and the baseline. --repeat rounds, each
the baseline then both rules, so that a shared machine's drift falls on both alike. The last line is
`ingest_seconds=<ingest_raw + tidy_table> peak_rss_mb=<the larger true peak> baseline_seconds=<line read>
ratio=<ingest_seconds / baseline_seconds>`, each the median over the rounds (the peak: the largest).
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
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from collat.ingest.metadata import batch_of  # noqa: E402

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
    """Seconds and true peak RSS (MB) of a child process that reads every line of ``path``."""
    code = "import sys\nn = 0\nfor line in open(sys.argv[1]):\n    n += 1\n"
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)])
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit("the baseline's line read failed")
    return time.perf_counter() - t, usage.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megabytes", type=float, default=200, help="size of the log to write (default 200)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of baseline and rules (default 3)")
    ap.add_argument("--keep", type=Path, help="work in this (new) directory and keep it (default: a temporary one, removed)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="collat-ingest-"))
    try:
        raw = work / "raw"
        raw.mkdir(parents=True, exist_ok=True)
        log = raw / "thin-osu_latency-core.txt"
        lines = write_log(log, args.megabytes)
        print(f"log: {log.stat().st_size / 1e6:.0f} MB, {lines} lines")
        cfg = yaml.safe_load((REPO / "config" / "thin.yaml").read_text())
        cfg["data"]["raw"].update(dir=str(raw), on_bad_run="error")
        cfg["stages"] = ["pt2pt"]
        batches = cfg["data"]["raw"].get("batches", 32)  # the schema's default
        (work / "config").mkdir(exist_ok=True)
        (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        snakemake = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work),
                     "--cores", "1", "--quiet", "rules", "--forcerun"]
        # the rules import the package from the checkout, also where it is not installed
        path = [str(REPO / "src"), os.environ.get("PYTHONPATH")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
        rows = []
        for round_ in range(args.repeat):
            base_s, base_mb = baseline(log)
            rows.append({"round": round_, "rule": "baseline", "job_seconds": base_s, "true_peak_mb": base_mb})
            # one rule at a time, each in a Snakemake of its own: the kernel's high-water mark of that
            # process tree (os.wait4) is the rule's true peak, which Snakemake's sampled benchmark files can miss
            for rule, target in (("ingest_raw", f"results/ingest/raw/{batch_of(log.name, 'pt2pt', batches)}"),
                                 ("tidy_table", "results/tidy/pt2pt.parquet")):
                t = time.perf_counter()
                proc = subprocess.Popen([*snakemake, rule, "--", target], env=env)
                _, status, usage = os.wait4(proc.pid, 0)
                if status != 0:
                    raise SystemExit(f"snakemake {target} failed")
                wall = time.perf_counter() - t
                tsv = next((work / "benchmarks" / "rules" / "ingest").rglob("tidy_pt2pt.tsv" if rule == "tidy_table"
                                                                             else "raw/*.tsv"))
                b = pd.read_csv(tsv, sep="\t").iloc[0]
                rows.append({"round": round_, "rule": rule, "job_seconds": b["s"], "snakemake_seconds": wall,
                             "true_peak_mb": usage.ru_maxrss / 1024, "sampled_peak_mb": b["max_rss"]})
        table = pd.DataFrame(rows)
        print(table.to_string(index=False, float_format="%.1f"))
        import pyarrow.parquet as pq

        print(f"rows in tidy pt2pt: {pq.ParquetFile(work / 'results' / 'tidy' / 'pt2pt.parquet').metadata.num_rows}")
        per_round = table.pivot(index="round", columns="rule", values="job_seconds")
        ingest = per_round["ingest_raw"] + per_round["tidy_table"]
        ratio = ingest / per_round["baseline"]
        print("ratio per round: " + " ".join(f"{r:.1f}" for r in ratio))
        peak = table.loc[table["rule"] != "baseline", "true_peak_mb"].max()
        print(f"ingest_seconds={ingest.median():.1f} peak_rss_mb={peak:.0f} "
              f"baseline_seconds={per_round['baseline'].median():.1f} ratio={ratio.median():.1f}")
    finally:  # a failed run leaves no temporary folder behind either
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
