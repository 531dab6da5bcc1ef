"""The schedule core every mode shares: trees laid on the machine, their channel census, and when
each rank is done.

A collective algorithm is a tree (:mod:`collat.model.shapes.trees`) laid on the machine by a mapping policy
(:mod:`collat.model.placement`); every parent talks to its children in one fan-out (bcast) or fan-in
(reduce) whose cost per parent (``w`` [N, S], over all sizes at once) a mode's fan-out pricing
gives (:func:`node_costs`). From those costs:

* per rank (:func:`osu_rank_times`): as OSU times a call, each rank on its own; a parent handles
  its children one after another in send order (:func:`message_offsets`), so a message lands after
  the gaps of the children before it; a bcast rank's time is its arrival plus its own fan-out, a
  reduce rank's the end of its fan-in (:func:`fanin_done`: its children taken in receive order, each
  as it comes in) plus its send. avg = the mean over ranks, max = the slowest rank (the critical
  path).
* the paper mode's level-synchronous stages use the depth levels (:mod:`.paper_mode`).

Several trees (every P of a curve) are evaluated as one :class:`Forest`; the tree census (children
per parent per channel) does not depend on the message size. The passes along a forest (a parent
before its children, or the reverse) run as compiled loops (:mod:`.kernels`).
"""

from __future__ import annotations

import functools

import numpy as np

