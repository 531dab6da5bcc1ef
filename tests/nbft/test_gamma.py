"""NBFT lines (study eq. 6) and parallelisation factors (study eq. 4, 7): by hand, then on the study's data."""

import numpy as np
import pandas as pd
import pytest

from collat.pt2pt.hockney import fit_hockney
from collat.nbft.gamma import assumed_lines, gamma_hat, median_table, nbft_factors, nbft_line


SIZES = np.array([2**k for k in range(23)])


def synthetic_pt2pt(breaks_at=131072):
    lat = np.where(SIZES <= breaks_at, 0.5 + 2e-4 * SIZES, 3.0 + 1e-4 * SIZES)
    return pd.DataFrame({"channel": "core", "size": SIZES, "avg": lat, "outlier": False})


def test_nbft_line_and_gamma_exact():
    P = np.arange(2, 20)
    f = nbft_line(P, 1.0 + 0.25 * (P - 1))
    assert (f["a"], f["b"]) == pytest.approx((1.0, 0.25))
    assert gamma_hat([2.0, 4.0], 0.5).tolist() == [4.0, 8.0]


def test_median_table_by_hand():
    """Median over runs per (operation, channel, size, P), outliers and missing values left out."""
    nbft = pd.DataFrame({
        "operation": ["bcast"] * 6 + ["reduce"],
        "channel": ["core"] * 7,
        "size": [1, 1, 1, 1, 1, 8, 1],
        "P": [4, 4, 4, 4, 8, 4, 4],
        "avg": [1.0, 3.0, 2.0, 100.0, 5.0, 7.0, 0.5],
        "max": [2.0, np.nan, 6.0, 200.0, 9.0, 8.0, 0.7],
        "outlier": [False, False, False, True, False, False, False],
    })
    t = median_table(nbft).set_index(["operation", "size", "P", "target"])["latency"]
    assert t[("bcast", 1, 4, "avg")] == 2.0  # 1, 3, 2 (100 is an outlier)
    assert t[("bcast", 1, 4, "max")] == 4.0  # 2, 6 (NaN left out)
    assert t[("bcast", 1, 8, "avg")] == 5.0 and t[("bcast", 8, 4, "max")] == 8.0
    assert t[("reduce", 1, 4, "avg")] == 0.5 and len(t) == 8
    assert median_table(nbft, ("avg",))["target"].unique().tolist() == ["avg"]


def test_nbft_poor_fit_kept_as_measured_lookup():
    hockney = pd.DataFrame({"channel": ["cache"], "regime": [0], "size_min": [1], "size_max": [8],
                            "alpha_us": [0.1], "beta_us_per_byte": [0.0]})
    nbft = pd.DataFrame({"operation": "bcast", "channel": "cache", "P": [2, 3, 4], "size": 1,
                         "avg": [0.14, 0.30, 0.15], "max": [0.2, 0.3, 0.4], "outlier": False})
    fits, gamma = nbft_factors(nbft, hockney, min_r2=0.9)
    assert fits.set_index("target")["method"].to_dict() == {"avg": "measured", "max": "fit"}
    g = gamma.set_index(["target", "P"])["gamma"]
    assert g[("avg", 3)] == pytest.approx(3.0)
    assert g[("max", 4)] == pytest.approx(4.0)


def test_assumed_lines_only_where_nothing_was_measured_and_priced_at_every_size():
    """cache measured for bcast max only; core never: every other (operation, target, channel) gets
    T_p2p(m) (1 + 0.25 (P - 2)), which the model's costs scale by T_p2p to any size."""
    from collat.model.costs import ChannelCosts

    hockney = pd.DataFrame({"channel": ["cache", "core"], "regime": [0, 0], "size_min": [1, 1],
                            "size_max": [2**20, 2**20], "alpha_us": [0.1, 0.4], "beta_us_per_byte": [1e-3, 1e-3]})
    nbft = pd.DataFrame({"operation": "bcast", "channel": "cache", "P": [2, 3, 4], "size": 1,
                         "avg": np.nan, "max": [0.2, 0.3, 0.4], "outlier": False})
    fits, _ = nbft_factors(nbft, hockney, targets=("max",))
    assumed = assumed_lines(fits, hockney, ["bcast", "reduce"], ["avg", "max"], 0.25)
    got = {(r.operation, r.target, r.channel): (r.alpha_us, r.beta_us) for r in assumed.itertuples()}
    t_cache, t_core = 0.1 + 1e-3, 0.4 + 1e-3  # T_p2p at 1 B
    assert set(got) == {(op, t, ch) for op in ("bcast", "reduce") for t in ("avg", "max")
                        for ch in ("cache", "core")} - {("bcast", "max", "cache")}
    assert got[("reduce", "avg", "core")] == pytest.approx((0.75 * t_core, 0.25 * t_core))
    assert got[("bcast", "avg", "cache")] == pytest.approx((0.75 * t_cache, 0.25 * t_cache))
    assert (assumed["method"] == "assumed").all() and (assumed["size"] == 1).all() and (assumed["n"] == 0).all()
    costs = ChannelCosts.from_stage_outputs(hockney, pd.concat([fits, assumed]), "reduce", "avg", ["core"], [1, 1000])
    t = 0.4 + 1e-3 * np.array([1, 1000])
    assert costs.alpha[0] == pytest.approx(0.75 * t) and costs.beta[0] == pytest.approx(0.25 * t)
    # one receiver costs one message; each further one a quarter of one more
    assert (costs.alpha + costs.beta)[0] == pytest.approx(t)


