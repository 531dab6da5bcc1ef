"""Merge the ingested parts into the three tidy tables, flag outliers, write the quality table."""

import json
from pathlib import Path

from collat import InputError
from collat.ingest.read import check_channels_measured, check_measured_targets, check_stages_have_data, merge_files
from collat.ingest.metadata import check_manifest_files
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write

log = setup_log(snakemake.log)
if not snakemake.input.parts:
    raise InputError(snakemake.params.raw_dir, None, f"at least one OSU log matching data.raw.glob "
                     f"{snakemake.params.raw_glob!r} (or data.published.enabled: true, or data.tables)", "no file to ingest")
if snakemake.input.manifest:
    check_manifest_files(snakemake.input.manifest[0], set(snakemake.params.raw_logs), snakemake.params.raw_glob)
parts = []
for path in snakemake.input.parts:
    quality = json.loads(Path(path).with_suffix(".quality.json").read_text())
    parts.append((quality["table"], path, quality))
outputs = {name: snakemake.output[name] for name in ("pt2pt", "nbft", "collective")}
# what the stages that run need of the logs, before anything is written
check_stages_have_data(parts, snakemake.params.stages, snakemake.params.raw_dir)
for note in check_measured_targets(parts, snakemake.params.asks):
    log.warning("%s", note)
check_channels_measured(parts, snakemake.params.channels)
quality = merge_files(parts, outputs, snakemake.params.outliers, snakemake.params.mpi)
for name, g in quality.groupby("table"):
    log.info("%s: %d rows, %d flagged as outliers", name, g["rows"].sum(), g["outliers_flagged"].sum())
atomic_write(snakemake.output.quality, lambda tmp: quality.to_csv(tmp, index=False))
