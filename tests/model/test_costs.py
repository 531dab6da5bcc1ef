"""The channel costs read from the earlier stages' outputs (collat.model.costs)."""

import numpy as np
import pandas as pd
import pytest

from collat.model.costs import ChannelCosts, fills_node

HOCKNEY = pd.DataFrame({"channel": ["cache", "node"], "regime": [0, 0], "size_min": [1, 1], "size_max": [2**20, 2**20],
                        "alpha_us": [1.0, 1.0], "beta_us_per_byte": [0.0, 0.0]})  # T_p2p = 1 us at every size
FITS = pd.DataFrame({"operation": "bcast", "target": "max", "channel": ["cache", "node"], "size": 1,
                     "alpha_us": 0.5, "beta_us": 0.5})


def medians(channel: str, P, latency) -> pd.DataFrame:
    return pd.DataFrame({"operation": "bcast", "channel": channel, "P": P, "size": 1, "target": "max",
                         "latency": latency})


def test_an_nbft_run_fills_a_node_by_its_ranks_on_one_node():
    # the root and its receivers share a node; on the node channel the receivers fill another
    assert fills_node("cache", [15, 16], 16).tolist() == [False, True]
    assert fills_node("node", [16, 17], 16).tolist() == [False, True]
    assert not fills_node("core", [1000], None).any()


def test_fan_outs_of_a_collective_with_an_idle_core_are_read_from_the_runs_that_leave_one():
    """Runs of 1, 3, 7 and 15 receivers (1, 2, 4, 20 us) on a node of 16 cores: the last fills it.
    Every fan-out reads all four (11 receivers: 4 + 16 x 4/8 = 12 us); the idle table the first
    three, beyond 7 receivers along the line through the last two (0.5 us each: 11 -> 6 us)."""
    costs = ChannelCosts.from_stage_outputs(HOCKNEY, FITS, "bcast", "max", ["cache"], [1],
                                            medians("cache", [2, 4, 8, 16], [1.0, 2.0, 4.0, 20.0]), 15, 16)
    assert costs.table_by_receivers[0, [1, 7, 11, 15], 0] == pytest.approx([1, 4, 12, 20])
    assert costs.idle_table[0, [0, 1, 3, 7, 11, 15], 0] == pytest.approx([0, 1, 2, 4, 6, 8])
    idle = costs.idle()
    assert idle.table_by_receivers[0, 11, 0] == pytest.approx(6) and idle.idle_table is None
    assert costs.table_by_receivers[0, 11, 0] == pytest.approx(12)  # the costs themselves unchanged


def test_no_idle_table_where_the_runs_that_fill_a_node_change_no_fan_out_an_idle_collective_has():
    """On the node channel 16 receivers fill the other node: a collective with an idle core has at
    most 15 there, which the runs below read alike (and so without the machine's cores)."""
    runs = medians("node", [2, 9, 16, 17], [1.0, 2.0, 3.0, 30.0])
    costs = ChannelCosts.from_stage_outputs(HOCKNEY, FITS, "bcast", "max", ["node"], [1], runs, 16, 16)
    assert costs.idle_table is None and costs.idle() is costs
    assert ChannelCosts.from_stage_outputs(HOCKNEY, FITS, "bcast", "max", ["cache"], [1],
                                           medians("cache", [2, 4, 8, 16], [1.0, 2.0, 4.0, 20.0]), 15).idle_table is None


def test_one_idle_run_is_continued_along_the_nbft_line():
    costs = ChannelCosts.from_stage_outputs(HOCKNEY, FITS, "bcast", "max", ["cache"], [1],
                                            medians("cache", [2, 4], [1.0, 9.0]), 3, 4)
    assert costs.idle_table[0, :, 0] == pytest.approx([0, 1, 1.5, 2])  # 1 us, then the line's 0.5 a receiver
    assert np.isfinite(costs.table_by_receivers).all()


def test_a_full_node_s_slowdown_from_the_nbft_runs_that_fill_one():
    """The runs of 1, 3, 7 receivers (1, 2, 4 us) continue to 15 receivers along the line through
    the last two (8 us); the run of 15, which fills a node of 16 cores, took 20 us: 2.5 times. On
    the node channel the run of 16 receivers fills the other node: 30 us over the line's 3 + 1/7
    (2 and 3 us at 8 and 15 receivers): 210/22 times. The median of the two."""
    from collat.model.costs import full_node_slowdown
    cache = medians("cache", [2, 4, 8, 16], [1.0, 2.0, 4.0, 20.0])
    assert full_node_slowdown(cache, "max", ["cache"], 16) == pytest.approx(2.5)
    node = medians("node", [2, 9, 16, 17], [1.0, 2.0, 3.0, 30.0])
    assert full_node_slowdown(node, "max", ["node"], 16) == pytest.approx(210 / 22)
    both = pd.concat([cache, node])
    assert full_node_slowdown(both, "max", ["cache", "node"], 16) == pytest.approx((2.5 + 210 / 22) / 2)
    # not on the channels asked, not of the target, no full run, one idle run, no machine: 1
    assert full_node_slowdown(both, "max", ["socket"], 16) == 1.0
    assert full_node_slowdown(both, "avg", ["cache"], 16) == 1.0
    assert full_node_slowdown(cache, "max", ["cache"], 32) == 1.0
    assert full_node_slowdown(medians("cache", [4, 16], [2.0, 20.0]), "max", ["cache"], 16) == 1.0
    assert full_node_slowdown(cache, "max", ["cache"], None) == 1.0
    # a full run faster than the line: no speed-up, 1
    assert full_node_slowdown(medians("cache", [2, 4, 8, 16], [1.0, 2.0, 4.0, 6.0]), "max", ["cache"], 16) == 1.0
