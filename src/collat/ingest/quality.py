"""Robust outlier flags over the tidy tables; rows are flagged, never removed.

The rule looks only at measurements. Each row is compared, in log space, with the
median of up to ``window`` neighbours on its left and on its right along a series
(along P at fixed size, and along the size list at fixed P/run). A row is an
outlier when it sits above (or below) BOTH side medians by more than
``max(z * s, log(1 + min_relative))``, with ``s`` the series' robust scale: 1.4826 x
MAD of the rows' distances from the midpoint of their two side medians (a trend that
bends does not widen it; the left-side residuals of a size series that is flat, then
doubles per size, spread by the doubling, and a 40x spike then passed unflagged), where
at least ``MIN_INNER`` rows have both sides; in a shorter series, that of the left-side
residuals.
Requiring both sides makes genuine steps (a new socket, a protocol switch) safe: a
step point agrees with one side. At the ends of a series only one side exists and it
alone decides, against ``edge_factor`` x the threshold from the scale of the left-side
residuals, stricter where the trend is steep; where the series has an inner scale, an end
is also flagged when it stands off both its side median and the line through the two
nearest values on its side by ``edge_factor`` x the inner threshold (the line follows a
trend that doubles per size, so a spike at the flat end of such a series shows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: table -> list of (series key, axis) along which neighbours are taken; the axis ends in the source,
#: so that the flags do not depend on the order of the rows (rows equal on the rest keep it)
SERIES = {
    "pt2pt": [(["channel", "size", "iterations"], ["receiver", "run", "source"]),
              (["channel", "receiver", "run", "source"], ["size"])],
    "nbft": [(["operation", "channel", "size", "iterations"], ["P", "run", "source"]),
             (["operation", "channel", "P", "run", "source"], ["size"])],
    "collective": [(["operation", "algorithm", "mapping", "size", "iterations"], ["P", "run", "source"]),
                   (["operation", "algorithm", "mapping", "P", "run", "source"], ["size"])],
}
CHUNK_CELLS = 1 << 20  # series cells flagged in one batch
MIN_INNER = 5  # values inside a series (both sides known) that its inner scale needs
VALUES = {"pt2pt": ["avg"], "nbft": ["avg", "max"], "collective": ["avg", "max"]}


def side_medians(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Median of the up-to-``window`` values before and after each element along the last axis (each
    row of a 2-D ``x`` a series of its own), NaNs skipped (NaN where none): one rolling median
    (pandas) along the rows laid end to end, ``window`` NaNs between them so that no window spans two."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    pad = np.full((*x.shape[:-1], window), np.nan)
    laid = np.concatenate([pad, x, pad], axis=-1)
    rolled = (_median_of_three(laid.ravel()) if window == 3 else
              pd.Series(laid.ravel()).rolling(window, min_periods=1).median().to_numpy()).reshape(laid.shape)
    # rolled[..., j]: the median of laid[..., j - window + 1 : j + 1]; element i sits at window + i
    return rolled[..., window - 1:window - 1 + n], rolled[..., 2 * window:2 * window + n]


def _median_of_three(x: np.ndarray) -> np.ndarray:
    """pandas' ``rolling(3, min_periods=1).median()`` of ``x``, NaNs skipped, from a sorting network
    of elementwise minima and maxima (a third of the rolling median's time on millions of values:
    the default window of the outlier rule)."""
    n = len(x)
    missing = np.isnan(x)
    v = np.where(missing, np.inf, x)  # a missing value sorts last
    a = np.full(n, np.inf)  # two before
    a[2:] = v[:-2]
    b = np.full(n, np.inf)  # one before
    b[1:] = v[:-1]
    lo = np.minimum(a, b)
    mid = np.minimum(np.maximum(a, b, out=a), v, out=b)
    lo, mid = np.minimum(lo, mid), np.maximum(lo, mid)
    gone = missing.astype(np.int8)  # values missing from each window
    gone[1:] += missing[:-1]
    gone[2:] += missing[:-2]
    gone[:2] += np.array([2, 1], dtype=np.int8)[:n]
    out = np.where(gone == 0, mid, np.where(gone == 1, (lo + mid) * 0.5, lo))
    out[gone == 3] = np.nan
    return out


def series_flags(x: np.ndarray, window: int, z: float, min_relative: float,
                 direction: str = "up", edge_factor: float = 2.0) -> np.ndarray:
    """Outlier flags for one series of positive values ordered along its axis.

    Two passes: the second recomputes the side medians without the first pass's
    outliers, so that a cluster of spikes cannot make a normal neighbour look low.
    ``direction='up'`` flags only values above their neighbours (timing noise only
    adds time); ``'both'`` flags either way. At a series end the single side must
    exceed ``edge_factor`` times the threshold.
    """
    return batch_flags(np.asarray(x, dtype=float)[None, :], window, z, min_relative, direction, edge_factor)[0]


def batch_flags(X: np.ndarray, window: int, z: float, min_relative: float, direction: str = "up",
                edge_factor: float = 2.0) -> np.ndarray:
    """:func:`series_flags` of every row of ``X`` [series, length] at once (a shorter series padded
    with NaN at its end): the same flags, without a Python loop over series. The second pass runs
    only on the rows the first flagged something in (on the others it would repeat the first)."""
    m, n = X.shape
    ok = np.isfinite(X) & (X > 0)
    # move each row's valid values to its front, in order: neighbours skip what is not a value (no
    # move where they are there already: a shorter series' padding is at its end)
    at_front = bool(np.all(ok[:, 1:] <= ok[:, :-1]))
    order = None if at_front else np.argsort(~ok, axis=1, kind="stable")
    valid = ok if at_front else np.take_along_axis(ok, order, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.where(valid, np.log(np.where(valid, X if at_front else np.take_along_axis(X, order, axis=1), 1.0)),
                      np.nan)
    live = (ok.sum(axis=1) >= 3)[:, None]  # fewer than 3 values: nothing flagged
    args = (window, z, np.log1p(min_relative), direction, edge_factor)
    excluded = _pass(lx, valid, live, np.zeros((m, n), dtype=bool), *args)
    again = excluded.any(axis=1)
    if again.any():
        excluded[again] = _pass(lx[again], valid[again], live[again], excluded[again], *args)
    if at_front:
        return excluded
    flags = np.zeros((m, n), dtype=bool)
    np.put_along_axis(flags, order, excluded, axis=1)
    return flags


def _pass(lx, valid, live, excluded, window, z, floor, direction, edge_factor) -> np.ndarray:
    """One pass of :func:`batch_flags`: the side medians without the ``excluded`` values, the
    robust scale of each row, and the values beyond the threshold on both sides (one at an end)."""
    ref = np.where(excluded, np.nan, lx)
    left, right = side_medians(ref, window)
    rl, rr = lx - left, lx - right
    edge_thr = np.maximum(z * np.nan_to_num(_mad_scale(np.where(np.isfinite(rl) & ~excluded, rl, np.nan)), nan=0.0),
                          floor)
    # inside the series: the scale of each value's distance from the midpoint of its two side
    # medians, which a trend that bends (flat at small sizes, doubling per size at large ones) does
    # not widen as it widens the left-side residuals; from at least MIN_INNER such values (fewer
    # make no scale: the edge's threshold then holds inside too)
    mid = np.where(np.isfinite(rl) & np.isfinite(rr) & ~excluded, lx - 0.5 * (left + right), np.nan)
    inner = np.where(np.isfinite(mid).sum(axis=1, keepdims=True) >= MIN_INNER, _mad_scale(mid), np.nan)
    thr = np.where(np.isfinite(inner), np.maximum(z * np.nan_to_num(inner, nan=0.0), floor), edge_thr)
    if direction == "up":
        rl_, rr_ = np.where(np.isfinite(rl), np.maximum(rl, 0), np.nan), np.where(np.isfinite(rr), np.maximum(rr, 0), np.nan)
    else:
        rl_, rr_ = rl, rr
    both = np.isfinite(rl_) & np.isfinite(rr_)
    one = np.where(np.isfinite(rl_), rl_, rr_)
    # an end of a series that has an inner scale is also an outlier where it stands off both its
    # side median and the line through the two nearest values on its side (as an inner value stands
    # off both sides; the line follows a trend that doubles per size) by the inner threshold: the
    # left residuals' scale of a series that bends is too wide to see a spike at its flat end
    # (the line only in the rows where an end stands off its side median that far already: few)
    with np.errstate(invalid="ignore"):
        ask = np.flatnonzero((np.isfinite(inner) & ~both & (np.abs(one) > edge_factor * thr)).any(axis=1))
    trend = np.full(lx.shape, np.nan)
    trend[ask] = lx[ask] - _extrapolated(ref[ask], valid[ask])
    if direction == "up":
        trend = np.where(np.isfinite(trend), np.maximum(trend, 0), np.nan)
    with np.errstate(invalid="ignore"):
        off = (np.isfinite(inner) & (np.sign(one) == np.sign(trend))
               & (np.minimum(np.abs(one), np.abs(trend)) > edge_factor * thr))
        return np.where(
            both,
            (np.sign(rl_) == np.sign(rr_)) & (np.minimum(np.abs(rl_), np.abs(rr_)) > thr),
            (np.abs(one) > edge_factor * edge_thr) | off,
        ) & valid & live


def _extrapolated(ref: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """At the first and the last of each row's ``valid`` positions (they stand at its front), the
    straight line through the two nearest finite values of ``ref`` (NaN: a value left out) on the
    one side it has, extended to it; NaN elsewhere and where that side has fewer than two."""
    m, n = ref.shape
    out = np.full((m, n), np.nan)
    if n < 3:
        return out
    rows, at = np.arange(m), np.arange(n)[None, :]
    fin = np.isfinite(ref)
    end = np.maximum(valid.sum(axis=1) - 1, 0)

    def first(mask):  # the first True of each row, and whether it has one
        return np.argmax(mask, axis=1), mask.any(axis=1)

    def last(mask):  # the last True of each row, and whether it has one
        return n - 1 - np.argmax(mask[:, ::-1], axis=1), mask.any(axis=1)

    with np.errstate(invalid="ignore", divide="ignore"):
        # the first position: the first two finite ones after it
        a, has_a = first(fin & (at > 0))
        b, has_b = first(fin & (at > a[:, None]))
        va, vb = ref[rows, a], ref[rows, b]
        ok = has_a & has_b
        out[ok, 0] = (va + (va - vb) * a / (b - a))[ok]
        # the last: the last two finite ones before it
        a, has_a = last(fin & (at < end[:, None]))
        b, has_b = last(fin & (at < a[:, None]))
        va, vb = ref[rows, a], ref[rows, b]
        ok = has_a & has_b & (end >= 2)
        out[rows[ok], end[ok]] = (va + (va - vb) * (end - a) / (a - b))[ok]
    return out


def _mad_scale(x: np.ndarray) -> np.ndarray:
    """1.4826 x the median absolute deviation of each row of ``x`` [m, n] from its median, NaNs
    skipped (NaN where a row has none), as [m, 1]."""
    return 1.4826 * _row_medians(np.abs(x - _row_medians(x)))


def _row_medians(x: np.ndarray) -> np.ndarray:
    """The median of each row of ``x`` [m, n], NaNs skipped, NaN where a row has none, as [m, 1]:
    np.nanmedian's values, from one sort (NaNs sort last) instead of its masked arrays."""
    v = np.sort(x, axis=1)
    k = (~np.isnan(v)).sum(axis=1)
    lo = np.take_along_axis(v, np.maximum((k - 1) // 2, 0)[:, None], axis=1)
    hi = np.take_along_axis(v, np.maximum(k // 2, 0)[:, None], axis=1)
    return np.where(k[:, None] > 0, (lo + hi) / 2, np.nan)


def _rank_codes(s: pd.Series) -> np.ndarray:
    """Integer codes in the sort order of the values, nulls last (one code): sorting by the codes
    orders rows as sorting by the values does, with a fraction of the memory of a string sort."""
    if isinstance(s.dtype, pd.CategoricalDtype):  # e.g. read dictionary-encoded: categories in any order
        codes = s.cat.codes.to_numpy()
        if s.cat.categories.is_monotonic_increasing and (not len(codes) or codes.min() >= 0):
            return codes  # sorted categories, no null: the codes are the ranks
        categories = np.asarray(s.cat.categories, dtype=object)
        rank = np.empty(len(categories), dtype=np.int64)
        rank[np.argsort(categories, kind="stable")] = np.arange(len(categories))
        return np.where(codes < 0, len(categories), rank[np.maximum(codes, 0)]).astype(np.int32)
    if s.dtype.kind in "iub":  # plain integers (no nulls): their own order
        return s.to_numpy()
    codes, uniques = pd.factorize(s, sort=True, use_na_sentinel=True)
    return np.where(codes < 0, len(uniques), codes).astype(np.int32)


def stable_order(codes: list[np.ndarray]) -> np.ndarray:
    """The permutation that sorts rows by ``codes`` (:func:`_rank_codes`, the first the major key),
    stable: np.lexsort's. The minor keys the rows already follow are not sorted again (a raw log's
    rows stand in run order): a stable sort on the others alone keeps their order. Those others pack
    into one integer key, ranked densely when they take few values, so that numpy sorts it by radix
    (one pass per byte, not a merge sort of 64-bit keys)."""
    if any(c.dtype.kind not in "iub" for c in codes):  # nulls of an integer column (NaN: they sort last)
        return np.lexsort(codes[::-1])
    n = len(codes[0]) if codes else 0
    major = len(codes)  # codes[major:] are the minor keys the rows follow already
    follows = np.ones(max(n - 1, 0), dtype=bool)  # row i + 1 not before row i on codes[major:]
    for j in range(len(codes) - 1, -1, -1):
        c = codes[j]
        follows = (c[1:] > c[:-1]) | ((c[1:] == c[:-1]) & follows)
        if not follows.all():
            break
        major = j
    if major == 0:  # in order already (a log read in file order)
        return np.arange(n)
    varying = [c for c in codes[:major] if len(c) and c.min() != c.max()]
    key = varying[0] if len(varying) == 1 else _packed(varying)
    if key is None:  # beyond 63 bits
        return np.lexsort(codes[::-1])
    return np.argsort(_dense_ranks(key), kind="stable")  # of 8 or 16 bits: numpy sorts by radix


def _dense_ranks(key: np.ndarray) -> np.ndarray:
    """Each integer's rank among the distinct values of ``key`` (0, 1, ...), in the smallest unsigned
    type that holds them: from a table of the values that occur when their range is no wider than
    the rows are many (sizes up to a few MiB), else by hashing."""
    if not len(key):
        return key
    lo, hi = int(key.min()), int(key.max())
    if hi - lo <= max(len(key), 1 << 16):  # the table: at most a few bytes per row
        at = key - lo
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[at] = True
        rank = np.cumsum(present, dtype=np.int32 if hi - lo < 1 << 31 else np.int64) - 1
        top = int(rank[-1])
    else:
        at, uniques = pd.factorize(key, sort=False)
        rank = np.empty(len(uniques), dtype=np.int64)
        rank[np.argsort(uniques, kind="stable")] = np.arange(len(uniques))
        top = len(uniques) - 1
    kind = next(t for t in (np.uint8, np.uint16, np.uint32, np.int64) if top <= np.iinfo(t).max)
    return rank.astype(kind)[at]


def _packed(codes: list[np.ndarray], rows: np.ndarray | None = None) -> np.ndarray | None:
    """One int64 per row (of ``rows``, every row without) that orders as the ``codes`` do, the first
    the major key; None where a code is not an integer or their ranges pass 63 bits."""
    if any(c.dtype.kind not in "iub" for c in codes):
        return None
    key, span = np.zeros(len(codes[0]) if rows is None else len(rows), dtype=np.int64), 1
    for c in codes:
        lo, hi = (int(c.min()), int(c.max())) if len(c) else (0, 0)
        if hi == lo:  # one value: orders nothing
            continue
        span *= hi - lo + 1
        if span >= 1 << 62:
            return None
        key = key * (hi - lo + 1) + ((c if rows is None else c[rows]).astype(np.int64) - lo)
    return key


def _series_starts(keys: list[np.ndarray], axis: list[np.ndarray]) -> np.ndarray | None:
    """Where each series starts, when the rows as they stand hold every series in one stretch, in
    order along its axis (ties kept): then sorting them by keys and axis would only move whole
    series, and every series' flags are its own. None otherwise (or where the keys do not pack into
    one integer). A raw log read in file order holds its runs so: each run's size list is one."""
    n = len(keys[0]) if keys else 0
    if n < 2 or any(c.dtype.kind not in "iub" for c in (*keys, *axis)):
        return None
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in keys:
        change[1:] |= c[1:] != c[:-1]
    if 3 * np.count_nonzero(change) > n:  # stretches of fewer than 3 rows: the rows stand otherwise
        return None
    inside = ~change[1:]
    for c in axis:  # lexicographic along the axis columns, within each stretch
        step = c[1:] - c[:-1].astype(np.int64)
        if np.any(inside & (step < 0)):
            return None
        inside &= step == 0
    starts = np.flatnonzero(change)
    # every stretch a series of its own: no key met twice (the last key major: the source, then the
    # run, rise in a raw log's order, so the packed keys rise and need no hashing)
    key = _packed(keys[::-1], starts)
    if key is None:
        return None
    if np.all(key[1:] > key[:-1]):
        return change
    return change if len(np.unique(key)) == len(starts) else None


def flag_outliers(df: pd.DataFrame, table: str, window: int = 3, z: float = 6.0,
                  min_relative: float = 1.0, direction: str = "up", edge_factor: float = 2.0,
                  ranks: dict[str, np.ndarray] | None = None) -> pd.Series:
    """Boolean Series (aligned with ``df``): outlier along any series, in any value column. ``ranks``:
    the :func:`_rank_codes` of columns, when the caller has them (the others are added to it)."""
    ranks = {} if ranks is None else ranks
    flags = np.zeros(len(df), dtype=bool)
    if df.empty:
        return pd.Series(flags, index=df.index)
    values = [df[col].to_numpy(dtype="float64", na_value=np.nan) for col in VALUES[table] if col in df]  # left out: no value
    for keys, axis in SERIES[table]:
        keys = [k for k in keys if k in df]  # a column left out holds no value: it groups nothing
        codes = [ranks[c] if c in ranks else ranks.setdefault(c, _rank_codes(df[c])) for c in (*keys, *axis) if c in df]
        change = _series_starts(codes[:len(keys)], codes[len(keys):])
        if change is not None:  # each series already together, in axis order (a raw log's runs): no sort
            pos = np.arange(len(df))
        else:
            pos = stable_order(codes)  # by keys then axis: as sort_values(kind="stable")
            change = np.zeros(len(pos), dtype=bool)
            change[0] = True
            for c in codes[:len(keys)]:  # a series: consecutive rows with the same keys
                sorted_codes = c[pos]
                change[1:] |= sorted_codes[1:] != sorted_codes[:-1]
        del codes
        starts = np.flatnonzero(change)
        lengths = np.diff(np.r_[starts, len(pos)])
        # series of similar length side by side: padding at most doubles a bucket
        bucket = np.ceil(np.log2(np.maximum(lengths, 1))).astype(int)
        for b in np.unique(bucket[lengths >= 3]):
            in_bucket = np.flatnonzero((bucket == b) & (lengths >= 3))
            width = int(lengths[in_bucket].max())
            per_chunk = max(1, CHUNK_CELLS // width)  # bounds the memory of the window arrays
            for first in range(0, len(in_bucket), per_chunk):
                members = in_bucket[first:first + per_chunk]
                if (lengths[members] == width).all():  # series of one length (a size list): no padding
                    take = pos[starts[members][:, None] + np.arange(width)]
                    for x in values:
                        flags[take] |= batch_flags(x[take], window, z, min_relative, direction, edge_factor)
                    continue
                row = np.repeat(np.arange(len(members)), lengths[members])
                col_ = np.arange(len(row)) - np.repeat(np.cumsum(lengths[members]) - lengths[members], lengths[members])
                take = pos[np.repeat(starts[members], lengths[members]) + col_]
                for x in values:
                    X = np.full((len(members), width), np.nan)
                    X[row, col_] = x[take]
                    flags[take] |= batch_flags(X, window, z, min_relative, direction, edge_factor)[row, col_]
    return pd.Series(flags, index=df.index)


QUALITY_COLUMNS = ["source", "table", "rows_read", "duplicates_collapsed", "rows", "runs", "outliers_flagged",
                   "outlier_share", "skipped_lines", "skipped_runs", "marker_runs", "pooled_runs", "benchmark",
                   "osu_version", "datatype", "mpi", "skipped_file", "zero_size_rows"]


def quality_table(records: list[dict], tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per source file: rows read, duplicates collapsed, runs, skipped lines/runs, outliers flagged."""
    q = pd.DataFrame.from_records(records)
    if q.empty:  # a table no input feeds
        return pd.DataFrame(columns=QUALITY_COLUMNS)
    # per source, the flags (a row each) or their counts
    flagged = pd.concat([t.groupby("source", observed=True)["outlier"].sum() for t in tables.values() if len(t)]
                        or [pd.Series(dtype=int)])
    for column, empty in (("marker_runs", 0), ("pooled_runs", ""), ("mpi", ""), ("skipped_file", ""),
                          ("zero_size_rows", 0)):
        q[column] = q[column].fillna(empty) if column in q else empty
    q["marker_runs"] = q["marker_runs"].astype(int)
    q["zero_size_rows"] = q["zero_size_rows"].astype(int)
    q["outliers_flagged"] = q["source"].map(flagged).fillna(0).astype(int)
    q["outlier_share"] = (q["outliers_flagged"] / q["rows"].where(q["rows"] > 0)).round(4)
    return q[QUALITY_COLUMNS].sort_values("source").reset_index(drop=True)


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
