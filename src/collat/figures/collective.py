"""The study's Figures 3 and 4: measured and modelled latency against P."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import NullLocator
import numpy as np
import pandas as pd

from collat.figures.style import MODEL_COLOURS, note_figure, p_ticks, positive, same_limits


def collective_grid(collective: pd.DataFrame, model_pred: pd.DataFrame, reg_pred: pd.DataFrame, operation: str,
                    size: int, mappings: list[str], algorithms: list[dict], boundaries: dict, machine: str):
    """The study's Figures 3 and 4, per operation: latency against P, rows algorithms, columns mappings.

    Points: measured avg (median over runs); band: min..max over ranks (OSU -f); lines: every model's
    avg, as the points: the point-to-point model in paper mode (the study modelled only some
    algorithms), openmpi mode and calibrated mode, and the segmented model (study eq. 12). Dotted
    verticals: a new socket or node starts to fill under that mapping. Each panel's latency axis spans
    the measurements (band included) with a factor of 2 either side: a model far off leaves the panel.
    """
    c = collective[(collective["operation"] == operation) & (collective["size"] == size) & ~collective["outlier"]]
    algs = [a for a in algorithms if a["id"] in set(c["algorithm"])]
    if not algs:
        return note_figure(f"no measurement of MPI_{operation.capitalize()} at {size} B (evaluate.figure_sizes)")
    fig, axes = plt.subplots(len(algs), len(mappings), figsize=(4.2 * len(mappings), 2.6 * len(algs)),
                             squeeze=False, layout="constrained")
    for i, alg in enumerate(algs):
        for j, mapping in enumerate(mappings):
            ax = axes[i][j]
            d = c[(c["algorithm"] == alg["id"]) & (c["mapping"] == mapping)]
            med = d.groupby("P")[["avg", "min", "max"]].median()
            if len(med):
                ax.fill_between(med.index, med["min"], med["max"], color=MODEL_COLOURS["measured"], alpha=0.15,
                                lw=0, label="measured min–max over ranks")
                ax.plot(med.index, med["avg"], "o", ms=2.2, color=MODEL_COLOURS["measured"], label="measured avg")
            m = model_pred[(model_pred["operation"] == operation) & (model_pred["algorithm"] == alg["id"])
                           & (model_pred["mapping"] == mapping) & (model_pred["size"] == size)]
            for mode, target, style, label in (("paper", "avg", "-", "p2p model, paper mode (avg; only the "
                                                "algorithms the study modelled)"),
                                               ("openmpi", "avg", "-", "p2p model, openmpi mode (avg)"),
                                               ("calibrated", "avg", "-.", "p2p model, calibrated mode (avg; fitted "
                                                "on every collective cell)")):
                line = m[(m["mode"] == mode) & (m["target"] == target)].sort_values("P")
                if len(line) and line["predicted"].notna().any():
                    ax.plot(line["P"], positive(line["predicted"]), style, lw=1.3, color=MODEL_COLOURS[mode],
                            label=label)
            r = reg_pred[(reg_pred["operation"] == operation) & (reg_pred["algorithm"] == alg["id"])
                         & (reg_pred["mapping"] == mapping) & (reg_pred["size"] == size)
                         & (reg_pred["target"] == "avg") & (reg_pred["run"] == -1)].sort_values("P")
            if len(r):
                ax.plot(r["P"], positive(r["predicted"]), "--", lw=1.3, color=MODEL_COLOURS["segmented"],
                        label="segmented linear model (avg; not drawn where the fit is ≤ 0)")
            for b in boundaries.get(mapping, []):
                ax.axvline(b, ls=":", lw=0.8, color="grey")
            ax.set_yscale("log")
            if len(med):  # the measurements set the scale, not a model that dives or soars
                low = np.nanmin(med[["avg", "min"]].to_numpy())
                high = np.nanmax(med[["avg", "max"]].to_numpy())
                ax.set_ylim(low / 2, high * 2)
            ax.yaxis.set_minor_locator(NullLocator())  # decades only: minor log ticks cost most of the drawing
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(f"--map-by {mapping}")
            if j == 0:
                ax.set_ylabel(f"{alg['name']} ({alg['id']})\nlatency [µs]")
            ax.xaxis.set_major_locator(p_ticks())
            if i == len(algs) - 1:
                ax.set_xlabel("processes P")
            else:
                ax.tick_params(labelbottom=False)
    same_limits(axes.ravel(), "x")
    handles, labels = [], []
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8)
    fill = " (dotted: a new socket/node starts to fill)" if any(boundaries.get(m) for m in mappings) else ""
    fig.suptitle(f"MPI_{operation.capitalize()} at {size} B on {machine}: measured and modelled latency against P"
                 f"{fill}", fontsize=10)
    return fig
