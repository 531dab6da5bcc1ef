"""The calibrated mode: OpenMPI's shapes (:mod:`.openmpi_mode`) priced with channel costs fitted on
collective measurements (rule ``model_calibrate``, :mod:`collat.model.calibration`).

A small parameter vector per (operation, target) replaces the measured costs: for every channel c

* ``latency_us`` L_c and ``us_per_byte`` G_c: a message's flight, the tail of a fan-out
  (the NBFT line's intercept, study eq. 6, alpha_c(m) = L_c + G_c m);
* ``gap_us`` g_c and ``gap_us_per_byte`` g'_c: what each further receiver adds at the sender
  (the NBFT line's slope, beta_c(m) = g_c + g'_c m);
* ``gap_us_small``: g_c for messages of at most ``small_limit`` bytes (config
  ``model.openmpi.small_limit``), where a protocol step makes the gap smaller (on ORFEO the NBFT
  slope of the intra-node channels doubles from 64 to 128 B); without a limit it is g_c;

so that a fan-out of N_c receivers per channel costs sum_c beta_c N_c + max_c alpha_c
(:func:`~collat.model.openmpi_mode.sequential_fanout`; a bcast's rendezvous bytes, g'_c m per
receiver, move through two shared resources instead, the node's memory and its network link, at
once: :func:`concurrent_bytes`), one message alpha_c + beta_c, and a queue
of n messages on a shared link alpha_c + n beta_c; plus ``overhead_us``, a per-call constant of the
library and the benchmark loop, a socket's memory contention ``memory_us_per_byte``, ``forward_us``,
the delay between an inner rank's own message and its sends (a rank that forwards: bcast, from its
arrival to its first send; reduce, from the end of its fan-in to its send up; zero for the root and
the leaves, so that a flat tree does not pay it and a deep one pays it once per level), and (reduce)
the share of the wait for its receiver a sender sees, eager and rendezvous (``wait_eager``,
``wait_rendezvous``), and ``fault_us_per_byte``, what a page the C library maps fresh costs per byte:
from :data:`MMAP_THRESHOLD` on, OpenMPI's reduce trees allocate an accumulator of the whole message on
every inner rank at every call (coll/base ``ompi_coll_base_reduce_generic``), which the rank receives
into before it forwards (added to ``forward_us`` per byte of the message), and an algorithm whose shape
states ``fresh`` buffers pays them on top of the openmpi mode's price, with the ``copies`` it makes and,
where every rank allocates at once, ``memory_us_per_byte`` per fresh byte of each other rank of its
socket (:func:`fresh_memory`: costs of the machine, which the calibration measures on the trees and
an algorithm nobody measured pays alike, :func:`physics_price`; on a 16-core node's OSU runs every
allocating reduce was 1.8-7.5 times its messages' price from there, benchmarks/README.md); and two
start terms. OSU starts each rank's call as it leaves the barrier
before it, and a collective whose ranks wait for each other carries a late start into its time.
``spread_us_per_release`` explains one cause: the barrier's last round sends its messages between
nodes at once, they queue at the network interface, and the ranks they release leave over a time
s' n, n the messages of that queue (:mod:`collat.model.shapes.barrier`: OpenMPI 4.1 runs Bruck's
barrier from 64 to 255 ranks, whose last round crosses the nodes under map-by core and socket, not
under map-by node); the completion carries s' n, the average the share of it each rank waits for
(a reduce rank its subtree's starts, a bcast rank its ancestors'). ``skew_us_per_remote_rank`` is
measured, not explained: s times the most ranks on one node other than the root's, added to a
call. On the study, fitted over every algorithm and mapping, the reduce's average takes the first
and leaves the second at 0, the bcast's the reverse: a bcast under map-by node grows with its P
where the barrier sends nothing between nodes (benchmarks/README.md). ``full_node_factor`` is how
many times slower a whole call is where some node holds a rank on every core
(:func:`collat.model.placement.full_node`): the operating system's work then preempts a rank that
others wait for (on a 16-core node each algorithm's P = 16 ran a median 1.2-2.7 times its P = 15,
the scatter-allgather bcast aside, whose P = 16 is a power of two; on ORFEO's 128-core nodes the
bcasts under map-by core show no step from P = 127 to 128). It is fitted only where some
calibration cells leave every node a core idle and some fill a node they run on alone (where every
full node has another beside it, the slowdown would trade with the next node's costs). Elsewhere
it is not fitted: a calibration whose fan-outs are a line takes the slowdown the NBFT stage's runs
that fill a node measured (:func:`collat.model.costs.full_node_slowdown`), one that keeps their
measured shape, which prices those fan-outs as measured, 1.
The values are read from ``results/model/calibration.csv``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collat.model.costs import ChannelCosts
from collat.model.forest import Placements
from collat.model.openmpi_mode import predict_arrays, shaped_algorithms
from collat.model.options import ModelOptions
from collat.model.predict import blocks_frame, curve_blocks

PARAMETERS = ("latency_us", "us_per_byte", "gap_us", "gap_us_per_byte", "gap_us_small")
OVERHEAD = "overhead_us"
WAITS = ("wait_eager", "wait_rendezvous")  # reduce only: the share of the wait for the receiver a sender sees
MEMORY = "memory_us_per_byte"  # shared_memory: per byte per concurrent message in one socket
FORWARD = "forward_us"  # an inner rank's delay between its own message and its sends (osu_rank_times)
SKEW = "skew_us_per_remote_rank"  # a call's start skew per rank of the fullest other node than the root's
RELEASE = "spread_us_per_release"  # the spread of the ranks' starts per message of the barrier's release queue
FULL = "full_node_factor"  # how many times slower a call is where some node has a rank on every core
SHAPE = "nbft_shape"  # 1 where the calibration kept the measured fan-outs' shape (fanout_shape), 0 a line
CONCURRENT = "concurrent_rendezvous"  # 1 where the calibration priced a bcast's rendezvous bytes as shared
FAULT = "fault_us_per_byte"  # reduce: per byte of the fresh buffer an inner rank receives into, each call
MMAP_THRESHOLD = 131072  # glibc's M_MMAP_THRESHOLD: a buffer this large comes fresh from the kernel


def parametric_costs(values: np.ndarray, channels: list[str], sizes, max_receivers: int,
                     overhead=0.0, eager_limit: float = np.inf, waits=(0.0, 1.0), memory=0.0,
                     forward=0.0, small_limit: float = -1.0, concurrent=False,
                     shape: np.ndarray | None = None, skew=0.0, release=0.0, fault=0.0, full=1.0) -> ChannelCosts:
    """:class:`ChannelCosts` from parameters ``values`` [K, 5] in the order of :data:`PARAMETERS`
    (or [K, 4]: one gap at every size), the gap ``gap_us_small`` taken up to ``small_limit`` bytes,
    the per-call ``overhead``, a reduce sender's ``waits`` (eager, rendezvous) around ``eager_limit``,
    a socket's ``memory`` contention and an inner rank's ``forward`` delay, to which ``fault`` adds its
    per-byte price of the message from :data:`MMAP_THRESHOLD` on (the accumulator an inner rank of a
    reduce tree receives into, fresh at every call). ``shape`` [K, n, S]
    (:func:`fanout_shape`, at ``sizes``, or one per parameter set side by side): what the measured
    fan-outs add to a line, added to the parameters' line of every fan-out of n receivers (never
    below 0). ``concurrent`` (:func:`concurrent_bytes`; or one per parameter set): above
    ``eager_limit`` the per-byte part of each gap, g'_c m, moves through its channel's resource,
    the node's memory or its network link, which a fan-out's receivers share, both resources at
    once.

    A batch of B parameter sets (``values`` [B, K, 5]; ``overhead``, ``memory``, ``forward`` [B]; ``waits``
    [B, 2]) is priced in one pass: the size axis then holds the sizes of set 0, then of set 1, ...
    (B x S columns, each column with its own parameters), which every evaluation in
    :mod:`collat.model` treats column by column. :func:`collat.model.calibration.calibrate` differentiates that way.
    """
    sizes = np.asarray(sizes, dtype=float)
    v = np.asarray(values, dtype=float)
    batch = v.ndim == 3
    v = v if batch else v[None]
    if v.shape[2] == 4:  # no small-message gap: the gap of every size
        v = np.concatenate([v, v[:, :, 2:3]], axis=2)
    B, K, S = v.shape[0], v.shape[1], len(sizes)

    def columns(a):  # one value per parameter set -> one per column (a scalar when not batched)
        a = np.asarray(a, dtype=float).reshape(B)
        return np.repeat(a, S) if batch else float(a[0])

    per = [np.repeat(v[:, :, q].T, S, axis=1) if batch else v[0, :, q:q + 1] for q in range(5)]  # [K, B S]
    m = np.tile(sizes, B)
    gap = np.where(m[None, :] <= small_limit, per[4], per[2])
    alpha = per[0] + per[1] * m[None, :]
    beta = gap + per[3] * m[None, :]
    n = np.arange(max_receivers + 1, dtype=float)
    table = alpha[:, :, None] + beta[:, :, None] * n[None, None, :]
    if shape is not None:  # [K, n, S] (every parameter set) or [K, n, B S] (one per set) -> [K, B S, n]
        add = np.transpose(shape, (0, 2, 1))
        table = np.maximum(table + (add if add.shape[1] == B * S else np.tile(add, (1, B, 1))), 0.0)
    table[:, :, 0] = 0.0

    def curve(k):  # T_p2p at any sizes whose last axis is the columns' (any shape when not batched)
        flat, small, per_byte = per[0][k] + per[2][k], per[0][k] + per[4][k], per[1][k] + per[3][k]
        if not batch:
            flat, small, per_byte = float(flat[0]), float(small[0]), float(per_byte[0])

        def t_p2p(size):
            size = np.asarray(size, dtype=float)
            return np.where(size <= small_limit, small, flat) + per_byte * size
        return t_p2p

    costs = ChannelCosts(channels, m, alpha + beta, alpha, beta, table, [curve(k) for k in range(K)])
    shared = np.broadcast_to(np.asarray(concurrent, dtype=bool).reshape(-1), (B,))
    if shared.any():
        above = (m[None, :] > eager_limit) & np.repeat(shared, S)[None, :]
        costs.gap_bytes = np.where(above, per[3] * m[None, :], 0.0)
    costs.overhead = columns(overhead)
    costs.skew = columns(np.zeros(B) + np.asarray(skew, dtype=float))
    costs.release = columns(np.zeros(B) + np.asarray(release, dtype=float))
    costs.full = columns(np.zeros(B) + np.asarray(full, dtype=float))  # 1: no slowdown
    costs.eager_limit = float(eager_limit)
    w = np.asarray(waits, dtype=float).reshape(B, 2)
    costs.wait_eager, costs.wait_rendezvous = columns(w[:, 0]), columns(w[:, 1])
    costs.memory_contention = columns(memory)
    costs.forward = columns(forward)
    faults = np.zeros(B) + np.asarray(fault, dtype=float)
    if np.any(faults > 0):  # an inner rank's accumulator of the whole message, fresh pages each call
        costs.forward = costs.forward + columns(faults) * np.where(m >= MMAP_THRESHOLD, m, 0.0)
    return costs


def fresh_memory(cells: pd.DataFrame, table: pd.DataFrame | None, trees, target: str | None = None,
                 machine: dict | None = None) -> np.ndarray:
    """What a call's own memory work adds to the price of each of ``cells`` (columns operation,
    algorithm, size, and target unless ``target`` is given; P and mapping with ``machine``), in us,
    at the calibration ``table``'s costs of its operation and target (rows of
    :func:`collat.model.calibration.calibrate`): the whole-message buffers its algorithm's shape in
    ``trees`` writes per call (``fresh``), from :data:`MMAP_THRESHOLD` on, at :data:`FAULT` per byte
    (a buffer that large comes from the kernel fresh at every call, and each page written faults),
    and the whole-message copies it makes (``copies``) at the per-byte cost of the fastest channel
    the table prices (a copy within one rank's memory). Where every rank allocates at the start of
    the call (``at_once``), the ranks of one socket fault their fresh pages together, and each fresh
    byte also pays :data:`MEMORY` per other rank of the fullest socket, as the messages of one tree
    level do (:func:`collat.model.openmpi_mode.shared_memory`; needs ``machine``, else none): a page
    the kernel hands out is zeroed through the socket's memory, and the copy then writes those same
    pages. Where OpenMPI runs the shape's fallback (:func:`collat.model.shapes.openmpi.runs_fallback`),
    none of it. Costs of the machine, not of the messages the openmpi mode prices: the calibration
    measures them on the reduce trees and an algorithm nobody measured pays them alike."""
    from collat.model.placement import LEVELS, place_arrays
    from collat.model.shapes.openmpi import runs_fallback

    out = np.zeros(len(cells))
    if table is None or not len(cells):
        return out
    specs = {(t["operation"], int(t["algorithm"])): t for t in trees if t.get("fresh") or t.get("copies")}
    if not specs:
        return out

    def value(op, t, parameter, channel="all"):
        got = table.loc[(table["operation"] == op) & (table["target"] == t) & (table["channel"] == channel)
                        & (table["parameter"] == parameter), "value"]
        return float(got.iloc[0]) if len(got) else 0.0

    def copy_cost(op, t):  # us per byte of a copy: the fastest channel's message, its flight and its gap
        channels = [c for c in LEVELS if ((table["operation"] == op) & (table["channel"] == c)).any()]
        if not channels:
            return 0.0
        return value(op, t, "us_per_byte", channels[0]) + value(op, t, "gap_us_per_byte", channels[0])

    fullest = {}

    def others_on_socket(P, mapping):  # the other ranks of the fullest socket, per cell
        pairs = list(zip(P.tolist(), mapping.tolist()))
        for p, mp in set(pairs) - set(fullest):
            fullest[p, mp] = int(np.bincount(place_arrays(int(p), mp, machine)["socket"]).max()) - 1
        return np.array([fullest[pair] for pair in pairs], dtype=float)

    size = cells["size"].to_numpy(float)
    targets = cells["target"] if target is None else pd.Series(target, index=cells.index)
    keys = pd.DataFrame({"operation": cells["operation"].to_numpy(),
                         "algorithm": cells["algorithm"].to_numpy().astype(int), "target": targets.to_numpy()})
    for (op, alg, t), idx in keys.groupby(["operation", "algorithm", "target"], sort=False).indices.items():
        spec = specs.get((op, int(alg)))
        if spec is None:
            continue
        m = size[idx]
        fresh = np.where(m >= MMAP_THRESHOLD, float(spec.get("fresh", 0.0)) * m, 0.0)
        copied = float(spec.get("copies", 0.0)) * m
        cost = value(op, t, FAULT) * fresh + copy_cost(op, t) * copied
        if spec.get("at_once") and machine is not None:
            others = others_on_socket(cells["P"].to_numpy()[idx], cells["mapping"].to_numpy()[idx])
            cost = cost + value(op, t, MEMORY) * others * fresh
        if spec.get("count_below") is not None and "P" in cells:
            Ps, sizes = np.unique(cells["P"].to_numpy()[idx]), np.unique(m)
            fallback = runs_fallback(spec, Ps, sizes)[np.searchsorted(Ps, cells["P"].to_numpy()[idx]),
                                                      np.searchsorted(sizes, m)]
            cost = np.where(fallback, 0.0, cost)
        out[idx] = cost
    return out


def physics_price(cells: pd.DataFrame, unfitted, table: pd.DataFrame | None, trees, target: str | None = None,
                  machine: dict | None = None) -> np.ndarray:
    """The openmpi mode's prices ``unfitted`` of ``cells`` (columns operation, algorithm, mapping, P,
    size, and target unless ``target`` is given) as the fitted modes build on them, where they take
    the physics' price of an algorithm: plus its :func:`fresh_memory`, times the calibration
    ``table``'s :data:`FULL` where some node of ``machine`` holds a rank on every core
    (:func:`collat.model.placement.full_node`). Both are costs of the machine that every algorithm
    pays, measured by the calibration and absent from the point-to-point and NBFT runs the openmpi
    mode is priced from (on the 16-core node, its error on the algorithms nobody gave stepped down at
    P = 16 by about the fitted factor)."""
    from collat.model.placement import full_node

    price = np.asarray(unfitted, dtype=float)
    if table is None or not len(cells):
        return price
    price = price + fresh_memory(cells, table, trees, target, machine)
    rows = table[table["parameter"] == FULL]
    if machine is None or rows.empty:
        return price
    factor = {(op, t): float(v) for op, t, v in zip(rows["operation"], rows["target"], rows["value"])}
    targets = cells["target"].to_numpy() if target is None else np.full(len(cells), target, dtype=object)
    slowed = np.array([factor.get((op, t), 1.0) for op, t in zip(cells["operation"].to_numpy(), targets)])
    full = full_node(cells["P"].to_numpy(), cells["mapping"].to_numpy(), machine)
    return np.where(full, price * slowed, price)


def with_machine_terms(openmpi: pd.DataFrame, table: pd.DataFrame | None, trees,
                       machine: dict | None = None) -> pd.DataFrame:
    """The openmpi mode's rows (columns operation, algorithm, mapping, P, size, target, predicted) as
    the fitted modes build on them: each price as :func:`physics_price` gives it, at the calibration
    ``table``'s costs, on ``machine``."""
    if table is None or not len(openmpi):
        return openmpi
    return openmpi.assign(predicted=physics_price(openmpi, openmpi["predicted"], table, trees, machine=machine))


