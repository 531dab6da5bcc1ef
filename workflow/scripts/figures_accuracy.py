"""R² heat maps per operation and the error of each model against message size."""

import pandas as pd

from collat.figures.accuracy import error_against_size, r2_heatmaps
from collat.figures.style import save
from collat.runner import setup_log

log = setup_log(snakemake.log)
p = snakemake.params
model, regression = pd.read_csv(snakemake.input.model), pd.read_csv(snakemake.input.regression)
for op, png in zip(["bcast", "reduce"], snakemake.output.r2):
    save(r2_heatmaps(model, regression, op, p.size, p.algorithms[op], p.mappings), png)
save(error_against_size(model, regression), snakemake.output.error)
