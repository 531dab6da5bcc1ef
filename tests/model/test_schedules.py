"""Message schedules of split binary, scatter-allgather and Rabenseifner: shapes and hand-computed prices."""

import numpy as np
import pytest

from collat.model.shapes import schedules as sc
from collat.model.placement import place

# 1 node, 1 socket, 8 cores, no shared L3: every pair of ranks talks over `core`
FLAT = {"nodes": 1, "sockets_per_node": 1, "cores_per_socket": 8, "cores_per_l3": 1, "numa_per_socket": 1}
# 2 nodes x 1 socket x 4 cores: ranks 0-3 on node 0, 4-7 on node 1 (map-by core)
TWO = {"nodes": 2, "sockets_per_node": 1, "cores_per_socket": 4, "cores_per_l3": 1, "numa_per_socket": 1}


def p2p_at(alpha, beta):
    """T_p2p = alpha_k + beta_k * bytes for channel index k (0 = core, 1 = node)."""
    alpha, beta = np.asarray(alpha), np.asarray(beta)
    return lambda k, size: alpha[k][:, None] + beta[k][:, None] * size


def as_lists(rounds):
    return [(sorted(zip(s.tolist(), d.tolist(), np.round(f, 4).tolist())), ex) for s, d, f, ex in rounds]


def test_split_binary_p6_rounds():
    # binary tree 0 -> {1, 2}, 1 -> {3, 5}, 2 -> {4}; halves down each subtree, then pairs swap
    assert as_lists(sc.split_binary(6)) == [
        ([(0, 1, 0.5)], False), ([(0, 2, 0.5)], False), ([(1, 3, 0.5), (2, 4, 0.5)], False),
        ([(1, 5, 0.5)], False), ([(1, 2, 0.5), (3, 4, 0.5)], True), ([(0, 5, 0.5)], False)]


def test_scatter_allgather_p8_rounds():
    r = as_lists(sc.scatter_allgather(8))
    # in-order binomial scatter, largest subtree first: 0 -> 4 (4 blocks), 0 -> 2, 0 -> 1 ...
    assert r[:3] == [([(0, 4, 0.5)], False), ([(0, 2, 0.25)], False), ([(0, 1, 0.125)], False)]
    assert r[3:6] == [([(2, 3, 0.125), (4, 6, 0.25)], False), ([(4, 5, 0.125)], False), ([(6, 7, 0.125)], False)]
    # ... then recursive doubling: 1, 2, 4 blocks
    assert r[-3:] == [([(0, 1, 0.125), (2, 3, 0.125), (4, 5, 0.125), (6, 7, 0.125)], True),
                      ([(0, 2, 0.25), (1, 3, 0.25), (4, 6, 0.25), (5, 7, 0.25)], True),
                      ([(0, 4, 0.5), (1, 5, 0.5), (2, 6, 0.5), (3, 7, 0.5)], True)]


def test_scatter_allgather_p6_rounds():
    """P = 6, not a power of two. Doubling 1: pairs (0,1), (2,3), (4,5), one block each; doubling 2:
    (0,2), (1,3) swap two blocks; 4 and 5 have no partner (6, 7) and no partner group either; doubling
    4: (0,4), (1,5) priced by the larger group (4 blocks); 2 and 3 have no partner (6, 7), but the
    partner group {4, 5} exists: 0 and 1 (2 mod 2, 3 mod 2 of their group) forward its 2 blocks."""
    r = as_lists(sc.scatter_allgather(6))
    sixth = round(1 / 6, 4)
    assert r[-4:] == [([(0, 1, sixth), (2, 3, sixth), (4, 5, sixth)], True),
                      ([(0, 2, round(2 / 6, 4)), (1, 3, round(2 / 6, 4))], True),
                      ([(0, 4, round(4 / 6, 4)), (1, 5, round(4 / 6, 4))], True),
                      ([(0, 2, round(2 / 6, 4)), (1, 3, round(2 / 6, 4))], False)]
    src, dst, share, _ = sc.scatter_allgather(6)[-1]
    assert src.dtype == dst.dtype == np.int64 and share.dtype == float
    # the scatter part is the ring variant's too, built once
    assert as_lists(sc.scatter_ring_allgather(6))[:len(r) - 4] == r[:-4]


def test_rabenseifner_p6_rounds():
    """As OpenMPI 4.1 sends it. r = 2: pairs (0, 1), (2, 3) swap halves, 1 and 3 return theirs;
    0, 2, 4, 5 (virtual 0-3) halve at distance 1 (half the vector), then 2 (a quarter); the
    gather comes back from distance 2 (quarters) to distance 1 (a half), to rank 0."""
    assert as_lists(sc.rabenseifner(6)) == [
        ([(0, 1, 0.5), (2, 3, 0.5)], True), ([(1, 0, 0.5), (3, 2, 0.5)], False),
        ([(0, 2, 0.5), (4, 5, 0.5)], True), ([(0, 4, 0.25), (2, 5, 0.25)], True),
        ([(4, 0, 0.25), (5, 2, 0.25)], False), ([(2, 0, 0.5)], False)]


