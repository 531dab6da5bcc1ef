"""Tables 1-4 beside the published values, their Markdown/LaTeX forms, and the summary."""

import numpy as np
import pandas as pd
import pytest

from collat.evaluate.tables import r2_table, summary_markdown, to_latex, to_markdown

SPEC_P2P = {"table": 1, "title": "Broadcast, point-to-point model", "operation": "bcast", "model": "p2p",
            "rows": [{"algorithm": 1, "core": 0.9, "socket": 0.8, "node": 0.7}]}
SPEC_SEG = {"table": 2, "title": "Broadcast, segmented", "operation": "bcast", "model": "segmented",
            "rows": [{"algorithm": 1, "core": 0.99, "socket": 0.98, "node": 0.97}]}


def model_scores():
    rows = []
    for mode, target in (("paper", "avg"), ("openmpi", "max"), ("openmpi", "avg")):
        for cleaning in ("paper", "robust"):
            for i, mapping in enumerate(("core", "socket", "node")):
                r2 = {"paper": 0.91 - 0.1 * i, "openmpi": -0.5 if target == "avg" else 0.95}[mode]
                rows.append({"operation": "bcast", "algorithm": 1, "algorithm_name": "linear", "mapping": mapping,
                             "size": 1, "mode": mode, "target": target, "cleaning": cleaning, "r2": r2,
                             "mape": 0.1, "n": 64})
    return pd.DataFrame(rows)


def regression_scores():
    rows = []
    for target in ("avg", "max"):
        for cleaning in ("paper", "robust"):
            for mapping in ("core", "socket", "node"):
                rows.append({"operation": "bcast", "algorithm": 1, "algorithm_name": "linear", "mapping": mapping,
                             "size": 1, "target": target, "cleaning": cleaning, "form": "P", "n": 64, "r2": 0.99,
                             "r2_adj": 0.98, "r2_cv": 0.97, "r2_extrapolation": -0.5, "n_extrapolation": 32,
                             "mape": 0.05})
    return pd.DataFrame(rows)


def test_p2p_table_has_published_ours_difference_and_extras():
    t = r2_table(SPEC_P2P, model_scores(), regression_scores(), 1)
    assert t[["algorithm", "mapping"]].values.tolist() == [[1, "core"], [1, "socket"], [1, "node"]]
    assert t["published"].tolist() == [0.9, 0.8, 0.7]
    assert t["ours"].tolist() == pytest.approx([0.91, 0.81, 0.71])
    assert t["difference"].tolist() == pytest.approx([0.01, 0.01, 0.01])
    assert (t["openmpi_max_robust"] == 0.95).all() and (t["openmpi_avg_robust"] == -0.5).all()


def test_negative_r2_compared_as_printed():
    scores = model_scores()
    scores.loc[scores["mode"] == "paper", "r2"] = -2.0
    t = r2_table(dict(SPEC_P2P, rows=[{"algorithm": 1, "core": 0, "socket": 0, "node": 0}]), scores,
                 regression_scores(), 1)
    assert (t["ours"] == -2.0).all() and (t["ours_as_printed"] == 0).all() and (t["difference"] == 0).all()


def test_segmented_table_and_formats():
    t = r2_table(SPEC_SEG, model_scores(), regression_scores(), 1)
    assert (t["r2_cv"] == 0.97).all() and (t["r2_extrapolation"] == -0.5).all() and (t["max_target_robust"] == 0.99).all()
    md = to_markdown(t, SPEC_SEG["title"], {1: "linear"})
    assert "| linear (1) | socket | 0.980 | 0.990 |" in md
    # every column explained beside the table
    legend = md.strip().splitlines()[-1]
    for column in t.columns.drop(["table", "operation", "model", "algorithm", "mapping"]):
        assert f"`{column}`: " in legend
    tex = to_latex(t, SPEC_SEG["title"], {1: "linear"})
    assert r"\begin{tabular}" in tex and "linear (1) & node & 0.970 & 0.990 & +0.020" in tex


