"""The openmpi and calibrated modes on a machine nobody measured (config model.what_if[i]: the config
machine with another node count): results/model/what_if/{name}.parquet."""

import pandas as pd

from collat.model import ModelOptions, Placements, build_modes, grid_axes, predict_all, what_if_machine
from collat.runner import setup_log
from collat.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
cfg, index = snakemake.params.config, snakemake.params.index
entry = cfg["model"]["what_if"][index]
options = ModelOptions.from_config(cfg["model"], cfg["mappings"])
hockney = pd.read_parquet(snakemake.input.hockney)
machine, P_values = what_if_machine(cfg["machine"], entry, index, cfg["mappings"], options.unpinned_channel,
                                    hockney["channel"])
sizes, _, max_receivers = grid_axes(read_parquet(snakemake.input.collective, "collective"), machine, 1,
                                   options.extra_sizes)
calibration = pd.read_csv(snakemake.input.calibration) if "calibration" in snakemake.input.keys() else None
modes = build_modes(options, cfg["channels"], sizes, max_receivers, hockney, pd.read_parquet(snakemake.input.hockney_study),
                    pd.read_csv(snakemake.input.nbft_fits), pd.read_parquet(snakemake.input.nbft_medians), calibration,
                    names=("openmpi", "calibrated"))
predictions = predict_all(modes, Placements(machine), cfg["algorithms"], P_values, snakemake.threads)
atomic_write(snakemake.output[0], lambda tmp: predictions.to_parquet(tmp, index=False))
log.info("%s: %d nodes, %d predictions of %s at P = %s", entry["name"], machine["nodes"], len(predictions),
         [m.name for m in modes], P_values)
