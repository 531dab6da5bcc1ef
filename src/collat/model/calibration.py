"""The calibrated mode's fit: channel costs fitted on collective measurements (rule model_calibrate).

The calibrated mode (:mod:`collat.model.calibrated_mode`) keeps the openmpi mode's shapes, their
placement on the machine and their evaluation (critical path, per-rank times, the shared node link)
and replaces the measured costs by a small parameter vector per (operation, target), listed there.
The parameters start at the point-to-point/NBFT values (:func:`start`) and are fitted by robust
nonlinear least squares on log latency (scipy's ``least_squares``, soft-L1 loss) to calibration
cells, with a weak Gaussian prior on each log parameter around its start, so that a channel no
calibration cell exercises keeps its measured cost (:func:`calibrate`).

It is a fitted model: :mod:`collat.model.validation` scores it on cells outside its calibration data
(:func:`fit_predict` refits it on each split's training part).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from collat.model.calibrated_mode import (CONCURRENT, FAULT, FORWARD, FULL, MEMORY, MMAP_THRESHOLD, OVERHEAD,
                                          PARAMETERS, RELEASE, SHAPE, SKEW, WAITS, costs_from_table, fanout_shape,
                                          keeps_shape, parametric_costs, physics_price, rendezvous_forms,
                                          shares_rendezvous, slowed_operations)
from collat.model.bend import inner_fold_errors, weights_by_operation
from collat.model.costs import ChannelCosts, full_node_slowdown
from collat.model.forest import Placements
from collat.model.placement import cores_per_node, full_node
from collat.model.openmpi_mode import plan_shapes, predict_arrays, price_plans
from collat.model.options import ModelOptions
from collat.model.transfer import foreign, transfer_weight, transferred

CALIBRATION_COLUMNS = ["operation", "target", "channel", "parameter", "value", "start", "fitted", "se_log", "low",
                       "high", "cells", "rms_log_residual"]
_FLOOR = {"latency_us": 1e-3, "us_per_byte": 1e-7, "gap_us": 1e-3, "gap_us_per_byte": 1e-7, "gap_us_small": 1e-3,
          OVERHEAD: 1e-2, "wait_eager": 1e-3, "wait_rendezvous": 1e-3, MEMORY: 1e-8, FORWARD: 1e-3, SKEW: 1e-4,
          RELEASE: 1e-4, FAULT: 1e-9, FULL: 1.0}
_STEP = 1e-3  # finite-difference step of the Jacobian, in log units
_START = {OVERHEAD: 0.1, MEMORY: 1e-5, FORWARD: 0.05, "wait_eager": 0.05, "wait_rendezvous": 0.9, SKEW: 0.01,
          RELEASE: 0.01, FAULT: 5e-5, FULL: 1.1}  # FAULT: about 0.2 us per 4 KiB page


@dataclass(frozen=True)
class CalibrationOptions:
    """Config ``model.calibrated``, checked by the schema."""

    points_per_curve: int  # P values per (algorithm, mapping) taken into a calibration
    sizes_per_curve: int   # sizes per (algorithm, mapping) taken into a calibration
    loss: str              # least_squares' robust loss
    f_scale: float         # where the loss turns robust, in log units
    prior_sd: float        # sd of the prior on each log parameter around its start
    max_nfev: int          # function evaluations per calibration
    tolerance: float       # least_squares' ftol, xtol and gtol
    targets: tuple[str, ...]  # measured columns calibrated on (one parameter set each)
    nbft_shape: str = "line"  # fan-outs by a line, the measured shape with a line under it, or the closer (auto)
    flat_runs: bool = False  # the NBFT stage's flat trees fitted beside the collective cells

    @classmethod
    def from_config(cls, cfg: dict) -> "CalibrationOptions":
        return cls(int(cfg["points_per_curve"]), int(cfg["sizes_per_curve"]), str(cfg["loss"]),
                   float(cfg["f_scale"]), float(cfg["prior_sd"]), int(cfg["max_nfev"]), float(cfg["tolerance"]),
                   tuple(cfg["targets"]), str(cfg["nbft_shape"]), bool(cfg["flat_runs"]))


@dataclass(frozen=True)
class FanoutShapes:
    """The measured fan-outs' shape of each operation (:func:`collat.model.calibrated_mode.fanout_shape`),
    for a calibration that kept it (:func:`keeps_shape`): ``costs``, the openmpi mode's costs per
    operation at sizes that hold every size priced; ``first``, the start parameters of each
    operation (from the costs at the collective table's sizes, as :func:`calibrate` starts)."""

    costs: dict
    first: dict
    small_limit: float

    def of(self, operation: str, sizes) -> np.ndarray:
        """The shape at ``sizes`` [K, n, S]."""
        return fanout_shape(self.costs[operation], self.first[operation], sizes, self.small_limit)


def fanout_shapes(starting: dict, form: str, small_limit: float, costs: dict | None = None) -> FanoutShapes | None:
    """The :class:`FanoutShapes` of the starting costs' operations (:func:`starting_costs`; ``costs``:
    the openmpi mode's costs at other sizes, a grid's); None where config
    ``model.calibrated.nbft_shape`` (``form``) prices every fan-out by a line."""
    if form == "line":
        return None
    return FanoutShapes(costs if costs is not None else starting,
                        {op: start(c, small_limit) for op, c in starting.items()}, small_limit)


def start(openmpi: ChannelCosts, small_limit: float = -1.0) -> np.ndarray:
    """Starting parameters [K, 5] (:data:`PARAMETERS`) from the openmpi mode's costs (point-to-point
    fits and NBFT lines): intercepts at the smallest size, per-byte terms from the smallest and
    largest; with a ``small_limit`` the gap's intercept ``gap_us`` is taken at the first size above
    it, and ``gap_us_small`` is the gap at the smallest size. The flight's per-byte term
    ``us_per_byte`` is at least the point-to-point fit's slope less the gap's, so that one message
    starts at the point-to-point time (the NBFT lines' intercepts barely grow with size: alone they
    start the per-byte costs 2-3x below the collectives' and a calibration on small sizes, which
    keeps the per-byte terms at their start, underprices large messages)."""
    m = openmpi.sizes
    lo, hi = 0, len(m) - 1
    above = int(np.searchsorted(m, small_limit, side="right"))  # the first size above small_limit
    out = np.empty((len(openmpi.channels), 5))
    for j, line in enumerate((openmpi.alpha, np.maximum(openmpi.beta, 0.0))):
        slope = (line[:, hi] - line[:, lo]) / max(m[hi] - m[lo], 1.0)
        first = above if j == 1 and lo < above <= hi else lo
        intercept = line[:, first] - slope * (m[first] - m[lo])
        out[:, 2 * j] = np.maximum(intercept, _FLOOR[PARAMETERS[2 * j]])
        out[:, 2 * j + 1] = np.maximum(slope, _FLOOR[PARAMETERS[2 * j + 1]])
    out[:, 4] = np.maximum(np.maximum(openmpi.beta[:, lo], 0.0), _FLOOR[PARAMETERS[4]])
    # one message costs the point-to-point time: its flight's per-byte term is at least what the
    # point-to-point fit has beyond the gap's
    p2p_slope = (openmpi.p2p[:, hi] - openmpi.p2p[:, lo]) / max(m[hi] - m[lo], 1.0)
    out[:, 1] = np.maximum(out[:, 1], p2p_slope - out[:, 3])
    return out


def starting_costs(hockney: pd.DataFrame, nbft_fits: pd.DataFrame, nbft_medians: pd.DataFrame, options: ModelOptions,
                   channels: dict, collective: pd.DataFrame, machine: dict) -> tuple[dict, int]:
    """(the openmpi mode's costs per operation at the collective table's sizes, where every
    calibration starts; the largest fan-out of ``machine``, its cores less one): what the rules
    model_calibrate, model_transfer and model_validate calibrate from."""
    from collat.model.costs import openmpi_costs
    from collat.model.placement import total_cores

    receivers = total_cores(machine) - 1
    return openmpi_costs(hockney, nbft_fits, nbft_medians, options.openmpi, channels,
                         np.sort(collective["size"].unique()), receivers), receivers


@dataclass(frozen=True)
class CalibrationStart:
    """What every calibration of a run starts from (rules model_calibrate, model_transfer,
    model_bend): the model's and the calibration's options, the collective table, the openmpi mode's
    costs per operation and the largest fan-out (:func:`starting_costs`), the machine's placements
    and the measured cells of each target the calibration fits."""

    options: ModelOptions
    opts: CalibrationOptions
    collective: pd.DataFrame
    start: dict
    receivers: int
    placements: Placements
    cells: dict

    @classmethod
    def read(cls, collective: str, hockney: str, nbft_fits: str, nbft_medians: str, cfg: dict) -> "CalibrationStart":
        """From the tidy collective table, the pt2pt and nbft stages' files and the config
        (keys machine, channels, model)."""
        from collat.ingest.tidy import read_parquet
        from collat.model.validation import measured_cells

        fits, lines = pd.read_parquet(hockney), pd.read_csv(nbft_fits)
        options = ModelOptions.from_config(cfg["model"], hockney=fits, nbft_fits=lines)
        opts = CalibrationOptions.from_config(cfg["model"]["calibrated"])
        table = read_parquet(collective, "collective")
        start, receivers = starting_costs(fits, lines, pd.read_parquet(nbft_medians), options,
                                          cfg["channels"], table, cfg["machine"])
        return cls(options, opts, table, start, receivers, Placements(cfg["machine"]),
                   {target: measured_cells(table, target) for target in opts.targets})


def grid_shapes(hockney: pd.DataFrame, nbft_fits: pd.DataFrame, nbft_medians: pd.DataFrame, options: ModelOptions,
                channels: dict, collective_sizes, sizes, max_receivers: int, form: str) -> FanoutShapes | None:
    """The :class:`FanoutShapes` at a grid's ``sizes`` and fan-outs of up to ``max_receivers`` (a
    machine's, measured or not), the start parameters from the collective table's sizes as every
    calibration starts; None where config ``model.calibrated.nbft_shape`` (``form``) is line."""
    from collat.model.costs import openmpi_costs

    if form == "line":
        return None
    starting = openmpi_costs(hockney, nbft_fits, nbft_medians, options.openmpi, channels,
                             np.sort(np.unique(collective_sizes)), 0)  # the start needs no fan-out table
    at = openmpi_costs(hockney, nbft_fits, nbft_medians, options.openmpi, channels, sizes, max_receivers)
    return fanout_shapes(starting, form, options.openmpi.small_limit, at)


def _spread(values: np.ndarray, n: int) -> np.ndarray:
    """Up to ``n`` of the distinct ``values``, spread evenly on a log scale, ends included."""
    u = np.unique(values)
    if len(u) <= n:
        return u
    pos = np.log(np.maximum(u, 1.0))
    want = np.linspace(pos[0], pos[-1], n)
    return np.unique(u[np.abs(pos[:, None] - want[None, :]).argmin(axis=0)])


class Problem:
    """The calibration cells of one (operation, target), grouped by (algorithm, mapping) curve."""

    def __init__(self, cells: pd.DataFrame, operation: str, target: str, points_per_curve: int,
                 sizes_per_curve: int):
        c = cells[(cells["operation"] == operation)]
        self.operation, self.target = operation, target
        self.sizes = _spread(c["size"].to_numpy(float), sizes_per_curve).astype(float)
        c = c[c["size"].isin(self.sizes)]
        self.groups, frames = [], []
        for (alg, mapping), g in c.groupby(["algorithm", "mapping"], sort=True):
            Pv = _spread(g["P"].to_numpy(), points_per_curve)
            g = g[g["P"].isin(Pv)]
            rows = np.arange(len(g)) + sum(len(f) for f in frames)
            self.groups.append((int(alg), mapping, Pv, rows, np.searchsorted(Pv, g["P"].to_numpy()),
                                np.searchsorted(self.sizes, g["size"].to_numpy(float))))
            frames.append(g)
        self.cells = pd.concat(frames, ignore_index=True) if frames else c.iloc[:0]
        self.log_measured = np.log(self.cells["measured"].to_numpy(float))
        self._plans: dict = {}  # sizes as bytes -> a ShapePlan per group
        self._merged: dict = {}  # the plans' forests as one kernel pass (evaluate_forests)

    def predict(self, costs: ChannelCosts, options: ModelOptions, placements: Placements) -> np.ndarray:
        """Predictions of the cells, [B, cells] for costs of B parameter sets (:func:`parametric_costs`).
        What each curve runs is planned once per sizes (:func:`plan_shapes`: the fit prices the same
        plans at every step) and priced with the costs of the step."""
        S = len(self.sizes)
        B = len(costs.sizes) // S
        out = np.empty((B, len(self.cells)))
        sizes = costs.sizes.tobytes()
        plans = self._plans.get(sizes)
        if plans is None:
            plans = self._plans[sizes] = [plan_shapes(self.operation, alg, mapping, Pv, costs.sizes, options)
                                          for alg, mapping, Pv, _, _, _ in self.groups]
        priced = price_plans(plans, costs, options, placements, self.target == "avg", self._merged)
        for (_, _, Pv, rows, pi, si), targets in zip(self.groups, priced):
            out[:, rows] = targets[self.target].reshape(len(Pv), B, S)[pi, :, si].T
        return out


class FlatRuns:
    """The NBFT stage's runs of one operation and target as calibration cells: flat trees whose
    receivers all sit on one channel (``openmpi.flat_runs``, the stage's median table), at the
    calibration's ``sizes`` and up to ``points`` P per channel. A linear algorithm runs exactly
    such a tree, so a calibration that fits them prices the flat fan-outs as measured; a run that
    fills a node (:func:`collat.model.costs.fills_node`, ``cores_per_node``) pays the calibration's
    full-node factor as a collective does."""

    def __init__(self, openmpi: ChannelCosts, target: str, sizes: np.ndarray, points: int, max_receivers: int,
                 cores_per_node: int | None = None):
        from collat.model.costs import fills_node
        from collat.model.forest import flat_trees

        runs = openmpi.flat_runs
        runs = runs[(runs["target"] == target) & runs["size"].isin(sizes) & runs["channel"].isin(openmpi.channels)
                    & (runs["P"] >= 2) & (runs["P"] <= max_receivers + 1)]
        self.sizes = np.asarray(sizes, float)
        self.target = target
        P_values, channels, trees, at, measured = [], [], [], [], []
        for channel, g in runs.groupby("channel", sort=True):
            for P in _spread(g["P"].to_numpy(), points):
                rows = g[g["P"] == P]
                trees += [len(P_values)] * len(rows)
                at += np.searchsorted(self.sizes, rows["size"].to_numpy(float)).tolist()
                measured += rows["latency"].tolist()
                P_values.append(int(P))
                channels.append(openmpi.channels.index(channel))
        self.forest, self.counts = flat_trees(P_values, channels, len(openmpi.channels)) if P_values else (None, None)
        self.tree, self.at = np.asarray(trees, dtype=np.int64), np.asarray(at, dtype=np.int64)
        self.log_measured = np.log(np.asarray(measured, float))
        self.full = np.array([fills_node(openmpi.channels[k], P, cores_per_node) for k, P in zip(channels, P_values)],
                             dtype=bool)

    def predict(self, costs: ChannelCosts, operation: str) -> np.ndarray:
        """[B, cells] for costs of B parameter sets side by side on the size axis."""
        from collat.model.openmpi_mode import evaluate

        S = len(self.sizes)
        B = len(costs.sizes) // S
        if self.forest is None:
            return np.empty((B, 0))
        completion, mean = evaluate(self.forest, self.counts, costs, operation)
        values = ((mean if self.target == "avg" else completion) + costs.overhead).reshape(-1, B, S)
        factor = np.broadcast_to(np.asarray(costs.full, dtype=float), (B * S,)).reshape(B, S)
        values = values * np.where(self.full[:, None, None], factor[None], 1.0)
        return values[self.tree, :, self.at].T


def free_parameters(start_values: np.ndarray, largest_size: float, extra: tuple, smallest_size: float = 1.0,
                    small_limit: float = -1.0, remote: bool = True, queued: bool = True,
                    full: bool = False) -> np.ndarray:
    """Which parameters a calibration fits, [NP K + len(extra)] (NP = ``start_values.shape[1]``):
    all but a channel's per-byte terms when the largest calibration size stays below their
    half-performance length (Hockney's n_1/2 = intercept / per-byte term of the start: below it a
    message's time is mostly latency, so the cells say little about the bandwidth and a fitted
    per-byte term would only absorb misfit). Those keep their point-to-point/NBFT start, and so
    does the memory-contention term (per byte) when no per-byte term is fitted. ``gap_us`` is
    fitted only if a calibration size is above ``small_limit``, ``gap_us_small`` only if one is at
    or below it (a gap no cell prices keeps its start), the start spread only where a cell's barrier
    queues messages between nodes (``queued``), the start skew only where a cell has ranks
    on another node than the root's (``remote``)."""
    K, NP = start_values.shape
    free = np.ones((K, NP), dtype=bool)
    for q in (1, 3):
        free[:, q] = largest_size >= start_values[:, q - 1] / start_values[:, q]
    if NP > 4:
        free[:, 2] &= largest_size > small_limit
        free[:, 4] = smallest_size <= small_limit
    tail = np.array([(e != MEMORY or bool(free[:, [1, 3]].any())) and (e != SKEW or remote)
                     and (e != RELEASE or queued) and (e != FAULT or largest_size >= MMAP_THRESHOLD)
                     and (e != FULL or full) for e in extra])
    return np.r_[free.ravel(), tail]


def calibrate(cells: pd.DataFrame, operation: str, target: str, openmpi: ChannelCosts, options: ModelOptions,
              placements: Placements, opts: CalibrationOptions, max_receivers: int) -> pd.DataFrame:
    """Fit the parameters of one (operation, target) on ``cells`` (measured cells: operation,
    algorithm, mapping, P, size, measured); rows of :data:`CALIBRATION_COLUMNS`.

    ``options`` the model's options (the openmpi mode's shapes and rules); ``openmpi`` that mode's
    costs of the operation, the start. The parameters of :func:`free_parameters` are fitted, the
    others keep their start. Standard errors of the fitted log parameters from the Gauss-Newton
    Hessian of the robust cost at the solution (scipy's scaled Jacobian), residual variance
    2 cost / n; a parameter the cells do not constrain keeps about its prior's width.
    """
    from scipy.optimize import least_squares
    from threadpoolctl import threadpool_limits

    problem = Problem(cells, operation, target, opts.points_per_curve, opts.sizes_per_curve)
    channels = openmpi.channels
    K = len(channels)
    extra = (OVERHEAD, MEMORY, FORWARD, SKEW, RELEASE, FULL) + (WAITS + (FAULT,) if operation == "reduce" else ())
    small_limit = options.openmpi.small_limit
    rendezvous = rendezvous_forms(operation, options.openmpi.concurrent_rendezvous)
    first = start(openmpi, small_limit)
    NP = first.shape[1]
    x0 = np.log(np.r_[first.ravel(), [_START[e] for e in extra]])
    floor = np.log(np.r_[np.tile([_FLOOR[p] for p in PARAMETERS], K), [_FLOOR[e] for e in extra]])
    ceiling = np.r_[np.full(NP * K, np.inf), [0.0 if e in WAITS else np.inf for e in extra]]  # waits <= 1
    remote = any(placements.remote(Pv, mapping).max(initial=0.0) > 0 for _, mapping, Pv, _, _, _ in problem.groups)
    queued = any(placements.release_queue(Pv, mapping, options.openmpi.barrier_rules).max(initial=0.0) > 0
                 for _, mapping, Pv, _, _, _ in problem.groups)
    # how much slower a call is where a node has no idle core is measured where some cells leave one
    # idle and some fill a node they run on alone (else the slowdown and the next node's costs trade)
    crowded = np.concatenate([full_node(Pv, mapping, placements.machine)
                              for _, mapping, Pv, _, _, _ in problem.groups])
    alone = np.concatenate([placements.remote(Pv, mapping) == 0 for _, mapping, Pv, _, _, _ in problem.groups])
    free = free_parameters(first, problem.sizes.max(initial=0.0), extra, problem.sizes.min(initial=0.0),
                           small_limit, remote, queued, bool((crowded & alone).any() and not crowded.all()))
    x0 = np.clip(x0, floor, ceiling)
    at_fault = NP * K + extra.index(FAULT) if FAULT in extra else None  # the fault's place among the parameters
    faulting = float(at_fault is not None and free[at_fault])  # no cell that large: no fault term
    at_full = NP * K + extra.index(FULL)
    slowing = float(free[at_full])  # no cell with a full node, or only such cells: the factor is not fitted
    # then the NBFT stage's runs that fill a node tell it, where the fan-outs are a line (a kept
    # measured shape prices a full node's fan-outs as those runs measured them already)
    borrowed = 1.0 if slowing else full_node_slowdown(openmpi.flat_runs, target, channels,
                                                      cores_per_node(placements.machine))

    def full(X):  # fitted log parameters [B, free] -> every log parameter [B, p]
        out = np.tile(x0, (len(np.atleast_2d(X)), 1))
        out[:, free] = X
        return out

    def costs_of(X, sizes, shape, concurrent) -> ChannelCosts:  # B sets of fitted parameters, side by side at ``sizes``
        V = np.exp(full(X))
        factor = V[:, at_full] if slowing else np.full(len(V), borrowed if shape is None else 1.0)
        at = {e: NP * K + i for i, e in enumerate(extra)}
        waits = (V[:, [at[w] for w in WAITS]] if operation == "reduce" else np.tile([0.0, 1.0], (len(V), 1)))
        fault = V[:, at_fault] * faulting if at_fault is not None else 0.0
        return parametric_costs(V[:, :NP * K].reshape(len(V), K, NP), channels, sizes, max_receivers,
                                V[:, at[OVERHEAD]], openmpi.eager_limit, waits, V[:, at[MEMORY]], V[:, at[FORWARD]],
                                small_limit, concurrent, shape, V[:, at[SKEW]], V[:, at[RELEASE]], fault,
                                factor)

    def model_log(X, shape, concurrent, on=problem):  # [B, cells of ``on``] for B parameter sets, in one batch
        return np.log(on.predict(costs_of(X, on.sizes, shape, concurrent), options, placements))

    # the NBFT stage's flat trees beside the cells (config model.calibrated.flat_runs), at the same sizes
    flat = (FlatRuns(openmpi, target, problem.sizes, opts.points_per_curve, max_receivers,
                     cores_per_node(placements.machine))
            if opts.flat_runs and openmpi.flat_runs is not None else None)

    usable = np.isfinite(model_log(x0[free], None, rendezvous[0])[0])
    if not usable.any():
        raise ValueError(f"calibration of {operation} {target}: no cell the model can price")
    y = problem.log_measured[usable]
    lo, hi, centre = floor[free], ceiling[free], x0[free]
    prior = np.eye(len(centre)) / opts.prior_sd

    def fit_form(shape, concurrent):
        def both(X):  # the usable cells' log prices, then the flat runs'
            logs = model_log(X, shape, concurrent)[:, usable]
            return logs if flat is None else np.hstack([logs, np.log(flat.predict(
                costs_of(X, flat.sizes, shape, concurrent), operation))])
        data = y if flat is None else np.r_[y, flat.log_measured]

        def residuals(x):
            return np.r_[both(x[None, :])[0] - data, (x - centre) / opts.prior_sd]

        def jacobian(x):
            """Forward differences, every parameter's step priced in one batch (step _STEP in log
            units, taken downwards at an upper bound)."""
            h = np.where(x + _STEP <= hi, _STEP, -_STEP)
            logs = both(np.vstack([x, x + np.diag(h)]))
            return np.vstack([((logs[1:] - logs[0]) / h[:, None]).T, prior])

        # one BLAS thread: the Jacobian is [cells, ~20], and the calibrations of a validation run in
        # parallel processes (a threaded SVD per process oversubscribes the cores: ~0.1 s per call)
        with threadpool_limits(1):
            return least_squares(residuals, np.clip(centre, lo + 1e-9, hi - 1e-9), jac=jacobian, loss=opts.loss,
                                 f_scale=opts.f_scale, max_nfev=opts.max_nfev, bounds=(lo, hi), x_scale=1.0,
                                 ftol=opts.tolerance, xtol=opts.tolerance, gtol=opts.tolerance)

    # the fan-outs priced by a line, or by the measured shape with a line under it (config
    # model.calibrated.nbft_shape); auto: both, and the one closer to every cell of the operation, the
    # P and sizes the fit left out included (the same parameters either way: the shape is the NBFT
    # stage's measurement, not fitted here; a tie keeps the line)
    forms = {"line": (False,), "measured": (True,), "auto": (False, True)}[opts.nbft_shape]
    shape = fanout_shape(openmpi, first, problem.sizes, small_limit) if True in forms else None
    every = Problem(cells, operation, target, len(cells), len(cells)) if len(forms) + len(rendezvous) > 2 else None
    every_shape = (fanout_shape(openmpi, first, every.sizes, small_limit) if every is not None and True in forms
                   else None)

    def misses(fit, kept, concurrent):  # |log residual| of every cell of the operation, the left-out ones included
        return np.abs(model_log(fit.x, every_shape if kept else None, concurrent, every)[0] - every.log_measured)

    # a bcast's rendezvous bytes shared or one receiver after another (config
    # model.openmpi.concurrent_rendezvous); auto: both, and the one closer to the cells above the
    # eager limit, where the two differ (the same parameters either way; none, or a tie, keeps them
    # shared)
    fits: dict = {}  # (measured shape kept, bytes shared) -> the fit

    def fit_of(kept, concurrent):
        if (kept, concurrent) not in fits:
            fits[(kept, concurrent)] = fit_form(shape if kept else None, concurrent)
        return fits[(kept, concurrent)]

    concurrent = rendezvous[0]
    large = every.cells["size"].to_numpy(float) > openmpi.eager_limit if len(rendezvous) > 1 else None
    if large is not None and large.any():  # none above the limit: the two forms tie, no second fit
        def off(c):
            r = misses(fit_of(forms[0], c), forms[0], c)[large]
            r = r[np.isfinite(r)]
            return float(np.median(r)) if len(r) else 0.0
        concurrent = min(rendezvous, key=lambda c: (off(c), not c))
    kept = forms[0]
    if len(forms) > 1:
        def miss(f):
            r = misses(fit_of(f, concurrent), f, concurrent)
            return float(np.median(r[np.isfinite(r)]))
        kept = min(forms, key=lambda f: (miss(f), f))
    fit = fit_of(kept, concurrent)
    n = int(usable.sum())
    J = fit.jac
    n_data = n + (0 if flat is None else len(flat.log_measured))
    s2 = 2.0 * fit.cost / max(n_data, 1)  # the data's (cells and flat runs) + prior residuals
    se = np.full(len(x0), np.nan)
    try:
        se[free] = np.sqrt(np.clip(np.diag(np.linalg.pinv(J.T @ J) * s2), 0.0, None))
    except np.linalg.LinAlgError:  # the SVD did not converge: no error bars, the values stand
        pass
    rms = float(np.sqrt(np.mean(fit.fun[:n] ** 2)))
    names = [(c, q) for c in channels for q in PARAMETERS] + [("all", e) for e in extra]
    value, begin = np.exp(full(fit.x)[0]), np.exp(x0)
    if at_fault is not None and not faulting:  # no cell reaches the threshold: no fault term, as in the fit
        value[at_fault] = 0.0
    if not slowing:  # no cell tells a full node's calls apart: the NBFT runs' slowdown, as in the fit
        value[at_full] = begin[at_full] = borrowed if not kept else 1.0
    # forms, not fitted values: 1 where the fan-outs keep the measured shape, where the bytes are shared
    names += [("all", SHAPE), ("all", CONCURRENT)]
    value, begin = np.r_[value, float(kept), float(concurrent)], np.r_[begin, 0.0, float(rendezvous[0])]
    free, se = np.r_[free, False, False], np.r_[se, np.nan, np.nan]
    return pd.DataFrame({
        "operation": operation, "target": target, "channel": [c for c, _ in names],
        "parameter": [q for _, q in names], "value": value, "start": begin, "fitted": free, "se_log": se,
        "low": np.where(np.isfinite(se), value * np.exp(-1.96 * se), value),
        "high": np.where(np.isfinite(se), value * np.exp(1.96 * se), value), "cells": n,
        "rms_log_residual": rms,
    }, columns=CALIBRATION_COLUMNS)


def predict_cells(table: pd.DataFrame, cells: pd.DataFrame, target: str, channels: list[str], options: ModelOptions,
                  placements: Placements, max_receivers: int, shapes: FanoutShapes | None = None) -> np.ndarray:
    """Calibrated predictions of ``cells`` (operation, algorithm, mapping, P, size) for one target;
    ``shapes``: the operations whose calibration kept the measured fan-outs' shape."""
    out = np.full(len(cells), np.nan)
    built: dict = {}  # (operation, sizes) -> costs: the groups of one operation mostly share their sizes
    for (op, alg, mapping), g in cells.groupby(["operation", "algorithm", "mapping"], sort=True):
        sizes = np.sort(g["size"].unique()).astype(float)
        key = (op, sizes.tobytes())
        if key not in built:
            built[key] = costs_from_table(table, op, target, channels, sizes, max_receivers,
                                          options.openmpi.eager_limit, options.openmpi.small_limit,
                                          shares_rendezvous(table, op, target, options.openmpi.concurrent_rendezvous),
                                          None if shapes is None or not keeps_shape(table, op, target)
                                          else shapes.of(op, sizes))
        costs = built[key]
        Pv = np.unique(g["P"].to_numpy())
        pred = predict_arrays(op, int(alg), mapping, Pv, costs, options, placements,
                              with_average=target == "avg")[0][target]
        out[cells.index.get_indexer(g.index)] = pred[
            np.searchsorted(Pv, g["P"].to_numpy()), np.searchsorted(sizes, g["size"].to_numpy(float))]
    return out


def calibrate_all(cells_of: dict, openmpi_costs: dict, options: ModelOptions, placements: Placements,
                  opts: CalibrationOptions, max_receivers: int, processes: int = 1) -> pd.DataFrame:
    """:func:`calibrate` for every operation with cells and every target of ``opts`` (in up to
    ``processes`` worker processes): ``cells_of`` maps a target to its measured cells,
    ``openmpi_costs`` an operation to the openmpi mode's costs."""
    from collat.runner import fork_map

    jobs = [(operation, target) for target in opts.targets
            for operation in sorted(set(cells_of[target]["operation"].unique()) & set(openmpi_costs))]
    frames = fork_map(lambda i: calibrate(cells_of[jobs[i][1]], jobs[i][0], jobs[i][1], openmpi_costs[jobs[i][0]],
                                          options, placements, opts, max_receivers), len(jobs), processes)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CALIBRATION_COLUMNS)


