"""One tidy table from the ingested parts of its kind: merged, outliers flagged, its rows of the
quality table. What the stages that run need of this table is checked before anything is written."""

import json
from pathlib import Path

from collat import InputError
from collat.ingest.read import (STAGE_NEEDS, check_channels_measured, check_measured_targets, check_one_datatype,
                                check_P_fits_machine, check_stages_have_data, merge_files, note_pooled_files,
                                pooled_files_of, with_records, without_copies)
from collat.ingest.metadata import check_manifest_files
from collat.ingest.tidy import atomic_write
from collat.runner import setup_log

log = setup_log(snakemake.log)
p, table = snakemake.params, snakemake.wildcards.table
if not p.any_input:
    raise InputError(p.raw_dir, None, f"at least one OSU log matching data.raw.glob {p.raw_glob!r} (or "
                     "data.published.enabled: true, or data.tables)", "no file to ingest")
if snakemake.input.manifest:
    check_manifest_files(snakemake.input.manifest[0], p.raw_dir)
parts = []
for path in p.parts:  # a log whose metadata do not say its table feeds every table's rule
    quality = json.loads(Path(path).with_suffix(".quality.json").read_text())
    if quality["table"] == table:
        parts.append((quality["table"], path, quality))
check_stages_have_data(parts, [s for s in p.stages if STAGE_NEEDS.get(s) == table], p.raw_dir)
for note in check_measured_targets(parts, {table: p.asks}):
    log.warning("%s", note)
if table == "pt2pt":
    check_channels_measured(parts, p.channels)
if table == "collective":
    check_P_fits_machine(parts, p.cores, p.raw_dir)
check_one_datatype(parts, p.raw_dir)
parts, copies = without_copies(parts, p.on_bad_run, p.raw_dir)  # one log read twice: repeats of itself
for record in copies:
    log.warning("%s: passed over, %s", record["source"], record["skipped_file"])
# one implementation per table here (data.mpi, when set, is looked for across every table by rule tidy)
quality = merge_files(parts, {table: snakemake.output.table}, p.outliers, p.mpi, check_mpi=p.mpi is None)
log.info("%s: %d rows, %d flagged as outliers", table, quality["rows"].sum(), quality["outliers_flagged"].sum())
pooled = pooled_files_of(snakemake.output.table, table, p.pooled_factor) if len(parts) > 1 else []  # one log: none
for _, _, line in pooled:
    log.warning("%s", line)
quality = note_pooled_files(quality, pooled)
quality = with_records(quality, copies)
atomic_write(snakemake.output.quality, lambda tmp: quality.to_csv(tmp, index=False))
