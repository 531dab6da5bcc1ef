"""NBFT fits (eq. 6) and parallelisation factors gamma (eq. 7) for every operation, channel, size, target."""

import pandas as pd

from collat.nbft import nbft_factors
from collat.runner import setup_log
from collat.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
nbft = read_parquet(snakemake.input.tidy, "nbft")
hockney = pd.read_parquet(snakemake.input.fits)
fits, gamma = nbft_factors(nbft, hockney, snakemake.params.targets, snakemake.params.min_r2)
atomic_write(snakemake.output.gamma, lambda tmp: gamma.to_parquet(tmp, index=False))
atomic_write(snakemake.output.fits, lambda tmp: fits.to_csv(tmp, index=False))
log.info("%d NBFT fits, %d kept as measured lookups", len(fits), int((fits["method"] == "measured").sum()))
