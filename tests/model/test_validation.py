"""Validation splits, the noise floor, the baselines and the leaderboard, on small hand-made data."""

import numpy as np
import pandas as pd
import pytest

from collat.model import validation as va

MACHINE = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 4, "numa_per_socket": 4}
OPTIONS = va.ValidationOptions(sparse_every=8, extrapolation_P=20, size_max_train=1024, neighbours=1,
                               targets=("avg",))


def cells(fn=lambda alg, mapping, P, size: 1.0 + 0.5 * P * alg):
    rows = [{"operation": "bcast", "algorithm": alg, "mapping": m, "P": P, "size": s, "measured": fn(alg, m, P, s)}
            for alg in (1, 2) for m in ("core", "node") for s in (1, 2048) for P in range(2, 42, 2)]
    return pd.DataFrame(rows)


def collective_of(c: pd.DataFrame) -> pd.DataFrame:
    return c.rename(columns={"measured": "avg"}).assign(max=lambda d: 2 * d["avg"], outlier=False, run=0)


def test_noise_floor_by_hand():
    c = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "size": 1,
                      "P": [2, 2, 4, 4, 4], "avg": [1.0, 2.0, 10.0, 11.0, 500.0],
                      "outlier": [False, False, False, False, True]})
    # pairs |a - b| / b: 0.5, 1.0 (P = 2) and 1/11, 1/10 (P = 4; the outlier left out): median 0.3
    assert va.noise_floor(c, "avg") == pytest.approx(0.3)
    assert np.isnan(va.noise_floor(c[c["P"] == 2].iloc[:1], "avg"))


def test_splits_never_test_on_training_cells():
    c = cells()
    seen = {}
    for split, fold, train, test in va.splits(c, OPTIONS):
        assert not (train & test).any(), (split, fold)
        seen.setdefault(split, []).append((fold, train, test))
    assert set(seen) == set(va.SPLITS)
    fold, train, test = seen["sparse_P"][0]
    assert sorted(c.loc[train, "P"].unique()) == [2, 18, 34]  # every 8th P
    assert ((train | test) == (c["P"] <= 34)).all()  # every P up to the last training one, none above
    _, train, test = seen["extrapolation"][0]
    assert c.loc[train, "P"].max() == 20 and c.loc[test, "P"].min() == 22
    _, train, test = seen["sizes"][0]
    assert set(c.loc[train, "size"]) == {1} and set(c.loc[test, "size"]) == {2048}
    algs = {fold: (set(c.loc[tr, "algorithm"]), set(c.loc[te, "algorithm"])) for fold, tr, te in seen["unseen_algorithm"]}
    assert algs == {"bcast 1": ({2}, {1}), "bcast 2": ({1}, {2})}
    maps = {fold: (set(c.loc[tr, "mapping"]), set(c.loc[te, "mapping"])) for fold, tr, te in seen["unseen_mapping"]}
    assert maps == {"core": ({"node"}, {"core"}), "node": ({"core"}, {"node"})}


def test_segmented_recovers_a_line_and_cannot_predict_unseen_groups():
    c = cells()
    train, test = c[c["P"] <= 20], c[c["P"] > 20]
    p = va.segmented(train, test, MACHINE, [])  # form P; map-by core: one socket up to P = 64
    assert p == pytest.approx(test["measured"].to_numpy())
    assert np.isnan(va.segmented(c[c["algorithm"] == 1], c[c["algorithm"] == 2], MACHINE, [])).all()


def test_measured_neighbours_interpolate_each_cell_from_the_next_measured_P_on_its_curve():
    c = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "size": 1,
                      "P": [8, 2, 4, 16, 32], "measured": [4.0, 1.0, 2.0, 32.0, 5.0]})
    got = va.measured_neighbours(c)
    # P = 4 between 2 and 8 (log2 1 .. 3): exp(mean of log 1, log 4) = 2; P = 8 between 4 and 16:
    # sqrt(2 * 32) = 8; P = 16 between 8 and 32: sqrt(4 * 5); the ends (2, 32) have none
    assert got[[2, 0, 3]] == pytest.approx([2.0, 8.0, np.sqrt(20.0)])
    assert np.isnan(got[[1, 4]]).all()
    two = c.iloc[:2].assign(size=[1, 2])  # one P per curve: nothing to interpolate
    assert np.isnan(va.measured_neighbours(two)).all()


def test_training_neighbours_draw_a_line_in_log_between_the_training_P_on_each_side():
    train = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "size": [1, 1, 1, 2],
                          "P": [8, 2, 32, 2], "measured": [4.0, 1.0, 16.0, 3.0]})
    test = pd.DataFrame({"operation": "bcast", "algorithm": [1, 1, 1, 1, 2], "mapping": "core",
                         "size": [1, 1, 1, 2, 1], "P": [4, 16, 64, 4, 4]})
    got = va.training_neighbours(train, test)
    # P = 4 between 2 and 8 (log2 1 .. 3): exp(mean of log 1, log 4) = 2; P = 16 between 8 and 32:
    # sqrt(4 * 16) = 8; P = 64 is past the last training P; size 2 has one training P (nothing on
    # one side of P = 4); algorithm 2 has none
    assert got[:2] == pytest.approx([2.0, 8.0])
    assert np.isnan(got[2:]).all()


def test_odd_and_even_hold_out_each_half_of_a_curves_measured_P_between_the_others():
    c = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "size": 1,
                      "P": [2, 4, 6, 8, 10], "measured": 1.0})
    folds = va.odd_and_even(c)
    assert [(c["P"][a].tolist(), c["P"][b].tolist()) for a, b in folds] == [([2, 6, 10], [4, 8]), ([4, 8], [6])]
    assert va.odd_and_even(c.iloc[:2]) == []  # two P: one on each side never holds a third between them


def test_validate_scores_every_model_on_its_test_part_only():
    c = cells()
    collective = collective_of(c)
    stage = pd.concat([c.assign(mode="openmpi", target="avg", predicted=2 * c["measured"])])
    scores, table = va.validate(collective, stage, MACHINE, [], OPTIONS)
    assert set(scores["model"]) == {"openmpi", "segmented", "nearest_neighbour", va.REFERENCE, va.LINE}
    assert set(scores.loc[scores["model"] == va.REFERENCE, "split"]) == {"sparse_P"}
    assert set(scores.loc[scores["model"] == va.LINE, "split"]) == {"sparse_P"}
    assert list(scores.columns) == va.COLUMNS
    o = scores[(scores["model"] == "openmpi")]
    assert np.allclose(o["mape"], 1.0) and o["floor"].isna().all()  # 2x everywhere; no repeats
    s = scores[(scores["model"] == "segmented") & (scores["split"] == "extrapolation")]
    assert (s["mape"] < 1e-9).all() and (s["n"] == 2 * 10).all()  # 2 sizes x P 22..40, exact line
    cannot = scores[(scores["model"] == "segmented") & (scores["split"] == "unseen_algorithm")]
    assert (cannot["n"] == 0).all()
    # no test row of a split is a training row of the same split (sparse_P: P = 2, 18, 34 train)
    sp = table[(table["split"] == "sparse_P")]
    assert not sp["P"].isin([2, 18, 34]).any()
    board = va.leaderboard(scores)
    assert set(board["model"]) == {"openmpi", "segmented", "nearest_neighbour", va.REFERENCE, va.LINE}
    assert not ((board["model"] == "segmented") & (board["split"] == "unseen_algorithm")).any()


