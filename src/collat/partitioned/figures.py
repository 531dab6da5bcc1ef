"""Figures of the partitioned stage: the gain against size and partitions per thread, and over both."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from collat.figures.style import bytes_label, edges


def _link_order(gain: pd.DataFrame) -> list[str]:
    """Configured links first, then the measured channels in the order they were computed."""
    return list(dict.fromkeys(gain.sort_values("source", kind="stable")["link"]))


def _link_panels(names: list[str]):
    """One log-log panel per link, sharing the gain axis."""
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.2), sharey=True, squeeze=False,
                             layout="constrained")
    return fig, axes[0]


def _finish_gain_panel(ax, title: str, xlabel: str) -> None:
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3, which="both")


def partitioned_vs_size(gain: pd.DataFrame, crossover: pd.DataFrame, threads: int, delay: str, thetas: list[int]):
    """eta against total message size, one panel per link, one colour per theta.

    Solid: the unified gain (latency and delay); dashed: Gillis eq. 4 (no latency); dotted: Gillis eq. 5
    (no delay); markers: the break-even size where eta = 1.
    """
    import seaborn as sns

    g = gain[(gain["threads"] == threads) & (gain["delay"] == delay) & gain["theta"].isin(thetas)]
    c = crossover[(crossover["threads"] == threads) & (crossover["delay"] == delay) & crossover["theta"].isin(thetas)]
    names = _link_order(g)
    palette = dict(zip(thetas, sns.color_palette("viridis", len(thetas))))
    fig, axes = _link_panels(names)
    for ax, link in zip(axes, names):
        d = g[g["link"] == link]
        for th in thetas:
            t = d[d["theta"] == th].sort_values("size")
            col = palette[th]
            ax.plot(t["size"], t["eta"], "-", color=col, lw=1.6, label=f"θ = {th}")
            ax.plot(t["size"], t["eta_eq4"], "--", color=col, lw=0.8)
            ax.plot(t["size"], t["eta_eq5"], ":", color=col, lw=0.8)
            x = c[(c["link"] == link) & (c["theta"] == th)]["crossover_size"]
            if len(x) and np.isfinite(x.iloc[0]) and x.iloc[0] > 0:
                ax.plot([x.iloc[0]], [1.0], "o", color=col, ms=6, mec="k")
        params = "" if d.empty else (f"\nα = {d['alpha_us'].iloc[0]:.2f} µs, 1/β = {d['bandwidth_GBps'].iloc[0]:.1f} GB/s"
                                     + (" (α: smallest sizes, 1/β: largest)" if d["source"].iloc[0] == "pt2pt" else ""))
        _finish_gain_panel(ax, link + params, "total message size [B]")
    axes[0].set_ylabel("gain η = T_bulk / T_pipelined")
    from matplotlib.lines import Line2D

    grey = "#555555"
    handles = [Line2D([], [], color=palette[th], lw=2) for th in thetas] + [
        Line2D([], [], color=grey, lw=1.6, ls="-"), Line2D([], [], color=grey, lw=0.9, ls="--"),
        Line2D([], [], color=grey, lw=0.9, ls=":"), Line2D([], [], color=grey, marker="o", mec="k", ls="")]
    labels = [f"θ = {th} partitions per thread" for th in thetas] + [
        "with latency and delay (unified)", "Gillis eq. 4 (no latency)", "Gillis eq. 5 (no delay)", "break-even, η = 1"]
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=9)
    fig.suptitle(f"Partitioned-communication gain, N = {threads} threads, delay model '{delay}'\n"
                 "steps: a partition (or the whole message) crosses a regime break of the channel's Hockney fit",
                 fontsize=10)
    return fig


def partitioned_vs_theta(gain: pd.DataFrame, threads: int, delay: str, sizes: list[int]):
    """eta against partitions per thread, one panel per link, one colour per total message size."""
    import seaborn as sns

    g = gain[(gain["threads"] == threads) & (gain["delay"] == delay) & gain["size"].isin(sizes)]
    names = _link_order(g)
    palette = dict(zip(sizes, sns.color_palette("rocket", len(sizes))))
    fig, axes = _link_panels(names)
    for ax, link in zip(axes, names):
        d = g[g["link"] == link]
        for m in sizes:
            t = d[d["size"] == m].sort_values("theta")
            ax.plot(t["theta"], t["eta"], "o-", color=palette[m], ms=3, lw=1.4, label=f"{bytes_label(m)}")
            ax.plot(t["theta"], t["eta_eq4"], "--", color=palette[m], lw=0.8)
        _finish_gain_panel(ax, link, "partitions per thread θ")
    axes[0].set_ylabel("gain η = T_bulk / T_pipelined")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette[m], marker="o", ms=4, lw=1.4) for m in sizes] + [
        Line2D([], [], color="#555555", lw=0.9, ls="--")]
    labels = [f"total {bytes_label(m)}" for m in sizes] + ["Gillis eq. 4 (no latency)"]
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=9)
    fig.suptitle(f"Gain against partitions per thread, N = {threads} threads, delay model '{delay}'")
    return fig


def partitioned_heatmap(gain: pd.DataFrame, crossover: pd.DataFrame, threads: int, delay: str):
    """eta over (theta, total size) per link on a log colour scale centred on 1, symmetric (a gain of 2 and
    a loss of 2 take colours equally strong); break-even sizes marked."""
    from matplotlib.colors import Normalize

    g = gain[(gain["threads"] == threads) & (gain["delay"] == delay)]
    c = crossover[(crossover["threads"] == threads) & (crossover["delay"] == delay)]
    names = _link_order(g)
    log_eta = np.log10(g["eta"].to_numpy())
    reach = max(float(np.nanmax(np.abs(log_eta))), 1e-3)  # decades from 1, the same on both sides
    norm = Normalize(vmin=-reach, vmax=reach)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.0), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, link in zip(axes[0], names):
        d = g[g["link"] == link].pivot_table(index="theta", columns="size", values="eta")
        sizes, thetas = d.columns.to_numpy(float), d.index.to_numpy(float)
        mesh = ax.pcolormesh(edges(sizes), edges(thetas), np.log10(d.to_numpy()), norm=norm, cmap="RdBu",
                             shading="flat")
        x = c[c["link"] == link].sort_values("theta")
        ok = np.isfinite(x["crossover_size"]) & (x["crossover_size"] > 0)
        ax.plot(x.loc[ok, "crossover_size"], x.loc[ok, "theta"], "k^-", ms=4, lw=1, label="break-even (η = 1)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlim(edges(sizes)[[0, -1]])
        ax.set_title(link, fontsize=9)
        ax.set_xlabel("total message size [B]")
    axes[0][0].set_ylabel("partitions per thread θ")
    axes[0][0].legend(loc="upper left", fontsize=8)
    bar = fig.colorbar(mesh, ax=axes[0].tolist(), label="gain η, log scale (blue: pipelining pays; red: it costs)")
    ticks = [t for t in (0.001, 0.01, 0.1, 0.5, 1, 2, 10, 100, 1000)
             if norm.vmin <= np.log10(t) <= norm.vmax]
    bar.set_ticks(np.log10(ticks), labels=[f"{t:g}" for t in ticks])
    fig.suptitle(f"Partitioned-communication gain over (θ, size), N = {threads} threads, delay model '{delay}'")
    return fig
