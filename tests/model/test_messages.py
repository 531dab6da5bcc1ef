"""Every message of an OpenMPI 4.1 bcast/reduce, to the byte: hand-computed cells (the real library's
own counters are compared in tests/test_openmpi.py)."""

import pytest
import yaml

from collat.model.shapes import messages as ms
from collat.model.shapes import schedules as sc
from collat.model.shapes.messages import messages, per_peer

FACTS = yaml.safe_load(open(ms.__file__.replace("messages.py", "openmpi-4.1.yaml")))


def test_rabenseifner_halves_at_distance_one_first():
    """P = 8, 1 MiB: rank 0 sends half the vector to 1, a quarter to 2, an eighth to 4 (measured on
    OpenMPI 4.1.4: 0 -> 1 524288 B, 0 -> 4 131072 B); in the gather 4 -> 0 carries an eighth."""
    peer = per_peer(ms.rabenseifner(8, 1 << 20))
    assert peer[0, 1] == (1, 524288) and peer[0, 2] == (1, 262144) and peer[0, 4] == (1, 131072)
    assert peer[4, 0] == (2, 131072 + 131072)  # its halving share and its gathered eighth
    assert peer[1, 0] == (2, 524288 + 524288)


def test_rabenseifner_not_a_power_of_two():
    """P = 13 (r = 5), 1 MiB: 5 pairs x 3 messages, 8 ranks x 3 halving steps, 7 gathered windows:
    46 messages; bytes: 5 x 1.5 MiB + 8 x 7/8 MiB + 7/8 MiB = 16 MiB (OpenMPI: 46, 16.8 MB)."""
    msgs = ms.rabenseifner(13, 1 << 20)
    assert len(msgs) == 46 and sum(b for *_, b in msgs) == 16 << 20
    # an odd count: the even rank sends the larger (second) half
    assert per_peer(ms.rabenseifner(3, 5))[0, 1] == (1, 3) and per_peer(ms.rabenseifner(3, 5))[1, 0][1] == 2 + 3


def test_scatter_allgather_blocks_and_the_late_forward():
    """P = 7, 1 KiB: blocks of ceil(1024 / 7) = 147, the last one 142. Rank 3 has no partner at
    distance 4 (7 does not exist): rank 1 forwards it the blocks of 4-6 it got from 5 (2 x 147 +
    142 = 436 B) after sending 3 its own pair's blocks at distance 2 (294 B): 730 B in two messages
    (measured on OpenMPI 4.1.4: 1 -> 3, two messages of 730 B)."""
    peer = per_peer(ms.scatter_allgather(7, 1024))
    assert peer[1, 3] == (2, 730)
    assert peer[0, 4] == (2, 436 + 588)  # the scatter of blocks 4-6, then blocks 0-3 at distance 4


def test_scatter_sizes_by_hand():
    """The scatter of P = 7, 1024 B: 0 -> 4 blocks 4..6 (1024 - 4 x 147 = 436 B), 0 -> 2 blocks 2, 3
    (294), 0 -> 1 block 1 (147); 4 -> 6 (1024 - 6 x 147 = 142), 4 -> 5 (147), 2 -> 3 (147)."""
    scatter, held = ms._binomial_scatter(7, 1024, 147)
    assert sorted(scatter) == sorted([(0, 4, 436), (0, 2, 294), (0, 1, 147), (4, 6, 142), (4, 5, 147), (2, 3, 147)])
    assert held == [147, 147, 147, 147, 147, 147, 142]


def test_split_binary_halves_and_the_pipeline_below_two_bytes():
    # P = 4, 5 B: 3 down the odd subtree (0 -> 1 -> 3), 2 down the even one (0 -> 2); 1 and 2 swap;
    # P even: the last rank (3) gets the second half from the root
    peer = per_peer(ms.split_binary(4, 5))
    assert peer == {(0, 1): (1, 3), (0, 2): (1, 2), (1, 3): (1, 3), (1, 2): (1, 3), (2, 1): (1, 2), (0, 3): (1, 2)}
    assert ms.split_binary(4, 1) == [(0, 1, 1), (1, 2, 1), (2, 3, 1)]


def test_segments_and_the_in_order_binary_reduce():
    # the pipeline with 4-byte segments carries 10 B as 4 + 4 + 2 on every edge
    assert per_peer(ms.tree_messages("bcast", [-1, 0, 1], 10, 4)) == {(0, 1): (3, 10), (1, 2): (3, 10)}
    # reduce 6 on P = 3: the tree is rooted at rank 2 (2 -> {1, 0}), which sends the result to 0
    assert per_peer(ms.in_order_binary_reduce(3, 8)) == {(1, 2): (1, 8), (0, 2): (1, 8), (2, 0): (1, 8)}


def test_forced_algorithms_fall_back_below_their_counts():
    """bcast 8 and 9 below P elements and reduce 7 below 2^floor(log2 P): the linear algorithms."""
    for op, alg, P, count in (("bcast", 8, 7, 6), ("bcast", 9, 7, 6), ("reduce", 7, 13, 7)):
        got = per_peer(messages(op, alg, P, count, FACTS["trees"], FACTS["default_rules"]))
        assert got == per_peer(ms.linear(op, P, count))
    # the default at P = 4, 1 B: the fixed rules pick bcast 5, OpenMPI's binary tree (0 -> 1, 2; 1 -> 3)
    assert per_peer(messages("bcast", 0, 4, 1, FACTS["trees"], FACTS["default_rules"])) == {
        (0, 1): (1, 1), (0, 2): (1, 1), (1, 3): (1, 1)}


@pytest.mark.parametrize("P", range(2, 40))
def test_the_pricing_shares_are_the_exact_messages(P):
    """The pricing rounds of bcast 8 and reduce 7 carry the element-exact bytes at the notional
    count (an exchange once per pair), so that the model prices what OpenMPI sends."""
    count = sc._notional_count(P)
    for rounds, exact in ((sc.scatter_allgather(P), ms.allgather_rounds(P, count)),
                          (sc.rabenseifner(P), ms.rabenseifner_rounds(P, count))):
        tagged_exchange = sum(b for _, s, d, b, ex in exact if ex and s < d)
        one_way = sum(b for *_, b, ex in exact if not ex)
        priced = sum((share * count).sum() for _, _, share, _ in rounds[len(rounds) - len({m[0] for m in exact}):])
        assert priced >= tagged_exchange + one_way - 1e-6 * count  # an exchange is priced at its larger side
        assert len(rounds) >= len({m[0] for m in exact})
