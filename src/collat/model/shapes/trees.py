"""Communication trees of the broadcast/reduce algorithms as parent arrays.

Every function takes P and returns ``parent``: an int array of length P over *relative* ranks
s = (rank - root) mod P, with ``parent[0] == -1`` for the root. Shapes follow OpenMPI 4.1.5's
``coll_base_topo.c`` (../shared/reference/openmpi-and-osu-facts.md) plus the two shapes the
collective-latency study assumed (one chain of P - 1 hops, a heap-ordered binary tree).
:func:`tree` builds one from a config spec ``{tree: name, fanout|radix: k}``.
"""

from __future__ import annotations

from functools import lru_cache

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
    """K-nomial tree (OpenMPI ``build_kmtree``, bcast algorithm 7): the parent of s is s with its
    *lowest* non-zero base-k digit cleared, so s's children are s + j k^i (j = 1..k-1) for every k^i
    below the place of that digit (the root: every k^i). P = 10, k = 4: 0 -> {4, 8, 1, 2, 3},
    4 -> {5, 6, 7}, 8 -> {9}; the root sends to the largest subtrees first (:func:`send_order`)."""
    if radix < 2:
        raise ValueError(f"k-nomial radix {radix}: expected at least 2")
    parent = _root_only(P)
    s = np.arange(1, P)
    low = np.ones_like(s)  # place value of s's lowest non-zero base-k digit
    while True:
        more = (s // low) % radix == 0
        if not more.any():
            break
        low[more] *= radix
    parent[1:] = s - s % (low * radix)
    return parent


def binomial(P: int) -> np.ndarray:
    """OpenMPI ``build_bmtree`` (bcast algorithm 6): children of s are s + 2^k for 2^k > s; the
    parent clears the highest set bit. P = 10: 0 -> {1, 2, 4, 8}, 1 -> {3, 5, 9}, 2 -> {6}, 3 -> {7}."""
    parent = _root_only(P)
    s = np.arange(1, P)
    top = 2 ** np.floor(np.log2(s)).astype(np.int64)
    parent[1:] = s - top
    return parent


def in_order_binomial(P: int) -> np.ndarray:
    """OpenMPI ``build_in_order_bmtree`` (reduce algorithm 5): the parent of s clears its lowest set
    bit, s & (s - 1); children of s are s + 2^k for 2^k below s's lowest set bit (the root: every
    2^k). P = 8: 0 -> {1, 2, 4}, 2 -> {3}, 4 -> {5, 6}, 6 -> {7}."""
    parent = _root_only(P)
    s = np.arange(1, P)
    parent[1:] = s & (s - 1)
    return parent


def in_order_binary(P: int) -> np.ndarray:
    """OpenMPI ``build_in_order_bintree`` (reduce algorithm 6), over absolute ranks: rooted at P - 1
    whatever the collective's root (the result then travels from P - 1 to the root). A node heading
    n ranks (itself the highest) has its left child n - 2 places down heading the lower n - 1 - n//2
    ranks' upper part, and its right child heading the lowest n//2 ranks: P = 9 gives
    8 -> {7, 3}, 7 -> {6, 5}, 3 -> {2, 1}, 5 -> {4}, 1 -> {0}. ``parent[P - 1] == -1``.

    A subtree of n ranks is headed by its highest rank; its right child heads the lowest n // 2
    ranks and its left child (the head's next lower rank) the n - 1 - n // 2 ranks between."""
    parent = np.full(P, -1, dtype=np.int64)
    if P < 1:
        raise ValueError(f"P = {P}: expected at least 1 process")
    stack = [(0, P)]  # (lowest rank, number of ranks) of every subtree; its head is the highest
    while stack:
        low, n = stack.pop()
        head = low + n - 1
        right = n // 2  # ranks low .. low + right - 1, headed by low + right - 1
        left = n - 1 - right  # ranks low + right .. head - 1, headed by head - 1
        if left > 0:
            parent[head - 1] = head
            stack.append((low + right, left))
        if right > 0:
            parent[low + right - 1] = head
            stack.append((low, right))
    return parent


SHAPES = {
    "linear": lambda P, spec: linear(P),
    "chain": lambda P, spec: chain(P, spec.get("fanout", 4)),
    "pipeline": lambda P, spec: pipeline(P),
    "binary": lambda P, spec: binary(P),
    "heap_binary": lambda P, spec: heap_binary(P),
    "binomial": lambda P, spec: binomial(P),
    "knomial": lambda P, spec: knomial(P, spec.get("radix", 4)),
    "in_order_binomial": lambda P, spec: in_order_binomial(P),
    "in_order_binary": lambda P, spec: in_order_binary(P),
}


def tree(P: int, spec: dict) -> np.ndarray:
    """The parent array of a config tree spec, e.g. ``{tree: chain, fanout: 4}`` (read-only: one array
    per shape and P, built once per process; every mapping and mode of a grid asks for the same)."""
    name = spec["tree"]
    if name not in SHAPES:
        raise ValueError(f"tree {name!r}: expected one of {', '.join(SHAPES)}")
    key = tuple(sorted(spec.items()))
    try:
        hash(key)
    except TypeError:  # a spec value that is a list or dict: built every time
        return SHAPES[name](P, spec)
    return _built(int(P), key)


@lru_cache(maxsize=8192)
def _built(P: int, spec: tuple) -> np.ndarray:
    parent = np.asarray(SHAPES[dict(spec)["tree"]](P, dict(spec)))
    parent.setflags(write=False)
    return parent


def children(parent: np.ndarray) -> list[list[int]]:
    """Children of every node, in increasing order."""
    out: list[list[int]] = [[] for _ in range(len(parent))]
    for s, p in enumerate(parent):
        if p >= 0:
            out[p].append(s)
    return out


def height(parent: np.ndarray, depths: np.ndarray | None = None) -> np.ndarray:
    """Height of every node: 0 for a leaf, else 1 + the largest height of its children; one
    vectorised step per depth level, deepest first (``depths``: :func:`depth`, when known)."""
    parent = np.asarray(parent)
    depths = depth(parent) if depths is None else np.asarray(depths)
    h = np.zeros(len(parent), dtype=np.int64)
    by_depth = np.argsort(depths, kind="stable")
    levels = np.split(by_depth, np.searchsorted(depths[by_depth], np.arange(1, int(depths.max(initial=0)) + 1)))
    for nodes in levels[:0:-1]:  # the deepest level first, the roots' level left out
        np.maximum.at(h, parent[nodes], h[nodes] + 1)
    return h


def subtree_sizes(parent: np.ndarray, depths: np.ndarray | None = None) -> np.ndarray:
    """The number of nodes in every node's subtree, itself included; one vectorised step per depth
    level, deepest first, as :func:`height` (``depths``: :func:`depth`, when known)."""
    parent = np.asarray(parent)
    depths = depth(parent) if depths is None else np.asarray(depths)
    size = np.ones(len(parent), dtype=np.int64)
    for d in range(int(depths.max(initial=0)), 0, -1):
        at = np.flatnonzero(depths == d)
        np.add.at(size, parent[at], size[at])
    return size


def depth(parent: np.ndarray) -> np.ndarray:
    """Depth of every node (roots 0, wherever they sit), by pointer jumping (log2(depth) vectorised steps)."""
    parent = np.asarray(parent)
    root = parent < 0
    d = (~root).astype(np.int64)
    anc = np.where(root, np.arange(len(parent)), parent)
    for _ in range(64):
        step = ~root[anc]
        if not step.any():
            return d
        # d counts the hops to anc; jump: add anc's own count and move to anc's ancestor
        d[step] += d[anc[step]]
        anc = np.where(step, anc[anc], anc)
    raise ValueError("parent array has a cycle")


def send_order(name: str, P: int, radix: int = 4) -> list[list[int]]:
    """Children of every node in the order OpenMPI's builder lists them (the order of the sends):
    increasing, except the k-nomial (largest subtrees first: descending place value, then digit)
    and the in-order binary tree (left child, then right)."""
    parent = tree(P, {"tree": name, "radix": radix})
    kids = children(parent)
    if name == "knomial":
        def key(c, p):
            d = c - p  # j * k^i
            place = 1
            while d % (place * radix) == 0:
                place *= radix
            return (-place, d // place)
        kids = [sorted(k, key=lambda c, p=p: key(c, p)) for p, k in enumerate(kids)]
    elif name == "in_order_binary":
        kids = [sorted(k, reverse=True) for k in kids]
    return kids
