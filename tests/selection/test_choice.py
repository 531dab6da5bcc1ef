"""Model-based algorithm choice, regret, and the OpenMPI dynamic-rules file."""

import numpy as np
import pandas as pd
import pytest

from collat.selection import choice as sel


def predictions():
    rows = []
    for P in (2, 4, 8):
        for size in (1, 1024, 65536):
            for alg, t in ((1, P * 1.0), (2, 3.0 + 0.001 * size), (5, 2.0 + np.log2(P))):
                rows.append({"mode": "openmpi", "operation": "bcast", "algorithm": alg, "mapping": "core", "P": P,
                             "size": size, "target": "max", "predicted": t})
            rows.append({"mode": "openmpi", "operation": "bcast", "algorithm": 0, "mapping": "core", "P": P,
                         "size": size, "target": "max", "predicted": 0.1})  # a candidate only if asked
    return pd.DataFrame(rows)


def collective():
    rows = []
    for P in (2, 4, 8):
        for size in (1, 1024):
            for alg, t in ((0, 2.2), (1, 2.0), (2, 4.0), (5, 3.0)):
                for run in (0, 1):
                    rows.append({"operation": "bcast", "algorithm": alg, "mapping": "core", "P": P, "size": size,
                                 "avg": t + run * 0.1, "max": t, "outlier": False})
    rows.append({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": 8, "size": 65536, "avg": 1.0,
                 "max": 1.0, "outlier": False})  # incomplete cell: only one algorithm measured
    return pd.DataFrame(rows)


def test_predicted_best_excludes_default_and_breaks_ties_by_id():
    b = sel.predicted_best(predictions()).set_index(["P", "size"])["predicted_best"]
    assert b[(2, 1)] == 1 and b[(8, 1)] == 2 and b[(8, 65536)] == 5
    p = predictions()
    p.loc[(p["P"] == 2) & (p["size"] == 1) & (p["algorithm"] == 5), "predicted"] = 2.0  # tie with linear
    assert sel.predicted_best(p).set_index(["P", "size"]).loc[(2, 1), "predicted_best"] == 1


def test_a_tie_to_rounding_goes_to_the_smaller_id():
    """Predictions equal but for their last bits (the default priced beside the algorithm it runs,
    a calibration refitted to rounding) tie, and the default wins either way; 1e-6 apart is no tie."""
    p = predictions()
    at = (p["P"] == 2) & (p["size"] == 1)
    p.loc[at & (p["algorithm"] == 0), "predicted"] = 2.0 * (1 + 4e-15)  # linear: P * 1.0 = 2.0
    assert sel.predicted_best(p, default=True).set_index(["P", "size"]).loc[(2, 1), "predicted_best"] == 0
    p.loc[at & (p["algorithm"] == 0), "predicted"] = 2.0 * (1 - 4e-15)
    assert sel.predicted_best(p, default=True).set_index(["P", "size"]).loc[(2, 1), "predicted_best"] == 0
    p.loc[at & (p["algorithm"] == 0), "predicted"] = 2.0 * (1 + 1e-6)
    assert sel.predicted_best(p, default=True).set_index(["P", "size"]).loc[(2, 1), "predicted_best"] == 1