def test_gather_of_one_run_per_target_is_the_run_of_both_targets():
    c = cells()
    collective = collective_of(c)
    stage = pd.concat([c.assign(mode="openmpi", target=t, predicted=f * c["measured"])
                       for t, f in (("avg", 2.0), ("max", 3.0))])
    both = va.ValidationOptions(**{**OPTIONS.__dict__, "targets": ("avg", "max")})
    scores, table = va.validate(collective, stage, MACHINE, [], both)
    runs = [va.validate(collective, stage, MACHINE, [], va.ValidationOptions(**{**OPTIONS.__dict__, "targets": (t,)}))
            for t in ("max", "avg")]  # gathered in any order
    g_scores, g_table = va.gather([r[0] for r in runs], [r[1] for r in runs])
    pd.testing.assert_frame_equal(g_scores, scores)
    key = ["model", "split", "fold", "target", "operation", "algorithm", "mapping", "P", "size"]
    pd.testing.assert_frame_equal(g_table.sort_values(key, ignore_index=True), table.sort_values(key, ignore_index=True))
    # each target's run scored its own target: max predicted at 3x the avg, measured at 2x: error 0.5
    assert np.allclose(g_scores.loc[(g_scores["model"] == "openmpi") & (g_scores["target"] == "max"), "mape"], 0.5)
    with pytest.raises(ValueError, match="a target validated twice"):
        va.gather([runs[0][0], runs[0][0]], [runs[0][1], runs[0][1]])


def test_extrapolation_P_null_is_half_the_machines_cores():
    cfg = {"sparse_every": 8, "extrapolation_P": None, "size_max_train": 1024, "neighbours": 4, "targets": ["avg"]}
    assert va.ValidationOptions.from_config(cfg, MACHINE).extrapolation_P == 128  # 2 x 2 x 64 cores / 2
    small = {"nodes": 1, "sockets_per_node": 1, "cores_per_socket": 16, "cores_per_l3": 16, "numa_per_socket": 1}
    assert va.ValidationOptions.from_config(cfg, small).extrapolation_P == 8
    assert va.ValidationOptions.from_config({**cfg, "extrapolation_P": 20}, small).extrapolation_P == 20


def test_a_split_with_an_empty_part_is_left_out():
    """One mapping, one algorithm and no P above extrapolation_P: no unseen_mapping, no
    unseen_algorithm and no extrapolation fold (nothing to train on, or nothing to test)."""
    c = cells()
    c = c[(c["mapping"] == "core") & (c["algorithm"] == 1)].reset_index(drop=True)
    options = va.ValidationOptions(**{**OPTIONS.__dict__, "extrapolation_P": 64})
    folds = [(split, fold) for split, fold, _, _ in va.splits(c, options)]
    assert folds == [("sparse_P", "all"), ("sizes", "all")]


def test_sparse_P_tests_only_curves_with_two_training_P():
    """A sweep of powers of two (P = 2, 4, 8, 16: every 8th trains P = 2 alone) cannot be
    interpolated: its curve leaves the test part; a curve of 20 P (trains 2, 18, 34) stays."""
    dense = cells()[lambda d: (d["algorithm"] == 1) & (d["mapping"] == "core")]
    sparse = dense[dense["P"].isin([2, 4, 8, 16])].assign(algorithm=2)
    c = pd.concat([dense, sparse], ignore_index=True)
    _, _, train, test = next(f for f in va.splits(c, OPTIONS) if f[0] == "sparse_P")
    assert set(c.loc[test, "algorithm"]) == {1} and set(c.loc[train & (c["algorithm"] == 2), "P"]) == {2}
    assert sorted(c.loc[train & (c["algorithm"] == 1), "P"].unique()) == [2, 18, 34]


def test_sparse_P_tests_between_the_training_P_only():
    """A user's first rounds, P = 2, 6, 10, 16 per curve, every other P trains (2, 10): P = 6 is
    tested; P = 16, above the last training P, is an extrapolation and is not."""
    c = cells()[lambda d: (d["algorithm"] == 1) & (d["mapping"] == "core") & d["P"].isin([2, 6, 10, 16])]
    options = va.ValidationOptions(**{**OPTIONS.__dict__, "sparse_every": 2})
    _, _, train, test = next(f for f in va.splits(c.reset_index(drop=True), options) if f[0] == "sparse_P")
    P = c["P"].to_numpy()
    assert sorted(set(P[train])) == [2, 10] and sorted(set(P[test])) == [6]


def test_noise_floors_per_mapping_and_nodes_spanned_by_hand():
    """On MACHINE (128 cores per node) P = 4 spans one node under map-by core and two under map-by
    node. Core, P = 4: runs 1 and 2: pairs 1.0, 0.5 (median 0.75); node, P = 4: runs 10 and 11:
    1/10, 1/11 (median 0.0955); all four pairs: median (0.1 + 0.5) / 2 = 0.3, :func:`noise_floor`."""
    c = pd.DataFrame({"operation": "bcast", "algorithm": 1, "size": 1, "P": 4, "outlier": False,
                      "mapping": ["core", "core", "node", "node", "node"], "avg": [1.0, 2.0, 10.0, 11.0, 7.0]})
    c.loc[4, "P"] = 6  # a cell without repeats: no pair
    every = va.noise_floors(c, MACHINE, ["avg"])
    # one operation: its own rows are the same as those over every operation
    mine = every[every["operation"] == "bcast"].drop(columns="operation").reset_index(drop=True)
    assert mine.equals(every[every["operation"] == "all"].drop(columns="operation").reset_index(drop=True))
    f = every[every["operation"] == "all"].set_index(["mapping", "nodes"])
    assert list(f.index) == [("all", "all"), ("core", "1"), ("node", "2")]
    assert f.loc[("all", "all"), "floor"] == pytest.approx(0.3) == va.noise_floor(c, "avg")
    assert f.loc[("core", "1"), "floor"] == pytest.approx(0.75)
    assert f.loc[("node", "2"), "floor"] == pytest.approx((1 / 10 + 1 / 11) / 2)
    assert f["pairs"].tolist() == [4, 2, 2] and f["cells"].tolist() == [2, 1, 1]
    assert va.noise_floors(c[c["P"] == 6], MACHINE, ["avg"]).empty  # no repeats: no row