from collat import InputError
from collat.model import kernels
from collat.model.shapes import schedules, trees
from collat.model.placement import LEVELS, channel_codes, laid_end_to_end, place_arrays
from collat.model.costs import ChannelCosts

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
        self._order = None
        self._siblings = None
        self._send_plan = None
        self.where: dict[str, np.ndarray] = {}  # node/socket of every forest node (for contention)
        self.link: np.ndarray | None = None  # channel index of every node's link to its parent (-1: root)
        self.send_key: np.ndarray | None = None  # a node's place among its siblings (send order)
        self._memo: dict = {}  # memo(): what one census of the forest gives (Placements.census pairs them)
        self._tree_memo: dict = {}  # tree_memo(): what the trees alone give, shared with sharing_shape()'s twins

    def sharing_shape(self) -> "Forest":
        """A forest of the same trees, sharing what depends on the trees alone (parents, depth, order,
        send order when the send keys are the same, forwarders) and nothing of a placement (links,
        places, census memo): the same shape under another mapping."""
        twin = Forest.__new__(Forest)
        twin.__dict__.update(self.__dict__)
        twin.where, twin.link, twin._send_plan, twin._memo = {}, None, None, {}
        return twin

    def tree_memo(self, key, build):
        """``build()``, once per set of trees: what depends on the trees alone, whatever the placement."""
        if key not in self._tree_memo:
            self._tree_memo[key] = build()
        return self._tree_memo[key]

    def memo(self, key, build):
        """``build()``, once per forest: what depends on the tree and its census, not on the costs."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    @property
    def depth(self) -> np.ndarray:
        if self._depth is None:
            self._depth = trees.depth(self.parent)
        return self._depth

    @property
    def height(self) -> np.ndarray:
        """Height of every node: 0 for a leaf, else one more than its highest child (the rounds of
        fan-ins its subtree takes before it can send to its parent)."""
        return self.tree_memo("height", lambda: trees.height(self.parent, self.depth))

    @property
    def order(self) -> np.ndarray:
        """Every node, parents before children: tree by tree, each tree's nodes by depth, so that
        ``order[offsets[t]:offsets[t] + sizes[t]]`` are tree t's (:func:`collat.model.kernels.forest_times`
        walks one tree at a time)."""
        if self._order is None:
            self._order = topological_order(self.depth, self.tree_id)
        return self._order

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
        """(non-root nodes in send order, the channel of their link, their parent, True where a
        parent's first child starts): what :func:`message_offsets` runs along."""
        if self._send_plan is None:
            kids, heads, _ = self.sibling_order
            first = np.zeros(kids.size, dtype=np.bool_)
            first[heads] = True
            self._send_plan = (kids.astype(np.int64), self.link[kids].astype(np.int64),
                               self.parent[kids].astype(np.int64), first)
        return self._send_plan

    @property
    def forwarding(self) -> tuple[np.ndarray, np.ndarray]:
        """(the nodes that forward: neither root nor leaf, how many forwarding nodes lie above each
        node on its way to the root, [N])."""
        return self.tree_memo("forwarding", self._forwarders)

    def _forwarders(self) -> tuple[np.ndarray, np.ndarray]:
        parent = self.parent
        inner = np.zeros(len(parent), dtype=bool)
        inner[parent[parent >= 0]] = True
        inner &= parent >= 0
        above = np.zeros((len(parent), 1))
        step = np.zeros((len(parent), 1))
        step[parent >= 0, 0] = inner[parent[parent >= 0]]
        kernels.arrivals(self.order, parent, step, above)  # forwarders above = the sum of steps down
        return np.flatnonzero(inner), above[:, 0]

    def per_tree_max(self, x: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(x, self.offsets, axis=0)

    def per_tree_mean(self, x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, self.offsets, axis=0) / self.sizes[:, None]


def flat_trees(P_values, channels, n_channels: int) -> tuple[Forest, np.ndarray]:
    """(forest, census counts [nodes, n_channels]) of flat trees: tree i has ``P_values[i]`` ranks,
    its root sends to every other over channel index ``channels[i]`` (the NBFT stage's runs). One
    sender per tree, so every rank is placed on node and socket 0: no contention to place."""
    P_values = np.asarray(P_values, dtype=np.int64)
    channels = np.broadcast_to(np.asarray(channels, dtype=np.int64), P_values.shape)
    forest = Forest([np.r_[-1, np.zeros(P - 1, dtype=np.int64)] for P in P_values])
    forest.link = np.where(forest.parent >= 0, np.repeat(channels, P_values), -1)
    nowhere = np.zeros(len(forest.parent), dtype=np.int64)
    forest.where = {"node": nowhere, "socket": nowhere}
    counts = np.zeros((len(forest.parent), n_channels))
    counts[forest.offsets, channels] = P_values - 1
    return forest, counts


def link_channels(parent: np.ndarray, ranks, channel_index: dict, unpinned_channel: str = "core") -> np.ndarray:
    """Channel index of the link from every node to its parent, [N] (-1 for a root): of a tree, or of a
    forest with its trees' placements laid end to end (global node ids)."""
    s = np.flatnonzero(parent >= 0)
    codes = channel_codes(ranks, parent[s], s, unpinned_channel)
    lookup = np.array([channel_index.get(c, -1) for c in LEVELS])
    k = lookup[codes]
    if (k < 0).any():
        missing = sorted({LEVELS[c] for c in codes[k < 0]})
        raise InputError("results/nbft/fits.csv", None,
                         f"a point-to-point fit (results/pt2pt/hockney.csv) and an NBFT fit of every channel the "
                         f"trees use on this machine (config machine, model.unpinned_channel): add the logs of "
                         f"{missing}", f"none for {missing}")
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


def fanin_done(parent: np.ndarray, w: np.ndarray, order: np.ndarray | None = None,
               before: np.ndarray | None = None, delay: np.ndarray | None = None) -> np.ndarray:
    """When each rank's reduce fan-in is done, [N, S], for a tree or a forest: its own fan-in w,
    started when its children allow (leaves: 0). A parent takes its children one after another in
    its receive order, each no sooner than it is in; ``before`` [N, S]: the part of the parent's
    fan-in spent on the children before each (:func:`fanin_before`); without, 0: the fan-in starts
    when the slowest child is in. ``delay`` [N, S]: a child's message is in no sooner than that
    after the child is done (a shared link's queue: :func:`collat.model.openmpi_mode.shared_link`),
    and its parent's fan-in ends no sooner. ``order``: the nodes, parents before children
    (:attr:`Forest.order`)."""
    parent = np.asarray(parent, dtype=np.int64)
    if order is None:
        order = topological_order(trees.depth(parent))
    w = np.ascontiguousarray(w, dtype=float)
    finish = np.empty_like(w)
    kernels.fanin_done(order, parent, w, finish, np.zeros_like(w) if before is None else _f(before),
                       np.zeros((0, w.shape[1])) if delay is None else _f(delay))
    return finish


def fanin_before(forest: "Forest", w: np.ndarray, costs: ChannelCosts) -> np.ndarray:
    """What each parent's reduce fan-in spends before it takes each child, [N, S]: the gaps of its
    children before that one in its receive order (:func:`send_keys`), at most its fan-in w less
    the child's own gap. A child whose subtree is in late is then taken as it comes in, after the
    others: OpenMPI's reduce takes its children in order, one receive and reduction at a time
    (coll/base ``ompi_coll_base_reduce_generic``), and an in-order binomial tree lists the smallest
    subtree first."""
    kids, k, up, first = forest.send_plan
    w = np.ascontiguousarray(w, dtype=float)
    before = np.zeros_like(w)
    if kids.size:
        kernels.fanin_before(kids, k, up, first, 0, kids.size, 0, np.maximum(costs.beta, 0.0), w, before)
    return before


def topological_order(depth: np.ndarray, tree: np.ndarray | None = None) -> np.ndarray:
    """The nodes by depth, root level first (a parent before its children); with ``tree`` (each
    node's tree), tree by tree in increasing tree order, each by depth."""
    if tree is None:
        return np.argsort(depth, kind="stable").astype(np.int64)
    return np.lexsort((depth, tree)).astype(np.int64)


def send_keys(spec: dict, P: int) -> np.ndarray:
    """Every node's place in its parent's send (receive) order, [P]: rank order, but for the shapes
    whose builder lists children otherwise (:func:`collat.model.shapes.trees.send_order`) and for a spec with
    ``order: descending`` (the highest rank first: OpenMPI's linear reduce, :func:`collat.model.shapes.openmpi.receive_order`)."""
    if spec.get("order") == "descending":
        return P - 1 - np.arange(P)
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
    channel and never later than the parent's whole fan-out w. Roots: 0. Where the costs say which
    part of a gap moves bytes (``costs.gap_bytes``), the children on one resource (``costs.group``)
    share it: that part counts, for each of them, as the bytes of all of them on the resource.
    """
    kids, k, up, first = forest.send_plan
    w = np.ascontiguousarray(w, dtype=float)
    offset, gap_of = np.zeros_like(w), np.zeros_like(w)
    if kids.size:
        kernels.message_offsets(kids, k, up, first, np.maximum(costs.beta, 0.0), _f(costs.alpha), _f(costs.p2p),
                                costs.bytes_part(), costs.group,
                                w, offset, gap_of)
    return offset, gap_of


def _f(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def osu_rank_times(forest: Forest, w: np.ndarray, costs: ChannelCosts, operation: str,
                   delay: np.ndarray | None = None) -> np.ndarray:
    """Each rank's own time in one call, [N, S], as OSU times it (between barriers; avg = the mean
    over ranks, max = the slowest rank).

    bcast: a rank receives when its message lands (:func:`message_offsets` along its ancestors),
    then runs its own fan-out w (local completion of its sends).
    reduce: a rank takes its children one after another in receive order, each no sooner than its
    subtree is in, so its fan-in ends its own fan-in w after the latest start its children allow
    (:func:`fanin_done`, :func:`fanin_before`); a non-root then sends to its parent, which costs
    it the gap of its link, plus, for a fraction q(m) of the time until the parent takes the
    message in (after the children before it, each taken as it came in, and no sooner than
    ``delay`` after the rank is done: a shared link's queue), the wait of a sender
    whose message the receiver has not matched yet (q = 1: rendezvous, the send completes when the
    parent takes it; q = 0: eager, it completes locally), q of the link's channel
    (:meth:`ChannelCosts.waits`).
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
        out = np.zeros_like(offset)
        kernels.arrivals(forest.order, parent, offset, out)
        out += w
        if forwarders is not None:  # every forwarder above delays the arrival, a forwarder its own sends
            out += above[:, None] * forward
            out[forwarders] += forward
        return out
    w = np.ascontiguousarray(w, dtype=float)
    before = fanin_before(forest, w, costs)
    delay = np.zeros((0, w.shape[1])) if delay is None else _f(delay)  # no rows: no link delays
    finish = fanin_done(parent, w, forest.order, before, delay)
    out = finish.copy()
    kids, k, _, first = forest.send_plan
    kernels.reduce_sends(kids, k, first, finish, w, offset, gap, before, costs.waits(), out, delay)
    return out


class Placements:
    """Cached placements (columns as arrays) and forest censuses on one machine."""

    def __init__(self, machine: dict):
        self.machine = machine
        self._cache: dict = {}
        self._census: dict = {}
        self._shapes: dict = {}  # (shape, P values) -> the bare forest every mapping's census shares

    def __call__(self, P: int, mapping: str) -> dict:
        key = (P, mapping)
        if key not in self._cache:
            self._cache[key] = place_arrays(P, mapping, self.machine)
        return self._cache[key]

    def laid(self, P_values, mapping: str) -> dict:
        """The placements of every P laid end to end (node, socket, l3, pinned; rank r of the i-th P
        at the sum of the P before it + r): what a forest or a set of schedules over P_values sits on."""
        key = ("laid", tuple(int(p) for p in P_values), mapping)
        if key not in self._cache:
            self._cache[key] = laid_end_to_end([self(int(P), mapping) for P in P_values])
        return self._cache[key]

    def census(self, spec: dict, P_values, mapping: str, channel_index: dict, unpinned: str):
        """(Forest, counts [N, K]) of one tree shape for every P: independent of size, mode, operation."""
        shape = tuple(sorted((k, v) for k, v in spec.items() if k in ("tree", "fanout", "radix", "order")))
        Ps = tuple(int(p) for p in P_values)
        key = (shape, Ps, mapping, tuple(channel_index), unpinned)
        if key not in self._census:
            if (shape, Ps) not in self._shapes:  # the trees alone, once for every mapping
                bare = Forest([trees.tree(P, spec) for P in Ps])
                bare.send_key = np.concatenate([send_keys(spec, P) for P in Ps])
                bare.depth, bare.order, bare.sibling_order  # noqa: B018 - computed once, shared by the twins
                self._shapes[(shape, Ps)] = bare
            forest = self._shapes[(shape, Ps)].sharing_shape()
            laid = self.laid(Ps, mapping)
            forest.link = link_channels(forest.parent, laid, channel_index, unpinned)  # global ids: one pass
            forest.where = {level: laid[level] for level in ("node", "socket")}
            self._census[key] = (forest, census(forest.parent, None, channel_index, unpinned, forest.link))
        return self._census[key]

    def remote(self, P_values, mapping: str) -> np.ndarray:
        """The most ranks on one node other than rank 0's (the root's), per P of ``P_values`` under
        ``mapping`` (0 on one node): what the calibrated mode's start skew grows with."""
        key = ("remote", tuple(int(p) for p in P_values), mapping)
        if key not in self._cache:
            def most(P):
                node = np.asarray(self(int(P), mapping)["node"])
                others = node[node != node[0]]
                return int(np.bincount(others).max()) if others.size else 0
            self._cache[key] = np.array([most(P) for P in P_values], dtype=float)
        return self._cache[key]

    def release_queue(self, P_values, mapping: str, barrier_rules) -> np.ndarray:
        """Per P of ``P_values`` under ``mapping``, the most messages of the last round of OSU's
        barrier (``barrier_rules``: config ``model.openmpi.barrier_rules``) that enter one node from
        another (:func:`collat.model.shapes.barrier.release_queue`; 0 on one node): what the
        calibrated mode's spread of the ranks' starts grows with."""
        from collat.model.shapes.barrier import release_queue

        rules = tuple(tuple(sorted(r.items())) for r in barrier_rules)
        key = ("release", tuple(int(p) for p in P_values), mapping, rules)
        if key not in self._cache:
            self._cache[key] = np.array([release_queue(np.asarray(self(int(P), mapping)["node"]), barrier_rules)
                                         if barrier_rules else 0 for P in P_values], dtype=float)
        return self._cache[key]

    def schedule_layout(self, name: str, P_values, mapping: str, channel_index: dict, unpinned: str):
        """:func:`collat.model.shapes.schedules.layout` of one schedule for every P: independent of size, costs and mode."""
        key = ("schedule", name, tuple(int(p) for p in P_values), mapping, tuple(channel_index), unpinned)
        if key not in self._census:
            Ps = tuple(int(p) for p in P_values)
            self._census[key] = schedules.layout(schedules.flat_of(name, Ps), Ps, self.laid(Ps, mapping),
                                                 channel_index, unpinned)
        return self._census[key]


def census_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of a census [n, K], the row of every node [N]): many parents share one row
    (every inner node of a chain: one child, same channel), so a fan-out is priced once per row."""
    counts = np.asarray(counts, dtype=np.int64)
    base = int(counts.max(initial=0)) + 1
    if base ** counts.shape[1] < 2**62:  # one integer key per row: a 1-D unique is fast
        key = counts @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return counts[first], inverse.ravel()
    rows, inverse = np.unique(counts, axis=0, return_inverse=True)
    return rows, inverse.ravel()


def node_costs(counts: np.ndarray, costs: ChannelCosts, fanout, rows: tuple | None = None) -> np.ndarray:
    """Fan-out cost of every node, [N, S] (0 for leaves), priced by ``fanout(counts [n, K], costs)``
    (a mode's fan-out: :func:`.paper_mode.folded_fanout`, :func:`.openmpi_mode.sequential_fanout`)
    once per distinct row (``rows``: :func:`census_rows` of ``counts``, when already known)."""
    distinct, inverse = rows if rows is not None else census_rows(counts)
    return fanout(distinct, costs)[inverse]
