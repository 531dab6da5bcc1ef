"""Hockney fits per channel (study eq. 5) and the channel ratios Q (study eq. 10): by hand, then on the study's data."""

import numpy as np
import pandas as pd
import pytest

from collat.pt2pt.hockney import detect_breaks, fit_hockney, ols_line, q_ratios, regimes, t_p2p


SIZES = np.array([2**k for k in range(23)])


def synthetic_pt2pt(breaks_at=131072):
    lat = np.where(SIZES <= breaks_at, 0.5 + 2e-4 * SIZES, 3.0 + 1e-4 * SIZES)
    return pd.DataFrame({"channel": "core", "size": SIZES, "avg": lat, "outlier": False})


@pytest.mark.parametrize("weighting", ["relative", "none"])
def test_exact_piecewise_line_recovered(weighting):
    fits = fit_hockney(synthetic_pt2pt(), ["core"], [131072], weighting=weighting)
    assert fits[["size_min", "size_max"]].values.tolist() == [[1, 131072], [262144, 4194304]]
    assert fits["alpha_us"].tolist() == pytest.approx([0.5, 3.0])
    assert fits["beta_us_per_byte"].tolist() == pytest.approx([2e-4, 1e-4])
    assert fits["bandwidth_GBps"].tolist() == pytest.approx([5.0, 10.0])
    assert fits["r2"].tolist() == pytest.approx([1.0, 1.0])


def test_t_p2p_evaluates_the_right_regime():
    fits = fit_hockney(synthetic_pt2pt(), ["core"], [131072])
    got = t_p2p(fits, "core", [1, 131072, 200000, 2**23])
    assert got == pytest.approx([0.5 + 2e-4, 0.5 + 2e-4 * 131072, 3.0 + 1e-4 * 200000, 3.0 + 1e-4 * 2**23])
    with pytest.raises(KeyError, match="no Hockney fit"):
        t_p2p(fits, "node", [1])


def test_regimes_break_belongs_to_lower():
    assert regimes([1, 131072, 262144], [131072]).tolist() == [0, 0, 1]


def test_break_detection_finds_a_planted_break():
    d = synthetic_pt2pt(breaks_at=16384)
    assert detect_breaks(d["size"].to_numpy(), d["avg"].to_numpy(), 1, 3) == [16384]


def test_ols_line_standard_errors_zero_on_exact_data():
    f = ols_line([0, 1, 2, 3], [1, 3, 5, 7])
    assert (f["a"], f["b"]) == pytest.approx((1, 2)) and f["b_se"] == pytest.approx(0, abs=1e-12)


def test_q_has_no_assumed_order():
    fits = pd.DataFrame({"channel": ["a", "b"], "regime": 0, "size_min": 1, "size_max": 2**22,
                         "alpha_us": [1.0, 2.0], "beta_us_per_byte": [2e-4, 1e-4]})
    q = q_ratios(fits, [1, 2**20]).set_index(["channel_i", "channel_j", "size"])["q"]
    assert q[("b", "a", 1)] == pytest.approx(2.0001 / 1.0002)
    assert q[("b", "a", 2**20)] < 1  # the faster-at-small-sizes channel loses at large sizes
    assert q[("a", "b", 2**20)] == pytest.approx(1 / q[("b", "a", 2**20)])


@pytest.fixture(scope="module")
def fitted(study_tables, config):
    tables, _ = study_tables
    return fit_hockney(tables["pt2pt"], config["channels"], config["pt2pt"]["breaks"])


def test_hockney_on_orfeo(fitted, study_tables):
    assert set(fitted["channel"]) == {"cache", "core", "socket", "node"}
    assert (fitted.groupby("channel")["size_max"].min() == 131072).all()
    assert (fitted.groupby("channel")["size_min"].max() == 262144).all()
    # alpha of the small-size regime is the 1 B latency (medians 0.15, 0.40, 0.67, 1.83 us) within 20 %
    # (one line across 1 B..128 KiB cannot follow the eager/rendezvous curvature exactly)
    alpha = fitted[fitted.regime == 0].set_index("channel")["alpha_us"]
    tables, _ = study_tables
    p = tables["pt2pt"]
    med = p[p["size"] == 1].groupby("channel")["avg"].median()
    assert ((alpha / med[alpha.index] - 1).abs() < 0.20).all(), (alpha, med)
    assert (fitted["r2"] > 0.85).all()


def test_intra_node_drop_is_detected(study_tables):
    """The data themselves put a break between 128 KiB and 256 KiB for the cache and socket channels."""
    tables, _ = study_tables
    p = tables["pt2pt"]
    for ch in ("cache", "socket"):
        d = p[(p.channel == ch) & ~p.outlier]
        assert 131072 in detect_breaks(d["size"].to_numpy(), d["avg"].to_numpy(), 2, 3)


def test_node_beats_intra_node_from_16kib(fitted):
    q = q_ratios(fitted, SIZES).set_index(["channel_i", "channel_j", "size"])["q"]
    assert q[("node", "core", 1)] > 3
    for size in (32768, 65536, 1048576):
        assert q[("node", "core", size)] < 1
        assert q[("node", "socket", size)] < 1


def test_single_size_channel_is_a_clear_error():
    from collat import InputError

    t = pd.DataFrame({"channel": "node", "size": [2, 2, 2], "avg": [1.0, 1.1, 1.0], "outlier": False,
                      "source": "latency-node.out"})
    with pytest.raises(InputError, match=r"latency-node.out: expected point-to-point latencies of channel 'node' "
                                         r"at two message sizes at least.*found 'only 2 B'"):
        fit_hockney(t, ["node"])


