"""Where OpenMPI puts each rank (``--map-by core|socket|node``) and which channel joins two ranks.

The machine is plain data (config ``machine``): ``nodes``, ``sockets_per_node``,
``cores_per_socket``, ``cores_per_l3`` (ranks on one L3/CCX talk over the ``cache`` channel) and
``numa_per_socket``. Placement follows OpenMPI 4.1 (../shared/reference/openmpi-and-osu-facts.md):

* ``core``:   ranks fill cores in order, socket after socket, node after node; bound to a core.
* ``socket``: ranks alternate over the sockets of the first node until it is full, then the next
  node; bound to a whole socket, so the core inside the socket is NOT defined.
* ``node``:   ranks alternate over nodes; on a node the j-th rank is bound to the NUMA domain with
  the fewest ranks (round robin over the node's NUMA domains, ``numa_per_socket`` per socket);
  with P <= nodes every rank is alone on its node.

Channel of a pair: ``node`` across nodes, ``socket`` across sockets of a node, ``cache`` for two
ranks pinned to cores of one L3, otherwise ``core``. Decision for ranks that are not pinned to
a core (map-by socket; map-by node): two of them in one socket talk over the ``core`` channel,
since the OS scheduler has no reason to keep them in one CCX (3 of the 63 other cores of a
64-core socket share a CCX with a given core) — ``unpinned_channel`` makes that a choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

MAPPINGS = ("core", "socket", "node")

# The unit a mapping policy fills one after another (its count grows with P), per OpenMPI's
# semantics: map-by core fills sockets, map-by socket fills nodes, map-by node spreads over all.
FILL_LEVEL = {"core": "socket", "socket": "node", "node": None}


def cores_per_node(machine: dict) -> int:
    return machine["sockets_per_node"] * machine["cores_per_socket"]


def total_cores(machine: dict) -> int:
    return machine["nodes"] * cores_per_node(machine)


def one_l3_per_socket(machine: dict) -> bool:
    """Whether one L3 serves each whole socket: two cores of one socket then share it (the cache
    channel), whatever a log calls the pair."""
    return int(machine["cores_per_l3"]) >= int(machine["cores_per_socket"])


def place(P: int, mapping: str, machine: dict) -> pd.DataFrame:
    """One row per rank 0..P-1: ``node``, ``socket`` (global id), ``core`` (global id or -1 when
    not pinned to a core), ``l3`` (global L3 id or -1), ``pinned``."""
    import pandas as pd  # here: the workflow imports this module when it is parsed

    return pd.DataFrame(place_arrays(P, mapping, machine))


def place_arrays(P: int, mapping: str, machine: dict) -> dict[str, np.ndarray]:
    """:func:`place` as a dict of arrays (no DataFrame: the model calls it for every P)."""
    if mapping not in MAPPINGS:
        raise ValueError(f"mapping {mapping!r}: expected one of {', '.join(MAPPINGS)}")
    n, spn, cps = machine["nodes"], machine["sockets_per_node"], machine["cores_per_socket"]
    cpn = spn * cps
    if P < 1 or P > n * cpn:
        raise ValueError(f"P = {P}: expected 1 <= P <= {n * cpn} cores of the machine")
    r = np.arange(P)
    if mapping == "core":
        node = r // cpn
        socket_in_node = (r % cpn) // cps
        core_in_socket = r % cps
        pinned = np.ones(P, bool)
    elif mapping == "socket":
        node = r // cpn
        socket_in_node = (r % cpn) % spn
        core_in_socket = np.full(P, -1)
        pinned = np.zeros(P, bool)
    else:
        node = r % n
        j = r // n
        if P <= n:  # one rank per node: bound to a core
            socket_in_node, core_in_socket, pinned = np.zeros(P, int), np.zeros(P, int), np.ones(P, bool)
        else:
            numa = machine.get("numa_per_socket", 1)
            socket_in_node = (j % (spn * numa)) // numa
            core_in_socket = np.full(P, -1)
            pinned = np.zeros(P, bool)
    socket = node * spn + socket_in_node
    core = np.where(pinned, socket * cps + core_in_socket, -1)
    l3 = np.where(pinned, core // machine["cores_per_l3"], -1)
    return {"rank": r, "node": node, "socket": socket, "core": core, "l3": l3, "pinned": pinned}


LEVELS = ("cache", "core", "socket", "node")


def channel_codes(ranks, a, b, unpinned_channel: str = "core") -> np.ndarray:
    """Channel of each pair (a[i], b[i]) of rank indices as an index into :data:`LEVELS`.

    ``ranks`` is a :func:`place` frame or a dict of its columns as arrays."""
    a, b = np.asarray(a), np.asarray(b)
    node, socket = np.asarray(ranks["node"]), np.asarray(ranks["socket"])
    l3, pinned = np.asarray(ranks["l3"]), np.asarray(ranks["pinned"])
    both = pinned[a] & pinned[b]
    same_socket = np.where(both, np.where(l3[a] == l3[b], 0, 1), LEVELS.index(unpinned_channel))
    return np.where(node[a] != node[b], 3, np.where(socket[a] != socket[b], 2, same_socket))


def laid_end_to_end(placements: list) -> dict[str, np.ndarray]:
    """Several placements (:func:`place_arrays` of one P each) as one, rank r of the i-th at the sum
    of the sizes before it + r: the columns :func:`channel_codes` reads (node, socket, l3, pinned)."""
    return {column: np.concatenate([np.asarray(r[column]) for r in placements]) if placements else np.zeros(0)
            for column in ("node", "socket", "l3", "pinned")}


def channels_used(machine: dict, mappings, unpinned_channel: str = "core") -> dict[str, str]:
    """Every channel two ranks of ``machine`` talk over under ``mappings`` at some P (the rules of
    :func:`channel_codes`), each with the first pair of ranks that does, as text: what the model
    needs a point-to-point fit of. A rank's place does not depend on P except under map-by node
    below one rank per node, so the placements of the whole machine (and of one rank per node) hold
    every pair; the nodes are alike, so two of them hold every channel of many."""
    found: dict[str, str] = {}
    machine = {**machine, "nodes": min(machine["nodes"], 2)}
    total = total_cores(machine)
    for mapping in mappings:
        for P in sorted({total, min(machine["nodes"], total)} - {1}):
            r = place_arrays(P, mapping, machine)
            for a in range(1, P):  # each channel first met by a pair (i, a), i < a, in rank order
                codes = channel_codes(r, np.arange(a), np.full(a, a), unpinned_channel)
                for c in np.unique(codes):
                    i = int(np.flatnonzero(codes == c)[0])
                    found.setdefault(LEVELS[c], f"ranks {i} and {a} of P = {P} under --map-by {mapping}")
                if len(found) == len(LEVELS):
                    return found
    return found


def same_placements(machine: dict, other: dict, mapping: str, other_mapping: str | None = None) -> bool:
    """Whether ``other`` places every P that both machines hold under ``other_mapping`` (``mapping``
    where None) as ``machine`` does under ``mapping`` (node, socket, core and L3 of every rank, and
    whether it is pinned): then what was measured on one at such a P holds for the other. Map-by
    core and socket fill node after node, so another node count changes nothing up to the smaller
    machine's cores; map-by node spreads over every node, so it changes every P > 1. Two mappings
    of one machine placed alike are one placement measured twice (map-by node on one node of one
    NUMA domain per socket spreads the ranks over the sockets as map-by socket does); two that
    differ mostly do so at P = 2."""
    keys = ("node", "socket", "core", "l3", "pinned")
    for P in range(2, min(total_cores(machine), total_cores(other)) + 1):
        a, b = place_arrays(P, mapping, machine), place_arrays(P, other_mapping or mapping, other)
        if any(not np.array_equal(a[k], b[k]) for k in keys):
            return False
    return True


def channels_between(ranks: pd.DataFrame, a, b, unpinned_channel: str = "core") -> np.ndarray:
    """Channel name for each pair (a[i], b[i]) of rank indices into ``ranks`` (from :func:`place`)."""
    return np.asarray(LEVELS, dtype=object)[channel_codes(ranks, a, b, unpinned_channel)]


def active_units(P, mapping: str, machine: dict) -> np.ndarray:
    """How many units of the level the mapping fills one after another hold ranks at each P.

    map-by core: active sockets, ceil(P / cores_per_socket); map-by socket: active nodes,
    ceil(P / cores per node); map-by node: 1 (ranks are spread over every node from the start).
    These are the bins of the segmented regression (study eq. 12).
    """
    P = np.asarray(P)
    level = FILL_LEVEL[mapping]
    if level is None:
        return np.ones(P.shape, dtype=int)
    width = machine["cores_per_socket"] if level == "socket" else cores_per_node(machine)
    return np.ceil(P / width).astype(int)


def full_node(P, mapping, machine: dict) -> np.ndarray:
    """Whether some node holds a rank on every one of its cores, at each ``P`` (under ``mapping``,
    one or one per P): no core is left for the operating system, whose work then delays a rank.
    Map-by core and socket fill a node before the next, so P >= cores per node; map-by node deals
    ranks out in turn, so P > nodes x (cores per node - 1)."""
    P = np.asarray(P)
    mapping = np.broadcast_to(np.asarray(mapping, dtype=object), P.shape)
    cpn = cores_per_node(machine)
    return np.where(mapping == "node", P > machine["nodes"] * (cpn - 1), P >= cpn)


def fill_width(mapping: str, machine: dict) -> int | None:
    """Ranks per unit of the fill level (None for map-by node)."""
    level = FILL_LEVEL[mapping]
    if level is None:
        return None
    return machine["cores_per_socket"] if level == "socket" else cores_per_node(machine)


def fill_boundaries(machine: dict, mapping: str) -> list[int]:
    """P values after which a new socket (map-by core) or node (map-by socket) starts to fill."""
    width = fill_width(mapping, machine)
    if width is None:
        return []
    return list(range(width, total_cores(machine), width))


def machine_label(machine: dict) -> str:
    """The machine's short name for titles and link names: config ``machine.name`` up to " (" ."""
    return machine["name"].split(" (")[0]