def test_summary_names_its_sources():
    hockney = pd.DataFrame({"channel": ["core", "core"], "regime": [0, 1], "alpha_us": [0.44, 3.0],
                            "bandwidth_GBps": [5.0, 7.9]})
    cross = pd.DataFrame({"link": ["MeluXina"], "threads": [4], "theta": [1], "delay": ["gamma100"],
                          "crossover_size": [146400.0]})
    tables = [r2_table(SPEC_P2P, model_scores(), regression_scores(), 1)]
    paths = {"hockney": "results/pt2pt/hockney.csv", "model_scores": "results/model/scores.csv",
             "regression_scores": "results/regression/scores.csv", "tables": "results/tables/",
             "crossover": "results/partitioned/crossover.csv"}
    text = summary_markdown(hockney, model_scores(), regression_scores(), tables, cross, paths, 1,
                            {"threads": 4, "theta": 1, "delay": "gamma100"})
    for path in paths.values():
        assert f"`{path}`" in text
    # one row per regime: its alpha and its bandwidth 1/beta, not the small messages' alpha beside the large ones'
    assert "| core | 0.44 | 5.0 | regime 0 |" in text and "| core | 3.00 | 7.9 | regime 1 |" in text
    assert "| MeluXina | 146 |" in text
    assert "0.950 (bcast linear, map-by core)" in text
    assert "Fan-outs not measured" not in text
    fits = pd.DataFrame({"operation": ["bcast", "bcast", "reduce"], "target": ["avg", "avg", "max"],
                         "channel": ["core", "node", "core"], "method": ["assumed", "assumed", "fit"]})
    text = summary_markdown(hockney, model_scores(), regression_scores(), tables, cross,
                            {**paths, "nbft_fits": "results/nbft/fits.csv"}, 1, nbft_fits=fits)
    assert "**Fan-outs not measured** — `results/nbft/fits.csv`: bcast avg on core, node. The model" in text
    # the eager limit beside the channels, and where it came from
    assert "eagerly" not in text
    text = summary_markdown(hockney, model_scores(), regression_scores(), tables, cross, paths, 1,
                            eager=(131072.0, "nbft"))
    assert ("The model sends messages up to 131072 B eagerly (a reduce sender's call ends when its message is out), "
            "larger ones by rendezvous (it ends when the receiver takes the message). The limit is the size after "
            "which the NBFT reduce runs' avg / max steps up, as each sender starts to wait for the root.") in text


def test_selection_section_of_the_summary():
    from collat.evaluate.tables import selection_markdown

    rows = [{"operation": "bcast", "mapping": "core", "target": "avg", "mode": "calibrated", "chooser": c,
             "within_10pct": w, "geomean_regret": g, "default_share": d}
            for c, w, g, d in (("model", 0.8, 0.9, 0.4), ("rules_file", 0.85, 0.95, 0.4), ("default", 0.7, 0.85, 1.0))]
    unseen = pd.DataFrame({"operation": "bcast", "mapping": "core", "target": "avg", "within_10pct": [0.7, 0.5, 0.9],
                           "left_out": [1, 5, 6]})
    sparse = pd.DataFrame([{"operation": "bcast", "mapping": "core", "target": "avg", "within_10pct": 0.95,
                            "geomean_regret": 1.01, "default_within_10pct": 0.6, "default_geomean_regret": 1.2,
                            "neighbour_within_10pct": 0.9}])
    paths = {"regret": "r.csv", "unseen": "u.csv", "unseen_P": "p.csv"}
    text = "\n".join(selection_markdown(pd.DataFrame(rows), unseen, paths, sparse))
    assert "The calibrated mode's pick" in text and "`r.csv`" in text and "`u.csv`" in text and "`p.csv`" in text
    assert "smallest expected latency" in text  # selection.pick, its default
    assert "A pick is the smallest prediction" in "\n".join(
        selection_markdown(pd.DataFrame(rows), unseen, paths, sparse, pick="median"))
    # the nearest measured P's pick; folds: median 0.7, the worst 0.5 when 5 was left out; then the
    # in-sample model and its default share
    assert "| bcast | core | avg | 0.95 | 1.010 | 0.60 | 1.200 | 0.90 | 0.70 | 0.50 (5) | 0.80 | 0.40 |  |" in text
    text = "\n".join(selection_markdown(pd.DataFrame(rows), unseen, paths))
    assert "| bcast | core | avg | nan | nan | nan | nan | nan | 0.70 | 0.50 (5) | 0.80 | 0.40 |  |" in text
    rows[0].update(cells=120, algorithms=4, complete_share=0.75)
    text = "\n".join(selection_markdown(pd.DataFrame(rows), unseen, paths))
    assert "| 0.70 | 0.50 (5) | 0.80 | 0.40 | 120, 4 (75% all) |" in text
    assert "No (P, size) cell has two forced algorithms" in "\n".join(
        selection_markdown(pd.DataFrame(rows).iloc[:0], unseen, {}))
    assert "name an algorithm not measured" not in text  # no unmeasured_share: nothing said
    for row, share in zip(rows, (0.0, 0.25, 0.0)):
        row["unmeasured_share"] = share
    rows += [{**row, "target": "max"} for row in rows[:3]]
    rows[4]["unmeasured_share"] = 0.5  # the rules file's, under max
    text = "\n".join(selection_markdown(pd.DataFrame(rows), unseen, paths))
    assert "name an algorithm not measured at the cell in 25%-50% of these cells" in text and "`r.csv`" in text
    assert "where every modelled algorithm competes" in text
    text = "\n".join(selection_markdown(pd.DataFrame(rows), unseen, paths, algorithms="measured"))
    assert "which name only algorithms measured under their mapping (`selection.algorithms: measured`)" in text
    assert "of a kind none of the measured" not in text  # no foreign_share: nothing said
    for row in rows:
        row["foreign_share"] = np.nan if row["chooser"] != "rules_file" else 0.1
    rows[4]["foreign_share"] = 0.3
    text = "\n".join(selection_markdown(pd.DataFrame(rows), unseen, paths))
    assert "In 10%-30% of the cells the bet is on an algorithm of a kind none of the measured ones is" in text


