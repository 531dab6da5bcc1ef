"""Figures of the point-to-point and NBFT stages (seaborn; PNG and PDF; units on every axis).

seaborn (and the scipy.stats it loads, about a second) is imported by the figures that draw with it
only: the figure jobs that do not draw with it do not pay for it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator, NullLocator  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .hockney import t_p2p  # noqa: E402
from .tidy import atomic_write  # noqa: E402

CHANNEL_PALETTE = {"cache": "#4c72b0", "core": "#55a868", "socket": "#dd8452", "node": "#c44e52"}


DPI = 150  # the PNGs' resolution (and the PDFs' for their raster parts)


def p_ticks() -> MaxNLocator:
    """Ticks of a P axis: matplotlib's automatic ones (its AutoLocator's bins and steps), whole
    numbers only (a machine of 16 cores would read 2.5, 5.0, 7.5)."""
    return MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10], integer=True)


def save(fig, png_path) -> None:
    """Write ``png_path`` and the PDF beside it, atomically, both cropped to the figure's tight box.

    The figure is laid out and rendered once, at the PNG's resolution; the box is measured on that
    drawing and the layout engine is then switched off, so that the PDF lays nothing out again. When
    nothing is drawn beyond the figure's edges the PNG is that rendering cut to the box (to whole
    pixels; the padding beyond the edges in the figure's face colour), otherwise (a legend beyond
    the edge) it is rendered again on a canvas the size of the box. A render is a third of a figure
    job's time, and "tight" would take two per format."""
    png, pdf = str(png_path), str(png_path)[:-4] + ".pdf"
    fig.set_dpi(DPI)
    fig.canvas.draw()  # Agg: layout and pixels
    tight = fig.get_tightbbox(fig.canvas.get_renderer())
    pad = tight.padded(plt.rcParams["savefig.pad_inches"])  # to whole pixels, outwards:
    box = Bbox(np.c_[np.floor(pad.min * DPI), np.ceil(pad.max * DPI)].T / DPI)
    fig.set_layout_engine(None)  # not "none": a placeholder engine makes savefig lay out (draw) again
    width, height = fig.get_size_inches()
    if tight.x0 >= 0 and tight.y0 >= 0 and tight.x1 <= width and tight.y1 <= height:
        atomic_write(png, lambda tmp: plt.imsave(tmp, _cut(fig, box), format="png", dpi=DPI))
    else:
        atomic_write(png, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, bbox_inches=box))
    atomic_write(pdf, lambda tmp: fig.savefig(tmp, format="pdf", dpi=DPI, bbox_inches=box))
    plt.close(fig)


def _cut(fig, box) -> np.ndarray:
    """The rendered figure's pixels in ``box`` (inches, origin bottom left, on whole pixels), the
    part of the box beyond the figure's edges in the figure's face colour."""
    pixels = np.asarray(fig.canvas.buffer_rgba())
    rows, cols = pixels.shape[:2]
    left, right, low, high = (int(round(v * DPI)) for v in (box.x0, box.x1, box.y0, box.y1))
    top, bottom = rows - high, rows - low  # rows from the top
    face = np.round(np.array(matplotlib.colors.to_rgba(fig.get_facecolor())) * 255).astype(np.uint8)
    out = np.empty((bottom - top, right - left, 4), dtype=np.uint8)
    out[:] = face
    r0, r1, c0, c1 = max(top, 0), min(bottom, rows), max(left, 0), min(right, cols)
    out[r0 - top:r1 - top, c0 - left:c1 - left] = pixels[r0:r1, c0:c1]
    return out


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
    channels = [c for c in channels if c in set(g["channel"].unique())]
    targets = list(dict.fromkeys(g["target"]))
    if not channels or not targets:  # nothing measured: say so instead of an empty grid
        fig = plt.figure(figsize=(6, 1.2))
        fig.text(0.5, 0.5, f"no NBFT measurement of {operation}: its fan-outs are priced with the line assumed by\n"
                 "nbft.unmeasured_slope (method 'assumed' in results/nbft/fits.csv)", ha="center", va="center")
        return fig
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
            xt = _round_ticks(piv.columns.to_numpy())
            ax.set_xticks(xt + 0.5, piv.columns[xt])
            yt = np.arange(0, piv.shape[0], 4)
            ax.set_yticks(yt + 0.5, [f"{int(s)}" for s in piv.index[yt]])
            ax.set_xlabel("P [processes]")
            if j == 0:
                ax.set_ylabel("message size [B]")
            ax.set_title(f"{ch} channel, {target}")
    fig.colorbar(mesh, ax=axes, label="γ̂(P, m) = T_NBFT / T_p2p [1]", shrink=0.8)
    fig.supxlabel("white: P not measured, or every row at that P flagged as an outlier", fontsize=8, x=0.01,
                  ha="left")
    fig.suptitle(f"NBFT parallelisation factor, {operation} (study eq. 7)")
    return fig


