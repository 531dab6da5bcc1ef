"""gamma(P, m) heat maps per channel, avg and max, one figure per operation."""

import pandas as pd

from collat.figures.style import save
from collat.nbft.figures import gamma_heatmaps
from collat.runner import setup_log

log = setup_log(snakemake.log)
gamma = pd.read_parquet(snakemake.input[0])
channels = snakemake.params.channels
save(gamma_heatmaps(gamma, "bcast", channels), snakemake.output.png)
save(gamma_heatmaps(gamma, "reduce", channels), snakemake.output.reduce_png)