def test_what_if_section_names_the_fastest_priced_algorithm_at_the_largest_P():
    from collat.evaluate.tables import what_if_markdown

    rows = [{"mode": mode, "operation": "bcast", "mapping": "core", "target": "avg", "P": P, "size": m,
             "algorithm": alg, "algorithm_name": name, "predicted": price * (2 if mode == "openmpi" else 1)}
            for mode in ("calibrated", "openmpi") for P in (8, 16) for m in (1, 1024, 2**20)
            for alg, name, price in ((1, "linear", P * m ** 0.5), (6, "binomial", 3 * m ** 0.5 + P / 8))]
    text = "\n".join(what_if_markdown({"big": pd.DataFrame(rows)}, {"what_if": {"big": "w/big.parquet"}}))
    assert "## A machine nobody measured: big — `w/big.parquet`" in text and "Priced at P = 16 (avg target" in text
    # at P = 16: 1 B linear 16 against binomial 5; 1 MiB linear 16384 against binomial 3074 (the
    # calibrated mode's: no hybrid priced; the openmpi mode's twice that)
    assert "| 1 B | 1048576 B |" in text
    assert "| bcast | core | calibrated | binomial (6): 5 | binomial (6): 3.07e+03 |" in text
    assert what_if_markdown({"empty": pd.DataFrame(rows).iloc[:0]}, {}) == []
    # with the validation's scores: what the correction beyond the measured P is worth (medians over cells)
    scores = pd.DataFrame([{"model": m, "split": "extrapolation", "operation": "bcast", "algorithm": a,
                            "mapping": "core", "target": "avg", "cleaning": "robust", "n": 10, "r2": 0.9,
                            "mape": e, "floor": 0.03}
                           for m, errors in (("hybrid_carried", (0.1, 0.3)), ("calibrated", (0.2, 0.4)))
                           for a, e in zip((1, 2), errors)])
    text = "\n".join(what_if_markdown({"big": pd.DataFrame(rows)}, {"what_if": {"big": "w"}}, validation=scores))
    assert "extrapolation split, avg, the median relative error of that correction is 0.200 against the " \
           "calibrated mode's 0.300" in text


def test_noise_floor_line_names_each_mapping_and_node_span():
    from collat.evaluate.tables import noise_floor_markdown

    floors = pd.DataFrame({"target": "avg", "mapping": ["all", "core", "socket"], "nodes": ["all", "1", "2"],
                           "cells": [30, 20, 10], "pairs": [60, 40, 20], "floor": [0.03, 0.02, 0.1]})
    text = "\n".join(noise_floor_markdown(floors, {"noise_floor": "n.csv"}))
    assert "(`n.csv`): avg: core on 1 node 0.020 (20 cells), socket on 2 nodes 0.100 (10 cells)." in text
    assert noise_floor_markdown(floors.iloc[:1], {}) == [] and noise_floor_markdown(None, {}) == []


