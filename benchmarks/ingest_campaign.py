"""The study's whole campaign as raw OSU logs: what ingesting one log per launch costs.

    python benchmarks/ingest_campaign.py [--data ../shared/data/orfeo-epyc-2024] [--cores 2] [--keep DIR]

A user who measures a machine as the study did has one OSU log per launch: 1,919 collective logs
(operation x mapping x algorithm x P) and the osu_latency logs of each channel. This writes the
study's published collective and point-to-point tables back as such logs, in OSU 7.3's print
(`osu_bcast -f`: avg, min, max, iterations; a repeated cell as a further sweep of its log), runs
the pipeline's ingest on them (rule `tidy`, the study's machine, no published files) and prints
the number of jobs, the wall time, the time Snakemake took to build its DAG (`-n`) and the sum of
the jobs' own times (their `benchmark:` files). It then checks that the collective table read from
the logs holds the cells of the published table (same rows, same values), so the raw path is
checked on the whole campaign. With ``--baseline`` it ingests the same logs again with one job per
log (``data.raw.batches`` 10**9), the rule's form before 2026-12-07. Last line:
`logs=<n> jobs=<n> dag_seconds=<x> ingest_seconds=<wall> job_seconds=<sum> cores=<N> same_cells=<bool>`
and with the baseline `baseline_jobs=<n> baseline_dag_seconds=<x> baseline_seconds=<wall> ratio=<wall / baseline>`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
TITLES = {"bcast": "# OSU MPI Broadcast Latency Test v7.3", "reduce": "# OSU MPI Reduce Latency Test v7.3"}
HEADER = "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations"


def sweeps(cells: pd.DataFrame) -> list[pd.DataFrame]:
    """One launch's rows in the published order, split into OSU sweeps where the size starts again
    (some of the study's sweeps stop short, as a killed job's last run does: the ingest passes over
    them under ``on_bad_run: skip``)."""
    size = cells["size"].to_numpy()
    k = (size[1:] <= size[:-1]).cumsum()
    k = pd.Series([0, *k], index=cells.index)
    return [cells[k == i] for i in range(int(k.max()) + 1)]


def collective_logs(data: Path, out: Path) -> int:
    """Write each (operation, mapping, algorithm, P) of the published collective tables as
    ``{operation}/{mapping}/alg{algorithm}/np{P}.txt``; the number of logs written."""
    n = 0
    for path in sorted(data.glob("*_*.csv")):
        operation, mapping = path.stem.split("_")
        if operation not in TITLES or mapping not in ("core", "socket", "node"):
            continue
        table = pd.read_csv(path)
        for (algorithm, P), cells in table.groupby(["algorithm", "cores"], sort=True):
            lines = [TITLES[operation], "# Datatype: MPI_CHAR.", HEADER]
            for sweep in sweeps(cells):
                lines += [f"{int(r.size):<10}{r.latency:>18.2f}{r.min:>18.2f}{r.max:>18.2f}{int(r.iterations):>12}"
                          for r in sweep.itertuples()]
            target = out / operation / mapping / f"alg{int(algorithm)}" / f"np{int(P)}.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(lines) + "\n")
            n += 1
    return n


def pt2pt_logs(data: Path, out: Path) -> int:
    """Write each (channel, receiver) of the published p2p table as ``pt2pt/{channel}/recv{r}.txt``."""
    table = pd.read_csv(data / "p2p.csv")
    n = 0
    for (channel, receiver), cells in table.groupby(["mapby", "recv"], sort=True):
        lines = ["# OSU MPI Latency Test v7.3", "# Size          Latency (us)", "# Datatype: MPI_CHAR."]
        for sweep in sweeps(cells):
            lines += [f"{int(r.size):<16}{r.latency:>12.2f}" for r in sweep.itertuples()]
        target = out / "pt2pt" / channel / f"recv{int(receiver)}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n")
        n += 1
    return n


def snakemake(workdir: Path, cores: int, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", str(cores),
           "results/tidy/quality.csv", *extra, "--configfile", str(workdir / "mine.yaml")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return done


def job_seconds(workdir: Path) -> float:
    return sum(float(pd.read_csv(f, sep="\t")["s"].iloc[0]) for f in (workdir / "benchmarks/rules").rglob("*.tsv"))


def ingest(workdir: Path, data: Path, cores: int, batches: int | None) -> dict:
    """The campaign's logs written to ``workdir`` and ingested there (``batches``: config
    data.raw.batches, None for the default): jobs, seconds to build the DAG, wall seconds, the sum
    of the jobs' own seconds."""
    raw = workdir / "osu_raw"
    logs = collective_logs(data, raw) + pt2pt_logs(data, raw)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["data"] = {"published": {"enabled": False},
                      "raw": {"dir": "osu_raw", "on_bad_run": "skip", **({"batches": batches} if batches else {})}}
    config["stages"] = ["pt2pt"]  # the ingest alone: the collective table is read for every stage
    (workdir / "mine.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    start = time.perf_counter()
    dry = snakemake(workdir, cores, "-n", "--quiet", "rules")
    dag = time.perf_counter() - start
    jobs = next(int(line.split()[-1]) for line in dry.stdout.splitlines() if line.startswith("total"))
    start = time.perf_counter()
    snakemake(workdir, cores)
    return {"logs": logs, "jobs": jobs, "dag": dag, "wall": time.perf_counter() - start,
            "job_seconds": job_seconds(workdir)}


def same_cells(workdir: Path, data: Path) -> bool:
    """Whether the collective table read from the logs holds every published cell (operation,
    mapping, algorithm, P, size), and only rows the published tables hold, value for value."""
    got = pd.read_parquet(workdir / "results/tidy/collective.parquet")
    key = ["operation", "mapping", "algorithm", "P", "size"]
    rows = []
    for path in sorted(data.glob("*_*.csv")):
        operation, mapping = path.stem.split("_")
        if operation in TITLES and mapping in ("core", "socket", "node"):
            t = pd.read_csv(path).rename(columns={"cores": "P", "latency": "avg"})
            rows.append(t.assign(operation=operation, mapping=mapping))
    want = pd.concat(rows)
    columns = [c for c in ("avg", "max") if c in got.columns]
    kinds = {"algorithm": int, "P": int, "size": int}
    a = got[key + columns].astype(kinds).drop_duplicates()
    b = want[key + columns].astype(kinds).drop_duplicates()
    every_cell = len(a[key].drop_duplicates()) == len(b[key].drop_duplicates())
    only_published = len(a.merge(b, on=key + columns)) == len(a)
    return every_cell and only_published


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared/data/orfeo-epyc-2024")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--baseline", action="store_true",
                    help="also ingest with one job per log (data.raw.batches 10**9; 20-40 minutes on 2 cores)")
    ap.add_argument("--keep", type=Path, help="work here and keep it (else a temporary folder)")
    args = ap.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="ingest_campaign_"))
    try:
        got = ingest(workdir / "batched", args.data, args.cores, None)
        same = same_cells(workdir / "batched", args.data)
        line = (f"logs={got['logs']} jobs={got['jobs']} dag_seconds={got['dag']:.1f} ingest_seconds={got['wall']:.1f} "
                f"job_seconds={got['job_seconds']:.1f} cores={args.cores} same_cells={same}")
        if args.baseline:
            base = ingest(workdir / "per_log", args.data, args.cores, 10 ** 9)
            line += (f" baseline_jobs={base['jobs']} baseline_dag_seconds={base['dag']:.1f} "
                     f"baseline_seconds={base['wall']:.1f} ratio={got['wall'] / base['wall']:.3f}")
        print(line)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
