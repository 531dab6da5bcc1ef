"""The next round of OSU launches: results/plan/launches.csv, the ingest's manifest of their logs,
and one SLURM batch script per node count (results/plan/jobs/)."""

from pathlib import Path

import pandas as pd

from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import measured_cells
from collat.plan.campaign import PLANNING_MODES, PlanOptions, plan_round, uncut_first_design
from collat.plan.jobs import MeasureOptions, batch_scripts, log_path, manifest
from collat.runner import setup_log

log = setup_log(snakemake.log)
p = snakemake.params
inputs = snakemake.input
target = p.target
tables = {t: read_parquet(inputs[t], t) if t in inputs.keys() else None for t in ("pt2pt", "nbft", "collective")}
measured = measured_cells(tables["collective"], target) if tables["collective"] is not None else None
predictions = calibrated = None
floor = None
if "predictions" in inputs.keys():
    pred = pd.read_parquet(inputs.predictions, filters=[("target", "==", target)])
    mode = next(m for m in PLANNING_MODES if m in set(pred["mode"]))
    cols = ["operation", "algorithm", "mapping", "P", "size", "predicted"]
    predictions = pred.loc[pred["mode"] == mode, cols]
    if "calibrated" in set(pred["mode"]):
        calibrated = pred.loc[pred["mode"] == "calibrated", cols]
    floors = pd.read_csv(inputs.floor)
    row = floors[(floors["target"] == target) & (floors["kind"] == "repeats") & (floors["mapping"] == "all")]
    floor = float(row["floor"].iloc[0]) if len(row) else None
    log.info("planning on mode %s, target %s", mode, target)
held_out = None
if "transfer" in inputs.keys():  # the model's error on an algorithm it never saw: the cap of a curve's sd
    t = pd.read_csv(inputs.transfer).query("target == @target")
    held_out = dict(zip(t["operation"], t["error_transferred"]))
opts = MeasureOptions.from_config(p.measure)
plan_options = PlanOptions.from_config(p.plan)
launches, u = plan_round(p.machine, p.algorithms, p.mappings, p.channels, plan_options,
                         tables["pt2pt"], tables["nbft"], measured, predictions, calibrated, floor,
                         opts.iterations, opts.warmup, held_out)
launches["file"] = [log_path(r) for _, r in launches.iterrows()]
note = uncut_first_design(launches, plan_options, u)
if note:
    log.warning("%s", note)
log.info("%d launches (%d collective)%s", len(launches), int((launches["kind"] == "collective").sum()),
         "" if u is None else f"; log sd {u.floor:.3f} at a measured P, {u.per_octave:.3f} more per octave "
         f"({len(u.curves)} curves their own, {len(u.regimes)} one per placement regime), at most {u.cap:.3f}"
         + "".join(f"; {op} at most {cap:.3f} (held-out algorithms)" for op, cap in u.caps))
atomic_write(snakemake.output.launches, lambda tmp: launches.to_csv(tmp, index=False))
atomic_write(snakemake.output.manifest, lambda tmp: manifest(launches).to_csv(tmp, index=False))
jobs = Path(snakemake.output.jobs)
jobs.mkdir(parents=True, exist_ok=True)
for name, text in batch_scripts(launches, p.machine, opts, p.raw_dir, p.trees).items():
    atomic_write(jobs / name, lambda tmp: Path(tmp).write_text(text))
