"""How much of the calibrated mode's bend between two measured P the hybrid keeps, per operation and
target: each curve's odd and even measured P held out in turn, the others calibrated
(collat.model.bend): results/model/bend.csv."""

import pandas as pd

from collat.ingest.tidy import atomic_write, read_parquet
from collat.model import ModelOptions, Placements
from collat.model.bend import bend_weights
from collat.model.calibration import CalibrationOptions, starting_costs
from collat.model.validation import measured_cells
from collat.runner import setup_log

log = setup_log(snakemake.log)
cfg = snakemake.params.config
hockney = pd.read_parquet(snakemake.input.hockney)
options = ModelOptions.from_config(cfg["model"], hockney=hockney)
opts = CalibrationOptions.from_config(cfg["model"]["calibrated"])
collective = read_parquet(snakemake.input.collective, "collective")
start, receivers = starting_costs(hockney, pd.read_csv(snakemake.input.nbft_fits),
                                  pd.read_parquet(snakemake.input.nbft_medians), options, cfg["channels"], collective,
                                  cfg["machine"])
cells = {target: measured_cells(collective, target) for target in opts.targets}
table = bend_weights(cells, start, options, Placements(cfg["machine"]), opts, receivers, snakemake.threads)
atomic_write(snakemake.output.bend, lambda tmp: table.to_csv(tmp, index=False))
for row in table.itertuples():
    log.info("%s %s: weight %.1f over %d cells between two others (median |log error| straight line %.3f, "
             "model's shape %.3f, weighted %.3f)", row.operation, row.target, row.weight, row.cells,
             row.error_line, row.error_model, row.error_weighted)
