"""Piecewise Hockney model of point-to-point latency per channel (study eq. 5) and channel ratios Q (study eq. 10).

T_p2p^c(m) = alpha^c_r + beta^c_r * m within regime r, the regimes separated by size
breaks (a protocol switch: eager/rendezvous, the ORFEO intra-node drop between
128 KiB and 256 KiB). A break b puts sizes <= b in the lower regime, as the study's
dummy "above 2^17 B" did. Each channel's protocol switch is found apart from the breaks
(:func:`protocol_switch`): it gives the model's eager limit where no NBFT reduce run does.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

FIT_COLUMNS = ["channel", "regime", "size_min", "size_max", "alpha_us", "alpha_se", "beta_us_per_byte",
               "beta_se", "bandwidth_GBps", "r2", "n", "alpha_at_bound", "switch", "switch_jump"]


def ols_line(x: np.ndarray, y: np.ndarray, relative: bool = False) -> dict:
    """Least squares of y = a + b x with standard errors (statsmodels).

    ``relative=True`` weighs each point by 1/y^2 (WLS): relative errors count alike
    at 1 B and at 4 MiB, so alpha stays the small-message latency. Plain OLS (the
    study's choice) lets the largest sizes set alpha.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(np.unique(x)) < 2:
        raise ValueError("a line needs at least two distinct x values")
    from statsmodels.regression.linear_model import OLS, WLS  # here: the figure jobs import this module too

    X = np.column_stack([np.ones(len(x)), x])
    res = WLS(y, X, weights=1.0 / np.maximum(y, 1e-12) ** 2).fit() if relative else OLS(y, X).fit()
    a, b = res.params
    sa, sb = res.bse
    pred = a + b * x
    r2 = float(1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)) if np.var(y) > 0 else 1.0
    return {"a": float(a), "b": float(b), "a_se": float(sa), "b_se": float(sb), "r2": r2, "n": int(len(x))}