def test_the_full_node_factor_is_said_fitted_with_its_interval_or_not_fitted():
    from collat.evaluate.tables import full_node_markdown

    rows = pd.DataFrame({"operation": ["bcast", "bcast", "reduce", "reduce"], "target": ["avg", "max"] * 2,
                         "channel": "all", "parameter": "full_node_factor", "value": [1.31, 1.0, 1.815, 1.0],
                         "fitted": [True, True, False, False], "low": [1.16, 0.97, 1.815, 1.0],
                         "high": [1.47, 1.2, 1.815, 1.0]})
    other = pd.DataFrame({"operation": "bcast", "target": "avg", "channel": "all", "parameter": "overhead_us",
                          "value": [0.3], "fitted": [True], "low": [0.2], "high": [0.4]})
    text = "\n".join(full_node_markdown(pd.concat([other, rows]), {"calibration": "c.csv"}))
    assert text.startswith("## A node with a rank on every core — `c.csv`")
    assert len(text.split("\n\n")[1].split()) <= 120  # a reader's paragraph (tests/test_workflow.py)
    assert ("bcast avg 1.31 (95 %: 1.16-1.47); bcast max 1.00 (95 %: 0.97-1.20); reduce avg 1.81 (not fitted); "
            "reduce max 1.00 (not fitted).") in text
    # every factor 1 (nothing slower, or no node filled), or no calibration: no section
    assert full_node_markdown(rows.assign(value=1.0), {}) == [] and full_node_markdown(None, {}) == []
    assert full_node_markdown(other, {}) == []


def test_a_range_of_shares_is_one_percent_where_its_ends_round_alike():
    from collat.evaluate.tables import share_range

    assert share_range([0.82, 0.97, 0.9]) == "82%-97%"
    assert share_range(pd.Series([0.691, 0.694])) == "69%"


def test_the_summary_opens_with_its_headline_in_few_words():
    """The opening names each split's best fitted model's error beside the floor (the paper mode, tuned
    on all the data, and the measured neighbours, no model, do not count), then the selection's range."""
    from collat.evaluate.tables import headline

    board = pd.DataFrame({"split": ["sparse_P", "sparse_P", "sparse_P", "unseen_algorithm"],
                          "target": "avg", "model": ["measured_neighbours", "paper", "hybrid", "hybrid"],
                          "median_mape": [0.01, 0.02, 0.05, 0.2], "floor": 0.03})
    unseen_P = pd.DataFrame({"target": ["avg", "avg", "max"], "within_10pct": [0.82, 0.97, 0.5]})
    text = headline(board, unseen_P)
    assert text == ("Predicting what was not measured, the hybrid mode is off by a median relative error of 0.050 "
                    "at P held out, 0.200 for an algorithm nobody measured (avg target; the noise floor of repeated "
                    "runs is 0.030). At P held out, its choice of algorithm is within 10 % of the fastest measured "
                    "in 82%-97% of cells, per operation and mapping.")
    assert len(text.split()) <= 80
    # on an unseen algorithm the hybrid without twins (a measured default that ran the tree): a twin is
    # a measurement; it competes as the hybrid, so another model may then be the best
    untwinned = pd.concat([board, pd.DataFrame({"split": ["unseen_algorithm"] * 2, "target": "avg",
                                                "model": ["hybrid_untwinned", "calibrated"],
                                                "median_mape": [0.25, 0.3], "floor": 0.03})])
    assert "0.050 at P held out, 0.250 for an algorithm nobody measured (no twins) (avg" in headline(untwinned, unseen_P)
    untwinned.loc[untwinned["model"] == "calibrated", "median_mape"] = 0.24
    text = headline(untwinned, unseen_P)  # one split each: the first split's model leads, the other is named
    assert text.startswith("Predicting what was not measured, the hybrid mode is off by a median relative error "
                           "of 0.050 at P held out, 0.240 for an algorithm nobody measured (calibrated mode) (avg")