def fanout_shape(openmpi: ChannelCosts, first: np.ndarray, sizes, small_limit: float = -1.0) -> np.ndarray:
    """What the measured fan-outs add to the line a calibration starts from, [K, n, S] at ``sizes``
    (each among ``openmpi.sizes``): the openmpi mode's cost of a fan-out of n receivers (the NBFT
    stage's medians where measured, its line at each size beyond) less the line of the start
    parameters ``first`` [K, 5] (:func:`collat.model.calibration.start`). Added to a calibrated
    line (:func:`parametric_costs`' ``shape``), the start prices every fan-out as the openmpi mode
    does, and the fitted parameters move a line under the measured shape instead of replacing it:
    a node whose fan-outs are far from a line in the receivers (a 16-core node, benchmarks/README.md)
    keeps what its NBFT runs measured."""
    sizes = np.asarray(sizes, dtype=float)
    table = openmpi.table_by_receivers
    if table is None:
        raise ValueError("the fan-out shape needs the openmpi mode's NBFT table (costs built with max_receivers)")
    at = np.minimum(np.searchsorted(openmpi.sizes, sizes), len(openmpi.sizes) - 1)
    if not np.array_equal(openmpi.sizes[at], sizes):
        raise ValueError(f"sizes {sorted(set(sizes) - set(openmpi.sizes))} are not among the openmpi costs' sizes")
    line = parametric_costs(first, openmpi.channels, sizes, table.shape[1] - 1, small_limit=small_limit)
    return table[:, :, at] - line.table_by_receivers


