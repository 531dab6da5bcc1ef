"""The quality table of every input file, from the three tables' rules; the checks across tables:
one MPI implementation, and a manifest that names only logs there are."""

import pandas as pd

from collat.ingest.read import check_one_mpi
from collat.ingest.tidy import atomic_write
from collat.runner import setup_log

log = setup_log(snakemake.log)
p = snakemake.params
quality = pd.concat([pd.read_csv(f, keep_default_na=False, na_values=[""]) for f in snakemake.input.quality],
                    ignore_index=True).sort_values("source", kind="stable").reset_index(drop=True)
check_one_mpi([(s, [n for n in str(m).split(", ") if n and n != "nan"]) for s, m in zip(quality["source"],
                                                                                       quality["mpi"])], p.mpi)
atomic_write(snakemake.output.quality, lambda tmp: quality.to_csv(tmp, index=False))
log.info("%d input files", len(quality))