def test_another_run_floor_pairs_the_default_with_the_forced_run_of_its_tree_by_hand():
    """The rules run the binary tree (5) below 16 B and the chain above, which the default runs as one
    line (fan-out 1), another tree than the forced chain (fan-out 4): no pair at 32 B. Core, P = 4,
    1 B: the default's runs 2.0 and 2.2 (median 2.1) against 3.0: 0.9 / 3 = 0.3 and 0.9 / 2.1;
    node: 10 against 11: 1/11 and 1/10; all four: median (0.1 + 0.3) / 2 = 0.2."""
    rules = {"bcast": [{"P_below": None, "sizes": [[16, 5], [None, 2]]}]}
    trees = [{"operation": "bcast", "algorithm": 5, "tree": "binary"},
             {"operation": "bcast", "algorithm": 2, "tree": "chain", "fanout": 4}]
    c = pd.DataFrame({"operation": "bcast", "P": 4, "outlier": False,
                      "algorithm": [0, 0, 5, 0, 5, 0, 2], "mapping": ["core"] * 3 + ["node"] * 2 + ["core"] * 2,
                      "size": [1, 1, 1, 1, 1, 32, 32], "avg": [2.0, 2.2, 3.0, 10.0, 11.0, 5.0, 9.0]})
    f = va.noise_floors(c, MACHINE, ["avg"], rules, trees)
    f = f[f["operation"] == "all"]
    twin = f[f["kind"] == "another_run"].set_index(["mapping", "nodes"])
    assert list(twin.index) == [("all", "all"), ("core", "1"), ("node", "2")]
    assert twin.loc[("all", "all"), "floor"] == pytest.approx(0.2) and twin["pairs"].tolist() == [4, 2, 2]
    assert twin.loc[("core", "1"), "floor"] == pytest.approx((0.3 + 0.9 / 2.1) / 2)
    assert twin.loc[("node", "2"), "floor"] == pytest.approx((1 / 10 + 1 / 11) / 2)
    assert twin["cells"].tolist() == [2, 1, 1]
    # spread: the 0.8 quantile of |log(a / b)| over the pairs. Node: log(11 / 10) both ways; core:
    # log(3 / 2.1) both ways; all four, numpy's linear quantile: the 3rd and 4th sorted of four
    # (0.0953, 0.0953, 0.3567, 0.3567) at 0.8 x 3 = 2.4: 0.3567
    assert twin.loc[("node", "2"), "spread"] == pytest.approx(np.log(1.1))
    assert twin.loc[("core", "1"), "spread"] == pytest.approx(np.log(3 / 2.1))
    assert twin.loc[("all", "all"), "spread"] == pytest.approx(np.log(3 / 2.1))
    repeats = f[f["kind"] == "repeats"].set_index(["mapping", "nodes"])  # the default's two runs at core
    assert list(repeats.index) == [("all", "all"), ("core", "1")]
    assert va.noise_floors(c, MACHINE, ["avg"])["kind"].eq("repeats").all()  # without the rules: repeats only


def test_training_cells_take_their_outlier_flags_from_the_training_rows_alone():
    # one curve along P = 2..31: the training P (even) step up to 5 us from P = 20 on; the test P (odd)
    # stay at 1 us. On every row each even P from 20 sits above both neighbourhoods (1 us): flagged. On
    # the training rows alone they are a step (the right-hand neighbours are 5 us too): kept
    from collat.ingest.quality import flag_outliers

    P = np.arange(2, 32)
    avg = np.where((P % 2 == 0) & (P >= 20), 5.0, 1.0)
    rows = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": P, "size": 1,
                         "iterations": 1000, "run": 0, "source": "a.txt", "avg": avg, "max": avg})
    rule = {"window": 3, "z": 6.0, "min_relative": 1.0, "direction": "up", "edge_factor": 2.0}
    rows["outlier"] = flag_outliers(rows, "collective", **rule).to_numpy()
    assert set(rows.loc[rows["outlier"], "P"]) == {20, 22, 24, 26, 28, 30}  # on every row
    assert not set(va.measured_cells(rows, "avg")["P"]) & {20, 22}
    even = P[P % 2 == 0]
    train = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": even, "size": 1})
    again = va.training_cells(rows, train, "avg", rule)
    assert list(again["P"]) == list(even) and (again.set_index("P").loc[20:, "measured"] == 5.0).all()


def test_inner_folds_hold_out_of_a_training_part_what_the_split_holds_out():
    c = cells()  # bcast 1 and 2, core and node, sizes 1 and 2048, P = 2 .. 40 step 2
    got = {split: va.inner_folds(split, c, OPTIONS) for split in va.SPLITS}
    # odd and even P ranks in turn, each between two of the others: the curve's first P never tested,
    # nor its last (40) where the even ranks train (up to 38): that is an extrapolation
    (a, b), (a2, b2) = got["sparse_P"]
    assert sorted(c.loc[b, "P"].unique()) == list(range(4, 40, 4)) and sorted(c.loc[b2, "P"].unique()) == list(range(6, 42, 4))
    assert not (a & b).any() and not (a2 & b2).any()
    [(a, b)] = got["extrapolation"]  # above half extrapolation_P (20): P > 10
    assert c.loc[a, "P"].max() == 10 and c.loc[b, "P"].min() == 12
    assert [set(c.loc[b, "algorithm"]) for _, b in got["unseen_algorithm"]] == [{1}, {2}]
    assert [set(c.loc[b, "mapping"]) for _, b in got["unseen_mapping"]] == [{"core"}, {"node"}]
    [(a, b)] = got["sizes"]  # above the median size (1024.5)
    assert set(c.loc[b, "size"]) == {2048} and set(c.loc[a, "size"]) == {1}
    one = c[c["algorithm"] == 1]
    assert va.inner_folds("unseen_algorithm", one, OPTIONS) == []  # one algorithm: nothing to train on


def test_interval_width_holds_80_percent_of_the_inner_cells():
    measured = np.exp(np.array([0.0, 0.1, -0.2, 0.3, 0.4, -0.5, 0.0, 0.0, 0.0, 0.0, np.nan]))
    # |log error|: 0, .1, .2, .3, .4, .5, 0, 0, 0, 0 (NaN left out): the 0.8 quantile, linear between
    # the sorted 8th and 9th of ten (0.2 + 0.2 (0.3 - 0.2)... numpy's default): 0.32
    got = va.interval_width(measured, np.ones(11))
    assert got.base == pytest.approx(np.quantile([0, .1, .2, .3, .4, .5, 0, 0, 0, 0], 0.8)) and got.per_octave == 0
    assert np.isnan(va.interval_width([np.nan], [1.0]).base)


