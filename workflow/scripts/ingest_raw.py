"""One raw OSU log -> a tidy part and its quality record."""

import logging

import pyarrow as pa

from collat.ingest.read import ingest_raw_log
from collat.runner import measuring, setup_log
from collat.ingest.tidy import write_json, write_part

log = setup_log(snakemake.log, echo=logging.WARNING)  # one job per raw log: its record stays in its file
# the system allocator: Arrow's default pool keeps what a written row group freed, about 0.1 GB on
# a log of millions of rows (benchmarks/ingest_large.py)
pa.set_memory_pool(pa.system_memory_pool())
with measuring(exclusive=False):  # never beside an OSU launch of stage measure on this host
    table, df, quality = ingest_raw_log(
        snakemake.input.log,
        snakemake.wildcards.log,
        snakemake.params.patterns,
        snakemake.input.manifest[0] if snakemake.input.manifest else None,
        snakemake.params.vocab,
        snakemake.params.on_bad_run,
        snakemake.params.markers,
        snakemake.params.machine,
        snakemake.params.pooled_factor,
        snakemake.params.carry_over,
        snakemake.params.constant,
    )
    write_part(df, snakemake.output.table, table)
    write_json(quality, snakemake.output.quality)
log.info("%s", quality)
if quality.get("skipped_file"):  # on_bad_run: skip, and the file holds no readable run or nothing describes it
    log.warning("skipped: %s", quality["skipped_file"])
if quality.get("read_as"):  # a channel the config names otherwise: said, never silently
    log.warning("%s: %s", snakemake.wildcards.log, quality["read_as"])
if quality["pooled_runs"]:
    log.warning("%s: %s", snakemake.wildcards.log, quality["pooled_runs"])