def concurrent_bytes(operation: str, concurrent_rendezvous: bool) -> bool:
    """Whether the calibrated mode prices ``operation``'s rendezvous bytes as shared resources
    (config ``model.openmpi.concurrent_rendezvous``): a bcast's, whose parent isends to every child
    and waits for all. Above the eager limit the receivers on the parent's node pull their copies
    through its memory, all at once, while its network link carries the others': each resource's
    receivers finish together, when it has moved all of their bytes, and the two resources move
    theirs at the same time. ORFEO, linear bcast: from 256 KiB on one node, the mean over ranks is
    0.9-0.95 of the slowest rank's time (receivers served one after another would give about 0.5);
    at 1 MiB, about 11 ms at P = 128 under map-by core (127 receivers on the root's node) and still
    10-12 ms at P = 254 with 126 more on the other node. Not a reduce's: its parent takes the
    messages one or two at a time. ``"auto"`` (:func:`rendezvous_forms`) counts as True where no
    calibration chose."""
    return bool(concurrent_rendezvous) and operation == "bcast"


def rendezvous_forms(operation: str, concurrent_rendezvous: bool | str) -> tuple[bool, ...]:
    """The ways of pricing ``operation``'s rendezvous bytes a calibration fits (:func:`concurrent_bytes`):
    one where config ``model.openmpi.concurrent_rendezvous`` says which; with ``"auto"`` a bcast's
    both, shared first (what OpenMPI's bcast does: it posts every child's send at once), so that the
    data must show the other to have it."""
    if operation == "bcast" and concurrent_rendezvous == "auto":
        return (True, False)
    return (concurrent_bytes(operation, concurrent_rendezvous),)


