"""The calibrated mode's parameters, fitted on every collective measurement: results/model/calibration.csv."""

import pandas as pd

from collat.model.calibration import CalibrationOptions, calibrate_all, starting_costs
from collat.model import ModelOptions, Placements
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import measured_cells

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
table = calibrate_all(cells, start, options, Placements(cfg["machine"]), opts, receivers, snakemake.threads)
atomic_write(snakemake.output.calibration, lambda tmp: table.to_csv(tmp, index=False))
for (op, target), g in table.groupby(["operation", "target"]):
    log.info("%s %s: %d cells, rms log residual %.3f", op, target, g["cells"].iloc[0], g["rms_log_residual"].iloc[0])
