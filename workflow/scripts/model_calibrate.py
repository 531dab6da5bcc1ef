"""The calibrated mode's parameters, fitted on every collective measurement: results/model/calibration.csv."""

import numpy as np
import pandas as pd

from collat.model.calibration import CalibrationOptions, calibrate_all
from collat.model import ModelOptions, Placements, openmpi_costs
from collat.model.placement import total_cores
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import measured_cells

log = setup_log(snakemake.log)
cfg = snakemake.params.config
options = ModelOptions.from_config(cfg["model"], hockney=pd.read_parquet(snakemake.input.hockney))
opts = CalibrationOptions.from_config(cfg["model"]["calibrated"])
collective = read_parquet(snakemake.input.collective, "collective")
cores = total_cores(cfg["machine"])
start = openmpi_costs(pd.read_parquet(snakemake.input.hockney), pd.read_csv(snakemake.input.nbft_fits),
                      pd.read_parquet(snakemake.input.nbft_medians), options.openmpi, cfg["channels"],
                      np.sort(collective["size"].unique()), cores - 1)
cells = {target: measured_cells(collective, target) for target in opts.targets}
table = calibrate_all(cells, start, options, Placements(cfg["machine"]), opts, cores - 1, snakemake.threads)
atomic_write(snakemake.output.calibration, lambda tmp: table.to_csv(tmp, index=False))
for (op, target), g in table.groupby(["operation", "target"]):
    log.info("%s %s: %d cells, rms log residual %.3f", op, target, g["cells"].iloc[0], g["rms_log_residual"].iloc[0])