def fit_predict(train: pd.DataFrame, test: pd.DataFrame, target: str, trend: np.ndarray | None,
                unfitted: np.ndarray | None, start: dict,
                options: ModelOptions, placements: Placements, opts: CalibrationOptions, max_receivers: int,
                hybrid_neighbours: int | None = None, inner: list | None = None,
                bend: dict | None = None) -> dict[str, np.ndarray]:
    """Calibrate on the ``train`` cells of ``target`` only and predict the ``test`` cells (NaN for a
    test cell whose operation has no training cell): the calibrated mode inside a validation split,
    {"calibrated": predictions}, and with ``hybrid_neighbours`` also {"hybrid": ...}, the same
    calibration corrected by its residuals on the train cells and by the other forecasts ``trend``
    and ``unfitted`` (one per test cell, or None; :func:`collat.model.hybrid_mode.hybrid`), and
    {:data:`collat.model.hybrid_mode.CARRIED`: ...}, the same without ``trend``, and
    {:data:`collat.model.hybrid_mode.UNTWINNED`: ...}, the same without the measurement of a train
    cell the model prices as the same run (:func:`collat.model.hybrid_mode.default_twins`), and
    {"twin": whether the hybrid's price of each test cell is such a measurement}, and with
    ``unfitted``, {"physics": the openmpi mode's price of each test cell with the machine's costs
    this calibration measured} (:func:`collat.model.calibrated_mode.physics_price`). Between
    two train P of a curve the hybrid keeps the share ``bend`` (operation -> weight) of the model's
    bend (:mod:`collat.model.bend`); without, the share its sparse_P inner folds choose, or all of it.

    With ``inner`` (:class:`collat.model.validation.InnerFolds` of ``train``), also {"interval":
    {model: :class:`collat.model.validation.Width`}} for its models: :func:`collat.model.validation.interval_width` of each
    model over the inner folds' test cells, each inner fold calibrated again on its training cells
    alone and the hybrid corrected by them: nothing of an inner fold's test cells is seen; those
    folds whose held-out algorithm is :func:`collat.model.transfer.foreign` to the rest give
    {"interval_foreign": {model: Width}} instead, where there are any (and "interval" where there
    is no other fold): an algorithm priced from the physics errs otherwise; and
    {"interval_regime": {model: Width}}, the same over its ``regime`` folds (each mapping held
    out), where it has them."""
    from dataclasses import replace

    from collat.model.hybrid_mode import CARRIED, UNTWINNED, hybrid, mark_full, twin_answers

    out = np.full(len(test), np.nan)
    result = {"calibrated": out}
    if hybrid_neighbours is not None:
        result["hybrid"] = out.copy()
    operations = sorted(set(test["operation"].unique()) & set(train["operation"].unique()) & set(start))
    if not operations:
        return result
    kept = train["operation"].isin(operations).to_numpy()
    train = train[kept].reset_index(drop=True)
    table = calibrate_all({target: train}, start, options, placements, replace(opts, targets=(target,)),
                          max_receivers)
    slowed = slowed_operations(table, target)
    if slowed and hybrid_neighbours is not None:  # the hybrid reads a full node's residuals apart
        train, test = (mark_full(frame, placements.machine, slowed) for frame in (train, test))
    rows = test["operation"].isin(operations).to_numpy()
    channels = list(next(iter(start.values())).channels)
    priced = (test[rows] if hybrid_neighbours is None and inner is None else
              pd.concat([test[rows], train], ignore_index=True))
    shapes = fanout_shapes(start, opts.nbft_shape, options.openmpi.small_limit)
    p = predict_cells(table, priced, target, channels, options, placements, max_receivers, shapes)
    n = int(rows.sum())
    trees = options.openmpi.trees
    # the openmpi mode prices the messages; the fitted modes add the machine's costs the calibration
    # measured (collat.model.calibrated_mode.physics_price)
    unfitted_r = (None if unfitted is None else
                  physics_price(test[rows], np.asarray(unfitted, float)[rows], table, trees, target,
                                placements.machine))
    if unfitted_r is not None:  # what an interval around the physics' price is measured against
        result["physics"] = np.full(len(test), np.nan)
        result["physics"][rows] = unfitted_r
    folds = []  # the inner folds, each calibrated again on its own training cells
    if inner is not None:
        def refit(a: np.ndarray) -> tuple[np.ndarray, pd.DataFrame]:  # the train cells priced by a calibration
            # of the rows ``a`` alone, and that calibration
            prices = np.full(len(train), np.nan)
            known = train["operation"].isin(set(train.loc[a, "operation"])).to_numpy()
            again = calibrate_all({target: train[a]}, start, options, placements, replace(opts, targets=(target,)),
                                  max_receivers)
            prices[known] = predict_cells(again, train[known], target, channels, options, placements, max_receivers,
                                          shapes)
            return prices, again

        def fold_prices(given) -> list:  # (train rows, test rows, prices, trend, openmpi, distance) per fold
            out = []
            for train_mask, test_mask, trend_b, unfitted_b, distance in given:
                a, b = train_mask[kept], test_mask[kept]
                if a.any() and b.any():
                    prices, again = refit(a)
                    trend_b, unfitted_b, distance = (None if o is None else np.asarray(o, float)[kept[test_mask]]
                                                     for o in (trend_b, unfitted_b, distance))
                    if unfitted_b is not None:  # with the machine's costs the fold's own calibration measured
                        unfitted_b = physics_price(train[b], unfitted_b, again, trees, target, placements.machine)
                    out.append((a, b, prices, trend_b, unfitted_b, distance))
            return out
        folds = fold_prices(inner.folds)
        regime_folds = fold_prices(inner.regime)
    # an algorithm the calibration never saw: its price blended with the openmpi mode's, as far as the
    # inner folds that hold out algorithms find the calibration carries (collat.model.transfer)
    # (not for an algorithm of a kind none of theirs is, collat.model.transfer.foreign)
    weight = 1.0
    if inner is not None and inner.split == "unseen_algorithm" and unfitted_r is not None:
        pooled = [(train["measured"].to_numpy(float)[b], prices[b], o, train["algorithm"].to_numpy()[b])
                  for a, b, prices, _, o, _ in folds
                  if o is not None and not foreign(train[b], train[a], trees).any()]
        if pooled:
            weight = transfer_weight(*(np.concatenate(column) for column in zip(*pooled)))
    # between two training P of a curve, the hybrid keeps as much of the model's bend as the inner
    # folds that hold out P between training P find worth keeping (collat.model.bend); no other split
    # tests a cell between two training P of its curve
    weights = bend
    if weights is None and inner is not None and inner.split == "sparse_P" and hybrid_neighbours is not None:
        weights = weights_by_operation(*inner_fold_errors(train, [(a, b, prices) for a, b, prices, *_ in folds]))
    share = (np.ones(n) if weights is None else
            test[rows]["operation"].astype(str).map(weights).fillna(1.0).to_numpy(float))
    out[rows] = p[:n]
    unseen = ~_measured_algorithms(test[rows], train)
    alien = foreign(test[rows], train, trees)
    if unfitted_r is not None and (weight < 1.0 or alien.any()):
        out[np.flatnonzero(rows)[unseen]] = transferred(p[:n][unseen], unfitted_r[unseen],
                                                        np.where(alien, 0.0, weight)[unseen])
    # the hybrid corrects the calibrated prices themselves: its residuals, and the twins it finds,
    # are the calibration's
    if hybrid_neighbours is not None:
        trend_r = None if trend is None else np.asarray(trend, float)[rows]
        # the test cells priced by a twin's measurement, found once: its error is the spread between jobs
        twins = twin_answers(train, p[n:], test[rows], p[:n])
        result["twin"] = np.zeros(len(test), dtype=bool)
        result["twin"][rows] = np.isfinite(twins)
        result["hybrid"][rows] = hybrid(train, p[n:], test[rows], p[:n], hybrid_neighbours, trend_r, unfitted_r,
                                        twins=twins, bend=share, foreign=alien)
        # without the trend: what a what-if machine's P beyond the measured machine's get
        result[CARRIED] = np.full(len(test), np.nan)
        result[CARRIED][rows] = hybrid(train, p[n:], test[rows], p[:n], hybrid_neighbours, None, unfitted_r,
                                       twins=twins, bend=share, foreign=alien)
        result[UNTWINNED] = np.full(len(test), np.nan)
        result[UNTWINNED][rows] = hybrid(train, p[n:], test[rows], p[:n], hybrid_neighbours, trend_r, unfitted_r,
                                         twins=np.full(n, np.nan), bend=share, foreign=alien)
    if inner is not None:
        # a held-out algorithm of a kind the rest covers errs as one does, a foreign one as one does:
        # each from the inner folds that hold out its own kind (collat.model.transfer.foreign)
        aliens = [bool(foreign(train[b], train[a], trees).any()) for a, b, *_ in folds]
        kinds = {alien: [f for f, own in zip(folds, aliens) if own == alien] for alien in set(aliens)} or {False: []}
        widths = {alien: _inner_widths(train, some, inner.models, hybrid_neighbours, weight, weights, trees)
                  for alien, some in kinds.items()}
        result["interval"] = widths.get(False, widths.get(True))
        if True in widths:
            result["interval_foreign"] = widths[True]
        if regime_folds:  # a test cell in a regime its curve was never measured in: as a mapping held out
            result["interval_regime"] = _inner_widths(train, regime_folds, inner.models, hybrid_neighbours, 1.0,
                                                      trees=trees)
    return result