def test_every_schedule_is_well_formed():
    for name, build in sc.BUILDERS.items():
        for P in range(2, 40):
            for src, dst, share, _ in build(P):
                assert (src != dst).all() and src.max() < P and dst.max() < P, (name, P)
                assert ((share > 0) & (share <= 1)).all(), (name, P)


def test_hand_computed_prices():
    index = {"core": 0, "node": 1}
    cost = p2p_at([1.0, 3.0], [0.01, 0.01])
    m = np.array([100.0])
    # split binary P = 4 on one node, 50 B halves cost 1.5: 0 -> 1 (1.5), 0 -> 2 (3.0), 1 -> 3 (3.0);
    # then 1 <-> 2 exchange at max(3.0, 3.0) + 1.5 = 4.5, 0 -> 3 at max(3.0 + 1.5, 3.0) = 4.5
    done, mean = sc.run(sc.split_binary(4), 4, place(4, "core", FLAT), index, cost, m)
    assert done[0] == pytest.approx(4.5) and mean[0] == pytest.approx(4.5)
    # Rabenseifner P = 4 across two nodes (map-by node: 0, 2 on node 0; 1, 3 on node 1):
    # halving 0 <-> 1 and 2 <-> 3 (node, 50 B: 3.5); 0 <-> 2 and 1 <-> 3 (core, 25 B: 1.25) -> 4.75;
    # gather 2 -> 0 and 3 -> 1 (core, 25 B: 1.25) -> 6.0; 1 -> 0 (node, 50 B: 3.5) -> 9.5 at the root;
    # ranks 2 and 3 are done at 6.0, 1 at 9.5: mean (9.5 + 9.5 + 6 + 6) / 4
    ranks = place(4, "node", TWO)
    done, mean = sc.run(sc.rabenseifner(4), 4, ranks, index, cost, m)
    assert done[0] == pytest.approx(9.5) and mean[0] == pytest.approx(31.0 / 4)


def test_many_schedules_at_once_equal_one_at_a_time():
    """run_many (every P in one clock array, the rings in closed form, including when a P without a
    ring lies between two with one) gives run's numbers (step by step) to rounding, on two nodes
    with two channels."""
    index = {"core": 0, "node": 1}
    cost = p2p_at([1.0, 3.0], [0.01, 0.02])
    m = np.array([1.0, 100.0, 4096.0])
    machine = {"nodes": 2, "sockets_per_node": 1, "cores_per_socket": 8, "cores_per_l3": 1, "numa_per_socket": 1}
    for name, build in sc.BUILDERS.items():
        for mapping, Pv in (("core", [2, 3, 5, 8, 13, 16]), ("node", [2, 3, 5, 8, 13, 16]), ("node", [3, 2, 16, 5])):
            ranks = [place(P, mapping, machine) for P in Pv]
            done, mean = sc.run_many([build(P) for P in Pv], Pv, ranks, index, cost, m)
            for i, P in enumerate(Pv):
                d1, m1 = sc.run(build(P), P, ranks[i], index, cost, m)
                assert done[i] == pytest.approx(d1, rel=1e-12) and mean[i] == pytest.approx(m1, rel=1e-12), \
                    (name, mapping, P)


def test_compiled_steps_take_a_round_from_the_clocks_before_it():
    """kernels.advance_steps, by hand on three ranks (clocks 4, 0, 0; one column): a round 0 -> 1
    (t 2), 1 -> 2 (t 3), where rank 1 both receives and sends, ends from the clocks before it, as
    numpy's _advance does: 0 at 4 + 2 = 6, 1 at max(0 + 3, 6) = 6, 2 at 0 + 3 = 3 (taken message
    after message, 1 would send at 6 and 1 and 2 end at 9). A round of distinct ranks (0 <-> 2
    exchanging, t 1, then 1 -> 0, t 2, twice) is the same either way: 0 and 2 at max(6, 3) + 1 = 7,
    then 0 at max(7, 6 + 2) = 8 and 1 at 8, then 1 at 10 and 0 at 10."""
    from collat.model import kernels

    clock = np.array([[4.0], [0.0], [0.0]])
    src, dst = np.array([0, 1, 0, 1]), np.array([1, 2, 2, 0])
    t = np.array([[1.0], [2.0], [3.0]])  # the times of three (channel, share) pairs
    pair_of = np.array([1, 2, 0, 1])  # messages 0-3 take 2, 3, 1, 2
    kernels.advance_steps(src, dst, t, pair_of, np.array([0]), np.array([2]), np.array([False]), np.array([1]), clock)
    np.testing.assert_array_equal(clock[:, 0], [6.0, 6.0, 3.0])
    want = clock.copy()
    for a, b, tt, exchange, repeat in (([0], [2], [[1.0]], True, 1), ([1], [0], [[2.0]], False, 2)):
        for _ in range(repeat):
            sc._advance(want, np.array(a), np.array(b), np.array(tt), exchange)
    kernels.advance_steps(src, dst, t, pair_of, np.array([2, 3]), np.array([3, 4]), np.array([True, False]),
                          np.array([1, 2]), clock)
    np.testing.assert_array_equal(clock, want)
    np.testing.assert_array_equal(clock[:, 0], [10.0, 10.0, 7.0])


