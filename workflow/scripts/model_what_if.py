"""The openmpi, calibrated and hybrid modes on a machine nobody measured (config model.what_if[i]: the
config machine with another node count): results/model/what_if/{name}.parquet."""

import pandas as pd

from collat.model.calibrated_mode import slowed_operations, with_machine_terms
from collat.model.calibration import grid_shapes
from collat.model.hybrid_mode import HybridOptions, hybrid_predictions
from collat.model.transfer import transfer_grid
from collat.model import ModelOptions, Placements, build_modes, grid_axes, predict_all, what_if_machine
from collat.model.placement import same_placements
from collat.model.placement import cores_per_node
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import measured_cells

log = setup_log(snakemake.log)
cfg, index = snakemake.params.config, snakemake.params.index
entry = cfg["model"]["what_if"][index]
hockney = pd.read_parquet(snakemake.input.hockney)
nbft_fits, nbft_medians = pd.read_csv(snakemake.input.nbft_fits), pd.read_parquet(snakemake.input.nbft_medians)
options = ModelOptions.from_config(cfg["model"], cfg["mappings"], hockney, nbft_fits)
machine, P_values = what_if_machine(cfg["machine"], entry, index, cfg["mappings"], options.unpinned_channel,
                                    hockney["channel"])
collective = read_parquet(snakemake.input.collective, "collective")
sizes, _, max_receivers = grid_axes(collective, machine, 1, options.extra_sizes)
calibration = pd.read_csv(snakemake.input.calibration) if "calibration" in snakemake.input.keys() else None
nbft_shape = cfg["model"]["calibrated"]["nbft_shape"]  # how the calibrations priced a fan-out
modes = build_modes(options, cfg["channels"], sizes, max_receivers, hockney, pd.read_parquet(snakemake.input.hockney_study),
                    nbft_fits, nbft_medians, calibration, names=("openmpi", "calibrated"),
                    shapes=grid_shapes(hockney, nbft_fits, nbft_medians, options, cfg["channels"], collective["size"],
                                       sizes, max_receivers, nbft_shape),
                    cores_per_node=cores_per_node(cfg["machine"]))
predictions = predict_all(modes, Placements(machine), cfg["algorithms"], P_values, snakemake.threads)
# the openmpi mode's prices as the fitted modes build on them (collat.model.calibrated_mode.physics_price)
physics = with_machine_terms(predictions[predictions["mode"] == "openmpi"], calibration, options.openmpi.trees,
                             machine)
# the hybrid under the mappings that place ranks as on the measured machine: there its residuals on
# the measured cells hold (at a measured cell it returns the measurement); beyond the measured P the
# residual of a curve's last measured P is carried (the regression stage's trend stops there)
same = [m for m in cfg["mappings"] if same_placements(cfg["machine"], machine, m)]
if "hybrid" in options.modes and "calibrated" in set(predictions["mode"]) and same:
    k = HybridOptions.from_config(cfg["model"]["hybrid"]).neighbours
    cal = predictions[(predictions["mode"] == "calibrated") & predictions["mapping"].isin(same)].reset_index(drop=True)
    measured = {t: measured_cells(collective, t) for t in cal["target"].unique()}
    # the residuals at every measured cell: the measured machine's calibrated grid prices them, and
    # under these mappings it is this machine's at those P; under the others too, as the measured
    # machine's hybrid reads them (an algorithm nobody measured borrows from every mapping's measured
    # cells how alike priced runs err: collat.model.hybrid_mode.transfer), so that it is that hybrid here
    # (the calibration's own prices, as the measured machine's hybrid corrects them: model_predict)
    m_sizes, m_P, m_receivers = grid_axes(collective, cfg["machine"], options.grid_step, options.extra_sizes)
    measured_machine = build_modes(options, cfg["channels"], m_sizes, m_receivers, hockney, None, None, None,
                                   calibration, names=("calibrated",),
                                   shapes=grid_shapes(hockney, nbft_fits, nbft_medians, options, cfg["channels"],
                                                      collective["size"], m_sizes, m_receivers, nbft_shape))
    at_measured = predict_all(measured_machine, Placements(cfg["machine"]), cfg["algorithms"], m_P, snakemake.threads)
    trend = pd.read_parquet(snakemake.input.trend, columns=["operation", "algorithm", "mapping", "P", "size", "target",
                                                             "predicted"], filters=[("run", "==", -1)])
    bend = pd.read_csv(snakemake.input.bend) if "bend" in snakemake.input.keys() else None
    hybrid = hybrid_predictions(cal, measured, k, trend, physics if len(physics) else None, at_measured, bend,
                                options.openmpi.trees, {t: slowed_operations(calibration, t) for t in measured},
                                cfg["machine"], machine)
    predictions = pd.concat([predictions, hybrid], ignore_index=True)
    predictions["twin"] = predictions["twin"].fillna(False).astype(bool)  # the hybrid's measured prices
# an algorithm nobody measured: the calibrated price as far as the calibration carries (rule model_transfer)
calibrated = (predictions["mode"] == "calibrated").to_numpy()
if "transfer" in snakemake.input.keys() and calibrated.any():
    measured = {t: measured_cells(collective, t) for t in predictions.loc[calibrated, "target"].unique()}
    predictions.loc[calibrated, "predicted"] = transfer_grid(predictions[calibrated], physics,
                                                             measured, pd.read_csv(snakemake.input.transfer),
                                                             options.openmpi.trees)
atomic_write(snakemake.output[0], lambda tmp: predictions.to_parquet(tmp, index=False))
log.info("%s: %d nodes, %d predictions of %s at P = %s; hybrid under %s (placed as on the measured machine)",
         entry["name"], machine["nodes"], len(predictions), sorted(set(predictions["mode"])), P_values, same)
