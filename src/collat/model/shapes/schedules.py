"""Communication schedules of the OpenMPI 4.1 algorithms that are not one tree of fan-outs.

Split binary tree (bcast 4), scatter + recursive-doubling allgather (bcast 8), scatter + ring
allgather (bcast 9) and Rabenseifner's reduce-scatter + gather (reduce 7) move *parts* of the
message between pairs of ranks in rounds, as ``ompi/mca/coll/base/coll_base_{bcast,reduce}.c``
of OpenMPI 4.1 do (no segmentation: the fixed rules and a forced algorithm pass segment size 0).
A schedule here is a list of rounds; a round is a set of messages ``(src, dst, share)`` (ranks
relative to the root, ``share`` = bytes as a fraction of the message), one-way or pairwise
exchanges, each rank in at most one message of a round.

Pricing (:func:`run`), from the point-to-point stage's Hockney fits only (nothing fitted on
collectives): every rank has a clock; a one-way message of b bytes over channel c leaves when its
sender is free and arrives T_p2p^c(b) later, the sender being busy until then (blocking sends); an
exchange starts when both partners are free and ends for both T_p2p^c(b) later. A rank's time is
its clock at the end; the completion is the largest, the OSU average their mean. Computation of
the reduction is left out (as in the tree model).

Each builder returns the rounds for P ranks; OpenMPI's fall-backs (linear bcast when count < P,
linear reduce when count < 2^floor(log2 P), a pipeline when the split binary tree cannot split)
are the caller's business (:func:`collat.model.shapes.openmpi.runs_fallback`). :func:`run_many` prices one schedule per
communicator size in one pass.
"""

from __future__ import annotations

import functools

import numpy as np

from collat.model import kernels
from collat.model.shapes import trees
from collat.model.placement import LEVELS, channel_codes, laid_end_to_end

Round = tuple[np.ndarray, np.ndarray, np.ndarray, bool]  # src, dst, share of the message, exchange


def _round(pairs: list[tuple[int, int, float]], exchange: bool) -> Round:
    a = np.array(pairs, dtype=float).reshape(-1, 3)
    return a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), a[:, 2], exchange


def _pof2_below(P: int) -> int:
    return 1 << (int(P).bit_length() - 1)


def tree_rounds(parent: np.ndarray, share: np.ndarray | float, order: list[list[int]] | None = None) -> list[Round]:
    """A tree of blocking sends: every parent sends to its children one after another (in
    ``order``, default increasing), a child forwards once it has received. ``share`` is the
    fraction each child receives (scalar, or per child)."""
    parent = np.asarray(parent)
    kids = order if order is not None else trees.children(parent)
    share = np.broadcast_to(np.asarray(share, dtype=float), parent.shape)
    src = np.array([p for p, ks in enumerate(kids) for _ in ks], dtype=np.int64)
    dst = np.array([c for ks in kids for c in ks], dtype=np.int64)
    nth = np.array([i for ks in kids for i in range(len(ks))], dtype=np.int64)
    if not len(src):
        return []
    depth = trees.depth(parent)[src]
    at = np.lexsort((src, nth, depth))  # rounds by the sender's depth, then the child's place; senders in rank order
    src, dst, nth, depth = src[at], dst[at], nth[at], depth[at]
    starts = np.flatnonzero(np.r_[True, (depth[1:] != depth[:-1]) | (nth[1:] != nth[:-1]), True])
    return [(src[a:b], dst[a:b], share[dst[a:b]].astype(float), False) for a, b in zip(starts[:-1], starts[1:])]