def test_the_summary_leaves_out_a_regression_row_without_any_r2():
    # a machine measured at a few P per curve: every segmented fit too short for an R² (NaN)
    hockney = pd.DataFrame({"channel": ["core"], "regime": [0], "alpha_us": [0.44], "bandwidth_GBps": [5.0]})
    short = regression_scores().assign(r2=np.nan)
    paths = {"hockney": "h.csv", "model_scores": "m.csv", "regression_scores": "r.csv", "tables": "t/"}
    text = summary_markdown(hockney, model_scores(), short, [], None, paths, 1)
    assert "segmented (study eq. 12)" not in text and "point-to-point" in text


def test_the_summary_names_the_rules_a_segment_size_was_bet_on():
    from collat.evaluate.tables import segments_markdown
    from collat.selection.rulesfile import write_rules

    text = write_rules({"bcast": [(2, [(0, 1, 0, 0), (65536, 3, 0, 8192)]), (8, [(0, 6, 0, 0)])]})
    out = " ".join(segments_markdown({"rules_map-by-core.txt": text}))
    assert "`rules_map-by-core.txt` 1 of 3 rules name one" in out and "bet" in out


def test_the_summary_discloses_the_fan_out_forms_rule_only_where_the_config_uses_it():
    from collat.model.validation import COLUMNS

    hockney = pd.DataFrame({"channel": ["core"], "regime": [0], "alpha_us": [0.44], "bandwidth_GBps": [5.0]})
    validation = pd.DataFrame([["hybrid", "sparse_P", "bcast", 1, "core", "avg", "robust", 10, 0.9, 0.05, 0.03, 0.8]],
                              columns=COLUMNS)
    paths = {"hockney": "results/pt2pt/hockney.csv", "model_scores": "results/model/scores.csv",
             "regression_scores": "results/regression/scores.csv", "tables": "results/tables/",
             "validation": "results/model/validation.csv"}
    args = (hockney, model_scores(), regression_scores(), [], None, paths, 1)
    line = summary_markdown(*args, validation=validation)
    auto = summary_markdown(*args, validation=validation, fanout_form="auto")
    assert "Not out of sample for their choice" in line and "nbft_shape: auto" not in line
    assert "With `model.calibrated.nbft_shape: auto`, each calibration keeps the fan-out form" in auto


def test_the_summary_says_so_when_no_choice_can_be_scored():
    """A user who measured OpenMPI's default alone has no cell with two forced algorithms: the
    selection's section says that no choice was scored, instead of leaving it out."""
    from collat.evaluate.tables import selection_markdown
    from collat.selection.choice import REGRET_COLUMNS

    empty = pd.DataFrame(columns=REGRET_COLUMNS)
    text = "\n".join(selection_markdown(empty, pd.DataFrame(), {"regret": "results/selection/regret.csv"}))
    assert text.startswith("## Choosing the algorithm — `results/selection/regret.csv`")
    assert "No (P, size) cell has two forced algorithms measured" in text


def unseen_scores(calibrated_node: float):
    """The unseen_algorithm split of two algorithms under two mappings: the calibrated mode's error
    0.1 / 0.3 under map-by core, ``calibrated_node`` on both under map-by node; the openmpi mode's 0.4."""
    rows = []
    for mapping in ("core", "node"):
        for alg, e in ((1, 0.1), (2, 0.3)):
            for model, mape, cover in (("calibrated", e if mapping == "core" else calibrated_node, 0.8),
                                       ("hybrid", e / 2, 0.9), ("openmpi", 0.4, np.nan)):
                rows.append({"model": model, "split": "unseen_algorithm", "operation": "reduce", "algorithm": alg,
                             "mapping": mapping, "target": "avg", "n": 10, "mape": mape, "coverage": cover})
    return pd.DataFrame(rows)


def test_the_unseen_algorithm_split_per_mapping_names_where_the_calibration_carried_worse():
    from collat.evaluate.tables import unseen_algorithm_markdown

    text = "\n".join(unseen_algorithm_markdown(unseen_scores(0.5), {"validation": "v.csv"}))
    assert "— `v.csv`" in text
    assert "| operation | mapping | target | held out | calibrated | hybrid | openmpi | in 80 %: calibrated |" in text
    assert "| reduce | core | avg | 2 | 0.200 | 0.100 | 0.400 | 0.80 | 0.90 |" in text  # medians of 0.1, 0.3
    assert "| reduce | node | avg | 2 | 0.500 | 0.100 | 0.400 | 0.80 | 0.90 |" in text
    assert "held out of reduce under map-by node, avg (0.500 against 0.400)" in text
    better = "\n".join(unseen_algorithm_markdown(unseen_scores(0.35), {"validation": "v.csv"}))
    assert "no worse than the openmpi mode on every operation and mapping" in better
    assert unseen_algorithm_markdown(unseen_scores(0.5).assign(split="sparse_P"), {"validation": "v.csv"}) == []


