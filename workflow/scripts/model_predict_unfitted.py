"""The modes fitted on no collective measurement (paper, openmpi) on the dense (P, size) grid, from
the pt2pt and nbft stages alone: what the validation scores as they are and the calibrated grid joins."""

import pandas as pd

from collat.model import ModelOptions, Placements, build_modes, grid_axes, predict_all
from collat.runner import setup_log
from collat.config.settings import FITTED_MODES
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
cfg = snakemake.params.config
options = ModelOptions.from_config(cfg["model"], cfg["mappings"], pd.read_parquet(snakemake.input.hockney),
                                   pd.read_csv(snakemake.input.nbft_fits))
sizes, P_values, max_receivers = grid_axes(read_parquet(snakemake.input.collective, "collective"), cfg["machine"],
                                           options.grid_step, options.extra_sizes)
modes = build_modes(options, cfg["channels"], sizes, max_receivers, pd.read_parquet(snakemake.input.hockney),
                    pd.read_parquet(snakemake.input.hockney_study), pd.read_csv(snakemake.input.nbft_fits),
                    pd.read_parquet(snakemake.input.nbft_medians),
                    names=tuple(m for m in options.modes if m not in FITTED_MODES))
predictions = predict_all(modes, Placements(cfg["machine"]), cfg["algorithms"], P_values, snakemake.threads)
atomic_write(snakemake.output.predictions, lambda tmp: predictions.to_parquet(tmp, index=False))
log.info("%d predictions of the modes %s", len(predictions), [m.name for m in modes])
