"""The openmpi mode: what OpenMPI 4.1.5 runs, priced from the point-to-point and NBFT measurements.

Every forced algorithm is the shape OpenMPI's coll/base builds (config ``model.openmpi.trees``:
a tree of fan-outs, or rounds of messages, :mod:`collat.model.shapes.schedules`), with its fall-back below a
message count; algorithm 0 is whatever the fixed decision rules pick (:mod:`collat.model.shapes.openmpi`). A
parent's fan-out costs every receiver's per-message gap plus the longest single-channel tail
(:func:`sequential_fanout`); the messages of one round that pass one node's link, or the fan-outs of
one level that copy within one socket, contend (:func:`shared_link`, :func:`shared_memory`); each
rank's time is taken as OSU times it (:func:`collat.model.forest.osu_rank_times`): avg = the mean
over ranks, max = the slowest.

:func:`predict_arrays` is shared with the calibrated mode, which prices the same shapes with fitted
channel costs (:mod:`.calibrated_mode`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from collat.model import kernels
from collat.model.shapes import schedules
from collat.model.shapes.barrier import average_share
from collat.model.shapes.openmpi import (as_run, default_algorithms, receive_order, runs_fallback, takes_segments,
                                         tree_spec)
from collat.model.placement import LEVELS, channel_codes, full_node
from collat.model.costs import ChannelCosts
from collat.model.forest import Forest, Placements, census_rows
from collat.model.options import ModelOptions
from collat.model.predict import blocks_frame, curve_blocks


def sequential_fanout(counts: np.ndarray, costs: ChannelCosts) -> np.ndarray:
    """Cost in us of each parent's fan-out, [n_parents, S], from its children per channel [n_parents, K].

    The parent issues its sends one after another, so every receiver on channel c costs that
    channel's per-receiver gap beta_c (the NBFT slope, study eq. 6), and the fan-out ends with the
    longest remaining tail of one channel: cost = sum_c beta_c N_c + max_c [T_NBFT^c(N_c) - beta_c N_c]
    (one channel alone: exactly its NBFT; the collective study's eq. 11 with Q_max,j = beta_max /
    beta_j taken from the NBFT instead of the latency ratio), never below one message on the
    slowest channel present (study eq. 1). Where the costs say which part b_c of a gap moves bytes
    (``costs.gap_bytes``: the calibrated mode's rendezvous bcast), the fan-out's receivers share the
    resource their channel's bytes move through (``costs.group``: the node's memory, its network
    link) and the resources move their bytes at once: sum_c (beta_c - b_c) N_c +
    max_G sum_{c in G} b_c N_c + the tail (each receiver's message is in when its resource has
    moved them all: :func:`.forest.message_offsets`). T_NBFT^c comes from the measured table (measured where
    measured) when present, else the line. One compiled pass (:func:`collat.model.kernels.sequential_fanout`):
    the rows are few (one per distinct census row) and priced once per evaluation of a calibration.
    """
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    K, S = costs.p2p.shape
    table = _priced_up_to(counts, costs)
    out = np.empty((len(counts), S))
    kernels.sequential_fanout(counts, np.maximum(costs.beta, 0.0), np.empty((K, 0, S)) if table is None else table,
                              costs.alpha, costs.beta, costs.p2p, costs.bytes_part(), costs.group, out)
    return out


def _priced_up_to(counts: np.ndarray, costs: ChannelCosts):
    """The NBFT cost table [K, n, S] that prices fan-outs of ``counts`` receivers (None: the lines
    price them), after checking that it reaches the largest."""
    table = costs.table_by_receivers
    if table is not None and counts.max(initial=0) >= table.shape[1]:
        raise ValueError(f"a fan-out of {counts.max()} receivers exceeds the cost table ({table.shape[1] - 1})")
    return table


def shared_link(forest: Forest, counts: np.ndarray, costs: ChannelCosts, w: np.ndarray, channel: str,
                operation: str = "bcast", delay: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Contention on a shared link (node: a node's network interface; socket: the inter-socket
    link): the messages of one round (:func:`_link_groups`) that pass one node's (socket's) link
    queue like the receivers of one NBFT, C of them taking T_NBFT^channel(C) in all.

    bcast: a parent's fan-out using the link lasts at least T(C), C the messages over it from the
    parents of its node at its depth (they forward together): (w floored, ``delay``).
    reduce: a child's message over the link is in no sooner than T(C) after the child is done,
    C the messages into its parent's node from children of its height (they send together; a
    parent's fan-in is not floored, for its other children come later, on other links or none):
    (w, ``delay`` [N, S] raised to it, zeros where None)."""
    link = _link_costs(costs)
    if channel not in costs.index or link is None:
        return w, delay
    k = costs.index[channel]
    senders, inverse, load = _link_groups(forest, counts, k, channel, operation)
    if senders.size == 0:
        return w, delay
    table = link[k]
    priced = table[np.minimum(load, table.shape[0] - 1)[inverse]]
    if operation == "bcast":
        out = w.copy()
        out[senders] = np.maximum(w[senders], priced)
        return out, delay
    delay = np.zeros_like(w) if delay is None else delay.copy()
    delay[senders] = np.maximum(delay[senders], priced)
    return w, delay