def shares_rendezvous(table: pd.DataFrame, operation: str, target: str, concurrent_rendezvous: bool | str) -> bool:
    """Whether the calibration of (``operation``, ``target``) in ``table`` priced rendezvous bytes as
    shared (its ``concurrent_rendezvous`` row; a table without the row: :func:`concurrent_bytes` of
    the config's setting)."""
    row = table[(table["operation"] == operation) & (table["target"] == target) & (table["parameter"] == CONCURRENT)]
    if len(row):
        return float(row["value"].iloc[0]) == 1.0
    return concurrent_bytes(operation, concurrent_rendezvous)


def costs_from_table(table: pd.DataFrame, operation: str, target: str, channels: list[str], sizes,
                     max_receivers: int, eager_limit: float, small_limit: float = -1.0,
                     concurrent: bool = False, shape: np.ndarray | None = None) -> ChannelCosts:
    """The :class:`ChannelCosts` of one (operation, target) from rows of :func:`collat.model.calibration.calibrate`
    (a table without ``gap_us_small``: the gap of every size), with the fan-outs' ``shape`` (:func:`fanout_shape`)."""
    have, values, overhead, waits, memory, forward, skew, release, fault, full = _table_values(table, operation,
                                                                                               target, channels)
    return parametric_costs(values, have, sizes, max_receivers, overhead, eager_limit, waits, memory, forward,
                            small_limit, concurrent, shape, skew, release, fault, full)


