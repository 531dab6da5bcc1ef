"""Figures of the pt2pt stage: latency per receiving core (the study's Figure 2) and the Hockney fits."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from collat.pt2pt.hockney import t_p2p
from collat.figures.style import CHANNEL_PALETTE, bytes_label


def latency_per_receiver(pt2pt: pd.DataFrame, size: int, machine: str):
    """The study's Figure 2: latency of one message from core 0 to each receiving core, per channel."""
    import seaborn as sns

    d = pt2pt[pt2pt["size"] == size].copy()
    by_receiver = d["receiver"].notna().all() and len(d)
    x = "receiver" if by_receiver else "run"
    d[x] = d[x].astype(int)
    fig, ax = plt.subplots(figsize=(9, 4))
    order = [c for c in CHANNEL_PALETTE if c in set(d["channel"].unique())] + sorted(set(d["channel"].unique()) - set(CHANNEL_PALETTE))
    sns.scatterplot(data=d[~d["outlier"]], x=x, y="avg", hue="channel", hue_order=order,
                    palette=CHANNEL_PALETTE, s=18, ax=ax, edgecolor="none")
    if d["outlier"].any():
        ax.scatter(d.loc[d["outlier"], x], d.loc[d["outlier"], "avg"], marker="x", c="k", s=20,
                   label="flagged outlier")
    ax.set_xlabel("receiving core (sender on core 0; node channel: core id on the other node)" if by_receiver
                  else "run (receiving core not recorded)")
    ax.set_ylabel(f"osu_latency at {size} B [µs]")
    ax.set_title(f"Point-to-point latency per receiving core, {machine}" if by_receiver
                 else f"Point-to-point latency per run, {machine}")
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
        regimes = fits[fits["channel"] == ch].sort_values("regime")
        for k, (_, r) in enumerate(regimes.iterrows()):  # each line over its own regime's sizes: no jump drawn
            lo, hi = max(1, r["size_min"], d["size"].min()), min(r["size_max"], d["size"].max())
            grid = np.unique(np.geomspace(lo, hi, 100).round())
            ax.plot(grid, t_p2p(fits, ch, grid), "-", color="k", lw=1, label="Hockney fit" if k == 0 else None)
        for b in regimes["size_max"].to_numpy()[:-1]:
            ax.axvline(b, ls=":", color="grey", lw=0.8)
        switch = regimes["switch"].iloc[0] if "switch" in regimes and len(regimes) else np.nan
        later = np.sort(d.loc[d["size"] > switch, "size"].unique()) if np.isfinite(switch) else []
        if len(later):  # between the switch and the next measured size (collat.pt2pt.hockney.protocol_switch)
            ax.axvline(np.sqrt(switch * later[0]), ls="--", color="tab:red", lw=0.9,
                       label=f"protocol switch (after {bytes_label(switch)})")
        ax.set_title(ch + "".join(f"\n{_regime_label(r)}" for _, r in regimes.iterrows()), fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size [B]")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("latency [µs]")
    for ax in axes[0]:
        ax.legend(loc="upper left", fontsize=7)
    fig.suptitle("Hockney model T = α + β·m per channel and regime (β: time per byte; 1/β: bandwidth; dotted: "
                 "regime breaks; dashed: the protocol switch; each line drawn over its regime's sizes)"
                 + ("\nα < 0: the regime's line crosses zero below its sizes; it is an intercept there, not a latency"
                    if (fits["alpha_us"] < 0).any() else "")
                 + ("\nheld at 0: the free line's α was negative, so the line was fitted through the origin"
                    if fits.get("alpha_at_bound", pd.Series(False)).any() else ""), fontsize=10)
    return fig


def _regime_label(r) -> str:
    """One regime's line in words: its sizes, α and bandwidth 1/β; a negative α is named as what it is."""
    sizes = f"{bytes_label(r['size_min'])}-{bytes_label(r['size_max'])}"
    alpha = f"α = {r['alpha_us']:.2f} µs" + (" (< 0)" if r["alpha_us"] < 0 else
                                             " (held at 0)" if r.get("alpha_at_bound", False) else "")
    return f"{sizes}: {alpha}, 1/β = {r['bandwidth_GBps']:.1f} GB/s"
