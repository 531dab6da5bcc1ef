"""Gain curves eta(link, delay, N, theta, size) and break-even message sizes."""

import numpy as np
import pandas as pd

from collat.partitioned.gain import crossover_table, gain_grid, links
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write

log = setup_log(snakemake.log)
p = snakemake.params
hockney = pd.read_parquet(snakemake.input.hockney) if "hockney" in snakemake.input.keys() else None
table = links(p.links, hockney, p.channels, p.machine)
lo, hi = p.size_exponents
sizes = 2 ** np.arange(lo, hi + 1, dtype=np.int64)
grid = gain_grid(table, p.workloads, p.cpu, p.threads, p.theta, sizes)
cross = crossover_table(table, p.workloads, p.cpu, p.threads, p.theta)
atomic_write(snakemake.output.gain, lambda tmp: grid.to_parquet(tmp, index=False))
atomic_write(snakemake.output.crossover, lambda tmp: cross.to_csv(tmp, index=False))
log.info("%d gain points over %d links; %d crossovers", len(grid), len(table), len(cross))