def _link_costs(costs: ChannelCosts):
    """What n messages on a shared link cost, [K, n, S] (None: nothing to price them with)."""
    return costs.link_table if costs.link_table is not None else costs.table_by_receivers


def _link_groups(forest: Forest, counts: np.ndarray, k: int, channel: str, operation: str):
    """(the nodes the link prices, their group, the messages over it per group), once per forest and
    operation. bcast: the parents with children over link ``channel`` (index k), grouped by tree,
    depth and the parent's node (socket), each counting its messages over the link. reduce: the
    children whose message to their parent takes the link, grouped by tree, height
    (:attr:`Forest.height`: the children of one height send together) and the parent's node
    (socket), one message each. In OpenMPI's in-order binomial reduce under map-by node every odd
    rank sends across the nodes at once, to even parents of every depth."""
    place = "node" if channel == "node" else "socket"

    def groups():
        if operation == "bcast":
            uses = counts[:, k]
            senders = np.flatnonzero(uses > 0)
            if senders.size == 0:
                return senders, senders, senders
            inverse = _same_round_and_place(forest, senders, forest.where[place][senders], forest.depth[senders])
            return senders, inverse, np.bincount(inverse, weights=uses[senders]).astype(np.int64)
        kids = np.flatnonzero((forest.parent >= 0) & (forest.link == k))
        if kids.size == 0:
            return kids, kids, kids
        inverse = _same_round_and_place(forest, kids, forest.where[place][forest.parent[kids]], forest.height[kids])
        return kids, inverse, np.bincount(inverse).astype(np.int64)
    return forest.memo(("shared_link", channel, k, operation), groups)


def _same_round_and_place(forest: Forest, nodes: np.ndarray, where: np.ndarray, round_of: np.ndarray) -> np.ndarray:
    """Group index of each of ``nodes``: one tree, one round (``round_of``), one place (``where``: a
    node or socket index per node), the fan-outs or messages that run concurrently and share it."""
    key = (forest.tree_id[nodes] * (int(round_of.max()) + 1) + round_of) * (int(where.max()) + 1) + where
    return np.unique(key, return_inverse=True)[1].ravel()


def shared_memory(forest: Forest, counts: np.ndarray, costs: ChannelCosts, w: np.ndarray) -> np.ndarray:
    """Contention for a socket's memory: the fan-outs of one tree level run concurrently, and every
    message another parent of the same socket sends at that level adds ``costs.memory_contention``
    microseconds per byte to a fan-out (the copies share the socket's memory bandwidth)."""
    if np.all(np.asarray(costs.memory_contention) <= 0):
        return w
    senders, concurrent = _memory_groups(forest, counts)
    if senders.size == 0:
        return w
    out = w.copy()
    out[senders] += costs.memory_contention * concurrent[:, None] * costs.sizes[None, :]
    return out


def _memory_groups(forest: Forest, counts: np.ndarray):
    """(the parents that send, the messages the other parents of their socket and level send), once
    per forest."""
    def others():
        sent = counts.sum(axis=1)
        senders = np.flatnonzero(sent > 0)
        if senders.size == 0:
            return senders, np.zeros(0)
        inverse = _same_round_and_place(forest, senders, forest.where["socket"][senders], forest.depth[senders])
        return senders, np.bincount(inverse, weights=sent[senders])[inverse] - sent[senders]
    return forest.memo("shared_memory", others)


def evaluate(forest: Forest, counts: np.ndarray, costs: ChannelCosts, operation: str, with_average: bool = True,
             contention: tuple = ()):
    """(completion [T, S], mean rank time [T, S] or None) of every tree of a forest: sequential
    fan-outs, the shared links of ``contention`` (:func:`shared_link`) and the socket's memory
    (:func:`shared_memory`), then per-rank times (:func:`collat.model.forest.osu_rank_times`).

    One compiled pass (:func:`collat.model.kernels.forest_times`) does what those functions do one numpy
    call at a time (tests/test_model.py holds the two equal): a calibration evaluates a handful of
    forests thousands of times, and the calls cost more than the sums.
    """
    return evaluate_forests([(forest, counts, contention)], costs, operation, with_average)[0]