def split_binary(P: int) -> list[Round]:
    """Bcast algorithm 4 (``bcast_intra_split_bintree``): the root sends the first half of the
    message down its left subtree (odd relative ranks) and the second half down its right subtree
    (even ranks) along OpenMPI's binary tree, blocking sends child after child; then each rank
    swaps halves with its pair in the other subtree (s and s + 1 for odd s); with P even the last
    rank, which has no pair, gets the second half from the root."""
    parent = trees.binary(P)
    half = np.full(P, 0.5)
    rounds = tree_rounds(parent, half)
    pairs = [(s, s + 1, 0.5) for s in range(1, P - 1, 2)]
    if pairs:
        rounds.append(_round(pairs, True))
    if P % 2 == 0 and P > 1:
        rounds.append(_round([(0, P - 1, 0.5)], False))
    return rounds


@functools.lru_cache(maxsize=None)
def _binomial_scatter_rounds(P: int) -> tuple:
    """:func:`_binomial_scatter`, built once per P for bcast 8 and 9 (the callers copy the list)."""
    return tuple(_binomial_scatter(P))


def _binomial_scatter(P: int) -> list[Round]:
    """The scatter of bcast 8 and 9: rank s receives from s with its lowest set bit cleared (the
    in-order binomial tree) the blocks of its subtree, s .. s + lowbit(s) - 1, m / P bytes per block;
    parents send the largest subtree first."""
    parent = trees.in_order_binomial(P)
    s = np.arange(P)
    blocks = np.where(s == 0, P, np.minimum(s & -s, P - s))
    order = [sorted(k, reverse=True) for k in trees.children(parent)]
    return tree_rounds(parent, blocks / P, order)


def _notional_count(P: int) -> int:
    """A message size at which every block and half of :mod:`collat.model.shapes.messages` is
    exact: the shares of the pricing are the element-exact messages divided by it."""
    return P * (1 << 24)


def rounds_of(tagged: list, P: int) -> list[Round]:
    """Pricing rounds from element-exact messages tagged ``(round, src, dst, bytes, exchange)``
    (:mod:`collat.model.shapes.messages`), at :func:`_notional_count`: an exchange round lists each
    pair once, priced at the larger of its two directions."""
    count = _notional_count(P)
    rounds = []
    for r in sorted({m[0] for m in tagged}):
        msgs = [m for m in tagged if m[0] == r]
        if msgs[0][4]:
            size = {(s, d): b for _, s, d, b, _ in msgs}
            pairs = [(s, d, max(b, size.get((d, s), 0)) / count) for (s, d), b in size.items() if s < d]
            rounds.append(_round(pairs, True))
        else:
            rounds.append(_round([(s, d, b / count) for _, s, d, b, _ in msgs], False))
    return rounds


def scatter_allgather(P: int) -> list[Round]:
    """Bcast algorithm 8 (``bcast_intra_scatter_allgather``): binomial scatter of P blocks, then
    the recursive-doubling allgather as OpenMPI sends it (:func:`collat.model.shapes.messages.
    allgather_rounds`): round k exchanges with s xor 2^k what the two groups hold (the larger
    direction prices the exchange); with P not a power of two, one round of one-way sends per
    level of the recursive halving that completes the groups without a partner group."""
    from collat.model.shapes.messages import allgather_rounds

    return list(_binomial_scatter_rounds(P)) + rounds_of(allgather_rounds(P, _notional_count(P)), P)


def scatter_ring_allgather(P: int) -> list[Round]:
    """Bcast algorithm 9 (``bcast_intra_scatter_allgather_ring``): binomial scatter, then a ring
    allgather: P - 1 rounds in which every rank passes one block of m / P to rank s + 1."""
    rounds = list(_binomial_scatter_rounds(P))
    ring = _round([(s, (s + 1) % P, 1.0 / P) for s in range(P)], False)
    return rounds + [ring] * (P - 1)


def rabenseifner(P: int) -> list[Round]:
    """Reduce algorithm 7 (``reduce_intra_redscat_gather``) as OpenMPI sends it
    (:func:`collat.model.shapes.messages.rabenseifner_rounds`): with P not a power of two, the
    first 2r ranks swap halves in pairs and the odd one returns its reduced half; the 2^floor(log2 P)
    ranks left reduce-scatter by recursive halving at doubling distances (half the vector at
    distance 1), then gather to rank 0 at halving distances (the smallest blocks travel farthest)."""
    from collat.model.shapes.messages import rabenseifner_rounds

    if P < 2:
        return []
    return rounds_of(rabenseifner_rounds(P, _notional_count(P)), P)