def origin_line(x: np.ndarray, y: np.ndarray, relative: bool = False) -> dict:
    """Least squares of y = b x (the intercept held at 0), with the same weights and outputs as
    :func:`ols_line` (``a`` = 0 and its standard error 0: it sits at its bound)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = 1.0 / np.maximum(y, 1e-12) ** 2 if relative else np.ones_like(y)
    b = float(np.sum(w * x * y) / np.sum(w * x * x))
    dof = max(len(x) - 1, 1)
    sb = float(np.sqrt(np.sum(w * (y - b * x) ** 2) / dof / np.sum(w * x * x)))
    pred = b * x
    r2 = float(1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)) if np.var(y) > 0 else 1.0
    return {"a": 0.0, "b": b, "a_se": 0.0, "b_se": sb, "r2": r2, "n": int(len(x))}


def regimes(sizes: np.ndarray, breaks: list[int]) -> np.ndarray:
    """Regime index of each size: the number of breaks strictly below it."""
    return np.searchsorted(np.sort(np.asarray(breaks)), np.asarray(sizes), side="left")


def fit_channel(size: np.ndarray, latency: np.ndarray, breaks: list[int], relative: bool = False,
                nonnegative: bool = True) -> list[dict]:
    """Hockney fit (study eq. 5) of one channel, one least-squares line per regime. With
    ``nonnegative`` a regime whose free line has a negative α (a latency below zero: the line of a
    regime above a protocol switch crosses zero below its sizes) is fitted again with α held at 0,
    and flagged (``alpha_at_bound``)."""
    size = np.asarray(size)
    reg = regimes(size, breaks)
    rows = []
    for r in np.unique(reg):
        sel = reg == r
        f = ols_line(size[sel], latency[sel], relative)
        at_bound = nonnegative and f["a"] < 0
        if at_bound:
            f = origin_line(size[sel], latency[sel], relative)
        rows.append({
            "regime": int(r), "size_min": int(size[sel].min()), "size_max": int(size[sel].max()),
            "alpha_us": f["a"], "alpha_se": f["a_se"], "beta_us_per_byte": f["b"], "beta_se": f["b_se"],
            "bandwidth_GBps": 1e-3 / f["b"] if f["b"] > 0 else np.nan, "r2": f["r2"], "n": f["n"],
            "alpha_at_bound": bool(at_bound),
        })
    return rows


def relative_bic(size: np.ndarray, latency: np.ndarray, breaks: list[int]) -> float:
    """BIC of a piecewise fit on relative residuals (each size weighs alike, whatever its latency)."""
    reg = regimes(size, breaks)
    rss, k = 0.0, 0
    for r in np.unique(reg):
        sel = reg == r
        f = ols_line(size[sel], latency[sel], relative=True)
        pred = f["a"] + f["b"] * size[sel]
        rss += float(np.sum(((latency[sel] - pred) / latency[sel]) ** 2))
        k += 2
    n = len(size)
    return n * np.log(max(rss, 1e-300) / n) + k * np.log(n)


def detect_breaks(size: np.ndarray, latency: np.ndarray, max_breaks: int, min_points: int) -> list[int]:
    """Regime breaks chosen from the data: every set of up to ``max_breaks`` breaks among the
    measured sizes, each regime holding at least ``min_points`` distinct sizes, scored by the
    BIC of the piecewise fit on relative residuals; the lowest BIC wins (no break is a candidate)."""
    size = np.asarray(size)
    latency = np.asarray(latency, dtype=float)
    distinct = np.unique(size)
    best, best_bic = [], relative_bic(size, latency, [])
    for k in range(1, max_breaks + 1):
        for combo in itertools.combinations(range(min_points - 1, len(distinct) - min_points), k):
            idx = np.asarray(combo)
            if k > 1 and np.min(np.diff(idx)) < min_points:
                continue
            brk = [int(distinct[i]) for i in idx]
            bic = relative_bic(size, latency, brk)
            if bic < best_bic - 1e-9:
                best, best_bic = brk, bic
    return best


def fit_hockney(pt2pt: pd.DataFrame, channels: list[str], breaks: list[int] | None = None,
                detect: bool = False, max_breaks: int = 2, min_points: int = 3,
                weighting: str = "relative", nonnegative: bool = True) -> pd.DataFrame:
    """Hockney fits of every channel from the tidy point-to-point table (outliers left out).

    ``r2`` is the ordinary (unweighted) R^2 of the line on the regime's points.
    ``weighting`` is ``relative`` (WLS, 1/T^2) or ``none`` (the study's OLS); ``nonnegative``
    holds a negative α at 0 and flags it (:func:`fit_channel`; off for the study's own fit, which
    the paper mode reproduces as the study ran it).
    """
    data = pt2pt[~pt2pt["outlier"] & pt2pt["avg"].notna()]
    rows = []
    for channel in channels:
        d = data[data["channel"] == channel]
        if d.empty:
            continue
        size = d["size"].to_numpy()
        lat = d["avg"].to_numpy(dtype=float)
        if len(np.unique(size)) < 2:
            from collat import InputError

            sources = ", ".join(sorted(set(d["source"].astype(str)))) if "source" in d else channel
            raise InputError(sources, None, f"point-to-point latencies of channel {channel!r} at two message sizes "
                             "at least, for a Hockney line", f"only {int(size[0])} B")
        brk = detect_breaks(size, lat, max_breaks, min_points) if detect else list(breaks or [])
        brk = [b for b in brk if size.min() <= b < size.max()]
        switch, jump = protocol_switch(size, lat)
        for row in fit_channel(size, lat, brk, relative=weighting == "relative", nonnegative=nonnegative):
            rows.append({"channel": channel, **row, "switch": switch, "switch_jump": jump})
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def protocol_switch(size: np.ndarray, latency: np.ndarray) -> tuple[float, float]:
    """(the size where a channel's latency curve breaks its stride, and how much): on the median
    latency per size, the log-log slope between each two neighbouring sizes; the switch is the lower
    size of the step whose slope departs most from the mean of the two steps beside it (|log|
    units). A protocol switch changes what a message costs at once (the rendezvous handshake, a
    single copy instead of two), so the curve jumps there and goes on with its own stride, where a
    regime break of a line only bends it. NaN, NaN with fewer than four sizes."""
    med = pd.Series(np.asarray(latency, float)).groupby(np.asarray(size)).median()
    med = med[med > 0]
    if len(med) < 4:
        return float("nan"), float("nan")
    x, y = np.log(med.index.to_numpy(float)), np.log(med.to_numpy(float))
    slope = np.diff(y) / np.diff(x)
    off = np.abs(slope[1:-1] - 0.5 * (slope[:-2] + slope[2:]))
    at = int(np.argmax(off))
    return float(med.index[at + 1]), float(off[at])


VADER_EAGER_LIMIT = 4096  # OpenMPI 4.1's btl_vader_eager_limit: where no measurement shows the switch


def switch_measured(fits: pd.DataFrame) -> bool:
    """Whether the fits show a protocol switch on an intra-node channel (what :func:`eager_limit`
    reads; without one it falls back to OpenMPI's default)."""
    return bool(len(_intra_switches(fits)))


def _intra_switches(fits: pd.DataFrame) -> pd.DataFrame:
    """The :func:`protocol_switch` of each intra-node channel that has one: columns switch, switch_jump."""
    if "switch" not in fits:
        return pd.DataFrame(columns=["switch", "switch_jump"])
    intra = fits[fits["channel"] != "node"].drop_duplicates("channel")
    return intra.loc[intra["switch"].notna(), ["switch", "switch_jump"]]


def eager_limit(fits: pd.DataFrame) -> int:
    """The eager limit the point-to-point measurements show: the :func:`protocol_switch` most
    intra-node channels share (the node channel's is the network's), and of those that tie, the one
    whose jumps add up most; OpenMPI 4.1's btl_vader_eager_limit where no intra-node channel shows
    one."""
    found = _intra_switches(fits)
    if not len(found):
        return VADER_EAGER_LIMIT
    votes = found.groupby("switch")["switch_jump"].agg(["size", "sum"])
    return int(votes.sort_values(["size", "sum"], ascending=False).index[0])


def t_p2p(fits: pd.DataFrame, channel, size) -> np.ndarray:
    """Fitted point-to-point latency T_p2p^c(m) in us (study eq. 5) for any sizes, vectorised.

    ``channel`` is one name or an array aligned with ``size``. Sizes outside the
    measured range use the nearest regime's line.
    """
    size = np.atleast_1d(np.asarray(size, dtype=float))
    channel = np.broadcast_to(np.asarray(channel, dtype=object), size.shape)
    out = np.full(size.shape, np.nan)
    for ch in np.unique(channel):
        f = fits[fits["channel"] == ch].sort_values("regime")
        if f.empty:
            raise KeyError(f"no Hockney fit for channel {ch!r}")
        sel = channel == ch
        upper = f["size_max"].to_numpy()[:-1]
        r = np.searchsorted(upper, size[sel], side="left")
        out[sel] = f["alpha_us"].to_numpy()[r] + f["beta_us_per_byte"].to_numpy()[r] * size[sel]
    return out


def t_p2p_curve(fits: pd.DataFrame, channel: str):
    """T_p2p^c(m) of one channel as a fast vectorised function of the size (study eq. 5, all regimes)."""
    f = fits[fits["channel"] == channel].sort_values("regime")
    if f.empty:
        raise KeyError(f"no Hockney fit for channel {channel!r}")
    upper = f["size_max"].to_numpy(float)[:-1]
    alpha, beta = f["alpha_us"].to_numpy(float), f["beta_us_per_byte"].to_numpy(float)

    def curve(size):
        size = np.asarray(size, dtype=float)
        r = np.searchsorted(upper, size, side="left")
        return alpha[r] + beta[r] * size

    return curve


def q_ratios(fits: pd.DataFrame, sizes) -> pd.DataFrame:
    """Q_ij(m) = T_p2p^{c_i}(m) / T_p2p^{c_j}(m) (study eq. 10) for every ordered pair of fitted channels.

    No channel order is assumed: Q may be below 1 (the node channel beats the
    intra-node ones from about 16 KiB on ORFEO).
    """
    sizes = np.asarray(sorted(set(int(s) for s in sizes)))
    channels = list(dict.fromkeys(fits["channel"]))
    t = {c: t_p2p(fits, c, sizes) for c in channels}
    rows = [
        pd.DataFrame({"channel_i": ci, "channel_j": cj, "size": sizes, "q": t[ci] / t[cj]})
        for ci in channels for cj in channels if ci != cj
    ]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["channel_i", "channel_j", "size", "q"])
