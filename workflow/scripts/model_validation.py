"""The validation of every target in one table: results/model/validation.csv and
results/model/validation_predictions.parquet (collat.model.validation.gather), and the fitted models'
prediction intervals, results/model/intervals.csv (collat.model.validation.interval_table); the default
held out, scored by the algorithm its fixed rules run, results/model/default_runs.csv
(collat.model.validation.by_default_run)."""

import pandas as pd

from collat.runner import setup_log
from collat.ingest.tidy import atomic_write
from collat.model.validation import by_default_run, gather, interval_table

log = setup_log(snakemake.log)
scores, table = gather([pd.read_csv(f) for f in snakemake.input.scores],
                       [pd.read_parquet(f) for f in snakemake.input.predictions])
atomic_write(snakemake.output.scores, lambda tmp: scores.to_csv(tmp, index=False))
atomic_write(snakemake.output.predictions, lambda tmp: table.to_parquet(tmp, index=False))
atomic_write(snakemake.output.intervals, lambda tmp: interval_table(table).to_csv(tmp, index=False))
runs = by_default_run(table, snakemake.params.default_rules)
atomic_write(snakemake.output.default_runs, lambda tmp: runs.to_csv(tmp, index=False))
log.info("%d scored cells, %d test predictions", len(scores), len(table))
