"""The modes fitted on no collective measurement (paper, openmpi) on the dense (P, size) grid, from
the pt2pt and nbft stages alone: what the validation scores as they are and the calibrated grid joins."""

import numpy as np
import pandas as pd

from collat.model import ModelOptions, Placements, build_modes, predict_all
from collat.placement import total_cores
from collat.runner import setup_log
from collat.settings import FITTED_MODES
from collat.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
cfg = snakemake.params.config
options = ModelOptions.from_config(cfg["model"], cfg["mappings"])
collective = read_parquet(snakemake.input.collective, "collective")
cores = total_cores(cfg["machine"])
sizes = np.sort(collective["size"].unique()) if len(collective) else 2 ** np.arange(0, 21)
modes = build_modes(options, cfg["channels"], sizes, cores - 1, pd.read_parquet(snakemake.input.hockney),
                    pd.read_parquet(snakemake.input.hockney_study), pd.read_csv(snakemake.input.nbft_fits),
                    pd.read_parquet(snakemake.input.nbft_medians),
                    names=tuple(m for m in options.modes if m not in FITTED_MODES))
predictions = predict_all(modes, Placements(cfg["machine"]), cfg["algorithms"], range(2, cores + 1, options.grid_step),
                          snakemake.threads)
atomic_write(snakemake.output.predictions, lambda tmp: predictions.to_parquet(tmp, index=False))
log.info("%d predictions of the modes %s", len(predictions), [m.name for m in modes])
