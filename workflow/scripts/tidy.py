"""The quality table of every input file, from the three tables' rules and the records of the logs
the ingest passed over unread; the checks across tables: one MPI implementation."""

import json
from pathlib import Path

import pandas as pd

from collat.ingest.quality import quality_table
from collat.ingest.read import check_one_mpi
from collat.ingest.tidy import atomic_write
from collat.runner import setup_log

log = setup_log(snakemake.log)
p = snakemake.params
# the three tables' rows, and those of the files the ingest passed over unread (no table reads them)
passed_over = quality_table([json.loads(f.read_text()) for batch in snakemake.input.passed_over
                             for f in sorted(Path(batch).rglob("*.quality.json"))], {})
quality = pd.concat([pd.read_csv(f, keep_default_na=False, na_values=[""]) for f in snakemake.input.quality]
                    + ([passed_over] if len(passed_over) else []),
                    ignore_index=True).sort_values("source", kind="stable").reset_index(drop=True)
check_one_mpi([(s, [n for n in str(m).split(", ") if n and n != "nan"]) for s, m in zip(quality["source"],
                                                                                       quality["mpi"])], p.mpi)
atomic_write(snakemake.output.quality, lambda tmp: quality.to_csv(tmp, index=False))
log.info("%d input files", len(quality))
