"""How well each model fits: R² heat maps and the error against message size."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from collat.figures.style import MODEL_COLOURS, annotated_cells, note_figure


def r2_heatmaps(model_scores: pd.DataFrame, regression_scores: pd.DataFrame, operation: str, size: int,
                algorithms: list[dict], mappings: list[str]):
    """R² per algorithm x mapping for every model, mode and target (robust cleaning), clipped to [-1, 1]."""
    ms = model_scores[(model_scores["operation"] == operation) & (model_scores["size"] == size)
                      & (model_scores["cleaning"] == "robust")]
    rs = regression_scores[(regression_scores["operation"] == operation) & (regression_scores["size"] == size)
                           & (regression_scores["cleaning"] == "robust")]
    panels = []
    for (mode, target), g in sorted(ms.groupby(["mode", "target"]), key=lambda kv: (kv[0][0] != "paper", kv[0])):
        panels.append((f"p2p {mode} mode, {target}", g, "r2"))
    for target, g in rs.groupby("target"):
        panels.append((f"segmented, {target}, in-sample", g, "r2"))
        panels.append((f"segmented, {target}, 5-fold CV", g, "r2_cv"))
    if not panels:
        return note_figure(f"no R² of MPI_{operation.capitalize()} at {size} B (evaluate.size): nothing measured there")
    names = {a["id"]: f"{a['name']} ({a['id']})" for a in algorithms}
    ncols = min((3, 4), key=lambda c: (-len(panels) % c, -c)) if len(panels) > 4 else max(len(panels), 1)
    nrows = -(-len(panels) // ncols)  # as few empty panels as 3 or 4 columns allow
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols + 1.2, 3.3 * nrows), squeeze=False,
                             layout="constrained")
    flat = axes.ravel()
    for k, (ax, (title, g, col)) in enumerate(zip(flat, panels)):
        pivot = g.pivot_table(index="algorithm", columns="mapping", values=col, dropna=False)
        rows = [a["id"] for a in algorithms if a["id"] in set(ms["algorithm"]) | set(rs["algorithm"])]
        pivot = pivot.reindex(index=rows, columns=mappings)  # same rows in every panel; blank = not modelled
        pivot.index = [names.get(i, str(i)) for i in pivot.index]
        annotated_cells(ax, pivot, "RdYlGn", -1.0, 1.0)
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("mapping" if k // ncols == nrows - 1 else "")
        ax.set_ylabel("")
        ax.tick_params(axis="y", labelrotation=0, labelleft=k % ncols == 0)
    for ax in flat[len(panels):]:
        ax.set_axis_off()
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    fig.colorbar(ScalarMappable(Normalize(-1, 1), cmap="RdYlGn"), ax=axes, shrink=0.7,
                 label="R² (colour clipped to [−1, 1]; the numbers are the true R²)")
    fig.suptitle(f"MPI_{operation.capitalize()}: R² at {size} B (the size of the study's tables; error_vs_size covers "
                 "every size), robust cleaning; blank: not modelled or not measured", fontsize=12)
    return fig


def error_against_size(model_scores: pd.DataFrame, regression_scores: pd.DataFrame):
    """Median absolute relative error against message size, per operation and model (robust cleaning)."""
    ms = model_scores[model_scores["cleaning"] == "robust"]
    rs = regression_scores[regression_scores["cleaning"] == "robust"]
    ops = sorted(set(ms["operation"].unique()) | set(rs["operation"].unique()))
    fig, axes = plt.subplots(1, len(ops), figsize=(5.5 * len(ops), 3.8), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, op in zip(axes[0], ops):
        for (mode, target), g in ms[ms["operation"] == op].groupby(["mode", "target"]):
            med = g.groupby("size")["mape"].median()
            ax.plot(med.index, 100 * med, "o-" if target == "max" else "s--", ms=3, lw=1.2,
                    color=MODEL_COLOURS[mode], label=f"p2p {mode}, {target}")
        for target, g in rs[rs["operation"] == op].groupby("target"):
            med = g.groupby("size")["mape"].median()
            ax.plot(med.index, 100 * med, "o-" if target == "max" else "s--", ms=3, lw=1.2,
                    color=MODEL_COLOURS["segmented"], label=f"segmented, {target}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size [B]")
        ax.set_title(f"MPI_{op.capitalize()}")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("median |predicted − measured| / measured [%]\n(over algorithms, mappings and P)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncol=5)
    fig.suptitle("Error of each model against message size (robust cleaning)", fontsize=10)
    return fig