def test_the_default_is_a_candidate_when_asked():
    p = predictions()
    b = sel.predicted_best(p, default=True).set_index(["P", "size"])["predicted_best"]
    assert (b == 0).all()  # predicted 0.1 everywhere
    p.loc[(p["algorithm"] == 0) & (p["P"] == 8), "predicted"] = 99.0
    b = sel.predicted_best(p, {"bcast": [1, 2]}, default=True).set_index(["P", "size"])["predicted_best"]
    assert b[(2, 1)] == 0 and b[(8, 1)] == 2  # at P = 8 the default loses to the chain (3.0)
    p.loc[p["algorithm"] == 0, "predicted"] = 1.0  # a tie with linear at P = 2 goes to the default
    assert sel.predicted_best(p, default=True).set_index(["P", "size"]).loc[(2, 1), "predicted_best"] == 0
    cells, summary = sel.regret(predictions(), collective(), "max", default=True)
    c = cells.set_index(["P", "size"])
    assert (c["predicted_best"] == 0).all() and c["regret_model"].to_numpy() == pytest.approx(1.1)
    # what compares with the measured best: the pick among the forced algorithms alone. Linear P,
    # chain 3 + size / 1000, binary 2 + log2 P: at P = 4, 1 KiB linear and binary tie at 4 (the smaller id)
    assert c["forced_pick"].to_dict() == {(2, 1): 1, (2, 1024): 1, (4, 1): 2, (4, 1024): 1, (8, 1): 2, (8, 1024): 2}
    m = summary.set_index("chooser")
    assert m.loc["model", "default_share"] == 1.0 and m.loc["rules_file", "default_share"] == 1.0
    # the rules file names 0 there: OpenMPI's fixed rules
    text = sel.write_rules({"bcast": sel.rules_blocks(sel.predicted_best(predictions(), default=True), {})})
    assert sel.lookup(sel.parse_rules(text)[7], 4, 1024) == 0


def test_regret_of_model_and_default():
    cells, summary = sel.regret(predictions(), collective(), "max", default=False)
    assert len(cells) == 6  # the incomplete cell is left out
    c = cells.set_index(["P", "size"])
    assert (c["measured_best"] == 1).all()
    assert c.loc[(2, 1), "regret_model"] == pytest.approx(1.0)   # model picks linear at P = 2
    assert c.loc[(8, 1), "regret_model"] == pytest.approx(2.0)   # picks chain: 4.0 / 2.0
    assert c["regret_default"].to_numpy() == pytest.approx(1.1)
    m = summary.set_index("chooser")
    assert m.loc["default", "within_10pct"] == 1.0 and m.loc["default", "geomean_regret"] == pytest.approx(1.1)
    r = c["regret_model"].to_numpy()
    assert m.loc["model", "geomean_regret"] == pytest.approx(np.exp(np.log(r).mean()))
    assert m.loc["model", "within_10pct"] == pytest.approx((r <= 1.1).mean())


def test_a_rules_file_of_measured_algorithms_names_none_nobody_measured():
    # a fourth algorithm (6) nobody measured, priced fastest everywhere: with every algorithm the
    # file bets on it; with the measured ones it names the forced pick among 1, 2, 5
    p = pd.concat([predictions(), predictions().query("algorithm == 5").assign(algorithm=6, predicted=0.5)])
    measured = sel.measured_table(collective(), "max")
    assert set(sel.rules_candidates(p, measured, "every")["algorithm"]) == {0, 1, 2, 5, 6}
    assert set(sel.rules_candidates(p, measured, "measured")["algorithm"]) == {0, 1, 2, 5}
    with pytest.raises(ValueError, match="selection.algorithms 'some'"):
        sel.rules_candidates(p, measured, "some")
    every, summary = sel.regret(p, collective(), "max", default=False)
    assert (every["file_pick"] == 6).all()
    assert summary.set_index("chooser").loc["rules_file", "unmeasured_share"] == 1.0
    only, summary = sel.regret(p, collective(), "max", default=False, algorithms="measured")
    assert only["file_pick"].tolist() == only["forced_pick"].tolist()
    assert summary.set_index("chooser").loc["rules_file", "unmeasured_share"] == 0.0
    # with the trees: 6 a binomial tree (a kind linear and chain cover) is a bet on the calibration;
    # as a scatter-allgather (blocks) it is of a kind none measured, priced by the physics
    tree = [{"operation": "bcast", "algorithm": a, "tree": t} for a, t in ((1, "linear"), (2, "chain"), (5, "binary"))]
    for shape, share in (({"tree": "binomial"}, 0.0), ({"schedule": "scatter_allgather"}, 1.0)):
        _, summary = sel.regret(p, collective(), "max", default=False,
                                trees=tree + [{"operation": "bcast", "algorithm": 6, **shape}])
        by = summary.set_index("chooser")["foreign_share"]
        assert by["rules_file"] == share and by[["model", "default"]].isna().all()
    assert np.isnan(sel.regret(p, collective(), "max", default=False)[1]["foreign_share"]).all()  # no trees
    # a curve measured at some P counts at every P: linear, measured at P = 8, 64 KiB alone, competes there
    best = sel.predicted_best(sel.rules_candidates(p, measured, "measured"), None, "openmpi", "max")
    assert best.set_index(["P", "size"]).loc[(8, 65536), "predicted_best"] == 5


