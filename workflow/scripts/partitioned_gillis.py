"""The partitioned-communication paper's published numbers, recomputed from config parameters."""

from collat.partitioned.gain import gillis_numbers
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write

log = setup_log(snakemake.log)
p = snakemake.params
table = gillis_numbers(p.cases, p.workloads, p.cpu)
atomic_write(snakemake.output[0], lambda tmp: table.to_csv(tmp, index=False))
model = table[table["kind"] == "model"]
log.info("%d published numbers, %d of the %d model numbers agree to 4 significant digits",
         len(table), int(model["agrees_4_digits"].sum()), len(model))
