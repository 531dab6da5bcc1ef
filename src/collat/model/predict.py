"""The prediction grid: every mode x operation x algorithm x mapping x P x size.

A mode (:class:`~collat.model.paper_mode.PaperMode`, :class:`~collat.model.openmpi_mode.OpenMPIMode`,
:class:`~collat.model.calibrated_mode.CalibratedMode`) has ``name``, ``costs`` (per operation),
``options``, ``algorithms(operation)``, ``blocks(operation, algorithm, mapping, P_values,
placements, shapes)``, which returns the column blocks of :func:`curve_blocks` for every size of its
costs (``shapes``: a dict the grid keeps per mode, where it may keep what several curves price
alike), and ``curve`` (the same arguments but ``shapes``), those rows as a frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PREDICTION_COLUMNS = ["mode", "operation", "algorithm", "algorithm_name", "mapping", "P", "size", "target",
                      "predicted", "tree", "segments", "runs"]


def grid_axes(collective: pd.DataFrame, machine: dict, step: int, extra_sizes=()) -> tuple[np.ndarray, range, int]:
    """The grid every mode is priced on: (sizes: every measured size, or 1 B to 1 MiB in powers of
    two without measurements, and ``extra_sizes`` (config ``model.extra_sizes``); P: 2 to the
    machine's cores, every ``step`` (config ``model.grid_step``); the most receivers of one fan-out,
    cores - 1)."""
    from collat.model.placement import total_cores

    cores = total_cores(machine)
    sizes = collective["size"].unique() if len(collective) else 2 ** np.arange(0, 21)
    sizes = np.union1d(np.asarray(sizes, dtype=np.int64), np.asarray(extra_sizes, dtype=np.int64))
    return sizes, range(2, cores + 1, step), cores - 1


def curve_blocks(Pv, sizes, targets: dict, names, segments, runs) -> list[dict]:
    """One curve's rows as column arrays, one block per target: P, size, target (one string per
    block), predicted, tree, segments (one number per block), runs (the algorithm OpenMPI ran;
    differs from the algorithm asked for where that is the default, 0). The rows of :func:`curve_frame`."""
    T, S = len(Pv), len(sizes)
    P, size = np.repeat(np.asarray(Pv, dtype=np.int64), S), np.tile(np.asarray(sizes, dtype=np.int64), T)
    return [{"P": P, "size": size, "target": target, "predicted": np.asarray(value, dtype=float).ravel(),
             "tree": np.asarray(names, dtype=object).ravel(), "segments": segments, "runs": np.asarray(runs).ravel()}
            for target, value in targets.items()]


def blocks_frame(blocks: list[dict]) -> pd.DataFrame:
    """The rows of :func:`curve_blocks` blocks, one block after the other."""
    if not blocks:
        return pd.DataFrame()
    n = [len(b["predicted"]) for b in blocks]
    return pd.DataFrame({
        "P": np.concatenate([b["P"] for b in blocks]), "size": np.concatenate([b["size"] for b in blocks]),
        "target": np.repeat(np.array([b["target"] for b in blocks], dtype=object), n),
        "predicted": np.concatenate([b["predicted"] for b in blocks]),
        "tree": np.concatenate([b["tree"] for b in blocks]),
        "segments": np.repeat(np.array([b["segments"] for b in blocks]), n),
        "runs": np.concatenate([b["runs"] for b in blocks])})


def curve_frame(Pv, sizes, targets: dict, names, segments, runs) -> pd.DataFrame:
    """One curve's rows (:func:`curve_blocks`) as a frame."""
    return blocks_frame(curve_blocks(Pv, sizes, targets, names, segments, runs))


def _strings(values: list, n: list[int]) -> pd.arrays.ArrowStringArray:
    """``values[i]`` repeated ``n[i]`` times as a pandas string array."""
    labels, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    return _decoded(np.repeat(codes.astype(np.int32), n), labels.tolist())


def _decoded(codes: np.ndarray, labels: list[str]) -> pd.arrays.ArrowStringArray:
    """``labels[codes]`` as a pandas string array, built from a dictionary array (no Python string
    per row)."""
    import pyarrow as pa

    array = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(labels))
    return pd.arrays.ArrowStringArray(array.cast(pa.large_string()))


def _coded(parts: list[np.ndarray]) -> pd.arrays.ArrowStringArray:
    """Object arrays of a few distinct strings, end to end, as a pandas string array (each part
    factorized on its own, then one dictionary array)."""
    labels: dict[str, int] = {}
    codes = []
    for part in parts:
        local, uniques = pd.factorize(part, use_na_sentinel=False)
        codes.append(np.array([labels.setdefault(str(u), len(labels)) for u in uniques], dtype=np.int32)[local])
    return _decoded(np.concatenate(codes), list(labels))