def test_regret_of_a_default_measured_alone_has_its_columns_and_no_row():
    """A user who measured OpenMPI's default alone: no cell has two forced algorithms, so no choice is
    scored; the summary keeps its columns (the file is read back by the summary)."""
    coll = collective()
    cells, summary = sel.regret(predictions(), coll[coll["algorithm"] == 0], "max")
    assert cells.empty and summary.empty and list(summary.columns) == sel.REGRET_COLUMNS


def test_rules_file_round_trip_and_lookup():
    best = sel.predicted_best(predictions())
    blocks = sel.rules_blocks(best, {2: 4})
    text = sel.write_rules({"bcast": blocks, "reduce": blocks})
    parsed = sel.parse_rules(text)
    assert set(parsed) == {7, 11}
    assert text.split()[:2] == ["2", "7"]
    for row in best.itertuples():
        for size in (row.size, row.size + 1):  # a rule holds from its size up to the next rule's
            if size in (1025, 65537):
                continue
            assert sel.lookup(parsed[7], row.P, row.size) == row.predicted_best
    # the chain is written with its fan-out of 4, every rule with segment size 0
    rules = [r for _, rs in parsed[7] for r in rs]
    assert all(r[2] == 4 for r in rules if r[1] == 2) and all(r[3] == 0 for r in rules)
    assert sel.lookup(parsed[7], 1, 1) == 0  # below the smallest communicator: fixed rules


def test_a_rules_file_names_only_the_operations_it_picks_for():
    """A reduce-only campaign: the rules file holds reduce alone (a collective with no block makes
    OpenMPI drop the whole file), and OpenMPI keeps its fixed rules for bcast."""
    best = sel.predicted_best(predictions()).assign(operation="reduce")
    text = sel.rules_text(best, ())
    from collat.selection.rulesfile import validate

    assert validate(text) and set(sel.parse_rules(text)) == {11}
    both = pd.concat([best, sel.predicted_best(predictions())])
    assert set(sel.parse_rules(sel.rules_text(both, ()))) == {7, 11}


def test_a_rules_file_gives_the_chain_the_fan_out_the_model_priced():
    """OpenMPI hands a rule's fan-in/out to the chain (0: one chain of P ranks): the file writes
    the fan-out of the chain's shape (4, OpenMPI's default for a forced chain, which the model
    prices), per operation; selection.faninout overrides it; a shape without one writes 0."""
    trees = [{"operation": "bcast", "algorithm": 2, "tree": "chain", "fanout": 4},
             {"operation": "bcast", "algorithm": 7, "tree": "knomial", "radix": 4},
             {"operation": "reduce", "algorithm": 2, "tree": "chain", "fanout": 3}]
    assert sel.rules_faninout(trees, "bcast") == {2: 4}
    assert sel.rules_faninout(trees, "reduce") == {2: 3}
    assert sel.rules_faninout(trees, "bcast", {"2": 8, "5": 2}) == {2: 8, 5: 2}
    best = sel.predicted_best(predictions())
    both = pd.concat([best, best.assign(operation="reduce")])
    parsed = sel.parse_rules(sel.rules_text(both, trees))
    rules = {op: [r for _, rs in parsed[op] for r in rs] for op in (7, 11)}
    assert {r[2] for r in rules[7] if r[1] == 2} == {4} and {r[2] for r in rules[11] if r[1] == 2} == {3}
    assert {r[2] for op in (7, 11) for r in rules[op] if r[1] != 2} == {0}
    assert {r[1] for r in rules[7]} >= {2}  # the chain is among the picks, so the check above bites


