"""NBFT latency lines (study eq. 6) and parallelisation factors gamma(P, m) (study eq. 4, 7).

``avg`` and ``max`` are different quantities (OSU: mean over ranks of each rank's
time vs. the slowest rank); both are fitted and kept apart in the column ``target``.
Where the line T(P) = alpha + beta (P - 1) fits poorly (R^2 below ``min_r2``, or a
non-positive latency at a measured P), the
measured latencies are kept as a lookup instead (method ``measured``), as the
study did for the cache channel at P <= 4. Where nothing was measured on a channel the point-to-point
stage fitted, a line is assumed (method ``assumed``, :func:`assumed_lines`). The lines also show
two sizes the model needs: where a reduce sender starts to wait for the root (:func:`eager_switch`,
the eager limit) and where what each further receiver costs steps (:func:`slope_step`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collat.pt2pt.hockney import ols_line, t_p2p

FIT_COLUMNS = ["operation", "channel", "size", "target", "alpha_us", "alpha_se", "beta_us", "beta_se", "r2",
               "n", "P_min", "P_max", "method"]
GAMMA_COLUMNS = ["operation", "channel", "P", "size", "target", "gamma", "t_nbft_us", "t_p2p_us", "method"]


def nbft_line(P: np.ndarray, latency: np.ndarray) -> dict:
    """Fit T_NBFT^{c,m}(P) = alpha + beta (P - 1) (study eq. 6)."""
    return ols_line(np.asarray(P, dtype=float) - 1.0, latency)


def gamma_hat(t_nbft, t_p2p_m):
    """gamma^c(P, m) = T_NBFT^{c,m}(P) / T_p2p^c(m) (study eq. 7)."""
    return np.asarray(t_nbft, dtype=float) / np.asarray(t_p2p_m, dtype=float)


def nbft_factors(nbft: pd.DataFrame, hockney: pd.DataFrame, targets=("avg", "max"),
                 min_r2: float = 0.9) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fit study eq. 6 per (operation, channel, size, target) and return (fits, gamma table)."""
    data = nbft[~nbft["outlier"]]
    fits, gammas = [], []
    fitted_channels = set(hockney["channel"])
    for (op, ch, size), d in data.groupby(["operation", "channel", "size"], sort=True):
        if ch not in fitted_channels:
            continue
        tp = float(t_p2p(hockney, ch, size)[0])
        for target in targets:
            dd = d[d[target].notna()]
            if dd["P"].nunique() < 2:
                continue
            measured = dd.groupby("P")[target].mean()
            f = nbft_line(dd["P"].to_numpy(), dd[target].to_numpy(dtype=float))
            P = measured.index.to_numpy()
            line = f["a"] + f["b"] * (P - 1)
            method = "fit" if f["r2"] >= min_r2 and np.all(line > 0) else "measured"
            t = line if method == "fit" else measured.to_numpy()
            fits.append({"operation": op, "channel": ch, "size": int(size), "target": target,
                         "alpha_us": f["a"], "alpha_se": f["a_se"], "beta_us": f["b"], "beta_se": f["b_se"],
                         "r2": f["r2"], "n": f["n"], "P_min": int(P.min()), "P_max": int(P.max()),
                         "method": method})
            gammas.append(pd.DataFrame({"operation": op, "channel": ch, "P": P.astype("int64"), "size": int(size),
                                        "target": target, "gamma": gamma_hat(t, tp), "t_nbft_us": t,
                                        "t_p2p_us": tp, "method": method}))
    gamma = pd.concat(gammas, ignore_index=True) if gammas else pd.DataFrame(columns=GAMMA_COLUMNS)
    return pd.DataFrame(fits, columns=FIT_COLUMNS), gamma[GAMMA_COLUMNS]


MEDIAN_COLUMNS = ["operation", "channel", "size", "P", "target", "latency"]


def median_table(nbft: pd.DataFrame, targets=("avg", "max")) -> pd.DataFrame:
    """T_NBFT as measured: the median over runs (flagged outliers left out) per (operation, channel,
    size, P) of every target, one row each (``latency`` in us). The model prices a fan-out from it
    where it was measured (:class:`collat.model.costs.ChannelCosts`)."""
    data = nbft[~nbft["outlier"]]
    frames = []
    for target in targets:
        d = data[data[target].notna()]
        med = d.groupby(["operation", "channel", "size", "P"], as_index=False, observed=True)[target].median()
        frames.append(med.rename(columns={target: "latency"}).assign(target=target))
    if not frames:
        return pd.DataFrame(columns=MEDIAN_COLUMNS)
    return pd.concat(frames, ignore_index=True)[MEDIAN_COLUMNS]