def test_interval_width_grows_with_distance_as_the_errors_do():
    # five cells at each of d = 0, 1, 2, 3: two with an error of 0.1 + 0.2 d, three with half that;
    # the line 0.1 + 0.2 d has four of five cells at or below it at every distance: the 80 % line
    d = np.repeat([0.0, 1.0, 2.0, 3.0], 5)
    big = 0.1 + 0.2 * d
    error = np.where(np.tile([0, 0, 0, 1, 1], 4) == 1, big, big / 2)
    got = va.interval_width(np.exp(error), np.ones(len(d)), d)
    assert got.base == pytest.approx(0.1, abs=1e-5) and got.per_octave == pytest.approx(0.2, abs=1e-5)
    assert got.at([0.0, 2.0]).tolist() == pytest.approx([0.1, 0.5], abs=1e-5)
    # errors that do not grow with distance (a calibration's errors of form): one width, the quantile
    spread = np.linspace(0.01, 1.0, 100)  # the same 100 errors at each distance: 80 of them up to 0.8
    flat = va.interval_width(np.exp(np.tile(spread, 4)), np.ones(400), np.repeat([0.0, 1.0, 2.0, 3.0], 100))
    assert flat.at([0.0, 3.0]).tolist() == pytest.approx([0.8, 0.8], abs=0.01)
    # errors growing from nothing: a line through the origin, the quantile of the error per octave
    through = va.interval_width(np.exp([0.0, 0.0, 0.3, 0.6, 0.9]), np.ones(5), [0.0, 0.0, 1.0, 2.0, 3.0])
    assert through.base >= 0 and through.at(3.0) == pytest.approx(0.9, abs=1e-5)


def test_coverage_is_the_share_of_cells_inside_the_interval():
    t = pd.DataFrame({"model": "m", "split": "s", "measured": [1.0, 2.0, 3.0, 4.0],
                      "lower": [0.5, 2.5, 2.9, np.nan], "upper": [1.5, 3.0, 3.0, np.nan]})
    got = va.coverage(t, ["model", "split"])
    assert got["coverage"].tolist() == pytest.approx([2 / 3])  # 1 and 3 inside, 2 below; 4 has no interval


def test_distances_are_octaves_to_the_nearest_training_cell_of_the_curve():
    c = cells()
    train, test = c[c["P"].isin([4, 16])], c[c["P"].isin([2, 8, 32])]
    d = va.distances("sparse_P", train, test)
    expect = {2: 1.0, 8: 1.0, 32: 1.0}  # 2 from 4, 8 from 4 (or 16), 32 from 16: one octave each
    assert d == pytest.approx(test["P"].map(expect).to_numpy())
    assert (va.distances("unseen_algorithm", train, test) == 0).all()
    small = c[c["size"] == 1]
    assert va.distances("sizes", small, c[c["size"] == 2048]) == pytest.approx(np.full(80, 11.0))
    assert (va.distances("sizes", small[small["algorithm"] == 1], c[(c["size"] == 2048) & (c["algorithm"] == 2)]) == 0).all()
    # errors of 0.2 at one octave and 0.4 at three: a line of 0.1 per octave from 0.1
    got = va.interval_width(np.exp([0.2, 0.4]), [1.0, 1.0], [1.0, 3.0])
    assert got.at([1.0, 3.0]).tolist() == pytest.approx([0.2, 0.4], abs=1e-5)


def test_interval_table_gives_the_width_per_model_target_and_split():
    t = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sparse_P"] * 4 + ["unseen_algorithm"] * 2,
                      "scored": [True] * 5 + [False], "measured": np.exp([0.1, 0.2, 0.3, 0.4, 0.5, 9.0]),
                      "predicted": 1.0, "distance": [0.0, 1.0, 2.0, 3.0, 0.0, 0.0],
                      "lower": 0.9, "upper": [1.2, 1.2, 1.2, 1.2, 2.0, 2.0]})
    got = va.interval_table(t).set_index("split")
    # sparse_P: |log error| / (1 + d) = 0.1 each; unseen: its one scored cell (0.5)
    assert got.loc["sparse_P", "width"] == pytest.approx(0.1) and got.loc["sparse_P", "cells"] == 4
    assert got.loc["sparse_P", "coverage"] == pytest.approx(0.25)  # exp(0.1) = 1.105 inside, the others above
    assert got.loc["unseen_algorithm", "width"] == pytest.approx(0.5) and got.loc["unseen_algorithm", "coverage"] == 1.0


def test_the_coverage_range_resamples_curves_not_cells():
    """Two curves of 100 cells, one all inside its interval, one all outside: a draw of two curves is
    both inside (1), both outside (0) or one of each (0.5), so the 95 % range is [0, 1] however many
    cells each has; one curve has no range."""
    t = pd.DataFrame({"model": "hybrid", "target": "avg", "split": "sparse_P", "operation": "bcast",
                      "algorithm": np.repeat([1, 2], 100), "mapping": "core", "measured": 1.0, "lower": 0.5,
                      "upper": np.repeat([2.0, 0.9], 100)})
    got = va.coverage_range(t, ["model", "target", "split"]).iloc[0]
    assert (got["coverage_low"], got["coverage_high"]) == (0.0, 1.0)
    one = va.coverage_range(t[t["algorithm"] == 1], ["model", "target", "split"]).iloc[0]
    assert np.isnan(one["coverage_low"]) and np.isnan(one["coverage_high"])
    table = va.interval_table(t.assign(scored=True, predicted=1.0, distance=0.0)).iloc[0]
    assert table["coverage"] == 0.5 and (table["coverage_low"], table["coverage_high"]) == (0.0, 1.0)


def test_a_grid_cell_is_in_the_situation_of_the_split_that_tests_it():
    measured = pd.DataFrame({"operation": "bcast", "algorithm": [1, 1, 1, 2], "mapping": ["core", "core", "core", "node"],
                             "P": [4, 16, 4, 8], "size": [1, 1, 64, 1], "measured": 1.0})
    grid = pd.DataFrame({"operation": "bcast", "algorithm": [1, 1, 1, 1, 2, 3],
                         "mapping": ["core", "core", "core", "node", "core", "core"],
                         "P": [8, 64, 4, 4, 4, 4], "size": [1, 1, 8, 1, 1, 1]})
    split, distance = va.situations(grid, measured)
    assert split.tolist() == ["sparse_P", "extrapolation", "sizes", "unseen_mapping", "unseen_mapping",
                              "unseen_algorithm"]
    # P = 8 one octave from 4 and 16; 64 two from 16; 8 B three from 1 and 64 B (log2 8 = 3, 6 - 3 = 3)
    assert distance.tolist() == pytest.approx([1.0, 2.0, 3.0, 0.0, 0.0, 0.0])
    widths = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sparse_P", "extrapolation"],
                           "width": [0.1, 0.2], "per_octave": [0.1, 0.2]})
    rows = grid.assign(mode="hybrid", target="avg", predicted=2.0)
    lower, upper = va.grid_bounds(rows, {"avg": measured}, widths)
    assert upper[:2] == pytest.approx([2.0 * np.exp(0.1 * 2), 2.0 * np.exp(0.2 * 3)])
    assert lower[0] == pytest.approx(2.0 * np.exp(-0.2)) and np.isnan(upper[2:]).all()  # no width for those splits
    # no sparse_P split (curves of two measured P): between them, the extrapolation's width
    fallback = va.grid_bounds(rows, {"avg": measured}, widths[widths["split"] == "extrapolation"])[1]
    assert fallback[:2] == pytest.approx([2.0 * np.exp(0.2 * 2), 2.0 * np.exp(0.2 * 3)])
    # an algorithm measured under another mapping only: the unseen algorithm's width
    unseen = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["unseen_algorithm"], "width": [0.5],
                           "per_octave": [0.0]})
    assert va.grid_bounds(rows, {"avg": measured}, unseen)[1][3:] == pytest.approx([2.0 * np.exp(0.5)] * 3)


