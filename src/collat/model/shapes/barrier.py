"""The barrier OSU runs before every timed call, and how unevenly it lets the ranks go.

OSU 7.3 times each rank's call from the moment that rank leaves the barrier before it
(osu_bcast.c, osu_reduce.c). The ranks leave it unevenly: each leaves when the last message of
the barrier reaches it. Where the barrier's last round sends many messages from one node into
another at once, they queue at the network interface, and the ranks they release leave one after
another, over a time that grows with the number of messages in that queue. Earlier rounds matter
less: by the end of a dissemination every rank has waited for every other, so their spread is gone.

OpenMPI 4.1's fixed rules pick the barrier by communicator size alone (config
``model.openmpi.barrier_rules``, facts of the MPI version): recursive doubling, linear, Bruck's
dissemination or a binomial-like tree; :func:`rounds` lists each one's messages round by round,
as ``ompi/mca/coll/base/coll_base_barrier.c`` sends them (``make test-openmpi`` checks them).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from collat.model.shapes import trees


def algorithm(P: int, rules) -> str:
    """The barrier OpenMPI's fixed rules (``rules``: ``[{P_below, algorithm}, ...]`` in increasing
    ``P_below``, the last may be null) run on ``P`` ranks."""
    for rule in rules:
        if rule["P_below"] is None or P < int(rule["P_below"]):
            return str(rule["algorithm"])
    raise ValueError(f"no barrier rule for P = {P}")


def _pof2_at_most(P: int) -> int:
    return 1 << (int(P).bit_length() - 1)


def rounds(P: int, name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every round of barrier ``name`` on ``P`` ranks, as (senders, receivers) of its zero-byte
    messages, in order (``make test-openmpi`` checks them against OpenMPI's pml monitoring):

    * recursive_doubling: the ranks from 2^k up (2^k the largest power of two at most P) first hand
      in to rank - 2^k, then the ranks below 2^k swap with rank ^ 1, rank ^ 2, ..., and last the
      ranks below P - 2^k release rank + 2^k;
    * bruck: round d = 1, 2, 4, ... below P, every rank sends to (rank + d) mod P;
    * linear: every other rank hands in to the root, then the root releases them;
    * tree: up, at jump 1, 2, 4, ... the rank r with r ^ jump below it and its low bits clear sends
      to r ^ jump; down, the same pairs from the largest jump back, the other way."""
    P = int(P)
    r = np.arange(P)
    out = []

    def add(src, dst):
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if src.size:
            out.append((src, dst))

    if P < 2:
        return out
    if name == "recursive_doubling":
        k = _pof2_at_most(P)
        extra = np.arange(k, P)
        add(extra, extra - k)
        low = r[:k]
        mask = 1
        while mask < k:
            add(low, low ^ mask)
            mask <<= 1
        add(extra - k, extra)
    elif name == "bruck":
        d = 1
        while d < P:
            add(r, (r + d) % P)
            d <<= 1
    elif name == "linear":
        add(r[1:], np.zeros(P - 1))
        add(np.zeros(P - 1), r[1:])
    elif name == "tree":
        depth = 1 << (P - 1).bit_length()  # the next power of two at or above P
        jumps = []
        jump = 1
        while jump < depth:
            jumps.append(jump)
            jump <<= 1
        for jump in jumps:  # up: the higher rank of each pair sends to the lower
            lower = r[(r & (2 * jump - 1)) == 0]
            lower = lower[(lower + jump) < P]
            add(lower + jump, lower)
        for jump in reversed(jumps):  # down: the lower releases the higher
            lower = r[(r & (2 * jump - 1)) == 0]
            lower = lower[(lower + jump) < P]
            add(lower, lower + jump)
    else:
        raise ValueError(f"barrier {name!r}: expected recursive_doubling, bruck, linear or tree")
    return out


def last_round(P: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(senders, receivers) of the last round of barrier ``name`` on ``P`` ranks (:func:`rounds`):
    the messages that let the ranks go."""
    every = rounds(P, name)
    if not every:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return every[-1]


def release_queue(node: np.ndarray, rules) -> int:
    """The most messages of the barrier's last round that enter one node from another at once, on
    ranks placed on nodes ``node`` (one entry per rank): the queue whose length spreads the ranks'
    starts. 0 on one node."""
    node = np.asarray(node)
    src, dst = last_round(len(node), algorithm(len(node), rules))
    crossing = node[src] != node[dst]
    if not crossing.any():
        return 0
    return int(np.bincount(node[dst][crossing]).max())


def waited_for(shape: dict, operation: str, P: int) -> np.ndarray:
    """How many ranks' starts each rank's call waits for, itself included: a reduce rank its subtree's
    (its children send only once they started), a bcast rank its own and its ancestors' (the message
    leaves each only once it started); a schedule of exchanges every rank's."""
    if "tree" not in shape:
        return np.full(int(P), int(P))
    parent = trees.tree(int(P), shape)
    if operation == "reduce":
        return trees.subtree_sizes(parent)
    return trees.depth(parent) + 1


def average_share(shape: dict, operation: str, P: int) -> float:
    """:func:`share_of` once per shape, operation and P (a calibration asks for it at every step)."""
    key = tuple(sorted((k, v) for k, v in shape.items() if k in ("tree", "fanout", "radix", "schedule")))
    return _share(key, operation, int(P))


@lru_cache(maxsize=None)
def _share(key: tuple, operation: str, P: int) -> float:
    return share_of(dict(key), operation, P)


def share_of(shape: dict, operation: str, P: int) -> float:
    """What a call's average over the ranks carries of the spread D of their starts, as a share of
    D: with starts independent and uniform over [0, D], a rank that waits for n ranks' starts (its
    own among them, :func:`waited_for`) waits E[max of n] - E[its own] = D (n / (n + 1) - 1/2).
    A leaf of a reduce and the root of a bcast wait for none: 0; a rank that waits for every other
    rank of many: about 1/2."""
    n = waited_for(shape, operation, P).astype(float)
    return float(np.mean(n / (n + 1.0) - 0.5))
