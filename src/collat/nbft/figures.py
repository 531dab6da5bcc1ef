"""Figures of the nbft stage: the parallelisation factors as heat maps."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from collat.figures.style import bytes_label, note_figure, round_ticks


def gamma_heatmaps(gamma: pd.DataFrame, operation: str, channels: list[str]):
    """gamma(P, m) per channel (columns, config order) for the avg and max targets (rows), log colour scale."""
    from matplotlib.colors import LogNorm

    g = gamma[gamma["operation"] == operation]
    channels = [c for c in channels if c in set(g["channel"].unique())]
    targets = list(dict.fromkeys(g["target"]))
    if not channels or not targets:  # nothing measured: say so instead of an empty grid
        return note_figure(f"no NBFT measurement of {operation}: its fan-outs are priced with the line assumed by\n"
                           "nbft.unmeasured_slope (method 'assumed' in results/nbft/fits.csv)")
    fig, axes = plt.subplots(len(targets), len(channels), figsize=(4.2 * len(channels), 3.6 * len(targets)),
                             squeeze=False, layout="constrained")
    pos = g["gamma"][g["gamma"] > 0]
    norm = LogNorm(vmin=max(pos.min(), 1e-2), vmax=pos.max()) if len(pos) else None
    for i, target in enumerate(targets):
        for j, ch in enumerate(channels):
            ax = axes[i][j]
            d = g[(g["target"] == target) & (g["channel"] == ch)]
            piv = d.pivot_table(index="size", columns="P", values="gamma")
            if piv.empty:
                ax.set_axis_off()
                continue
            mesh = ax.pcolormesh(np.arange(piv.shape[1] + 1), np.arange(piv.shape[0] + 1),
                                 piv.to_numpy(), norm=norm, cmap="viridis", shading="flat", rasterized=True)
            xt = round_ticks(piv.columns.to_numpy())
            ax.set_xticks(xt + 0.5, piv.columns[xt])
            yt = np.arange(0, piv.shape[0], 4)
            ax.set_yticks(yt + 0.5, [bytes_label(s) for s in piv.index[yt]])
            ax.set_xlabel("P [processes]")
            if j == 0:
                ax.set_ylabel("message size")
            ax.set_title(f"{ch} channel, {target}")
    fig.colorbar(mesh, ax=axes, label="γ̂(P, m) = T_NBFT / T_p2p [1]", shrink=0.8, pad=0.01, aspect=30)
    fig.supxlabel("white: P not measured, or every row at that P flagged as an outlier", fontsize=8, x=0.01,
                  ha="left")
    fig.suptitle(f"NBFT parallelisation factor, {operation} (study eq. 7)")
    return fig