HOCKNEY = pd.DataFrame({"channel": ["core", "core", "node", "node"], "regime": [0, 1, 0, 1],
                        "size_min": [1, 262144, 1, 262144], "alpha_us": [0.5, 0.0, 2.0, 6.0],
                        "beta_us_per_byte": [2.5e-4, 1.2e-4, 1.6e-4, 8e-5]})


def test_size_bounds_are_protocol_switches_and_half_performance_lengths():
    # core: alpha / beta = 0.5 / 2.5e-4 = 2000 B; node: 2 / 1.6e-4 = 12500 B; both switch at 256 KiB
    assert va.size_bounds(HOCKNEY).tolist() == pytest.approx([2000.0, 12500.0, 262144.0])
    # a first regime without a latency (alpha 0) has no half-performance length
    assert va.size_bounds(HOCKNEY.assign(alpha_us=0.0)).tolist() == [262144.0]


def test_a_regime_is_a_filled_socket_or_node_along_P_and_a_bound_along_sizes():
    c = pd.DataFrame({"mapping": ["core", "core", "core", "socket", "socket", "node"], "P": [64, 65, 129, 128, 129, 256],
                      "size": [1, 2000, 2001, 12500, 262144, 1 << 20]})
    # map-by core fills sockets of 64 cores, map-by socket nodes of 128; map-by node one unit
    assert va.regime(c, "P", MACHINE, []).tolist() == [1, 2, 3, 1, 2, 1]
    # bounds at 2000, 12500, 262144: a size at a bound is past it
    assert va.regime(c, "size", MACHINE, [2000.0, 12500.0, 262144.0]).tolist() == [0, 1, 1, 2, 3, 3]


def test_unseen_regime_is_a_regime_no_known_cell_of_the_curve_is_in():
    curve = ["operation", "algorithm", "mapping", "size"]
    known = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": ["core", "core", "node"],
                          "P": [32, 96, 64], "size": 1})
    ask = pd.DataFrame({"operation": "bcast", "algorithm": [1, 1, 1, 1, 2], "mapping": ["core", "core", "node", "core", "core"],
                        "P": [120, 130, 250, 130, 130], "size": [1, 1, 1, 8, 1]})
    # core P = 130 fills a third socket, P = 120 the second (known at 96); map-by node has one regime;
    # a curve with no known cell (size 8; algorithm 2) is no unseen regime: its width is another split's
    assert va.unseen_regime(ask, known, "P", curve, MACHINE, []).tolist() == [False, True, False, False, False]
    sizes = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": 4, "size": [512, 1024, 4096]})
    known = sizes.iloc[:1]
    assert va.unseen_regime(sizes, known, "size", ["operation", "algorithm", "mapping", "P"], MACHINE,
                            [2000.0]).tolist() == [False, False, True]


def test_a_cell_in_an_unseen_regime_adds_the_regime_width_in_quadrature():
    along = np.array([0.3, 0.3, 0.3])
    got = va.regime_half_width(along, 0.4, np.array([False, True, True]))
    assert got.tolist() == pytest.approx([0.3, 0.5, 0.5])  # sqrt(0.09 + 0.16) = 0.5
    assert va.regime_half_width(along, np.nan, np.array([True, True, True])).tolist() == pytest.approx(along)


def test_interval_table_takes_the_width_from_cells_in_a_known_regime():
    t = pd.DataFrame({"model": "hybrid", "target": "avg", "split": "extrapolation", "scored": True,
                      "measured": np.exp([0.1, 0.1, 2.0]), "predicted": 1.0, "distance": 0.0, "lower": 0.5,
                      "upper": 1.2, "regime": [False, False, True]})
    got = va.interval_table(t).iloc[0]
    assert got["width"] == pytest.approx(0.1) and got["cells"] == 3  # the unseen regime's error left out
    assert got["coverage"] == pytest.approx(2 / 3)
    # every cell in an unseen regime: the width from all of them
    assert va.interval_table(t.assign(regime=True)).iloc[0]["width"] == pytest.approx(np.quantile([0.1, 0.1, 2.0], 0.8))


def test_grid_bounds_of_a_new_run_add_the_spread_between_jobs_where_the_split_tested_one_job():
    """A cell between measured P (sparse_P: its split's test cells shared a job with the training
    cells) adds the spread of another_run for its mapping and nodes in quadrature; an algorithm
    nobody measured (whole curves held out, other jobs) does not; a mapping and nodes without a
    spread take the target's over all."""
    measured = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": ["core", "core", "node", "node"],
                             "P": [4, 16, 4, 16], "size": 1, "measured": 1.0})
    grid = pd.DataFrame({"operation": "bcast", "algorithm": [1, 2, 1], "mapping": ["core", "core", "node"],
                         "P": [8, 8, 8], "size": 1, "mode": "hybrid", "target": "avg", "predicted": 1.0})
    widths = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sparse_P", "unseen_algorithm"],
                           "width": [0.3, 0.5], "per_octave": [0.0, 0.0]})
    runs = pd.DataFrame({"target": "avg", "kind": "another_run", "mapping": ["all", "core"], "nodes": ["all", "1"],
                         "spread": [0.8, 0.4]})
    upper = va.grid_bounds(grid, {"avg": measured}, widths, MACHINE, None, runs)[1]
    # core, P = 8 on one node: hypot(0.3, 0.4) = 0.5; unseen algorithm: 0.5 alone; node, P = 8 spans
    # two nodes, no row of its own: hypot(0.3, 0.8)
    assert upper.tolist() == pytest.approx([np.exp(0.5), np.exp(0.5), np.exp(np.hypot(0.3, 0.8))])
    assert va.grid_bounds(grid, {"avg": measured}, widths, MACHINE)[1].tolist() == pytest.approx(
        [np.exp(0.3), np.exp(0.5), np.exp(0.3)])  # without the runs: the validation's width alone
    # a curve whose P came from files of their own (a launch per P) holds the launches' differences
    # in its width already: only the curve one file measured adds the spread
    collective = measured.assign(source=["job.out", "job.out", "p4.txt", "p16.txt"])
    one = va.one_file_curves(collective)
    assert one.values.tolist() == [["bcast", 1, "core"]]
    upper = va.grid_bounds(grid, {"avg": measured}, widths, MACHINE, None, runs, one)[1]
    assert upper.tolist() == pytest.approx([np.exp(0.5), np.exp(0.5), np.exp(0.3)])


