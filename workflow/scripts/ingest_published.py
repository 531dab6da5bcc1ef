"""One of the study's published CSV files -> a tidy part and its quality record."""

from collat.ingest.fetch import verify
from collat.ingest.read import from_published_csv
from collat.runner import setup_log
from collat.ingest.tidy import write_json, write_part

log = setup_log(snakemake.log)
entry = dict(snakemake.params.entry)
table = entry.pop("table")
verify(snakemake.input[0], entry.pop("sha256"), f"data.published.files[{snakemake.wildcards.file}].sha256")
df, quality = from_published_csv(snakemake.input[0], table, entry, snakemake.params.vocab, snakemake.wildcards.file)
write_part(df, snakemake.output.table, table)
write_json(quality, snakemake.output.quality)
log.info("%s", quality)
