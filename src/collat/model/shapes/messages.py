"""Every message one OpenMPI 4.1 MPI_Bcast or MPI_Reduce sends: who sends how many bytes to whom.

The pricing (:mod:`collat.model.shapes.schedules`, :mod:`collat.model.shapes.trees`) works with
shares of the message; this module follows ``ompi/mca/coll/base/coll_base_{bcast,reduce}.c`` of
OpenMPI 4.1 to the element: block rounding (``ceil(count / P)`` blocks, the last one shorter or
empty), the halves of an odd count, segments of ``segsize`` bytes, the non-power-of-two steps,
the fall-backs below a count. It is what ``make test-openmpi`` compares with OpenMPI's own
per-peer counters (its pml monitoring component), and what the schedules' shares are checked
against.

Every function takes the root as rank 0 and a datatype of one byte (OSU's MPI_CHAR): ``count`` is
the message size in bytes. A result is a list of ``(src, dst, bytes)``, one per message sent, in
no particular order; :func:`per_peer` sums it to ``{(src, dst): (messages, bytes)}``.
"""

from __future__ import annotations

from collections import Counter

from collat.model.shapes import trees
from collat.model.shapes.openmpi import as_run, default_algorithm, runs_fallback, tree_spec

Message = tuple[int, int, int]


def segment_count(count: int, segsize: int) -> int:
    """Elements per segment (``COLL_BASE_COMPUTED_SEGCOUNT``, one-byte type): the whole message
    unless ``segsize`` bytes is at least one element and less than the message."""
    return segsize if 1 <= segsize < count else count