def _cached(build):
    """The rounds depend on P only (not on the mapping or the sizes): built and flattened once per P."""
    return functools.lru_cache(maxsize=None)(lambda P: Schedule(build(P)))


BUILDERS = {name: _cached(build) for name, build in {
    "split_binary": split_binary,
    "scatter_allgather": scatter_allgather,
    "scatter_ring_allgather": scatter_ring_allgather,
    "rabenseifner": rabenseifner,
}.items()}


class Schedule(list):
    """A list of rounds that keeps its flattened form (:func:`_compiled`) once computed."""

    flat = None


def _compiled(rounds: list[Round]):
    """All messages of a schedule in flat arrays, with each round's slice and repeat count."""
    if getattr(rounds, "flat", None) is not None:
        return rounds.flat
    blocks, i = [], 0
    while i < len(rounds):
        repeat = 1
        while i + repeat < len(rounds) and rounds[i + repeat] is rounds[i]:
            repeat += 1
        blocks.append((rounds[i], repeat))
        i += repeat
    src = np.concatenate([b[0][0] for b in blocks]) if blocks else np.zeros(0, np.int64)
    dst = np.concatenate([b[0][1] for b in blocks]) if blocks else np.zeros(0, np.int64)
    share = np.concatenate([b[0][2] for b in blocks]) if blocks else np.zeros(0)
    ends = np.cumsum([len(b[0][0]) for b in blocks])
    steps = [(int(e - len(b[0][0])), int(e), b[0][3], b[1]) for b, e in zip(blocks, ends)]
    if isinstance(rounds, Schedule):
        rounds.flat = (src, dst, share, steps)
    return src, dst, share, steps


def run(rounds: list[Round], P: int, ranks, channel_index: dict, p2p_at, sizes, unpinned_channel: str = "core"):
    """(completion [S], mean rank time [S]) of a schedule on a placement.

    ``p2p_at(k, bytes)`` gives T_p2p of channel index k at an array of sizes (:class:`ChannelCosts`).
    Every message is priced at once; the rounds then advance the ranks' clocks in order.
    """
    sizes = np.asarray(sizes, dtype=float)
    src, dst, share, steps = _compiled(rounds)
    lookup = np.array([channel_index.get(c, -1) for c in LEVELS])
    k = lookup[channel_codes(ranks, src, dst, unpinned_channel)]
    if (k < 0).any():
        raise ValueError("the schedule uses a channel with no point-to-point costs")
    pairs, inverse = np.unique(np.stack([k.astype(float), share]), axis=1, return_inverse=True)
    nbytes = np.maximum(np.ceil(pairs[1][:, None] * sizes[None, :]), 1.0)
    t_all = p2p_at(pairs[0].astype(np.int64), nbytes)[inverse.ravel()]
    clock = np.zeros((P, len(sizes)))
    for lo, hi, exchange, repeat in steps:
        a, b, t = src[lo:hi], dst[lo:hi], t_all[lo:hi]
        for _ in range(repeat):
            _advance(clock, a, b, t, exchange)
    return clock.max(axis=0), clock.mean(axis=0)


def _advance(clock: np.ndarray, a: np.ndarray, b: np.ndarray, t: np.ndarray, exchange: bool) -> None:
    """One step of messages a[i] -> b[i] taking t[i] (rows of ``clock``, in place): an exchange
    ends both sides together when the later one is ready; a one-way send ends the sender at
    its own clock plus t and the receiver no sooner than that."""
    if exchange:
        end = np.maximum(clock[a], clock[b]) + t
        clock[a] = end
        clock[b] = end
    else:
        end = clock[a] + t
        clock[a] = end
        clock[b] = np.maximum(clock[b], end)


