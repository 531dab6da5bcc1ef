"""Every model scored outside the data it was fitted or tuned on: results/model/validation.csv."""

import pandas as pd

from collat.runner import setup_log
from collat.tidy import atomic_write, read_parquet
from collat.validation import ValidationOptions, validate

log = setup_log(snakemake.log)
p = snakemake.params
collective = read_parquet(snakemake.input.collective, "collective")
predictions = pd.read_parquet(snakemake.input.predictions)
scores, table = validate(collective, predictions, p.machine, p.forms, ValidationOptions.from_config(p.options))
atomic_write(snakemake.output.scores, lambda tmp: scores.to_csv(tmp, index=False))
atomic_write(snakemake.output.predictions, lambda tmp: table.to_parquet(tmp, index=False))
log.info("%d scored cells, %d test predictions", len(scores), len(table))