def test_regret_under_the_unseen_algorithm_split():
    """Fold 'bcast 1' was fitted without linear; it picks linear at P = 2, 4 and the binary tree at P = 8."""
    rows = []
    for P in (2, 4, 8):
        for size in (1, 1024):
            for alg in (1, 2, 5):
                t = {1: 1.0 if P < 8 else 9.0, 2: 5.0, 5: 3.0}[alg]
                rows.append({"model": "calibrated", "split": "unseen_algorithm", "fold": "bcast 1", "target": "max",
                             "operation": "bcast", "algorithm": alg, "mapping": "core", "P": P, "size": size,
                             "predicted": t, "scored": alg == 1})
    folds = pd.DataFrame(rows)
    got = sel.regret_unseen_algorithm(folds, collective(), "max", "calibrated")
    assert list(got.columns) == sel.UNSEEN_COLUMNS and len(got) == 1
    r = got.iloc[0]
    # measured (max): linear 2.0 is the best of every complete cell; the binary tree costs 3.0 / 2.0
    assert (r["left_out"], r["cells"], r["left_out_best"], r["left_out_picked"]) == (1, 6, 6, 4)
    assert r["left_out_found"] == pytest.approx(4 / 6) and r["within_10pct"] == pytest.approx(4 / 6)
    assert r["geomean_regret"] == pytest.approx(1.5 ** (2 / 6))
    assert sel.regret_unseen_algorithm(folds, collective(), "max", "openmpi").empty  # not a fitted mode


def test_regret_at_unmeasured_P_under_the_sparse_P_split():
    """The fold priced every algorithm at P = 4 and 8 (held out); it picks linear at P = 4 and the
    binary tree at P = 8, size 1; at size 1024 it lacks the default, so with the default as a
    candidate that size is not scored."""
    rows = []
    for P in (4, 8):
        for size in (1, 1024):
            for alg in (0, 1, 2, 5):
                if alg == 0 and size == 1024:
                    continue
                t = {0: 4.0, 1: 1.0 if P < 8 else 9.0, 2: 5.0, 5: 3.0}[alg]
                rows.append({"model": "hybrid", "split": "sparse_P", "fold": "all", "target": "max",
                             "operation": "bcast", "algorithm": alg, "mapping": "core", "P": P, "size": size,
                             "predicted": t, "scored": True})
    folds = pd.DataFrame(rows)
    got = sel.regret_sparse_P(folds, collective(), "max", "hybrid")
    assert list(got.columns) == sel.SPARSE_COLUMNS and len(got) == 1
    r = got.iloc[0]
    # measured (max): linear 2.0 is best everywhere; the default 2.2 (within 10 %), binary 3.0
    assert r["cells"] == 2 and r["within_10pct"] == pytest.approx(0.5)
    assert r["geomean_regret"] == pytest.approx(np.sqrt(1.5))
    assert r["default_within_10pct"] == 1.0 and r["default_geomean_regret"] == pytest.approx(1.1)
    # without the default as a candidate, size 1024 counts too: linear at P = 4, binary at P = 8
    r = sel.regret_sparse_P(folds, collective(), "max", "hybrid", default=False).iloc[0]
    assert r["cells"] == 4 and r["geomean_regret"] == pytest.approx(1.5 ** 0.5)
    assert sel.regret_sparse_P(folds, collective(), "max", "openmpi").empty