def _segments(count: int, segsize: int) -> list[int]:
    seg = segment_count(count, segsize)
    n = -(-count // seg) if count else 1
    return [seg] * (n - 1) + [count - seg * (n - 1)]


def tree_messages(operation: str, parent, count: int, segsize: int = 0, order=None) -> list[Message]:
    """A tree of ``ompi_coll_base_{bcast,reduce}_generic``: every edge carries the message in
    segments, parent to child (bcast) or child to parent (reduce)."""
    out = []
    for child, par in enumerate(map(int, parent)):
        if par < 0:
            continue
        src, dst = (par, child) if operation == "bcast" else (child, par)
        out += [(src, dst, n) for n in _segments(count, segsize)]
    return out


def linear(operation: str, P: int, count: int) -> list[Message]:
    """``bcast_intra_basic_linear`` / ``reduce_intra_basic_linear``: one whole message per rank."""
    return [(0, s, count) if operation == "bcast" else (s, 0, count) for s in range(1, P)]


def in_order_binary_reduce(P: int, count: int, segsize: int = 0) -> list[Message]:
    """``reduce_intra_in_order_binary``: the tree is rooted at rank P - 1, which then sends the
    whole result to the root in one message."""
    out = tree_messages("reduce", trees.in_order_binary(P), count, segsize)
    if P > 1:
        out.append((P - 1, 0, count))
    return out


def split_binary(P: int, count: int, segsize: int = 0) -> list[Message]:
    """``bcast_intra_split_bintree``: the root sends the first ceil(count / 2) elements down its
    left subtree (odd ranks) and the rest down its right one (even ranks), segmented; each rank
    then swaps halves with its pair (s + 1 for odd s); with P even the last rank gets the second
    half from the root. A half that is empty or shorter than a segment: the pipeline instead."""
    halves = (count - count // 2, count // 2)
    if halves[1] == 0 or segsize > halves[1]:
        return tree_messages("bcast", trees.pipeline(P), count, segsize)
    parent = trees.binary(P)
    out = []
    for child, par in enumerate(map(int, parent)):
        if par >= 0:
            side = (child + 1) % 2  # 0: the left (odd) subtree
            seg = segsize if segsize > 0 else halves[side]
            n = -(-halves[side] // seg)
            out += [(par, child, seg)] * (n - 1) + [(par, child, halves[side] - seg * (n - 1))]
    for s in range(1, P):
        side = (s + 1) % 2
        if P % 2 == 0 and s == P - 1:
            out.append((0, s, halves[1]))
        else:
            out.append((s, s + 1 if side == 0 else s - 1, halves[side]))
    return out


def _binomial_scatter(P: int, count: int, block: int) -> tuple[list[Message], list[int]]:
    """The scatter of bcast 8 and 9: rank s receives from s minus its lowest set bit what that
    parent still holds beyond s's first block; parents send to their largest subtree first.
    Returns the messages and what each rank holds after it."""
    held = [0] * P
    held[0] = count
    out = []
    for s in range(P):  # a parent's rank is below its children's: its count is known first
        low = s & -s if s else 1 << P.bit_length()
        mask = low >> 1
        while mask > 0:
            if s + mask < P:
                n = held[s] - block * mask
                if n > 0:
                    out.append((s, s + mask, n))
                    held[s + mask] = n
                    held[s] -= n
            mask >>= 1
    return out, held


def scatter_allgather(P: int, count: int) -> list[Message]:
    """``bcast_intra_scatter_allgather``: the binomial scatter of blocks of ceil(count / P), then a
    recursive-doubling allgather (rank s and s xor 2^k exchange what their groups hold, an empty
    message included); with P not a power of two, the ranks of a group without a partner group
    get its blocks by recursive halving from the ranks of their group that have them."""
    if count < P:
        return linear("bcast", P, count)
    scatter, _ = _binomial_scatter(P, count, -(-count // P))
    return scatter + [m[1:4] for m in allgather_rounds(P, count)]


def allgather_rounds(P: int, count: int) -> list[tuple[int, int, int, int, bool]]:
    """The allgather of :func:`scatter_allgather` as ``(round, src, dst, bytes, exchange)``: one
    round of pairwise exchanges per distance 2^k, then one round of one-way sends per level of the
    recursive halving that completes a group without a partner group (P not a power of two)."""
    block = -(-count // P)
    curr = [max(0, min(block, count - s * block)) for s in range(P)]
    recv = [0] * P
    out, round_ = [], 0
    mask = 1
    while mask < P:
        sent = {}
        for s in range(P):
            r = s ^ mask
            if r < P:
                sent[s] = curr[s]
                out.append((round_, s, r, curr[s], True))
        for s in sent:
            recv[s] = sent[s ^ mask]
            curr[s] += recv[s]
        round_ += 1
        # ranks whose partner group is missing in part: recursive halving within their own group,
        # level by level (a rank may forward at a lower level what it received at a higher one)
        half = mask >> 1
        while half > 0:
            late = []
            for s in range(P):
                mine, theirs = (s // mask) * mask, ((s ^ mask) // mask) * mask
                if theirs + mask <= P:
                    continue
                have = P - mine - mask  # the ranks of s's group that received the partner group's blocks
                r, base = s ^ half, (s // (half << 1)) * (half << 1)
                if r > s and s < base + have and r >= base + have:
                    late.append((s, r, recv[s]))
            for s, r, n in late:
                out.append((round_, s, r, n, False))
                recv[r] = n
                curr[r] += n
            round_ += bool(late)
            half >>= 1
        mask <<= 1
    return out


def scatter_ring_allgather(P: int, count: int) -> list[Message]:
    """``bcast_intra_scatter_allgather_ring``: the binomial scatter, then P - 1 steps in which every
    rank passes a block to s + 1 (the block it received the step before; an empty one included)."""
    if count < P:
        return linear("bcast", P, count)
    block = -(-count // P)
    out, _ = _binomial_scatter(P, count, block)
    size = [max(0, min(block, count - b * block)) for b in range(P)]
    for step in range(P - 1):
        out += [(s, (s + 1) % P, size[(s - step) % P]) for s in range(P)]
    return out


def rabenseifner(P: int, count: int) -> list[Message]:
    """``reduce_intra_redscat_gather`` with root 0 (:func:`rabenseifner_rounds`); below
    2^floor(log2 P) elements, the linear reduce."""
    pof2 = 1 << (P.bit_length() - 1)
    if pof2 < 2 or count < pof2:
        return linear("reduce", P, count)
    return [m[1:4] for m in rabenseifner_rounds(P, count)]


def rabenseifner_rounds(P: int, count: int) -> list[tuple[int, int, int, int, bool]]:
    """Rabenseifner's reduce as ``(round, src, dst, bytes, exchange)``: with p' = 2^floor(log2 P)
    and r = P - p', the first 2r ranks pair up, swap halves (the even rank sends the second half,
    the odd one the first; an exchange) and the odd one returns its reduced half; the p' that go on
    reduce-scatter by recursive halving at doubling distances (the lower rank of a pair keeps the
    first half of its window; exchanges) and gather to rank 0 along a binomial tree at halving
    distances (each sends the window it ended with, one way)."""
    pof2 = 1 << (P.bit_length() - 1)
    r = P - pof2
    out, round_ = [], 0
    if r:
        lhalf = count // 2
        for even in range(0, 2 * r, 2):
            out += [(0, even, even + 1, count - lhalf, True), (0, even + 1, even, lhalf, True),
                    (1, even + 1, even, count - lhalf, False)]
        round_ = 2
    real = [2 * v if v < r else v + r for v in range(pof2)]
    steps = pof2.bit_length() - 1
    kept = {v: [] for v in range(pof2)}  # per step: the size of the window v keeps
    size = {v: count for v in range(pof2)}
    for step in range(steps):
        for v in range(pof2):
            w = v ^ (1 << step)
            half = size[v] // 2
            keep = half if real[v] < real[w] else size[v] - half  # the lower rank keeps the first half
            out.append((round_ + step, real[v], real[w], size[v] - keep, True))
            kept[v].append(keep)
        for v in range(pof2):
            size[v] = kept[v][-1]
    round_ += steps
    for v in range(pof2):  # the gather, from the largest distance: send and stop, or receive
        for i, step in enumerate(reversed(range(steps))):
            w = v ^ (1 << step)
            if (w >> step) == 0:  # w's subtree holds virtual rank 0 (rank 0)
                out.append((round_ + i, real[v], real[w], kept[v][step], False))
                break
    return out


SCHEDULES = {"split_binary": split_binary, "scatter_allgather": scatter_allgather,
             "scatter_ring_allgather": scatter_ring_allgather, "rabenseifner": rabenseifner}


def messages(operation: str, algorithm: int, P: int, count: int, trees_spec: list, rules: dict,
             segsize: int = 0) -> list[Message]:
    """The messages of one call of ``operation`` forced to ``algorithm`` (0: the fixed decision
    rules, ``rules`` = config ``model.openmpi.default_rules``) on P ranks, ``trees_spec`` = config
    ``model.openmpi.trees``; ``segsize`` as ``coll_tuned_<op>_algorithm_segmentsize`` (the fixed
    rules pass 0)."""
    by_default = algorithm == 0
    if by_default:
        algorithm = default_algorithm(operation, P, count, rules)
    spec = as_run(tree_spec(trees_spec, operation, algorithm), by_default)
    if P < 2:
        return []
    if spec.get("count_below") is not None and runs_fallback(spec, [P], [count])[0, 0]:
        spec = {"tree": spec["fallback"]}
    if "schedule" in spec:
        build = SCHEDULES[spec["schedule"]]
        return build(P, count, segsize) if spec["schedule"] == "split_binary" else build(P, count)
    if spec["tree"] == "linear":
        return linear(operation, P, count)
    if operation == "reduce" and spec["tree"] == "in_order_binary":
        return in_order_binary_reduce(P, count, segsize)
    return tree_messages(operation, trees.tree(P, spec), count, segsize)


def per_peer(msgs: list[Message]) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(src, dst): (messages, bytes)}`` of a message list."""
    n, b = Counter(), Counter()
    for s, d, size in msgs:
        n[s, d] += 1
        b[s, d] += size
    return {k: (n[k], b[k]) for k in n}
