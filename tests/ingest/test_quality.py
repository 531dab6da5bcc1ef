"""Outlier flags: one series by hand, and every series at once equal to one at a time."""

import numpy as np
import pandas as pd
import pytest

from collat.ingest import quality as qu


def test_a_spike_between_two_steady_sides_is_flagged_and_a_step_is_not():
    x = np.array([1.0, 1.0, 1.0, 5.0, 1.0, 1.0, 1.0])
    assert qu.series_flags(x, 3, 6.0, 1.0).tolist() == [False, False, False, True, False, False, False]
    step = np.array([1.0, 1.0, 1.0, 3.0, 3.0, 3.0])  # a new socket: agrees with its right side
    assert not qu.series_flags(step, 3, 6.0, 1.0).any()
    assert not qu.series_flags(np.array([1.0, 9.0]), 3, 6.0, 1.0).any()  # under 3 values: nothing


def test_a_spike_in_a_series_that_bends_is_flagged():
    """The 16-core node's flat-tree bcast at P = 16 (OSU avg, us, 1 B to 1 MiB): flat to 4 KiB, then
    doubling per size. Its left-side residuals spread from -0.7 to +1.7 with the bend (scale 0.69, a
    threshold of 4.15 in log at z = 6), so the 127 us at 16 B, 43x its neighbours, passed. The
    midpoints of the side medians follow the bend: only the spike is flagged, not the steep end."""
    x = np.array([2.68, 4.9, 1.76, 2.95, 127.03, 2.09, 2.65, 3.4, 3.15, 4.29, 5.69, 6.08, 15.92, 21.41, 27.3,
                  35.5, 61.24, 180.29, 321.46, 754.02, 1271.16])
    assert np.flatnonzero(qu.series_flags(x, 3, 6.0, 1.0)).tolist() == [4]
    assert not qu.series_flags(np.delete(x, 4), 3, 6.0, 1.0).any()
    # three values, one inside: no inner scale, the left-side residuals' (log 2.5 and log(1 / 1.75):
    # 1.4826 x MAD = 1.094, threshold 6.56), so 2.5x both neighbours is not flagged; the inner scale
    # of one value would be 0, and the 2x floor would flag it
    assert not qu.series_flags(np.array([1.0, 2.5, 1.0]), 3, 6.0, 1.0).any()


def test_a_spike_at_the_flat_end_of_a_series_that_bends_is_flagged():
    """The 16-core node's scatter-ring-allgather bcast at P = 16 (OSU max, us, 1 B to 1 MiB): 347 us
    at 1 B, 52x the 6.63 us at 2 B. An end has one side, and the left residuals' scale of a series
    that bends (threshold 2 x 6 x that scale) let it pass. It stands off both its side median and
    the line through 2 B and 4 B by more than twice the inner threshold: flagged. The doubling end
    (1 MiB) stands off its side median but sits near the line through 256 and 512 KiB: not."""
    x = np.array([347.16, 6.63, 133.03, 6.61, 31.13, 27.49, 27.55, 23.3, 27.7, 18.91, 28.12, 29.36, 36.36, 59.1,
                  75.43, 88.26, 171.87, 232.99, 393.97, 368.56, 902.55])
    assert np.flatnonzero(qu.series_flags(x, 3, 6.0, 1.0)).tolist() == [0]
    # the line alone does not flag: a step right after the first value puts the line through 2 and
    # 16 at 0.25 there (8x below 2.0), but 2.0 is below its side median (16)
    step = np.array([2.0, 2.0, 16.0, 20.0, 22.0, 22.0, 23.0, 22.0, 23.0])
    assert not qu.series_flags(step, 3, 6.0, 1.0).any()
    # without five inner values there is no inner scale: the end's own rule alone (four values)
    assert not qu.series_flags(np.array([347.16, 6.63, 133.03, 6.61]), 3, 6.0, 1.0).any()


def test_values_that_are_not_measurements_are_skipped_as_neighbours():
    # the NaN and the 0 are not values: 5.0 still has three 1.0 on each side
    x = np.array([1.0, 1.0, np.nan, 1.0, 5.0, 0.0, 1.0, 1.0, 1.0])
    got = qu.series_flags(x, 3, 6.0, 1.0)
    assert got.tolist() == [False, False, False, False, True, False, False, False, False]


