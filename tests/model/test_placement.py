"""Rank placement under OpenMPI's --map-by policies and the channel of a pair of ranks."""

import numpy as np
import pytest

from collat.model.placement import active_units, channels_between, laid_end_to_end, place, place_arrays, same_placements

EPYC = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 4, "numa_per_socket": 4}


def test_map_by_core_fills_sockets_then_nodes():
    r = place(256, "core", EPYC)
    assert r.loc[[0, 63, 64, 127, 128, 255], "socket"].tolist() == [0, 0, 1, 1, 2, 3]
    assert r.loc[[0, 127, 128], "node"].tolist() == [0, 0, 1]
    assert r["core"].tolist() == list(range(256)) and r["pinned"].all()
    ch = channels_between(r, [0, 0, 0, 0, 0], [1, 3, 4, 64, 128])
    assert ch.tolist() == ["cache", "cache", "core", "socket", "node"]


def test_map_by_socket_alternates_sockets_of_one_node_first():
    r = place(130, "socket", EPYC)
    assert r.loc[:5, "socket"].tolist() == [0, 1, 0, 1, 0, 1]
    assert r.loc[[127, 128, 129], "node"].tolist() == [0, 1, 1]
    assert not r["pinned"].any()
    # unpinned ranks on one socket: the documented choice is the core channel (configurable)
    assert channels_between(r, [0, 0, 0], [2, 1, 128]).tolist() == ["core", "socket", "node"]
    assert channels_between(r, [0], [2], unpinned_channel="cache").tolist() == ["cache"]


def test_map_by_node_alternates_nodes_and_numa_domains():
    r = place(16, "node", EPYC)
    assert r["node"].tolist() == [0, 1] * 8
    # j-th rank on a node: NUMA domain j (of 8), sockets 0,0,0,0,1,1,1,1
    assert r.loc[r["node"] == 0, "socket"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    two = place(2, "node", EPYC)
    assert two["pinned"].all() and channels_between(two, [0], [1]).tolist() == ["node"]


def test_bad_placement_requests():
    with pytest.raises(ValueError, match="expected 1 <= P <= 256"):
        place(257, "core", EPYC)
    with pytest.raises(ValueError, match="expected one of core, socket, node"):
        place(4, "ring", EPYC)


def test_active_units():
    P = np.array([2, 64, 65, 128, 129, 256])
    assert active_units(P, "core", EPYC).tolist() == [1, 1, 2, 2, 3, 4]
    assert active_units(P, "socket", EPYC).tolist() == [1, 1, 1, 1, 2, 2]
    assert active_units(P, "node", EPYC).tolist() == [1] * 6


def test_channels_used_by_hand():
    """EPYC (4 cores per L3, 2 sockets, 2 nodes) uses every channel; a 16-core single-L3 machine
    only the L3's; map-by socket puts two unpinned ranks of one socket on model.unpinned_channel."""
    from collat.model.placement import channels_used

    epyc = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 4, "numa_per_socket": 4}
    used = channels_used(epyc, ["core"])
    assert used == {"cache": "ranks 0 and 1 of P = 2 under --map-by core",
                    "core": "ranks 0 and 4 of P = 256 under --map-by core",  # rank 4: the second L3
                    "socket": "ranks 0 and 64 of P = 256 under --map-by core",
                    "node": "ranks 0 and 128 of P = 256 under --map-by core"}
    xeon = {"nodes": 1, "sockets_per_node": 1, "cores_per_socket": 16, "cores_per_l3": 16, "numa_per_socket": 1}
    assert list(channels_used(xeon, ["core", "socket", "node"])) == ["cache", "core"]  # core: unpinned ranks
    assert list(channels_used(xeon, ["socket"], unpinned_channel="cache")) == ["cache"]
    # map-by socket on two sockets: ranks 0 and 1 on two sockets, 0 and 2 on one, unpinned
    two = {**xeon, "sockets_per_node": 2}
    assert channels_used(two, ["socket"]) == {"socket": "ranks 0 and 1 of P = 32 under --map-by socket",
                                              "core": "ranks 0 and 2 of P = 32 under --map-by socket"}
    # 128 nodes: the same channels as two, found on two
    assert channels_used({**epyc, "nodes": 128}, ["core"]) == used


