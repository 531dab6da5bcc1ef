"""Replay of measurement campaigns on measured data: how many OSU launches the planner needs.

    .venv/bin/python benchmarks/replay.py [--results results] [--config config/config.yaml]
        [--target avg] [--step 37] [--budgets 81,118,155,192,288,384,480] [--seeds 3] [--out DIR]

Reads a finished run (its tidy collective table, Hockney and NBFT fits and the openmpi mode's
predictions). Every strategy reveals launches (operation, algorithm, mapping, P: every size at
once) of the data; after each, the calibrated mode and the hybrid are refitted on the revealed
cells only (collat.model.calibration.fit_predict, as the validation does; the hybrid's bend weight
chosen on them, collat.model.bend) and scored on the rest:

* ``planner``: the first design (collat.plan.design.first_design, ``--first`` P per curve), then
  rounds of ``--step`` launches from collat.plan.acquisition.next_launches on the refitted
  hybrid's predictions, the uncertainty estimated from the revealed cells only
  (estimate_uncertainty; its cap in sample: stage plan caps an operation's curves by rule
  model_transfer's error on held-out algorithms, a calibration per algorithm and round that the
  replay does not pay for. After the first design every curve has a measurement, where the cap
  matters most). Its two knobs are chosen per (operation, mapping) on the other five
  groups only (nested: a group's score never chooses its own knobs); every setting's rows are kept
  as ``planner[first=..,step=..]``;
* ``planner_cost``: the same with the budget and the value in node-seconds;
* ``random`` (``--seeds`` seeds), ``uniform`` (every curve the same number of P, evenly spaced in
  the measured P), ``powers_of_two`` (per curve the measured P nearest 2, 4, 8, ..., round robin
  over curves), ``cheapest`` (the launches of fewest node-seconds first).

A launch's cost is the node-seconds of what OSU would run: the nodes it spans (map-by core and
socket fill node after node) times the sum over sizes of (iterations + warm-up) x the measured
``max`` latency (OSU 7.3: 1000 + 100 up to 8 KiB, 100 + 10 above), plus ``--overhead`` seconds of
launch. Point-to-point and NBFT launches are given to every strategy (the model needs them; the
comparison is about the collective launches).

Scores, per (operation, mapping) and over all, at each budget: ``within_10``: the share of
(operation, mapping, P, size) cells where the hybrid's pick among the algorithms measured there
is within 10 % of the measured best (``--pick``: the smallest expected latency under the planner's
uncertainty of each price, as the pipeline's selection picks, or the smallest prediction); ``median_error``: the median relative error of the hybrid on
the cells not revealed; with the noise floor (repeats) beside it. Writes ``replay.csv`` and
``replay.png`` in ``--out`` (default benchmarks/replay/, committed with the numbers of the last
run on the study's data), and ``paired.csv``: per (operation, mapping) and budget, the nested
planner's within_10 minus each baseline's on the same cells, with a 90 % bootstrap interval that
resamples the P of the group (a launch gives every size of one P, so a P's cells are not
independent; scipy.stats.bootstrap, paired); ``by_nodes.csv``: within_10 per strategy (the
nested planners and each setting), budget, (operation, mapping) and the nodes a cell's communicator spans (where a design picks badly); and
``plans.csv``: each planner setting's launches in the order it revealed them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
SPLIT = ["operation", "mapping"]
CELL_KEY = ["operation", "algorithm", "mapping", "P", "size"]
CURVE = ["operation", "algorithm", "mapping"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(REPO / "results"))
    ap.add_argument("--config", default=str(REPO / "config/config.yaml"))
    ap.add_argument("--target", default="avg")
    ap.add_argument("--step", default="16,37", help="launches per round (knob values, comma-separated)")
    ap.add_argument("--first", default="2,3", help="P per curve of the first design (knob values)")
    ap.add_argument("--budgets", default="81,118,155,192,288,384,480")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--overhead", type=float, default=2.0, help="seconds per launch besides OSU's loops")
    ap.add_argument("--strategies", default="planner,planner_cost,random,uniform,powers_of_two,cheapest")
    ap.add_argument("--out", default=None, help="default: benchmarks/replay (the committed table and figure)")
    ap.add_argument("--pick", default="expected", choices=["expected", "median"],
                    help="the hybrid's pick at a cell: the smallest expected latency under the planner's "
                         "uncertainty of each price (as config selection.pick: expected), or the smallest prediction")
    args = ap.parse_args()

    from functools import partial

    from collat.config.defaults import complete
    from collat.config.schema import validate_config
    from collat.model import ModelOptions, Placements
    from collat.model.bend import bend_weights
    from collat.model.calibration import CalibrationOptions, fit_predict, starting_costs
    from collat.model.hybrid_mode import HybridOptions
    from collat.model.validation import measured_cells, noise_floor, segmented
    from collat.plan.acquisition import curve_sd, estimate_uncertainty, next_launches
    from collat.selection.choice import expected_latency
    from collat.plan.campaign import starting_uncertainty
    from collat.plan.design import LAUNCH, first_design

    res = Path(args.results)
    out = Path(args.out or REPO / "benchmarks" / "replay")
    out.mkdir(parents=True, exist_ok=True)
    cfg = yaml.safe_load(open(args.config))
    validate_config(cfg, REPO / "workflow/schemas/config.schema.yaml", args.config)
    complete(cfg)
    machine, target = cfg["machine"], args.target
    hockney = pd.read_parquet(res / "pt2pt/hockney.parquet")
    lines = pd.read_csv(res / "nbft/fits.csv")
    options = ModelOptions.from_config(cfg["model"], hockney=hockney, nbft_fits=lines)
    coll = pd.read_parquet(res / "tidy/collective.parquet")
    start, receivers = starting_costs(hockney, lines,
                                      pd.read_parquet(res / "nbft/medians.parquet"), options, cfg["channels"], coll,
                                      machine)
    calibration = CalibrationOptions.from_config(cfg["model"]["calibrated"])
    placements = Placements(machine)  # one, with its caches, for every refit
    fit = partial(fit_predict, start=start, options=options, placements=placements,
                  opts=calibration, max_receivers=receivers,
                  hybrid_neighbours=HybridOptions.from_config(cfg["model"]["hybrid"]).neighbours)
    cells = measured_cells(coll, target).reset_index(drop=True)
    unfitted = pd.read_parquet(res / "model/unfitted_predictions.parquet",
                               filters=[("mode", "==", "openmpi"), ("target", "==", target)])
    openmpi = cells.merge(unfitted[LAUNCH + ["size", "predicted"]], on=LAUNCH + ["size"], how="left")["predicted"]
    floor = noise_floor(coll, target)
    prior = starting_uncertainty(cfg["plan"]["uncertainty"], floor)  # as stage plan starts
    launches = cells[LAUNCH].drop_duplicates().reset_index(drop=True)
    cost = _costs(coll, machine, args.overhead)
    forms = cfg["regression"]["forms"]

    def refit(revealed: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(hybrid, calibrated) predictions of every cell from the revealed launches' cells."""
        seen = cells.merge(revealed[LAUNCH], on=LAUNCH, how="left", indicator=True)["_merge"].eq("both").to_numpy()
        tr = cells[seen].reset_index(drop=True)
        trend = segmented(tr, cells, machine, forms)
        # the share of the model's bend between revealed P the hybrid keeps, chosen on the revealed
        # cells as rule model_bend chooses it on the measured ones
        bends = bend_weights({target: tr}, start, options, placements, calibration, receivers)
        p = fit(tr, cells, target, trend, openmpi.to_numpy(float),
                bend=dict(zip(bends["operation"], bends["weight"])))
        return p["hybrid"], p["calibrated"], seen

    def ranked(hyb: np.ndarray, cal: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """What the pick minimises at each cell: the hybrid's price, or (``--pick expected``) its
        expected latency with the log sd the planner gives it after the revealed launches (the
        noise at a revealed P, growing with the octaves to the curve's nearest revealed P, a curve
        with none at the cap): the pipeline's selection picks so, from its own intervals."""
        if args.pick == "median":
            return hyb
        u = estimate_uncertainty(cells[seen], prior, cal[seen], machine=machine)
        sd = np.empty(len(cells))
        known = cells[seen].groupby(CURVE)["P"].unique()
        for key, rows in cells.groupby(CURVE).indices.items():
            sd[rows] = curve_sd(cells["P"].to_numpy()[rows], known.get(key, np.array([])), u.of(key))
        return expected_latency(hyb, sd)

    def score(name: str, revealed: pd.DataFrame, seconds: float) -> list[dict]:
        hyb, cal, seen = refit(revealed)
        c = cells.assign(pred=hyb, seen=seen, rank=ranked(hyb, cal, seen))
        c["rel"] = (c["pred"] - c["measured"]).abs() / c["measured"]
        cell = ["operation", "mapping", "P", "size"]
        c = c[c.groupby(cell)["algorithm"].transform("size") > 1]
        best = c.groupby(cell)["measured"].transform("min")
        pick = c.loc[c.sort_values(cell + ["rank", "algorithm"]).groupby(cell).head(1).index]
        pick = pick.assign(within=pick["measured"] <= 1.1 * best[pick.index])
        picks[(name, len(revealed))] = pick[cell + ["within"]].reset_index(drop=True)
        rows = []
        groups = list(pick.groupby(SPLIT)) + [(("all", "all"), pick)]
        for (op, mapping), g in groups:
            e = c if op == "all" else c[(c["operation"] == op) & (c["mapping"] == mapping)]
            rows.append({"strategy": name, "launches": len(revealed), "node_seconds": float(seconds),
                         "operation": op, "mapping": mapping, "within_10": float(g["within"].mean()),
                         "median_error": float(e.loc[~e["seen"], "rel"].median()), "floor": floor})
        return rows

    budgets = [int(b) for b in args.budgets.split(",")]
    rows, t0, picks = [], time.time(), {}
    strategies = args.strategies.split(",")
    plans = {}
    knobs = [(int(f), int(st)) for f in args.first.split(",") for st in args.step.split(",")]
    for name in [s for s in ("planner", "planner_cost") if s in strategies]:
        for first_n, step_n in knobs:
            revealed = first_design(launches, machine, first_n)[LAUNCH]
            order = [revealed]
            while len(revealed) < max(budgets):
                hyb, cal, seen = refit(revealed)
                u = estimate_uncertainty(cells[seen], prior, cal[seen], machine=machine)
                grid = cells[LAUNCH + ["size"]].assign(predicted=hyb)
                step = min(step_n, max(budgets) - len(revealed))
                if name == "planner":
                    new = next_launches(grid, revealed, u, step)
                else:  # as many node-seconds as the step's share of the launches' cost
                    new = next_launches(grid, revealed, u, cost.sum() * step / len(launches), cost=cost)
                if new.empty:
                    break
                order.append(new[LAUNCH])
                revealed = pd.concat([revealed, new[LAUNCH]], ignore_index=True)
            plans[f"{name}[first={first_n},step={step_n}]"] = pd.concat(order, ignore_index=True)
            print(f"{name} first={first_n} step={step_n}: {len(revealed)} launches, {time.time() - t0:.0f} s", flush=True)
    if plans:  # the order each planner setting revealed its launches in
        pd.concat([seq.assign(strategy=label, order=range(len(seq))) for label, seq in plans.items()],
                  ignore_index=True).to_csv(out / "plans.csv", index=False)
    for label, seq in plans.items():
        for n in budgets:
            pick = seq.head(n)
            rows += score(label, pick, float(cost.reindex(pd.MultiIndex.from_frame(pick[LAUNCH])).sum()))
    for name in [s for s in strategies if not s.startswith("planner")]:
        if name == "random":
            seqs = {f"random_{s}": launches.sample(frac=1, random_state=s).reset_index(drop=True)
                    for s in range(args.seeds)}
        elif name == "uniform":
            seqs = {name: None}
        elif name == "powers_of_two":
            seqs = {name: _powers_of_two(launches)}
        else:
            seqs = {name: launches.assign(c=cost.reindex(pd.MultiIndex.from_frame(launches)).to_numpy())
                    .sort_values(["c"] + LAUNCH, kind="stable")[LAUNCH].reset_index(drop=True)}
        for label, seq in seqs.items():
            for n in budgets:
                pick = _uniform(launches, n) if seq is None else seq.head(n)
                sec = float(cost.reindex(pd.MultiIndex.from_frame(pick[LAUNCH])).sum())
                rows += score(label, pick, sec)
            print(f"{label} scored, {time.time() - t0:.0f} s", flush=True)
    table = _nested(pd.DataFrame(rows))
    table.to_csv(out / "replay.csv", index=False)
    paired = _paired(table, picks)
    nodes = _by_nodes({**picks, **{(name, n): p for name in ("planner", "planner_cost")
                                   for n, p in _nested_picks(table, picks, name).items()}}, machine)
    nodes.to_csv(out / "by_nodes.csv", index=False)
    paired.to_csv(out / "paired.csv", index=False)
    ref = _noise_reference(coll, cells, target, cfg["model"]["openmpi"]["default_rules"],
                           cfg["model"]["openmpi"]["trees"])
    ref.to_csv(out / "noise_reference.csv", index=False)
    print("\nwhat noise alone allows, per (operation, mapping) and kind (repeats: runs of one cell in one job; another_run: two "
          "jobs of one configuration): the floor, and the share of cells where a repetition of every measurement with that noise picks within 10 % of the measured best")
    print(ref.round(3).to_string(index=False))
    _figure(table, len(launches), out / "replay.png", machine["name"])
    _print(table, len(launches))
    print("\nthe nested planner's within_10 minus each baseline's on the same cells (90 % bootstrap interval over P)")
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(paired.round(3).to_string(index=False))
        print("\nwithin_10 by the nodes a cell's communicator spans (rows: strategy x launches; columns: operation, "
              "mapping, nodes)")
        print(nodes.pivot_table(index=["strategy", "launches"], columns=["operation", "mapping", "nodes"],
                                values="within_10").round(3).to_string())


def _by_nodes(picks: dict, machine: dict) -> pd.DataFrame:
    """Per strategy, budget, (operation, mapping) and the nodes a cell's communicator spans
    (collat.model.validation.nodes_spanned): ``within_10`` and the number of ``cells``; where on
    the machine a design picks well or badly."""
    from collat.model.validation import nodes_spanned

    rows = []
    for (name, n), pick in picks.items():
        g = pick.assign(nodes=nodes_spanned(pick, machine)).groupby(["operation", "mapping", "nodes"])["within"]
        rows.append(g.agg(within_10="mean", cells="size").reset_index().assign(strategy=name, launches=n))
    return pd.concat(rows, ignore_index=True)[["strategy", "launches", "operation", "mapping", "nodes",
                                               "within_10", "cells"]]


def _noise_reference(coll: pd.DataFrame, cells: pd.DataFrame, target: str, default_rules: dict, trees: list,
                     draws: int = 50) -> pd.DataFrame:
    """Per (operation, mapping) and kind of noise: ``floor``, the median |a - b| / b over the pairs of
    that kind (collat.model.validation.noise_floors), and ``within_10_ceiling``: the mean, over
    ``draws`` repetitions of every measurement drawn log-normal around it with that noise, of the
    share of cells where the repetition's fastest algorithm is within 10 % of the measured best: how
    finely noise of that size lets any design be judged. Kinds:

    * ``repeats``: runs of one cell in one job (where the data repeat a cell); each cell drawn with
      the sd that gives the floor (median |a - b| / b of two draws is 0.954 sd);
    * ``another_run``: OpenMPI's default against the forced algorithm whose tree it runs, one
      configuration measured in two launches, which is how the algorithms of a cell are measured
      apart (each its own launch). Their log ratio splits into an offset per pair of curves, the
      same at every P and size (``curve_offset``, the median |median offset of a curve|: one job
      per curve, as the study ran them; a model learns it from the curve's other launches), an
      offset per pair of launches, the same at every size (``launch_offset``: the median |mean log
      ratio of a pair of launches - its curve's|), and noise per cell (``within_launch``: the
      median |log ratio - its launch's mean|). Each launch is drawn one offset and each cell its
      own noise, with the sds that give the last two (0.954 sd each): what no model of the
      other launches can know.
      Measured on the cells where the default runs a forced algorithm's tree only (bcast 1, 5, 6;
      reduce 1, 4 on the study's data) and applied to every cell of the group.
"""
    from collat.model.validation import _default_twin_differences, _repeat_differences

    rng = np.random.default_rng(0)
    cell = ["operation", "mapping", "P", "size"]
    launch = ["operation", "algorithm", "mapping", "P"]
    rel, at = _default_twin_differences(coll, target, default_rules, trees)
    twins = at.drop_duplicates().merge(cells, on=CELL_KEY)
    twins = twins.merge(cells[cells["algorithm"] == 0].drop(columns="algorithm"), on=cell, suffixes=("", "_default"))
    twins["log_ratio"] = np.log(twins["measured_default"] / twins["measured"])
    twins["offset"] = twins.groupby(launch)["log_ratio"].transform("mean")
    launches = twins.drop_duplicates(launch).copy()
    launches["curve"] = launches.groupby(CURVE)["offset"].transform("median")  # over launches, not cells
    kinds = {"repeats": _repeat_differences(coll, target), "another_run": (rel, at)}
    rows = []
    for kind, (ratio, pairs) in kinds.items():
        pairs = pairs.assign(rel=np.abs(np.expm1(ratio)))  # |a - b| / b from log(a / b)
        for (op, mapping), g in cells.groupby(SPLIT):
            mine = pairs[(pairs["operation"] == op) & (pairs["mapping"] == mapping)]
            floor = float(mine["rel"].median()) if len(mine) else np.nan
            row = {"kind": kind, "operation": op, "mapping": mapping, "pairs": len(mine), "floor": floor,
                   "curve_offset": np.nan, "launch_offset": np.nan, "within_launch": np.nan,
                   "within_10_ceiling": np.nan}
            if not np.isfinite(floor):
                rows.append(row)
                continue
            sd_launch, sd_cell = 0.0, floor / 0.954
            if kind == "another_run":
                t = twins[(twins["operation"] == op) & (twins["mapping"] == mapping)]
                one = launches[(launches["operation"] == op) & (launches["mapping"] == mapping)]
                row["curve_offset"] = float(one.drop_duplicates(CURVE)["curve"].abs().median())
                row["launch_offset"] = float((one["offset"] - one["curve"]).abs().median())
                row["within_launch"] = float((t["log_ratio"] - t["offset"]).abs().median())
                sd_launch, sd_cell = row["launch_offset"] / 0.954, row["within_launch"] / 0.954
            g = g[g.groupby(cell)["algorithm"].transform("size") > 1].reset_index(drop=True)
            best = g.groupby(cell)["measured"].transform("min").to_numpy()
            key = g.groupby(cell).ngroup().to_numpy()
            of_launch = g.groupby(launch).ngroup().to_numpy()
            share = []
            for _ in range(draws):
                noise = sd_launch * rng.standard_normal(of_launch.max() + 1)[of_launch] + sd_cell * rng.standard_normal(len(g))
                pick = pd.Series(g["measured"].to_numpy() * np.exp(noise)).groupby(key).idxmin().to_numpy()
                share.append(np.mean(g["measured"].to_numpy()[pick] <= 1.1 * best[pick]))
            row["within_10_ceiling"] = float(np.mean(share))
            rows.append(row)
    return pd.DataFrame(rows)


def _nested(table: pd.DataFrame) -> pd.DataFrame:
    """``planner`` and ``planner_cost`` rows whose knobs (first design, round size) are chosen for
    each (operation, mapping) on the other groups only: the setting of the smallest mean over them,
    at the same budget, of (1 - within_10) + median_error; the rows of every setting kept beside."""
    out = [table]
    groups = table[table["operation"] != "all"]
    for name in ("planner", "planner_cost"):
        mine = groups[groups["strategy"].str.startswith(name + "[")]
        if mine.empty:
            continue
        mine = mine.assign(loss=(1 - mine["within_10"]) + mine["median_error"])
        for (op, mapping), g in mine.groupby(["operation", "mapping"]):
            others = mine[(mine["operation"] != op) | (mine["mapping"] != mapping)]
            best = others.groupby(["launches", "strategy"])["loss"].mean().groupby("launches").idxmin()
            for n, (_, label) in best.items():
                row = g[(g["launches"] == n) & (g["strategy"] == label)].drop(columns="loss")
                out.append(row.assign(strategy=name, knobs=label))
    return pd.concat(out, ignore_index=True)


def _nested_picks(table: pd.DataFrame, picks: dict, name: str) -> dict:
    """{budget: the picks of the nested strategy ``name`` (:func:`_nested`): each (operation,
    mapping)'s cells from the setting its knobs chose}."""
    nested = table[(table["strategy"] == name) & (table["operation"] != "all")]
    out = {}
    for n in sorted(nested["launches"].unique()):
        chosen = nested[nested["launches"] == n]
        out[n] = pd.concat([p[(p["operation"] == op) & (p["mapping"] == m)]
                            for op, m, label in chosen[["operation", "mapping", "knobs"]].itertuples(index=False)
                            for p in [picks.get((label, n))] if p is not None], ignore_index=True)
    return out


def _paired(table: pd.DataFrame, picks: dict, resamples: int = 2000) -> pd.DataFrame:
    """Per (operation, mapping), over all groups, and per budget: the nested planner's within_10
    (its knobs as :func:`_nested` chose them for the group) minus the ``uniform`` design's and the
    ``random`` seeds' (their mean per cell), on the same cells. The interval is a paired percentile
    bootstrap over the P of the group (the cells of one P come from one launch per algorithm), 90 %;
    over all groups the clusters are (operation, mapping, P)."""
    from scipy.stats import bootstrap

    cell = ["operation", "mapping", "P", "size"]
    seeds = sorted({name for name, _ in picks if name.startswith("random_")})
    rows = []
    for n, mine in _nested_picks(table, picks, "planner").items():
        against = {}
        if ("uniform", n) in picks:
            against["uniform"] = picks[("uniform", n)]
        if seeds and all((s, n) in picks for s in seeds):
            r = pd.concat([picks[(s, n)] for s in seeds]).groupby(cell, as_index=False)["within"].mean()
            against["random"] = r
        for name, other in against.items():
            both = mine.merge(other, on=cell, suffixes=("", "_b")).astype({"within": float, "within_b": float})
            groups = [((op, m), g) for (op, m), g in both.groupby(SPLIT)] + [(("all", "all"), both)]
            for (op, m), g in groups:
                per_p = g.groupby(["operation", "mapping", "P"])[["within", "within_b"]].agg(["sum", "size"])
                a, b = per_p[("within", "sum")].to_numpy(), per_p[("within_b", "sum")].to_numpy()
                k = per_p[("within", "size")].to_numpy().astype(float)
                diff = (a.sum() - b.sum()) / k.sum()
                low = high = np.nan
                if len(k) > 1:
                    ci = bootstrap((a, b, k), lambda a, b, k, axis=-1: (a.sum(axis) - b.sum(axis)) / k.sum(axis),
                                   paired=True, vectorized=True, n_resamples=resamples, confidence_level=0.9,
                                   method="percentile", rng=np.random.default_rng(0)).confidence_interval
                    low, high = ci.low, ci.high
                rows.append({"operation": op, "mapping": m, "launches": int(n), "against": name,
                             "difference": diff, "low": low, "high": high, "P": len(k), "cells": int(k.sum())})
    return pd.DataFrame(rows)


def _costs(coll: pd.DataFrame, machine: dict, overhead: float) -> pd.Series:
    """Node-seconds per launch: nodes x the seconds collat.plan.campaign.launch_seconds gives OSU's
    loops at the measured max latency (median over runs, outliers left out), plus ``overhead``."""
    from collat.plan.campaign import launch_seconds
    from collat.plan.design import LAUNCH, nodes_spanned

    c = coll[~coll["outlier"].astype(bool)].groupby(LAUNCH + ["size"], as_index=False)["max"].median()
    s = launch_seconds(c.rename(columns={"max": "predicted"}), overhead)
    return s * np.array([nodes_spanned(machine, "collective", m, P) for _, _, m, P in s.index])


def _uniform(launches: pd.DataFrame, n: int) -> pd.DataFrame:
    """``n`` launches spread over the curves alike: each curve's share of P, evenly spaced among
    its measured P (both ends first)."""
    curves = list(launches.groupby(["operation", "algorithm", "mapping"]))
    base, extra = divmod(n, len(curves))
    parts = []
    for i, (_, g) in enumerate(curves):
        k = min(base + (i < extra), len(g))
        g = g.sort_values("P")
        idx = np.unique(np.round(np.linspace(0, len(g) - 1, k)).astype(int)) if k else []
        parts.append(g.iloc[idx])
    return pd.concat(parts, ignore_index=True)


def _powers_of_two(launches: pd.DataFrame) -> pd.DataFrame:
    """Per curve the measured P nearest 2, 4, 8, ... (each once), taken round robin over curves."""
    seqs = []
    for _, g in launches.groupby(["operation", "algorithm", "mapping"]):
        P = np.sort(g["P"].unique())
        taken = []
        for k in range(1, int(np.log2(P.max())) + 2):
            p = P[np.argmin(np.abs(np.log2(P) - k))]
            if p not in taken:
                taken.append(p)
        rest = [p for p in P if p not in taken]
        seqs.append([g[g["P"] == p].iloc[0] for p in taken + rest])
    order = [row for i in range(max(map(len, seqs))) for s in seqs if i < len(s) for row in [s[i]]]
    return pd.DataFrame(order).reset_index(drop=True)


def _print(table: pd.DataFrame, total: int) -> None:
    t = _tidy(table)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        for what in ("within_10", "median_error"):
            wide = t.pivot_table(index=["strategy", "launches"], columns=["operation", "mapping"], values=what)
            wide[("mean", "groups")] = wide.mean(axis=1)
            print(f"\n{what} (rows: strategy x launches of {total}; columns: operation mapping)")
            print(wide.round(3).to_string())


def _tidy(table: pd.DataFrame) -> pd.DataFrame:
    """The groups' rows of the reported strategies (the random seeds averaged, the knob settings left
    out)."""
    t = table[(table["operation"] != "all") & ~table["strategy"].str.contains("[", regex=False)].copy()
    t["strategy"] = t["strategy"].str.replace(r"random_\d+", "random", regex=True)
    return t.groupby(["strategy", "launches", "operation", "mapping"], as_index=False)[
        ["within_10", "median_error", "node_seconds", "floor"]].mean()


def _figure(table: pd.DataFrame, total: int, path: Path, machine: str) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = _tidy(table).groupby(["strategy", "launches"], as_index=False)[
        ["within_10", "median_error", "node_seconds"]].mean()  # the mean over (operation, mapping)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for name, g in t.groupby("strategy"):
        style = {"lw": 2.5} if name.startswith("planner") else {"lw": 1.2}
        axes[0].plot(g["launches"], g["within_10"], marker="o", ms=3, label=name, **style)
        axes[1].plot(g["launches"], g["median_error"], marker="o", ms=3, label=name, **style)
        axes[2].plot(g["node_seconds"], g["median_error"], marker="o", ms=3, label=name, **style)
    axes[0].set(xlabel=f"launches revealed (of {total})", ylabel="cells within 10 % of the measured best")
    axes[1].set(xlabel=f"launches revealed (of {total})", ylabel="median relative error, unrevealed cells")
    axes[2].set(xlabel="node-seconds of the launches revealed", ylabel="median relative error, unrevealed cells",
                xscale="log")
    axes[2].xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axes[2].xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axes[2].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    floor = table["floor"].iloc[0]
    if np.isfinite(floor):  # data without a repeated cell have no floor of repeats
        for ax in axes[1:]:
            ax.axhline(floor, color="grey", ls=":", label="noise floor (repeats)")
            ax.axhline(1.5 * floor, color="grey", ls="--", label="1.5 x floor")
    axes[0].axhline(0.9, color="grey", ls="--", label="goal 0.9")
    axes[0].axvline(0.1 * total, color="grey", ls="-.", lw=0.8, label="10 % of the launches")
    axes[1].axvline(0.1 * total, color="grey", ls="-.", lw=0.8)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Replay of measurement campaigns on the data of {machine} (mean over operation x mapping; "
                 "target avg)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