def batched_costs_from_table(table: pd.DataFrame, operation: str, targets: tuple[str, ...], channels: list[str],
                             sizes, max_receivers: int, eager_limit: float, small_limit: float = -1.0,
                             concurrent: bool = False, shape: np.ndarray | None = None) -> ChannelCosts:
    """The parameter sets of several targets of one operation side by side on the size axis (target i
    at columns i S .. (i + 1) S - 1, :func:`parametric_costs`' batch): priced in one pass, each
    column as :func:`costs_from_table` of its target prices it."""
    parts = [_table_values(table, operation, t, channels) for t in targets]
    if any(p[0] != parts[0][0] for p in parts):
        raise ValueError(f"calibration of {operation}: the targets {list(targets)} calibrate different channels")
    stack = [np.array([p[i] for p in parts], dtype=float) for i in range(1, 10)]
    return parametric_costs(stack[0], parts[0][0], sizes, max_receivers, stack[1], eager_limit, stack[2], stack[3],
                            stack[4], small_limit, concurrent, shape, stack[5], stack[6], stack[7], stack[8])


def _table_values(table: pd.DataFrame, operation: str, target: str, channels: list[str]):
    """(channels, parameters [K, 5], overhead, waits (eager, rendezvous), memory, forward) of one
    (operation, target) of a calibration table."""
    t = table[(table["operation"] == operation) & (table["target"] == target)]
    value = t.set_index(["channel", "parameter"])["value"]
    have = [c for c in channels if c in set(t["channel"])]
    older = {"gap_us_small": "gap_us"}  # a table written before the parameter: the gap of every size
    values = np.array([[value[(c, q)] if (c, q) in value.index else value[(c, older[q])] for q in PARAMETERS]
                       for c in have])
    waits = tuple(value[("all", w)] for w in WAITS) if ("all", WAITS[0]) in value.index else (0.0, 1.0)
    forward = value[("all", FORWARD)] if ("all", FORWARD) in value.index else 0.0
    skew = value[("all", SKEW)] if ("all", SKEW) in value.index else 0.0
    release = value[("all", RELEASE)] if ("all", RELEASE) in value.index else 0.0
    fault = value[("all", FAULT)] if ("all", FAULT) in value.index else 0.0
    full = value[("all", FULL)] if ("all", FULL) in value.index else 1.0
    return (have, values, value[("all", OVERHEAD)], waits, value[("all", MEMORY)], forward, skew, release, fault,
            full)