def test_best_validated_mode_has_the_smallest_mean_error_over_the_splits():
    def rows(model, split, mapes, target="avg"):
        return [{"model": model, "split": split, "operation": "bcast", "algorithm": a, "mapping": "core",
                 "target": target, "cleaning": "robust", "n": 10, "r2": 0.5, "mape": m, "floor": 0.03}
                for a, m in enumerate(mapes, start=1)]
    scores = pd.DataFrame(
        rows("openmpi", "sparse_P", [0.4, 0.5, 0.6]) + rows("openmpi", "sizes", [0.2])        # medians 0.5, 0.2: 0.35
        + rows("hybrid", "sparse_P", [0.1, 0.3, 0.9]) + rows("hybrid", "sizes", [0.5])        # 0.3, 0.5: 0.40
        + rows("paper", "sparse_P", [0.01]) + rows("paper", "sizes", [0.01])                  # in sample: never
        + rows("calibrated", "sparse_P", [0.01])                                               # not on every split
        + rows("hybrid", "sparse_P", [0.01], "max") + rows("hybrid", "sizes", [0.01], "max"))  # another target
    modes = ["paper", "openmpi", "calibrated", "hybrid"]
    assert sel.best_validated_mode(scores, modes, "avg") == "openmpi"
    assert sel.best_validated_mode(scores, ["paper", "calibrated", "hybrid"], "avg") == "hybrid"
    assert sel.best_validated_mode(scores, modes, "max") == "hybrid"
    with pytest.raises(ValueError, match="no mode"):
        sel.best_validated_mode(scores, ["paper", "calibrated"], "avg")


def varying():
    """Measured latency (max) whose best algorithm changes with P; P = 10 lacks the default."""
    table = {2: {1: 1.0, 2: 2.0, 0: 3.0}, 4: {1: 2.0, 2: 1.0, 0: 3.0}, 6: {1: 1.0, 2: 3.0, 0: 3.0},
             8: {1: 5.0, 2: 1.0, 0: 0.5}, 10: {1: 1.0, 2: 2.0}}
    return pd.DataFrame([{"operation": "bcast", "algorithm": a, "mapping": "core", "P": P, "size": 1, "avg": t,
                          "max": t, "outlier": False} for P, row in table.items() for a, t in row.items()])


def test_neighbour_picks_take_the_best_measured_at_the_nearest_other_P():
    measured = sel.measured_table(varying(), "max")
    cells = pd.DataFrame({"operation": "bcast", "mapping": "core", "P": [2, 4, 6, 8, 10], "size": 1})
    # with the default a candidate, P = 10 is incomplete: P = 4 and 6 take the lower of two
    # neighbours as near (2, 4); P = 10 takes P = 8, where the default (0.5) is fastest
    assert sel.neighbour_picks(measured, cells).tolist() == [2, 1, 2, 1, 0]
    # forced algorithms only: P = 8 sits between 6 and 10 and takes 6; P = 10 takes 8's best forced (2)
    assert sel.neighbour_picks(measured, cells, default=False).tolist() == [2, 1, 2, 1, 2]
    other = cells.assign(size=1024)  # no measurement at that size: no pick
    assert sel.neighbour_picks(measured, other).tolist() == [-1] * 5


def test_regret_at_unmeasured_P_beside_the_neighbour_pick():
    rows = [{"model": "hybrid", "split": "sparse_P", "fold": "all", "target": "max", "operation": "bcast",
             "algorithm": a, "mapping": "core", "P": P, "size": 1, "predicted": {1: 1.0, 2: 2.0, 0: 3.0}[a],
             "scored": True} for P in (4, 6) for a in (0, 1, 2)]
    r = sel.regret_sparse_P(pd.DataFrame(rows), varying(), "max", "hybrid").iloc[0]
    # the model picks linear (1): regret 2.0 / 1.0 at P = 4, 1.0 at P = 6; the neighbour's picks
    # (linear from P = 2, the lower of 2 and 6; then the chain from P = 4) cost 2.0 and 3.0
    assert r["cells"] == 2 and r["within_10pct"] == 0.5 and r["geomean_regret"] == pytest.approx(np.sqrt(2.0))
    assert r["neighbour_within_10pct"] == 0.0 and r["neighbour_geomean_regret"] == pytest.approx(np.sqrt(6.0))
    assert r["default_within_10pct"] == 0.0 and r["default_geomean_regret"] == pytest.approx(3.0)


