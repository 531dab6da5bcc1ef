"""The study's R² tables (Tables 1-4) regenerated beside the published values, and the summary.

A table row is one (algorithm, mapping): the published R² (config ``paper.tables``), ours with
the paper's own recipe (point-to-point tables: the ``paper`` mode; segmented tables: study eq. 12; both
on the ``paper`` cleaning at 1 B), their difference, and the extra columns a reader wants next to
them (openmpi mode against the completion time, the max target, the cross-validated R²).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def share_range(shares) -> str:
    """Shares as a range of whole percents, "82%-97%"; one percent where both ends round alike."""
    low, high = f"{min(shares):.0%}", f"{max(shares):.0%}"
    return low if low == high else f"{low}-{high}"


def _lookup(scores: pd.DataFrame, **where) -> pd.DataFrame:
    sel = np.ones(len(scores), dtype=bool)
    for k, v in where.items():
        sel &= (scores[k] == v).to_numpy()
    return scores[sel]


def _value(frame: pd.DataFrame, algorithm: int, mapping: str, column: str = "r2") -> float:
    row = frame[(frame["algorithm"] == algorithm) & (frame["mapping"] == mapping)]
    return float(row[column].iloc[0]) if len(row) else float("nan")


def r2_table(spec: dict, model_scores: pd.DataFrame, regression_scores: pd.DataFrame, size: int) -> pd.DataFrame:
    """One of the study's tables as a long frame (one row per algorithm x mapping)."""
    op = spec["operation"]
    rows = []
    if spec["model"] == "p2p":
        ms = _lookup(model_scores, operation=op, size=size)
        ours = _lookup(ms, mode="paper", target="avg", cleaning="paper")
        extras = {
            "openmpi_max_robust": _lookup(ms, mode="openmpi", target="max", cleaning="robust"),
            "openmpi_avg_robust": _lookup(ms, mode="openmpi", target="avg", cleaning="robust"),
            "paper_mode_robust": _lookup(ms, mode="paper", target="avg", cleaning="robust"),
        }
    else:
        rs = _lookup(regression_scores, operation=op, size=size)
        ours = _lookup(rs, target="avg", cleaning="paper")
        extras = {
            "r2_adj": ours.assign(r2=ours["r2_adj"]),
            "r2_cv": ours.assign(r2=ours["r2_cv"]),
            "r2_extrapolation": ours.assign(r2=ours["r2_extrapolation"]),
            "max_target_robust": _lookup(rs, target="max", cleaning="robust"),
        }
    for r in spec["rows"]:
        alg = int(r["algorithm"])
        for mapping in ("core", "socket", "node"):
            if mapping not in r:
                continue
            value = _value(ours, alg, mapping)
            row = {"table": spec["table"], "operation": op, "model": spec["model"], "algorithm": alg,
                   "mapping": mapping, "published": float(r[mapping]), "ours": value,
                   # the paper printed negative R² as 0: compare like with like
                   "ours_as_printed": max(value, 0.0) if np.isfinite(value) else value}
            row["difference"] = row["ours_as_printed"] - row["published"]
            for name, frame in extras.items():
                row[name] = _value(frame, alg, mapping)
            rows.append(row)
    return pd.DataFrame(rows)


def algorithm_label(algorithm: int, names: dict) -> str:
    return f"{names.get(algorithm, 'alg')} ({algorithm})"


# what each column of a table holds, said beside the table (R² at the tables' size throughout)
COLUMN_MEANINGS = {
    "published": "the study's R²",
    "ours": "ours with the study's recipe (paper mode or study eq. 12, paper cleaning, avg target)",
    "ours_as_printed": "the same with a negative R² printed as 0, as the study did",
    "difference": "ours_as_printed − published",
    "openmpi_max_robust": "the openmpi mode against the slowest rank's time (robust cleaning)",
    "openmpi_avg_robust": "the openmpi mode against the average over ranks (robust cleaning)",
    "paper_mode_robust": "the paper mode with the robust cleaning",
    "r2_adj": "R² adjusted for the number of coefficients",
    "r2_cv": "R² of K-fold out-of-fold predictions, folds over P",
    "r2_extrapolation": "R² at the larger P of a fit on the smaller ones",
    "max_target_robust": "the segmented model of the slowest rank's time (robust cleaning)",
}


def to_markdown(table: pd.DataFrame, title: str, names: dict) -> str:
    """A reader's table: one line per algorithm x mapping, published | ours | difference | extras,
    then a line saying what each column holds."""
    cols = [c for c in table.columns if c not in ("table", "operation", "model", "algorithm", "mapping")]
    head = "| algorithm | mapping | " + " | ".join(cols) + " |"
    lines = [f"### Table {int(table['table'].iloc[0])}: {title}", "", head, "|" + "---|" * (len(cols) + 2)]
    for _, r in table.iterrows():
        cells = [f"{r[c]:.3f}" if isinstance(r[c], float) and np.isfinite(r[c]) else "–" for c in cols]
        lines.append(f"| {algorithm_label(int(r['algorithm']), names)} | {r['mapping']} | " + " | ".join(cells) + " |")
    legend = "; ".join(f"`{c}`: {COLUMN_MEANINGS[c]}" for c in cols if c in COLUMN_MEANINGS)
    lines += ["", f"Columns: {legend}; –: not measured or not modelled."]
    return "\n".join(lines) + "\n"