def evaluate_forests(parts: list, costs: ChannelCosts, operation: str, with_average: bool = True,
                     merged: dict | None = None) -> list:
    """:func:`evaluate` of several forests, ``parts`` = [(forest, counts, contention)], with one
    priced cost set: [(completion, mean rank time or None)] per part.

    With a ``merged`` dict (the caller's, kept across calls that price the same forests: a
    calibration's) the forests are priced in one compiled pass, their kernel arrays laid end to end
    once (:func:`_laid_end_to_end`) and kept there; every forest is priced on its own in that pass
    (:func:`collat.model.kernels.forests_times`), so the times are those of one pass per forest, without
    the Python around each. Without it, one pass per forest."""
    for forest, _, _ in parts:
        if forest.link is None:
            raise ValueError("per-rank times need the channel of every link: build the forest with Placements.census")
    K, S = costs.p2p.shape
    link = _link_costs(costs)
    receivers = 0 if link is None else link.shape[1]
    presents = [() if link is None else tuple((c, costs.index[c]) for c in contention if c in costs.index)
                for _, _, contention in parts]
    mem = np.broadcast_to(np.asarray(costs.memory_contention, dtype=float), (S,))
    forward = np.broadcast_to(np.asarray(costs.forward, dtype=float), (S,))
    memory_on, forward_on = bool(np.any(mem > 0)), bool(np.any(forward > 0))

    def arrays_of(forest, counts, present):  # the forest's arrays in _FOREST_ARRAYS order, once per forest
        return forest.memo(("kernel", operation, present, receivers, memory_on, forward_on),
                           lambda: (*_kernel_plan(forest, counts, present, receivers, memory_on, forward_on,
                                                  operation),
                                    forest.offsets, forest.sizes))

    gap, alpha, beta, p2p, mem, sizes, forward = (_f(a) for a in (np.maximum(costs.beta, 0.0), costs.alpha,
                                                                   costs.beta, costs.p2p, mem, costs.sizes, forward))
    q = costs.waits()
    nbytes = costs.bytes_part()
    link_table = np.empty((0, 0, S)) if receivers == 0 or not any(presents) else link

    def arguments(a):  # forest_times' arguments but done and mean, from the arrays of _FOREST_ARRAYS
        table = _priced_up_to(a[0], costs)
        return (operation == "bcast", a[0], a[1], gap, np.empty((K, 0, S)) if table is None else table, alpha, beta,
                p2p, nbytes, costs.group, *a[2:7], link_table, *a[7:9], mem, sizes, forward, *a[9:17], q, a[17], a[18])

    def empty(T):
        return np.empty((T, S)), np.empty((T if with_average else 0, S))

    if merged is None or len(parts) == 1:
        out = []
        for (forest, counts, _), present in zip(parts, presents):
            done, mean = empty(len(forest.sizes))
            kernels.forest_times(*arguments(arrays_of(forest, counts, present)), done, mean,
                                 _scratch(kernels.scratch_size(len(forest.parent), S)))
            out.append((done, mean if with_average else None))
        return out
    key = (tuple(f for f, _, _ in parts), operation, tuple(presents), receivers, memory_on, forward_on)
    if key not in merged:
        merged[key] = _laid_end_to_end([arrays_of(f, c, pr) for (f, c, _), pr in zip(parts, presents)])
    bounds, laid = merged[key]
    done, mean = empty(int(bounds[-1, -1]))
    largest = max(len(f.parent) for f, _, _ in parts)
    kernels.forests_times(bounds, *arguments(laid), done, mean, _scratch(kernels.scratch_size(largest, S)))
    ends = bounds[1:-1, -1]
    return list(zip(np.split(done, ends), np.split(mean, ends) if with_average else [None] * len(parts)))


_SCRATCH = threading.local()


def _scratch(length: int) -> np.ndarray:
    """The forest kernels' scratch buffer (:func:`collat.model.kernels.scratch_size`), at least ``length``
    long: one per thread, grown when a larger forest asks and kept from call to call."""
    work = getattr(_SCRATCH, "work", None)
    if work is None or len(work) < length:
        work = _SCRATCH.work = np.empty(length)
    return work


# What forest_times takes from one forest, in its argument order (the columns of forests_times' bounds):
# _kernel_plan's arrays, then the trees' starts and sizes.
_FOREST_ARRAYS = ("rows", "inverse", "link_k", "link_start", "link_senders", "link_group", "link_load",
                  "mem_senders", "mem_concurrent", "forwarders", "above", "kids", "klink", "up", "first", "order",
                  "parent", "tree_start", "tree_size")