def test_what_if_mode_prefers_the_selection_s_mode_then_the_most_corrected():
    from collat.selection.choice import what_if_mode

    pred = pd.DataFrame({"mode": ["openmpi", "calibrated", "hybrid", "openmpi", "calibrated"],
                         "mapping": ["core", "core", "core", "node", "node"]})
    assert what_if_mode(pred, "core") == "hybrid" and what_if_mode(pred, "node") == "calibrated"
    assert what_if_mode(pred, "core", "calibrated") == "calibrated"
    assert what_if_mode(pred, "node", "hybrid") == "calibrated"  # no hybrid where places differ
    assert what_if_mode(pred[pred["mode"] == "openmpi"], "node", "hybrid") == "openmpi"
    with pytest.raises(ValueError, match="no mode priced map-by socket"):
        what_if_mode(pred, "socket")


def test_an_algorithm_measured_at_one_cell_competes_there_and_takes_no_cell_out():
    """A new log of an algorithm nobody measured before (bcast 3 at P = 4, 1 B only): every cell is
    still scored, the new algorithm is compared at its cell alone, and the summary says how many
    algorithms it compared and in what share of cells all of them were."""
    c = collective()
    c = pd.concat([c, pd.DataFrame([{"operation": "bcast", "algorithm": 3, "mapping": "core", "P": 4, "size": 1,
                                     "avg": 0.5, "max": 0.5, "outlier": False}])], ignore_index=True)
    p = predictions()
    p = pd.concat([p, p[p["algorithm"] == 1].assign(algorithm=3, predicted=0.05)], ignore_index=True)
    before, _ = sel.regret(predictions(), collective(), "max", default=False)
    cells, summary = sel.regret(p, c, "max", default=False)
    assert len(cells) == len(before) == 6  # no cell left out
    c4 = cells.set_index(["P", "size"])
    assert c4.loc[(4, 1), "measured_best"] == 3 and c4.loc[(4, 1), "algorithms"] == 4
    # priced cheapest everywhere, it is picked only where it was measured
    assert c4.loc[(4, 1), "predicted_best"] == 3 and (c4.drop(index=(4, 1))["predicted_best"] != 3).all()
    m = summary.set_index("chooser").loc["model"]
    assert m["cells"] == 6 and m["algorithms"] == 4 and m["complete_share"] == pytest.approx(1 / 6)


def test_the_best_algorithm_map_of_an_operation_with_nothing_to_compare_says_so():
    import matplotlib.pyplot as plt

    from collat.selection.figures import best_algorithm_maps

    cells, _ = sel.regret(predictions(), collective(), "max", default=True)
    fig = best_algorithm_maps(cells, "reduce", ["core"], [{"id": 0, "name": "default"}])
    assert "no cell" in fig.texts[0].get_text()
    plt.close(fig)