def _round_ticks(values: np.ndarray, most: int = 6) -> np.ndarray:
    """Positions of round values (multiples of a power of two, plus the first) among sorted ``values``."""
    step = 1
    while len(values) and values[-1] // step > most:
        step *= 2
    pos = [0] + [i for i, v in enumerate(values) if v % step == 0 and v >= values[0] + step // 2]
    return np.array(sorted(set(pos)), dtype=int)


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
        params = "" if d.empty else f"\nα = {d['alpha_us'].iloc[0]:.2f} µs, β = {d['bandwidth_GBps'].iloc[0]:.1f} GB/s"
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
    fig.suptitle(f"Partitioned-communication gain, N = {threads} threads, delay model '{delay}'")
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
            ax.plot(t["theta"], t["eta"], "o-", color=palette[m], ms=3, lw=1.4, label=f"{_bytes(m)}")
            ax.plot(t["theta"], t["eta_eq4"], "--", color=palette[m], lw=0.8)
        _finish_gain_panel(ax, link, "partitions per thread θ")
    axes[0].set_ylabel("gain η = T_bulk / T_pipelined")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette[m], marker="o", ms=4, lw=1.4) for m in sizes] + [
        Line2D([], [], color="#555555", lw=0.9, ls="--")]
    labels = [f"total {_bytes(m)}" for m in sizes] + ["Gillis eq. 4 (no latency)"]
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=9)
    fig.suptitle(f"Gain against partitions per thread, N = {threads} threads, delay model '{delay}'")
    return fig


