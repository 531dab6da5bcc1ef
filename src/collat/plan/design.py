"""Which OSU launches a machine allows, and the first design for a machine nobody measured.

A launch is one OSU invocation: it gives every message size at once. Three kinds:

* ``collective``: osu_bcast / osu_reduce with one algorithm forced (0: OpenMPI's fixed rules),
  P ranks under ``--map-by <mapping>``: what the model is fitted on and the selection chooses among;
* ``pt2pt``: osu_latency between core 0 and one core of each channel (the Hockney fits);
* ``nbft``: a flat tree (algorithm 1) whose receivers all sit on one channel (the NBFT lines).

The P worth measuring are the machine's boundaries under each mapping (where ranks start to fill
another L3, socket or node, and one past it: the curves bend there) and a log grid between them
(powers of two and three times powers of two); the first design takes, curve by curve, the ends
and the boundaries first, then the P that halve the widest gap in log P (:func:`first_design`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collat import UserError
from collat.model.placement import cores_per_node, total_cores

LAUNCH = ["operation", "algorithm", "mapping", "P"]  # one collective launch
COLUMNS = ["kind", "benchmark", "operation", "algorithm", "mapping", "channel", "P", "receiver"]


def boundaries(machine: dict, mapping: str) -> list[int]:
    """P at which the ranks of ``--map-by mapping`` start to fill another unit, and one past it:
    an L3, a socket, a node (map-by core); every socket of a node holding one rank, a node full
    (map-by socket); every node holding one rank, every NUMA domain holding one (map-by node); and
    the whole machine."""
    l3, cps, spn, n = (int(machine[k]) for k in ("cores_per_l3", "cores_per_socket", "sockets_per_node", "nodes"))
    cpn, total = cores_per_node(machine), total_cores(machine)
    if mapping == "core":
        widths = [l3, cps, cpn]
    elif mapping == "socket":
        widths = [spn, cpn]
    else:
        widths = [n, n * spn * int(machine.get("numa_per_socket", 1))]
    out = {total}
    for w in widths:
        out |= {w, w + 1}
    return sorted(p for p in out if 2 <= p <= total)


def candidate_P(machine: dict, mapping: str, every_below: int = 32) -> np.ndarray:
    """The P a collective launch under ``mapping`` may take: every P up to ``every_below`` (and
    the machine's cores), then powers of two and three times powers of two, the
    :func:`boundaries`, and under map-by core and socket the same two boundaries on every power of
    two of nodes."""
    total = total_cores(machine)
    k = np.arange(1, int(np.log2(total)) + 2)
    grid = set(range(2, min(every_below, total) + 1)) | set((2 ** k).tolist()) | set((3 * 2 ** (k - 1)).tolist())
    grid |= set(boundaries(machine, mapping))
    if mapping in ("core", "socket"):
        cpn = cores_per_node(machine)
        nodes = 2 ** np.arange(0, int(np.log2(machine["nodes"])) + 1)
        grid |= set((nodes * cpn).tolist()) | set((nodes * cpn + 1).tolist())
    return np.array(sorted(p for p in grid if 2 <= p <= total), dtype=int)


def collective_candidates(machine: dict, algorithms: dict, mappings, every_below: int = 32) -> pd.DataFrame:
    """Every collective launch (operation, algorithm, mapping, P) of ``algorithms`` (config
    ``algorithms``: {operation: [{id, name}]}) under ``mappings`` at the :func:`candidate_P`."""
    rows = [(op, int(a["id"]), m, int(P)) for op, entries in algorithms.items() for a in entries for m in mappings
            for P in candidate_P(machine, m, every_below)]
    return pd.DataFrame(rows, columns=LAUNCH)


def _order(P: np.ndarray, first: list[int]) -> np.ndarray:
    """``P`` (sorted, distinct) in the order a design takes them: the nearest to each of ``first``
    (ends and boundaries) in turn, then each time the P nearest the middle, in log P, of the widest
    gap between those taken (ties: the smaller P)."""
    logP = np.log2(P)
    taken: list[int] = []
    for f in first:
        i = int(np.argmin(np.abs(logP - np.log2(f))))
        if i not in taken:
            taken.append(i)
    while len(taken) < len(P):
        t = np.sort(np.array(taken))
        left = np.searchsorted(logP[t], logP, side="right") - 1
        lo = np.where(left >= 0, logP[t][np.clip(left, 0, None)], -np.inf)
        hi = np.where(left + 1 < len(t), logP[t][np.clip(left + 1, 0, len(t) - 1)], np.inf)
        gap = np.minimum(logP - lo, hi - logP)  # distance to the nearest taken P
        gap[t] = -1.0
        taken.append(int(np.argmax(gap)))
    return P[np.array(taken, dtype=int)]


def first_design(candidates: pd.DataFrame, machine: dict, per_curve: int) -> pd.DataFrame:
    """The first round for a machine with no collective measurement: on every curve (operation,
    algorithm, mapping) of ``candidates`` (:data:`LAUNCH` columns), ``per_curve`` P in the order
    of :func:`_order`: the smallest and largest P, the mapping's :func:`boundaries` (fill of a node
    first, then of a socket, then of an L3), then the middles of the widest gaps in log P. Columns
    :data:`LAUNCH` and ``reason``."""
    rows = []
    for (op, alg, mapping), g in candidates.groupby(["operation", "algorithm", "mapping"], sort=True):
        P = np.unique(g["P"].to_numpy(int))
        ends = [int(P[0]), int(P[-1])]
        inner = [b for b in reversed(boundaries(machine, mapping)) if P[0] < b < P[-1]]
        order = _order(P, ends + inner)
        named = {int(P[np.argmin(np.abs(np.log2(P) - np.log2(f)))]) for f in inner}
        for i, p in enumerate(order[:per_curve]):
            why = ("an end of the curve" if i < 2 else
                   "a boundary of the placement" if int(p) in named else "the middle of the widest gap in log P")
            rows.append((op, int(alg), mapping, int(p), f"first design: {why}"))
    return pd.DataFrame(rows, columns=LAUNCH + ["reason"])


def channel_ranks(machine: dict, channel: str, count: int) -> np.ndarray:
    """Global core ids of up to ``count`` receivers that talk to core 0 over ``channel`` (cores in
    core 0's L3 for cache, in its socket outside that L3 for core (the socket's other cores where
    one L3 spans it), on the next socket for socket, on the next node for node), in core order;
    fewer where the machine has fewer."""
    l3, cps, cpn = int(machine["cores_per_l3"]), int(machine["cores_per_socket"]), cores_per_node(machine)
    # one L3 per socket: the socket's other cores are its core channel (as a user's logs name them)
    spans = {"cache": (1, l3), "core": (l3, cps) if l3 < cps else (1, cps), "socket": (cps, 2 * cps if machine["sockets_per_node"] > 1 else cps),
             "node": (cpn, 2 * cpn if machine["nodes"] > 1 else cpn)}
    lo, hi = spans[channel]
    return np.arange(lo, min(hi, lo + count))


def model_launches(machine: dict, channels, operations, nbft_points: int = 4) -> pd.DataFrame:
    """The point-to-point and NBFT launches the model stage needs for ``channels`` (config
    ``channels``): per channel one osu_latency from core 0 to the first core of the channel, and
    per operation and channel a flat tree at ``nbft_points`` P from 2 to the most receivers the
    channel holds, spread in log P (the NBFT lines are straight in P - 1). Columns :data:`COLUMNS`."""
    rows = []
    for ch in channels:
        recv = channel_ranks(machine, ch, total_cores(machine))
        if not len(recv):
            raise UserError(f"config key channels: {ch} names no pair of cores of the machine "
                            f"({machine['name']}: {machine['cores_per_l3']} cores per L3, "
                            f"{machine['cores_per_socket']} per socket, {machine['sockets_per_node']} sockets per "
                            f"node, {machine['nodes']} nodes); expected channels it has")
        rows.append(("pt2pt", "osu_latency", None, None, None, ch, 2, int(recv[0])))
        top = len(recv) + 1
        Ps = np.unique(np.round(np.geomspace(2, top, min(nbft_points, top - 1))).astype(int))
        for op in operations:
            rows += [("nbft", f"osu_{op}", op, 1, None, ch, int(P), None) for P in Ps]
    return pd.DataFrame(rows, columns=COLUMNS)


def ranks_of(machine: dict, launch) -> list[tuple[int, int]]:
    """(node, core within the node) of each rank of a pt2pt or NBFT launch (root at core 0, the
    receivers from :func:`channel_ranks`), for a rankfile; a collective launch is placed by
    ``--map-by`` instead (:func:`collat.model.placement.place_arrays` says where)."""
    if launch["kind"] == "pt2pt":
        cores = [0, int(launch["receiver"])]
    elif launch["kind"] == "nbft":
        cores = [0] + channel_ranks(machine, launch["channel"], int(launch["P"]) - 1).tolist()
    else:
        raise ValueError(f"a {launch['kind']} launch is placed by --map-by, not by a rankfile")
    cpn = cores_per_node(machine)
    return [(c // cpn, c % cpn) for c in cores]


def nodes_spanned(machine: dict, kind: str, mapping, P: int, channel=None) -> int:
    """How many nodes a launch occupies (what it costs in node-seconds per second): map-by core and
    socket fill node after node, map-by node spreads over min(P, nodes); a pt2pt or NBFT launch
    spans two nodes on the node channel, else one."""
    if kind != "collective":
        return 2 if channel == "node" else 1
    if mapping == "node":
        return min(int(P), int(machine["nodes"]))
    return -(-int(P) // cores_per_node(machine))
