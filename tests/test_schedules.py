"""Message schedules of split binary, scatter-allgather and Rabenseifner: shapes and hand-computed prices."""

import numpy as np
import pytest

from collat import schedules as sc
from collat.placement import place

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


def test_rabenseifner_p6_rounds():
    # r = 2: 0 -> 1 and 2 -> 3 hand over; 1, 3, 4, 5 halve (virtual 0-3), gather to 1, then 1 -> root
    assert as_lists(sc.rabenseifner(6)) == [
        ([(0, 1, 1.0), (2, 3, 1.0)], False), ([(1, 4, 0.5), (3, 5, 0.5)], True),
        ([(1, 3, 0.25), (4, 5, 0.25)], True), ([(3, 1, 0.25), (5, 4, 0.25)], False),
        ([(4, 1, 0.5)], False), ([(1, 0, 1.0)], False)]


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
    # halving 0 <-> 2 and 1 <-> 3 (core, 50 B: 1.5); 0 <-> 1 and 2 <-> 3 (node, 25 B: 3.25) -> 4.75;
    # gather 1 -> 0 and 3 -> 2 (node, 25 B: 3.25) -> 8.0; 2 -> 0 (core, 50 B: 1.5) -> 9.5 at the root;
    # ranks 1 and 3 are done at 8.0, 2 at 9.5: mean (9.5 + 8 + 9.5 + 8) / 4
    ranks = place(4, "node", TWO)
    done, mean = sc.run(sc.rabenseifner(4), 4, ranks, index, cost, m)
    assert done[0] == pytest.approx(9.5) and mean[0] == pytest.approx(35.0 / 4)


def test_many_schedules_at_once_equal_one_at_a_time():
    """run_many (every P in one clock array, the ring's repeats dropping out per P, the rings taken
    as one slice while adjacent and one by one when a P without a ring lies between) gives run's
    numbers exactly, on two nodes with two channels."""
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
                assert done[i].tolist() == d1.tolist() and mean[i].tolist() == m1.tolist(), (name, mapping, P)