def _laid_end_to_end(forests: list) -> tuple:
    """(bounds [F + 1, 19], arrays) for :func:`collat.model.kernels.forests_times` from the
    :data:`_FOREST_ARRAYS` of F forests: each array of every forest laid end to end, each forest in
    its own indices, forest f's part of array i at bounds[f, i]:bounds[f + 1, i]."""
    bounds = np.zeros((len(forests) + 1, len(_FOREST_ARRAYS)), dtype=np.int64)
    bounds[1:] = np.cumsum([[len(a) for a in arrays] for arrays in forests], axis=0)
    return bounds, [np.concatenate(column) for column in zip(*forests)]


def _kernel_plan(forest: Forest, counts: np.ndarray, present: tuple, receivers: int, memory_on: bool,
                 forward_on: bool, operation: str) -> tuple:
    """What :func:`evaluate` passes :func:`collat.model.kernels.forest_times` from the forest and its census
    alone, once per forest, the first 17 of :data:`_FOREST_ARRAYS`: distinct census rows, the row of
    every node, the shared links (:func:`_links_plan`), the memory groups, the forwarders (empty
    when their cost is off), and the send plan, order and parents."""
    rows, inverse = forest.memo("census_rows", lambda: census_rows(counts))
    memory = (tuple(np.asarray(a, dtype=t) for a, t in zip(_memory_groups(forest, counts), (np.int64, float)))
              if memory_on else (_NONE, _EMPTY))
    forwarding = _forwarding_plan(forest) if forward_on else (_NO_MASK, _EMPTY)
    links = _links_plan(forest, counts, present, receivers, operation)
    return (rows, np.asarray(inverse, dtype=np.int64), *links, *memory, *forwarding, *forest.send_plan, forest.order,
            forest.parent)


_NONE, _EMPTY, _NO_MASK = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.bool_)


def _links_plan(forest: Forest, counts: np.ndarray, present: tuple, receivers: int, operation: str) -> tuple:
    """The shared links of :func:`evaluate` as :func:`collat.model.kernels.forest_times` takes them: (channel
    index per link, where each link's nodes start, the nodes (:func:`_link_groups`: a bcast's parents, a
    reduce's children), their group (numbered across links), the messages per group clipped to the
    cost table's ``receivers`` rows)."""
    parts = [_link_groups(forest, counts, k, channel, operation) for channel, k in present]
    groups = np.cumsum([0] + [len(load) for _, _, load in parts])
    return (np.array([k for _, k in present], dtype=np.int64),
            np.cumsum([0] + [len(senders) for senders, _, _ in parts]).astype(np.int64),
            np.concatenate([_NONE] + [senders.astype(np.int64) for senders, _, _ in parts]),
            np.concatenate([_NONE] + [(group + g).astype(np.int64) for (_, group, _), g in zip(parts, groups)]),
            np.concatenate([_NONE] + [np.minimum(load, receivers - 1).astype(np.int64) for _, _, load in parts]))


def _forwarding_plan(forest: Forest) -> tuple[np.ndarray, np.ndarray]:
    """(True for the ranks that forward, [N]; the forwarders above each rank, [N]) of
    :attr:`Forest.forwarding`, as :func:`collat.model.kernels.forest_times` takes them."""
    forwarders, above = forest.forwarding
    mask = np.zeros(len(forest.parent), dtype=np.bool_)
    mask[forwarders] = True
    return mask, _f(above)