def test_another_node_count_keeps_the_places_of_map_by_core_and_socket_only():
    """Map-by core and socket fill node after node: four nodes place P <= 256 as two do. Map-by node
    spreads over every node: at P = 3, ranks 0, 1, 2 sit on nodes 0, 1, 0 of two nodes and on 0, 1, 2 of four."""
    four = {**EPYC, "nodes": 4}
    assert same_placements(EPYC, four, "core") and same_placements(EPYC, four, "socket")
    assert not same_placements(EPYC, four, "node")
    assert place(3, "node", EPYC)["node"].tolist() == [0, 1, 0] and place(3, "node", four)["node"].tolist() == [0, 1, 2]
    # one node against two under map-by node: from P = 2 the ranks sit on one node against two
    assert not same_placements({**EPYC, "nodes": 1}, EPYC, "node")
    # another L3 width changes the cache pairs even at one node count
    assert not same_placements(EPYC, {**EPYC, "cores_per_l3": 8}, "core")


def test_placements_laid_end_to_end_keep_each_rank_s_place():
    """P = 2 and P = 3 under map-by node on EPYC: rows 0-1 are P = 2's ranks 0-1, rows 2-4 P = 3's
    ranks 0-2 (nodes 0, 1 then 0, 1, 0)."""
    laid = laid_end_to_end([place_arrays(2, "node", EPYC), place_arrays(3, "node", EPYC)])
    assert laid["node"].tolist() == [0, 1, 0, 1, 0] and set(laid) == {"node", "socket", "l3", "pinned"}
    assert laid["pinned"].tolist() == [True, True, False, False, False]  # P = 2 <= nodes: one per node, pinned
    assert all(len(v) == 0 for v in laid_end_to_end([]).values())


def test_a_node_is_full_when_every_core_holds_a_rank():
    """Two nodes of 2 x 4 cores: map-by core and socket fill the first node at P = 8; map-by node
    deals ranks out in turn, so a node has every core busy from P = 2 x 7 + 1 = 15."""
    from collat.model.placement import full_node

    machine = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 4, "cores_per_l3": 4}
    assert full_node(np.array([7, 8, 16]), "core", machine).tolist() == [False, True, True]
    assert full_node(np.array([7, 8]), "socket", machine).tolist() == [False, True]
    assert full_node(np.array([8, 14, 15]), "node", machine).tolist() == [False, False, True]


def test_two_mappings_that_place_every_rank_alike():
    """map-by node on one node of one NUMA domain per socket spreads the ranks over the sockets as
    map-by socket does (both unpinned); with two NUMA domains per socket it fills a socket's domains
    first (ranks 0, 1 on socket 0 at P = 4, 2 and 3 on socket 1), and on two nodes rank 1 goes to the
    other node; map-by core pins every rank."""
    one = {"nodes": 1, "sockets_per_node": 2, "cores_per_socket": 4, "cores_per_l3": 2, "numa_per_socket": 1}
    assert same_placements(one, one, "node", "socket")
    assert not same_placements(one, one, "node", "core") and not same_placements(one, one, "socket", "core")
    assert not same_placements(*[{**one, "numa_per_socket": 2}] * 2, "node", "socket")
    assert not same_placements(*[{**one, "nodes": 2}] * 2, "node", "socket")


def test_one_l3_per_socket():
    from collat.model.placement import one_l3_per_socket

    assert not one_l3_per_socket({"cores_per_l3": 4, "cores_per_socket": 64})  # EPYC 7H12: 16 L3s a socket
    assert one_l3_per_socket({"cores_per_l3": 12, "cores_per_socket": 12})  # one L3 a socket (THIN)