@pytest.mark.parametrize("target,expected", [("avg", {"core": 15, "socket": 15, "node": 40}),
                                             ("max", {"core": 28, "socket": 29, "node": 72})])
def test_gamma_at_largest_p_at_1_byte(study_tables, config, target, expected):
    """Independent check: measured NBFT at the largest P over the measured 1 B median is about
    15/15/40 (avg) and 28/29/72 (max); eq. 7 with the fitted lines gives the same within 15 %."""
    tables, _ = study_tables
    fits = fit_hockney(tables["pt2pt"], config["channels"], config["pt2pt"]["breaks"])
    _, gamma = nbft_factors(tables["nbft"], fits, [target], config["nbft"]["min_r2"])
    g = gamma[(gamma.operation == "bcast") & (gamma["size"] == 1)]
    top = g.loc[g.groupby("channel")["P"].idxmax()].set_index("channel")["gamma"]
    p, n = tables["pt2pt"], tables["nbft"]
    for ch, value in expected.items():
        nb = n[(n.operation == "bcast") & (n.channel == ch) & (n["size"] == 1)]
        measured = nb.loc[nb.P == nb.P.max(), target].mean() / p[(p.channel == ch) & (p["size"] == 1)]["avg"].median()
        assert measured == pytest.approx(value, rel=0.1)
        assert top[ch] == pytest.approx(value, rel=0.15)


def test_the_slope_step_is_the_break_most_intra_node_channels_show():
    from collat.nbft.gamma import slope_step

    sizes = 2 ** np.arange(0, 12)  # 1 B .. 2 KiB
    step = np.where(sizes <= 64, 0.1, 0.27) + 1e-5 * sizes  # doubles from 64 to 128 B, then grows
    noise = iter(np.random.default_rng(3).normal(1.0, 0.02, (20, len(sizes))))  # 2 %, each series its own

    def fits(channel, slope, operation="bcast", method="fit", target="max"):
        return pd.DataFrame({"operation": operation, "channel": channel, "size": sizes, "target": target,
                             "beta_us": slope * next(noise), "method": method})

    both = pd.concat([fits("core", step), fits("socket", 1.6 * step), fits("core", step, "reduce")])
    assert slope_step(both, "max", 131072) == 64
    assert slope_step(fits("core", step), "max", 131072) is None  # one series alone: not enough
    assert slope_step(both, "avg", 131072) is None  # nothing measured at that target
    # the node channel, a line assumed where nothing was measured, a slope not positive at every
    # size and sizes above the eager limit are not read
    line = 0.1 + 1e-5 * sizes
    socket = fits("socket", step)
    assert slope_step(pd.concat([fits("node", step), socket]), "max", 131072) is None
    assert slope_step(pd.concat([fits("core", step, method="assumed"), socket]), "max", 131072) is None
    assert slope_step(pd.concat([fits("core", np.where(sizes == 4, -0.01, step)), socket]), "max", 131072) is None
    assert slope_step(pd.concat([fits("core", step), socket]), "max", 32) is None  # above the eager limit
    # a noisy line may show a break of its own; not the same in two series
    assert slope_step(pd.concat([fits("core", line), socket]), "max", 131072) is None
    # channels that disagree: the break most of them show
    other = np.where(sizes <= 256, 0.1, 0.3) + 1e-5 * sizes
    assert slope_step(pd.concat([fits("core", other), fits("socket", step), fits("cache", step)]), "max",
                      131072) == 64


def fan_in_lines(shares: dict, sizes, P_max: int = 10, method: str = "fit", operation: str = "reduce"):
    """NBFT lines of flat fan-ins whose avg is ``shares[channel]`` (one per size) of max at P_max:
    max = 1 + 1 (P - 1) us, avg = its share of that through the origin."""
    rows = []
    for channel, share in shares.items():
        top = 1.0 + (P_max - 1)
        rows.append(pd.DataFrame({"operation": operation, "channel": channel, "size": sizes, "target": "max",
                                  "alpha_us": 1.0, "beta_us": 1.0, "P_max": P_max, "method": method}))
        rows.append(pd.DataFrame({"operation": operation, "channel": channel, "size": sizes, "target": "avg",
                                  "alpha_us": 0.0, "beta_us": np.asarray(share) * top / (P_max - 1),
                                  "P_max": P_max, "method": method}))
    return pd.concat(rows, ignore_index=True)


