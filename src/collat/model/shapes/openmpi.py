"""What OpenMPI 4.1's coll/tuned component runs: collective ids, its fixed decision rules, and the
shape each forced algorithm runs (with its fall-back below a message count).

Shared by the model (which prices what OpenMPI would run, :mod:`collat.model`), the selection stage
and its rules file (:mod:`collat.selection.choice`, :mod:`collat.selection.rulesfile`). The rules and shapes are
data (config ``model.openmpi``: ``default_rules`` and ``trees``, checked against OpenMPI's sources
in ``tests/test_openmpi.py``); this module only reads them the way OpenMPI does.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd

from collat import InputError

COLLECTIVE_IDS = {"bcast": 7, "reduce": 11}  # BCAST, REDUCE in coll_base_functions.h
ALGORITHM_COUNT = {7: 10, 11: 8}  # ids 0 .. n - 1 exist (openmpi-and-osu-facts.md)
COLLECTIVE_COUNT = 22  # COLLCOUNT of OpenMPI 4.1: ids 0 .. 21


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


def tree_spec(specs, operation: str, algorithm: int) -> dict | None:
    """The shape entry (config ``model.openmpi.trees`` or ``model.paper.algorithms``) of one algorithm."""
    for s in specs:
        if s["operation"] == operation and int(s["algorithm"]) == int(algorithm):
            return s
    return None


def as_run(spec: dict, by_default: bool) -> dict:
    """The shape OpenMPI runs for ``spec``: when the fixed rules pick the chain, they pass fan-out 0,
    which ``ompi_coll_base_bcast_intra_chain`` turns into one chain (a pipeline)."""
    if by_default and spec.get("tree") == "chain":
        return {**spec, "fanout": 1}
    return spec


def takes_segments(spec: dict) -> bool:
    """Whether OpenMPI cuts the messages of this shape into segments of
    ``coll_tuned_<op>_algorithm_segmentsize`` bytes (the shape says ``segmented``) and the model
    prices them so: a tree (a schedule's segments, the split binary tree's, are not priced)."""
    return bool(spec.get("segmented")) and "tree" in spec


def receive_order(shape: dict, operation: str) -> dict:
    """The shape with the order in which its parents take their children, where OpenMPI's algorithm
    has its own: the linear reduce (``ompi_coll_base_reduce_intra_basic_linear``) receives from rank
    P - 1 down to rank 1 (``order: descending``); every other tree in its builder's order."""
    if operation == "reduce" and shape.get("tree") == "linear":
        return {**shape, "order": "descending"}
    return shape


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


# an implementation and version as the ingest names them (collat.ingest.osu.mpi_version, a pattern's
# or manifest's mpi field): openmpi-4.1.5, mpich-4.0.2, mvapich2-2.3.7, intelmpi-2021.6
_NAMED_MPI = re.compile(r"^(openmpi|mpich|mvapich2|intelmpi)-(\d+)\.(\d+)", re.I)


def check_mpi_version(collective: pd.DataFrame, version: str | None, name: Callable[[str], str] = str) -> None:
    """The collective runs whose ``mpi`` names an implementation and version (``openmpi-4.1.5``) ran
    the OpenMPI ``version`` (major.minor; config ``model.openmpi.version``) whose algorithms, trees
    and fixed decision rules the model applies; else one line naming a log. ``version`` None: the
    config states the trees and rules itself. A label of another form says nothing and passes.
    ``name``: a log's source as the user knows it."""
    if version is None or "mpi" not in collective or collective["mpi"].isna().all():
        return
    named = collective.dropna(subset=["mpi"]).drop_duplicates("mpi")
    for mpi, source in zip(named["mpi"].astype(str), named["source"].astype(str)):
        m = _NAMED_MPI.match(mpi)
        if m is None or (m[1].lower() == "openmpi" and f"{m[2]}.{m[3]}" == str(version)):
            continue
        raise InputError(name(source), None, f"runs of OpenMPI {version}, whose trees and fixed decision rules the model "
                         "applies (config model.openmpi.version), or config model.openmpi.trees and "
                         "model.openmpi.default_rules stated for the MPI that ran them", mpi)