def to_latex(table: pd.DataFrame, title: str, names: dict) -> str:
    """A booktabs tabular: published, ours (as printed), difference per algorithm x mapping."""
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{title} ($R^2$ at 1\,B)}}",
             r"\begin{tabular}{llrrr}", r"\toprule",
             r"algorithm & mapping & published & ours & difference \\", r"\midrule"]
    for _, r in table.iterrows():
        ours = "--" if not np.isfinite(r["ours_as_printed"]) else f"{r['ours_as_printed']:.3f}"
        diff = "--" if not np.isfinite(r["difference"]) else f"{r['difference']:+.3f}"
        lines.append(f"{algorithm_label(int(r['algorithm']), names).replace('_', ' ')} & {r['mapping']} & "
                     f"{r['published']:.3f} & {ours} & {diff} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def selection_markdown(regret: pd.DataFrame, unseen: pd.DataFrame, paths: dict,
                       unseen_P: pd.DataFrame | None = None, pick: str = "expected",
                       algorithms: str = "every") -> list[str]:
    """The summary's section on choosing the algorithm: per operation x mapping x target, the
    model's pick at P nobody measured (``unseen_P``, regret_unseen_P.csv) and without each algorithm
    (``unseen``, median over the folds and the worst fold) against OpenMPI's default, then the
    in-sample pick; ``pick`` and ``algorithms`` are config ``selection.pick`` and
    ``selection.algorithms``."""
    if regret.empty:  # no cell holds two forced algorithms: no choice to score
        return [f"## Choosing the algorithm — `{paths.get('regret', 'regret.csv')}`", "",
                "No (P, size) cell has two forced algorithms measured, so no choice can be scored against the "
                "measurements. The rules files pick by the model alone; stage plan proposes the launches that "
                "would measure the algorithms they compare.", ""]
    mode = regret["mode"].iloc[0]
    out = [f"## Choosing the algorithm — `{paths['regret']}`", "",
           f"The {mode} mode's pick per (P, size) against OpenMPI's default, scored where every forced algorithm "
           "was measured. " + ("A pick is the smallest expected latency (`selection.pick`): each prediction "
                               "times exp(s²/2), s the sd its 80 % interval implies, so that an algorithm priced "
                               "less surely (one nobody measured) must be predicted faster to win. "
                               if pick == "expected" else "A pick is the smallest prediction (`selection.pick`). ")
           + "The regret of a choice is its measured latency over that of the best forced algorithm "
           "at the cell: 1 is the best, 1.1 is 10 % slower. It can fall below 1: OpenMPI's default, and a pick "
           "of it, can run shapes no forced run had (k-nomial and in-order binomial trees, pipelines, "
           "scatter-allgather; none segmented: the fixed rules pass segment size 0).", "",
           "Columns, out of sample first:", "",
           "- *unmeasured P*: the pick at the P the sparse_P split held out, made by a fit that saw every "
           f"`validation.sparse_every`-th measured P (`{paths.get('unseen_P', 'regret_unseen_P.csv')}`): the share "
           "of cells within 10 % of the best, and the geometric mean of the regret;",
           "- *default*: OpenMPI's default on the same cells;",
           "- *nearest measured P*: the pick of the measurements at the nearest other measured P, a reference "
           "the model cannot be expected to beat;",
           f"- *unseen algorithm*: the pick by folds that never saw one of the algorithms, median over the folds "
           f"(`{paths['unseen']}`), then the worst fold and, in brackets, the algorithm it left out: the "
           "choice where the bet on an algorithm nobody measured went worst;",
           "- *in-sample*: the fit on every cell (the hybrid mode returns the measurement at a measured cell, so "
           "its in-sample pick is the measured best);",
           "- *picks the default*: the share of cells where the in-sample pick is OpenMPI's default;",
           "- *cells, algorithms*: the cells scored in-sample (two forced algorithms or more measured there, each "
           "pick made among those) and how many forced algorithms they hold, with the share of cells that "
           "hold every one.", "",
           "| operation | mapping | target | unmeasured P: within 10 % | geomean regret | default within 10 % | "
           "default geomean regret | nearest measured P: within 10 % | unseen algorithm: within 10 % | "
           "worst fold (left out) | in-sample: within 10 % | picks the default | cells, algorithms |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    r = regret.set_index(["operation", "mapping", "target", "chooser"])
    group = ["operation", "mapping", "target"]
    folds = unseen.groupby(group)["within_10pct"].median() if len(unseen) else None
    scored = unseen.dropna(subset=["within_10pct"]) if len(unseen) and "left_out" in unseen else unseen.iloc[:0]
    worst = scored.loc[scored.groupby(group)["within_10pct"].idxmin()].set_index(group) if len(scored) else None
    sparse = (unseen_P.set_index(["operation", "mapping", "target"]) if unseen_P is not None and len(unseen_P)
              else None)
    for (op, mapping, target), _ in regret.groupby(["operation", "mapping", "target"], sort=True):
        m = r.loc[(op, mapping, target, "model")]
        fold = folds.get((op, mapping, target), np.nan) if folds is not None else np.nan
        w = worst.loc[(op, mapping, target)] if worst is not None and (op, mapping, target) in worst.index else None
        low = "" if w is None else f"{w['within_10pct']:.2f} ({int(w['left_out'])})"
        if sparse is not None and (op, mapping, target) in sparse.index:
            q = sparse.loc[(op, mapping, target)]
            cols = [q["within_10pct"], q["geomean_regret"], q["default_within_10pct"], q["default_geomean_regret"],
                    q.get("neighbour_within_10pct", np.nan)]
        else:
            cols = [np.nan] * 5
        compared = (f"{int(m['cells'])}, {int(m['algorithms'])} ({m['complete_share']:.0%} all)"
                    if {"cells", "algorithms", "complete_share"} <= set(m.index) else "")
        out.append(f"| {op} | {mapping} | {target} | {cols[0]:.2f} | {cols[1]:.3f} | {cols[2]:.2f} | {cols[3]:.3f} | "
                   f"{cols[4]:.2f} | {fold:.2f} | {low} | {m['within_10pct']:.2f} | "
                   f"{m.get('default_share', np.nan):.2f} | {compared} |")
    out.append("")
    bets = regret.loc[regret["chooser"] == "rules_file", "unmeasured_share"] if "unmeasured_share" in regret else []
    if len(bets):  # what the rules files pick among every modelled algorithm, measured there or not
        where = ("where every modelled algorithm competes" if algorithms == "every" else
                 "which name only algorithms measured under their mapping (`selection.algorithms: measured`)")
        alien = (regret.loc[regret["chooser"] == "rules_file", "foreign_share"].dropna()
                 if "foreign_share" in regret else [])
        out += [f"The rules files, {where}, name an algorithm not measured at the "
                f"cell in {share_range(bets)} of these cells per operation, mapping and target "
                f"(`unmeasured_share` of chooser `rules_file` in `{paths['regret']}`): there they are the "
                "model's bet; stage plan proposes the launches that would measure it."
                + (f" In {share_range(alien)} of the cells the bet is on an algorithm of a kind none of the measured "
                   "ones is (`foreign_share`: blocks beside trees, or the linear algorithm beside trees), priced by "
                   "the physics and the machine's costs the calibration measured." if len(alien) else ""), ""]
    return out


def what_if_markdown(what_if: dict[str, pd.DataFrame], paths: dict, sizes=(1, 1048576),
                     validation: pd.DataFrame | None = None) -> list[str]:
    """The summary's section on machines nobody measured (``what_if``: name -> its predictions,
    results/model/what_if/{name}.parquet): per operation and mapping, at the largest P priced, the
    algorithm the most corrected mode that priced the mapping (:func:`collat.selection.choice.what_if_mode`)
    prices fastest on the avg target at each of ``sizes`` (the nearest priced size), with its price;
    with ``validation`` (results/model/validation.csv) what its modes are worth beyond the measured P."""
    from collat.model.hybrid_mode import CARRIED
    from collat.selection.choice import what_if_mode

    out = []
    for name, pred in what_if.items():
        if pred.empty:
            continue
        target = "avg" if (pred["target"] == "avg").any() else "max"
        d = pred[pred["target"] == target]
        priced = np.sort(d["size"].unique())
        near = [int(priced[np.abs(np.log2(priced) - np.log2(m)).argmin()]) for m in sizes]
        P = int(d["P"].max())
        worth = "the validation's extrapolation split above says what that is worth"
        if validation is not None:
            from collat.model.validation import leaderboard

            board = leaderboard(validation)
            board = board[(board["split"] == "extrapolation") & (board["target"] == target)].set_index("model")
            if {CARRIED, "calibrated"} <= set(board.index):
                worth = (f"in the validation's extrapolation split, {target}, the median relative error of that "
                         f"correction is {board.loc[CARRIED, 'median_mape']:.3f} against the calibrated mode's "
                         f"{board.loc['calibrated', 'median_mape']:.3f}")
        out += [f"## A machine nobody measured: {name} — `{paths['what_if'][name]}`", "",
                f"Priced at P = {P} ({target} target; predictions, not measurements) by the hybrid mode under "
                "the mappings that place ranks as the measured machine did (its residuals on the measured "
                "cells hold there; beyond the measured P it carries the residual of each curve's last "
                f"measured P: {worth}), else by the "
                "calibrated mode. Every algorithm the mode prices competes, those nobody measured too: the "
                "unseen_algorithm split says how well one of them is priced. Fastest algorithm and its price [µs]:", "",
                "| operation | mapping | mode | " + " | ".join(f"{m} B" for m in near) + " |",
                "|---|---|---|" + "---|" * len(near)]
        top = d[d["P"] == P]
        for (op, mapping), g in top.groupby(["operation", "mapping"], sort=True):
            mode = what_if_mode(pred, mapping)
            g = g[g["mode"] == mode]
            cells = []
            for m in near:
                row = g[g["size"] == m].sort_values(["predicted", "algorithm"]).iloc[0]
                cells.append(f"{row['algorithm_name']} ({int(row['algorithm'])}): {row['predicted']:.3g}")
            out.append(f"| {op} | {mapping} | {mode} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def coverage_range_markdown(intervals: pd.DataFrame | None, paths: dict) -> list[str]:
    """How sure the validation's coverage is (:func:`collat.model.validation.coverage_range`): the width
    of its range over the curves, and the rows whose range leaves out the nominal level; nothing
    without ranges."""
    from collat.model.validation import INTERVAL, RANGE_LEVEL

    if intervals is None or "coverage_low" not in intervals or intervals["coverage_low"].isna().all():
        return []
    t = intervals.dropna(subset=["coverage_low", "coverage_high"])
    span = t["coverage_high"] - t["coverage_low"]
    off = t[(t["coverage_low"] > INTERVAL) | (t["coverage_high"] < INTERVAL)]
    rows = "; ".join(f"{r.model} {r.target} {r.split} {r.coverage:.3f} ({r.coverage_low:.3f}-{r.coverage_high:.3f})"
                     for r in off.itertuples())
    return [f"A share inside the 80 % interval pools the cells of the split's curves (operation, algorithm, "
            f"mapping), and a curve's cells err together. Drawn again by curve, its {RANGE_LEVEL * 100:.0f} % range is "
            f"{span.min():.2f}-{span.max():.2f} wide (`{paths.get('intervals', 'results/model/intervals.csv')}`, "
            "columns coverage_low and coverage_high). "
            + (f"It leaves out {INTERVAL:.2f} for {rows}." if len(off) else
               f"Every range holds {INTERVAL:.2f}."), ""]


def noise_floor_markdown(floors: pd.DataFrame | None, paths: dict) -> list[str]:
    """The noise floor per mapping and nodes spanned (results/model/noise_floor.csv,
    :func:`collat.model.validation.noise_floors`), one line per target and kind (repeats in one job; the
    default against a forced run of the same tree, another job); nothing without such rows."""
    from collat.model.validation import FLOOR_KINDS

    if floors is None:
        return []
    f = floors[floors["mapping"] != "all"]
    if "operation" in f:  # the floors over both operations (the intervals take each operation's own)
        f = f[f["operation"] == "all"]
    if "kind" not in f:
        f = f.assign(kind="repeats")
    where = paths.get("noise_floor", "results/model/noise_floor.csv")
    lead = {"repeats": "Where the data hold repeated runs, the floor per mapping and number of nodes the communicator "
                       f"spans (`{where}`): ",
            "another_run": "The same configuration measured by two jobs (OpenMPI's default where its fixed rules run "
                           "a forced algorithm's tree, against that forced algorithm's run; kind `another_run`): "}
    tail = {"repeats": ". Where it is high the same measurement repeated differs that much, and the errors above are "
                       "read against it there.",
            "another_run": ". A prediction scored on another job's measurements cannot be expected to come closer."}
    out = []
    for kind in FLOOR_KINDS:
        parts = []
        for target, g in f[f["kind"] == kind].groupby("target", sort=True):
            cells = ", ".join(f"{r['mapping']} on {r['nodes']} node{'s' if str(r['nodes']) != '1' else ''} "
                              f"{r['floor']:.3f} ({int(r['cells'])} cells)" for _, r in g.iterrows())
            parts.append(f"{target}: {cells}")
        if parts:
            out += [lead[kind] + "; ".join(parts) + tail[kind], ""]
    if "spread" in f and (f["kind"] == "another_run").any():
        out += ["So the fitted modes' 80 % intervals in the model stage's grid are for a new run: between and "
                "beyond measured P, and at sizes nobody measured, on a curve whose measurements come from one "
                "file (one job, whose validation saw that job's noise only), they add in quadrature how far two "
                "jobs' runs of one configuration lie apart (column `spread`, the 80th percentile of "
                "|log(a / b)|).", ""]
    return out


def full_node_markdown(calibration: pd.DataFrame | None, paths: dict) -> list[str]:
    """How many times slower the calibrated mode prices a call where some node has a rank on every
    core (results/model/calibration.csv, parameter ``full_node_factor``), per operation and target:
    fitted, with its 95 % interval, or not fitted (the NBFT runs' slowdown, or 1); nothing where
    every factor is 1 (no node filled, or none slower)."""
    from collat.model.calibrated_mode import FULL

    rows = None if calibration is None else calibration[calibration["parameter"] == FULL]
    if rows is None or rows.empty or (rows["value"] == 1.0).all():
        return []
    parts = []
    for _, r in rows.sort_values(["operation", "target"]).iterrows():
        if bool(r["fitted"]):
            parts.append(f"{r['operation']} {r['target']} {r['value']:.2f} (95 %: {r['low']:.2f}-{r['high']:.2f})")
        else:
            parts.append(f"{r['operation']} {r['target']} {r['value']:.2f} (not fitted)")
    where = paths.get("calibration", "results/model/calibration.csv")
    return [f"## A node with a rank on every core — `{where}`", "",
            "With a rank on every core of a node, none is left for the operating system, whose work delays a "
            "rank others wait for. The calibrated mode prices such a call this many times the same call with a "
            "core idle (`full_node_factor`: fitted where cells fill a node alone; else the slowdown of the NBFT "
            "runs that fill a node): " + "; ".join(parts) + ". Where it is well above 1, leaving a core of each "
            "node idle is worth measuring.", ""]


UNSEEN_MODELS = ("calibrated", "hybrid", "hybrid_untwinned", "openmpi")  # fitted modes, then the physics alone


def unseen_algorithm_markdown(validation: pd.DataFrame, paths: dict, trees=None) -> list[str]:
    """The unseen_algorithm split per operation and mapping (:func:`collat.model.validation.by_operation_mapping`):
    each fitted mode beside the openmpi mode, their intervals' coverage, and where the calibration
    carried worse than the physics alone; with ``trees`` (config ``model.openmpi.trees``), the
    coverage of the algorithms of a kind measured apart from those of a kind nobody measured
    (:func:`kind_coverage_markdown`); nothing without that split."""
    from collat.model.validation import by_operation_mapping

    t = by_operation_mapping(validation)
    t = t[t["model"].isin(UNSEEN_MODELS)]
    if t.empty:
        return []
    error = t.pivot_table(index=["operation", "mapping", "target"], columns="model", values="median_mape")
    inside = t.pivot_table(index=["operation", "mapping", "target"], columns="model", values="coverage")
    held = t.groupby(["operation", "mapping", "target"])["curves"].max()
    fitted = [m for m in UNSEEN_MODELS[:-1] if m in error]
    names = {"hybrid_untwinned": "hybrid, no twins"}
    out = [f"### An algorithm nobody measured, per operation and mapping — `{paths['validation']}`", "",
           "Split unseen_algorithm, each algorithm of an operation held out in turn: per operation and mapping, the "
           "median over the held-out algorithms of each one's median relative error, the openmpi mode (nothing "
           "fitted on collectives) beside the fitted modes, then the share of test points inside each fitted "
           "mode's 80 % interval.", "",
           "| operation | mapping | target | held out | " + " | ".join(names.get(m, m) for m in fitted)
           + (" | openmpi" if "openmpi" in error else "") + "".join(f" | in 80 %: {names.get(m, m)}" for m in fitted)
           + " |",
           "|---|---|---|---|" + "---|" * (len(fitted) * 2 + ("openmpi" in error))]

    def number(frame, key, model, digits="3f"):
        v = frame[model].get(key, np.nan) if model in frame else np.nan
        return "—" if pd.isna(v) else f"{v:.{digits}}"

    worse = []
    for key in error.index:
        row = [*key, str(int(held[key]))] + [number(error, key, m) for m in fitted]
        row += [number(error, key, "openmpi")] if "openmpi" in error else []
        row += [number(inside, key, m, "2f") for m in fitted]
        out.append("| " + " | ".join(row) + " |")
        if {"calibrated", "openmpi"} <= set(error) and error.loc[key, "calibrated"] > error.loc[key, "openmpi"]:
            worse.append(f"{key[0]} under map-by {key[1]}, {key[2]} ({error.loc[key, 'calibrated']:.3f} against "
                         f"{error.loc[key, 'openmpi']:.3f})")
    if {"calibrated", "openmpi"} <= set(error):
        out += ["", ("The calibration carried worse than the physics alone to the algorithms held out of "
                     + "; ".join(worse) + ": there a bet on an algorithm nobody measured rests on the weaker price.")
                if worse else "The calibrated mode prices the held-out algorithms no worse than the openmpi mode "
                              "on every operation and mapping."]
    return out + [""] + (kind_coverage_markdown(validation, trees) if trees is not None else [])


def kind_coverage_markdown(validation: pd.DataFrame, trees) -> list[str]:
    """The split's 80 % intervals by kind (:func:`collat.model.validation.by_kind`): how much of a held-out
    algorithm's test points they hold where another measured algorithm is of its kind, and where none is
    (its interval then the physics' error on the others); nothing where every held-out algorithm is of
    one of the two."""
    from collat.model.validation import by_kind

    t = by_kind(validation, trees)
    t = t[t["model"].isin(UNSEEN_MODELS) & t["coverage"].notna()]
    if t.empty or t["foreign"].nunique() < 2:
        return []
    targets = list(dict.fromkeys(t["target"]))
    names = {"hybrid_untwinned": "hybrid without twins"}

    def said(foreign):
        g = t[t["foreign"] == foreign]
        shares = ", ".join(f"{names.get(m, m)} " + " / ".join(
            f"{v:.2f}" for v in (g[(g["model"] == m) & (g["target"] == tg)]["coverage"].mean() for tg in targets))
            for m in dict.fromkeys(g["model"]))
        return f"({g['algorithms'].iloc[0]}; {int(g['points'].max())} test points): {shares}."

    return [f"Inside the 80 % interval, by kind ({' / '.join(targets)}; nominal 0.80). Held-out algorithms of a kind "
            f"another measured algorithm of their operation is {said(False)} Of a kind none of the others is "
            f"{said(True)} These are priced by the physics and the machine's costs the calibration measured; "
            "their interval is the physics' error on the other algorithms, not on their own kind.", ""]


def default_runs_markdown(runs: pd.DataFrame | None, paths: dict) -> list[str]:
    """The default held out, at the points where its fixed rules run an algorithm nobody forced
    (:func:`collat.model.validation.by_default_run`, ``forced`` False): measurements of an algorithm
    nobody measured, out of sample for every model; nothing where there are none."""
    if runs is None or runs.empty:
        return []
    t = runs[~runs["forced"].astype(bool) & runs["model"].isin(UNSEEN_MODELS)]
    if t.empty:
        return []
    key = ["operation", "algorithm", "mapping", "target"]
    error = t.pivot_table(index=key, columns="model", values="median_error")
    inside = t.pivot_table(index=key, columns="model", values="coverage")
    points = t.groupby(key)["points"].max()
    models = [m for m in UNSEEN_MODELS if m in error]
    fitted = [m for m in models if m != "openmpi" and m in inside and inside[m].notna().any()]
    out = [f"### Algorithms nobody forced, as the default runs them — `{paths['default_runs']}`", "",
           "Split unseen_algorithm, OpenMPI's default held out, at the points where its fixed rules run an "
           "algorithm no measured curve forced (with the default's own segment size and fan-out): measurements "
           "of an algorithm nobody measured, out of sample for every model. Median relative error over the "
           "points, then the share inside each fitted mode's 80 % interval.", "",
           "| operation | algorithm | mapping | target | points | " + " | ".join(models)
           + "".join(f" | in 80 %: {m}" for m in fitted) + " |",
           "|---|---|---|---|---|" + "---|" * (len(models) + len(fitted))]
    for key in error.index:
        row = [key[0], str(int(key[1])), key[2], key[3], str(int(points[key]))]
        row += ["—" if pd.isna(error.loc[key, m]) else f"{error.loc[key, m]:.3f}" for m in models]
        row += ["—" if pd.isna(inside.loc[key, m]) else f"{inside.loc[key, m]:.2f}" for m in fitted]
        out.append("| " + " | ".join(row) + " |")
    return out + [""]


SPLIT_WORDS = {"sparse_P": "at P held out", "extrapolation": "beyond the largest measured P",
               "unseen_algorithm": "for an algorithm nobody measured", "unseen_mapping": "under a mapping nobody measured",
               "sizes": "at sizes nobody measured"}
NOT_A_FITTED_MODEL = ("measured_neighbours", "paper", "hybrid_carried", "hybrid_untwinned")  # no model, tuned on all data, variants


def headline(board: pd.DataFrame, unseen_P: pd.DataFrame | None, target: str = "avg") -> str:
    """The summary's opening: per split, the median relative error on ``target`` of the best model
    (the openmpi mode, fitted on no collective, and the baselines among them; named where it is not
    the model best on most splits, which leads the sentence) beside the noise floor (on an unseen
    algorithm the hybrid's without twins), and the share of held-out-P cells whose pick is within
    10 % of the best."""
    from collat.model.hybrid_mode import UNTWINNED

    b = board[(board["target"] == target) & ~board["model"].isin(NOT_A_FITTED_MODEL)].copy()
    # an algorithm nobody measured: the hybrid scored without twins (a measured default that ran the
    # same tree is a measurement, not a prediction)
    untwinned = board[(board["split"] == "unseen_algorithm") & (board["target"] == target)
                      & (board["model"] == UNTWINNED)]["median_mape"]
    honest = (b["split"] == "unseen_algorithm") & (b["model"] == "hybrid")
    if len(untwinned) and honest.any():
        b.loc[honest, "median_mape"] = float(untwinned.iloc[0])
    best = b.sort_values("median_mape").drop_duplicates("split").set_index("split")

    models = [best.loc[split, "model"] for split in SPLIT_WORDS if split in best.index]
    # the model best on most splits leads the sentence (a tie: the first split's); the others are named
    lead = max(models, key=lambda m: (models.count(m), -models.index(m))) if models else ""

    def said(split: str) -> str:  # the model where it is not the lead, and what the hybrid left out
        model = best.loc[split, "model"]
        notes = [] if model == lead else [f"{model} mode"]
        if split == "unseen_algorithm" and len(untwinned) and model == "hybrid":
            notes.append("no twins")
        return f" ({', '.join(notes)})" if notes else ""

    parts = [f"{best.loc[split, 'median_mape']:.3f} {words}{said(split)}"
             for split, words in SPLIT_WORDS.items() if split in best.index]
    if not parts:
        return ""
    who = f"the {lead} mode"
    floor = b["floor"].iloc[0]
    floor = (f"the noise floor of repeated runs is {floor:.3f}" if np.isfinite(floor)
             else "no repeated runs measure a noise floor")
    text = (f"Predicting what was not measured, {who} is off by a median relative error of " + ", ".join(parts)
            + f" ({target} target; {floor}).")
    if unseen_P is not None and len(unseen_P):
        u = unseen_P[unseen_P["target"] == target]["within_10pct"]
        if len(u):
            text += (f" At P held out, its choice of algorithm is within 10 % of the fastest measured in "
                     f"{share_range(u)} of cells, per operation and mapping.")
    return text


def segments_markdown(rules: dict) -> list[str]:
    """A paragraph on the rules files' segment sizes (``rules``: path -> text; config
    ``model.segment_sizes``): how many rules name one, a bet no measurement backs."""
    from collat.selection.rulesfile import parse_rules

    counts = {}
    for path, text in rules.items():
        picks = [rule for _, blocks in parse_rules(text).items() for _, sizes in blocks for rule in sizes]
        counts[path] = (sum(1 for *_, seg in picks if seg > 0), len(picks))
    return ["**Segment sizes in the rules files** (`model.segment_sizes`): " + "; ".join(
                f"`{path}` {n} of {total} rules" for path, (n, total) in counts.items())
            + " name one. The model priced them (a tree's first segment and a pipeline step per further "
            "segment, results/model/segments.parquet); no measurement here had a segment size, so those "
            "rules are its bet, not a measured choice: measure them (plan stage) before trusting them.", ""]


def summary_markdown(hockney: pd.DataFrame, model_scores: pd.DataFrame, regression_scores: pd.DataFrame,
                     tables: list[pd.DataFrame], crossover: pd.DataFrame | None, paths: dict, size: int,
                     setting: dict | None = None, validation: pd.DataFrame | None = None,
                     selection: tuple[pd.DataFrame, pd.DataFrame] | None = None,
                     nbft_fits: pd.DataFrame | None = None, what_if: dict | None = None,
                     noise_floors: pd.DataFrame | None = None, figure_setting: dict | None = None,
                     rules: dict | None = None, fanout_form: str = "line", pick: str = "expected",
                     algorithms: str = "every", eager: tuple[float, str] | None = None,
                     default_runs: pd.DataFrame | None = None, calibration: pd.DataFrame | None = None,
                     trees=None, intervals: pd.DataFrame | None = None) -> str:
    """results/summary.md: the headline numbers, each with the file it comes from; ``selection`` is
    (regret.csv, regret_unseen_algorithm.csv, regret_unseen_P.csv) of the selection stage;
    ``nbft_fits`` (results/nbft/fits.csv) names the fan-outs priced by assumption, not measurement;
    ``figure_setting`` (config ``partitioned.figure``) adds the figures' break-even beside ``setting``'s;
    ``pick``: config ``selection.pick``; ``eager``: the eager limit and its source
    (:func:`collat.model.options.eager_limit`); ``default_runs``: results/model/default_runs.csv;
    ``calibration``: results/model/calibration.csv (:func:`full_node_markdown`); ``trees``: config
    ``model.openmpi.trees`` (:func:`kind_coverage_markdown`); ``intervals``: results/model/intervals.csv
    (:func:`coverage_range_markdown`)."""
    out = ["# Summary", ""]
    board = None
    if validation is not None and len(validation):
        from collat.model.validation import leaderboard

        board = leaderboard(validation)
        unseen_P = selection[2] if selection is not None and len(selection) > 2 else None
        opening = headline(board, unseen_P)
        if opening:
            out += [opening, ""]
    out += ["Sizes are in bytes, times in µs. Every number below is read from the file named in its section's "
            "title.", ""]
    assumed = None if nbft_fits is None else nbft_fits[nbft_fits["method"] == "assumed"]
    if assumed is not None and len(assumed):
        which = "; ".join(f"{op} {target} on {', '.join(sorted(g['channel']))}"
                          for (op, target), g in assumed.groupby(["operation", "target"]))
        out += [f"**Fan-outs not measured** — `{paths.get('nbft_fits', 'results/nbft/fits.csv')}`: {which}. The "
                "model prices them with the line `nbft.unmeasured_slope` assumes (method `assumed`), not with an NBFT "
                "measurement. The openmpi and paper modes rest on it; the calibrated mode only starts from it. "
                "`benchmarks/nbft_ablation.py` measures what the NBFT files are worth on the study's data "
                "(benchmarks/README.md gives its latest figures).", ""]
    if board is not None:
        out += [f"## Predicting what was not measured — `{paths['validation']}`", "",
                "Each split divides the measured cells into a training part and a test part. Every model is fitted "
                "on the training part and scored on the test part (robust cleaning, all sizes).", "",
                "Columns: *cells*, the (operation, algorithm, mapping) cells scored; *median relative error*, "
                "|predicted − measured| / measured, the median over a cell's test points, then over cells; "
                "*× floor*, that error over the noise floor (the median difference between repeated "
                "measurements of one cell); *median R²*, over cells; *in 80 % interval*, the share of the test "
                "points inside a fitted model's 80 % prediction interval (— for a model without one).", "",
                "An interval's half-width (log latency) is the 80th percentile of the model's error on inner "
                "folds of the training part that hold out what the split holds out, each calibrated again on its "
                "own training cells; it grows along a line in a point's octaves from them. A test point in a regime "
                "that no training cell of its curve is in (a socket or node its mapping had not filled; sizes "
                "past a channel's protocol switch or its half-performance length) adds in quadrature the width of a mapping held out of "
                "the training part, or of its cells on a node the others never reach where some are.", "",
                "An algorithm held out with no inner fold to show how it is priced (one algorithm of its operation "
                "in the training part, or one of a kind none of theirs is) has an interval at least as wide as the "
                "error of its price on the training cells (its 80th percentile): the openmpi mode's price with the "
                "machine's costs the fold's calibration measured.", "",
                "A hybrid price that is a measurement of the same run (OpenMPI's default measured where its fixed "
                "rules run the held-out algorithm's shape: a twin) has the interval of a run by another job, the "
                "spread of the training part's own pairs of the default and a forced run of its tree (80th "
                "percentile of |log(a / b)|, per operation, mapping and number of nodes), not the split's width; "
                "that rule was chosen after the twin cells' coverage was seen on this split (a width from the "
                "inner folds' own twins was seen first).", "",
                "These rules were chosen on these splits (the larger of the two widths was seen first; the "
                "node's cells alone after the extrapolation split's coverage was seen under 0.75).", "",
                "Models:", "",
                "- *calibrated*: OpenMPI's shapes with channel costs fitted on the training part of every split and "
                "fold (a fan-out priced by a fitted line in its receivers; with `model.calibrated.nbft_shape`, by "
                "the measured NBFT fan-out with a fitted line under it);",
                "- the calibrated mode, for an algorithm the training part lacks: the blend of its price and the "
                "openmpi mode's that prices the training part's own algorithms best, each held out in turn "
                "(`results/model/transfer.csv` for the fit on all the data); for one of a kind none of the training "
                "part's algorithms is (blocks beside trees: the scatter-allgathers, the split binary tree, "
                "Rabenseifner's reduce; a root of P - 1 children beside trees of a few), the openmpi mode's price "
                "plus the machine's costs the calibration measured (fresh pages, copies, a full node's slowdown);",
                "- *hybrid*: the calibrated mode times its own log residuals, interpolated along P, keeping of the "
                "model's bend between two training P the share that inner folds of the training part find worth "
                "keeping (`results/model/bend.csv` for the fit on all the data). Beyond the "
                "training P it is averaged with the segmented fit; where no algorithm was measured at the operation "
                "and mapping, with the openmpi mode;",
                "- the hybrid, for an algorithm nobody measured: the other algorithms' residuals, weighted by how "
                "alike the model prices their runs, times the share the measured algorithms share with each other "
                "(none for one of a kind none of theirs is: the calibrated mode's price of it). A training cell "
                "the model prices as the same run (OpenMPI's default running that tree) lends its measurement;",
                "- *hybrid_carried* (extrapolation only): the same without the segmented fit, as a what-if machine "
                "is priced;",
                "- *hybrid_untwinned* (unseen_algorithm only): the same without the measurement the model prices as "
                "the same run (a twin is a measurement, not a prediction);",
                "- *openmpi*: what OpenMPI runs, priced from the point-to-point and NBFT stages alone (nothing "
                "fitted on collectives);",
                "- *segmented*: study eq. 12 on the training part; *nearest_neighbour*: the nearest training cells;",
                "- *training_neighbours* (sparse_P only): no model, each test cell on the straight line (log "
                "latency against log P) between the training part's measurements at the nearest P on either side: "
                "what a model's physics must beat at P held out;",
                "- *measured_neighbours* (sparse_P only): not a prediction, each test cell interpolated from the "
                "measurements at the nearest measured P on either side, which the split held out;",
                "- *paper*: its segment counts were tuned on all of this data, so it is not out of sample.", "",
                "Not out of sample for their choice: the hybrid's rules (for an unseen algorithm, the scales tried, "
                "the error that picks one, the choice per operation) were chosen by comparing variants on these "
                "same splits, and the calibrated mode's shared rendezvous bytes were found so before each "
                "calibration chose them on its own training cells (`model.openmpi.concurrent_rendezvous: auto`); "
                "so was the rule that picks the calibrated mode's blend for an unseen algorithm (the "
                "best worst held-out algorithm; the pooled median over held-out cells was seen first). The "
                "blend's weight itself is chosen inside each fold's training part.", "",
                "The hybrid's bend weight was added after the straight line between training measurements "
                "(*training_neighbours*) was seen to beat the hybrid at P held out, and one weight per operation (not one for all, nor one per "
                "mapping) by comparing the three on this split; the weight itself is chosen inside each fold's "
                "training part.", "",
                "The linear algorithm became a kind of its own (priced by the openmpi mode beside trees alone) "
                "after this split showed the openmpi mode pricing it better held out; nothing is fitted for it.", "",
                "A reduce's messages through a node's link were grouped by the children's height instead of the "
                "parents' depth after OpenMPI's default reduce, held out of this split under map-by node, was seen "
                "priced at a third of its measurement; nothing is fitted for it.", "",
                "The intervals' form in the distance to the training cells was chosen on these splits too: a "
                "constant width and one proportional to 1 + the distance were seen before the line in the "
                "distance, whose two parts are fitted on the inner folds.", "",
                *(["With `model.calibrated.nbft_shape: auto`, each calibration keeps the fan-out form closer to "
                   "every training cell; that rule was chosen on these splits (the form closer to the "
                   "calibration's own cells was seen first).", ""] if fanout_form == "auto" else []),
                "| split | target | model | cells | median relative error | × floor | median R² | in 80 % interval |",
                "|---|---|---|---|---|---|---|---|"]
        for _, r in board.sort_values(["split", "target", "median_mape"]).iterrows():
            inside = "—" if pd.isna(r["coverage"]) else f"{r['coverage']:.2f}"
            out.append(f"| {r['split']} | {r['target']} | {r['model']} | {int(r['cells'])} | {r['median_mape']:.3f} "
                       f"| {r['mape_over_floor']:.1f} | {r['median_r2']:.2f} | {inside} |")
        floors = board.groupby("target")["floor"].first()
        out += ["", "Noise floor: " + ", ".join(f"{t} {v:.3f}" for t, v in floors.items()), ""]
        out += coverage_range_markdown(intervals, paths)
        out += noise_floor_markdown(noise_floors, paths)
        out += unseen_algorithm_markdown(validation, paths, trees)
        out += default_runs_markdown(default_runs, paths)
    if selection is not None:
        out += selection_markdown(selection[0], selection[1], paths, *selection[2:], pick=pick, algorithms=algorithms)
    if rules:
        out += segments_markdown(rules)
    if what_if:
        out += what_if_markdown(what_if, paths, validation=validation)
    out += [f"## Point-to-point channels (Hockney T = α + β·m) — `{paths['hockney']}`", "",
            "One row per channel and regime: *α*, the line's latency at zero bytes (negative: the line crosses "
            "zero below the regime's sizes, an intercept, not a latency); *1/β*, its bandwidth (β is the time per "
            "byte); *sizes*, the message sizes the regime covers.", "",
            "| channel | α [µs] | 1/β [GB/s] | sizes |", "|---|---|---|---|"]
    for ch, g in hockney.groupby("channel", sort=False):
        for _, r in g.sort_values("regime").iterrows():
            sizes = (f"{int(r['size_min'])}-{int(r['size_max'])} B" if {"size_min", "size_max"} <= set(r.index)
                     else f"regime {int(r['regime'])}")
            out.append(f"| {ch} | {r['alpha_us']:.2f} | {r['bandwidth_GBps']:.1f} | {sizes} |")
    if eager is not None:
        from collat.model.options import EAGER_SOURCES

        out += ["", f"The model sends messages up to {eager[0]:.0f} B eagerly (a reduce sender's call ends when its "
                "message is out), larger ones by rendezvous (it ends when the receiver takes the message). The limit "
                f"is {EAGER_SOURCES[eager[1]]}."]
    full_node = full_node_markdown(calibration, paths)
    if full_node:
        out += [""] + full_node[:-1]  # the next section opens with its blank line
    out += ["", f"## Best R² at {size} B per model — `{paths['model_scores']}`, `{paths['regression_scores']}`", "",
            f"*Best R² (cell)*: the highest R² over the (operation, algorithm, mapping) cells at {size} B, and its "
            "cell; *median R² over cells*, with, for the segmented model, the median of its 5-fold cross-validated "
            "and extrapolated R². These are in-sample scores; the calibrated mode's costs were fitted on the cells "
            "it is scored on. Out-of-sample errors are in the first section.", "",
            "| model | mode / target | cleaning | best R² (cell) | median R² over cells |", "|---|---|---|---|---|"]
    ms = model_scores[model_scores["size"] == size]
    for (mode, target, cleaning), g in ms.groupby(["mode", "target", "cleaning"]):
        if cleaning == "none":
            continue
        g = g.dropna(subset=["r2"])
        if g.empty:
            continue
        b = g.loc[g["r2"].idxmax()]
        label = "point-to-point, fitted on these data" if mode == "calibrated" else "point-to-point"
        out.append(f"| {label} | {mode} / {target} | {cleaning} | {b['r2']:.3f} ({b['operation']} "
                   f"{b['algorithm_name']}, map-by {b['mapping']}) | {g['r2'].median():.3f} |")
    rs = regression_scores[regression_scores["size"] == size]
    for (target, cleaning), g in rs.groupby(["target", "cleaning"]):
        if cleaning == "none":
            continue
        g = g.dropna(subset=["r2"])
        if g.empty:  # every curve too short for an R² (a few P per curve)
            continue
        b = g.loc[g["r2"].idxmax()]
        out.append(f"| segmented (study eq. 12) | in-sample / {target} | {cleaning} | {b['r2']:.3f} ({b['operation']} "
                   f"{b['algorithm_name']}, map-by {b['mapping']}) | {g['r2'].median():.3f} "
                   f"(cross-validated {g['r2_cv'].median():.3f}, extrapolated {g['r2_extrapolation'].median():.3f}) |")
    out += ["", f"## The study's tables — `{paths['tables']}`", "",
            "*Cells*: the table's (algorithm, mapping) rows; *largest difference*: our R² as the study printed it "
            "minus the published one, the largest in absolute value, with its row (`tables.md` has every row).", "",
            "| table | cells | largest difference from the published R² (ours as printed − published) |", "|---|---|---|"]
    for t in tables:
        d = t["difference"].abs()
        worst = t.loc[d.idxmax()]
        out.append(f"| {int(t['table'].iloc[0])} | {len(t)} | {worst['difference']:+.3f} "
                   f"(algorithm {int(worst['algorithm'])}, map-by {worst['mapping']}) |")
    if crossover is not None and len(crossover) and setting:
        def break_even(threads, theta, delay) -> dict:
            c = crossover[(crossover["threads"] == threads) & (crossover["theta"] == theta)
                          & (crossover["delay"] == delay)]
            return dict(zip(c["link"], c["crossover_size"]))

        here = break_even(setting["threads"], setting["theta"], setting["delay"])
        columns = [f"N = {setting['threads']}, θ = {setting['theta']}, '{setting['delay']}' [kB]"]
        values = [here]
        why = f" ({setting['note']})" if setting.get("note") else ""
        text = (f"The total message size above which pipelining the partitions pays (η = 1), first for N = "
                f"{setting['threads']} threads, θ = {setting['theta']} partition per thread and delay model "
                f"'{setting['delay']}'{why}.")
        if figure_setting and (figure_setting["threads"], figure_setting["workload"]) != (setting["threads"],
                                                                                         setting["delay"]):
            values.append(break_even(figure_setting["threads"], setting["theta"], figure_setting["workload"]))
            columns.append(f"N = {figure_setting['threads']}, θ = {setting['theta']}, "
                           f"'{figure_setting['workload']}' (the figures) [kB]")
            text += " Then the figures' setting, for comparison with them."
        out += ["", f"## Partitioned communication: where pipelining starts to pay — `{paths['crossover']}`", "",
                text, "", "| link | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for link in here:
            out.append(f"| {link} | " + " | ".join(f"{v.get(link, np.nan) / 1e3:.0f}" for v in values) + " |")
    spaced = []  # list items apart: each a paragraph of its own
    for line in out:
        if line.startswith("- ") and spaced and spaced[-1].startswith("- "):
            spaced.append("")
        spaced.append(line)
    return "\n".join(spaced) + "\n"