def _measured_algorithms(cells: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Whether each of ``cells`` has an (operation, algorithm) with a cell in ``train``."""
    pair = ["operation", "algorithm"]
    return pd.MultiIndex.from_frame(cells[pair]).isin(pd.MultiIndex.from_frame(train[pair].drop_duplicates()))


def _inner_widths(train: pd.DataFrame, folds: list, models: tuple[str, ...], hybrid_neighbours: int | None,
                  weight: float, bends: dict | None = None, trees=()) -> dict:
    """{model: :class:`collat.model.validation.Width`} of :func:`fit_predict` from its inner folds: (train rows, test
    rows, the train cells priced by a calibration of the fold's train rows alone, the fold's trend,
    openmpi prices and distances of its test cells) each, so that its test cells are out of sample
    for the calibration too, not only for the hybrid's correction; the calibrated mode prices an
    algorithm the fold's calibration never saw with the transfer ``weight``, as :func:`fit_predict`
    does (the openmpi mode's price for one :func:`collat.model.transfer.foreign` to the fold's
    training algorithms, ``trees`` their shapes), and the hybrid corrects the calibration's own
    prices, keeping the share ``bends`` (operation -> weight, :mod:`collat.model.bend`) of the
    model's bend between training P."""
    from collat.model.hybrid_mode import CARRIED, UNTWINNED, hybrid
    from collat.model.validation import NO_WIDTH, interval_width

    measured = train["measured"].to_numpy(float)
    variants = {"hybrid": {}, CARRIED: {"trend": False}, UNTWINNED: {"twins": True}}
    pooled: dict[str, list] = {m: [] for m in models
                               if m == "calibrated" or (m in variants and hybrid_neighbours is not None)}
    for a, b, priced, trend, unfitted, far in folds:
        tr, te = train[a].reset_index(drop=True), train[b].reset_index(drop=True)
        priced_b = priced[b].copy()
        alien = foreign(te, tr, trees)
        if unfitted is not None and (weight < 1.0 or alien.any()):
            unseen = ~_measured_algorithms(te, tr)
            priced_b[unseen] = transferred(priced_b[unseen], unfitted[unseen], np.where(alien, 0.0, weight)[unseen])
        for model in pooled:
            if model == "calibrated":
                pooled[model].append((measured[b], priced_b, far))
                continue
            how = variants[model]
            twins = np.full(int(b.sum()), np.nan) if how.get("twins") else None
            bend = 1.0 if bends is None else te["operation"].astype(str).map(bends).fillna(1.0).to_numpy(float)
            pooled[model].append((measured[b], hybrid(tr, priced[a], te, priced[b], hybrid_neighbours,
                                                      trend if how.get("trend", True) else None, unfitted,
                                                      twins=twins, bend=bend, foreign=alien), far))
    return {model: interval_width(*(np.concatenate(column) for column in zip(*pairs))) if pairs else NO_WIDTH
            for model, pairs in pooled.items()}
