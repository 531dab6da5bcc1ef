"""Figures of the selection stage: the fastest algorithm over (P, size), picked and measured."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from collat.figures.style import edges, note_figure, p_ticks


def best_algorithm_maps(cells: pd.DataFrame, operation: str, mappings: list[str], algorithms: list[dict]):
    """Best algorithm over (P, size): the model's pick among the forced algorithms (``forced_pick``)
    beside the measured best forced algorithm, one row per mapping, so that the two columns choose
    among the same algorithms (those measured at the cell); cells where fewer than two were measured
    are blank. How often the
    model would hand a cell to OpenMPI's default instead is in each left title. Colours: matplotlib's
    tab10, one clearly distinct colour per algorithm (this job, the run's last, does not import
    seaborn and the scipy.stats it loads: a second)."""
    from matplotlib.colors import BoundaryNorm, ListedColormap

    c = cells[cells["operation"] == operation]
    pick = "forced_pick" if "forced_pick" in c else "predicted_best"
    ids = sorted({a["id"] for a in algorithms} & (set(c["measured_best"]) | set(c[pick])))
    if not ids:  # nothing to compare: say so instead of an empty map
        return note_figure(f"MPI_{operation.capitalize()}: no cell where two forced algorithms were measured")
    picked_by = (f"{c['mode'].iloc[0]} mode, its {c['target'].iloc[0]} prediction"
                 if {"mode", "target"} <= set(c.columns) and len(c) else "the model")
    tab10 = plt.get_cmap("tab10").colors
    colours = [tab10[i % len(tab10)] for i in range(len(ids))]
    cmap = ListedColormap(colours)
    norm = BoundaryNorm(np.arange(len(ids) + 1) - 0.5, len(ids))
    code = {a: i for i, a in enumerate(ids)}
    names = {a["id"]: f"{a['name']} ({a['id']})" for a in algorithms}
    fig, axes = plt.subplots(len(mappings), 2, figsize=(10, 2.8 * len(mappings)), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    for i, mapping in enumerate(mappings):
        d = c[c["mapping"] == mapping]
        default_share = (f"; OpenMPI's default as a candidate too: picked in {(d['predicted_best'] == 0).mean():.0%}"
                         if pick == "forced_pick" and len(d) else "")
        for j, (col, title) in enumerate(((pick, f"model's pick of a forced algorithm\n({picked_by}{default_share})"),
                                          ("measured_best", "measured best forced algorithm\n(median over runs)"))):
            ax = axes[i][j]
            if d.empty:
                ax.set_axis_off()
                continue
            grid = d.pivot_table(index="size", columns="P", values=col, aggfunc="first")
            values = grid.apply(lambda s: s.map(code)).to_numpy(dtype=float)
            ax.pcolormesh(edges(grid.columns.to_numpy(float)), edges(grid.index.to_numpy(float)),
                          np.ma.masked_invalid(values), cmap=cmap, norm=norm, shading="flat", rasterized=True)
            ax.set_yscale("log", base=2)
            ax.set_title(f"--map-by {mapping}: {title}", fontsize=9)
            if j == 0:
                ax.set_ylabel("message size [B]")
            ax.xaxis.set_major_locator(p_ticks())
            if i == len(mappings) - 1:
                ax.set_xlabel("processes P")
    from matplotlib.patches import Patch

    handles = [Patch(color=colours[code[a]]) for a in ids] + [Patch(facecolor="white", edgecolor="grey")]
    labels = [names.get(a, str(a)) for a in ids] + ["fewer than two forced algorithms measured (not scored)"]
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8)
    fig.suptitle(f"MPI_{operation.capitalize()}: fastest algorithm over (P, size)", fontsize=10)
    return fig
