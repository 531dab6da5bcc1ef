"""Segment sizes priced beside whole messages (collat.model.segments)."""

import numpy as np
import pytest

from collat import UserError
from collat import model as md
from collat.model import openmpi_mode as om
from collat.model.segments import SEGMENT_COLUMNS, segment_ratios
from conftest import study_model

TINY = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 2, "cores_per_l3": 1, "numa_per_socket": 1}


def tiny_mode(config):
    """The openmpi mode on TINY with costs at 8 and 64 B (64 B: ten times 8 B's), bcast only."""
    alpha = beta = np.array([[0.5], [1.0], [2.0]]) * [1, 10]
    tab = alpha[:, :, None] + beta[:, :, None] * np.arange(8.0)  # [K, S, receivers]
    tab[:, :, 0] = 0
    costs = md.ChannelCosts(["core", "socket", "node"], [8, 64], alpha + beta, alpha, beta, tab)
    options = md.ModelOptions.from_config(study_model(config), ("core",))
    return om.OpenMPIMode({"bcast": costs}, options)


def test_ratios_of_the_trees_openmpi_cuts_by_hand(config):
    ratios = segment_ratios([tiny_mode(config)], md.Placements(TINY), config["algorithms"], [4], [8], [8, 64])
    assert list(ratios.columns) == SEGMENT_COLUMNS
    assert set(ratios["algorithm"]) == {2, 3, 5, 6, 7}  # the trees OpenMPI cuts: not the default, linear, schedules
    assert (ratios.loc[ratios["size"] == 8, "ratio"] == 1.0).all()  # one segment
    # the pipeline 0 -> 1 -> 2 -> 3 (core, socket, core): whole 64 B messages 40 us; in segments of
    # 8 B, 4 us for the first and 7 steps of the socket's fan-out of one (2 us): 18 us
    pipeline = ratios[(ratios["algorithm"] == 3) & (ratios["size"] == 64) & (ratios["target"] == "max")]
    assert pipeline["ratio"].tolist() == pytest.approx([18 / 40])


def test_a_segment_size_the_grid_does_not_price_is_one_line(config):
    with pytest.raises(UserError, match=r"^config key model.segment_sizes: 16 is not a size of the grid \(the measured "
                                        r"sizes and model.extra_sizes: 8, 64\)$"):
        segment_ratios([tiny_mode(config)], md.Placements(TINY), config["algorithms"], [4], [16], [8, 64])
    assert segment_ratios([tiny_mode(config)], md.Placements(TINY), config["algorithms"], [4], [], [8, 64]).empty