@pytest.mark.parametrize("direction", ["up", "both"])
def test_every_series_at_once_equals_one_at_a_time(direction):
    rng = np.random.default_rng(7)
    series = []
    for _ in range(300):
        n = int(rng.integers(1, 40))
        x = np.exp(rng.normal(0, 0.05, n)) * np.geomspace(1, 50, n)
        hit = rng.random(n)
        x[hit < 0.08] *= rng.uniform(2, 30)  # spikes
        x[(hit > 0.08) & (hit < 0.12)] /= 10  # dips
        x[hit > 0.97] = np.nan
        x[(hit > 0.95) & (hit <= 0.97)] = 0.0
        series.append(x)
    width = max(len(s) for s in series)
    X = np.full((len(series), width), np.nan)
    for i, s in enumerate(series):
        X[i, :len(s)] = s
    got = qu.batch_flags(X, 3, 4.0, 0.5, direction, 2.0)
    for i, s in enumerate(series):
        one = qu.series_flags(s, 3, 4.0, 0.5, direction, 2.0)
        assert got[i, :len(s)].tolist() == one.tolist(), i
        assert not got[i, len(s):].any()
    assert got.any()


def _plain(x, window, z, min_relative, direction, edge_factor):
    """The rule written out for one series with Python loops (no shared code with the module)."""
    import warnings

    flags = np.zeros(len(x), dtype=bool)
    idx = np.flatnonzero(np.isfinite(x) & (x > 0))
    if len(idx) < 3:
        return flags
    lx = np.log(x[idx])
    excluded = np.zeros(len(idx), dtype=bool)

    def median(v):
        v = v[np.isfinite(v)]
        return float(np.median(v)) if len(v) else np.nan

    for _ in range(2):
        ref = np.where(excluded, np.nan, lx)
        left = np.array([median(ref[max(0, i - window):i]) for i in range(len(lx))])
        right = np.array([median(ref[i + 1:i + 1 + window]) for i in range(len(lx))])
        rl, rr = lx - left, lx - right

        def scale_of(v):
            return 1.4826 * np.median(np.abs(v - np.median(v))) if len(v) else np.nan

        edge = max(z * np.nan_to_num(scale_of(rl[np.isfinite(rl) & ~excluded])), np.log1p(min_relative))
        mid = (lx - (left + right) / 2)[np.isfinite(rl) & np.isfinite(rr) & ~excluded]
        thr = max(z * scale_of(mid), np.log1p(min_relative)) if len(mid) >= qu.MIN_INNER else edge
        new = np.zeros(len(lx), dtype=bool)
        for i in range(len(lx)):
            a, b = rl[i], rr[i]
            if direction == "up":
                a, b = (max(a, 0.0) if np.isfinite(a) else a), (max(b, 0.0) if np.isfinite(b) else b)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                if np.isfinite(a) and np.isfinite(b):
                    new[i] = np.sign(a) == np.sign(b) and min(abs(a), abs(b)) > thr
                elif np.isfinite(a) or np.isfinite(b):
                    one = a if np.isfinite(a) else b
                    new[i] = abs(one) > edge_factor * edge
                    # the end off the line through its side's two nearest kept values too
                    side = range(1, len(lx)) if i == 0 else range(len(lx) - 2, -1, -1)
                    near = [j for j in side if not excluded[j]][:2]
                    if len(mid) >= qu.MIN_INNER and len(near) == 2:
                        j, k = near
                        t = lx[i] - (lx[j] + (lx[k] - lx[j]) * (i - j) / (k - j))
                        t = max(t, 0.0) if direction == "up" else t
                        new[i] |= bool(np.sign(one) == np.sign(t) and min(abs(one), abs(t)) > edge_factor * thr)
        excluded = new
    flags[idx] = excluded
    return flags


@pytest.mark.parametrize("direction", ["up", "both"])
def test_every_series_at_once_equals_the_rule_written_out(direction):
    rng = np.random.default_rng(11)
    series = []
    for _ in range(150):
        n = int(rng.integers(1, 30))
        x = np.exp(rng.normal(0, 0.05, n)) * np.geomspace(1, 50, n)
        hit = rng.random(n)
        x[hit < 0.1] *= rng.uniform(2, 30)
        x[(hit > 0.1) & (hit < 0.15)] /= 10
        x[hit > 0.96] = np.nan
        series.append(x)
    X = np.full((len(series), max(len(s) for s in series)), np.nan)
    for i, s in enumerate(series):
        X[i, :len(s)] = s
    got = qu.batch_flags(X, 3, 4.0, 0.5, direction, 2.0)
    for i, s in enumerate(series):
        assert got[i, :len(s)].tolist() == _plain(s, 3, 4.0, 0.5, direction, 2.0).tolist(), i
    assert got.any()


