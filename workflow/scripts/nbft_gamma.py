"""NBFT fits (study eq. 6), parallelisation factors gamma (study eq. 7) and the measured medians the model
prices fan-outs with, for every operation, channel, size, target."""

import pandas as pd

from collat.nbft.gamma import assumed_lines, median_table, nbft_factors
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
nbft = read_parquet(snakemake.input.tidy, "nbft")
hockney = pd.read_parquet(snakemake.input.fits)
fits, gamma = nbft_factors(nbft, hockney, snakemake.params.targets, snakemake.params.min_r2)
if snakemake.params.unmeasured_slope is not None:
    assumed = assumed_lines(fits, hockney, snakemake.params.operations, snakemake.params.targets,
                            snakemake.params.unmeasured_slope)
    for (op, target), g in assumed.groupby(["operation", "target"]):
        log.warning("no NBFT measurement of %s %s on %s: fan-outs assumed T_p2p (1 + %g (P - 2)) "
                    "(nbft.unmeasured_slope)", op, target, ", ".join(g["channel"]), snakemake.params.unmeasured_slope)
    fits = pd.concat([fits, assumed], ignore_index=True) if len(fits) else assumed
atomic_write(snakemake.output.gamma, lambda tmp: gamma.to_parquet(tmp, index=False))
atomic_write(snakemake.output.fits, lambda tmp: fits.to_csv(tmp, index=False))
medians = median_table(nbft, snakemake.params.targets)
atomic_write(snakemake.output.medians, lambda tmp: medians.to_parquet(tmp, index=False))
log.info("%d NBFT fits, %d kept as measured lookups", len(fits), int((fits["method"] == "measured").sum()))