def test_the_eager_limit_is_where_the_fan_ins_senders_start_to_wait():
    """avg / max of the reduce fan-ins at their largest P steps up after 4 KiB on both channels
    (node 0.05 -> 0.5, core 0.3 -> 0.55): one step, the same for both, at 4096."""
    from collat.nbft.gamma import eager_switch

    sizes = 2 ** np.arange(0, 21)  # 1 B .. 1 MiB
    eager = sizes <= 4096
    node, core = np.where(eager, 0.05, 0.5), np.where(eager, 0.3, 0.55)
    assert eager_switch(fan_in_lines({"node": node, "core": core}, sizes)) == 4096
    assert eager_switch(fan_in_lines({"node": node}, sizes)) == 4096  # one channel is enough
    # channels that disagree: the step both share that leaves the least squared error; core's own
    # step at 16 KiB is the smaller (0.3 -> 0.35), node's at 4 KiB the larger
    late = np.where(sizes <= 16384, 0.3, 0.35)
    assert eager_switch(fan_in_lines({"node": node, "core": late}, sizes)) == 4096
    # no step, a share that falls, too few sizes a side, assumed lines and bcast runs: none shown
    assert eager_switch(fan_in_lines({"node": np.full(len(sizes), 0.2)}, sizes)) is None
    assert eager_switch(fan_in_lines({"node": node[::-1]}, sizes)) is None
    assert eager_switch(fan_in_lines({"node": node[8:13]}, sizes[8:13])) is None  # five sizes: three a side
    assert eager_switch(fan_in_lines({"node": node}, sizes, method="assumed")) is None
    assert eager_switch(fan_in_lines({"node": node}, sizes, operation="bcast")) is None
    # noise alone is no step (the BIC of one level per channel wins), a step over the noise is
    noise = np.exp(np.random.default_rng(0).normal(0.0, 0.1, len(sizes)))
    assert eager_switch(fan_in_lines({"node": 0.2 * noise}, sizes)) is None
    assert eager_switch(fan_in_lines({"node": node * noise}, sizes)) == 4096


def test_the_eager_limit_null_comes_from_the_fan_ins_before_the_point_to_point_break(config):
    """ModelOptions: a stated eager limit stands; null takes the fan-ins' step, else the protocol
    switch of the Hockney fits; the small-message limit auto follows the limit the data show."""
    from collat.model import ModelOptions
    from conftest import study_model

    sizes = 2 ** np.arange(0, 21)
    lines = fan_in_lines({"node": np.where(sizes <= 4096, 0.05, 0.5)}, sizes)
    hockney = pd.DataFrame({"channel": ["core", "core"], "regime": [0, 1], "size_max": [512, 4194304],
                            "switch": 512.0, "switch_jump": 0.5})  # the point-to-point switch
    model = study_model(config)
    model["openmpi"]["small_limit"] = "auto"
    assert ModelOptions.from_config(model, hockney=hockney, nbft_fits=lines).openmpi.eager_limit == 131072
    model["openmpi"]["eager_limit"] = None
    got = ModelOptions.from_config(model, hockney=hockney, nbft_fits=lines).openmpi
    assert got.eager_limit == 4096 and got.small_limit == 4096  # no slope step among bcast lines: the limit
    flat = fan_in_lines({"node": np.full(len(sizes), 0.2)}, sizes)
    assert ModelOptions.from_config(model, hockney=hockney, nbft_fits=flat).openmpi.eager_limit == 512
    # and where each came from, as the summary says it
    from collat.model.options import EAGER_SOURCES, eager_limit

    assert eager_limit(131072, hockney, lines) == (131072.0, "config")
    assert eager_limit(None, hockney, lines) == (4096.0, "nbft")
    assert eager_limit(None, hockney, flat) == (512.0, "pt2pt")
    assert eager_limit(None, hockney.drop(columns=["switch", "switch_jump"]), flat) == (4096.0, "openmpi")
    assert set(EAGER_SOURCES) == {"config", "nbft", "pt2pt", "openmpi"}


def test_the_study_s_fan_ins_show_its_eager_limit(study_tables, config):
    """On ORFEO's NBFT reduce runs avg / max steps up from 128 to 256 KiB on every channel, so the
    eager limit the study config leaves null is 131072 (the cut in tests/data has one size above
    128 KiB: too few to show a step, and the point-to-point break gives it there)."""
    from collat.nbft.gamma import eager_switch
    from conftest import STUDY_EAGER_LIMIT

    tables, _ = study_tables
    fits = fit_hockney(tables["pt2pt"], config["channels"], config["pt2pt"]["breaks"])
    lines, _ = nbft_factors(tables["nbft"], fits, ["avg", "max"], config["nbft"]["min_r2"])
    assert eager_switch(lines) == STUDY_EAGER_LIMIT == 131072
