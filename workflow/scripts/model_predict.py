"""Every mode on the dense (P, size) grid: the unfitted modes' grid (rule model_predict_unfitted), the
calibrated mode's and the hybrid's with their 80 % intervals (results/model/intervals.csv), and their
scores on the measured cells."""

import pandas as pd

from collat.model.calibrated_mode import slowed_operations, with_machine_terms
from collat.model.calibration import grid_shapes
from collat.model.hybrid_mode import HybridOptions, hybrid_predictions
from collat.model.transfer import transfer_grid, unmeasured_bounds
from collat.model import CalibratedMode, ModelOptions, Placements, grid_axes, predict_all, score
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import grid_bounds, measured_cells, one_file_curves, size_bounds

log = setup_log(snakemake.log)
cfg = snakemake.params.config
hockney, nbft_fits = pd.read_parquet(snakemake.input.hockney), pd.read_csv(snakemake.input.nbft_fits)
options = ModelOptions.from_config(cfg["model"], cfg["mappings"], hockney, nbft_fits)
collective = read_parquet(snakemake.input.collective, "collective")
sizes, P_values, max_receivers = grid_axes(collective, cfg["machine"], options.grid_step, options.extra_sizes)
unfitted = pd.read_parquet(snakemake.input.unfitted)
parts = {mode: g for mode, g in unfitted.groupby("mode", sort=False)}
measured = {}  # target -> the measured cells (transfer, hybrid and intervals read the same)
physics = parts.get("openmpi")  # the openmpi mode's prices as the fitted modes build on them
if "calibrated" in options.modes:
    shapes = None  # every calibration priced its fan-outs by a line (model.calibrated.nbft_shape: line)
    if "nbft_medians" in snakemake.input.keys():
        shapes = grid_shapes(hockney, nbft_fits, pd.read_parquet(snakemake.input.nbft_medians),
                             options, cfg["channels"], collective["size"], sizes, max_receivers,
                             cfg["model"]["calibrated"]["nbft_shape"])
    calibrated = CalibratedMode.from_table(pd.read_csv(snakemake.input.calibration), cfg["channels"], sizes,
                                           max_receivers, options, shapes)
    parts["calibrated"] = predict_all([calibrated], Placements(cfg["machine"]), cfg["algorithms"], P_values,
                                      snakemake.threads)
    raw = parts["calibrated"]  # the calibration's own prices, which the hybrid corrects
    if physics is not None:  # with the machine's costs the calibration measured (its memory work, a full node)
        physics = with_machine_terms(physics, pd.read_csv(snakemake.input.calibration), options.openmpi.trees,
                                     cfg["machine"])
    measured = {t: measured_cells(collective, t) for t in raw["target"].unique()}
    if "transfer" in snakemake.input.keys():  # an algorithm nobody measured: as far as the calibration carries
        parts["calibrated"] = raw.assign(predicted=transfer_grid(raw, physics, measured,
                                                                 pd.read_csv(snakemake.input.transfer),
                                                                 options.openmpi.trees))
if "hybrid" in options.modes:  # the calibrated grid corrected by its residuals on the measured cells;
    # not in scores.csv: at a measured cell it returns the measurement (its scores are the validation's)
    k = HybridOptions.from_config(cfg["model"]["hybrid"]).neighbours
    trend = pd.read_parquet(snakemake.input.trend, columns=["operation", "algorithm", "mapping", "P", "size",
                                                             "target", "predicted"],
                            filters=[("run", "==", -1)])  # the regression stage's grid (its grid_cleaning)
    bend = pd.read_csv(snakemake.input.bend) if "bend" in snakemake.input.keys() else None
    table = pd.read_csv(snakemake.input.calibration)
    parts["hybrid"] = hybrid_predictions(raw, measured, k, trend, physics, bend=bend,
                                         trees=options.openmpi.trees, machine=cfg["machine"],
                                         slowed={t: slowed_operations(table, t) for t in raw["target"].unique()})
predictions = pd.concat([parts[m] for m in options.modes if m in parts], ignore_index=True)
if "twin" in predictions:  # the hybrid's prices that are a measurement of the same run
    predictions["twin"] = predictions["twin"].fillna(False).astype(bool)
measured = {t: measured[t] if t in measured else measured_cells(collective, t) for t in predictions["target"].unique()}
# the fitted modes' 80 % intervals for a new run: as wide as the validation found their errors where each
# cell stands, and, on a curve one job measured, as far apart as two jobs' runs of one configuration lie
# (results/model/noise_floor.csv)
floors = pd.read_csv(snakemake.input.noise_floor, dtype={"nodes": str})
predictions["lower"], predictions["upper"] = grid_bounds(predictions, measured, pd.read_csv(snakemake.input.intervals),
                                                         cfg["machine"], size_bounds(hockney),
                                                         floors[floors["kind"] == "another_run"],
                                                         one_file_curves(collective))
if physics is not None:  # an algorithm nobody measured, foreign to the measured ones or without a validated
    # width: at least as unsure as its price, the physics', is on what was measured
    predictions["lower"], predictions["upper"] = unmeasured_bounds(predictions, physics, measured,
                                                                   options.openmpi.trees, predictions["lower"],
                                                                   predictions["upper"])
scores = score(predictions[predictions["mode"] != "hybrid"], collective, options, snakemake.params.paper_cleaning)
atomic_write(snakemake.output.predictions, lambda tmp: predictions.to_parquet(tmp, index=False))
atomic_write(snakemake.output.scores, lambda tmp: scores.to_csv(tmp, index=False))
log.info("%d predictions, %d scored cells", len(predictions), len(scores))