def test_a_negative_alpha_is_held_at_zero_and_flagged():
    """Above a protocol switch a free line can cross zero below its sizes (alpha < 0: a latency
    below zero). By default it is fitted again through the origin, weighted alike, and flagged;
    the study's own fit (nonnegative=False) keeps the free line."""
    sizes = np.array([2**k for k in range(18, 23)], dtype=float)
    lat = -4.0 + 1.3e-4 * sizes  # 30 us at 256 KiB, a free intercept of -4 us
    d = pd.DataFrame({"channel": "core", "size": sizes.astype(int), "avg": lat, "outlier": False})
    held = fit_hockney(d, ["core"], [], weighting="none").iloc[0]
    assert held["alpha_at_bound"] and held["alpha_us"] == 0.0 and held["alpha_se"] == 0.0
    assert held["beta_us_per_byte"] == pytest.approx(np.sum(sizes * lat) / np.sum(sizes ** 2))  # through the origin
    free = fit_hockney(d, ["core"], [], weighting="none", nonnegative=False).iloc[0]
    assert not free["alpha_at_bound"] and free["alpha_us"] == pytest.approx(-4.0)
    assert not fit_hockney(synthetic_pt2pt(), ["core"], [131072]).loc[:, "alpha_at_bound"].any()


def test_the_protocol_switch_is_where_the_curve_breaks_its_stride():
    """synthetic_pt2pt jumps from 0.5 + 2e-4 m to 3.0 + 1e-4 m after 128 KiB: the log-log slope
    from 128 to 256 KiB is log2(29.2144 / 26.7144) = 0.129, the steps beside it 0.974 and 0.924, so
    the departure is 0.820; a smooth line bends its stride by 0.022 per doubling at most."""
    from collat.pt2pt.hockney import protocol_switch

    d = synthetic_pt2pt()
    switch, jump = protocol_switch(d["size"].to_numpy(), d["avg"].to_numpy())
    T = lambda m: 0.5 + 2e-4 * m if m <= 131072 else 3.0 + 1e-4 * m  # noqa: E731
    slope = [np.log2(T(2 * m) / T(m)) for m in (65536, 131072, 262144)]
    assert switch == 131072 and jump == pytest.approx(abs(slope[1] - 0.5 * (slope[0] + slope[2])))
    assert jump == pytest.approx(0.820, abs=1e-3)
    line = 0.5 + 2e-4 * SIZES
    assert protocol_switch(SIZES, line)[1] < 0.022
    assert np.isnan(protocol_switch(SIZES[:3], line[:3])[0])  # three sizes: no step between two others
    fits = fit_hockney(d, ["core"], [131072])
    assert (fits["switch"] == 131072).all() and np.allclose(fits["switch_jump"], jump)


def test_the_eager_limit_is_where_an_intra_node_channel_switches_protocol():
    """The protocol switch most intra-node channels show, ties to the larger jumps; the node
    channel does not count (its switch is the network's); OpenMPI's vader default where none shows."""
    from collat.pt2pt.hockney import VADER_EAGER_LIMIT, eager_limit

    fits = pd.DataFrame({"channel": ["core", "core", "socket", "node", "node"], "regime": [0, 1, 0, 0, 1],
                         "size_max": [131072, 4194304, 4194304, 8192, 4194304],
                         "switch": [131072, 131072, np.nan, 8192, 8192], "switch_jump": [0.8, 0.8, np.nan, 2, 2]})
    assert eager_limit(fits) == 131072
    assert eager_limit(fits[fits["channel"] != "core"]) == VADER_EAGER_LIMIT == 4096
    two = pd.DataFrame({"channel": ["cache", "core", "socket"], "regime": 0, "switch": [256, 131072, 131072],
                        "switch_jump": [3.0, 0.5, 0.6]})
    assert eager_limit(two) == 131072  # two channels of three
    assert eager_limit(two[two["channel"] != "socket"]) == 256  # one each: the larger jump
    from collat.model import ModelOptions
    from conftest import load_config

    model = load_config()["model"]
    model["openmpi"]["eager_limit"] = None
    assert ModelOptions.from_config(model, hockney=fits).openmpi.eager_limit == 131072
    with pytest.raises(ValueError, match="eager_limit null: the pt2pt stage's Hockney fits give it"):
        ModelOptions.from_config(model)
    # the small-message limit auto: no NBFT step (none given), so the protocol switch the core
    # channel shows; without one (the node channel's does not count), none
    from collat.pt2pt.hockney import switch_measured

    model["openmpi"]["small_limit"] = "auto"
    assert switch_measured(fits) and not switch_measured(fits[fits["channel"] != "core"])
    assert ModelOptions.from_config(model, hockney=fits).openmpi.small_limit == 131072
    assert ModelOptions.from_config(model, hockney=fits[fits["channel"] != "core"]).openmpi.small_limit == -1
    # an NBFT slope that steps below the eager limit comes first
    sizes = 2 ** np.arange(0, 12)
    lines = pd.DataFrame({"operation": "bcast", "channel": np.repeat(["core", "socket"], len(sizes)),
                          "size": np.tile(sizes, 2), "target": "max", "method": "fit",
                          "beta_us": np.tile(np.where(sizes <= 64, 0.1, 0.27) + 1e-5 * sizes, 2)})
    assert ModelOptions.from_config(model, hockney=fits, nbft_fits=lines).openmpi.small_limit == 64
