"""One round of a measurement campaign: what the model still lacks, then the collective launches
worth their cost (stage plan, results/plan/launches.csv).

The point-to-point and NBFT launches the model needs come first and do not count against the
budget (a few short runs); then, without a prediction of the collectives (nothing measured yet),
the first design (:func:`collat.plan.design.first_design`), else the greedy picks of
:func:`collat.plan.acquisition.next_launches` on the planning mode's predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from collat.plan.acquisition import Uncertainty, estimate_uncertainty, next_launches
from collat.plan.design import COLUMNS, LAUNCH, collective_candidates, first_design, model_launches, nodes_spanned

PLANNING_MODES = ("hybrid", "calibrated", "openmpi")  # the first the model stage priced plans


@dataclass(frozen=True)
class PlanOptions:
    """Config ``plan``, checked by the schema (``uncertainty.floor`` may be None: the data's)."""

    launches: int | None
    node_hours: float | None
    first_per_curve: int
    every_P_below: int
    nbft_points: int
    overhead_seconds: float
    prior: dict

    @classmethod
    def from_config(cls, cfg: dict) -> "PlanOptions":
        b = cfg["budget"]
        return cls(b.get("launches"), b.get("node_hours"), int(cfg["first_per_curve"]), int(cfg["every_P_below"]),
                   int(cfg["nbft_points"]), float(cfg["overhead_seconds"]), dict(cfg["uncertainty"]))


def missing_model_launches(machine: dict, channels, operations, options: PlanOptions,
                           pt2pt: pd.DataFrame | None, nbft: pd.DataFrame | None) -> pd.DataFrame:
    """The point-to-point and NBFT launches of :func:`collat.plan.design.model_launches` whose
    channel (point-to-point) or (operation, channel) line (NBFT: two P, or the one a channel of a
    single receiver allows) the tidy tables ``pt2pt`` and ``nbft`` do not hold yet."""
    need = model_launches(machine, channels, operations, options.nbft_points)
    have_p2p = set() if pt2pt is None else set(pt2pt["channel"].astype(str))
    planned = need[need["kind"] == "nbft"].groupby(["operation", "channel"])["P"].nunique()
    lines = set() if nbft is None else {k for k, g in nbft.groupby(["operation", "channel"], observed=True)
                                        if g["P"].nunique() >= min(2, planned.get(k, 2))}
    keep = [(r["kind"] == "pt2pt" and r["channel"] not in have_p2p)
            or (r["kind"] == "nbft" and (r["operation"], r["channel"]) not in lines) for _, r in need.iterrows()]
    out = need[keep].reset_index(drop=True)
    out["reason"] = np.where(out["kind"] == "pt2pt", "the model needs a Hockney fit of this channel",
                             "the model needs an NBFT line of this operation and channel")
    return out


def launch_seconds(grid: pd.DataFrame, overhead: float, iterations: int | None = None,
                   warmup: int | None = None) -> pd.Series:
    """Seconds each collective launch of ``grid`` (its cells' ``predicted`` latency, us) takes: the
    sum over sizes of (iterations + warm-up) x latency, OSU 7's defaults where None (1000 + 100 up
    to 8 KiB, 100 + 10 above), plus ``overhead``. Indexed by :data:`LAUNCH`."""
    small = grid["size"].to_numpy() <= 8192
    it = np.where(small, 1000, 100) if iterations is None else np.full(len(grid), iterations)
    wu = np.where(small, 100, 10) if warmup is None else np.full(len(grid), warmup)
    s = grid.assign(seconds=(it + wu) * grid["predicted"].to_numpy(float) * 1e-6)
    return s.groupby(LAUNCH)["seconds"].sum() + overhead


def starting_uncertainty(prior: dict, floor: float | None) -> Uncertainty:
    """Config ``plan.uncertainty`` as the planner starts from it: its ``floor``, else the data's
    noise floor of repeats (``floor``), else 0.03 where no cell was measured twice."""
    own = prior["floor"] if prior["floor"] is not None else floor
    return Uncertainty(float(own) if own is not None and np.isfinite(own) else 0.03, float(prior["per_octave"]),
                       float(prior["cap"]))


def uncut_first_design(launches: pd.DataFrame, options: PlanOptions, u) -> str | None:
    """The line a plan owes its user when a node-hours budget (``options``) meets a first design
    (``u`` None: :func:`plan_round` picked no launch on predictions): nothing measured prices a launch
    yet, so the budget cuts nothing; None otherwise."""
    first = launches[launches["kind"] == "collective"]
    if u is not None or options.node_hours is None or first.empty:
        return None
    return (f"plan.budget.node_hours does not cut a first design: nothing measured prices its launches yet "
            f"({len(first)} collective launches over {int(first['nodes'].sum())} nodes in all, the largest on "
            f"{int(first['nodes'].max())}); plan.budget.launches cuts it")


def _first_round_order(picks: pd.DataFrame) -> np.ndarray:
    """The order a launch budget cuts a first design in: every curve's first P before any curve's
    second, and within one rank the (operation, mapping) groups in turn, each algorithm in the order
    of its id (OpenMPI's default, 0, first), so that a budget short of the design still measures
    every operation and mapping, their defaults first, rather than one operation's every algorithm."""
    rank = picks.groupby(["operation", "algorithm", "mapping"], sort=False).cumcount().to_numpy()
    turn = picks.groupby(["operation", "mapping"], sort=False)["algorithm"].rank(method="dense").to_numpy()
    return np.lexsort((picks["algorithm"].to_numpy(), picks["mapping"].to_numpy().astype(str),
                       picks["operation"].to_numpy().astype(str), turn, rank))


def plan_round(machine: dict, algorithms: dict, mappings, channels, options: PlanOptions,
               pt2pt: pd.DataFrame | None = None, nbft: pd.DataFrame | None = None,
               measured: pd.DataFrame | None = None, predictions: pd.DataFrame | None = None,
               calibrated: pd.DataFrame | None = None, floor: float | None = None,
               iterations: int | None = None, warmup: int | None = None,
               held_out: dict | None = None) -> tuple[pd.DataFrame, Uncertainty | None]:
    """The next round's launches (columns :data:`collat.plan.design.COLUMNS`, ``nodes``,
    ``seconds`` (estimated, NaN without a prediction), ``reason``) and the uncertainty the picks
    used (None for a first design).

    ``measured``: the measured collective cells (operation, algorithm, mapping, P, size, measured);
    ``predictions``: the planning mode's prediction of every cell (operation, algorithm, mapping,
    P, size, predicted); ``calibrated``: the calibrated mode's of the measured cells, for the cap;
    ``floor``: the noise floor of repeats (config ``plan.uncertainty.floor`` wins); ``held_out``:
    operation -> the model's median |log error| on algorithms it never saw, the cap of that
    operation's curves (:func:`collat.plan.acquisition.estimate_uncertainty`)."""
    operations = sorted(algorithms)
    model = missing_model_launches(machine, channels, operations, options, pt2pt, nbft)
    candidates = collective_candidates(machine, algorithms, mappings, options.every_P_below)
    done = (measured[LAUNCH].drop_duplicates() if measured is not None and len(measured)
            else pd.DataFrame(columns=LAUNCH))
    if len(done):
        candidates = pd.concat([candidates, done], ignore_index=True).drop_duplicates(LAUNCH, ignore_index=True)
    u = None
    if predictions is None:
        left = candidates.merge(done, on=LAUNCH, how="left", indicator=True)
        left = left[left["_merge"] == "left_only"].drop(columns="_merge")
        picks = first_design(left, machine, options.first_per_curve)
        picks = picks.iloc[_first_round_order(picks)].reset_index(drop=True)
        if options.launches is not None:
            picks = picks.head(options.launches)
        picks["seconds"] = np.nan
    else:
        grid = candidates.merge(predictions, on=LAUNCH)
        grid = grid[grid["predicted"] > 0]
        prior = starting_uncertainty(options.prior, floor)
        physics = None
        if calibrated is not None and measured is not None:
            physics = measured.merge(calibrated, on=LAUNCH + ["size"], how="left")["predicted"].to_numpy(float)
        u = (estimate_uncertainty(measured, prior, physics, held_out=held_out, machine=machine)
             if measured is not None and len(measured) else prior)
        seconds = launch_seconds(grid, options.overhead_seconds, iterations, warmup)
        nodes = np.array([nodes_spanned(machine, "collective", m, P) for _, _, m, P in seconds.index])
        if options.node_hours is not None:
            picks = next_launches(grid, done, u, options.node_hours * 3600.0, cost=seconds * nodes)
        else:
            picks = next_launches(grid, done, u, float(options.launches))
        picks["seconds"] = seconds.reindex(pd.MultiIndex.from_frame(picks[LAUNCH])).to_numpy()
    picks = picks.assign(kind="collective", benchmark="osu_" + picks["operation"].astype(str), channel=None,
                         receiver=pd.NA)
    out = pd.concat([model.assign(seconds=np.nan), picks], ignore_index=True)
    out["nodes"] = [nodes_spanned(machine, r["kind"], r["mapping"], r["P"], r["channel"]) for _, r in out.iterrows()]
    for c in ("algorithm", "P", "receiver"):
        out[c] = pd.to_numeric(out[c]).astype("Int64")
    return out[COLUMNS + ["nodes", "seconds", "reason"]], u
