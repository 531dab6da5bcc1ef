"""The study's R² tables (Tables 1-4) regenerated beside the published values, and the summary.

A table row is one (algorithm, mapping): the published R² (config ``paper.tables``), ours with
the paper's own recipe (point-to-point tables: the ``paper`` mode; segmented tables: study eq. 12; both
on the ``paper`` cleaning at 1 B), their difference, and the extra columns a reader wants next to
them (openmpi mode against the completion time, the max target, the cross-validated R²).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


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


def to_markdown(table: pd.DataFrame, title: str, names: dict) -> str:
    """A reader's table: one line per algorithm x mapping, published | ours | difference | extras."""
    cols = [c for c in table.columns if c not in ("table", "operation", "model", "algorithm", "mapping")]
    head = "| algorithm | mapping | " + " | ".join(cols) + " |"
    lines = [f"### Table {int(table['table'].iloc[0])}: {title}", "", head, "|" + "---|" * (len(cols) + 2)]
    for _, r in table.iterrows():
        cells = [f"{r[c]:.3f}" if isinstance(r[c], float) and np.isfinite(r[c]) else "–" for c in cols]
        lines.append(f"| {algorithm_label(int(r['algorithm']), names)} | {r['mapping']} | " + " | ".join(cells) + " |")
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
                       unseen_P: pd.DataFrame | None = None) -> list[str]:
    """The summary's section on choosing the algorithm: per operation x mapping x target, the
    model's pick at P nobody measured (``unseen_P``, regret_unseen_P.csv) and without each algorithm
    (``unseen``, median over the folds) against OpenMPI's default, then the in-sample pick."""
    if regret.empty:
        return []
    mode = regret["mode"].iloc[0]
    out = [f"## Choosing the algorithm — `{paths['regret']}`", "",
           f"The {mode} mode's pick per (P, size) against OpenMPI's default, scored where every forced algorithm "
           "was measured (regret = measured latency of the choice / the best forced algorithm's). Out of sample "
           "first: at the P values the sparse_P split held out, each pick made by a fit that saw every "
           "`validation.sparse_every`-th measured P only, beside the default on the same cells "
           f"(`{paths.get('unseen_P', 'regret_unseen_P.csv')}`) and beside the pick of the measurements at the nearest "
           "other measured P (a reference the model cannot be expected to beat: every candidate measured a few P "
           "away, where the fit saw them `sparse_every` times farther apart), and without each algorithm: the pick among the "
           "forced algorithms by the folds that never saw one of them, median over the folds "
           f"(`{paths['unseen']}`; where the default ran the left-out algorithm's tree, its measurement, another run "
           "of that tree, stands for the left-out one's). In-sample last: the pick of the fit on every cell scored (the hybrid mode "
           "returns the measurement at a measured cell, so its in-sample pick is the measured best).", "",
           "| operation | mapping | target | unmeasured P: within 10 % | geomean regret | default within 10 % | "
           "default geomean regret | nearest measured P: within 10 % | unseen algorithm: within 10 % | "
           "in-sample: within 10 % | picks the default |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    r = regret.set_index(["operation", "mapping", "target", "chooser"])
    folds = unseen.groupby(["operation", "mapping", "target"])["within_10pct"].median() if len(unseen) else None
    sparse = (unseen_P.set_index(["operation", "mapping", "target"]) if unseen_P is not None and len(unseen_P)
              else None)
    for (op, mapping, target), _ in regret.groupby(["operation", "mapping", "target"], sort=True):
        m = r.loc[(op, mapping, target, "model")]
        fold = folds.get((op, mapping, target), np.nan) if folds is not None else np.nan
        if sparse is not None and (op, mapping, target) in sparse.index:
            q = sparse.loc[(op, mapping, target)]
            cols = [q["within_10pct"], q["geomean_regret"], q["default_within_10pct"], q["default_geomean_regret"],
                    q.get("neighbour_within_10pct", np.nan)]
        else:
            cols = [np.nan] * 5
        out.append(f"| {op} | {mapping} | {target} | {cols[0]:.2f} | {cols[1]:.3f} | {cols[2]:.2f} | {cols[3]:.3f} | "
                   f"{cols[4]:.2f} | {fold:.2f} | {m['within_10pct']:.2f} | {m.get('default_share', np.nan):.2f} |")
    return out + ["", "A default regret below 1: OpenMPI's fixed rules run shapes no forced run of the data had "
                  "(k-nomial and in-order binomial trees, pipelines, scatter-allgather; none segmented: the rules "
                  "pass segment size 0).", ""]


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


def noise_floor_markdown(floors: pd.DataFrame | None, paths: dict) -> list[str]:
    """The noise floor per mapping and nodes spanned (results/model/noise_floor.csv,
    :func:`collat.model.validation.noise_floors`), one line per target and kind (repeats in one job; the
    default against a forced run of the same tree, another job); nothing without such rows."""
    from collat.model.validation import FLOOR_KINDS

    if floors is None:
        return []
    f = floors[floors["mapping"] != "all"]
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
    return out


def summary_markdown(hockney: pd.DataFrame, model_scores: pd.DataFrame, regression_scores: pd.DataFrame,
                     tables: list[pd.DataFrame], crossover: pd.DataFrame | None, paths: dict, size: int,
                     setting: dict | None = None, validation: pd.DataFrame | None = None,
                     selection: tuple[pd.DataFrame, pd.DataFrame] | None = None,
                     nbft_fits: pd.DataFrame | None = None, what_if: dict | None = None,
                     noise_floors: pd.DataFrame | None = None) -> str:
    """results/summary.md: the headline numbers, each with the file it comes from; ``selection`` is
    (regret.csv, regret_unseen_algorithm.csv, regret_unseen_P.csv) of the selection stage;
    ``nbft_fits`` (results/nbft/fits.csv) names the fan-outs priced by assumption, not measurement."""
    out = ["# Summary", "", "Every number below is read from the file named beside it; sizes in bytes, times in µs.", ""]
    assumed = None if nbft_fits is None else nbft_fits[nbft_fits["method"] == "assumed"]
    if assumed is not None and len(assumed):
        which = "; ".join(f"{op} {target} on {', '.join(sorted(g['channel']))}"
                          for (op, target), g in assumed.groupby(["operation", "target"]))
        out += [f"**Fan-outs not measured** — `{paths.get('nbft_fits', 'results/nbft/fits.csv')}`: {which}. The "
                "model prices them with the line `nbft.unmeasured_slope` assumes (method `assumed`), not with an NBFT "
                "measurement: the openmpi and paper modes rest on it, the calibrated mode only starts from it. On the "
                "study's data without its NBFT files (slope 0.5, `benchmarks/nbft_ablation.py`), the calibrated and "
                "hybrid modes' median errors moved by at most 0.03 on the P, algorithm and mapping splits and grew "
                "by 0.15-0.18 on the sizes split; the openmpi mode's grew by 0.06-0.19 outside the sizes split; the "
                "selection's share within 10 % of the best moved by at most 0.011.",
                ""]
    if validation is not None and len(validation):
        from collat.model.validation import leaderboard

        board = leaderboard(validation)
        out += [f"## Predicting what was not measured — `{paths['validation']}`", "",
                "Median over (operation, algorithm, mapping) cells of the median relative error on the test part "
                "of each split (robust cleaning, all sizes), beside the noise floor (repeated measurements of one "
                "cell). The calibrated mode is recalibrated on the training part of every split and fold, and the hybrid "
                "mode (the calibration times its own log residuals, interpolated along P; beyond the training P "
                "averaged in log with the segmented fit of the same part where the two go the same way with P, "
                "and with the openmpi mode where no "
                "algorithm was measured at the operation and mapping; for an algorithm nobody measured, the other "
                "algorithms' residuals weighted by how alike the model prices their runs and its own, times the "
                "share of them the measured algorithms share with each other, both found by leaving out one "
                "training algorithm at a time; on a curve with no training cell, a training "
                "cell of another algorithm that the model prices as the same run, such as OpenMPI's default running "
                "the left-out algorithm's tree, lends its measurement, so that under unseen_algorithm part of the "
                "left-out algorithm's cells are measurements of the default) on the same part (`hybrid_carried`, extrapolation "
                "only: the same without the segmented fit, as a what-if machine's P beyond the measured ones are "
                "priced); the hybrid's rules (interpolate along P, carry beyond it, average with the segmented fit "
                "or the openmpi mode where they say; for an algorithm nobody measured, the scales tried, the squared "
                "error that picks one and the choice per operation rather than per mapping) were chosen by "
                "comparing variants on these same splits: its "
                "scores are out of sample for its fit, not for that choice; so were some of the calibrated mode's "
                "terms (model.openmpi.concurrent_rendezvous: the shared rendezvous bytes of a bcast were kept "
                "among four variants). The paper "
                "mode's segment counts were tuned on all of this data: it is not out of sample. `measured_neighbours` "
                "(sparse_P only) is no model: each test cell interpolated in log from the measurements at the "
                "nearest measured P on either side, which the split held out; it shows what measurements a few P "
                "apart, instead of `validation.sparse_every` times farther, tell about the P between them.", "",
                "| split | target | model | cells | median relative error | × floor | median R² |",
                "|---|---|---|---|---|---|---|"]
        for _, r in board.sort_values(["split", "target", "median_mape"]).iterrows():
            out.append(f"| {r['split']} | {r['target']} | {r['model']} | {int(r['cells'])} | {r['median_mape']:.3f} "
                       f"| {r['mape_over_floor']:.1f} | {r['median_r2']:.2f} |")
        floors = board.groupby("target")["floor"].first()
        out += ["", "Noise floor: " + ", ".join(f"{t} {v:.3f}" for t, v in floors.items()), ""]
        out += noise_floor_markdown(noise_floors, paths)
    if selection is not None:
        out += selection_markdown(selection[0], selection[1], paths, *selection[2:])
    if what_if:
        out += what_if_markdown(what_if, paths, validation=validation)
    out += [f"## Point-to-point channels (Hockney T = α + β·m) — `{paths['hockney']}`", "",
            "| channel | α small messages [µs] | bandwidth, largest regime [GB/s] | regimes |", "|---|---|---|---|"]
    for ch, g in hockney.groupby("channel", sort=False):
        g = g.sort_values("regime")
        out.append(f"| {ch} | {g['alpha_us'].iloc[0]:.2f} | {g['bandwidth_GBps'].iloc[-1]:.1f} | {len(g)} |")
    out += ["", f"## Best R² at {size} B per model — `{paths['model_scores']}`, `{paths['regression_scores']}`", "",
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
        b = g.loc[g["r2"].idxmax()]
        out.append(f"| segmented (study eq. 12) | in-sample / {target} | {cleaning} | {b['r2']:.3f} ({b['operation']} "
                   f"{b['algorithm_name']}, map-by {b['mapping']}) | {g['r2'].median():.3f} "
                   f"(cross-validated {g['r2_cv'].median():.3f}, extrapolated {g['r2_extrapolation'].median():.3f}) |")
    out += ["", f"## The study's tables — `{paths['tables']}`", "",
            "| table | cells | largest difference from the published R² (ours as printed − published) |", "|---|---|---|"]
    for t in tables:
        d = t["difference"].abs()
        worst = t.loc[d.idxmax()]
        out.append(f"| {int(t['table'].iloc[0])} | {len(t)} | {worst['difference']:+.3f} "
                   f"(algorithm {int(worst['algorithm'])}, map-by {worst['mapping']}) |")
    if crossover is not None and len(crossover) and setting:
        out += ["", f"## Partitioned communication: where pipelining starts to pay — `{paths['crossover']}`", "",
                f"Break-even total message size for N = {setting['threads']} threads, θ = {setting['theta']}, delay "
                f"model '{setting['delay']}' ({setting.get('note', '')}):", "",
                "| link | break-even size [kB] |", "|---|---|"]
        c = crossover[(crossover["threads"] == setting["threads"]) & (crossover["theta"] == setting["theta"])
                      & (crossover["delay"] == setting["delay"])]
        for _, r in c.iterrows():
            out.append(f"| {r['link']} | {r['crossover_size'] / 1e3:.0f} |")
    return "\n".join(out) + "\n"
