"""Segmented linear regression (eq. 12): scores, coefficients and predictions."""

from collat.regression.segmented import segmented_models
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
p = snakemake.params
collective = read_parquet(snakemake.input[0], "collective")
scores, coefficients, predictions = segmented_models(collective, p.machine, p.options, p.paper_cleaning)
atomic_write(snakemake.output.scores, lambda tmp: scores.to_csv(tmp, index=False))
atomic_write(snakemake.output.coefficients, lambda tmp: coefficients.to_csv(tmp, index=False))
atomic_write(snakemake.output.predictions, lambda tmp: predictions.to_parquet(tmp, index=False))
log.info("%d scored fits, %d coefficients, %d predictions", len(scores), len(coefficients), len(predictions))