def test_the_summary_shows_the_default_held_out_where_it_runs_an_algorithm_nobody_forced():
    from collat.evaluate.tables import default_runs_markdown

    runs = pd.DataFrame([  # (algorithm, forced, model, points, error, coverage): reduce, map-by core, avg
        (4, True, "calibrated", 80, 0.1, 0.9), (5, False, "calibrated", 1200, 0.425, 0.62),
        (5, False, "openmpi", 1200, 0.494, np.nan), (5, False, "nearest_neighbour", 1200, 4.0, np.nan)],
        columns=["algorithm", "forced", "model", "points", "median_error", "coverage"]).assign(
        operation="reduce", mapping="core", target="avg")
    text = "\n".join(default_runs_markdown(runs, {"default_runs": "d.csv"}))
    assert "— `d.csv`" in text
    assert "| operation | algorithm | mapping | target | points | calibrated | openmpi | in 80 %: calibrated |" in text
    assert "| reduce | 5 | core | avg | 1200 | 0.425 | 0.494 | 0.62 |" in text
    assert "| reduce | 4 |" not in text  # forced: its own curve measures it
    assert default_runs_markdown(runs[runs["forced"]], {"default_runs": "d.csv"}) == []
    assert default_runs_markdown(None, {}) == []


def test_the_unseen_algorithm_coverage_is_said_by_kind():
    """reduce 1 (linear) held out beside the chain 2: a kind of its own, its interval the physics' error
    on the other; the chain's kind is the linear one's too (a tree covered by a flat tree)."""
    from collat.evaluate.tables import unseen_algorithm_markdown

    trees = [{"operation": "reduce", "algorithm": 1, "tree": "linear"},
             {"operation": "reduce", "algorithm": 2, "tree": "chain", "fanout": 4}]
    scores = unseen_scores(0.5)
    scores.loc[(scores["algorithm"] == 1) & (scores["model"] == "hybrid"), "coverage"] = 1.0
    text = "\n".join(unseen_algorithm_markdown(scores, {"validation": "v.csv"}, trees))
    assert ("Inside the 80 % interval, by kind (avg; nominal 0.80). Held-out algorithms of a kind another measured "
            "algorithm of their operation is (reduce 2; 20 test points): calibrated 0.80, hybrid 0.90. Of a kind "
            "none of the others is (reduce 1; 20 test points): calibrated 0.80, hybrid 1.00. These are priced by "
            "the physics and the machine's costs the calibration measured") in text
    assert "by kind" not in "\n".join(unseen_algorithm_markdown(scores, {"validation": "v.csv"}))  # no trees given
    trees[0] = {"operation": "reduce", "algorithm": 1, "tree": "binary"}  # one kind: nothing to tell apart
    assert "by kind" not in "\n".join(unseen_algorithm_markdown(scores, {"validation": "v.csv"}, trees))


def test_the_coverage_range_is_said_with_the_rows_that_leave_out_the_nominal_level():
    from collat.evaluate.tables import coverage_range_markdown

    intervals = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sizes", "sparse_P"], "cells": 10,
                              "width": 0.3, "per_octave": 0.0, "coverage": [0.733, 0.79],
                              "coverage_low": [0.63, 0.74], "coverage_high": [0.79, 0.835]})
    text = "\n".join(coverage_range_markdown(intervals, {"intervals": "i.csv"}))
    assert ("Drawn again by curve, its 95 % range is 0.09-0.16 wide (`i.csv`, columns coverage_low and "
            "coverage_high). It leaves out 0.80 for hybrid avg sizes 0.733 (0.630-0.790).") in text
    inside = intervals.assign(coverage_high=0.835)
    assert "Every range holds 0.80." in "\n".join(coverage_range_markdown(inside, {}))
    assert coverage_range_markdown(intervals.drop(columns=["coverage_low", "coverage_high"]), {}) == []
