"""Scores of the prediction grid on the measured cells (in sample: every mode that was not fitted on
them; the fitted modes are scored by the validation, :mod:`collat.model.validation`)."""

from __future__ import annotations

import pandas as pd

from collat.model.options import ModelOptions


def score(predictions: pd.DataFrame, collective: pd.DataFrame, options: ModelOptions,
          paper_cleaning: dict) -> pd.DataFrame:
    """R² (sklearn's r2_score(measured, predicted)), median absolute relative error and n per
    (operation, algorithm, mapping, size, mode, target, cleaning), over the measured rows; with the
    ``paper`` cleaning, only up to the largest P the study scored (config ``model.paper.max_P``)."""
    from collat.ingest.quality import cleaning_mask
    from collat.regression.segmented import group_scores

    keys = ["operation", "algorithm", "mapping", "P", "size"]
    group = ["operation", "algorithm", "mapping", "size"]
    limit = {(m["operation"], int(m["algorithm"]), m["mapping"]): int(m["P"]) for m in options.paper.max_P}
    data = collective.assign(**{f"keep_{c}": cleaning_mask(collective, c, paper_cleaning)
                                for c in options.cleanings})
    if "paper" in options.cleanings and limit:
        caps = pd.DataFrame([(o, a, m, P) for (o, a, m), P in limit.items()],
                            columns=["operation", "algorithm", "mapping", "cap"])
        cap = data[["operation", "algorithm", "mapping"]].merge(caps, how="left")["cap"].to_numpy(float)
        data["keep_paper"] = data["keep_paper"].to_numpy() & ~(data["P"].to_numpy() > cap)  # NaN cap: none
    names = data.groupby(["operation", "algorithm"], sort=False)["algorithm_name"].first()
    frames = []
    scored = predictions[keys + ["predicted"]]  # the rows of each (mode, target) taken from these columns only
    for (mode, target), rows in sorted(predictions.groupby(["mode", "target"]).indices.items()):
        merged = data.merge(scored.take(rows), on=keys, how="inner")
        merged = merged[merged[target].notna() & merged["predicted"].notna()]
        for cleaning in options.cleanings:
            kept = merged[merged[f"keep_{cleaning}"]]
            if kept.empty:
                continue
            scores = group_scores(kept, group, measured=target)
            frames.append(scores.assign(mode=mode, target=target, cleaning=cleaning))
    columns = ["operation", "algorithm", "algorithm_name", "mapping", "size", "mode", "target", "cleaning", "r2",
               "mape", "n"]
    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames, ignore_index=True)
    out["algorithm"] = out["algorithm"].astype(int)
    out["size"] = out["size"].astype(int)
    out["algorithm_name"] = names.reindex(pd.MultiIndex.from_frame(out[["operation", "algorithm"]])).to_numpy()
    return out[columns]
