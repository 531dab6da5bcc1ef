"""One CSV of processed results (config data.tables[i]) -> a tidy part and its quality record."""

import logging

from collat.ingest.read import TableSource, from_table_csv
from collat.runner import setup_log
from collat.ingest.tidy import write_json, write_part

log = setup_log(snakemake.log, echo=logging.WARNING)  # one job per table: its record stays in its file
w = snakemake.wildcards
source = TableSource.from_config(snakemake.params.entry, int(w.entry))
df, quality = from_table_csv(snakemake.input[0], source, snakemake.params.vocab, snakemake.input[0])
write_part(df, snakemake.output.table, source.table)
write_json(quality, snakemake.output.quality)
log.info("%s", quality)
