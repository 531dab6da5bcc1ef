"""Every model scored outside the data it was fitted or tuned on, for one target:
results/model/validation/{target}.csv and the test part's predictions beside it."""

from dataclasses import replace
from functools import partial

import pandas as pd

from collat.model.calibration import CalibrationOptions, fit_predict, starting_costs
from collat.model.hybrid_mode import HybridOptions
from collat.model import ModelOptions, Placements
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import ValidationOptions, size_bounds, validate

log = setup_log(snakemake.log)
p = snakemake.params
hockney = pd.read_parquet(snakemake.input.hockney)
lines = pd.read_csv(snakemake.input.nbft_fits)  # the eager and small-message limits they show
options = ModelOptions.from_config(p.config["model"], hockney=hockney, nbft_fits=lines)
collective = read_parquet(snakemake.input.collective, "collective")
predictions = pd.read_parquet(snakemake.input.unfitted,  # the modes fitted on no collective data, this target
                              columns=["mode", "operation", "algorithm", "mapping", "P", "size", "target", "predicted"],
                              filters=[("target", "==", snakemake.wildcards.target)])
fitted = {}
if "calibrated" in options.modes:  # recalibrated on the training part of every split
    start, receivers = starting_costs(hockney, lines, pd.read_parquet(snakemake.input.nbft_medians), options,
                                      p.config["channels"], collective, p.machine)
    neighbours = (HybridOptions.from_config(p.config["model"]["hybrid"]).neighbours
                  if "hybrid" in options.modes else None)  # None: no hybrid refit
    fitted["calibrated"] = partial(fit_predict, start=start, options=options, placements=Placements(p.machine),
                                   opts=CalibrationOptions.from_config(p.config["model"]["calibrated"]),
                                   max_receivers=receivers, hybrid_neighbours=neighbours)
one = replace(ValidationOptions.from_config(p.options, p.machine), targets=(snakemake.wildcards.target,))
scores, table = validate(collective, predictions, p.machine, p.forms, one, fitted, snakemake.threads, p.outliers,
                        size_bounds(hockney), options.openmpi.trees, options.openmpi.default_rules)
atomic_write(snakemake.output.scores, lambda tmp: scores.to_csv(tmp, index=False))
atomic_write(snakemake.output.predictions, lambda tmp: table.to_parquet(tmp, index=False))
log.info("%s: %d scored cells, %d test predictions", snakemake.wildcards.target, len(scores), len(table))
