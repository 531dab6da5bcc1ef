"""The prediction grid: every mode x operation x algorithm x mapping x P x size.

A mode (:class:`~collat.model.paper_mode.PaperMode`, :class:`~collat.model.openmpi_mode.OpenMPIMode`,
:class:`~collat.model.calibrated_mode.CalibratedMode`) has ``name``, ``costs`` (per operation),
``options``, ``algorithms(operation)`` and ``curve(operation, algorithm, mapping, P_values,
placements)``, which returns the rows of :func:`curve_frame` for every size of its costs.
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
    from ..placement import total_cores

    cores = total_cores(machine)
    sizes = collective["size"].unique() if len(collective) else 2 ** np.arange(0, 21)
    sizes = np.union1d(np.asarray(sizes, dtype=np.int64), np.asarray(extra_sizes, dtype=np.int64))
    return sizes, range(2, cores + 1, step), cores - 1


def curve_frame(Pv, sizes, targets: dict, names, segments, runs) -> pd.DataFrame:
    """One curve's rows: P, size, target, predicted, tree, segments, runs (the algorithm OpenMPI ran;
    differs from the algorithm asked for where that is the default, 0), one block per target."""
    T, S = len(Pv), len(sizes)
    frames = []
    for target, value in targets.items():
        frames.append(pd.DataFrame({
            "P": np.repeat(Pv, S), "size": np.tile(np.asarray(sizes, dtype=np.int64), T), "target": target,
            "predicted": value.ravel(), "tree": names.ravel(), "segments": segments, "runs": runs.ravel(),
        }))
    return pd.concat(frames, ignore_index=True)


def predict_all(modes: list, placements, algorithms: dict, P_values, processes: int = 1) -> pd.DataFrame:
    """Predictions of every mode for every operation, algorithm it models, mapping of its options,
    P of ``P_values`` and size of its costs (:data:`PREDICTION_COLUMNS`); ``placements`` is a
    :class:`~collat.model.forest.Placements` of the machine, ``algorithms`` config ``algorithms``
    (operation -> [{id, name}]). The curves are priced in up to ``processes`` worker processes
    (the same table in the same order)."""
    from ..runner import fork_map

    curves = [(mode, operation, alg, mapping) for mode in modes for operation in mode.costs
              for alg in mode.algorithms(operation) for mapping in mode.options.mappings]

    def price(i):
        mode, operation, alg, mapping = curves[i]
        curve = mode.curve(operation, alg, mapping, P_values, placements)
        if curve.empty:
            return curve
        names = {int(a["id"]): a["name"] for a in algorithms[operation]}
        return curve.assign(mode=mode.name, operation=operation, algorithm=alg,
                            algorithm_name=names.get(alg, f"alg{alg}"), mapping=mapping)

    frames = [f for f in fork_map(price, len(curves), processes) if not f.empty]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in PREDICTION_COLUMNS})
    out = pd.concat(frames, ignore_index=True)
    for col in ("mode", "operation", "algorithm_name", "mapping", "target"):
        out[col] = out[col].astype("string")
    out["runs"] = out["runs"].astype("int64")
    out["tree"] = out["tree"].astype("string")
    return out[PREDICTION_COLUMNS]


def what_if_machine(machine: dict, entry: dict, index: int, mappings, unpinned_channel: str,
                    fitted_channels) -> tuple[dict, list[int]]:
    """(the machine, its P values) of config ``model.what_if[index]`` (``entry``): ``machine`` with
    ``entry["nodes"]`` nodes, at :func:`what_if_P`. One line naming the key when a channel of the new
    machine has no point-to-point fit (``fitted_channels``) or a P exceeds its cores."""
    from .. import InputError
    from ..placement import channels_used, total_cores

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
