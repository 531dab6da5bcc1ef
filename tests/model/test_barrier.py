"""OSU's barrier before every call: its last round, the queue it makes, the share an average carries."""

import numpy as np
import pytest

from collat.config.defaults import openmpi_facts
from collat.model.shapes import barrier

RULES = openmpi_facts("4.1")["barrier_rules"]


def test_the_fixed_rules_pick_the_barrier_by_communicator_size():
    # coll_tuned_decision_fixed.c (4.1): < 4 recursive doubling, < 8 linear, < 64 recursive
    # doubling, < 256 Bruck, < 512 tree
    picked = [barrier.algorithm(P, RULES) for P in (2, 3, 4, 7, 8, 63, 64, 255, 256, 511, 512, 5000)]
    assert picked == ["recursive_doubling"] * 2 + ["linear"] * 2 + ["recursive_doubling"] * 2 + ["bruck"] * 2 \
        + ["tree"] * 2 + ["bruck", "bruck"]


def test_the_last_round_of_each_barrier_by_hand():
    src, dst = barrier.last_round(8, "recursive_doubling")  # a power of two: r swaps with r ^ 4
    assert dst.tolist() == [4, 5, 6, 7, 0, 1, 2, 3]
    src, dst = barrier.last_round(6, "recursive_doubling")  # 0 and 1 release 4 and 5, which sat out
    assert (src.tolist(), dst.tolist()) == ([0, 1], [4, 5])
    src, dst = barrier.last_round(6, "bruck")  # distance 4, the largest power of two below 6
    assert dst.tolist() == [4, 5, 0, 1, 2, 3]
    src, dst = barrier.last_round(5, "linear")
    assert (src.tolist(), dst.tolist()) == ([0, 0, 0, 0], [1, 2, 3, 4])
    src, dst = barrier.last_round(5, "tree")  # the down phase's last step: even ranks release the next
    assert (src.tolist(), dst.tolist()) == ([0, 2], [1, 3])
    assert barrier.last_round(1, "bruck")[0].size == 0
    with pytest.raises(ValueError, match="expected"):
        barrier.last_round(4, "dissemination")


def test_the_release_queue_counts_the_messages_into_one_node_from_another():
    rules = [{"P_below": None, "algorithm": "bruck"}]
    # six ranks, four on node 0: distance 4; 0 -> 4 and 1 -> 5 enter node 1, 4 -> 2 and 5 -> 3 node 0
    assert barrier.release_queue(np.array([0, 0, 0, 0, 1, 1]), rules) == 2
    # alternating nodes, distance 4 keeps every message on its node
    assert barrier.release_queue(np.array([0, 1, 0, 1, 0, 1]), rules) == 0
    # the linear barrier: the root releases the three ranks of node 1 at once
    assert barrier.release_queue(np.array([0, 0, 1, 1, 1]), [{"P_below": None, "algorithm": "linear"}]) == 3
    assert barrier.release_queue(np.zeros(6, dtype=int), rules) == 0  # one node: no queue


def test_a_reduce_rank_waits_for_its_subtree_a_bcast_rank_for_its_ancestors():
    # OpenMPI's binary tree of 7: 1 and 2 under 0, 3 and 5 under 1, 4 and 6 under 2
    assert barrier.waited_for({"tree": "binary"}, "reduce", 7).tolist() == [7, 3, 3, 1, 1, 1, 1]
    assert barrier.waited_for({"tree": "binary"}, "bcast", 7).tolist() == [1, 2, 2, 3, 3, 3, 3]
    assert barrier.waited_for({"schedule": "rabenseifner"}, "reduce", 4).tolist() == [4, 4, 4, 4]


def test_the_average_carries_the_expected_wait_for_the_latest_start():
    # n / (n + 1) - 1/2 per rank: reduce (7/8 - 1/2 + 2 (3/4 - 1/2)) / 7 = 0.125;
    # bcast (0 + 2 (2/3 - 1/2) + 4 (3/4 - 1/2)) / 7 = 4/21
    assert barrier.average_share({"tree": "binary"}, "reduce", 7) == pytest.approx(0.125)
    assert barrier.average_share({"tree": "binary"}, "bcast", 7) == pytest.approx(4 / 21)
    # a linear reduce: only the root waits, for all P: (P / (P + 1) - 1/2) / P
    assert barrier.average_share({"tree": "linear"}, "reduce", 9) == pytest.approx((0.9 - 0.5) / 9)
    # segment size and send order do not change who waits for whom
    assert barrier.average_share({"tree": "binary", "segsize": 1024, "segmented": True}, "reduce", 7) \
        == pytest.approx(0.125)


def test_every_round_of_each_barrier_by_hand():
    pairs = lambda rs: [list(zip(s.tolist(), d.tolist())) for s, d in rs]  # noqa: E731
    # six ranks, 2^k = 4: 4 and 5 hand in to 0 and 1; 0-3 swap at distance 1 then 2; 0 and 1 release
    assert pairs(barrier.rounds(6, "recursive_doubling")) == [
        [(4, 0), (5, 1)], [(0, 1), (1, 0), (2, 3), (3, 2)], [(0, 2), (1, 3), (2, 0), (3, 1)], [(0, 4), (1, 5)]]
    assert pairs(barrier.rounds(3, "bruck")) == [[(0, 1), (1, 2), (2, 0)], [(0, 2), (1, 0), (2, 1)]]
    assert pairs(barrier.rounds(3, "linear")) == [[(1, 0), (2, 0)], [(0, 1), (0, 2)]]
    # five ranks: up 1 -> 0, 3 -> 2 (jump 1), 2 -> 0 (jump 2), 4 -> 0 (jump 4); down the reverse
    assert pairs(barrier.rounds(5, "tree")) == [[(1, 0), (3, 2)], [(2, 0)], [(4, 0)],
                                                [(0, 4)], [(0, 2)], [(0, 1), (2, 3)]]
    assert barrier.last_round(5, "tree")[1].tolist() == [1, 3]