class Flat:
    """Several schedules, one per communicator size, laid end to end, whatever the placement
    (:func:`flatten`): every message in flat arrays (ranks offset by the sizes before), the
    distinct shares of the message sent (``shares``) and the one of each message (``share_code``,
    an index into them), the steps as four arrays (first message,
    end message, exchange, repeats; one schedule after another, for
    :func:`collat.model.kernels.advance_steps`), and the ring steps (a one-way round s -> s + 1 over all
    ranks, repeated) taken last (:func:`_ring_phase`). Its arrays are read-only: a flat is shared
    (:func:`flat_of`)."""

    def __init__(self, P_values, offsets, src, dst, shares, share_code, steps_of, rings):
        self.P_values, self.offsets = P_values, offsets
        self.src, self.dst = src, dst
        self.shares, self.share_code = shares, share_code
        self.rings = rings
        steps = [step for s in steps_of for step in s]
        self.steps = tuple(np.array([step[q] for step in steps], dtype=dtype).reshape(-1)
                           for q, dtype in ((0, np.int64), (1, np.int64), (2, np.bool_), (3, np.int64)))
        for a in (offsets, src, dst, shares, share_code, *self.steps):
            a.flags.writeable = False


class Layout:
    """What :func:`run_many` needs of several schedules laid on their placements, independent of
    the costs (built once per curve by :func:`layout`): its schedules' :class:`Flat` P values,
    offsets, messages, steps and rings, every message's channel as the distinct (channel, share)
    pairs to price (``pair_k``, ``pair_share``) and each message's pair (``inverse``)."""

    def __init__(self, flat: Flat, pair_k, pair_share, inverse):
        self.P_values, self.offsets, self.src, self.dst = flat.P_values, flat.offsets, flat.src, flat.dst
        self.steps, self.rings = flat.steps, flat.rings
        self.pair_k, self.pair_share, self.inverse = pair_k, pair_share, inverse


def _is_ring(src: np.ndarray, dst: np.ndarray, P: int) -> bool:
    s = np.arange(P)
    return len(src) == P and bool((src == s).all() and (dst == (s + 1) % P).all())


def flatten(schedules: list, P_values) -> Flat:
    """The placement-independent part of :func:`layout` (see :class:`Flat`)."""
    P_values = [int(P) for P in P_values]
    offsets = np.concatenate([[0], np.cumsum(P_values)[:-1]]).astype(np.int64)
    srcs, dsts, shares, steps_of, rings, base = [], [], [], [], [], 0
    for rounds, P, off in zip(schedules, P_values, offsets):
        src, dst, share, steps = _compiled(rounds)
        # a trailing ring (repeated one-way s -> s + 1 over all ranks) runs in the ring phase
        last = steps[-1] if steps else None
        if last is not None and not last[2] and last[3] > 1 and _is_ring(src[last[0]:last[1]], dst[last[0]:last[1]], P):
            rings.append((int(off), int(off) + P, last[0] + base, last[1] + base, last[3]))
            steps = steps[:-1]
        srcs.append(src + off)
        dsts.append(dst + off)
        shares.append(share)
        steps_of.append([(lo + base, hi + base, exchange, repeat) for lo, hi, exchange, repeat in steps])
        base += len(src)
    src = np.concatenate(srcs) if srcs else np.zeros(0, np.int64)
    dst = np.concatenate(dsts) if dsts else np.zeros(0, np.int64)
    share = np.concatenate(shares) if shares else np.zeros(0)
    shares_u, share_code = np.unique(share, return_inverse=True)
    return Flat(P_values, offsets, src, dst, shares_u, share_code.ravel().astype(np.int64), steps_of, sorted(rings))


@functools.lru_cache(maxsize=64)
def flat_of(name: str, P_values: tuple) -> Flat:
    """:func:`flatten` of the schedule ``name`` of :data:`BUILDERS` at every P of ``P_values``, once per
    process (every mapping and mode lays the same schedules)."""
    build = BUILDERS[name]
    return flatten([build(int(P)) for P in P_values], P_values)


