"""What every figure shares: matplotlib without a display, the colours of channels and models, P
ticks, log-scale helpers, and :func:`save` (PNG and PDF, atomically)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from collat.ingest.tidy import atomic_write  # noqa: E402

CHANNEL_PALETTE = {"cache": "#4c72b0", "core": "#55a868", "socket": "#dd8452", "node": "#c44e52"}


MODEL_COLOURS = {"measured": "#333333", "paper": "#1f77b4", "openmpi": "#d62728", "segmented": "#2ca02c",
                 "nearest_neighbour": "#8c564b", "calibrated": "#9467bd", "hybrid": "#ff7f0e"}


DPI = 150  # the PNGs' resolution (and the PDFs' for their raster parts)


def note_figure(text: str):
    """A figure that says why there is nothing to draw (a user's data may lack a size or an
    operation a figure is asked for), instead of an empty grid or a crash."""
    fig = plt.figure(figsize=(7, 1.2))
    fig.text(0.5, 0.5, text, ha="center", va="center")
    return fig


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
    # no creation date: two runs of the same data write the same bytes
    atomic_write(pdf, lambda tmp: fig.savefig(tmp, format="pdf", dpi=DPI, bbox_inches=box,
                                              metadata={"CreationDate": None}))
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


def round_ticks(values: np.ndarray, most: int = 6) -> np.ndarray:
    """Positions of round values (multiples of a power of two, plus the first) among sorted ``values``."""
    step = 1
    while len(values) and values[-1] // step > most:
        step *= 2
    pos = [0] + [i for i, v in enumerate(values) if v % step == 0 and v >= values[0] + step // 2]
    return np.array(sorted(set(pos)), dtype=int)


def bytes_label(m: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if m >= scale:
            return f"{m / scale:g} {unit}"
    return f"{m:g} B"


def edges(centres: np.ndarray) -> np.ndarray:
    """Cell edges for log-spaced centres (geometric midpoints)."""
    c = np.asarray(centres, float)
    if c.size == 1:
        return np.array([c[0] / 2 ** 0.5, c[0] * 2 ** 0.5])
    mid = np.sqrt(c[1:] * c[:-1])
    return np.concatenate([[c[0] ** 2 / mid[0]], mid, [c[-1] ** 2 / mid[-1]]])


def same_limits(axes, names: str = "x") -> None:
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


def positive(values: pd.Series) -> np.ndarray:
    """Values for a log axis: non-positive model predictions are left out (a gap), not drawn as a plunge."""
    v = values.to_numpy(dtype=float)
    return np.where(v > 0, v, np.nan)


def annotated_cells(ax, table: pd.DataFrame, cmap: str, vmin: float, vmax: float) -> None:
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