def _reference(df, table, **options):
    """The rule one series at a time, as a loop over groups (the definition)."""
    flags = np.zeros(len(df), dtype=bool)
    for keys, axis in qu.SERIES[table]:
        keys = [k for k in keys if k in df]
        ordered = df.sort_values([*keys, *axis], kind="stable")
        for _, grp in ordered.groupby(keys, sort=False, dropna=False):
            if len(grp) >= 3:
                for col in qu.VALUES[table]:
                    flags[grp.index.to_numpy()] |= qu.series_flags(grp[col].to_numpy(float), **options)
    return flags


def test_flag_outliers_equals_the_loop_over_series(monkeypatch):
    rng = np.random.default_rng(3)
    rows = []
    for alg in (1, 2):
        for P in range(2, 60, 3):
            for size in (1, 8, 64, 1024):
                for run in range(int(rng.integers(1, 3))):
                    avg = (1 + 0.1 * P) * (1 + size / 512) * np.exp(rng.normal(0, 0.03))
                    if rng.random() < 0.05:
                        avg *= 20
                    rows.append({"operation": "bcast", "algorithm": alg, "mapping": "core", "P": P, "size": size,
                                 "iterations": 1000, "run": run, "source": "x", "avg": avg, "max": avg * 1.3})
    df = pd.DataFrame(rows).sample(frac=1, random_state=1).reset_index(drop=True)
    options = {"window": 3, "z": 6.0, "min_relative": 1.0, "direction": "up", "edge_factor": 2.0}
    got = qu.flag_outliers(df, "collective", **options).to_numpy()
    assert got.tolist() == _reference(df, "collective", **options).tolist() and got.sum() > 5
    monkeypatch.setattr(qu, "CHUNK_CELLS", 7)  # a few series per batch: the same flags
    assert qu.flag_outliers(df, "collective", **options).to_numpy().tolist() == got.tolist()


def test_a_value_column_left_out_flags_as_if_it_held_no_value():
    """A processed CSV with an avg column only: tidy leaves the empty max column out, and the flags
    are those of the table whose max is all NaN (issue 15's tabular source, caught by CI)."""
    P = np.arange(2, 12)
    avg = 1.0 + 0.1 * P
    avg[5] *= 30  # one spike between steady neighbours
    df = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": P, "size": 8,
                       "iterations": 1000, "run": 0, "source": "x", "avg": avg})
    options = {"window": 3, "z": 6.0, "min_relative": 1.0, "direction": "up", "edge_factor": 2.0}
    got = qu.flag_outliers(df, "collective", **options).to_numpy()
    assert got.tolist() == [i == 5 for i in range(len(P))]
    assert got.tolist() == qu.flag_outliers(df.assign(max=np.nan), "collective", **options).to_numpy().tolist()


def test_the_median_of_three_equals_pandas_rolling_median():
    """The outlier rule's default window (3) takes a sorting network instead of pandas' rolling
    median: the same values, NaNs skipped, at the ends and between missing values."""
    x = np.array([2.0, np.nan, 5.0, 1.0, 4.0, np.nan, np.nan, 3.0])
    # windows ending at each element: [2], [2], [2, 5], [5, 1], [5, 1, 4], [1, 4], [4], [3]
    assert np.array_equal(qu._median_of_three(x), [2.0, 2.0, 3.5, 3.0, 4.0, 2.5, 4.0, 3.0])
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 3, 500):
        y = rng.normal(size=n)
        y[rng.random(n) < 0.3] = np.nan
        want = pd.Series(y).rolling(3, min_periods=1).median().to_numpy()
        assert np.array_equal(qu._median_of_three(y), want, equal_nan=True)
    left, right = qu.side_medians(x, 3)  # of 2.0: nothing on its left; [nan, 5, 1] on its right
    assert np.isnan(left[0]) and right[0] == 3.0 and left[4] == 3.0 and right[4] == 3.0  # of 4.0: [nan, 5, 1], [nan, nan, 3]


