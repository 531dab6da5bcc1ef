"""Point-to-point model predictions of every algorithm on the dense (P, size) grid, and their scores."""

import numpy as np
import pandas as pd

from collat.correction import HybridOptions, hybrid_predictions
from collat.model import ModelOptions, Placements, build_modes, predict_all, score
from collat.placement import total_cores
from collat.runner import setup_log
from collat.tidy import atomic_write, read_parquet
from collat.validation import measured_cells

log = setup_log(snakemake.log)
cfg = snakemake.params.config
options = ModelOptions.from_config(cfg["model"], cfg["mappings"])
collective = read_parquet(snakemake.input.collective, "collective")
cores = total_cores(cfg["machine"])
sizes = np.sort(collective["size"].unique()) if len(collective) else 2 ** np.arange(0, 21)
calibration = pd.read_csv(snakemake.input.calibration) if "calibrated" in options.modes else None
modes = build_modes(options, cfg["channels"], sizes, cores - 1, pd.read_parquet(snakemake.input.hockney),
                    pd.read_parquet(snakemake.input.hockney_study), pd.read_csv(snakemake.input.nbft_fits),
                    pd.read_parquet(snakemake.input.nbft_medians), calibration)
predictions = predict_all(modes, Placements(cfg["machine"]), cfg["algorithms"], range(2, cores + 1, options.grid_step),
                          snakemake.threads)
scores = score(predictions, collective, options, snakemake.params.paper_cleaning)
if "hybrid" in options.modes:  # the calibrated grid corrected by its residuals on the measured cells;
    # not in scores.csv: at a measured cell it returns the measurement (its scores are the validation's)
    k = HybridOptions.from_config(cfg["model"]["hybrid"]).neighbours
    cal = predictions[predictions["mode"] == "calibrated"]
    measured = {t: measured_cells(collective, t) for t in cal["target"].unique()}
    trend = pd.read_parquet(snakemake.input.trend, columns=["operation", "algorithm", "mapping", "P", "size",
                                                             "target", "predicted"],
                            filters=[("run", "==", -1)])  # the regression stage's grid (its grid_cleaning)
    unfitted = predictions[predictions["mode"] == "openmpi"] if "openmpi" in options.modes else None
    predictions = pd.concat([predictions, hybrid_predictions(cal, measured, k, trend, unfitted)], ignore_index=True)
atomic_write(snakemake.output.predictions, lambda tmp: predictions.to_parquet(tmp, index=False))
atomic_write(snakemake.output.scores, lambda tmp: scores.to_csv(tmp, index=False))
log.info("%d predictions, %d scored cells", len(predictions), len(scores))