def test_a_segment_size_competes_where_the_model_prices_it_and_reaches_the_rules_file():
    p = predictions()
    # the model's ratio of segmented to whole-message prices: algorithm 2 with 1 KiB segments costs
    # a hundredth at 64 KiB, algorithm 5 twice as much; at 1 KiB a message is one segment (no row)
    ratios = pd.DataFrame([{"mode": "openmpi", "operation": "bcast", "algorithm": alg, "mapping": "core", "P": P,
                            "size": size, "target": "max", "segsize": 1024, "ratio": r}
                           for P in (2, 4, 8) for size in (1024, 65536) for alg, r in ((2, 0.01), (5, 2.0))])
    both = sel.with_segments(p, ratios, "openmpi")
    assert len(both) == len(p) + 2 * 3 and (both["segsize"] == 0).sum() == len(p)
    best = sel.predicted_best(both).set_index(["P", "size"])
    # 64 KiB: algorithm 2 whole 3 + 65.536, cut 0.685: below algorithm 1 (P) and 5 (2 + log2 P)
    assert best.loc[(8, 65536), ["predicted_best", "segsize"]].tolist() == [2, 1024]
    assert best.loc[(8, 65536), "predicted"] == pytest.approx(0.68536)
    assert best.loc[(2, 1024), ["predicted_best", "segsize"]].tolist() == [1, 0]  # whole messages elsewhere
    blocks = sel.rules_blocks(best.reset_index(), {})
    assert blocks[0] == (2, [(0, 1, 0, 0), (65536, 2, 0, 1024)])  # the segment size in the rules file
    from collat.selection.rulesfile import validate

    assert validate(sel.write_rules({"bcast": blocks}), "x.txt")


def test_the_sd_of_a_price_and_its_expected_latency_by_hand():
    """An 80 % interval is +-1.2816 sd of a normal log error: an upper end e^1.2816 times the price
    is one sd; the mean of a log-normal of median 2 and sd 1 is 2 e^0.5; no interval, no change."""
    z = 1.2815515655446004
    assert sel.price_sd([2.0, 4.0], [2.0 * np.exp(z), 4.0 * np.exp(0.5 * z)]).tolist() == pytest.approx([1.0, 0.5])
    assert np.isnan(sel.price_sd([2.0], [np.nan])[0])
    assert sel.expected_latency([2.0, 2.0, 3.0], [1.0, 0.0, np.nan]).tolist() == pytest.approx(
        [2.0 * np.exp(0.5), 2.0, 3.0])


def test_a_price_known_less_surely_must_be_lower_to_win():
    """Algorithm 2 is priced 3 % below algorithm 1 with sd 0.4 against 0.1: its expected latency
    0.97 e^0.08 = 1.051 is above 1.0 e^0.005 = 1.005, so 1 wins; priced 10 % below (0.90 e^0.08 =
    0.975) it wins again. Without the column sd, the smaller prediction wins."""
    p = pd.DataFrame({"mode": "hybrid", "operation": "bcast", "algorithm": [1, 2], "mapping": "core", "P": 4,
                      "size": 1, "target": "avg", "predicted": [1.0, 0.97], "sd": [0.1, 0.4]})
    assert sel.predicted_best(p, mode="hybrid", target="avg")["predicted_best"].tolist() == [1]
    assert sel.predicted_best(p.drop(columns="sd"), mode="hybrid", target="avg")["predicted_best"].tolist() == [2]
    p.loc[1, "predicted"] = 0.90
    best = sel.predicted_best(p, mode="hybrid", target="avg")
    assert best["predicted_best"].tolist() == [2] and best["predicted"].tolist() == [0.90]  # the price, not the mean