def test_stable_order_equals_lexsort():
    """One stable sort of a packed key orders rows as np.lexsort does, first key major; integer
    nulls (NaN codes) and ranges beyond 63 bits take lexsort itself."""
    keys = [np.array([1, 0, 1, 0, 1]), np.array([7, 9, 7, 8, 3])]
    assert qu.stable_order(keys).tolist() == [3, 1, 4, 0, 2]  # (0, 8), (0, 9), (1, 3), (1, 7), (1, 7)
    rng = np.random.default_rng(2)
    for codes in ([rng.integers(0, 3, 400), rng.integers(-5, 5, 400), rng.integers(0, 2, 400)],
                  [rng.integers(0, 1 << 40, 400), rng.integers(0, 1 << 30, 400)],  # beyond 63 bits
                  [rng.integers(0, 3, 400).astype(float), np.where(rng.random(400) < 0.2, np.nan, 1.0)]):
        assert qu.stable_order(codes).tolist() == np.lexsort(codes[::-1]).tolist()
    in_order = [np.array([0, 0, 1, 1]), np.array([2, 5, 1, 1])]  # sorted already: the identity, no sort
    assert qu.stable_order(in_order).tolist() == [0, 1, 2, 3]
    # rows that follow their minor keys already (a raw log: run, then size) sort on the major ones
    # alone: (size, run) of runs 0, 1 of sizes 4, 1, 2, and a run 1 again (ties keep their order)
    size, run = np.array([4, 1, 2, 4, 1, 2, 1]), np.array([0, 0, 0, 1, 1, 1, 1])
    assert qu.stable_order([size, run]).tolist() == [1, 4, 6, 2, 5, 0, 3]
    assert qu.stable_order([size, run]).tolist() == np.lexsort([run, size]).tolist()
    for n_major in (3, 300, 1 << 20):  # dense ranks in 8 bits, 16 bits, and beyond
        major, minor = rng.integers(0, n_major, 80_000) * 1000, np.sort(rng.integers(0, 50, 80_000))
        codes = [rng.integers(0, 2, 80_000), major, minor]
        assert qu.stable_order(codes).tolist() == np.lexsort(codes[::-1]).tolist()


def test_the_flags_do_not_depend_on_the_order_of_the_rows():
    """The tidy table flags its rows before sorting them: rows of two sources equal on every key
    and axis column (runs are numbered per file) keep the order of their source, so shuffled rows
    get the same flags, row for row."""
    rng = np.random.default_rng(1)
    rows = []
    for source in ("b.txt", "a.txt"):
        for P in range(2, 30):
            avg = (1 + 0.1 * P) * np.exp(rng.normal(0, 0.03)) * (3 if rng.random() < 0.25 else 1)
            rows.append({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": P, "size": 1,
                         "iterations": 1000, "run": 0, "source": source, "avg": avg, "max": avg})
    df = pd.DataFrame(rows)
    options = {"window": 3, "z": 6.0, "min_relative": 1.0, "direction": "up", "edge_factor": 2.0}
    want = qu.flag_outliers(df, "collective", **options)
    assert want.sum() > 3
    shuffled = df.sample(frac=1, random_state=2)
    assert qu.flag_outliers(shuffled, "collective", **options).sort_index().tolist() == want.tolist()


def test_series_already_together_are_flagged_without_a_sort():
    """A raw log's rows stand run by run, sizes rising: each series along the size is one stretch,
    so the rule takes them as they stand (no sort), with the flags a sort would give. A key met in
    two stretches, or an axis that falls inside one, takes the sort."""
    key = [np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])]
    assert qu._series_starts(key, [np.array([1, 2, 4, 1, 2, 4, 1, 1, 2])]).tolist() == [1, 0, 0, 1, 0, 0, 1, 0, 0]
    assert qu._series_starts(key, [np.array([1, 4, 2, 1, 2, 4, 1, 1, 2])]) is None  # 4 then 2 in one stretch
    assert qu._series_starts([np.array([0, 0, 0, 1, 1, 1, 0, 0, 0])], [np.arange(9)]) is None  # 0 twice
    assert qu._series_starts([np.array([0.0, 0.0, 0.0, 1.0])], [np.array([1, 2, 3, 1])]) is None  # NaN codes
    assert qu._series_starts([np.array([0, 1, 2, 3])], [np.zeros(4, dtype=int)]) is None  # a row each: sorted
    rng = np.random.default_rng(4)
    rows = []
    for run in range(40):
        for size in (1, 2, 4, 8, 16, 32, 64, 128):
            avg = (1 + size / 64) * np.exp(rng.normal(0, 0.03)) * (25 if rng.random() < 0.04 else 1)
            rows.append({"channel": "core", "receiver": 1, "size": size, "iterations": 1000, "run": run,
                         "source": "x.txt", "avg": avg})
    df = pd.DataFrame(rows)
    options = {"window": 3, "z": 6.0, "min_relative": 1.0, "direction": "up", "edge_factor": 2.0}
    want = qu.flag_outliers(df, "pt2pt", **options)
    assert want.sum() >= 3 and want.tolist() == _reference(df, "pt2pt", **options).tolist()
    shuffled = df.sample(frac=1, random_state=3)
    assert qu.flag_outliers(shuffled, "pt2pt", **options).sort_index().tolist() == want.tolist()
