"""A batch of raw OSU logs -> one tidy part and one quality record per log, in the batch's folder."""

import logging
from pathlib import Path

import pyarrow as pa

from collat.ingest.read import ingest_raw_log
from collat.runner import measuring, setup_log
from collat.ingest.tidy import write_json, write_part

log = setup_log(snakemake.log, echo=logging.WARNING)  # one job per batch: its record stays in its file
# the system allocator: Arrow's default pool keeps what a written row group freed, about 0.1 GB on
# a log of millions of rows (benchmarks/ingest_large.py)
pa.set_memory_pool(pa.system_memory_pool())
p, out = snakemake.params, Path(snakemake.output.parts)
with measuring(exclusive=False):  # never beside an OSU launch of stage measure on this host
    for path, relpath in zip(snakemake.input.logs, p.logs):
        table, df, quality = ingest_raw_log(path, relpath, p.patterns,
                                            snakemake.input.manifest[0] if snakemake.input.manifest else None,
                                            p.vocab, p.on_bad_run, p.markers, p.machine, p.pooled_factor,
                                            p.carry_over, p.constant)
        write_part(df, out / f"{relpath}.arrows", table)
        write_json(quality, out / f"{relpath}.quality.json")
        log.info("%s", quality)
        if quality.get("skipped_file"):  # on_bad_run: skip, and the file holds no readable run or nothing describes it
            log.warning("%s: skipped: %s", relpath, quality["skipped_file"])
        if quality.get("read_as"):  # a channel the config names otherwise: said, never silently
            log.warning("%s: %s", relpath, quality["read_as"])
        if quality["pooled_runs"]:
            log.warning("%s: %s", relpath, quality["pooled_runs"])
