"""Communication trees of the broadcast/reduce algorithms as parent arrays.

Every function takes P and returns ``parent``: an int array of length P over *relative* ranks
s = (rank - root) mod P, with ``parent[0] == -1`` for the root. Shapes follow OpenMPI 4.1.5's
``coll_base_topo.c`` (../shared/reference/openmpi-and-osu-facts.md) plus the two shapes the
collective-latency study assumed (one chain of P - 1 hops, a heap-ordered binary tree).
:func:`tree` builds one from a config spec ``{tree: name, fanout|radix: k}``.
"""

from __future__ import annotations

import numpy as np


def _root_only(P: int) -> np.ndarray:
    if P < 1:
        raise ValueError(f"P = {P}: expected at least 1 process")
    parent = np.zeros(P, dtype=np.int64)
    parent[0] = -1
    return parent


def linear(P: int) -> np.ndarray:
    """Flat tree: the root talks to all P - 1 others (bcast basic linear, reduce linear)."""
    return _root_only(P)


def chain(P: int, fanout: int = 4) -> np.ndarray:
    """OpenMPI ``build_chain``: the root feeds ``fanout`` chains of contiguous ranks.

    Chains have length ceil((P-1)/fanout) or one less, the first (P-1) mod fanout being the
    longer ones. At P = 256, fanout 4: heads 1, 65, 129, 193, depth 64. fanout 1 is the pipeline.
    """
    parent = _root_only(P)
    n = P - 1
    if n == 0:
        return parent
    f = max(1, min(fanout, n))
    short, extra = divmod(n, f)
    start = 1
    for c in range(f):
        length = short + (1 if c < extra else 0)
        block = np.arange(start, start + length)
        parent[block[0]] = 0
        parent[block[1:]] = block[:-1]
        start += length
    return parent


def pipeline(P: int) -> np.ndarray:
    """One chain 0 -> 1 -> ... -> P-1 (OpenMPI pipeline; the study's 'chain')."""
    return chain(P, 1)


def binary(P: int) -> np.ndarray:
    """OpenMPI ``build_tree`` with fanout 2: s at level L = floor(log2(s+1)) has children s + 2^L and
    s + 2*2^L. So 0 -> {1, 2}, 1 -> {3, 5}, 2 -> {4, 6}, 3 -> {7, 11}."""
    parent = _root_only(P)
    s = np.arange(P)
    step = 2 ** np.floor(np.log2(s + 1)).astype(np.int64)
    for child in (s + step, s + 2 * step):
        ok = child < P
        parent[child[ok]] = s[ok]
    return parent


def heap_binary(P: int) -> np.ndarray:
    """Heap-ordered binary tree, children 2s+1 and 2s+2 (the study's model, not what OpenMPI ran)."""
    parent = _root_only(P)
    s = np.arange(1, P)
    parent[1:] = (s - 1) // 2
    return parent


def knomial(P: int, radix: int = 4) -> np.ndarray:
    """K-nomial tree (OpenMPI ``build_kmtree``): the parent of s clears s's highest non-zero base-k digit."""
    if radix < 2:
        raise ValueError(f"k-nomial radix {radix}: expected at least 2")
    parent = _root_only(P)
    s = np.arange(1, P)
    top = np.ones_like(s)
    while True:  # top = radix ** (number of base-k digits of s - 1)
        grow = top * radix <= s
        if not grow.any():
            break
        top[grow] *= radix
    parent[1:] = s - (s // top) * top
    return parent


def binomial(P: int) -> np.ndarray:
    """OpenMPI ``build_bmtree``: children of s are s + 2^k for 2^k > s; the parent clears the highest bit."""
    return knomial(P, 2)


SHAPES = {
    "linear": lambda P, spec: linear(P),
    "chain": lambda P, spec: chain(P, spec.get("fanout", 4)),
    "pipeline": lambda P, spec: pipeline(P),
    "binary": lambda P, spec: binary(P),
    "heap_binary": lambda P, spec: heap_binary(P),
    "binomial": lambda P, spec: binomial(P),
    "knomial": lambda P, spec: knomial(P, spec.get("radix", 4)),
}


def tree(P: int, spec: dict) -> np.ndarray:
    """The parent array of a config tree spec, e.g. ``{tree: chain, fanout: 4}``."""
    name = spec["tree"]
    if name not in SHAPES:
        raise ValueError(f"tree {name!r}: expected one of {', '.join(SHAPES)}")
    return SHAPES[name](P, spec)


def children(parent: np.ndarray) -> list[list[int]]:
    """Children of every node, in increasing order."""
    out: list[list[int]] = [[] for _ in range(len(parent))]
    for s, p in enumerate(parent):
        if p >= 0:
            out[p].append(s)
    return out


def depth(parent: np.ndarray) -> np.ndarray:
    """Depth of every node (root 0), by pointer jumping (log2(depth) vectorised steps)."""
    parent = np.asarray(parent)
    d = (parent >= 0).astype(np.int64)
    anc = np.where(parent >= 0, parent, 0)
    done = parent < 0
    for _ in range(64):
        if done.all():
            return d
        # d counts the hops to anc; jump: add anc's own count and move to anc's ancestor
        reached_root = anc == 0
        step = ~reached_root
        d[step] += d[anc[step]]
        anc = np.where(step, anc[anc], 0)
        done = anc == 0
    raise ValueError("parent array has a cycle")