def test_grid_bounds_widen_a_cell_past_a_node_its_curve_never_filled():
    measured = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "socket", "P": [64, 128],
                             "size": 1, "measured": 1.0})
    grid = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "socket", "P": [96, 256], "size": 1,
                         "mode": "hybrid", "target": "avg", "predicted": 1.0})
    widths = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sparse_P", "extrapolation", "unseen_mapping"],
                           "width": [0.1, 0.2, 0.6], "per_octave": [0.1, 0.2, 0.0]})
    plain = va.grid_bounds(grid, {"avg": measured}, widths)[1]
    upper = va.grid_bounds(grid, {"avg": measured}, widths, MACHINE, np.array([2000.0]))[1]
    # P = 96 between measured P of the node (0.415 octaves from 128): as before; P = 256 (one octave
    # on, on the second node): sqrt((0.2 * 2)^2 + 0.6^2)
    assert plain.tolist() == pytest.approx([np.exp(0.1 * (1 + np.log2(128 / 96))), np.exp(0.4)])
    assert upper.tolist() == pytest.approx([plain[0], np.exp(np.hypot(0.4, 0.6))])
    # no width for a mapping nobody measured (one mapping in the data): nothing to add
    alone = widths[widths["split"] != "unseen_mapping"]
    assert va.grid_bounds(grid, {"avg": measured}, alone, MACHINE, np.array([2000.0]))[1].tolist() == pytest.approx(plain)


def test_validate_widens_the_interval_of_a_test_cell_in_an_unseen_regime():
    machine = {**MACHINE, "nodes": 3, "cores_per_socket": 8}  # map-by core fills a socket every 8 ranks
    c = cells()
    regime_folds = {}

    def fitted(train, test, target, trend, unfitted, inner):
        regime_folds[inner.split] = len(inner.regime)
        for a, b, _, inner_unfitted, far in inner.regime:  # each mapping of the training part held out
            assert train.loc[b, "mapping"].nunique() == 1 and not (a & b).any() and (far == 0).all()
        return {"calibrated": test["measured"].to_numpy() * 1.1,
                "interval": {"calibrated": va.Width(np.log(1.05), np.log(1.05))},
                "interval_regime": {"calibrated": va.Width(np.log(1.3))}}

    stage = c.assign(mode="calibrated", target="avg", predicted=np.nan)
    _, table = va.validate(collective_of(c), stage, machine, [], OPTIONS, {"calibrated": fitted},
                           bounds=np.array([1e9]))
    # extrapolation trains on P <= 20, where map-by core spans two nodes and map-by node three: the
    # node cells alone are held out (regime_folds); the other splits' core cells reach a third node
    assert regime_folds == {"sparse_P": 2, "extrapolation": 1, "sizes": 2, "unseen_algorithm": 0, "unseen_mapping": 0}
    t = table[(table["model"] == "calibrated") & (table["split"] == "extrapolation")]
    # trained on P <= 20 (map-by core: sockets 1-3); P = 22, 24 share the third socket, P >= 26 do not;
    # map-by node has one regime
    unseen = (t["mapping"] == "core") & (t["P"] >= 26)
    assert t["regime"].tolist() == unseen.tolist()
    half = np.log(t["upper"] / t["predicted"])
    along = np.log(1.05) * (1 + t["distance"])
    assert half[~unseen].to_numpy() == pytest.approx(along[~unseen].to_numpy())
    assert half[unseen].to_numpy() == pytest.approx(np.hypot(along[unseen], np.log(1.3)).to_numpy())
    inside = (t["measured"] >= t["lower"]) & (t["measured"] <= t["upper"])
    # 1.1 y: inside x 1.3; outside x 1.05 (grown by less than half an octave: below x 1.08)
    assert inside[unseen].all() and not inside[~unseen & (t["distance"] < 0.5)].any()
    # a fitted model without a regime width (a training part of one mapping): no cell widened
    _, plain = va.validate(collective_of(c), stage, machine, [], OPTIONS,
                           {"calibrated": lambda *a, **k: {m: v for m, v in fitted(*a, **k).items()
                                                           if m != "interval_regime"}},
                           bounds=np.array([1e9]))
    t = plain[(plain["model"] == "calibrated") & (plain["split"] == "extrapolation")]
    assert not t["regime"].any()
    assert np.log(t["upper"] / t["predicted"]).to_numpy() == pytest.approx((np.log(1.05) * (1 + t["distance"])).to_numpy())


def test_the_regime_folds_keep_the_cells_on_a_node_the_others_never_reach():
    # two nodes of two cores: map-by core P = 2 stays on node 0, map-by node P = 2 spans both;
    # holding map-by node out leaves core on one node, so its two-node cells are what a new node
    # changes; holding core out leaves node cells on two nodes: no core cell crosses
    machine = {"nodes": 2, "sockets_per_node": 1, "cores_per_socket": 2, "cores_per_l3": 2}
    cells = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": ["core", "core", "node", "node"],
                          "P": 2, "size": [1, 4, 1, 4], "measured": 1.0})
    folds = va.regime_folds(cells, OPTIONS, machine)
    assert [(a.tolist(), b.tolist()) for a, b in folds] == [([True, True, False, False], [False, False, True, True])]
    # one node: no cell crosses, so each mapping is held out whole
    one = {**machine, "nodes": 1}
    assert [b.tolist() for _, b in va.regime_folds(cells, OPTIONS, one)] == [[True, True, False, False],
                                                                             [False, False, True, True]]


def test_an_unseen_algorithm_without_inner_folds_or_foreign_is_as_unsure_as_the_physics_price():
    c = cells()
    # the openmpi mode prices bcast 1 at twice its measurement and bcast 2 at three times
    openmpi = c.assign(mode="openmpi", target="avg", predicted=c["measured"] * np.where(c["algorithm"] == 1, 2.0, 3.0))
    stage = pd.concat([openmpi, c.assign(mode="calibrated", target="avg", predicted=np.nan)], ignore_index=True)

    def fitted(width, alien=None):
        def fit(train, test, target, trend, unfitted, inner):
            got = {"calibrated": test["measured"].to_numpy() * 1.1}
            if inner.folds or width is not None:  # two algorithms: an unseen_algorithm fold has no inner fold
                got["interval"] = {"calibrated": va.Width(np.log(width or 1.05))}
            if alien is not None:  # inner folds that held out a foreign algorithm
                got["interval_foreign"] = {"calibrated": va.Width(np.log(alien))}
            return got
        return fit

    def halves(table):
        t = table[(table["model"] == "calibrated") & (table["split"] == "unseen_algorithm") & table["scored"]]
        return t.groupby("algorithm").apply(lambda g: np.log(g["upper"] / g["predicted"]).unique().tolist()).to_dict()
    # no inner fold: bcast 1 held out takes the openmpi mode's error on bcast 2 (log 3), and the other way
    _, table = va.validate(collective_of(c), stage, MACHINE, [], OPTIONS, {"calibrated": fitted(None)})
    assert halves(table) == {1: [pytest.approx(np.log(3.0))], 2: [pytest.approx(np.log(2.0))]}
    # a width from inner folds (x 1.05) stands for an algorithm of the training ones' kind
    _, table = va.validate(collective_of(c), stage, MACHINE, [], OPTIONS, {"calibrated": fitted(1.05)})
    assert halves(table) == {1: [pytest.approx(np.log(1.05))], 2: [pytest.approx(np.log(1.05))]}
    # bcast 2 cuts the message into blocks: each is foreign to the other. The width of the inner
    # folds that held out an algorithm of the training ones' kind (x 5) does not speak for it; that
    # of the folds that held out a foreign one does, where it is wider than the openmpi mode's error
    trees = [{"operation": "bcast", "algorithm": 2, "schedule": "scatter_allgather"}]
    for alien, want in ((None, {1: np.log(3.0), 2: np.log(2.0)}), (1.05, {1: np.log(3.0), 2: np.log(2.0)}),
                        (5.0, {1: np.log(5.0), 2: np.log(5.0)})):
        _, table = va.validate(collective_of(c), stage, MACHINE, [], OPTIONS, {"calibrated": fitted(5.0, alien)},
                               trees=trees)
        assert halves(table) == {a: [pytest.approx(w)] for a, w in want.items()}

    # a fit that gives the physics' price of the cells it priced (the test cells, then the training
    # ones; here 1.5 x measured on every one): the floor is that price's error on the training cells,
    # log 1.5, not the openmpi mode's (log 3, log 2); "physics" is no model of the table
    def physics(train, test, target, trend, unfitted, inner):
        return {**fitted(None)(train, test, target, trend, unfitted, inner), "physics": test["measured"].to_numpy() * 1.5}
    _, table = va.validate(collective_of(c), stage, MACHINE, [], OPTIONS, {"calibrated": physics})
    got = halves(table)
    assert sorted(got) == [1, 2] and all(h == pytest.approx([np.log(1.5)] * len(h)) for h in got.values())
    assert "physics" not in set(table["model"])


