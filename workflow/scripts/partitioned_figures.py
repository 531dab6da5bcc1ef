"""Figures of the partitioned stage: eta against size and theta, and the (theta, size) heat map."""

import pandas as pd

from collat.figures.style import save
from collat.partitioned.figures import partitioned_heatmap, partitioned_vs_size, partitioned_vs_theta
from collat.runner import setup_log

log = setup_log(snakemake.log)
gain = pd.read_parquet(snakemake.input.gain)
cross = pd.read_csv(snakemake.input.crossover)
f = snakemake.params.figure
save(partitioned_vs_size(gain, cross, f["threads"], f["workload"], f["thetas"]), snakemake.output.size)
save(partitioned_vs_theta(gain, f["threads"], f["workload"], f["sizes"]), snakemake.output.theta)
save(partitioned_heatmap(gain, cross, f["threads"], f["workload"]), snakemake.output.heatmap)
