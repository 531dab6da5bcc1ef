"""The forced algorithms OpenMPI cuts into segments, priced with each of model.segment_sizes over
their whole-message price, by the openmpi and calibrated modes: results/model/segments.parquet."""

import pandas as pd

from collat.model import ModelOptions, Placements, build_modes, grid_axes
from collat.model.segments import segment_ratios
from collat.model.placement import cores_per_node
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
cfg = snakemake.params.config
options = ModelOptions.from_config(cfg["model"], cfg["mappings"], pd.read_parquet(snakemake.input.hockney),
                                   pd.read_csv(snakemake.input.nbft_fits))
sizes, P_values, max_receivers = grid_axes(read_parquet(snakemake.input.collective, "collective"), cfg["machine"],
                                           options.grid_step, options.extra_sizes)
calibration = pd.read_csv(snakemake.input.calibration) if "calibrated" in options.modes else None
modes = build_modes(options, cfg["channels"], sizes, max_receivers, pd.read_parquet(snakemake.input.hockney),
                    pd.read_parquet(snakemake.input.hockney_study), pd.read_csv(snakemake.input.nbft_fits),
                    pd.read_parquet(snakemake.input.nbft_medians), calibration, names=("openmpi", "calibrated"),
                    cores_per_node=cores_per_node(cfg["machine"]))
ratios = segment_ratios(modes, Placements(cfg["machine"]), cfg["algorithms"], P_values, options.segment_sizes, sizes,
                        snakemake.threads)
atomic_write(snakemake.output.segments, lambda tmp: ratios.to_parquet(tmp, index=False))
log.info("%d segmented prices of the modes %s, segment sizes %s", len(ratios), [m.name for m in modes],
         list(options.segment_sizes))