def predict_all(modes: list, placements, algorithms: dict, P_values, processes: int = 1,
                segsize: int | None = None) -> pd.DataFrame:
    """Predictions of every mode for every operation, algorithm it models, mapping of its options,
    P of ``P_values`` and size of its costs (:data:`PREDICTION_COLUMNS`); ``placements`` is a
    :class:`~collat.model.forest.Placements` of the machine, ``algorithms`` config ``algorithms``
    (operation -> [{id, name}]). With ``segsize`` (0 included), only the forced algorithms OpenMPI
    cuts into segments, with segments of that many bytes (0: whole messages). The curves are priced
    in up to ``processes`` worker processes (the same table in the same order)."""
    from collat.runner import fork_map

    curves = [(mode, operation, alg, mapping) for mode in modes for operation in mode.costs
              for alg in mode.algorithms(operation) for mapping in mode.options.mappings
              if segsize is None or _segmented(mode.options, operation, alg)]

    shapes = {id(mode): {} for mode in modes}  # each mode's shapes priced at every P, kept for this grid

    def price(i):
        mode, operation, alg, mapping = curves[i]
        if segsize is None:  # whole messages: every mode (the paper mode prices no segments)
            return mode.blocks(operation, alg, mapping, P_values, placements, shapes[id(mode)])
        return mode.blocks(operation, alg, mapping, P_values, placements, shapes[id(mode)], segsize=segsize)

    parts = fork_map(price, len(curves), processes)
    meta = [(mode.name, operation, int(alg), {int(a["id"]): a["name"] for a in algorithms[operation]}.get(alg, f"alg{alg}"),
             mapping) for mode, operation, alg, mapping in curves]
    blocks = [(m, b) for m, part in zip(meta, parts) for b in part if len(b["predicted"])]
    if not blocks:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in PREDICTION_COLUMNS})
    n = [len(b["predicted"]) for _, b in blocks]
    columns = {col: _strings([m[j] for m, _ in blocks], n)
               for j, col in enumerate(("mode", "operation", "algorithm", "algorithm_name", "mapping")) if j != 2}
    columns["algorithm"] = np.repeat(np.array([m[2] for m, _ in blocks], dtype=np.int64), n)
    columns["target"] = _strings([b["target"] for _, b in blocks], n)
    for col in ("P", "size", "predicted"):
        columns[col] = np.concatenate([b[col] for _, b in blocks])
    columns["tree"] = _coded([b["tree"] for _, b in blocks])
    columns["segments"] = np.repeat(np.array([b["segments"] for _, b in blocks]), n)
    columns["runs"] = np.concatenate([b["runs"] for _, b in blocks]).astype("int64")
    return pd.DataFrame({col: columns[col] for col in PREDICTION_COLUMNS})


def _segmented(options, operation: str, algorithm: int) -> bool:
    """A forced algorithm whose tree OpenMPI cuts into segments (:func:`collat.model.shapes.openmpi.takes_segments`)."""
    from collat.model.shapes.openmpi import takes_segments, tree_spec

    spec = tree_spec(options.openmpi.trees, operation, algorithm) if algorithm else None
    return spec is not None and takes_segments(spec)


def what_if_machine(machine: dict, entry: dict, index: int, mappings, unpinned_channel: str,
                    fitted_channels) -> tuple[dict, list[int]]:
    """(the machine, its P values) of config ``model.what_if[index]`` (``entry``): ``machine`` with
    ``entry["nodes"]`` nodes, at :func:`what_if_P`. One line naming the key when a channel of the new
    machine has no point-to-point fit (``fitted_channels``) or a P exceeds its cores."""
    from collat import InputError
    from collat.model.placement import channels_used, total_cores

    out = {**machine, "nodes": int(entry["nodes"])}
    for channel, pair in channels_used(out, mappings, unpinned_channel).items():
        if channel not in set(fitted_channels):
            raise InputError(f"config model.what_if[{index}].nodes", None,
                             f"a machine whose channels were measured: {pair} talk over {channel!r}, which no "
                             f"osu_latency log measured (results/pt2pt/hockney.csv: {sorted(set(fitted_channels))})",
                             out["nodes"])
    cores = total_cores(out)
    if any(int(P) > cores for P in entry.get("P") or []):
        raise InputError(f"config model.what_if[{index}].P", None, f"P up to the {cores} cores of {out['nodes']} "
                         f"node(s)", sorted(int(P) for P in entry["P"] if int(P) > cores))
    return out, what_if_P(cores, entry.get("P"))


def what_if_P(cores: int, given=None) -> list[int]:
    """The P values a what-if machine is priced at (config ``model.what_if[].P``): those given, or
    the powers of two and three times them from 2 up to ``cores``."""
    if given:
        return sorted({int(p) for p in given})
    return sorted({p for k in range(1, cores.bit_length() + 1) for p in (2 ** k, 3 * 2 ** (k - 1))
                   if 2 <= p <= cores})
