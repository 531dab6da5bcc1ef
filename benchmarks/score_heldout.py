"""Score a measured campaign on launches it never ran: how well the model of a few planned rounds
predicts the rest of the machine, and how good the rules file it writes is there.

    python benchmarks/score_heldout.py benchmarks/data/device-16core [--cores 2] [--out DIR] [--keep DIR]
        [--set model.calibrated.flat_runs=true ...] [--give bcast=0,6 --give reduce=0,2]

DATA holds what benchmarks/measure_machine.sh wrote on a machine: ``mine.yaml`` (its config),
``osu_raw/`` (the logs of the planned rounds) and ``heldout_raw/`` (launches nobody planned, run
after the rounds). The pipeline runs here, on the rounds' logs alone (stage measure off), and the
held-out logs are read by the same ingest in a workdir of their own. Printed (and written to
``--out``): per mode and operation, the median relative error on the held-out launches beside the
noise floor of the rounds; the share of held-out measurements inside the calibrated and hybrid
modes' 80 % intervals (of those that carry one); and, at every P no round measured, how often the rules file's pick is
within 10 % of the best algorithm measured there, beside OpenMPI's default (each price ranked by its
expected latency, as stage selection ranks them).

With ``--give OPERATION=ALGORITHMS`` (repeatable) the model sees the rounds' launches of those
algorithms only: a user who measured few algorithms. The rounds' launches of every other algorithm
join the held-out ones, the errors are also printed per algorithm nobody gave, and the rules file is
scored at every P (the algorithms not given were measured at none).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from collat.model.validation import measured_cells, size_bounds  # noqa: E402
from collat.selection.choice import CELL, choice_sd, measured_table, regret  # noqa: E402


def snakemake(workdir: Path, config: dict, targets: list[str], cores: int) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "mine.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores",
           str(cores), *targets, "--configfile", str(workdir / "mine.yaml")]
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")


def prediction_errors(pred: pd.DataFrame, held: pd.DataFrame) -> pd.DataFrame:
    """Per mode and operation: held-out launches' cells, median relative error, 80 % coverage."""
    m = pred.merge(held, on=CELL + ["algorithm"], how="inner")
    m["error"] = (m["predicted"] / m["measured"] - 1).abs()
    m["inside"] = (m["measured"] >= m["lower"]) & (m["measured"] <= m["upper"])
    rows = []
    for (mode, op), g in list(m.groupby(["mode", "operation"])) + [((mode, "all"), g) for mode, g in m.groupby("mode")]:
        bounded = g["lower"].notna()
        rows.append({"mode": mode, "operation": op, "cells": len(g), "median_error": g["error"].median(),
                     "with_interval": bounded.mean(),
                     "coverage": g.loc[bounded, "inside"].mean() if bounded.any() else np.nan})
    return pd.DataFrame(rows)


