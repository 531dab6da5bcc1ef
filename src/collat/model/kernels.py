"""The per-rank passes of :mod:`collat.model.forest` and the message rounds of :mod:`collat.model.shapes.schedules`
as compiled loops (numba): one pass over the nodes of a forest instead of a numpy call per tree
level, one pass over the messages of a schedule instead of one per round.

The tree passes take a forest's arrays (parents in global node ids, nodes in an order where a
parent comes before its children) and [N, S] cost arrays, one column per size (or per size and
parameter set), and write their result in place. They are compiled once per machine and cached next to this
file (numba ``cache=True``); the numpy meaning of each is in its docstring and in
:func:`collat.model.forest.osu_rank_times`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _landing(run, alpha, p2p, fanout):  # pragma: no cover - compiled
    """A message's offset in its parent's fan-out: the gaps sent so far plus alpha, no sooner than one
    point-to-point message, no later than the whole fan-out."""
    land = run + alpha
    if land < p2p:
        land = p2p
    if land > fanout:
        land = fanout
    return land


@njit(cache=True, nogil=True, inline="always")
def _sent(finish, gap, taken, delay, q):  # pragma: no cover - compiled
    """A reduce sender's time: own = finish + gap, plus the share q of its wait until its parent
    takes the message in at ``taken``, no sooner than ``delay`` after the sender is done (a shared
    link's queue; NaN, an unpriced queue, leaves the time unpriced)."""
    own = finish + gap
    d = finish + delay
    if d > taken or np.isnan(d):
        taken = d
    wait = taken - own
    return own + q * wait if (wait > 0.0 or np.isnan(wait)) else own


@njit(cache=True, nogil=True)
def message_offsets(kids, link, up, first, gap, alpha, p2p, nbytes, group, w, offset,
                    gap_of):  # pragma: no cover - compiled
    """For the non-root nodes ``kids`` in send order (``first[i]``: True where a parent's first child
    starts), over their parent's fan-out w[up]: offset[kid] = clip(sum of the gaps of this parent's
    children up to kid + alpha[link], p2p[link], w[up]), gap_of[kid] = gap[link] (not written when
    gap_of has no rows). Of each gap, the part ``nbytes`` moves bytes through the resource
    ``group[link]`` (0-3), which the parent's children of that resource share: it counts once,
    whole, for each of them (they all pull at once and their messages are in together)."""
    _sends(kids, link, up, first, 0, kids.shape[0], 0, gap, alpha, p2p, nbytes, group, w, offset, gap_of, w[:0],
           np.empty((0, 0)), w[:0], w[:0], w[:0])


@njit(cache=True, nogil=True)
def _shared_bytes(link, first, i, hi, nbytes, group, moved):  # pragma: no cover - compiled
    """moved[G] = the bytes' parts of the gaps of the kids i, i + 1, ... of one parent (up to the next
    ``first`` or ``hi``) whose channel is in group G: what each resource moves for that fan-out."""
    moved[:, :] = 0.0
    j = i
    while j < hi and (j == i or not first[j]):
        k = link[j]
        for s in range(moved.shape[1]):
            moved[group[k], s] += nbytes[k, s]
        j += 1


@njit(cache=True, nogil=True)
def _sends(kids, link, up, first, lo, hi, base, gap, alpha, p2p, nbytes, group, w, offset, gap_of, finish, q,
           out, before, delay):  # pragma: no cover - compiled
    """:func:`message_offsets` of the kids lo:hi (``out`` without rows), or, when ``out`` has rows, a
    reduce's sends in the same pass: each kid's offset and gap taken where they are made, out[kid]
    as :func:`reduce_sends` gives it, with ``before`` (:func:`fanin_before`; ``offset`` and ``gap_of``
    not written) and ``delay`` (no rows: none). The node arrays (w, offset, gap_of, finish, out,
    before, delay) hold the nodes from ``base`` on: node n at row n - base."""
    S = w.shape[1]
    with_gap = gap_of.shape[0] > 0
    sending = out.shape[0] > 0
    delayed = delay.shape[0] > 0
    run = np.zeros(S)
    start = np.zeros(S)  # a reduce parent's fan-in start as far as its kids so far allow
    moved = np.zeros((4, S))  # each resource's bytes of the fan-out whose kids are being placed
    has_bytes = nbytes.shape[1] > 0 and nbytes.max() > 0.0
    for i in range(lo, hi):
        n, k, p = kids[i] - base, link[i], up[i] - base
        if first[i]:
            run[:] = 0.0
            start[:] = 0.0
            if has_bytes:
                _shared_bytes(link, first, i, hi, nbytes, group, moved)
        grp = group[k]
        for s in range(S):
            g = gap[k, s]
            if has_bytes:
                run[s] += g - nbytes[k, s]
                land = _landing(run[s] + moved[grp, s], alpha[k, s], p2p[k, s], w[p, s])
            else:
                run[s] += g
                land = _landing(run[s], alpha[k, s], p2p[k, s], w[p, s])
            if sending:
                v = finish[n, s] - before[n, s]
                if v > start[s]:
                    start[s] = v
                out[n, s] = _sent(finish[n, s], g, start[s] + land, delay[n, s] if delayed else 0.0, q[k, s])
            else:
                offset[n, s] = land
                if with_gap:
                    gap_of[n, s] = g


@njit(cache=True, nogil=True)
def arrivals(order, parent, offset, arrival):  # pragma: no cover - compiled
    """arrival[n] = arrival[parent[n]] + offset[n] for the non-root nodes in ``order`` (parents first);
    roots keep their value."""
    S = offset.shape[1]
    for i in range(order.shape[0]):
        n = order[i]
        p = parent[n]
        if p < 0:
            continue
        for s in range(S):
            arrival[n, s] = arrival[p, s] + offset[n, s]


@njit(cache=True, nogil=True)
def fanin_done(order, parent, w, finish, before, delay):  # pragma: no cover - compiled
    """finish[n] = max(s[n] + w[n], max_k (finish[k] + delay[k])), children before parents (``order``
    read backwards): a parent takes its children in its receive order, child k no sooner than it
    is in, so its fan-in starts at s = max(0, max_k (finish[k] - before[k])), ``before[k]`` the part
    of the fan-in spent on the children before k (:func:`fanin_before`; 0 for every child: the
    slowest child's finish); and it ends no sooner than each child's message is in, ``delay[k]``
    after the child is done (a shared link's queue; no rows: none)."""
    _fanin_done(order, parent, 0, order.shape[0], 0, w, finish, np.zeros(w.shape), before, delay,
                np.zeros(w.shape) if delay.shape[0] > 0 else delay)


@njit(cache=True, nogil=True)
def _fanin_done(order, parent, lo, hi, base, w, finish, sub, before, delay, least):  # pragma: no cover - compiled
    """:func:`fanin_done` of the nodes order[lo:hi] (one or more whole trees) with its scratch ``sub``
    (and ``least``, where ``delay`` has rows) given, zero; the node arrays (w, finish, sub, before,
    delay, least) hold the nodes from ``base`` on: node n at row n - base."""
    S = w.shape[1]
    delayed = delay.shape[0] > 0
    for i in range(hi - 1, lo - 1, -1):
        n = order[i]
        p = parent[n]
        n -= base
        for s in range(S):
            f = sub[n, s] + w[n, s]
            if delayed and (least[n, s] > f or np.isnan(least[n, s])):  # NaN: unpriced
                f = least[n, s]
            finish[n, s] = f
            if p >= 0:
                if delayed:
                    d = f + delay[n, s]
                    if d > least[p - base, s] or np.isnan(d):
                        least[p - base, s] = d
                f -= before[n, s]
                if f > sub[p - base, s]:
                    sub[p - base, s] = f


@njit(cache=True, nogil=True)
def fanin_before(kids, link, up, first, lo, hi, base, gap, w, before):  # pragma: no cover - compiled
    """For the kids lo:hi in their parent's receive order (``first[i]``: a parent's first child):
    before[kid] = the gaps of that parent's children before it, at most the parent's fan-in w[up]
    less the kid's own gap (never below 0). The node arrays (w, before) hold the nodes from ``base``
    on: node n at row n - base."""
    S = w.shape[1]
    run = np.zeros(S)
    for i in range(lo, hi):
        n, k, p = kids[i] - base, link[i], up[i] - base
        if first[i]:
            run[:] = 0.0
        for s in range(S):
            g = gap[k, s]
            b = run[s]
            cap = w[p, s] - g
            if b > cap:
                b = cap
            before[n, s] = b if b > 0.0 else 0.0
            run[s] += g


@njit(cache=True, nogil=True)
def reduce_sends(kids, link, first, finish, w, offset, gap_of, before, q, out, delay):  # pragma: no cover - compiled
    """A non-root reduce rank's time: its fan-in, its send's gap and a share q [K, S] (of its link's
    channel ``link[i]``) of its wait until its parent takes the message in: out[n] = own + q
    max(taken - own, 0), own = finish[n] + gap_of[n],
    taken = the parent's fan-in start as far as its kids up to n allow, max(0, max over them of
    finish - before) (:func:`fanin_done`), plus offset[n], and no sooner than finish[n] + delay[n]
    (its message through a shared link's queue; ``delay`` without rows: none). ``kids`` in their
    parent's receive order, ``first[i]``: a parent's first."""
    S = w.shape[1]
    delayed = delay.shape[0] > 0
    start = np.zeros(S)
    for i in range(kids.shape[0]):
        n, k = kids[i], link[i]
        if first[i]:
            start[:] = 0.0
        for s in range(S):
            v = finish[n, s] - before[n, s]
            if v > start[s]:
                start[s] = v
            out[n, s] = _sent(finish[n, s], gap_of[n, s], start[s] + offset[n, s], delay[n, s] if delayed else 0.0,
                              q[k, s])


@njit(cache=True, nogil=True)
def advance_steps(src, dst, t, pair_of, lo, hi, exchange, repeat, clock):  # pragma: no cover - compiled
    """Steps of message rounds on rank clocks [R, S], in place (:func:`collat.model.shapes.schedules._advance`
    repeated): step i sends messages lo[i]:hi[i] (src -> dst, message j taking t[pair_of[j]]: the
    time of its (channel, share) pair), ``repeat[i]`` times. In one
    round every end is taken from the clocks before it; an exchange ends both sides together when
    the later one is ready; a one-way send ends the sender at its clock plus t and the receiver no
    sooner than that (after every sender of the round is set, as numpy's fancy assignment does).
    A round whose ranks are all distinct (each rank in one message: a tree's round, a pairwise
    exchange) reads no clock another message of the round writes, so its messages are taken in one
    pass; another (a ring) in three: the ends, then the senders, then the receivers."""
    S = clock.shape[1]
    width = 0
    for i in range(lo.shape[0]):
        width = max(width, hi[i] - lo[i])
    end = np.empty((width, S))
    mark = np.full(clock.shape[0], -1, dtype=np.int64)  # the last step that met each rank
    for i in range(lo.shape[0]):
        distinct = True
        for j in range(lo[i], hi[i]):
            a, b = src[j], dst[j]
            if mark[a] == i or mark[b] == i or a == b:
                distinct = False
                break
            mark[a] = i
            mark[b] = i
        for _ in range(repeat[i]):
            for j in range(lo[i], hi[i]):
                a, b, q = src[j], dst[j], pair_of[j]
                for s in range(S):
                    e = clock[a, s] + t[q, s]
                    if exchange[i] and clock[b, s] + t[q, s] > e:
                        e = clock[b, s] + t[q, s]
                    if distinct:  # no other message of the round reads these clocks: set them now
                        clock[a, s] = e
                        if exchange[i] or e > clock[b, s]:
                            clock[b, s] = e
                    else:
                        end[j - lo[i], s] = e
            if distinct:
                continue
            for j in range(lo[i], hi[i]):
                a = src[j]
                for s in range(S):
                    clock[a, s] = end[j - lo[i], s]
            for j in range(lo[i], hi[i]):
                b = dst[j]
                for s in range(S):
                    e = end[j - lo[i], s]
                    if exchange[i] or e > clock[b, s]:
                        clock[b, s] = e


@njit(cache=True, nogil=True)
def sequential_fanout(counts, gap, table, alpha, beta, p2p, nbytes, group, out):  # pragma: no cover - compiled
    """out[i] = max(sum_k (gap[k] - nbytes[k]) n_k + max_G sum_{k in G} nbytes[k] n_k
    + max_k (T_k(n_k) - gap[k] n_k), max_k p2p[k]) over the channels k with n_k = counts[i, k] > 0
    receivers (0 for a row without any), G the groups of channels (``group[k]``, 0 .. 3) whose bytes
    move through a resource of their own, all at once, T_k(n) = table[k, n] when ``table`` has rows
    (shape [K, R, S]; [K, 0, S]: none), else alpha[k] + beta[k] n. With ``nbytes`` 0:
    sum_k gap[k] n_k + max_k (...)."""
    n, K = counts.shape
    S = gap.shape[1]
    measured = table.shape[1] > 0
    has_bytes = nbytes.shape[1] > 0 and nbytes.max() > 0.0
    moved = np.zeros(4)
    for i in range(n):
        for s in range(S):
            total, tail, floor, present = 0.0, -np.inf, 0.0, False
            moved[:] = 0.0
            for k in range(K):
                c = counts[i, k]
                if c <= 0:
                    continue
                present = True
                g = gap[k, s]
                if has_bytes:
                    total += c * (g - nbytes[k, s])
                    moved[group[k]] += c * nbytes[k, s]
                else:
                    total += c * g
                part = table[k, c, s] if measured else alpha[k, s] + beta[k, s] * c
                if part - g * c > tail:
                    tail = part - g * c
                if p2p[k, s] > floor:
                    floor = p2p[k, s]
            if has_bytes:
                total += moved.max()
            out[i, s] = max(total + tail, floor) if present else 0.0


@njit(cache=True, nogil=True)
def group_max(group, inverse, w, out):  # pragma: no cover - compiled
    """out[g] = the largest w[inverse[n]] over the nodes n of group g (group[n] = g; np.maximum: NaN
    wins), in place; a group without nodes keeps its row of ``out``."""
    S = w.shape[1]
    seen = np.zeros(out.shape[0], dtype=np.bool_)
    for n in range(group.shape[0]):
        g, r = group[n], inverse[n]
        if not seen[g]:
            seen[g] = True
            for s in range(S):
                out[g, s] = w[r, s]
        else:
            for s in range(S):
                v = w[r, s]
                if v > out[g, s] or np.isnan(v):
                    out[g, s] = v


BLOCK = 32  # columns per pass of forest_times (a calibration's Jacobian prices hundreds)
SCRATCH = 8  # [N, BLOCK] arrays of one block, at most: census fan-outs and five of one tree's


def scratch_size(nodes: int, columns: int) -> int:
    """The length of the ``work`` buffer :func:`forest_times` needs for ``nodes`` ranks and ``columns``
    columns (and :func:`forests_times` for its largest forest)."""
    return SCRATCH * nodes * min(BLOCK, columns)


@njit(cache=True, nogil=True)
def forest_times(bcast, rows, inverse, gap, table, alpha, beta, p2p, nbytes, group,
                 link_k, link_start, link_senders, link_group, link_load, link_table,
                 mem_senders, mem_concurrent, mem_contention, sizes,
                 forward, forwarders, above, kids, klink, up, first, order, parent, q,
                 tree_start, tree_size, done, mean, work):  # pragma: no cover - compiled
    """Every rank's time along a forest, reduced per tree: done[t] = the slowest rank of tree t, mean[t]
    = the mean over its ranks (mean with no rows: not asked for). The steps of
    :func:`collat.model.openmpi_mode.evaluate`, in its order and with its arithmetic, in as few passes
    over the ranks as they allow, one tree at a time:

    1. w[n] = :func:`sequential_fanout` of census row ``rows[inverse[n]]`` (once per row for the forest;
       with ``nbytes`` > 0, the bytes' parts of the gaps, also each resource's bytes per row, which
       every kid of a parent on that resource counts whole: :func:`message_offsets`);
    2. per shared link l (channel ``link_k[l]``, nodes ``link_senders[link_start[l]:link_start[l + 1]]``):
       bcast, the parents' w = max(w, link_table[k, link_load[link_group]]); reduce, the children's
       delay (:func:`fanin_done`, :func:`reduce_sends`) the same maximum
       (:func:`~collat.model.openmpi_mode.shared_link`);
    3. w[mem_senders] += mem_contention x mem_concurrent x sizes (``mem_contention`` [S]: per byte per
       concurrent message; :func:`~collat.model.openmpi_mode.shared_memory`);
    4. the per-rank times of :func:`collat.model.forest.osu_rank_times` (``forward`` [S]: an inner
       rank's delay, ``forwarders`` True for those ranks, ``above`` the forwarders above each): a
       bcast's offsets (:func:`message_offsets`) and arrivals (:func:`arrivals`; in the same pass
       where every parent's id is below its children's, as in most trees, since the kids come
       grouped by increasing parent), a reduce's fan-in (:func:`fanin_done`) then its sends
       (:func:`reduce_sends`) in one pass; and the tree's maximum and mean read where the ranks'
       times are made.

    Tree t holds nodes tree_start[t]:tree_start[t] + tree_size[t], which ``order`` must list in that
    range (as :attr:`collat.model.forest.Forest.order` does); the kids are sorted by their parent
    ``up`` (:attr:`~collat.model.forest.Forest.send_plan`), each link's senders and the memory
    senders by node: each tree's part of them is a contiguous range. A tree's arrays [tree, BLOCK]
    stay in the core's cache; over the 33 000 ranks of a forest P = 2..256, [N, BLOCK] arrays
    passed over one step at a time ran from memory.

    BLOCK columns at a time (``*_b``: a block's slice of the last axis): every column is priced on
    its own, and a calibration's Jacobian has hundreds of them. A block's scratch arrays are cut
    from ``work`` (at least :func:`scratch_size` long; its values do not matter), which the caller
    keeps from call to call: memory the process already touched, where fresh arrays per call cost
    page faults."""
    N = inverse.shape[0]
    T = tree_start.shape[0]
    L = link_k.shape[0]
    with_mean = mean.shape[0] > 0
    has_forward = forwarders.shape[0] == N
    largest = 0
    for t in range(T):
        largest = max(largest, tree_size[t])
    kid_lo = np.searchsorted(up, tree_start)  # tree t's kids: kid_lo[t]:kid_hi[t]
    kid_hi = np.searchsorted(up, tree_start + tree_size)
    for a in range(0, gap.shape[1], BLOCK):
        b = min(a + BLOCK, gap.shape[1])
        S = b - a
        gap_b, alpha_b, beta_b, p2p_b, nbytes_b = gap[:, a:b], alpha[:, a:b], beta[:, a:b], p2p[:, a:b], nbytes[:, a:b]
        table_b, link_table_b = table[:, :, a:b], link_table[:, :, a:b]
        mem_contention_b, sizes_b = mem_contention[a:b], sizes[a:b]
        forward_b, q_b, done_b = forward[a:b], q[:, a:b], done[:, a:b]
        mean_b = mean[:, a:b] if with_mean else mean
        R, LS = rows.shape[0] * S, largest * S
        fan = work[:R].reshape((rows.shape[0], S))
        # one tree's: w, offsets (arrivals), times, fan-in finish, its scratch, a reduce's link delays
        # and the fan-in ends they allow
        one = work[R:R + 7 * LS]
        w = one[:LS].reshape((largest, S))
        offset = one[LS:2 * LS].reshape((largest, S))
        out = one[2 * LS:3 * LS].reshape((largest, S))
        finish = one[3 * LS:4 * LS].reshape((largest, S))
        sub = one[4 * LS:5 * LS].reshape((largest, S))
        delay = one[5 * LS:6 * LS].reshape((largest, S)) if (L > 0 and not bcast) else one[:0].reshape((0, S))
        least = one[6 * LS:7 * LS].reshape((largest, S)) if (L > 0 and not bcast) else one[:0].reshape((0, S))
        sequential_fanout(rows, gap_b, table_b, alpha_b, beta_b, p2p_b, nbytes_b, group, fan)
        at_link = link_start[:L].copy()  # each link's next sender
        at_mem = 0  # the next memory sender
        total = np.empty(S)
        row = np.empty(S)
        run = np.zeros(S)
        has_bytes = nbytes_b.max() > 0.0 if S > 0 else False
        if has_bytes:  # per census row: the bytes each resource moves for that fan-out, and the gaps' rest
            row_moved = np.zeros((rows.shape[0], 4, S))
            for r in range(rows.shape[0]):
                for k in range(rows.shape[1]):
                    if rows[r, k] > 0:
                        for s in range(S):
                            row_moved[r, group[k], s] += rows[r, k] * nbytes_b[k, s]
            cpu_b = gap_b - nbytes_b
        else:
            row_moved = np.zeros((0, 4, S))
            cpu_b = gap_b
        for t in range(T):
            top, size = tree_start[t], tree_size[t]
            end = top + size
            for n in range(size):
                r = inverse[top + n]
                for s in range(S):
                    w[n, s] = fan[r, s]
            if delay.shape[0] > 0:
                for n in range(size):
                    for s in range(S):
                        delay[n, s] = 0.0
                        least[n, s] = 0.0
            for l in range(L):  # bcast: a parent's fan-out floored; reduce: a child's message delayed
                k = link_k[l]
                i = at_link[l]
                floored = w if bcast else delay
                while i < link_start[l + 1] and link_senders[i] < end:
                    n = link_senders[i] - top
                    c = link_load[link_group[i]]
                    for s in range(S):
                        v = link_table_b[k, c, s]
                        if v > floored[n, s] or np.isnan(v):  # np.maximum: NaN wins
                            floored[n, s] = v
                    i += 1
                at_link[l] = i
            while at_mem < mem_senders.shape[0] and mem_senders[at_mem] < end:
                n = mem_senders[at_mem] - top
                for s in range(S):
                    w[n, s] += mem_contention_b[s] * mem_concurrent[at_mem] * sizes_b[s]
                at_mem += 1
            if has_forward and not bcast:  # a forwarder's send up starts that much after its fan-in
                for n in range(size):
                    if forwarders[top + n]:
                        for s in range(S):
                            w[n, s] += forward_b[s]
            if bcast:  # the non-root ranks' offsets (a root's is never read), then arrivals in their
                # place, parents first (a root's: 0), as arrivals() sums them
                ascending = True
                for n in range(top, end):
                    if parent[n] >= n:
                        ascending = False
                        break
                if ascending:  # a kid's parent has its arrival when the kid's group comes
                    for n in range(size):
                        if parent[top + n] < 0:
                            for s in range(S):
                                offset[n, s] = 0.0
                    if has_bytes:  # a kid lands after the gaps' rest so far and all of its resource's bytes
                        fanout_row = 0
                        for i in range(kid_lo[t], kid_hi[t]):
                            n, k, p = kids[i] - top, klink[i], up[i] - top
                            if first[i]:
                                run[:] = 0.0
                                fanout_row = inverse[up[i]]
                            grp = group[k]
                            for s in range(S):
                                run[s] += cpu_b[k, s]
                                offset[n, s] = offset[p, s] + _landing(run[s] + row_moved[fanout_row, grp, s],
                                                                       alpha_b[k, s], p2p_b[k, s], w[p, s])
                    else:
                        for i in range(kid_lo[t], kid_hi[t]):
                            n, k, p = kids[i] - top, klink[i], up[i] - top
                            if first[i]:
                                run[:] = 0.0
                            for s in range(S):
                                run[s] += gap_b[k, s]
                                offset[n, s] = offset[p, s] + _landing(run[s], alpha_b[k, s], p2p_b[k, s], w[p, s])
                else:
                    _sends(kids, klink, up, first, kid_lo[t], kid_hi[t], top, gap_b, alpha_b, p2p_b, nbytes_b, group,
                           w, offset, gap_b[:0], w[:0], q_b, w[:0], w[:0], w[:0])
                    for i in range(top, end):
                        n = order[i]
                        p = parent[n]
                        n -= top
                        if p < 0:
                            for s in range(S):
                                offset[n, s] = 0.0
                        else:
                            for s in range(S):
                                offset[n, s] = offset[p - top, s] + offset[n, s]
            else:  # a non-root's time (reduce_sends) in out, a root's is its fan-in's finish
                for n in range(size):  # the fan-in's running maximum starts at 0
                    for s in range(S):
                        sub[n, s] = 0.0
                # offset holds what each parent's fan-in spends before a kid (a reduce reads no
                # offset; a root's row is neither written nor read)
                fanin_before(kids, klink, up, first, kid_lo[t], kid_hi[t], top, gap_b, w, offset)
                _fanin_done(order, parent, top, end, top, w, finish, sub, offset, delay, least)
                _sends(kids, klink, up, first, kid_lo[t], kid_hi[t], top, gap_b, alpha_b, p2p_b, nbytes_b, group, w,
                       offset, gap_b[:0], finish, q_b, out, offset, delay)
            for n in range(size):  # row by row: numpy's reduceat, in its order
                if bcast:  # arrival + own fan-out (+ the forwarders' delays), summed in that order
                    for s in range(S):
                        row[s] = offset[n, s] + w[n, s]
                    if has_forward:
                        for s in range(S):
                            row[s] += above[top + n] * forward_b[s]
                        if forwarders[top + n]:
                            for s in range(S):
                                row[s] += forward_b[s]
                    value = row
                elif parent[top + n] >= 0:
                    value = out[n]
                else:
                    value = finish[n]
                if n == 0:
                    for s in range(S):
                        done_b[t, s] = value[s]
                        total[s] = value[s]
                else:
                    for s in range(S):
                        v = value[s]
                        if v > done_b[t, s] or np.isnan(v):  # np.maximum: NaN wins
                            done_b[t, s] = v
                        total[s] += v
            if mean_b.shape[0] > 0:
                for s in range(S):
                    mean_b[t, s] = total[s] / size


@njit(cache=True, nogil=True)
def forests_times(bounds, bcast, rows, inverse, gap, table, alpha, beta, p2p, nbytes, group,
                  link_k, link_start, link_senders, link_group, link_load, link_table,
                  mem_senders, mem_concurrent, mem_contention, sizes,
                  forward, forwarders, above, kids, klink, up, first, order, parent, q,
                  tree_start, tree_size, done, mean, work):  # pragma: no cover - compiled
    """:func:`forest_times` of several forests in one call: every array argument that describes a
    forest is the forests' arrays laid end to end, each in its own indices, and forest f's part of
    the i-th of them (in the order rows, inverse, link_k, link_start, link_senders, link_group,
    link_load, mem_senders, mem_concurrent, forwarders, above, kids, klink, up, first, order,
    parent, tree_start, tree_size) is ``bounds[f, i]:bounds[f + 1, i]``; done and mean (when asked
    for) follow tree_size. One forest at a time keeps its [N, 32] scratch arrays in the cache; ``work``
    holds those of the largest forest (:func:`scratch_size`)."""
    with_mean = mean.shape[0] > 0
    for f in range(bounds.shape[0] - 1):
        lo, hi = bounds[f], bounds[f + 1]
        t0, t1 = lo[17], hi[17]
        mean_f = mean[t0:t1] if with_mean else mean
        forest_times(bcast, rows[lo[0]:hi[0]], inverse[lo[1]:hi[1]], gap, table, alpha, beta, p2p, nbytes, group,
                     link_k[lo[2]:hi[2]], link_start[lo[3]:hi[3]], link_senders[lo[4]:hi[4]],
                     link_group[lo[5]:hi[5]], link_load[lo[6]:hi[6]], link_table,
                     mem_senders[lo[7]:hi[7]], mem_concurrent[lo[8]:hi[8]], mem_contention, sizes,
                     forward, forwarders[lo[9]:hi[9]], above[lo[10]:hi[10]], kids[lo[11]:hi[11]],
                     klink[lo[12]:hi[12]], up[lo[13]:hi[13]], first[lo[14]:hi[14]], order[lo[15]:hi[15]],
                     parent[lo[16]:hi[16]], q, tree_start[t0:t1], tree_size[t0:t1], done[t0:t1], mean_f, work)


@njit(cache=True, nogil=True)
def ring_phase(clock, t, kind, rings):  # pragma: no cover - compiled
    """:func:`collat.model.shapes.schedules.ring_closed_form` of every ring of ``rings`` ([R, 5]: first row, end row,
    first message, end message, repeats n; n <= rows - 1) on ``clock`` [rows, S], in place, with its
    arithmetic: per kind of message (``kind``, one per message, message j taking t[kind[j]]; time T),
    g[u] = c[u] - PS[u] + u T over the ring unrolled twice, its maximum over the ranks
    s - n <= u <= (the last rank of that kind at or before s) by a sliding window (both ends move
    forward with s) instead of a sparse table, plus PS[s] + (n - s) T; the largest over kinds. A ring
    of n = P - 1 repeats (an allgather's) takes :func:`_ring_whole` instead."""
    S = clock.shape[1]
    for r in range(rings.shape[0]):
        lo, hi, m0, n = rings[r, 0], rings[r, 1], rings[r, 2], rings[r, 4]
        P = hi - lo
        if n == P - 1:
            _ring_whole(clock, t, kind, lo, P, m0)
            continue
        # one column at a time below: the ring's prefix sums, clocks and results kept column by column
        PS = np.zeros((S, 2 * P))
        for u in range(1, 2 * P):
            q = m0 + (u - 1 if u - 1 < P else u - 1 - P)
            for c in range(S):
                PS[c, u] = PS[c, u - 1] + t[kind[q], c]
        own = np.empty((S, P))
        for i in range(P):
            for c in range(S):
                own[c, i] = clock[lo + i, c]
        out = np.full((S, P), -np.inf)
        last = np.empty(2 * P, dtype=np.int64)
        window = np.empty(2 * P, dtype=np.int64)
        g = np.empty(2 * P)
        done_kind = np.zeros(P, dtype=np.bool_)  # the message kinds already taken (by their first message)
        for first in range(P):
            if done_kind[first]:
                continue
            kv = kind[m0 + first]
            for j in range(first, P):
                if kind[m0 + j] == kv:
                    done_kind[j] = True
            at = -1
            for pos in range(2 * P):
                if kind[m0 + (pos if pos < P else pos - P)] == kv:
                    at = pos
                last[pos] = at
            for c in range(S):
                T = t[kv, c]
                oc, pc = own[c], PS[c]
                for u in range(2 * P):
                    g[u] = oc[u if u < P else u - P] - pc[u] + u * T
                head, tail, nxt = 0, 0, 0
                for s in range(P, 2 * P):
                    a, b = s - n, last[s]
                    if b < a:
                        continue
                    while nxt <= b:
                        while tail > head and g[window[tail - 1]] <= g[nxt]:
                            tail -= 1
                        window[tail] = nxt
                        tail += 1
                        nxt += 1
                    while window[head] < a:
                        head += 1
                    value = g[window[head]] + pc[s] + (n - s) * T
                    if value > out[c, s - P]:
                        out[c, s - P] = value
        for i in range(P):
            for c in range(S):
                clock[lo + i, c] = out[c, i]


@njit(cache=True, nogil=True)
def _ring_whole(clock, t, kind, lo, P, m0):  # pragma: no cover - compiled
    """:func:`ring_phase` of one ring of n = P - 1 repeats (rows lo:lo + P, messages m0:m0 + P), in
    place, with the same arithmetic and a window maximum read from running maxima instead of a
    sliding window: for s in P .. 2P - 1 the window is [s - n, b], b = the last rank of the kind at
    or before s, so it is the ranks s - n .. P - 1 of the first copy (a suffix maximum) and P .. b of
    the second (a prefix maximum), or, with no rank of the kind in the second copy up to s, the
    ranks s - n .. L of the first, L its last rank of the kind there (a suffix maximum from L).
    Maxima are exact: the same numbers; every loop runs over the columns innermost."""
    S = clock.shape[1]
    n = P - 1
    PS = np.zeros((2 * P, S))  # PS[u] = the time of messages 0 .. u - 1 of the ring unrolled twice
    for u in range(1, 2 * P):
        q = kind[m0 + (u - 1 if u - 1 < P else u - 1 - P)]
        for c in range(S):
            PS[u, c] = PS[u - 1, c] + t[q, c]
    out = np.full((P, S), -np.inf)
    g = np.empty((2 * P, S))
    tail = np.empty((P + 1, S))  # tail[a] = max g[a .. P - 1]; tail[P] = -inf
    head = np.empty((P, S))  # head[j] = max g[P .. P + j]
    upto = np.empty((P, S))  # upto[a] = max g[a .. L]
    done_kind = np.zeros(P, dtype=np.bool_)
    for first in range(P):
        if done_kind[first]:
            continue
        kv = kind[m0 + first]
        L = first
        for j in range(first, P):
            if kind[m0 + j] == kv:
                done_kind[j] = True
                L = j
        for u in range(2 * P):
            row = lo + (u if u < P else u - P)
            for c in range(S):
                g[u, c] = clock[row, c] - PS[u, c] + u * t[kv, c]
        for c in range(S):
            tail[P, c] = -np.inf
        for u in range(P - 1, -1, -1):
            for c in range(S):
                tail[u, c] = g[u, c] if g[u, c] > tail[u + 1, c] else tail[u + 1, c]
        for c in range(S):
            head[0, c] = g[P, c]
        for j in range(1, P):
            for c in range(S):
                head[j, c] = g[P + j, c] if g[P + j, c] > head[j - 1, c] else head[j - 1, c]
        for c in range(S):
            upto[L, c] = g[L, c]
        for u in range(L - 1, -1, -1):
            for c in range(S):
                upto[u, c] = g[u, c] if g[u, c] > upto[u + 1, c] else upto[u + 1, c]
        b = L
        for s in range(P, 2 * P):
            if kind[m0 + s - P] == kv:
                b = s
            a = s - n
            if b < a:
                continue
            for c in range(S):
                if b >= P:
                    best = tail[a, c] if tail[a, c] > head[b - P, c] else head[b - P, c]
                else:
                    best = upto[a, c]
                value = best + PS[s, c] + (n - s) * t[kv, c]
                if value > out[s - P, c]:
                    out[s - P, c] = value
    for i in range(P):
        for c in range(S):
            clock[lo + i, c] = out[i, c]