def test_one_split_per_operation_and_mapping_takes_the_median_over_held_out_algorithms():
    rows = [  # (model, algorithm, mape, n, coverage): three bcast algorithms held out under map-by core
        ("calibrated", 1, 0.1, 10, 0.5), ("calibrated", 2, 0.3, 30, 1.0), ("calibrated", 5, 0.2, 0, np.nan),
        ("openmpi", 1, 0.4, 10, np.nan), ("openmpi", 2, 0.2, 30, np.nan), ("openmpi", 5, 0.6, 20, np.nan)]
    scores = pd.DataFrame([{"model": m, "split": "unseen_algorithm", "operation": "bcast", "algorithm": a,
                            "mapping": "core", "target": "avg", "n": n, "mape": e, "coverage": c}
                           for m, a, e, n, c in rows])
    other = scores.assign(split="sparse_P", mape=9.0)  # another split: not counted
    t = va.by_operation_mapping(pd.concat([scores, other])).set_index("model")
    assert t.loc["calibrated", "curves"] == 2  # algorithm 5 unpriced (n = 0): left out
    assert t.loc["calibrated", "median_mape"] == pytest.approx(0.2)  # median of 0.1, 0.3
    assert t.loc["calibrated", "coverage"] == pytest.approx((0.5 * 10 + 1.0 * 30) / 40)
    assert t.loc["openmpi", "median_mape"] == pytest.approx(0.4) and np.isnan(t.loc["openmpi", "coverage"])


def test_held_out_algorithms_of_a_kind_nobody_else_is_are_counted_apart():
    """bcast 1 (linear: a root of P - 1 children) held out beside trees 2 and 6 is of a kind none of
    them is; trees 2 and 6 each have the other. Coverage weighted by the test points: trees (0.75 x 20
    + 0.85 x 20) / 40 = 0.80; the linear one alone 0.95; another split and unpriced cells left out."""
    trees = [{"operation": "bcast", "algorithm": 1, "tree": "linear"},
             {"operation": "bcast", "algorithm": 2, "tree": "chain", "fanout": 4},
             {"operation": "bcast", "algorithm": 6, "tree": "binomial"}]
    rows = [(1, 10, 0.95), (2, 20, 0.75), (6, 20, 0.85), (7, 0, np.nan)]
    scores = pd.DataFrame([{"model": "calibrated", "split": "unseen_algorithm", "operation": "bcast", "algorithm": a,
                            "mapping": "core", "target": "avg", "n": n, "mape": 0.1, "coverage": c}
                           for a, n, c in rows])
    t = va.by_kind(pd.concat([scores, scores.assign(split="sparse_P", coverage=0.0)]), trees).set_index("foreign")
    assert t.loc[False, "algorithms"] == "bcast 2, 6" and t.loc[True, "algorithms"] == "bcast 1"
    assert t.loc[False, "points"] == 40 and t.loc[True, "points"] == 10
    assert t.loc[False, "coverage"] == pytest.approx(0.80) and t.loc[True, "coverage"] == pytest.approx(0.95)


def test_the_default_held_out_is_scored_by_the_algorithm_its_rules_run_by_hand():
    """The rules run the binary tree (5, forced: a measured curve) below 16 B and knomial (7, never
    forced) from 16 B. Default held out, calibrated, map-by core, P = 4: at 1 B and 4 B predicted 1.1
    and 3.0 against 1.0 and 2.0 (errors 0.1 and 0.5, median 0.3; 1.0 inside [0.9, 1.2], 2.0 outside
    [2.5, 3.5]); at 16 B 8.0 against 10.0 (0.2, inside [7, 11]); the openmpi mode at 16 B 5.0 (0.5,
    no interval). The forced binary tree's own points and another split's: not counted."""
    rules = {"bcast": [{"P_below": None, "sizes": [[16, 5], [None, 7]]}]}
    rows = [  # (model, algorithm, size, measured, predicted, lower, upper, split)
        ("calibrated", 0, 1, 1.0, 1.1, 0.9, 1.2, "unseen_algorithm"),
        ("calibrated", 0, 4, 2.0, 3.0, 2.5, 3.5, "unseen_algorithm"),
        ("calibrated", 0, 16, 10.0, 8.0, 7.0, 11.0, "unseen_algorithm"),
        ("openmpi", 0, 16, 10.0, 5.0, np.nan, np.nan, "unseen_algorithm"),
        ("calibrated", 5, 1, 1.5, 9.0, 8.0, 10.0, "unseen_algorithm"),
        ("calibrated", 0, 16, 10.0, 99.0, 98.0, 100.0, "sparse_P")]
    table = pd.DataFrame([{"model": m, "operation": "bcast", "algorithm": a, "mapping": "core", "P": 4, "size": s,
                           "target": "avg", "measured": y, "predicted": p, "lower": lo, "upper": hi, "split": sp,
                           "scored": True} for m, a, s, y, p, lo, hi, sp in rows])
    t = va.by_default_run(table, rules).set_index(["algorithm", "model"])
    assert sorted(t.index) == [(5, "calibrated"), (7, "calibrated"), (7, "openmpi")]
    assert t.loc[(5, "calibrated"), "forced"] and not t.loc[(7, "calibrated"), "forced"]
    assert t.loc[(5, "calibrated"), "points"] == 2
    assert t.loc[(5, "calibrated"), "median_error"] == pytest.approx(0.3)
    assert t.loc[(5, "calibrated"), "coverage"] == pytest.approx(0.5)
    assert t.loc[(7, "calibrated"), "median_error"] == pytest.approx(0.2) and t.loc[(7, "calibrated"), "coverage"] == 1.0
    assert t.loc[(7, "openmpi"), "median_error"] == pytest.approx(0.5) and np.isnan(t.loc[(7, "openmpi"), "coverage"])
    assert va.by_default_run(table, {}).empty  # no rules for the operation: nothing