def test_a_layout_prices_each_distinct_channel_and_share_once():
    """layout: the (share, channel) pairs are the distinct ones of the messages, in increasing order of
    share then channel, and each message points at its own; from the schedules or from the shared
    flat (flat_of, read-only, the same object for the same schedule and P), the same layout. Map-by
    core on TWO (ranks 0-3 on node 0), scatter + ring allgather at P = 2, 3, 5, 8."""
    from collat.model.placement import laid_end_to_end

    Pv = (2, 3, 5, 8)
    laid = laid_end_to_end([place(P, "core", TWO) for P in Pv])
    index = {"core": 0, "node": 1}
    flat = sc.flat_of("scatter_ring_allgather", Pv)
    assert sc.flat_of("scatter_ring_allgather", Pv) is flat and not flat.src.flags.writeable
    a = sc.layout(flat, Pv, laid, index)
    b = sc.layout([sc.BUILDERS["scatter_ring_allgather"](P) for P in Pv], Pv, laid, index)
    for name in ("pair_k", "pair_share", "inverse", "src", "dst", "offsets"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.rings == b.rings and len(a.rings) == 3  # P = 3, 5, 8 end in a ring; P = 2 has none
    node = laid["node"]
    k = np.where(node[a.src] == node[a.dst], index["core"], index["node"])  # TWO: one socket, no shared L3
    share = flat.shares[flat.share_code]
    pairs = sorted(set(zip(share.tolist(), k.tolist())))
    assert list(zip(a.pair_share.tolist(), a.pair_k.tolist())) == pairs
    np.testing.assert_array_equal(a.pair_k[a.inverse], k)
    np.testing.assert_array_equal(a.pair_share[a.inverse], share)


def test_ring_in_closed_form_equals_its_steps():
    """The ring's closed form (longest path over the unrolled ring, range maxima by sparse table)
    gives what stepping it gives, for random clocks and message times of three kinds, repeat
    counts 0, 1, P // 2 and P - 1, several sizes at once; by hand for P = 3, n = 2."""
    rng = np.random.default_rng(1)
    for P in (2, 3, 5, 8, 17, 64, 130):
        for trial in range(6):
            kind = rng.integers(0, 3, P)
            t = rng.uniform(0.1, 5.0, (3, 4))[kind]
            c = rng.uniform(0.0, 20.0, (P, 4)) * (trial % 2)
            for n in sorted({0, 1, P // 2, P - 1}):
                assert sc.ring_closed_form(c, t, kind, n) == pytest.approx(sc.ring_steps(c, t, n), rel=1e-12, abs=1e-12)
    # P = 3, clocks 0, 0, 5, times 1, 2, 1: step 1 -> e = 1, 2, 6 -> (6, 2, 6); step 2 -> e = 7, 4, 7 -> (7, 7, 7)
    c, t = np.array([[0.0], [0.0], [5.0]]), np.array([[1.0], [2.0], [1.0]])
    assert sc.ring_closed_form(c, t, np.array([0, 1, 0]), 2).ravel().tolist() == [7.0, 7.0, 7.0]
    assert sc.ring_steps(c, t, 1).ravel().tolist() == [6.0, 2.0, 6.0]


@pytest.mark.parametrize("whole", [False, True])
def test_compiled_ring_phase_is_the_closed_form(whole):
    """kernels.ring_phase prices several rings of one clock array in one call (a sliding-window
    maximum instead of the sparse table; with ``whole``, every ring of P - 1 repeats, an allgather's,
    from running maxima): exactly ring_closed_form's numbers, ring by ring, for random clocks, three
    kinds of message times (one of them only in the first half of each ring) and repeat counts 0 to
    P - 1; rows outside the rings untouched."""
    from collat.model import kernels

    rng = np.random.default_rng(5)
    sizes = (2, 3, 8, 17, 64, 130)
    rows = 3 + sum(sizes)
    clock = rng.uniform(0.0, 20.0, (rows, 5))
    kinds = rng.integers(0, 3, rows)
    t_kind = rng.uniform(0.1, 5.0, (3, 5))
    rings, want, lo = [], clock.copy(), 3
    for P in sizes:
        ring = kinds[lo:lo + P]
        ring[P // 2:][ring[P // 2:] == 2] = 1  # kind 2 in the first half only
        lo += P
    t_all = t_kind[kinds]
    lo = 3
    for P in sizes:
        n = P - 1 if whole else int(rng.integers(0, P))
        rings.append((lo, lo + P, lo, lo + P, n))
        want[lo:lo + P] = sc.ring_closed_form(clock[lo:lo + P], t_all[lo:lo + P], kinds[lo:lo + P], n)
        lo += P
    got = clock.copy()
    kernels.ring_phase(got, t_kind, kinds.astype(np.int64), np.array(rings, dtype=np.int64))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got[3:], clock[3:]) and np.array_equal(got[:3], clock[:3])