def test_the_choice_sd_is_the_validation_s_width_where_the_cell_stands_without_the_run_spread():
    """A measured curve's cell (sparse_P width 0.1) and an algorithm nobody measured (0.5), in sd:
    the width over 1.2816."""
    from collat.model.validation import INTERVAL_COLUMNS

    grid = pd.DataFrame({"mode": "hybrid", "operation": "bcast", "algorithm": [1, 1, 2], "mapping": "core",
                         "P": [2, 4, 2], "size": 1, "target": "avg", "predicted": [1.0, 2.0, 1.5]})
    measured = {"avg": pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": [2, 4],
                                     "size": 1, "measured": [1.0, 2.0]})}
    widths = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sparse_P", "unseen_algorithm"],
                           "cells": 10, "width": [0.1, 0.5], "per_octave": [0.0, 0.0], "coverage": 0.8,
                           "coverage_low": 0.7, "coverage_high": 0.9})[INTERVAL_COLUMNS]
    machine = {"name": "m", "nodes": 1, "sockets_per_node": 1, "cores_per_socket": 4, "cores_per_l3": 4}
    sd = sel.choice_sd(grid, measured, widths, machine, np.array([1e9]))
    assert sd.tolist() == pytest.approx([0.1 / 1.2815515655446004] * 2 + [0.5 / 1.2815515655446004])

    # bcast 2, a curve nobody measured (blocks beside the measured linear tree, in the model stage):
    # the grid's own interval where it is wider (its upper end e^0.9 above, wider than 0.5); the
    # narrower one (e^0.2) keeps 0.5
    up = grid.assign(upper=grid["predicted"] * np.exp([0.0, 0.0, 0.9]))
    wide = sel.choice_sd(up, measured, widths, machine, np.array([1e9]))
    assert wide[2] == pytest.approx(0.9 / 1.2815515655446004)
    narrow = grid.assign(upper=grid["predicted"] * np.exp([0.0, 0.0, 0.2]))
    assert sel.choice_sd(narrow, measured, widths, machine, np.array([1e9]))[2] == pytest.approx(
        0.5 / 1.2815515655446004)
    # no unseen_algorithm width (one algorithm measured): bcast 2 takes the grid's own interval
    alone = widths[widths["split"] != "unseen_algorithm"]
    got = sel.choice_sd(narrow, measured, alone, machine, np.array([1e9]))
    assert got.tolist() == pytest.approx([0.1 / 1.2815515655446004] * 2 + [0.2 / 1.2815515655446004])
    # a measured curve's row keeps the validation's width, not the grid's (which adds the new-run spread)
    assert sel.choice_sd(up.assign(upper=up["predicted"] * 9.0), measured, widths, machine,
                         np.array([1e9]))[:2].tolist() == pytest.approx([0.1 / 1.2815515655446004] * 2)


def test_the_unseen_algorithm_regret_picks_by_the_fold_s_intervals():
    """Fold 'bcast 1' prices linear (left out, interval 0.9 wide) a little below the binary tree:
    by the prediction it picks linear, by the expected latency the binary tree."""
    rows = []
    for P in (2, 4):
        for alg, t, up in ((1, 2.7, 2.7 * np.exp(0.9)), (5, 2.8, np.nan)):  # a training cell has no interval
            rows.append({"model": "hybrid", "split": "unseen_algorithm", "fold": "bcast 1", "target": "max",
                         "operation": "bcast", "algorithm": alg, "mapping": "core", "P": P, "size": 1,
                         "predicted": t, "upper": up, "scored": alg == 1})
    folds = pd.DataFrame(rows)
    by_median = sel.regret_unseen_algorithm(folds, collective(), "max", "hybrid", expected=False).iloc[0]
    by_mean = sel.regret_unseen_algorithm(folds, collective(), "max", "hybrid").iloc[0]
    assert by_median["left_out_picked"] == 2 and by_mean["left_out_picked"] == 0
    assert by_mean["geomean_regret"] == pytest.approx(1.5)  # the binary tree: 3.0 against linear's 2.0


def test_a_segmented_row_keeps_its_interval_relative_to_its_price():
    p = predictions().assign(lower=lambda d: d["predicted"] / 2, upper=lambda d: d["predicted"] * 2)
    ratios = pd.DataFrame([{"mode": "openmpi", "operation": "bcast", "algorithm": 2, "mapping": "core", "P": 8,
                            "size": 65536, "target": "max", "segsize": 1024, "ratio": 0.01}])
    cut = sel.with_segments(p, ratios, "openmpi").query("segsize > 0").iloc[0]
    assert cut["predicted"] == pytest.approx(0.68536) and cut["upper"] == pytest.approx(2 * 0.68536)
    assert cut["lower"] == pytest.approx(0.68536 / 2)
