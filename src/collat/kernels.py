"""The per-rank passes of :mod:`collat.model.forest` and the message rounds of :mod:`collat.schedules`
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


@njit(cache=True, nogil=True)
def message_offsets(kids, link, up, first, gap, alpha, p2p, w, offset, gap_of):  # pragma: no cover - compiled
    """For the non-root nodes ``kids`` in send order (``first[i]``: True where a parent's first child
    starts), over their parent's fan-out w[up]: offset[kid] = clip(sum of the gaps of this parent's
    children up to kid + alpha[link], p2p[link], w[up]), gap_of[kid] = gap[link] (not written when
    gap_of has no rows)."""
    _sends(kids, link, up, first, gap, alpha, p2p, w, offset, gap_of, w[:0], np.empty(0), w[:0])


@njit(cache=True, nogil=True)
def _sends(kids, link, up, first, gap, alpha, p2p, w, offset, gap_of, finish, q, out):  # pragma: no cover - compiled
    """:func:`message_offsets` (``out`` without rows), or, when ``out`` has rows, a reduce's sends in
    the same pass: each kid's offset and gap taken where they are made, out[kid] as
    :func:`reduce_sends` gives it (``offset`` and ``gap_of`` not written)."""
    S = w.shape[1]
    with_gap = gap_of.shape[0] > 0
    sending = out.shape[0] > 0
    run = np.zeros(S)
    for i in range(kids.shape[0]):
        n, k, p = kids[i], link[i], up[i]
        if first[i]:
            run[:] = 0.0
        for s in range(S):
            g = gap[k, s]
            run[s] += g
            land = _landing(run[s], alpha[k, s], p2p[k, s], w[p, s])
            if sending:
                own = finish[n, s] + g
                wait = finish[p, s] - w[p, s] + land - own
                out[n, s] = own + q[s] * wait if wait > 0.0 else own
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
def fanin_done(order, parent, w, finish):  # pragma: no cover - compiled
    """finish[n] = (the slowest finish of n's children, 0 for a leaf) + w[n], children before parents
    (``order`` read backwards)."""
    _fanin_done(order, parent, w, finish, np.zeros(w.shape))


@njit(cache=True, nogil=True)
def _fanin_done(order, parent, w, finish, sub):  # pragma: no cover - compiled
    """:func:`fanin_done` with its scratch ``sub`` [N, S] given, zero."""
    S = w.shape[1]
    for i in range(order.shape[0] - 1, -1, -1):
        n = order[i]
        p = parent[n]
        for s in range(S):
            f = sub[n, s] + w[n, s]
            finish[n, s] = f
            if p >= 0 and f > sub[p, s]:
                sub[p, s] = f


@njit(cache=True, nogil=True)
def reduce_sends(kids, parent, finish, w, offset, gap_of, q, out):  # pragma: no cover - compiled
    """A non-root reduce rank's time: its fan-in, its send's gap and a share q of its wait until its
    parent takes the message in: out[n] = own + q max(taken - own, 0), own = finish[n] + gap_of[n],
    taken = finish[p] - w[p] + offset[n]."""
    S = w.shape[1]
    for i in range(kids.shape[0]):
        n = kids[i]
        p = parent[n]
        for s in range(S):
            own = finish[n, s] + gap_of[n, s]
            wait = finish[p, s] - w[p, s] + offset[n, s] - own
            out[n, s] = own + q[s] * wait if wait > 0.0 else own


@njit(cache=True, nogil=True)
def advance_steps(src, dst, t, lo, hi, exchange, repeat, clock):  # pragma: no cover - compiled
    """Steps of message rounds on rank clocks [R, S], in place (:func:`collat.schedules._advance`
    repeated): step i sends messages lo[i]:hi[i] (src -> dst taking t), ``repeat[i]`` times. In one
    round every end is taken from the clocks before it; an exchange ends both sides together when
    the later one is ready; a one-way send ends the sender at its clock plus t and the receiver no
    sooner than that (after every sender of the round is set, as numpy's fancy assignment does)."""
    S = clock.shape[1]
    width = 0
    for i in range(lo.shape[0]):
        width = max(width, hi[i] - lo[i])
    end = np.empty((width, S))
    for i in range(lo.shape[0]):
        for _ in range(repeat[i]):
            for j in range(lo[i], hi[i]):
                a, b = src[j], dst[j]
                for s in range(S):
                    e = clock[a, s] + t[j, s]
                    if exchange[i] and clock[b, s] + t[j, s] > e:
                        e = clock[b, s] + t[j, s]
                    end[j - lo[i], s] = e
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
def sequential_fanout(counts, gap, table, alpha, beta, p2p, out):  # pragma: no cover - compiled
    """out[i] = max(sum_k gap[k] n_k + max_k (T_k(n_k) - gap[k] n_k), max_k p2p[k]) over the channels
    k with n_k = counts[i, k] > 0 receivers (0 for a row without any), T_k(n) = table[k, n] when
    ``table`` has rows (shape [K, R, S]; [K, 0, S]: none), else alpha[k] + beta[k] n."""
    n, K = counts.shape
    S = gap.shape[1]
    measured = table.shape[1] > 0
    for i in range(n):
        for s in range(S):
            total, tail, floor, present = 0.0, -np.inf, 0.0, False
            for k in range(K):
                c = counts[i, k]
                if c <= 0:
                    continue
                present = True
                g = gap[k, s]
                total += c * g
                part = table[k, c, s] if measured else alpha[k, s] + beta[k, s] * c
                if part - g * c > tail:
                    tail = part - g * c
                if p2p[k, s] > floor:
                    floor = p2p[k, s]
            out[i, s] = max(total + tail, floor) if present else 0.0


BLOCK = 32  # columns per pass of forest_times: a block's [N, BLOCK] scratch arrays stay in the core's cache
SCRATCH = 7  # [N, BLOCK] arrays of one block: fan-outs, w, offsets, gaps, times, fan-in finish, its scratch


def scratch_size(nodes: int, columns: int) -> int:
    """The length of the ``work`` buffer :func:`forest_times` needs for ``nodes`` ranks and ``columns``
    columns (and :func:`forests_times` for its largest forest)."""
    return SCRATCH * nodes * min(BLOCK, columns)


@njit(cache=True, nogil=True)
def forest_times(bcast, rows, inverse, gap, table, alpha, beta, p2p,
                 link_k, link_start, link_senders, link_group, link_load, link_table,
                 mem_senders, mem_concurrent, mem_contention, sizes,
                 forward, forwarders, above, kids, klink, up, first, order, parent, q,
                 tree_start, tree_size, done, mean, work):  # pragma: no cover - compiled
    """Every rank's time along a forest, reduced per tree: done[t] = the slowest rank of tree t, mean[t]
    = the mean over its ranks (mean with no rows: not asked for). The steps of
    :func:`collat.model.openmpi_mode.evaluate`, in its order and with its arithmetic, in as few passes
    over the ranks as they allow (a bcast's arrivals and a reduce's sends are each one pass, and the
    per-tree maximum and mean read the ranks' times where they are made):

    1. w[n] = :func:`sequential_fanout` of census row ``rows[inverse[n]]``;
    2. per shared link l (channel ``link_k[l]``, parents ``link_senders[link_start[l]:link_start[l + 1]]``):
       w = max(w, link_table[k, link_load[link_group]]) (:func:`~collat.model.openmpi_mode.shared_link`);
    3. w[mem_senders] += mem_contention x mem_concurrent x sizes (``mem_contention`` [S]: per byte per
       concurrent message; :func:`~collat.model.openmpi_mode.shared_memory`);
    4. the per-rank times of :func:`collat.model.forest.osu_rank_times` (``forward`` [S]: an inner
       rank's delay, ``forwarders`` True for those ranks, ``above`` the forwarders above each), by
       :func:`message_offsets`, then :func:`arrivals` (bcast) or :func:`fanin_done` and
       :func:`reduce_sends` (reduce).

    BLOCK columns at a time (``*_b``: a block's slice of the last axis): every column is priced on
    its own, and a calibration's Jacobian has hundreds of them over ~1000 ranks, whose [N, S]
    arrays would not stay in the cache from one pass to the next. A block's scratch arrays are cut
    from ``work`` (at least :func:`scratch_size` long; its values do not matter), which the caller
    keeps from call to call: memory the process already touched, where seven fresh [N, 32] arrays
    per block (8 MB each over the 33 000 ranks of a curve P = 2..256) cost page faults every call."""
    N = inverse.shape[0]
    with_mean = mean.shape[0] > 0
    for a in range(0, gap.shape[1], BLOCK):
        b = min(a + BLOCK, gap.shape[1])
        S = b - a
        gap_b, alpha_b, beta_b, p2p_b = gap[:, a:b], alpha[:, a:b], beta[:, a:b], p2p[:, a:b]
        table_b, link_table_b = table[:, :, a:b], link_table[:, :, a:b]
        mem_contention_b, sizes_b = mem_contention[a:b], sizes[a:b]
        forward_b, q_b, done_b = forward[a:b], q[a:b], done[:, a:b]
        mean_b = mean[:, a:b] if with_mean else mean
        NS = N * S
        fan = work[:rows.shape[0] * S].reshape((rows.shape[0], S))
        w = work[NS:2 * NS].reshape((N, S))
        offset = work[2 * NS:3 * NS].reshape((N, S))
        gap_of = work[3 * NS:4 * NS].reshape((N, S))
        out = work[4 * NS:5 * NS].reshape((N, S))
        finish = work[5 * NS:6 * NS].reshape((N, S))
        sub = work[6 * NS:SCRATCH * NS].reshape((N, S))
        sequential_fanout(rows, gap_b, table_b, alpha_b, beta_b, p2p_b, fan)
        for n in range(N):
            r = inverse[n]
            for s in range(S):
                w[n, s] = fan[r, s]
            if not bcast:  # the fan-in's running maximum starts at 0
                for s in range(S):
                    sub[n, s] = 0.0
        for l in range(link_k.shape[0]):
            k = link_k[l]
            for i in range(link_start[l], link_start[l + 1]):
                n = link_senders[i]
                c = link_load[link_group[i]]
                for s in range(S):
                    v = link_table_b[k, c, s]
                    if v > w[n, s] or np.isnan(v):  # np.maximum: NaN wins
                        w[n, s] = v
        for i in range(mem_senders.shape[0]):
            n = mem_senders[i]
            for s in range(S):
                w[n, s] += mem_contention_b[s] * mem_concurrent[i] * sizes_b[s]
        has_forward = forwarders.shape[0] == N
        if has_forward and not bcast:  # a forwarder's send up starts that much after its fan-in
            for n in range(N):
                if forwarders[n]:
                    for s in range(S):
                        w[n, s] += forward_b[s]
        if bcast:  # the non-root ranks' offsets (a root's is never read), then arrivals in their place,
            # parents first (a root's: 0), as arrivals() sums them
            message_offsets(kids, klink, up, first, gap_b, alpha_b, p2p_b, w, offset, gap_of[:0])
            for i in range(order.shape[0]):
                n = order[i]
                p = parent[n]
                if p < 0:
                    for s in range(S):
                        offset[n, s] = 0.0
                else:
                    for s in range(S):
                        offset[n, s] = offset[p, s] + offset[n, s]
        else:  # a non-root's time (reduce_sends) in out, a root's is its fan-in's finish
            _fanin_done(order, parent, w, finish, sub)
            _sends(kids, klink, up, first, gap_b, alpha_b, p2p_b, w, offset, gap_of[:0], finish, q_b, out)
        total = np.empty(S)
        row = np.empty(S)
        for t in range(tree_start.shape[0]):  # row by row: numpy's reduceat, in its order
            top = tree_start[t]
            for n in range(top, top + tree_size[t]):
                if bcast:  # arrival + own fan-out (+ the forwarders' delays), summed in that order
                    for s in range(S):
                        row[s] = offset[n, s] + w[n, s]
                    if has_forward:
                        for s in range(S):
                            row[s] += above[n] * forward_b[s]
                        if forwarders[n]:
                            for s in range(S):
                                row[s] += forward_b[s]
                    value = row
                elif parent[n] >= 0:
                    value = out[n]
                else:
                    value = finish[n]
                if n == top:
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
                    mean_b[t, s] = total[s] / tree_size[t]


@njit(cache=True, nogil=True)
def forests_times(bounds, bcast, rows, inverse, gap, table, alpha, beta, p2p,
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
        forest_times(bcast, rows[lo[0]:hi[0]], inverse[lo[1]:hi[1]], gap, table, alpha, beta, p2p,
                     link_k[lo[2]:hi[2]], link_start[lo[3]:hi[3]], link_senders[lo[4]:hi[4]],
                     link_group[lo[5]:hi[5]], link_load[lo[6]:hi[6]], link_table,
                     mem_senders[lo[7]:hi[7]], mem_concurrent[lo[8]:hi[8]], mem_contention, sizes,
                     forward, forwarders[lo[9]:hi[9]], above[lo[10]:hi[10]], kids[lo[11]:hi[11]],
                     klink[lo[12]:hi[12]], up[lo[13]:hi[13]], first[lo[14]:hi[14]], order[lo[15]:hi[15]],
                     parent[lo[16]:hi[16]], q, tree_start[t0:t1], tree_size[t0:t1], done[t0:t1], mean_f, work)


@njit(cache=True, nogil=True)
def ring_phase(clock, t_all, kind, rings):  # pragma: no cover - compiled
    """:func:`collat.schedules.ring_closed_form` of every ring of ``rings`` ([R, 5]: first row, end row,
    first message, end message, repeats n; n <= rows - 1) on ``clock`` [rows, S], in place, with its
    arithmetic: per kind of message (``kind``, one per message; time T, that of the kind's first
    message), g[u] = c[u] - PS[u] + u T over the ring unrolled twice, its maximum over the ranks
    s - n <= u <= (the last rank of that kind at or before s) by a sliding window (both ends move
    forward with s) instead of a sparse table, plus PS[s] + (n - s) T; the largest over kinds."""
    S = clock.shape[1]
    for r in range(rings.shape[0]):
        lo, hi, m0, n = rings[r, 0], rings[r, 1], rings[r, 2], rings[r, 4]
        P = hi - lo
        # one column at a time below: the ring's prefix sums, clocks and results kept column by column
        PS = np.zeros((S, 2 * P))
        for u in range(1, 2 * P):
            q = m0 + (u - 1 if u - 1 < P else u - 1 - P)
            for c in range(S):
                PS[c, u] = PS[c, u - 1] + t_all[q, c]
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
                T = t_all[m0 + first, c]
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
