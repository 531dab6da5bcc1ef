"""Predicted against measured on the test part of every split, per model (results/figures/accuracy/validation)."""

import pandas as pd

from collat.figures.style import save
from collat.figures.validation import validation_scatter
from collat.runner import setup_log

log = setup_log(snakemake.log)
target = snakemake.params.target
table = pd.read_parquet(snakemake.input.predictions, filters=[("target", "==", target)])
scores = pd.read_csv(snakemake.input.scores)
floor = scores.loc[scores["target"] == target, "floor"].iloc[0]
save(validation_scatter(table, floor, target=target), snakemake.output.png)
