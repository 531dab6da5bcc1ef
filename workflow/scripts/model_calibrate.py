"""The calibrated mode's parameters, fitted on every collective measurement: results/model/calibration.csv."""

import numpy as np
import pandas as pd

from collat.calibration import CalibrationOptions, calibrate_all, start_costs
from collat.model import Placements
from collat.placement import total_cores
from collat.runner import setup_log
from collat.tidy import atomic_write, read_parquet
from collat.validation import measured_cells

log = setup_log(snakemake.log)
cfg = snakemake.params.config
opts = CalibrationOptions.from_config(cfg["model"]["calibrated"])
collective = read_parquet(snakemake.input.collective, "collective")
cores = total_cores(cfg["machine"])
sizes = np.sort(collective["size"].unique())
start = start_costs(read_parquet(snakemake.input.pt2pt, "pt2pt"), pd.read_parquet(snakemake.input.hockney),
                    pd.read_csv(snakemake.input.nbft_fits), read_parquet(snakemake.input.nbft, "nbft"), cfg, sizes,
                    cores - 1)
cells = {target: measured_cells(collective, target) for target in opts.targets}
table = calibrate_all(cells, start, cfg["model"], Placements(cfg["machine"]), opts, cores - 1, snakemake.threads)
atomic_write(snakemake.output.calibration, lambda tmp: table.to_csv(tmp, index=False))
for (op, target), g in table.groupby(["operation", "target"]):
    log.info("%s %s: %d cells, rms log residual %.3f", op, target, g["cells"].iloc[0], g["rms_log_residual"].iloc[0])