def slowed_operations(table: pd.DataFrame, target: str) -> set[str]:
    """The operations whose calibration of ``target`` in ``table`` measured a full node's slowdown:
    its ``full_node_factor`` fitted, with the lower end of its 95 % interval above 1."""
    rows = table[(table["target"] == target) & (table["parameter"] == FULL) & table["fitted"].astype(bool)]
    return set(rows.loc[rows["low"] > 1.0, "operation"])


def keeps_shape(table: pd.DataFrame, operation: str, target: str) -> bool:
    """Whether the calibration of (``operation``, ``target``) in ``table`` kept the measured
    fan-outs' shape (its ``nbft_shape`` row is 1; a table without the row priced them by a line)."""
    row = table[(table["operation"] == operation) & (table["target"] == target) & (table["parameter"] == SHAPE)]
    return bool(len(row)) and float(row["value"].iloc[0]) == 1.0


class CalibratedMode:
    """Predictions of OpenMPI's shapes with calibrated costs, ``costs``: operation -> (its calibrated
    targets, their parameter sets side by side on the size axis, :func:`batched_costs_from_table`),
    so that one pass prices every target of a curve, each column with its target's parameters."""

    name = "calibrated"

    def __init__(self, costs: dict[str, tuple[tuple[str, ...], ChannelCosts]], options: ModelOptions):
        self.costs, self.options = costs, options

    @classmethod
    def from_table(cls, table: pd.DataFrame, channels: list[str], sizes, max_receivers: int,
                   options: ModelOptions, shapes=None) -> "CalibratedMode":
        """From a calibration table (rows of :func:`collat.model.calibration.calibrate`); ``shapes``
        (:class:`collat.model.calibration.FanoutShapes`): the measured fan-outs' shape, for the
        calibrations that kept it."""
        args = (channels, sizes, max_receivers, options.openmpi.eager_limit, options.openmpi.small_limit)
        targets = table.groupby("operation", sort=True)["target"].unique()

        def shape(op, by):  # each target's (zeros where its calibration kept a line), side by side
            kept = [] if shapes is None else [keeps_shape(table, op, t) for t in by]
            if not any(kept):
                return None
            one = shapes.of(op, sizes)
            return np.concatenate([one if k else np.zeros_like(one) for k in kept], axis=2)

        def shared(op, by):  # each target's way of pricing rendezvous bytes
            return np.array([shares_rendezvous(table, op, t, options.openmpi.concurrent_rendezvous) for t in by])

        return cls({op: (tuple(sorted(by)), batched_costs_from_table(
                    table, op, tuple(sorted(by)), *args, shared(op, tuple(sorted(by))), shape(op, tuple(sorted(by)))))
                    for op, by in targets.items()}, options)

    def algorithms(self, operation: str) -> list[int]:
        return shaped_algorithms(self.options, operation)

    def curve(self, operation: str, algorithm: int, mapping: str, P_values, placements: Placements) -> pd.DataFrame:
        """:meth:`blocks` as a frame."""
        return blocks_frame(self.blocks(operation, algorithm, mapping, P_values, placements))

    def blocks(self, operation: str, algorithm: int, mapping: str, P_values, placements: Placements,
               shapes: dict | None = None, segsize: int = 0) -> list[dict]:
        """Each calibrated target of one (operation, algorithm, mapping), priced with its own parameters
        (:func:`~collat.model.predict.curve_blocks`); ``shapes``, ``segsize``: see
        :func:`~collat.model.openmpi_mode.predict_arrays`."""
        Pv = np.asarray([int(p) for p in P_values])
        if len(Pv) == 0:
            return []
        targets, costs = self.costs[operation]
        S = len(costs.sizes) // len(targets)
        priced, names, chosen = predict_arrays(operation, algorithm, mapping, Pv, costs, self.options, placements,
                                               with_average=any(t != "max" for t in targets), shapes=shapes, segsize=segsize)
        return [block for i, t in enumerate(targets)
                for block in curve_blocks(Pv, costs.sizes[i * S:(i + 1) * S], {t: priced[t][:, i * S:(i + 1) * S]},
                                          names[:, i * S:(i + 1) * S], 1, chosen[:, i * S:(i + 1) * S])]
