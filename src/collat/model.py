"""The point-to-point stage model of MPI_Bcast and MPI_Reduce (study eq. 2-4 and 8-11 of the study).

A collective algorithm is a tree (:mod:`collat.trees`) laid on the machine by a mapping policy
(:mod:`collat.placement`). Every parent talks to its children in one non-blocking fan-out (bcast)
or fan-in (reduce), an NBFT whose receivers sit on mixed channels, costed from the NBFT
measurements, T_NBFT^c(P, m) = gamma^c(P, m) T_p2p^c(m) (study eq. 4, 7), i.e. the nbft stage's line
alpha + beta (P - 1) (study eq. 6). Mixed channels (:func:`fanout_costs`): the paper mode folds the
children on lower channels onto the highest one with study eq. 11 (Q from the point-to-point latencies,
study eq. 10); the openmpi mode adds every receiver's per-message gap (the NBFT slope of its channel)
to the longest single-channel tail.

Two ways to add the fan-outs up:

* per rank (mode ``openmpi``, :func:`osu_rank_times`): as OSU times a call, each rank on its own:
  a parent handles its children one after another in send order, so a message lands after the
  gaps of the children before it; a bcast rank's time is its arrival plus its own fan-out, a
  reduce rank's the end of its fan-in plus its send (eager, or waiting for its parent: rendezvous).
  avg = the mean over ranks, max = the slowest rank.
* ``staged`` (mode ``paper``, study eq. 2-3): level-synchronous stages, stage time = the slowest fan-out
  of the stage, n_s segments pipelined through the L levels in L + n_s - 1 stages.

The tree census (children per parent per channel) does not depend on the message size, so every
cost is an array over all sizes at once.

OpenMPI's algorithms that are not one tree of whole-message fan-outs (split binary tree,
scatter-allgather, Rabenseifner) are rounds of messages (:mod:`collat.schedules`); with them and
each algorithm's fall-back (:func:`runs_fallback`) every choice of OpenMPI's fixed rules is priced
(:func:`price_shape`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import schedules, trees
from .placement import LEVELS, channel_codes, place_arrays


# --------------------------------------------------------------------------- channel costs

class ChannelCosts:
    """What one fan-out costs on each channel, at a list of sizes (arrays over [K channels, S sizes]).

    ``p2p[k, s]`` = T_p2p^k(size_s) (study eq. 5); ``alpha``, ``beta``: the NBFT line of channel k
    (study eq. 6), T_NBFT^k(n + 1, m) = alpha + beta n for n receivers. ``table`` (given as [K, S, n])
    holds T_NBFT^k with n receivers as measured (median over runs, interpolated over the measured P)
    up to the largest measured NBFT, the line beyond, 0 for n = 0; it is kept as
    ``table_by_receivers`` [K, n, S] so that the rows of one receiver count are contiguous.
    ``link_table`` [K, n, S] prices n messages on a shared link (:func:`shared_link`).
    """

    def __init__(self, channels: list[str], sizes, p2p, alpha, beta, table=None, curves=None):
        self.channels = list(channels)
        self.curves = curves  # T_p2p of each channel at any size (the Hockney fits), for schedules
        self.index = {c: i for i, c in enumerate(self.channels)}
        self.sizes = np.asarray(sizes, dtype=float)
        self.p2p, self.alpha, self.beta = (np.asarray(a, dtype=float) for a in (p2p, alpha, beta))
        self.table_by_receivers = None if table is None else np.ascontiguousarray(np.transpose(table, (0, 2, 1)))
        self.link_table = None
        self.overhead = 0.0  # a per-call constant added to every prediction (the calibrated mode's)
        # a reduce sender's wait for its receiver (osu_rank_times): eager up to eager_limit bytes
        self.eager_limit, self.wait_eager, self.wait_rendezvous = np.inf, 0.0, 1.0
        self.memory_contention = 0.0  # us per byte per concurrent message in one socket (shared_memory)

    @classmethod
    def from_fits(cls, hockney: pd.DataFrame, nbft_fits: pd.DataFrame, operation: str, target: str,
                  channels: list[str], sizes, nbft: pd.DataFrame | None = None, max_receivers: int = 0
                  ) -> "ChannelCosts":
        """From the pt2pt stage's Hockney fits, the nbft stage's lines and (optionally) the tidy NBFT
        measurements, for one operation and target (avg or max)."""
        from .hockney import t_p2p

        sizes = np.asarray(sizes, dtype=float)
        f = nbft_fits[(nbft_fits["operation"] == operation) & (nbft_fits["target"] == target)]
        have = [c for c in channels if c in set(f["channel"]) and c in set(hockney["channel"])]
        p2p = np.vstack([t_p2p(hockney, c, sizes) for c in have])
        alpha, beta = np.empty_like(p2p), np.empty_like(p2p)
        nearest = []
        for k, c in enumerate(have):
            g = f[f["channel"] == c].sort_values("size")
            measured = g["size"].to_numpy(float)
            # the NBFT line of the nearest measured size at or below (the smallest for tiny sizes),
            # scaled by T_p2p(m) / T_p2p(m~): gamma(P, m~) T_p2p(m), exact at measured sizes
            j = np.clip(np.searchsorted(measured, sizes, side="right") - 1, 0, len(measured) - 1)
            scale = p2p[k] / t_p2p(hockney, c, measured[j])
            alpha[k] = g["alpha_us"].to_numpy()[j] * scale
            beta[k] = g["beta_us"].to_numpy()[j] * scale
            nearest.append((measured[j], scale))
        table = None
        if nbft is not None and max_receivers > 0:
            n = np.arange(max_receivers + 1, dtype=float)
            table = alpha[:, :, None] + np.maximum(beta, 0.0)[:, :, None] * n[None, None, :]
            d = nbft[(nbft["operation"] == operation) & ~nbft["outlier"] & nbft[target].notna()]
            for k, c in enumerate(have):
                med = d[d["channel"] == c].groupby(["size", "P"])[target].median()
                for si, (m_near, scale) in enumerate(zip(*nearest[k])):
                    if m_near not in med.index.get_level_values(0):
                        continue
                    series = med.loc[m_near]
                    recv = series.index.to_numpy(float) - 1.0
                    inside = n <= recv.max()
                    table[k, si, inside] = np.interp(n[inside], recv, series.to_numpy()) * scale
            table[:, :, 0] = 0.0
        from .hockney import t_p2p_curve

        return cls(have, sizes, p2p, alpha, beta, table, [t_p2p_curve(hockney, c) for c in have])

    def p2p_at(self, k: np.ndarray, size: np.ndarray) -> np.ndarray:
        """T_p2p of channel index k[i] at sizes size[i, :] (any sizes, from the Hockney fits)."""
        if self.curves is None:
            raise ValueError("these channel costs carry no Hockney fits: message schedules cannot be priced")
        out = np.empty(size.shape)
        for kk in np.unique(k):
            rows = k == kk
            out[rows] = self.curves[kk](size[rows])
        return out

    def scaled(self, factor: float) -> "ChannelCosts":
        """NBFT costs multiplied by ``factor`` (same point-to-point times, so the same Q)."""
        out = ChannelCosts(self.channels, self.sizes, self.p2p, self.alpha * factor, self.beta * factor,
                           curves=self.curves)
        out.eager_limit, out.wait_eager, out.wait_rendezvous = self.eager_limit, self.wait_eager, self.wait_rendezvous
        for name in ("table_by_receivers", "link_table"):
            value = getattr(self, name)
            setattr(out, name, None if value is None else value * factor)
        return out


def fanout_costs(counts: np.ndarray, costs: ChannelCosts, mode: str = "openmpi") -> np.ndarray:
    """Cost in us of each parent's fan-out, [n_parents, S], from its children per channel [n_parents, K].

    ``paper`` (study eq. 11 as the study coded it): c_max = the highest channel in config order,
    N_eq = N_max + sum_j floor(N_j / Q_max,j) with Q = T_p2p(c_max) / T_p2p(c_j) (study eq. 10), cost =
    the NBFT line of c_max with N_eq receivers.

    ``openmpi``: the parent issues its sends one after another, so every receiver on channel c costs
    that channel's per-receiver gap beta_c (the NBFT slope), and the fan-out ends with the longest
    remaining tail of one channel: cost = sum_c beta_c N_c + max_c [T_NBFT^c(N_c) - beta_c N_c]
    (one channel alone: exactly its NBFT; study eq. 11 with Q_max,j = beta_max / beta_j taken from the NBFT
    instead of the latency ratio), never below one message on the slowest channel present (study eq. 1).
    T_NBFT^c comes from the measured table (measured where measured) when present, else the line.
    """
    counts = np.asarray(counts)
    n, K = counts.shape
    S = costs.p2p.shape[1]
    present = counts > 0
    s_idx = np.arange(S)[None, :]
    if mode == "paper":
        order = np.where(present, np.arange(K)[None, :], -1)
        cmax = np.repeat(order.max(axis=1)[:, None], S, axis=1)  # [n, S]
        t_max = costs.p2p[cmax, s_idx]
        q = t_max[:, None, :] / costs.p2p[None, :, :]  # [n, K, S]
        folded = np.floor(counts[:, :, None] / q)
        mine = np.arange(K)[None, :, None] == cmax[:, None, :]
        n_eq = np.where(mine, counts[:, :, None], folded).sum(axis=1)
        line = costs.alpha[cmax, s_idx] + costs.beta[cmax, s_idx] * n_eq
        return np.where(present.any(axis=1)[:, None], line, 0.0)
    if mode != "openmpi":
        raise ValueError(f"model mode {mode!r}: expected openmpi or paper")
    gap = np.maximum(costs.beta, 0.0)  # [K, S]
    total = counts.astype(float) @ gap  # [n, S]
    tail = np.full((n, S), -np.inf)
    floor = np.zeros((n, S))
    table = costs.table_by_receivers
    for k in range(K):
        rows = np.flatnonzero(present[:, k])
        if rows.size == 0:
            continue
        nk = counts[rows, k]
        if table is not None:
            if nk.max() >= table.shape[1]:
                raise ValueError(f"a fan-out of {nk.max()} receivers exceeds the cost table ({table.shape[1] - 1})")
            part = table[k][nk]  # [rows, S]
        else:
            part = costs.alpha[k][None, :] + costs.beta[k][None, :] * nk[:, None]
        tail[rows] = np.maximum(tail[rows], part - gap[k][None, :] * nk[:, None])
        floor[rows] = np.maximum(floor[rows], costs.p2p[k][None, :])
    out = np.maximum(total + tail, floor)
    return np.where(present.any(axis=1)[:, None], out, 0.0)


# --------------------------------------------------------------------------- tree census

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
    key = np.zeros(P, dtype=np.int64)
    for kids in trees.send_order(spec["tree"], P, int(spec.get("radix", 4))):
        key[kids] = np.arange(len(kids))
    return key


def message_offsets(forest: "Forest", w: np.ndarray, costs: "ChannelCosts") -> tuple[np.ndarray, np.ndarray]:
    """(offset, gap) of every node, [N, S]: when its message lands after its parent's fan-out
    (fan-in) starts, and the per-message gap of its link.

    The parent handles its children one after another in send order (:func:`send_keys`), each
    costing the gap beta_c of its channel (the NBFT slope); a message lands alpha_c (the NBFT
    line's intercept) after its own gap, never sooner than one point-to-point message on its
    channel and never later than the parent's whole fan-out w. Roots: 0.
    """
    parent, link = forest.parent, forest.link
    kids, heads, lengths = forest.sibling_order
    offset, gap_of = np.zeros_like(w), np.zeros_like(w)
    if kids.size == 0:
        return offset, gap_of
    k = link[kids]
    gap = np.maximum(costs.beta, 0.0)[k]
    total = np.cumsum(gap, axis=0)
    before = np.repeat(total[heads] - gap[heads], lengths, axis=0)
    land = np.maximum(total - before + costs.alpha[k], costs.p2p[k])
    offset[kids] = np.minimum(land, w[parent[kids]])
    gap_of[kids] = gap
    return offset, gap_of


def osu_rank_times(forest: "Forest", w: np.ndarray, costs: "ChannelCosts", operation: str) -> np.ndarray:
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
    """
    if forest.link is None:
        raise ValueError("per-rank times need the channel of every link: build the forest with Placements.census")
    offset, gap = message_offsets(forest, w, costs)
    parent = forest.parent
    if operation == "bcast":
        arrival = np.zeros_like(w)
        for nodes in forest.levels[1:]:
            arrival[nodes] = arrival[parent[nodes]] + offset[nodes]
        return arrival + w
    finish = fanin_done(parent, w, forest.levels, forest.fanin_plan)
    kids = np.flatnonzero(parent >= 0)
    taken = (finish - w)[parent[kids]] + offset[kids]
    q = np.where(costs.sizes > costs.eager_limit, costs.wait_rendezvous, costs.wait_eager)[None, :]
    own = finish[kids] + gap[kids]
    out = finish.copy()
    out[kids] = own + q * np.maximum(taken - own, 0.0)
    return out


def staged_forest(forest: Forest, w: np.ndarray, segments: int = 1) -> np.ndarray:
    """Study study eq. 2-3 for every tree of a forest, [T, S]: level-synchronous stages, n_s segments pipelined.

    Stage i (0-based, i < L + n_s - 1) runs the fan-outs of levels max(0, i - n_s + 1) .. min(i, L - 1)
    concurrently and lasts as long as the slowest of them; ``w`` holds every node's fan-out cost at
    the segment (0 for leaves).
    """
    d = forest.depth
    T, S = len(forest.sizes), w.shape[1]
    L1 = int(d.max(initial=0)) + 1
    level_max = np.zeros((T * L1, S))
    key = forest.tree_id * L1 + d
    order = np.argsort(key, kind="stable")
    heads = np.flatnonzero(np.r_[True, np.diff(key[order]) != 0])
    level_max[key[order][heads]] = np.maximum.reduceat(w[order], heads, axis=0)
    level_max = level_max.reshape(T, L1, S)
    pad = np.concatenate([level_max, np.zeros((T, segments - 1, S))], axis=1)
    window = pad.copy()
    for o in range(1, segments):  # stage i = max over levels i - o, o < n_s
        window[:, o:] = np.maximum(window[:, o:], pad[:, :-o])
    return window.sum(axis=1)


def staged(parent: np.ndarray, w: np.ndarray, segments: int = 1) -> np.ndarray:
    """Study study eq. 2-3 for one tree ([S]); see :func:`staged_forest`."""
    return staged_forest(Forest([np.asarray(parent)]), w, segments)[0]


# --------------------------------------------------------------------------- OpenMPI's choices

def default_algorithms(operation: str, P_values, sizes, rules: dict) -> np.ndarray:
    """The algorithm OpenMPI 4.1's fixed decision rules pick for every (P, size), [len(P), len(sizes)].

    ``rules[operation]`` (config ``model.openmpi.default_rules``) is a list of ``{P_below, sizes:
    [[size_below, algorithm], ..., [null, algorithm]]}`` in increasing P_below; the first block
    with P < P_below applies, then the first size bound with size < bound (strict, as the v4.1 sources).
    """
    sizes = np.asarray(sizes)
    out = np.empty((len(P_values), len(sizes)), dtype=np.int64)
    for i, P in enumerate(P_values):
        block = next((b for b in rules[operation] if b["P_below"] is None or P < b["P_below"]), None)
        if block is None:
            raise ValueError(f"no default rule for {operation} at P = {P}")
        bounds = np.array([b if b is not None else np.inf for b, _ in block["sizes"]], dtype=float)
        algs = np.array([a for _, a in block["sizes"]], dtype=np.int64)
        j = np.searchsorted(bounds, sizes, side="right")  # first bound with size < bound
        if (j >= len(algs)).any():
            raise ValueError(f"no default rule for {operation} at P = {P} for size {sizes[j >= len(algs)][0]}")
        out[i] = algs[j]
    return out


def default_algorithm(operation: str, P: int, size: int, rules: dict) -> int:
    """:func:`default_algorithms` for one (P, size)."""
    return int(default_algorithms(operation, [P], [size], rules)[0, 0])


def tree_spec(specs: list[dict], operation: str, algorithm: int) -> dict | None:
    for s in specs:
        if s["operation"] == operation and int(s["algorithm"]) == int(algorithm):
            return s
    return None


def runs_fallback(spec: dict, P_values, sizes) -> np.ndarray:
    """Where OpenMPI runs the algorithm's ``fallback`` shape instead of its own, [len(P), len(sizes)]
    (MPI_CHAR: count = size): below ``count_below`` elements, ``P`` (scatter-allgather: linear
    bcast), ``pof2`` = 2^floor(log2 P) (Rabenseifner: linear reduce) or a number (split binary tree:
    a pipeline when the message cannot be halved, count < 2). No key: nowhere."""
    P = np.asarray(P_values, dtype=np.int64)
    below = spec.get("count_below")
    if below is None:
        return np.zeros((len(P), len(sizes)), dtype=bool)
    if below == "P":
        limit = P
    elif below == "pof2":
        limit = 2 ** np.floor(np.log2(P)).astype(np.int64)
    else:
        limit = np.full(len(P), int(below))
    return np.asarray(sizes)[None, :] < limit[:, None]


# --------------------------------------------------------------------------- predictions

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


def node_costs(counts: np.ndarray, costs: ChannelCosts, mode: str) -> np.ndarray:
    """Fan-out cost of every node, [N, S] (0 for leaves)."""
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
    return fanout_costs(rows, costs, mode)[inverse.ravel()]


def shared_link(forest: Forest, counts: np.ndarray, costs: ChannelCosts, w: np.ndarray, channel: str) -> np.ndarray:
    """Contention on a shared link: the fan-outs of one tree level run concurrently, and every
    message they send over ``channel`` (node: the node's network interface; socket: the
    inter-socket link) leaves through the sender's node (socket). Those messages queue like the
    receivers of one NBFT, so a fan-out using the link lasts at least T_NBFT^channel(C), with C
    the messages over that link from the same node (socket) at the same level.
    """
    link = costs.link_table if costs.link_table is not None else costs.table_by_receivers
    if channel not in costs.index or link is None:
        return w
    k = costs.index[channel]
    uses = counts[:, k]
    senders = np.flatnonzero(uses > 0)
    if senders.size == 0:
        return w
    where = forest.where["node" if channel == "node" else "socket"][senders]
    depth = forest.depth[senders]
    key = (forest.tree_id[senders] * (int(depth.max()) + 1) + depth) * (int(where.max()) + 1) + where
    _, inverse = np.unique(key, return_inverse=True)
    load = np.bincount(inverse.ravel(), weights=uses[senders]).astype(np.int64)
    table = link[k]
    load = np.minimum(load, table.shape[0] - 1)
    out = w.copy()
    out[senders] = np.maximum(w[senders], table[load[inverse.ravel()]])
    return out


def shared_memory(forest: Forest, counts: np.ndarray, costs: ChannelCosts, w: np.ndarray) -> np.ndarray:
    """Contention for a socket's memory: the fan-outs of one tree level run concurrently, and every
    message another parent of the same socket sends at that level adds ``costs.memory_contention``
    microseconds per byte to a fan-out (the copies share the socket's memory bandwidth)."""
    if np.all(np.asarray(costs.memory_contention) <= 0):
        return w
    sent = counts.sum(axis=1)
    senders = np.flatnonzero(sent > 0)
    if senders.size == 0:
        return w
    socket = forest.where["socket"][senders]
    depth = forest.depth[senders]
    key = (forest.tree_id[senders] * (int(depth.max()) + 1) + depth) * (int(socket.max()) + 1) + socket
    _, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.ravel()
    others = np.bincount(inverse, weights=sent[senders])[inverse] - sent[senders]
    out = w.copy()
    out[senders] += costs.memory_contention * others[:, None] * costs.sizes[None, :]
    return out


def evaluate(forest: Forest, counts: np.ndarray, costs: ChannelCosts, operation: str, mode: str,
             segments: int = 1, with_average: bool = True, contention: tuple = ()):
    """(completion [T, S], mean rank time [T, S] or None) of every tree of a forest.

    ``openmpi``: critical path and per-rank times, with the shared links of ``contention``
    (:func:`shared_link`); ``paper``: study eq. 2-3 stages (avg only, with the fan-out costs divided by
    n_s, see :func:`predict_curve`).
    """
    if mode == "paper":
        w = node_costs(counts, costs.scaled(1.0 / segments) if segments > 1 else costs, "paper")
        return staged_forest(forest, w, segments), None
    w = node_costs(counts, costs, "openmpi")
    for channel in contention:
        w = shared_link(forest, counts, costs, w, channel)
    w = shared_memory(forest, counts, costs, w)
    times = osu_rank_times(forest, w, costs, operation)
    return forest.per_tree_max(times), forest.per_tree_mean(times) if with_average else None


def evaluate_tree(parent, counts, costs: ChannelCosts, operation: str, mode: str, segments: int = 1,
                  links=None, send_key=None):
    """(slowest rank [S], mean rank time [S] or None) of one tree from its census (openmpi mode:
    and the channel of every link, :func:`link_channels`)."""
    forest = Forest([np.asarray(parent)])
    forest.link = None if links is None else np.asarray(links)
    forest.send_key = None if send_key is None else np.asarray(send_key)
    done, mean = evaluate(forest, counts, costs, operation, mode, segments)
    return done[0], None if mean is None else mean[0]


def predict_curve(operation: str, algorithm: int, mapping: str, P_values, costs: ChannelCosts, options: dict,
                  placements: Placements, mode: str, with_average: bool = True) -> pd.DataFrame:
    """Predictions of one (operation, algorithm, mapping) for every P in ``P_values`` at costs.sizes.

    ``options`` is config ``model``. Columns: P, size, target (max = completion, avg = mean of the
    per-rank times; paper mode: avg only, as the study), predicted, tree, segments, runs (the
    algorithm OpenMPI ran; differs from ``algorithm`` for the default 0).

    Paper mode segments a message into n_s parts the way the study's code did: each stage costs
    the whole message's fan-out divided by n_s (with n_s from config, tuned per case by the study).
    """
    sizes = costs.sizes
    S, Pv = len(sizes), np.asarray([int(p) for p in P_values])
    unpinned = options["unpinned_channel"]
    if len(Pv) == 0:
        return pd.DataFrame()
    if mode == "paper":
        spec = tree_spec(options["paper"]["algorithms"], operation, algorithm)
        if spec is None:
            return pd.DataFrame()
        n_s = int(spec.get("segments", {}).get(mapping, 1))
        forest, counts = placements.census(spec, Pv, mapping, costs.index, unpinned)
        done, _ = evaluate(forest, counts, costs, operation, "paper", n_s)
        return _curve_frame(Pv, sizes, {"avg": done}, np.full((len(Pv), S), spec["tree"], dtype=object), n_s,
                            np.full((len(Pv), S), int(algorithm)))
    targets, names, chosen = predict_arrays(operation, algorithm, mapping, Pv, costs, options, placements,
                                            with_average)
    return _curve_frame(Pv, sizes, targets, names, 1, chosen)


def predict_arrays(operation: str, algorithm: int, mapping: str, Pv, costs: ChannelCosts, options: dict,
                   placements: Placements, with_average: bool = True):
    """The openmpi-shaped prediction of one (operation, algorithm, mapping) as arrays [P, size]:
    (targets {"max": completion, "avg": mean rank time (with_average)}, shape names, the algorithm
    OpenMPI ran). Shared by the openmpi and calibrated modes; a ``costs.overhead`` (calibrated
    mode: a per-call constant) is added to both targets.
    """
    sizes = costs.sizes
    S, Pv = len(sizes), np.asarray([int(p) for p in Pv])
    unpinned = options["unpinned_channel"]
    specs = options["openmpi"]["trees"]
    if algorithm == 0:
        chosen = default_algorithms(operation, Pv, sizes, options["openmpi"]["default_rules"])
    else:
        chosen = np.full((len(Pv), S), int(algorithm))
    done, mean = np.full((len(Pv), S), np.nan), np.full((len(Pv), S), np.nan)
    names = np.full((len(Pv), S), "", dtype=object)
    shared = options["openmpi"].get("contention", {"links": [], "trees": []})
    for alg in np.unique(chosen):
        spec = tree_spec(specs, operation, int(alg))
        if spec is None:
            continue
        if algorithm == 0 and spec.get("tree") == "chain":  # the fixed rules pass fanout 0: a pipeline
            spec = {**spec, "fanout": 1}
        fallback = runs_fallback(spec, Pv, sizes)
        variants = [(spec, ~fallback)]
        if spec.get("fallback"):
            variants.append(({"tree": spec["fallback"]}, fallback))
        for shape, where in variants:
            ok = (chosen == alg) & where
            rows = np.flatnonzero(ok.any(axis=1))
            if rows.size == 0:
                continue
            links = tuple(shared["links"]) if shape.get("tree") in shared["trees"] else ()
            c, a = price_shape(shape, operation, Pv[rows], mapping, costs, placements, unpinned,
                               with_average, links)
            done[rows] = np.where(ok[rows], c, done[rows])
            names[ok] = shape.get("tree") or shape.get("schedule")
            if with_average:
                mean[rows] = np.where(ok[rows], a, mean[rows])
    targets = {"max": done + costs.overhead}
    if with_average:
        targets["avg"] = mean + costs.overhead
    return targets, names, chosen


def price_shape(shape: dict, operation: str, Pv, mapping: str, costs: ChannelCosts, placements: Placements,
                unpinned: str, with_average: bool = True, contention: tuple = ()):
    """(completion [T, S], mean rank time [T, S]) of one OpenMPI shape at every P of ``Pv``.

    ``{tree: ...}``: fan-outs along a tree (:func:`evaluate`); the in-order binary tree is rooted at
    P - 1, whose result then travels to the root (one more message of the whole vector; rank 0,
    a leaf of that tree, waits for it). ``{schedule: ...}``: rounds of messages
    (:mod:`collat.schedules`), priced from the point-to-point fits.
    """
    if "schedule" in shape:
        build = schedules.BUILDERS[shape["schedule"]]
        out = [schedules.run(build(int(P)), int(P), placements(int(P), mapping), costs.index, costs.p2p_at,
                             costs.sizes, unpinned) for P in Pv]
        return np.vstack([o[0] for o in out]), np.vstack([o[1] for o in out])
    forest, counts = placements.census(shape, Pv, mapping, costs.index, unpinned)
    done, mean = evaluate(forest, counts, costs, operation, "openmpi", with_average=with_average,
                          contention=contention)
    if shape["tree"] == "in_order_binary":
        lookup = np.array([costs.index.get(c, -1) for c in LEVELS])
        k = np.array([lookup[channel_codes(placements(int(P), mapping), [int(P) - 1], [0], unpinned)[0]]
                      for P in Pv])
        relay = costs.p2p_at(k, np.broadcast_to(costs.sizes, (len(Pv), len(costs.sizes))))
        relay[np.asarray(Pv) < 2] = 0.0
        new_done = done + relay
        if mean is not None:  # rank 0 now finishes last instead of as a leaf (taken at the mean)
            mean = mean + (new_done - mean) / np.asarray(Pv, dtype=float)[:, None]
        done = new_done
    return done, mean


def _curve_frame(Pv, sizes, targets: dict, names, segments, runs) -> pd.DataFrame:
    T, S = len(Pv), len(sizes)
    frames = []
    for target, value in targets.items():
        frames.append(pd.DataFrame({
            "P": np.repeat(Pv, S), "size": np.tile(np.asarray(sizes, dtype=np.int64), T), "target": target,
            "predicted": value.ravel(), "tree": names.ravel(), "segments": segments, "runs": runs.ravel(),
        }))
    return pd.concat(frames, ignore_index=True)


PREDICTION_COLUMNS = ["mode", "operation", "algorithm", "algorithm_name", "mapping", "P", "size", "target",
                      "predicted", "tree", "segments", "runs"]


def modelled_algorithms(options: dict, mode: str, operation: str) -> list[int]:
    """Algorithms a mode predicts: its listed shapes, plus (openmpi mode) the default, 0."""
    specs = options["paper"]["algorithms"] if mode == "paper" else options["openmpi"]["trees"]  # calibrated: openmpi's
    listed = {int(s["algorithm"]) for s in specs if s["operation"] == operation}
    return sorted(listed if mode == "paper" else listed | {0})


def predict_all(costs: dict, machine: dict, options: dict, algorithms: dict, sizes, P_values) -> pd.DataFrame:
    """Predictions for every mode x operation x algorithm x mapping x P x size.

    ``costs[(mode, operation)]`` is the :class:`ChannelCosts` of that mode, or a dict target ->
    ChannelCosts for a mode fitted per target (calibrated; predicted with the openmpi mode's shapes);
    ``algorithms`` is config ``algorithms`` (id -> name); ``options`` config ``model``.
    """
    placements = Placements(machine)
    frames = []
    for (mode, operation), c in costs.items():
        names = {int(a["id"]): a["name"] for a in algorithms[operation]}
        per_target = c if isinstance(c, dict) else {None: c}
        for alg in modelled_algorithms(options, mode, operation):
            for mapping in options.get("mappings", ["core", "socket", "node"]):
                parts = []
                for target, ct in per_target.items():
                    part = predict_curve(operation, alg, mapping, P_values, ct, options, placements,
                                         "paper" if mode == "paper" else "openmpi", with_average=target != "max")
                    parts.append(part if target is None or part.empty else part[part["target"] == target])
                curve = pd.concat(parts, ignore_index=True)
                if curve.empty:
                    continue
                curve = curve.assign(mode=mode, operation=operation, algorithm=alg,
                                     algorithm_name=names.get(alg, f"alg{alg}"), mapping=mapping)
                frames.append(curve)
    out = pd.concat(frames, ignore_index=True)
    for col in ("mode", "operation", "algorithm_name", "mapping", "target"):
        out[col] = out[col].astype("string")
    out["runs"] = out["runs"].astype("int64")
    out["tree"] = out["tree"].astype("string")
    return out[PREDICTION_COLUMNS]


def score(predictions: pd.DataFrame, collective: pd.DataFrame, options: dict, paper_cleaning: dict) -> pd.DataFrame:
    """R² (sklearn's r2_score(measured, predicted)), median absolute relative error and n per
    (operation, algorithm, mapping, size, mode, target, cleaning), over the measured rows."""
    from .quality import cleaning_mask
    from .regression import mape, r2

    keys = ["operation", "algorithm", "mapping", "P", "size"]
    limits = {(m["operation"], int(m["algorithm"]), m["mapping"]): int(m["P"]) for m in options["paper"]["max_P"]}
    data = collective.assign(**{f"keep_{c}": cleaning_mask(collective, c, paper_cleaning)
                                for c in options["cleanings"]})
    rows = []
    for (mode, target), pred in predictions.groupby(["mode", "target"], sort=True):
        merged = data.merge(pred[keys + ["predicted"]], on=keys, how="inner")
        merged = merged[merged[target].notna() & merged["predicted"].notna()]
        for cleaning in options["cleanings"]:
            kept = merged[merged[f"keep_{cleaning}"]]
            for (op, alg, mapping, size), g in kept.groupby(["operation", "algorithm", "mapping", "size"]):
                if cleaning == "paper" and (op, int(alg), mapping) in limits:
                    g = g[g["P"] <= limits[(op, int(alg), mapping)]]
                y, p = g[target].to_numpy(float), g["predicted"].to_numpy(float)
                rows.append({"operation": op, "algorithm": int(alg), "algorithm_name": g["algorithm_name"].iloc[0],
                             "mapping": mapping, "size": int(size), "mode": mode, "target": target,
                             "cleaning": cleaning, "r2": r2(y, p), "mape": mape(y, p), "n": len(y)})
    return pd.DataFrame(rows)


def build_costs(pt2pt: pd.DataFrame, hockney: pd.DataFrame, nbft_fits: pd.DataFrame, nbft: pd.DataFrame,
                config: dict, sizes, max_receivers: int) -> dict:
    """The :class:`ChannelCosts` of every (mode, operation) of config ``model.modes``.

    ``paper``: the study's OLS Hockney fit (``model.paper.hockney_weighting``) and NBFT lines of the
    avg column; ``openmpi``: the pt2pt stage's fit and the NBFT of ``model.openmpi.nbft_target``,
    measured values where measured.
    """
    from .hockney import fit_hockney

    options = config["model"]
    out = {}
    for mode in options["modes"]:
        if mode in ("calibrated", "hybrid"):  # fitted by their own rules: collat.calibration.calibrated_costs,
            continue  # collat.correction.hybrid_predictions
        if mode == "paper":
            fits = fit_hockney(pt2pt, config["channels"], config["pt2pt"]["breaks"],
                               weighting=options["paper"]["hockney_weighting"])
            for op in ("bcast", "reduce"):
                out[(mode, op)] = ChannelCosts.from_fits(fits, nbft_fits, op, options["paper"]["nbft_target"],
                                                         config["channels"], sizes)
        else:
            for op in ("bcast", "reduce"):
                c = ChannelCosts.from_fits(hockney, nbft_fits, op, options["openmpi"]["nbft_target"],
                                           config["channels"], sizes, nbft, max_receivers)
                c.eager_limit = float(options["openmpi"]["eager_limit"])
                link_target = options["openmpi"].get("link_target", options["openmpi"]["nbft_target"])
                if link_target != options["openmpi"]["nbft_target"]:
                    c.link_table = ChannelCosts.from_fits(hockney, nbft_fits, op, link_target, config["channels"],
                                                          sizes, nbft, max_receivers).table_by_receivers
                out[(mode, op)] = c
    return out