def assumed_lines(fits: pd.DataFrame, hockney: pd.DataFrame, operations, targets, slope: float) -> pd.DataFrame:
    """NBFT lines of what was not measured: for every operation, target and channel with a
    point-to-point fit but no row in ``fits``, the fan-out line T_NBFT(P, m) = T_p2p(m) (1 + slope (P - 2))
    (study eq. 6 with alpha = (1 - slope) T_p2p(m), beta = slope T_p2p(m): one receiver costs one
    message, each further receiver ``slope`` of one more), at size 1 B, method ``assumed``. The model
    scales an NBFT line from the nearest measured size by T_p2p (:class:`collat.model.costs.ChannelCosts`),
    so this one row holds at every size.

    Measured on the study's data without its NBFT files (slope 0.5; ``benchmarks/nbft_ablation.py``):
    the calibrated and hybrid modes' median errors out of sample moved by at most 0.03 on the P,
    algorithm and mapping splits, and grew by 0.15-0.18 on the sizes split (calibrated on <= 1 KiB,
    their per-byte terms stay at the start this line gives: the measured NBFT carries a fan-out's
    per-byte cost); the uncalibrated openmpi mode's grew by 0.06-0.19 outside the sizes split."""
    have = set(zip(fits["operation"], fits["target"], fits["channel"]))
    rows = []
    for op in operations:
        for target in targets:
            for ch in sorted(set(hockney["channel"])):
                if (op, target, ch) in have:
                    continue
                tp = float(t_p2p(hockney, ch, [1])[0])
                rows.append({"operation": op, "channel": ch, "size": 1, "target": target,
                             "alpha_us": (1 - slope) * tp, "alpha_se": np.nan, "beta_us": slope * tp,
                             "beta_se": np.nan, "r2": np.nan, "n": 0, "P_min": pd.NA, "P_max": pd.NA,
                             "method": "assumed"})
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


#: shares of avg in max closer than this (in log) are one level to :func:`eager_switch`: below what
#: a measurement tells apart, so that a constant share shows no step through rounding
SHARE_RESOLUTION = 1e-3


def eager_switch(fits: pd.DataFrame, min_points: int = 3) -> int | None:
    """The eager limit the flat fan-ins show: the largest size at which a reduce sender's call ends
    before the root takes its message. Up to it the senders are out at once, and OSU's ``avg`` (the
    mean over ranks) is a small share of ``max`` (the root, which takes the messages in turn); above
    it each sender waits its turn and the share steps up towards one half.

    Per channel with NBFT reduce lines at both targets (``fits``, :data:`FIT_COLUMNS`; ``assumed``
    lines left out), log(avg / max) of the lines at the channel's largest measured P, against the
    size: one step at a size shared by every channel, each channel with its own two levels, fitted by
    least squares (at least ``min_points`` sizes a side, the share rising on the whole), and kept
    where its BIC is below that of one level per channel. None where no channel has such lines or
    the step is not shown."""
    f = fits[(fits["operation"] == "reduce") & (fits["method"] != "assumed")]
    series = []
    for _, g in f.groupby("channel", sort=True):
        avg, mx = (g[g["target"] == t].set_index("size") for t in ("avg", "max"))
        sizes = avg.index.intersection(mx.index).sort_values()
        if len(sizes) < 2 * min_points:
            continue

        def at_largest(line):
            return (line.loc[sizes, "alpha_us"] + line.loc[sizes, "beta_us"]
                    * (avg.loc[sizes, "P_max"] - 1)).to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.log(at_largest(avg) / at_largest(mx))
        ok = np.isfinite(share)
        if ok.sum() >= 2 * min_points:
            series.append((sizes.to_numpy()[ok], share[ok]))
    if not series:
        return None

    n = sum(len(y) for _, y in series)

    def sse(y):
        return float(((y - y.mean()) ** 2).sum())
    best, best_sse = None, np.inf
    for b in np.unique(np.concatenate([s for s, _ in series])):
        parts = [(y[s <= b], y[s > b]) for s, y in series]
        if any(len(lo) < min_points or len(hi) < min_points for lo, hi in parts):
            continue
        rise = sum(hi.mean() - lo.mean() for lo, hi in parts)
        total = sum(sse(lo) + sse(hi) for lo, hi in parts)
        if rise > 0 and total < best_sse:
            best, best_sse = int(b), total
    if best is None:
        return None
    k, floor = len(series), n * SHARE_RESOLUTION ** 2
    one_level = n * np.log(max(sum(sse(y) for _, y in series), floor) / n) + k * np.log(n)
    stepped = n * np.log(max(best_sse, floor) / n) + (2 * k + 1) * np.log(n)
    return best if stepped < one_level else None


def slope_step(fits: pd.DataFrame, target: str, eager_limit: float) -> int | None:
    """The size where the NBFT slope (what each further receiver costs) steps, as the measurements
    show it: on each intra-node channel of each operation with NBFT runs (``fits``, :data:`FIT_COLUMNS`;
    lines ``assumed`` left out), at ``target``, over the sizes up to ``eager_limit`` where the
    slope is positive at every size, the break of a piecewise line in the size chosen by BIC
    (:func:`collat.pt2pt.hockney.detect_breaks`: one break at most, three sizes a side); the break
    most of these series agree on (the smaller on a tie), the largest size of its lower part, where
    two of them at least show it: on a dozen noisy sizes the criterion finds a break in one series
    alone now and then, never the same in two. None where no break is shown twice. The calibrated
    mode fits the gap up to it on its own (``gap_us_small``)."""
    from collat.pt2pt.hockney import detect_breaks

    f = fits[(fits["target"] == target) & (fits["method"] != "assumed") & (fits["channel"] != "node")
             & (fits["size"] <= eager_limit)]
    breaks = []
    for _, g in f.groupby(["operation", "channel"], sort=True):
        g = g.sort_values("size")
        slope = g["beta_us"].to_numpy(float)
        if len(g) >= 6 and (slope > 0).all():
            breaks += detect_breaks(g["size"].to_numpy(), slope, 1, 3)
    if not breaks:
        return None
    sizes, counts = np.unique(breaks, return_counts=True)
    if counts.max() < 2:
        return None
    return int(sizes[np.argmax(counts)])  # np.unique sorts: the first of the most counted is the smallest
