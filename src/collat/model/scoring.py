"""Scores of the prediction grid on the measured cells (in sample: every mode that was not fitted on
them; the fitted modes are scored by the validation, :mod:`collat.validation`)."""

from __future__ import annotations

import pandas as pd

from .options import ModelOptions


def score(predictions: pd.DataFrame, collective: pd.DataFrame, options: ModelOptions,
          paper_cleaning: dict) -> pd.DataFrame:
    """R² (sklearn's r2_score(measured, predicted)), median absolute relative error and n per
    (operation, algorithm, mapping, size, mode, target, cleaning), over the measured rows; with the
    ``paper`` cleaning, only up to the largest P the study scored (config ``model.paper.max_P``)."""
    from ..quality import cleaning_mask
    from ..regression import mape, r2  # statsmodels and scikit-learn: imported when scoring only

    keys = ["operation", "algorithm", "mapping", "P", "size"]
    limits = {(m["operation"], int(m["algorithm"]), m["mapping"]): int(m["P"]) for m in options.paper.max_P}
    data = collective.assign(**{f"keep_{c}": cleaning_mask(collective, c, paper_cleaning)
                                for c in options.cleanings})
    rows = []
    for (mode, target), pred in predictions.groupby(["mode", "target"], sort=True):
        merged = data.merge(pred[keys + ["predicted"]], on=keys, how="inner")
        merged = merged[merged[target].notna() & merged["predicted"].notna()]
        for cleaning in options.cleanings:
            kept = merged[merged[f"keep_{cleaning}"]]
            for (op, alg, mapping, size), g in kept.groupby(["operation", "algorithm", "mapping", "size"]):
                if cleaning == "paper" and (op, int(alg), mapping) in limits:
                    g = g[g["P"] <= limits[(op, int(alg), mapping)]]
                y, p = g[target].to_numpy(float), g["predicted"].to_numpy(float)
                rows.append({"operation": op, "algorithm": int(alg), "algorithm_name": g["algorithm_name"].iloc[0],
                             "mapping": mapping, "size": int(size), "mode": mode, "target": target,
                             "cleaning": cleaning, "r2": r2(y, p), "mape": mape(y, p), "n": len(y)})
    return pd.DataFrame(rows)
