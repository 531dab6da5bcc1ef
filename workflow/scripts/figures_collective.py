"""The study's Figures 3 and 4 of one operation at each configured size: latency against P, measured and modelled."""

import pandas as pd

from collat.figures.collective import collective_grid
from collat.figures.style import save
from collat.model.placement import fill_boundaries, machine_label
from collat.runner import setup_log
from collat.ingest.tidy import read_parquet

log = setup_log(snakemake.log)
p, wc = snakemake.params, snakemake.wildcards
collective = read_parquet(snakemake.input.collective, "collective")
bounds = {m: fill_boundaries(p.machine, m) for m in p.mappings}
wanted = [("size", "in", list(p.sizes)), ("operation", "==", wc.operation)]
model = pd.read_parquet(snakemake.input.model, filters=wanted)
reg = pd.read_parquet(snakemake.input.regression, filters=wanted)
for size, png in zip(p.sizes, snakemake.output.png):
    fig = collective_grid(collective, model[model["size"] == size], reg[reg["size"] == size], wc.operation, size,
                          p.mappings, p.algorithms, bounds, machine_label(p.machine))
    save(fig, png)