def _f(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def evaluate_tree(parent, counts, costs: ChannelCosts, operation: str, links, send_key=None):
    """(slowest rank [S], mean rank time [S]) of one tree from its census and the channel of every
    link (:func:`collat.model.forest.link_channels`)."""
    forest = Forest([np.asarray(parent)])
    forest.link = None if links is None else np.asarray(links)
    forest.send_key = None if send_key is None else np.asarray(send_key)
    done, mean = evaluate(forest, counts, costs, operation)
    return done[0], mean[0]


@dataclass(frozen=True)
class ShapePlan:
    """What :func:`predict_arrays` prices for one (operation, algorithm, mapping) at P values ``Pv``
    and sizes, fixed before any cost is known (:func:`plan_shapes`): the algorithm OpenMPI runs at
    every (P, size), the name of the shape it runs there, and per shape priced the rows of ``Pv``
    it prices, where its prices apply at those rows, and the shared links it contends for. A
    calibration prices one plan with thousands of parameter sets."""

    operation: str
    mapping: str
    Pv: np.ndarray       # [P]
    chosen: np.ndarray   # [P, S] the algorithm OpenMPI runs
    names: np.ndarray    # [P, S] the shape's name (tree or schedule; "" where none is modelled)
    steps: tuple         # (shape, rows, applies [rows, S], links) per shape priced


def plan_shapes(operation: str, algorithm: int, mapping: str, Pv, sizes, options: ModelOptions,
                segsize: int = 0) -> ShapePlan:
    """The :class:`ShapePlan` of one (operation, algorithm, mapping) at ``Pv`` and ``sizes``:
    algorithm 0 runs what the fixed rules pick at each (P, size); a forced algorithm runs its shape
    (as OpenMPI runs it: :func:`collat.model.shapes.openmpi.as_run`) or its fall-back below a message
    count, with segments of ``segsize`` bytes where it is a tree OpenMPI cuts into segments (its
    shape says ``segmented``; 0: whole messages, what the fixed rules and a forced run without a
    segment size do)."""
    S, Pv = len(sizes), np.asarray([int(p) for p in Pv])
    specs = options.openmpi.trees
    if algorithm == 0:
        chosen = default_algorithms(operation, Pv, sizes, options.openmpi.default_rules)
    else:
        chosen = np.full((len(Pv), S), int(algorithm))
    names = np.full((len(Pv), S), "", dtype=object)
    steps = []
    for alg in np.unique(chosen):
        spec = tree_spec(specs, operation, int(alg))
        if spec is None:
            continue
        spec = as_run(spec, by_default=algorithm == 0)
        if segsize and algorithm != 0 and takes_segments(spec):
            spec = {**spec, "segsize": int(segsize)}
        fallback = runs_fallback(spec, Pv, sizes)
        variants = [(spec, ~fallback)]
        if spec.get("fallback"):
            variants.append(({"tree": spec["fallback"]}, fallback))
        for shape, where in variants:
            ok = (chosen == alg) & where
            rows = np.flatnonzero(ok.any(axis=1))
            if rows.size == 0:
                continue
            names[ok] = shape.get("tree") or shape.get("schedule")
            steps.append((shape, rows, ok[rows], options.openmpi.contention.links_for(shape)))
    return ShapePlan(operation, mapping, Pv, chosen, names, tuple(steps))


def price_plan(plan: ShapePlan, costs: ChannelCosts, options: ModelOptions, placements: Placements,
               with_average: bool = True) -> dict[str, np.ndarray]:
    """The targets of a :class:`ShapePlan` priced with ``costs`` (sizes as planned): {"max":
    completion [P, S], "avg": mean rank time (with_average)}, NaN where no shape is modelled; a
    ``costs.overhead`` (calibrated mode: a per-call constant) is added to both."""
    return price_plans([plan], costs, options, placements, with_average)[0]


def price_plans(plans: list, costs: ChannelCosts, options: ModelOptions, placements: Placements,
                with_average: bool = True, merged: dict | None = None) -> list[dict]:
    """:func:`price_plan` of several plans of one operation with one cost set; with ``merged`` (a
    dict the caller keeps, :func:`evaluate_forests`) the trees of every plan in one compiled pass, and
    which forests those are is kept there too (the plans' ids; the plans are kept with them)."""
    if len({plan.operation for plan in plans}) > 1:
        raise ValueError("price_plans prices the plans of one operation")
    key = ("trees of", tuple(map(id, plans)), tuple(costs.index), options.unpinned_channel)
    found = merged.get(key) if merged is not None else None
    if found is None or any(a is not b for a, b in zip(found[0], plans)):  # ids of plans no longer held
        parts, where = [], []  # the tree steps' forests, (plan, step) of each
        for i, plan in enumerate(plans):
            for j, (shape, rows, _, links) in enumerate(plan.steps):
                if "schedule" not in shape:
                    parts.append((*_tree_census(shape, plan.operation, plan.Pv[rows], plan.mapping, costs,
                                                placements, options.unpinned_channel), links))
                    where.append((i, j))
        found = (tuple(plans), parts, where)
        if merged is not None:
            merged[key] = found
    _, parts, where = found
    priced = {(i, j): price_shape(shape, plan.operation, plan.Pv[rows], plan.mapping, costs, placements,
                                  options.unpinned_channel, with_average, links)
              for i, plan in enumerate(plans) for j, (shape, rows, _, links) in enumerate(plan.steps)
              if "schedule" in shape}
    if parts:
        for (i, j), (done, mean), (forest, counts, _) in zip(where, evaluate_forests(
                parts, costs, plans[0].operation, with_average, merged), parts):
            plan = plans[i]
            shape, rows = plan.steps[j][:2]
            priced[i, j] = _after_tree(shape, done, mean, plan.Pv[rows], plan.mapping, costs, placements,
                                       options.unpinned_channel, forest, counts)
    return [_assembled(plan, [priced[i, j] for j in range(len(plan.steps))], costs, with_average, placements,
                       options.openmpi.barrier_rules, merged)
            for i, plan in enumerate(plans)]


def _placed(plan: ShapePlan, placements, barrier_rules, with_average: bool, merged: dict | None) -> tuple:
    """What :func:`_assembled` reads of where a plan's ranks sit, whatever the costs: per step the
    share of the starts' spread its average waits for, and per P the remote ranks, the barrier's
    release queue and whether some node is full; kept in ``merged`` (the plan, the placements and
    the rules kept with it) for the next cost set."""
    held = (plan, placements, barrier_rules)
    key = ("placed", *map(id, held), with_average)
    found = merged.get(key) if merged is not None else None
    if found is not None and all(a is b for a, b in zip(found[0], held)):  # ids of objects still held
        return found[1]
    waits = [np.array([average_share(shape, plan.operation, int(P)) for P in plan.Pv[rows]])
             for shape, rows, _, _ in plan.steps] if with_average and len(barrier_rules) else None
    placed = (waits, placements.remote(plan.Pv, plan.mapping),
              placements.release_queue(plan.Pv, plan.mapping, barrier_rules) if len(barrier_rules) else None,
              full_node(plan.Pv, plan.mapping, placements.machine))
    if merged is not None:
        merged[key] = (held, placed)
    return placed


def _assembled(plan: ShapePlan, priced: list, costs: ChannelCosts, with_average: bool, placements,
               barrier_rules=(), merged: dict | None = None) -> dict:
    """A plan's targets from its steps' (completion, mean) at their rows: each where it applies, NaN
    where no shape is modelled, plus ``costs.overhead``, ``costs.skew`` times the most ranks on one
    node other than the root's (:meth:`collat.model.forest.Placements.remote`), and the spread of
    the starts, ``costs.release`` times the queue of the barrier's last round
    (:meth:`collat.model.forest.Placements.release_queue`, ``barrier_rules``): whole on the
    completion, on the average the share of it the shape's ranks wait for
    (:func:`collat.model.shapes.barrier.average_share`)."""
    shape_of = (len(plan.Pv), len(costs.sizes))
    done = np.full(shape_of, np.nan)
    mean = np.full(shape_of, np.nan) if with_average else None
    skewed = bool(np.any(np.asarray(costs.release) != 0)) and len(barrier_rules) > 0
    share = np.zeros(shape_of) if skewed and with_average else None
    waits, remote, queue, full = _placed(plan, placements, barrier_rules, with_average, merged)
    for (shape, rows, applies, _), (c, a), wait in zip(plan.steps, priced, waits or [None] * len(priced)):
        done[rows] = np.where(applies, c, done[rows])
        if with_average:
            mean[rows] = np.where(applies, a, mean[rows])
        if share is not None:
            share[rows] = np.where(applies, wait[:, None], share[rows])
    extra = costs.overhead
    if np.any(np.asarray(costs.skew) != 0):
        extra = extra + np.asarray(costs.skew)[None] * remote[:, None]
    targets = {"max": done + extra}
    if with_average:
        targets["avg"] = mean + extra
    if skewed:
        spread = np.asarray(costs.release)[None] * queue[:, None]
        targets["max"] = targets["max"] + spread
        if with_average:
            targets["avg"] = targets["avg"] + spread * share
    if np.any(np.asarray(costs.full) != 1):  # no idle core on some node: the whole call slows
        slower = np.where(full[:, None], np.asarray(costs.full)[None], 1.0)
        targets = {t: v * slower for t, v in targets.items()}
    return targets


def price_plan_shared(plan: ShapePlan, costs: ChannelCosts, options: ModelOptions, placements: Placements,
                      with_average: bool, shapes: dict) -> dict:
    """:func:`price_plan` with each shape priced at every P of the plan once per ``shapes`` (a dict the
    caller keeps for one cost set and one placements: a grid's default and forced algorithms run the
    same shapes; a shape's times at one P do not depend on the other P priced with it), then taken at
    the rows of the plan's steps."""
    priced = []
    for shape, rows, _, links in plan.steps:
        key = (plan.operation, plan.mapping, tuple(sorted(shape.items())), links, plan.Pv.tobytes(), with_average)
        if key not in shapes:
            shapes[key] = price_shape(shape, plan.operation, plan.Pv, plan.mapping, costs, placements,
                                      options.unpinned_channel, with_average, links)
        done, mean = shapes[key]
        priced.append((done[rows], None if mean is None else mean[rows]))
    return _assembled(plan, priced, costs, with_average, placements, options.openmpi.barrier_rules)


def predict_arrays(operation: str, algorithm: int, mapping: str, Pv, costs: ChannelCosts, options: ModelOptions,
                   placements: Placements, with_average: bool = True, shapes: dict | None = None,
                   segsize: int = 0):
    """The openmpi-shaped prediction of one (operation, algorithm, mapping) as arrays [P, size]:
    (targets {"max": completion, "avg": mean rank time (with_average)}, shape names, the algorithm
    OpenMPI ran): :func:`plan_shapes` priced by :func:`price_plan` (with ``shapes``, a dict kept
    across the curves of one grid, :func:`price_plan_shared`; ``segsize``: :func:`plan_shapes`). Shared by
    the openmpi and calibrated modes.
    """
    plan = plan_shapes(operation, algorithm, mapping, Pv, costs.sizes, options, segsize)
    priced = (price_plan(plan, costs, options, placements, with_average) if shapes is None else
              price_plan_shared(plan, costs, options, placements, with_average, shapes))
    return priced, plan.names, plan.chosen


def relay_to_root(done, mean, Pv, mapping: str, costs: ChannelCosts, placements: Placements, unpinned: str):
    """The in-order binary reduce's last message: its tree is rooted at P - 1, whose result then
    travels to the root (one more message of the whole vector; rank 0, a leaf of that tree, waits
    for it)."""
    if len(Pv) == 0:
        return done, mean
    lookup = np.array([costs.index.get(c, -1) for c in LEVELS])
    start = np.concatenate([[0], np.cumsum([int(P) for P in Pv])[:-1]]).astype(np.int64)  # rank 0 of each P
    k = lookup[channel_codes(placements.laid(Pv, mapping), start + np.asarray(Pv, dtype=np.int64) - 1, start, unpinned)]
    relay = costs.p2p_at(k, np.broadcast_to(costs.sizes, (len(Pv), len(costs.sizes))))
    relay[np.asarray(Pv) < 2] = 0.0
    new_done = done + relay
    if mean is not None:  # rank 0 now finishes last instead of as a leaf (taken at the mean)
        mean = mean + (new_done - mean) / np.asarray(Pv, dtype=float)[:, None]
    return new_done, mean


def price_shape(shape: dict, operation: str, Pv, mapping: str, costs: ChannelCosts, placements: Placements,
                unpinned: str, with_average: bool = True, contention: tuple = ()):
    """(completion [T, S], mean rank time [T, S]) of one OpenMPI shape at every P of ``Pv``.

    ``{tree: ...}``: fan-outs along a tree (:func:`evaluate`); the in-order binary tree is rooted at
    P - 1 (:func:`relay_to_root`). ``{schedule: ...}``: rounds of messages (:mod:`collat.model.shapes.schedules`),
    priced from the point-to-point fits.
    """
    if "schedule" in shape:
        layout = placements.schedule_layout(shape["schedule"], Pv, mapping, costs.index, unpinned)
        return schedules.price(layout, costs.p2p_at, costs.sizes)
    forest, counts = _tree_census(shape, operation, Pv, mapping, costs, placements, unpinned)
    done, mean = evaluate(forest, counts, costs, operation, with_average, contention)
    return _after_tree(shape, done, mean, Pv, mapping, costs, placements, unpinned, forest, counts)


def _tree_census(shape: dict, operation: str, Pv, mapping: str, costs: ChannelCosts, placements: Placements,
                 unpinned: str):
    """(Forest, counts) of a tree shape at every P of ``Pv``, in the order the operation sends."""
    return placements.census(receive_order(shape, operation), Pv, mapping, costs.index, unpinned)


def _after_tree(shape: dict, done, mean, Pv, mapping: str, costs: ChannelCosts, placements: Placements,
                unpinned: str, forest: Forest, counts: np.ndarray):
    """A tree shape's times once its forest is evaluated: the in-order binary tree's relay to the
    root (:func:`relay_to_root`), a segment size's pipeline (:func:`pipelined`), the others as they are."""
    if shape["tree"] == "in_order_binary":
        done, mean = relay_to_root(done, mean, Pv, mapping, costs, placements, unpinned)
    segsize = int(shape.get("segsize") or 0)
    if segsize > 0:
        slowest = np.maximum.reduceat(sequential_fanout(counts, costs), forest.offsets, axis=0)
        done, mean = pipelined(done, mean, slowest, costs.sizes, segsize)
    return done, mean


def pipelined(done: np.ndarray, mean: np.ndarray | None, slowest: np.ndarray, sizes: np.ndarray, segsize: int):
    """(completion, mean rank time) [T, S] of trees that cut each message into segments of
    ``segsize`` bytes (OpenMPI's coll_tuned_<op>_algorithm_segmentsize; MPI_CHAR), from their times
    for whole messages ``done``, ``mean`` and each tree's slowest fan-out (or fan-in) ``slowest``
    [T, S], at every size of ``sizes``: a message of m > s bytes travels as k = ceil(m / s)
    segments, the first through the whole tree as a message of s bytes, each next one a step of the
    pipeline behind it, T(m) = T(s) + (k - 1) max_parent w(s) (the usual pipelined-tree cost, not in
    either paper; the last segment is taken as a whole one). A message of at most s bytes is one
    segment. ``segsize`` must be one of ``sizes`` (the costs are priced there); ``sizes`` may be
    several increasing runs side by side (the calibrated mode prices its targets so), each column
    then cut with the segment column of its own run."""
    sizes = np.asarray(sizes)
    starts = np.flatnonzero(np.r_[True, sizes[1:] <= sizes[:-1]])  # the runs of increasing sizes
    ends = np.r_[starts[1:], len(sizes)]
    segment = np.empty(len(sizes), dtype=np.int64)
    for a, b in zip(starts, ends):
        at = np.flatnonzero(sizes[a:b] == segsize)
        if not len(at):
            raise ValueError(f"segment size {segsize}: the costs price only the sizes {sizes[a:b].tolist()}")
        segment[a:b] = a + at[0]
    k = np.ceil(sizes / segsize)
    cut = np.flatnonzero(sizes > segsize)
    done = done.copy()
    done[:, cut] = done[:, segment[cut]] + (k[cut] - 1) * slowest[:, segment[cut]]
    if mean is not None:
        mean = mean.copy()
        mean[:, cut] = mean[:, segment[cut]] + (k[cut] - 1) * slowest[:, segment[cut]]
    return done, mean


def shaped_algorithms(options: ModelOptions, operation: str) -> list[int]:
    """The algorithms the openmpi-shaped modes predict: every one with a shape in config
    ``model.openmpi.trees``, and the default, 0."""
    return sorted({int(s["algorithm"]) for s in options.openmpi.trees if s["operation"] == operation} | {0})


class OpenMPIMode:
    """Predictions of what OpenMPI runs, priced with ``costs`` (operation -> :class:`ChannelCosts`)."""

    name = "openmpi"

    def __init__(self, costs: dict[str, ChannelCosts], options: ModelOptions):
        self.costs, self.options = costs, options

    def algorithms(self, operation: str) -> list[int]:
        return shaped_algorithms(self.options, operation)

    def curve(self, operation: str, algorithm: int, mapping: str, P_values, placements: Placements) -> pd.DataFrame:
        """:meth:`blocks` as a frame."""
        return blocks_frame(self.blocks(operation, algorithm, mapping, P_values, placements))

    def blocks(self, operation: str, algorithm: int, mapping: str, P_values, placements: Placements,
               shapes: dict | None = None, segsize: int = 0) -> list[dict]:
        """max and avg of one (operation, algorithm, mapping) at every P and size
        (:func:`~collat.model.predict.curve_blocks`); ``shapes``, ``segsize``: see :func:`predict_arrays`."""
        costs = self.costs[operation]
        Pv = np.asarray([int(p) for p in P_values])
        if len(Pv) == 0:
            return []
        spare = ~full_node(Pv, mapping, placements.machine)
        if costs.idle_table is None or spare.all() or not spare.any():
            # one table prices every P: a collective that leaves every node a core idle pays the
            # fan-outs of the NBFT runs that do (costs.idle(): the costs themselves where none differ)
            targets, names, chosen = predict_arrays(operation, algorithm, mapping, Pv,
                                                    costs.idle() if spare.all() else costs, self.options,
                                                    placements, shapes=self._shapes(shapes, spare.all()),
                                                    segsize=segsize)
            return curve_blocks(Pv, costs.sizes, targets, names, 1, chosen)
        parts = [predict_arrays(operation, algorithm, mapping, Pv[rows], c, self.options, placements,
                                shapes=self._shapes(shapes, idle), segsize=segsize)
                 for rows, c, idle in ((~spare, costs, False), (spare, costs.idle(), True))]
        order = np.argsort(np.r_[np.flatnonzero(~spare), np.flatnonzero(spare)], kind="stable")
        targets = {t: np.vstack([p[0][t] for p in parts])[order] for t in parts[0][0]}
        names, chosen = (np.vstack([p[i] for p in parts])[order] for i in (1, 2))
        return curve_blocks(Pv, costs.sizes, targets, names, 1, chosen)

    @staticmethod
    def _shapes(shapes: dict | None, idle: bool) -> dict | None:
        """The shapes kept across a grid's curves for the costs priced (:func:`price_plan_shared`):
        those of the idle fan-out table apart."""
        return shapes.setdefault("idle", {}) if shapes is not None and idle else shapes
