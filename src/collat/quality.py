"""Robust outlier flags over the tidy tables; rows are flagged, never removed.

The rule looks only at measurements. Each row is compared, in log space, with the
median of up to ``window`` neighbours on its left and on its right along a series
(along P at fixed size, and along the size list at fixed P/run). A row is an
outlier when it sits above (or below) BOTH side medians by more than
``max(z * s, log(1 + min_relative))``, with ``s`` the series' robust scale
(1.4826 x MAD of the left-side residuals). Requiring both sides makes genuine
steps (a new socket, a protocol switch) safe: a step point agrees with one side.
At the ends of a series only one side exists and it alone decides.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: table -> list of (series key, axis) along which neighbours are taken
SERIES = {
    "pt2pt": [(["channel", "size", "iterations"], ["receiver", "run"]),
              (["channel", "receiver", "run", "source"], ["size"])],
    "nbft": [(["operation", "channel", "size", "iterations"], ["P", "run"]),
             (["operation", "channel", "P", "run", "source"], ["size"])],
    "collective": [(["operation", "algorithm", "mapping", "size", "iterations"], ["P", "run"]),
                   (["operation", "algorithm", "mapping", "P", "run", "source"], ["size"])],
}
VALUES = {"pt2pt": ["avg"], "nbft": ["avg", "max"], "collective": ["avg", "max"]}


def _window_median(windows: np.ndarray) -> np.ndarray:
    """Median of each row, NaNs skipped, NaN for a row without values (rows sorted: NaNs go last)."""
    v = np.sort(windows, axis=1)
    k = np.isfinite(v).sum(axis=1)
    lo = np.take_along_axis(v, np.maximum((k - 1) // 2, 0)[:, None], axis=1)[:, 0]
    hi = np.take_along_axis(v, np.maximum(k // 2, 0)[:, None], axis=1)[:, 0]
    return np.where(k > 0, (lo + hi) / 2, np.nan)


def side_medians(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Median of the up-to-``window`` values before and after each element, NaNs skipped (NaN where
    none), over sliding windows of a NaN-padded copy."""
    from numpy.lib.stride_tricks import sliding_window_view

    x = np.asarray(x, dtype=float)
    pad = np.full(window, np.nan)
    left = _window_median(sliding_window_view(np.concatenate([pad, x]), window)[: len(x)])
    right = _window_median(sliding_window_view(np.concatenate([x, pad]), window)[1:])
    return left, right


def series_flags(x: np.ndarray, window: int, z: float, min_relative: float,
                 direction: str = "up", edge_factor: float = 2.0) -> np.ndarray:
    """Outlier flags for one series of positive values ordered along its axis.

    Two passes: the second recomputes the side medians without the first pass's
    outliers, so that a cluster of spikes cannot make a normal neighbour look low.
    ``direction='up'`` flags only values above their neighbours (timing noise only
    adds time); ``'both'`` flags either way. At a series end the single side must
    exceed ``edge_factor`` times the threshold.
    """
    n = len(x)
    flags = np.zeros(n, dtype=bool)
    ok = np.isfinite(x) & (x > 0)
    if ok.sum() < 3:
        return flags
    idx = np.flatnonzero(ok)
    lx = np.log(x[idx])
    excluded = np.zeros(len(idx), dtype=bool)
    for _ in range(2):
        ref = np.where(excluded, np.nan, lx)
        left, right = side_medians(ref, window)
        rl, rr = lx - left, lx - right
        finite = rl[np.isfinite(rl) & ~excluded]
        scale = 1.4826 * np.median(np.abs(finite - np.median(finite))) if len(finite) else 0.0
        thr = max(z * scale, np.log1p(min_relative))
        if direction == "up":
            rl_, rr_ = np.where(np.isfinite(rl), np.maximum(rl, 0), np.nan), np.where(np.isfinite(rr), np.maximum(rr, 0), np.nan)
        else:
            rl_, rr_ = rl, rr
        both = np.isfinite(rl_) & np.isfinite(rr_)
        one = np.where(np.isfinite(rl_), rl_, rr_)
        excluded = np.where(
            both,
            (np.sign(rl_) == np.sign(rr_)) & (np.minimum(np.abs(rl_), np.abs(rr_)) > thr),
            np.abs(one) > edge_factor * thr,
        )
    flags[idx] = excluded
    return flags