def _bytes(m: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if m >= scale:
            return f"{m / scale:g} {unit}"
    return f"{m:g} B"


def partitioned_heatmap(gain: pd.DataFrame, crossover: pd.DataFrame, threads: int, delay: str):
    """eta over (theta, total size) per link on a log colour scale centred on 1; break-even sizes marked."""
    from matplotlib.colors import TwoSlopeNorm

    g = gain[(gain["threads"] == threads) & (gain["delay"] == delay)]
    c = crossover[(crossover["threads"] == threads) & (crossover["delay"] == delay)]
    names = _link_order(g)
    log_eta = np.log10(g["eta"].to_numpy())
    norm = TwoSlopeNorm(vcenter=0.0, vmin=min(float(np.nanmin(log_eta)), -1e-3), vmax=max(float(np.nanmax(log_eta)), 1e-3))
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.0), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, link in zip(axes[0], names):
        d = g[g["link"] == link].pivot_table(index="theta", columns="size", values="eta")
        sizes, thetas = d.columns.to_numpy(float), d.index.to_numpy(float)
        mesh = ax.pcolormesh(_edges(sizes), _edges(thetas), np.log10(d.to_numpy()), norm=norm, cmap="RdBu",
                             shading="flat")
        x = c[c["link"] == link].sort_values("theta")
        ok = np.isfinite(x["crossover_size"]) & (x["crossover_size"] > 0)
        ax.plot(x.loc[ok, "crossover_size"], x.loc[ok, "theta"], "k^-", ms=4, lw=1, label="break-even (η = 1)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlim(_edges(sizes)[[0, -1]])
        ax.set_title(link, fontsize=9)
        ax.set_xlabel("total message size [B]")
    axes[0][0].set_ylabel("partitions per thread θ")
    axes[0][0].legend(loc="upper left", fontsize=8)
    bar = fig.colorbar(mesh, ax=axes[0].tolist(), label="gain η (blue: pipelining pays)")
    ticks = [t for t in (0.01, 0.03, 0.1, 0.3, 1, 1.5, 2, 3, 5, 10, 30, 100)
             if norm.vmin <= np.log10(t) <= norm.vmax]
    bar.set_ticks(np.log10(ticks), labels=[f"{t:g}" for t in ticks])
    fig.suptitle(f"Partitioned-communication gain over (θ, size), N = {threads} threads, delay model '{delay}'")
    return fig


def _edges(centres: np.ndarray) -> np.ndarray:
    """Cell edges for log-spaced centres (geometric midpoints)."""
    c = np.asarray(centres, float)
    if c.size == 1:
        return np.array([c[0] / 2 ** 0.5, c[0] * 2 ** 0.5])
    mid = np.sqrt(c[1:] * c[:-1])
    return np.concatenate([[c[0] ** 2 / mid[0]], mid, [c[-1] ** 2 / mid[-1]]])


MODEL_COLOURS = {"measured": "#333333", "paper": "#1f77b4", "openmpi": "#d62728", "segmented": "#2ca02c",
                 "nearest_neighbour": "#8c564b", "calibrated": "#9467bd", "hybrid": "#ff7f0e"}


def collective_grid(collective: pd.DataFrame, model_pred: pd.DataFrame, reg_pred: pd.DataFrame, operation: str,
                    size: int, mappings: list[str], algorithms: list[dict], boundaries: dict, machine: str):
    """The study's Figures 3 and 4, per operation: latency against P, rows algorithms, columns mappings.

    Points: measured avg (median over runs); band: min..max over ranks (OSU -f); lines: the
    point-to-point model in paper mode (avg), openmpi mode (completion time, compare with the top
    of the band) and calibrated mode (avg), and the segmented model (study eq. 12, avg). Dotted verticals: a new socket or node
    starts to fill under that mapping.
    """
    c = collective[(collective["operation"] == operation) & (collective["size"] == size) & ~collective["outlier"]]
    algs = [a for a in algorithms if a["id"] in set(c["algorithm"])]
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
            for mode, target, style, label in (("paper", "avg", "-", "p2p model, paper mode (avg)"),
                                               ("openmpi", "max", "-", "p2p model, openmpi mode (completion)"),
                                               ("calibrated", "avg", "-.", "p2p model, calibrated mode (avg; fitted "
                                                "on every collective cell)")):
                line = m[(m["mode"] == mode) & (m["target"] == target)].sort_values("P")
                if len(line) and line["predicted"].notna().any():
                    ax.plot(line["P"], _positive(line["predicted"]), style, lw=1.3, color=MODEL_COLOURS[mode],
                            label=label)
            r = reg_pred[(reg_pred["operation"] == operation) & (reg_pred["algorithm"] == alg["id"])
                         & (reg_pred["mapping"] == mapping) & (reg_pred["size"] == size)
                         & (reg_pred["target"] == "avg") & (reg_pred["run"] == -1)].sort_values("P")
            if len(r):
                ax.plot(r["P"], _positive(r["predicted"]), "--", lw=1.3, color=MODEL_COLOURS["segmented"],
                        label="segmented linear model (avg; not drawn where the fit is ≤ 0)")
            for b in boundaries.get(mapping, []):
                ax.axvline(b, ls=":", lw=0.8, color="grey")
            ax.set_yscale("log")
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
    _same_limits(axes.ravel(), "x")
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


def _same_limits(axes, names: str = "x") -> None:
    """One range per axis of ``names`` ("x", "y" or "xy") on every panel of ``axes``, as shared axes
    would autoscale it: the union of the panels' data, widened by the default margins in the axis'
    scale (log axes in log space), without sharing the axes: the same pixels, and a figure job of 15
    or 25 panels about 0.3 s faster (measured in alternated pairs; why sharing costs that, not
    traced). For panels of the first one's scale and no sticky edges (no images, bars or histograms)."""
    for name in names:
        transform = getattr(axes[0], f"{name}axis").get_transform()
        ends = np.array([getattr(ax.dataLim, f"interval{name}") for ax in axes], dtype=float)
        lo, hi = transform.transform([ends[:, 0].min(), ends[:, 1].max()])
        pad = plt.rcParams[f"axes.{name}margin"] * (hi - lo)
        limits = transform.inverted().transform([lo - pad, hi + pad])
        for ax in axes:
            getattr(ax, f"set_{name}lim")(*limits)


def _positive(values: pd.Series) -> np.ndarray:
    """Values for a log axis: non-positive model predictions are left out (a gap), not drawn as a plunge."""
    v = values.to_numpy(dtype=float)
    return np.where(v > 0, v, np.nan)


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
    names = {a["id"]: f"{a['name']} ({a['id']})" for a in algorithms}
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols + 1.2, 3.3 * nrows), squeeze=False,
                             layout="constrained")
    flat = axes.ravel()
    for k, (ax, (title, g, col)) in enumerate(zip(flat, panels)):
        pivot = g.pivot_table(index="algorithm", columns="mapping", values=col, dropna=False)
        rows = [a["id"] for a in algorithms if a["id"] in set(ms["algorithm"]) | set(rs["algorithm"])]
        pivot = pivot.reindex(index=rows, columns=mappings)  # same rows in every panel; blank = not modelled
        pivot.index = [names.get(i, str(i)) for i in pivot.index]
        _annotated_cells(ax, pivot, "RdYlGn", -1.0, 1.0)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("mapping" if k // ncols == nrows - 1 else "")
        ax.set_ylabel("")
        ax.tick_params(axis="y", labelrotation=0, labelleft=k % ncols == 0)
    for ax in flat[len(panels):]:
        ax.set_axis_off()
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    fig.colorbar(ScalarMappable(Normalize(-1, 1), cmap="RdYlGn"), ax=axes, shrink=0.7,
                 label="R² (colour clipped to [−1, 1]; the numbers are the true R²)")
    fig.suptitle(f"MPI_{operation.capitalize()}: R² at {size} B, robust cleaning; blank: not modelled or not measured",
                 fontsize=10)
    return fig


def _annotated_cells(ax, table: pd.DataFrame, cmap: str, vmin: float, vmax: float) -> None:
    """A heat map of ``table`` (rows top to bottom) on ``ax``, colours clipped to [vmin, vmax], each
    cell labelled with its true value (2 decimals; NaN blank), in white on dark cells. Matplotlib
    directly: seaborn's heatmap draws the whole figure once per call to check its tick labels,
    which made a 9-panel figure cost 9 full layouts (8 of its 9 s)."""
    from matplotlib.colors import Normalize

    values = table.to_numpy(dtype=float)
    norm, colours = Normalize(vmin, vmax), plt.get_cmap(cmap)
    ax.pcolormesh(np.ma.masked_invalid(np.clip(values, vmin, vmax)), cmap=colours, norm=norm,
                  edgecolors="white", linewidth=0.5)
    ax.set_xlim(0, values.shape[1])
    ax.set_ylim(values.shape[0], 0)
    ax.set_xticks(np.arange(values.shape[1]) + 0.5, [str(c) for c in table.columns])
    ax.set_yticks(np.arange(values.shape[0]) + 0.5, [str(i) for i in table.index])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for (i, j), v in np.ndenumerate(values):
        if np.isnan(v):
            continue
        r, g, b, _ = colours(norm(np.clip(v, vmin, vmax)))
        dark = 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.408  # relative luminance (sRGB weights)
        ax.text(j + 0.5, i + 0.5, f"{v:.2f}", ha="center", va="center", fontsize=9,
                color="white" if dark else "black")


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


def best_algorithm_maps(cells: pd.DataFrame, operation: str, mappings: list[str], algorithms: list[dict]):
    """Best algorithm over (P, size): the model's pick (among the measured algorithms and, if it was
    a candidate, OpenMPI's default) beside the measured best, one row per mapping; cells where not
    every algorithm was measured are blank. Colours: Set2 (seaborn's palette of that name is
    matplotlib's colours in turn; taken from matplotlib, this job, the run's last, does not import
    seaborn and the scipy.stats it loads: a second)."""
    from matplotlib.colors import BoundaryNorm, ListedColormap

    c = cells[cells["operation"] == operation]
    ids = sorted({a["id"] for a in algorithms} & (set(c["measured_best"]) | set(c["predicted_best"])))
    picked_by = (f"{c['mode'].iloc[0]} mode, its {c['target'].iloc[0]} prediction"
                 if {"mode", "target"} <= set(c.columns) and len(c) else "the model")
    set2 = plt.get_cmap("Set2").colors
    colours = [set2[i % len(set2)] for i in range(len(ids))]
    cmap = ListedColormap(colours)
    norm = BoundaryNorm(np.arange(len(ids) + 1) - 0.5, len(ids))
    code = {a: i for i, a in enumerate(ids)}
    names = {a["id"]: f"{a['name']} ({a['id']})" for a in algorithms}
    fig, axes = plt.subplots(len(mappings), 2, figsize=(10, 2.8 * len(mappings)), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    for i, mapping in enumerate(mappings):
        d = c[c["mapping"] == mapping]
        for j, (col, title) in enumerate((("predicted_best", f"model's pick ({picked_by})"),
                                          ("measured_best", "measured best forced algorithm (median over runs)"))):
            ax = axes[i][j]
            if d.empty:
                ax.set_axis_off()
                continue
            grid = d.pivot_table(index="size", columns="P", values=col, aggfunc="first")
            values = grid.apply(lambda s: s.map(code)).to_numpy(dtype=float)
            ax.pcolormesh(_edges(grid.columns.to_numpy(float)), _edges(grid.index.to_numpy(float)),
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
    labels = [names.get(a, str(a)) for a in ids] + ["not every forced algorithm measured (not scored)"]
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8)
    fig.suptitle(f"MPI_{operation.capitalize()}: fastest algorithm over (P, size)", fontsize=10)
    return fig


def validation_scatter(table: pd.DataFrame, floor: float, per_panel: int = 3000, seed: int = 0):
    """Predicted against measured on the test part of each split (columns), per model (rows), log-log,
    with the noise-floor band around the diagonal (narrower than the line over these decades: the
    dotted lines at twice and half the measured give the scale) and the panel's median relative error. The paper
    mode is left out: its segment counts were tuned on all of this data (validation.csv keeps it)."""
    from .validation import SPLITS

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
    for i, model in enumerate(models):
        for j, split in enumerate(SPLITS):
            ax = axes[i][j]
            d = panels.get((model, split), empty)
            ax.fill_between(line, line * (1 - floor), line * (1 + floor), color="#999999", alpha=0.5, lw=0)
            ax.plot(line, line, "-", color="k", lw=0.8)
            for factor in (0.5, 2.0):  # a scale the eye can read: the floor's band is thinner than the line
                ax.plot(line, line * factor, ":", color="k", lw=0.7)
            if len(d):
                s = d.sample(min(per_panel, len(d)), random_state=seed)
                ax.scatter(s["measured"], s["predicted"], s=2, alpha=0.25, color=MODEL_COLOURS.get(model, "#8c564b"),
                           rasterized=True, lw=0)
                err = float(np.median(np.abs(d["predicted"] - d["measured"]) / d["measured"]))
                ax.text(0.04, 0.95, f"median rel. error {err:.2f} (all points)\n{len(d)} cells", transform=ax.transAxes,
                        va="top", fontsize=7)
            else:
                ax.text(0.95, 0.05, "cannot predict", transform=ax.transAxes, ha="right", fontsize=8, color="grey")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.minorticks_off()  # decades only: the minor ticks of 25 small panels cost most of the drawing
            if i == 0:
                ax.set_title(split.replace("_", " "), fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{model.replace('_', ' ')}\npredicted avg [µs]")
            if i == len(models) - 1:
                ax.set_xlabel("measured avg [µs]")
            ax.tick_params(labelbottom=i == len(models) - 1, labelleft=j == 0)
    _same_limits(axes.ravel(), "xy")
    fig.suptitle("Predictions outside the fitted data (test parts, target avg); dotted: x2 and /2 the measured; "
                 f"the noise floor (± {floor:.3f}, a grey band) is thinner than the diagonal at this scale", fontsize=10)
    return fig
