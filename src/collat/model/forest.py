"""The schedule core every mode shares: trees laid on the machine, their channel census, and when
each rank is done.

A collective algorithm is a tree (:mod:`collat.trees`) laid on the machine by a mapping policy
(:mod:`collat.placement`); every parent talks to its children in one fan-out (bcast) or fan-in
(reduce) whose cost per parent (``w`` [N, S], over all sizes at once) a mode's fan-out pricing
gives (:func:`node_costs`). From those costs:

* per rank (:func:`osu_rank_times`): as OSU times a call, each rank on its own; a parent handles
  its children one after another in send order (:func:`message_offsets`), so a message lands after
  the gaps of the children before it; a bcast rank's time is its arrival plus its own fan-out, a
  reduce rank's the end of its fan-in (:func:`fanin_done`) plus its send. avg = the mean over
  ranks, max = the slowest rank (the critical path).
* the paper mode's level-synchronous stages use the depth levels (:mod:`.paper_mode`).

Several trees (every P of a curve) are evaluated as one :class:`Forest`; the tree census (children
per parent per channel) does not depend on the message size.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import schedules, trees
from ..placement import LEVELS, channel_codes, place_arrays
from .costs import ChannelCosts

class Forest:
    """Several trees as one array problem: parents in global node ids, with each tree's offset.

    Evaluating every P of a curve at once keeps numpy busy on long arrays instead of paying its
    per-call overhead per tree (the level-by-level functions work unchanged on a forest).
    """

    def __init__(self, parents: list[np.ndarray]):
        sizes = np.array([len(p) for p in parents], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.sizes = sizes
        self.tree_id = np.repeat(np.arange(len(parents)), sizes)
        glob = [np.where(p >= 0, p + o, -1) for p, o in zip(parents, self.offsets)]
        self.parent = np.concatenate(glob) if glob else np.zeros(0, np.int64)
        self._depth = None
        self._levels = None
        self._plan = None
        self._siblings = None
        self._send_plan = None
        self._forwarding = None
        self.where: dict[str, np.ndarray] = {}  # node/socket of every forest node (for contention)
        self.link: np.ndarray | None = None  # channel index of every node's link to its parent (-1: root)
        self.send_key: np.ndarray | None = None  # a node's place among its siblings (send order)

    @property
    def depth(self) -> np.ndarray:
        if self._depth is None:
            self._depth = trees.depth(self.parent)
        return self._depth

    @property
    def levels(self) -> list[np.ndarray]:
        if self._levels is None:
            self._levels = levels_of(self.depth)
        return self._levels

    @property
    def fanin_plan(self) -> list[tuple]:
        if self._plan is None:
            self._plan = fanin_plan(self.parent, self.levels)
        return self._plan

    @property
    def sibling_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(non-root nodes grouped by parent in send order, group heads, group lengths)."""
        if self._siblings is None:
            kids = np.flatnonzero(self.parent >= 0)
            key = self.send_key[kids] if self.send_key is not None else kids
            kids = kids[np.lexsort((key, self.parent[kids]))]
            heads = np.flatnonzero(np.r_[True, np.diff(self.parent[kids]) != 0]) if kids.size else kids
            self._siblings = (kids, heads, np.diff(np.r_[heads, kids.size]))
        return self._siblings

    @property
    def send_plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(non-root nodes in send order, the channel of their link, their parent, the position of
        their parent's first child in that order): what :func:`message_offsets` gathers by."""
        if self._send_plan is None:
            kids, heads, lengths = self.sibling_order
            self._send_plan = (kids, self.link[kids], self.parent[kids], np.repeat(heads, lengths))
        return self._send_plan

    @property
    def forwarding(self) -> tuple[np.ndarray, np.ndarray]:
        """(the nodes that forward: neither root nor leaf, how many forwarding nodes lie above each
        node on its way to the root, [N])."""
        if self._forwarding is None:
            parent = self.parent
            inner = np.zeros(len(parent), dtype=bool)
            inner[parent[parent >= 0]] = True
            inner &= parent >= 0
            above = np.zeros(len(parent))
            for nodes in self.levels[1:]:
                up = parent[nodes]
                above[nodes] = above[up] + inner[up]
            self._forwarding = (np.flatnonzero(inner), above)
        return self._forwarding

    def per_tree_max(self, x: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(x, self.offsets, axis=0)

    def per_tree_mean(self, x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, self.offsets, axis=0) / self.sizes[:, None]


def link_channels(parent: np.ndarray, ranks, channel_index: dict, unpinned_channel: str = "core") -> np.ndarray:
    """Channel index of the link from every node to its parent, [P] (-1 for the root)."""
    s = np.flatnonzero(parent >= 0)
    codes = channel_codes(ranks, parent[s], s, unpinned_channel)
    lookup = np.array([channel_index.get(c, -1) for c in LEVELS])
    k = lookup[codes]
    if (k < 0).any():
        missing = sorted({LEVELS[c] for c in codes[k < 0]})
        raise ValueError(f"the tree uses channel(s) {missing} with no point-to-point/NBFT costs")
    out = np.full(len(parent), -1, dtype=np.int64)
    out[s] = k
    return out


def census(parent: np.ndarray, ranks, channel_index: dict, unpinned_channel: str = "core",
           links: np.ndarray | None = None) -> np.ndarray:
    """Children per node per channel, [P, K], of a tree laid on a placement (node i = rank i)."""
    P = len(parent)
    if links is None:
        links = link_channels(parent, ranks, channel_index, unpinned_channel)
    s = np.flatnonzero(parent >= 0)
    K = len(channel_index)
    return np.bincount(parent[s] * K + links[s], minlength=P * K).reshape(P, K)


def levels_of(depth: np.ndarray) -> list[np.ndarray]:
    """Node indices grouped by depth, root level first."""
    order = np.argsort(depth, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(depth[order])) + 1)


def fanin_done(parent: np.ndarray, w: np.ndarray, levels: list[np.ndarray] | None = None,
               plan: list[tuple] | None = None) -> np.ndarray:
    """When each rank's reduce fan-in is done, [N, S], for a tree or a forest: its slowest child
    subtree is in and its own fan-in w is over (leaves: 0)."""
    if levels is None:
        levels = levels_of(trees.depth(parent))
    if plan is None:
        plan = fanin_plan(parent, levels)
    finish = w.copy()
    sub = np.zeros_like(w)  # slowest child subtree
    for nodes, kids, heads, up in plan:
        finish[nodes] = sub[nodes] + w[nodes]
        if kids is not None:
            sub[up] = np.maximum.reduceat(finish[kids], heads, axis=0)
    return finish


def fanin_plan(parent: np.ndarray, levels: list[np.ndarray]) -> list[tuple]:
    """Bottom-up order of :func:`fanin_done`: per level, deepest first, (nodes, its
    non-root nodes grouped by parent, the group heads, the parents); it depends on the tree only."""
    plan = []
    for nodes in levels[::-1]:
        kids = nodes[parent[nodes] >= 0]
        if kids.size:
            kids = kids[np.argsort(parent[kids], kind="stable")]
            heads = np.flatnonzero(np.r_[True, np.diff(parent[kids]) != 0])
            plan.append((nodes, kids, heads, parent[kids[heads]]))
        else:
            plan.append((nodes, None, None, None))
    return plan


def send_keys(spec: dict, P: int) -> np.ndarray:
    """Every node's place in its parent's send (receive) order, [P]: rank order, but for the shapes
    whose builder lists children otherwise (:func:`collat.trees.send_order`)."""
    if spec.get("tree") not in ("knomial", "in_order_binary"):
        return np.arange(P)
    return _send_keys(spec["tree"], int(P), int(spec.get("radix", 4)))


@functools.lru_cache(maxsize=4096)
def _send_keys(tree: str, P: int, radix: int) -> np.ndarray:
    """:func:`send_keys` of the shapes with their own send order, once per (shape, P): the same for
    every mapping and mode (read only)."""
    key = np.zeros(P, dtype=np.int64)
    for kids in trees.send_order(tree, P, radix):
        key[kids] = np.arange(len(kids))
    key.flags.writeable = False
    return key


def message_offsets(forest: Forest, w: np.ndarray, costs: ChannelCosts) -> tuple[np.ndarray, np.ndarray]:
    """(offset, gap) of every node, [N, S]: when its message lands after its parent's fan-out
    (fan-in) starts, and the per-message gap of its link.

    The parent handles its children one after another in send order (:func:`send_keys`), each
    costing the gap beta_c of its channel (the NBFT slope); a message lands alpha_c (the NBFT
    line's intercept) after its own gap, never sooner than one point-to-point message on its
    channel and never later than the parent's whole fan-out w. Roots: 0.
    """
    kids, k, up, head = forest.send_plan
    offset, gap_of = np.zeros_like(w), np.zeros_like(w)
    if kids.size == 0:
        return offset, gap_of
    gap = np.maximum(costs.beta, 0.0)[k]
    total = np.cumsum(gap, axis=0)
    before = total - gap  # the gaps of every earlier message, over all parents ...
    land = total - before[head]  # ... less those of earlier parents: this parent's gaps up to this child
    land += costs.alpha[k]
    np.maximum(land, costs.p2p[k], out=land)
    np.minimum(land, w[up], out=land)
    offset[kids] = land
    gap_of[kids] = gap
    return offset, gap_of


def osu_rank_times(forest: Forest, w: np.ndarray, costs: ChannelCosts, operation: str) -> np.ndarray:
    """Each rank's own time in one call, [N, S], as OSU times it (between barriers; avg = the mean
    over ranks, max = the slowest rank).

    bcast: a rank receives when its message lands (:func:`message_offsets` along its ancestors),
    then runs its own fan-out w (local completion of its sends).
    reduce: a rank's fan-in ends when its slowest child subtree is in and its own fan-in is done
    (:func:`fanin_done`); a non-root then sends to its parent, which costs it the gap of its link,
    plus, for a fraction q(m) of the time until the parent takes the message in, the wait of a
    sender whose message the receiver has not matched yet (q = 1: rendezvous, the send completes
    when the parent takes it; q = 0: eager, it completes locally). q is ``costs.wait_eager`` up to
    ``costs.eager_limit`` bytes and ``costs.wait_rendezvous`` above.
    An inner non-root rank (one that forwards) waits ``costs.forward`` (the calibrated mode's; 0
    otherwise) between its own message and its sends: bcast, after its arrival, so its subtree
    lands that much later; reduce, after its fan-in, before its send up.
    """
    if forest.link is None:
        raise ValueError("per-rank times need the channel of every link: build the forest with Placements.census")
    parent = forest.parent
    forward = np.asarray(costs.forward, dtype=float)
    forwarders = None
    if np.any(forward > 0):
        forwarders, above = forest.forwarding
        if operation == "reduce":  # a forwarder's send up starts that much after its fan-in
            w = w.copy()
            w[forwarders] += forward
    offset, gap = message_offsets(forest, w, costs)
    if operation == "bcast":
        arrival = np.zeros_like(w)
        for nodes in forest.levels[1:]:
            arrival[nodes] = arrival[parent[nodes]] + offset[nodes]
        out = arrival + w
        if forwarders is not None:  # every forwarder above delays the arrival, a forwarder its own sends
            out += above[:, None] * forward
            out[forwarders] += forward
        return out
    finish = fanin_done(parent, w, forest.levels, forest.fanin_plan)
    kids = np.flatnonzero(parent >= 0)
    taken = (finish - w)[parent[kids]] + offset[kids]
    q = np.where(costs.sizes > costs.eager_limit, costs.wait_rendezvous, costs.wait_eager)[None, :]
    own = finish[kids] + gap[kids]
    out = finish.copy()
    out[kids] = own + q * np.maximum(taken - own, 0.0)
    return out


class Placements:
    """Cached placements (columns as arrays) and forest censuses on one machine."""

    def __init__(self, machine: dict):
        self.machine = machine
        self._cache: dict = {}
        self._census: dict = {}

    def __call__(self, P: int, mapping: str) -> dict:
        key = (P, mapping)
        if key not in self._cache:
            self._cache[key] = place_arrays(P, mapping, self.machine)
        return self._cache[key]

    def census(self, spec: dict, P_values, mapping: str, channel_index: dict, unpinned: str):
        """(Forest, counts [N, K]) of one tree shape for every P: independent of size, mode, operation."""
        shape = tuple(sorted((k, v) for k, v in spec.items() if k in ("tree", "fanout", "radix")))
        key = (shape, tuple(int(p) for p in P_values), mapping, tuple(channel_index), unpinned)
        if key not in self._census:
            parents = [trees.tree(int(P), spec) for P in P_values]
            links = [link_channels(p, self(int(P), mapping), channel_index, unpinned)
                     for p, P in zip(parents, P_values)]
            counts = np.vstack([census(p, None, channel_index, unpinned, k) for p, k in zip(parents, links)])
            forest = Forest(parents)
            forest.link = np.concatenate(links)
            forest.send_key = np.concatenate([send_keys(spec, int(P)) for P in P_values])
            forest.where = {level: np.concatenate([self(int(P), mapping)[level] for P in P_values])
                            for level in ("node", "socket")}
            self._census[key] = (forest, counts)
        return self._census[key]

    def schedule_layout(self, name: str, P_values, mapping: str, channel_index: dict, unpinned: str):
        """:func:`collat.schedules.layout` of one schedule for every P: independent of size, costs and mode."""
        key = ("schedule", name, tuple(int(p) for p in P_values), mapping, tuple(channel_index), unpinned)
        if key not in self._census:
            build = schedules.BUILDERS[name]
            self._census[key] = schedules.layout([build(int(P)) for P in P_values], P_values,
                                                 [self(int(P), mapping) for P in P_values], channel_index, unpinned)
        return self._census[key]


def node_costs(counts: np.ndarray, costs: ChannelCosts, fanout) -> np.ndarray:
    """Fan-out cost of every node, [N, S] (0 for leaves), priced by ``fanout(counts [n, K], costs)``
    (a mode's fan-out: :func:`.paper_mode.folded_fanout`, :func:`.openmpi_mode.sequential_fanout`)."""
    # many parents share one census row (every inner node of a chain: one child, same channel):
    # cost each distinct row once
    counts = np.asarray(counts, dtype=np.int64)
    base = int(counts.max(initial=0)) + 1
    if base ** counts.shape[1] < 2**62:  # one integer key per row: a 1-D unique is fast
        key = counts @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        rows = counts[first]
    else:
        rows, inverse = np.unique(counts, axis=0, return_inverse=True)
    return fanout(rows, costs)[inverse.ravel()]
