"""Predicted against measured outside the fitted data, per split and model."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from collat.figures.style import MODEL_COLOURS, same_limits


def validation_scatter(table: pd.DataFrame, floor: float, per_panel: int = 3000, seed: int = 0, target: str = "avg"):
    """Predicted against measured on the test part of each split (columns), per model (rows), log-log,
    with the dotted lines at twice and half the measured for scale, and the panel's median relative
    error beside the noise floor (in words: a band of ± the floor is thinner than the diagonal over
    these decades). Both axes span the measured latencies; a prediction beyond them sits on the
    edge. The paper mode is left out: its segment counts were tuned on all of this data
    (validation.csv keeps it). ``target``: the measured column drawn (avg or max), named on the axes;
    a split the data hold no fold of (one mapping: no unseen mapping) is said so in its panels."""
    from collat.model.validation import SPLITS

    models = [m for m in ("hybrid", "calibrated", "openmpi", "segmented", "nearest_neighbour")
              if m in set(table["model"].unique())]
    fig, axes = plt.subplots(len(models), len(SPLITS), figsize=(3.0 * len(SPLITS), 2.9 * len(models)),
                             squeeze=False, layout="constrained")
    scored = table["scored"].astype(bool) if "scored" in table else True  # not a fold's own training cells
    ok = table.loc[scored & table["predicted"].notna() & (table["predicted"] > 0),
                   ["model", "split", "measured", "predicted"]]
    lo, hi = ok["measured"].min(), ok["measured"].max()
    line = np.geomspace(lo, hi, 50)
    panels = dict(list(ok.groupby([ok["model"].astype(str), ok["split"].astype(str)], sort=False)))  # one pass
    empty = ok.iloc[:0]
    held = set(table["split"].astype(str))  # the splits these data have folds of
    floor_text = f"floor {floor:.3f}" if np.isfinite(floor) else "no repeated runs"
    for i, model in enumerate(models):
        for j, split in enumerate(SPLITS):
            ax = axes[i][j]
            d = panels.get((model, split), empty)
            ax.plot(line, line, "-", color="k", lw=0.8)
            for factor in (0.5, 2.0):  # a scale the eye can read: the floor's band is thinner than the line
                ax.plot(line, line * factor, ":", color="k", lw=0.7)
            if len(d):
                s = d.sample(min(per_panel, len(d)), random_state=seed)
                ax.scatter(s["measured"], s["predicted"].clip(lo, hi), s=2, alpha=0.25,
                           color=MODEL_COLOURS.get(model, "#8c564b"), rasterized=True, lw=0)
                err = float(np.median(np.abs(d["predicted"] - d["measured"]) / d["measured"]))
                ax.text(0.04, 0.95, f"median rel. error {err:.2f}\n({floor_text}; {len(d)} cells)",
                        transform=ax.transAxes, va="top", fontsize=9)
            else:
                ax.text(0.95, 0.05, "cannot predict" if split in held else "no such split in these data",
                        transform=ax.transAxes, ha="right", fontsize=9, color="grey")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.minorticks_off()  # decades only: the minor ticks of 25 small panels cost most of the drawing
            if i == 0:
                ax.set_title(split.replace("_", " "), fontsize=11)
            if j == 0:
                ax.set_ylabel(f"{model.replace('_', ' ')}\npredicted {target} [µs]")
            if i == len(models) - 1:
                ax.set_xlabel(f"measured {target} [µs]")
            ax.tick_params(labelbottom=i == len(models) - 1, labelleft=j == 0)
    same_limits(axes.ravel(), "xy")
    fig.suptitle(f"Predictions outside the fitted data (test parts, target {target}); dotted: ×2 and ÷2 the measured;\n"
                 "predictions beyond the measured range drawn on the edge", fontsize=12)
    return fig