def test_a_hybrid_price_that_is_a_twins_measurement_has_the_spread_between_jobs_as_its_interval():
    """The default (0) runs the binomial tree (1) everywhere and measures 1.1x its forced run under
    map-by core (one node), 1.2x under map-by node (two). The fitted hybrid marks its first test
    cell (map-by core, P = 2) of every fold as a twin's measurement. Algorithm 2 held out: the
    training part's pairs (0 against 1) give that cell the spread of map-by core on one node, log
    1.1; algorithm 1 or 0 held out: no pair in the training part, the split's width (log 1.3)
    stands. The calibrated mode has no twins."""
    base = cells()
    default = base[base["algorithm"] == 1].assign(algorithm=0)
    default["measured"] *= np.where(default["mapping"] == "core", 1.1, 1.2)
    c = pd.concat([base, default], ignore_index=True)
    openmpi = c.assign(mode="openmpi", target="avg", predicted=c["measured"] * 2.0)
    stage = pd.concat([openmpi, c.assign(mode="calibrated", target="avg", predicted=np.nan)], ignore_index=True)
    rules = {"bcast": [{"P_below": None, "sizes": [[None, 1]]}]}
    trees = [{"operation": "bcast", "algorithm": 1, "tree": "binomial"},
             {"operation": "bcast", "algorithm": 2, "tree": "binary"}]

    def fit(train, test, target, trend, unfitted, inner):
        twin = np.zeros(len(test), dtype=bool)
        twin[0] = True
        return {"calibrated": test["measured"].to_numpy() * 1.1, "hybrid": test["measured"].to_numpy() * 1.05,
                "twin": twin, "interval": {"calibrated": va.Width(np.log(1.3)), "hybrid": va.Width(np.log(1.3))}}

    def halves(table, model):
        t = table[(table["model"] == model) & (table["split"] == "unseen_algorithm") & table["scored"]]
        return {a: sorted(np.unique(np.round(np.log(g["upper"] / g["predicted"]), 9)).tolist())
                for a, g in t.groupby("algorithm")}
    _, table = va.validate(collective_of(c), stage, MACHINE, [], OPTIONS, {"calibrated": fit}, trees=trees,
                           default_rules=rules)
    assert halves(table, "hybrid") == {0: [pytest.approx(np.log(1.3))], 1: [pytest.approx(np.log(1.3))],
                                       2: [pytest.approx(np.log(1.1)), pytest.approx(np.log(1.3))]}
    assert halves(table, "calibrated") == {a: [pytest.approx(np.log(1.3))] for a in (0, 1, 2)}
    u = table[(table["split"] == "unseen_algorithm") & table["scored"]]
    assert u.loc[u["model"] == "hybrid", "twin"].sum() == 3 and not u.loc[u["model"] == "calibrated", "twin"].any()
    _, table = va.validate(collective_of(c), stage, MACHINE, [], OPTIONS, {"calibrated": fit}, trees=trees)
    assert halves(table, "hybrid")[2] == [pytest.approx(np.log(1.3))]  # without the rules: no pairs


def test_interval_table_leaves_a_twins_measurement_out_of_its_splits_width():
    t = pd.DataFrame({"model": "hybrid", "target": "avg", "split": "unseen_algorithm", "scored": True,
                      "measured": np.exp([0.5, 0.5, 0.05]), "predicted": 1.0, "distance": 0.0, "lower": 0.5,
                      "upper": [2.0, 2.0, 1.01], "twin": [False, False, True]})
    got = va.interval_table(t).set_index("split")
    assert got.loc["unseen_algorithm", "width"] == pytest.approx(0.5) and got.loc["unseen_algorithm", "cells"] == 3
    assert got.loc["unseen_algorithm", "coverage"] == pytest.approx(2 / 3)


def test_grid_bounds_give_a_twins_measurement_a_measured_cells_interval_of_another_job():
    """Algorithm 2 nobody measured: at P = 4 the hybrid's price is the default's measurement (a
    twin): a measured cell's width (sparse_P at distance 0, 0.1) plus the spread between jobs of
    map-by core on one node (0.2) in quadrature, though no curve of it is one job's; at P = 8 the
    unseen algorithm's width (0.5)."""
    measured = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": [4, 16], "size": 1,
                             "measured": 1.0})
    grid = pd.DataFrame({"operation": "bcast", "algorithm": 2, "mapping": "core", "P": [4, 8], "size": 1,
                         "mode": "hybrid", "target": "avg", "predicted": 1.0, "twin": [True, False]})
    widths = pd.DataFrame({"model": "hybrid", "target": "avg", "split": ["sparse_P", "unseen_algorithm"],
                           "width": [0.1, 0.5], "per_octave": [0.3, 0.0]})
    runs = pd.DataFrame({"target": "avg", "kind": "another_run", "mapping": ["all", "core"], "nodes": ["all", "1"],
                         "spread": [0.8, 0.2]})
    one_job = pd.DataFrame({"operation": "bcast", "algorithm": [1], "mapping": "core"})
    upper = va.grid_bounds(grid, {"avg": measured}, widths, MACHINE, None, runs, one_job)[1]
    assert upper.tolist() == pytest.approx([np.exp(np.hypot(0.1, 0.2)), np.exp(0.5)])
    # without the runs (the selection's own error of a price): a measured cell's width
    assert va.grid_bounds(grid, {"avg": measured}, widths)[1].tolist() == pytest.approx([np.exp(0.1), np.exp(0.5)])


def test_a_new_runs_spread_is_its_operations_before_every_operations():
    """reduce under map-by core on one node has a row of its own (0.05); reduce under map-by node
    (two nodes) has its operation's over every mapping (0.1), not the bcasts' (0.5); bcast under
    map-by socket, no row of its operation there nor over all: every operation's for socket on one
    node (0.3); without an operation column, the mapping's rows."""
    runs = pd.DataFrame({"target": "avg", "kind": "another_run",
                         "operation": ["all", "all", "all", "reduce", "reduce", "bcast"],
                         "mapping": ["all", "node", "socket", "all", "core", "node"],
                         "nodes": ["all", "2", "1", "all", "1", "2"], "spread": [0.4, 0.5, 0.3, 0.1, 0.05, 0.5]})
    cells = pd.DataFrame({"operation": ["reduce", "reduce", "bcast"], "mapping": ["core", "node", "socket"],
                          "P": [4, 4, 4]})
    runs_b = runs[runs["operation"] != "bcast"]
    assert va.new_run_spread(cells, runs_b, "avg", MACHINE).tolist() == pytest.approx([0.05, 0.1, 0.3])
    plain = runs[runs["operation"] == "all"].drop(columns="operation")
    assert va.new_run_spread(cells, plain, "avg", MACHINE).tolist() == pytest.approx([0.4, 0.5, 0.3])