def layout(schedules: list | Flat, P_values, laid: dict, channel_index: dict, unpinned_channel: str = "core") -> Layout:
    """The cost-independent part of :func:`run_many` (see :class:`Layout`) of ``schedules`` (one per P
    of ``P_values``, or their :class:`Flat`); ``laid``: the placements of ``P_values`` laid end to
    end (:func:`collat.model.placement.laid_end_to_end`)."""
    flat = schedules if isinstance(schedules, Flat) else flatten(schedules, P_values)
    lookup = np.array([channel_index.get(c, -1) for c in LEVELS])
    # the channel of every message at once, over the placements laid end to end (rows = offsets + rank)
    src, dst = flat.src, flat.dst
    k = lookup[channel_codes(laid, src, dst, unpinned_channel)] if len(src) else np.zeros(0, np.int64)
    if (k < 0).any():
        raise ValueError("the schedule uses a channel with no point-to-point costs")
    K = len(LEVELS)
    code = flat.share_code * K + k  # the (share, channel) pair of every message, then the distinct ones in order
    present = np.bincount(code, minlength=len(flat.shares) * K) > 0
    keys = np.flatnonzero(present)
    inverse = (np.cumsum(present) - 1)[code]
    return Layout(flat, (keys % K).astype(np.int64), flat.shares[keys // K], inverse)


def run_many(schedules: list, P_values, placements: list, channel_index: dict, p2p_at, sizes,
             unpinned_channel: str = "core"):
    """:func:`run` of several schedules at once, one per communicator size of ``P_values`` on its
    placement: (completion [T, S], mean rank time [T, S]) (:func:`layout`, then :func:`price`)."""
    return price(layout(schedules, P_values, laid_end_to_end(placements), channel_index, unpinned_channel), p2p_at,
                 sizes)


def price(plan: Layout, p2p_at, sizes):
    """(completion [T, S], mean rank time [T, S]) of the schedules of ``plan`` at ``sizes``.

    The ranks of every schedule share one clock array; the steps of every schedule are taken in
    order (:func:`collat.model.kernels.advance_steps`), then every trailing ring, each for its own repeat
    count, in closed form (:func:`_ring_phase`). Each schedule's clocks see the operations
    :func:`run` applies, in its order (the rings' sums taken in another order: equal to rounding).
    """
    sizes = np.asarray(sizes, dtype=float)
    nbytes = np.maximum(np.ceil(plan.pair_share[:, None] * sizes[None, :]), 1.0)
    # one time per (channel, share) pair, each message reading its pair's (plan.inverse)
    t_pair = np.ascontiguousarray(p2p_at(plan.pair_k, nbytes) if len(plan.pair_k) else np.zeros((0, len(sizes))),
                                  dtype=float)
    clock = np.zeros((int(sum(plan.P_values)), len(sizes)))
    kernels.advance_steps(plan.src, plan.dst, t_pair, plan.inverse, *plan.steps, clock)
    _ring_phase(clock, plan.rings, t_pair, plan.inverse)
    P = np.asarray(plan.P_values, dtype=float)[:, None]
    return np.maximum.reduceat(clock, plan.offsets, axis=0), np.add.reduceat(clock, plan.offsets, axis=0) / P


def _ring_phase(clock: np.ndarray, rings: list, t_pair: np.ndarray, pair_of: np.ndarray) -> None:
    """The trailing rings of several schedules, in place: ``rings`` lists (first row, end row,
    first message, end message, repeats); ``pair_of`` the priced (channel, share) pair of every
    message, ``t_pair`` each pair's time (messages of one pair take the same time). A ring of
    n <= P - 1 repeats is taken in closed form (:func:`ring_closed_form`; the closed forms of all
    rings in one compiled call, :func:`collat.model.kernels.ring_phase`, when every time and clock is
    finite), a longer one step by step (:func:`ring_steps`)."""
    closed = [ring for ring in rings if ring[4] <= ring[1] - ring[0] - 1]
    if closed and np.isfinite(t_pair).all() and np.isfinite(clock).all():
        kernels.ring_phase(clock, t_pair, np.asarray(pair_of, dtype=np.int64), np.array(closed, dtype=np.int64))
    else:
        for lo, hi, m0, m1, repeats in closed:
            clock[lo:hi] = ring_closed_form(clock[lo:hi], t_pair[pair_of[m0:m1]], pair_of[m0:m1], repeats)
    for lo, hi, m0, m1, repeats in rings:
        if repeats > hi - lo - 1:
            clock[lo:hi] = ring_steps(clock[lo:hi], t_pair[pair_of[m0:m1]], repeats)


def ring_steps(clock: np.ndarray, t: np.ndarray, repeats: int) -> np.ndarray:
    """``repeats`` steps of the one-way ring s -> s + 1 (mod P), rank s's message taking t[s]: every
    rank ends at e_s = clock_s + t_s (:func:`_advance`), and the receiver no sooner than its
    predecessor's e, so clock_s = max(e_s, e_{s-1}). [P, S] -> [P, S]."""
    c = np.array(clock, dtype=float)
    for _ in range(repeats):
        e = c + t
        c = np.maximum(e, np.roll(e, 1, axis=0))
    return c


def ring_closed_form(clock: np.ndarray, t: np.ndarray, kind: np.ndarray, repeats: int) -> np.ndarray:
    """:func:`ring_steps` without stepping, for n = ``repeats`` <= P - 1 (``kind``: messages with
    equal kind take equal times).

    Unrolled, a rank's clock after n steps is the longest path that ends at it: it starts at rank
    u = s - j (j <= n hops back), pays t_r for each hop r -> r + 1 on the way, and waits the n - j
    other steps at one rank r of [u, s], paying t_r each time:
    c_n[s] = max over u <= r <= s, s - u <= n of c[u] + sum_{u <= q < s} t_q + (n - s + u) t_r.
    For the ranks r of one kind (time T), with PS the prefix sums of t over the ring unrolled
    twice, the inner maximum is a range maximum of g[u] = c[u] - PS[u] + u T over
    s - n <= u <= (the last rank of that kind at or before s), plus PS[s] + (n - s) T; the range
    maxima come from a sparse table (O(P log P) per kind instead of O(P^2) steps)."""
    P, S = clock.shape
    n = int(repeats)
    ce, te, ke = np.vstack([clock, clock]), np.vstack([t, t]), np.r_[kind, kind]
    PS = np.vstack([np.zeros((1, S)), np.cumsum(te, axis=0)[:-1]])  # PS[u] = sum of te[:u]
    pos = np.arange(2 * P)
    s = np.arange(P, 2 * P)  # every rank, as its second copy (s - n >= 1)
    lo = s - n
    out = np.full((P, S), -np.inf)
    for kk in np.unique(kind):
        T = t[np.flatnonzero(kind == kk)[0]]
        last = np.maximum.accumulate(np.where(ke == kk, pos, -1))[s]
        ok = last >= lo
        if not ok.any():
            continue
        g = ce - PS + pos[:, None] * T[None, :]
        best = _range_max(g, lo[ok], last[ok])
        value = best + PS[s[ok]] + (n - s[ok])[:, None] * T[None, :]
        out[ok] = np.maximum(out[ok], value)
    return out


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]:hi[i] + 1]) for every i, [len(lo), S], by a sparse table (lo <= hi)."""
    table = [values]
    width = 1
    while 2 * width <= int((hi - lo).max()) + 1:
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    level = np.floor(np.log2(hi - lo + 1)).astype(np.int64)
    out = np.empty((len(lo), values.shape[1]))
    for lv in np.unique(level):
        i = level == lv
        a = table[lv]
        out[i] = np.maximum(a[lo[i]], a[hi[i] - (1 << lv) + 1])
    return out