def flag_outliers(df: pd.DataFrame, table: str, window: int = 3, z: float = 6.0,
                  min_relative: float = 1.0, direction: str = "up", edge_factor: float = 2.0) -> pd.Series:
    """Boolean Series (aligned with ``df``): outlier along any series, in any value column."""
    flags = np.zeros(len(df), dtype=bool)
    if df.empty:
        return pd.Series(flags, index=df.index)
    work = df.reset_index(drop=True)
    for keys, axis in SERIES[table]:
        keys = [k for k in keys if k in work]
        ordered = work.sort_values([*keys, *axis], kind="stable")
        for _, grp in ordered.groupby(keys, sort=False, dropna=False):
            if len(grp) < 3:
                continue
            pos = grp.index.to_numpy()
            for col in VALUES[table]:
                x = grp[col].to_numpy(dtype="float64", na_value=np.nan)
                flags[pos] |= series_flags(x, window, z, min_relative, direction, edge_factor)
    return pd.Series(flags, index=df.index)


def quality_table(records: list[dict], tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per source file: rows read, duplicates collapsed, runs, skipped lines/runs, outliers flagged."""
    q = pd.DataFrame.from_records(records)
    flagged = pd.concat(
        [t.groupby("source")["outlier"].agg(["sum", "size"]) for t in tables.values() if len(t)]
        or [pd.DataFrame(columns=["sum", "size"])]
    )
    for column, empty in (("marker_runs", 0), ("pooled_runs", "")):
        q[column] = q[column].fillna(empty) if column in q else empty
    q["marker_runs"] = q["marker_runs"].astype(int)
    q["outliers_flagged"] = q["source"].map(flagged["sum"]).fillna(0).astype(int)
    q["outlier_share"] = (q["outliers_flagged"] / q["rows"].where(q["rows"] > 0)).round(4)
    order = ["source", "table", "rows_read", "duplicates_collapsed", "rows", "runs", "outliers_flagged",
             "outlier_share", "skipped_lines", "skipped_runs", "marker_runs", "pooled_runs", "benchmark",
             "osu_version", "datatype"]
    return q[order].sort_values("source").reset_index(drop=True)


CLEANINGS = ("paper", "robust", "none")


def cleaning_mask(df: pd.DataFrame, cleaning: str, paper: dict | None = None) -> pd.Series:
    """Which rows of a collective table a score may use, for one cleaning profile.

    * ``none``: every row with a measurement;
    * ``robust``: the rows the ingest's outlier rule did not flag (fixed before any model is fitted);
    * ``paper``: the study's hand-set thresholds (config ``paper.cleaning``): only rows at
      ``size`` are in the profile, and a row is dropped when its ``avg`` exceeds the threshold of its
      (operation, algorithm, mapping); cells without a threshold keep every row.
    """
    if cleaning == "none":
        return pd.Series(True, index=df.index)
    if cleaning == "robust":
        return ~df["outlier"].astype(bool)
    if cleaning != "paper":
        raise ValueError(f"cleaning {cleaning!r}: expected one of {', '.join(CLEANINGS)}")
    if not paper:
        raise ValueError("cleaning 'paper' needs config paper.cleaning (size and thresholds)")
    keep = df["size"] == paper["size"]
    for t in paper["thresholds"]:
        cell = ((df["operation"] == t["operation"]) & (df["algorithm"] == t["algorithm"])
                & (df["mapping"] == t["mapping"]))
        keep &= ~(cell & (df["avg"] > t["max_us"]))
    return keep
