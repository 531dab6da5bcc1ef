"""Figures of the point-to-point and NBFT stages (seaborn; PNG and PDF; units on every axis)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from .hockney import t_p2p  # noqa: E402
from .tidy import atomic_write  # noqa: E402

CHANNEL_PALETTE = {"cache": "#4c72b0", "core": "#55a868", "socket": "#dd8452", "node": "#c44e52"}


def save(fig, png_path) -> None:
    """Write ``png_path`` and the PDF beside it, atomically."""
    for path in (str(png_path), str(png_path)[:-4] + ".pdf"):
        atomic_write(path, lambda tmp, p=path: fig.savefig(tmp, format=p.rsplit(".", 1)[1], dpi=150,
                                                           bbox_inches="tight"))
    plt.close(fig)


def latency_per_receiver(pt2pt: pd.DataFrame, size: int, machine: str):
    """The study's Figure 2: latency of one message from core 0 to each receiving core, per channel."""
    d = pt2pt[pt2pt["size"] == size].copy()
    by_receiver = d["receiver"].notna().all() and len(d)
    x = "receiver" if by_receiver else "run"
    d[x] = d[x].astype(int)
    fig, ax = plt.subplots(figsize=(9, 4))
    order = [c for c in CHANNEL_PALETTE if c in set(d["channel"])] + sorted(set(d["channel"]) - set(CHANNEL_PALETTE))
    sns.scatterplot(data=d[~d["outlier"]], x=x, y="avg", hue="channel", hue_order=order,
                    palette=CHANNEL_PALETTE, s=18, ax=ax, edgecolor="none")
    if d["outlier"].any():
        ax.scatter(d.loc[d["outlier"], x], d.loc[d["outlier"], "avg"], marker="x", c="k", s=20,
                   label="flagged outlier")
    ax.set_xlabel("receiving core (sender on core 0; node channel: core id on the other node)" if by_receiver
                  else "run (receiving core not recorded)")
    ax.set_ylabel(f"osu_latency at {size} B [µs]")
    ax.set_title(f"Point-to-point latency per receiving core, {machine}")
    ax.legend(title="channel", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(alpha=0.3)
    return fig


def hockney_fits(pt2pt: pd.DataFrame, fits: pd.DataFrame):
    """Measured latency against size per channel (log-log) with the piecewise Hockney lines."""
    channels = list(dict.fromkeys(fits["channel"]))
    fig, axes = plt.subplots(1, len(channels), figsize=(4 * len(channels), 4), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, ch in zip(axes[0], channels):
        d = pt2pt[(pt2pt["channel"] == ch) & pt2pt["avg"].notna()]
        med = d[~d["outlier"]].groupby("size")["avg"].agg(["median", "min", "max"])
        ax.fill_between(med.index, med["min"], med["max"], color=CHANNEL_PALETTE.get(ch, "grey"), alpha=0.2,
                        label="measured min-max")
        ax.plot(med.index, med["median"], "o", ms=3, color=CHANNEL_PALETTE.get(ch, "grey"), label="measured median")
        grid = np.unique(np.geomspace(max(1, d["size"].min()), d["size"].max(), 200).round())
        ax.plot(grid, t_p2p(fits, ch, grid), "-", color="k", lw=1, label="Hockney fit")
        for b in fits.loc[fits["channel"] == ch, "size_max"].to_numpy()[:-1]:
            ax.axvline(b, ls=":", color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(ch)
        ax.set_xlabel("message size [B]")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("latency [µs]")
    axes[0][0].legend(loc="upper left", fontsize=8)
    fig.suptitle("Hockney model T = α + β·m per channel and regime (dotted: regime breaks)")
    return fig


def gamma_heatmaps(gamma: pd.DataFrame, operation: str, channels: list[str]):
    """gamma(P, m) per channel (columns, config order) for the avg and max targets (rows), log colour scale."""
    from matplotlib.colors import LogNorm

    g = gamma[gamma["operation"] == operation]
    channels = [c for c in channels if c in set(g["channel"])]
    targets = list(dict.fromkeys(g["target"]))
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
                                 piv.to_numpy(), norm=norm, cmap="viridis", shading="flat")
            xt = np.linspace(0, piv.shape[1] - 1, min(6, piv.shape[1])).astype(int)
            ax.set_xticks(xt + 0.5, piv.columns[xt])
            yt = np.arange(0, piv.shape[0], 4)
            ax.set_yticks(yt + 0.5, [f"{int(s)}" for s in piv.index[yt]])
            ax.set_xlabel("P [processes]")
            if j == 0:
                ax.set_ylabel("message size [B]")
            ax.set_title(f"{ch} channel, {target}")
    fig.colorbar(mesh, ax=axes, label="γ̂(P, m) = T_NBFT / T_p2p [1]", shrink=0.8)
    fig.text(0.01, 0.0, "white: P not measured or every row at that P flagged as outlier", fontsize=8)
    fig.suptitle(f"NBFT parallelisation factor, {operation} (eq. 7)")
    return fig