def overridden(config: dict, overrides: list[str]) -> dict:
    """``config`` with each ``KEY=VALUE`` of ``overrides`` set (KEY dotted, VALUE read as YAML)."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE, e.g. model.calibrated.flat_runs=true")
        *path, last = key.split(".")
        node = config
        for part in path:
            node = node.setdefault(part, {})
        node[last] = yaml.safe_load(value)
    return config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--keep", type=Path, help="run the pipeline in this (new) directory and keep it, with both "
                    "runs' results (default: a temporary one, removed)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                    help="a config key (dotted) set on top of the data set's mine.yaml, its value read as YAML; "
                    "repeatable")
    ap.add_argument("--give", action="append", default=[], metavar="OPERATION=ALGORITHMS",
                    help="fit on the rounds' launches of these algorithms only (e.g. bcast=0,6); the other "
                    "algorithms' launches are held out; repeatable, one per operation")
    args = ap.parse_args()
    base = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="collat-heldout-"))
    try:
        score(args, base)
    finally:  # a failed run leaves no temporary folder behind either
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


def given(items: list[str]) -> dict[str, set[int]]:
    """{operation: algorithms} from ``--give`` items such as ``bcast=0,6``."""
    out = {}
    for item in items:
        op, sep, algs = item.partition("=")
        try:
            out[op] = {int(a) for a in algs.split(",")}
        except ValueError:
            sep = ""
        if not sep or not op or not out.get(op):
            raise SystemExit(f"--give {item!r}: expected OPERATION=ALGORITHMS, e.g. bcast=0,6")
    return out


def split_raw(raw: Path, held: Path, give: dict[str, set[int]], base: Path) -> tuple[Path, Path]:
    """Copies of the rounds' logs (``raw``) and the held-out ones (``held``) under ``base``: the rounds
    keep the collective logs of the ``give`` algorithms (a path ``OPERATION/MAPPING/algN/...``, as
    measure_machine.sh writes them) and every other log; the rest of the rounds' collective logs go
    to the held-out copy. An operation ``give`` does not name keeps every algorithm."""
    rounds, heldout = base / "given_raw", base / "heldout_raw"
    for folder in (rounds, heldout):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(held, heldout)
    for path in sorted(p for p in raw.rglob("*") if p.is_file()):
        rel = path.relative_to(raw)
        parts = rel.parts
        kept = not (len(parts) >= 3 and parts[0] in give and parts[2].startswith("alg")
                    and parts[2][3:].isdigit() and int(parts[2][3:]) not in give[parts[0]])
        out = (rounds if kept else heldout) / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out)
    return rounds, heldout


def score(args: argparse.Namespace, base: Path) -> None:
    """Run the pipeline on the rounds and the ingest on the held-out logs under ``base``; print
    (and write to ``--out``) the scores."""
    data = args.data.resolve()
    mine = overridden(yaml.safe_load((data / "mine.yaml").read_text()), args.overrides)
    mine.pop("measure", None)  # the logs are here: nothing to run
    mine.pop("plan", None)
    give = given(args.give)
    raw, held_raw = data / "osu_raw", data / "heldout_raw"
    if give:
        raw, held_raw = split_raw(raw, held_raw, give, base)
    rounds = {**mine, "data": {"raw": {"dir": str(raw)}}}
    snakemake(base / "rounds", rounds, ["results/model/predictions.parquet", "results/model/noise_floor.csv",
                                        "results/tidy/collective.parquet"], args.cores)
    held_cfg = {**mine, "data": {"raw": {"dir": str(held_raw)}}, "stages": []}
    snakemake(base / "heldout", held_cfg, ["results/tidy/collective.parquet"], args.cores)

    target = "avg"
    pred = pd.read_parquet(base / "rounds/results/model/predictions.parquet", filters=[("target", "==", target)])
    pred = pred[pred["mode"].isin(["openmpi", "calibrated", "hybrid"])]
    ran = pd.read_parquet(base / "rounds/results/tidy/collective.parquet")
    held_rows = pd.read_parquet(base / "heldout/results/tidy/collective.parquet")
    held = measured_table(held_rows, target)
    seen = set(zip(ran["operation"], ran["algorithm"], ran["P"]))
    held = held[[k not in seen for k in zip(held["operation"], held["algorithm"], held["P"])]]
    floor = pd.read_csv(base / "rounds/results/model/noise_floor.csv")
    floor = floor[(floor["target"] == target) & (floor["mapping"] == "all")]
    if "operation" in floor:  # over both operations
        floor = floor[floor["operation"] == "all"]

    errors = prediction_errors(pred, held)
    print(f"held-out launches: {held.groupby(['operation', 'algorithm', 'P']).ngroups} "
          f"({len(held)} cells); rounds: {ran.groupby(['operation', 'algorithm', 'P']).ngroups} collective launches")
    print("noise floor of the rounds (median relative difference):",
          ", ".join(f"{r.kind} {r.floor:.3f}" for r in floor.itertuples()))
    print("\nprediction of the held-out launches (target avg):")
    print(errors.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    unseen = pd.DataFrame()
    if give:
        unseen = per_algorithm(pred, held, set(zip(ran["operation"], ran["algorithm"])))
        print("\nper algorithm nobody gave (median relative error over its held-out cells):")
        print(unseen.to_string(float_format=lambda v: f"{v:.3f}"))

    # the rules file at the P no round measured: scored against every algorithm measured there
    both = pd.concat([ran, held_rows], ignore_index=True)
    unseen_P = {op: set(range(2, int(both["P"].max()) + 1)) - (set() if give else set(g["P"]))
                for op, g in ran.groupby("operation")}
    # ranked as stage selection ranks (selection.pick: expected): each price by its expected latency
    rounds_dir = base / "rounds/results"
    pred = pred.assign(sd=choice_sd(pred, {target: measured_cells(ran, target)},
                                    pd.read_csv(rounds_dir / "model/intervals.csv"), mine["machine"],
                                    size_bounds(pd.read_parquet(rounds_dir / "pt2pt/hockney.parquet"))))
    rows = []
    for mode in ("calibrated", "hybrid"):
        cells, _ = regret(pred, both, target, mode, default=True)
        cells = cells[[P in unseen_P[op] for op, P in zip(cells["operation"], cells["P"])]]
        for op, g in cells.groupby("operation"):
            for chooser, column in (("rules_file", "regret_rules_file"), ("default", "regret_default")):
                r = g[column].dropna()
                rows.append({"mode": mode, "operation": op, "chooser": chooser, "cells": len(r),
                             "algorithms_median": int(g["algorithms"].median()),
                             "within_10pct": float((r <= 1.1).mean()), "geomean_regret": float(np.exp(np.log(r).mean())),
                             "unseen_P": "every" if give else " ".join(str(p) for p in sorted(unseen_P[op]))})
    choice = pd.DataFrame(rows)
    print("\nthe rules file at P no round measured (regret = its pick's latency / the best measured):")
    print(choice.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        errors.to_csv(args.out / "heldout_errors.csv", index=False)
        choice.to_csv(args.out / "heldout_choice.csv", index=False)
        if give:
            unseen.to_csv(args.out / "heldout_algorithms.csv")


def per_algorithm(pred: pd.DataFrame, held: pd.DataFrame, seen: set) -> pd.DataFrame:
    """Per (operation, algorithm) no round gave and mode: the median relative error over its held-out
    cells, modes side by side."""
    m = pred.merge(held, on=CELL + ["algorithm"], how="inner")
    m = m[[k not in seen for k in zip(m["operation"], m["algorithm"])]]
    m["error"] = (m["predicted"] / m["measured"] - 1).abs()
    return m.groupby(["operation", "algorithm", "mode"])["error"].median().unstack("mode")


if __name__ == "__main__":
    main()
