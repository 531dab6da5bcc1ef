"""The launches a machine allows and the first design (collat.plan.design)."""

import numpy as np
import pandas as pd

from collat.plan import design

EPYC = {"name": "e", "nodes": 2, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 4, "numa_per_socket": 4}
SMALL = {"name": "s", "nodes": 2, "sockets_per_node": 2, "cores_per_socket": 4, "cores_per_l3": 2}


def test_boundaries_are_where_ranks_start_another_unit():
    assert design.boundaries(EPYC, "core") == [4, 5, 64, 65, 128, 129, 256]  # an L3, a socket, a node full, +1
    assert design.boundaries(EPYC, "socket") == [2, 3, 128, 129, 256]  # one rank per socket; a node full
    assert design.boundaries(EPYC, "node") == [2, 3, 16, 17, 256]  # one per node; one per NUMA domain (2 x 2 x 4)


def test_candidate_P_every_P_then_a_log_grid_and_the_boundaries():
    P = design.candidate_P(EPYC, "core", every_below=8)
    assert list(P[:7]) == [2, 3, 4, 5, 6, 7, 8]
    assert {12, 16, 24, 32, 48, 64, 65, 96, 128, 129, 192, 256} <= set(P)
    assert P.max() == 256 and 9 not in P and 100 not in P
    # a machine of 1,024 nodes x 128 cores: a few dozen P, not 131,072
    big = {"name": "b", "nodes": 1024, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 8}
    P = design.candidate_P(big, "core")
    assert len(P) < 100 and P.max() == 131072 and {128 * 512, 128 * 512 + 1} <= set(P)


def test_first_design_takes_the_ends_then_the_boundaries_then_the_widest_gap():
    cand = pd.DataFrame({"operation": "bcast", "algorithm": 6, "mapping": "core", "P": np.arange(2, 17)})
    d = design.first_design(cand, SMALL, 5)
    # ends 2 and 16; boundaries of SMALL under map-by core, last first: 9, 8, 5, 4, 3 (a node of 8 full, +1, ...)
    assert list(d["P"]) == [2, 16, 9, 8, 5]
    assert d["reason"].iloc[0] == "first design: an end of the curve"
    assert d["reason"].iloc[2] == "first design: a boundary of the placement"
    order = design._order(np.array([2, 4, 8, 16, 32, 64]), [2, 64])
    # after 2 and 64 (log2 1, 6): 8 is 2 octaves from both (16 too: the smaller wins); then 4, 16, 32 are
    # each 1 octave from the nearest taken
    assert list(order) == [2, 64, 8, 4, 16, 32]


def test_model_launches_pin_one_receiver_per_channel():
    m = design.model_launches(SMALL, ["cache", "core", "socket", "node"], ["bcast"], nbft_points=3)
    p2p = m[m["kind"] == "pt2pt"].set_index("channel")["receiver"].to_dict()
    assert p2p == {"cache": 1, "core": 2, "socket": 4, "node": 8}
    nbft = m[m["kind"] == "nbft"].groupby("channel")["P"].apply(list).to_dict()
    # receivers on one channel: 1 in core 0's L3, 2 in its socket beyond, 4 on the other socket, 8 on the other node
    assert nbft == {"cache": [2], "core": [2, 3], "socket": [2, 3, 5], "node": [2, 4, 9]}
    launch = {"kind": "nbft", "channel": "node", "P": 3}
    assert design.ranks_of(SMALL, launch) == [(0, 0), (1, 0), (1, 1)]


def test_nodes_spanned():
    assert design.nodes_spanned(SMALL, "collective", "core", 9) == 2
    assert design.nodes_spanned(SMALL, "collective", "core", 8) == 1
    assert design.nodes_spanned(SMALL, "collective", "node", 2) == 2
    assert design.nodes_spanned(SMALL, "nbft", None, 3, "node") == 2
    assert design.nodes_spanned(SMALL, "pt2pt", None, 2, "socket") == 1
