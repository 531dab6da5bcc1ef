"""Figure 2 (latency per receiving core) and the Hockney fits against the data."""

import pandas as pd

from collat.figures.style import save
from collat.pt2pt.figures import hockney_fits, latency_per_receiver
from collat.runner import setup_log
from collat.ingest.tidy import read_parquet

log = setup_log(snakemake.log)
pt2pt = read_parquet(snakemake.input.tidy, "pt2pt")
fits = pd.read_parquet(snakemake.input.fits)
save(latency_per_receiver(pt2pt, snakemake.params.size, snakemake.params.machine), snakemake.output.receivers)
save(hockney_fits(pt2pt, fits), snakemake.output.fits)
