"""How far the calibration carries to an unmeasured algorithm: the blend, its weight, the grid."""

import numpy as np
import pandas as pd
import pytest

from collat import model as md
from collat.model import calibration as cal
from collat.model import transfer as tr
from test_calibration import OPTIONS, TINY, blocks_options, start_from, synthetic_cells, true_table


def test_the_blend_is_geometric_and_keeps_the_calibrated_price_without_an_openmpi_one():
    # e^2 ^ 0.25 x e^0 ^ 0.75 = e^0.5
    assert tr.transferred([np.e ** 2], [1.0], 0.25)[0] == pytest.approx(np.e ** 0.5)
    assert tr.transferred([3.0, 4.0], [np.nan, 2.0], 1.0).tolist() == pytest.approx([3.0, 4.0])
    assert tr.transferred([3.0, 4.0], [np.nan, 2.0], 0.0).tolist() == pytest.approx([3.0, 2.0])


def test_the_weight_is_the_one_whose_worst_held_out_algorithm_is_priced_best():
    y = np.array([1.0, 10.0, 100.0])
    one = np.zeros(3)
    # calibrated e^0.5 too high, openmpi e^0.5 too low: the even blend is exact
    assert tr.transfer_weight(y, y * np.exp(0.5), y * np.exp(-0.5), one) == pytest.approx(0.5)
    # calibrated exact: weight 1; openmpi exact: weight 0
    assert tr.transfer_weight(y, y, y * 3, one) == 1.0 and tr.transfer_weight(y, y * 3, y, one) == 0.0
    # both exact: a tie, the larger weight wins; no cell both price: 1
    assert tr.transfer_weight(y, y, y, one) == 1.0
    assert tr.transfer_weight(y, y, np.full(3, np.nan), one) == 1.0
    # two held-out algorithms the openmpi mode prices exactly, one it prices e^0.9 too high, which
    # the calibration prices e^0.2 too low: the pooled median would take the openmpi mode (w = 0,
    # the third algorithm off by e^0.9); the worst algorithm's error, max(0.2 w, |0.9 - 1.1 w|),
    # is least on the grid at w = 0.7 (0.14; 0.6: 0.24, 0.8: 0.16)
    y9 = np.ones(9)
    cal = np.r_[np.full(6, np.exp(0.2)), np.full(3, np.exp(-0.2))]
    openmpi = np.r_[np.ones(6), np.full(3, np.exp(0.9))]
    algorithm = np.repeat([1, 2, 3], 3)
    assert tr.transfer_weight(y9, cal, openmpi, algorithm) == pytest.approx(0.7)


def test_the_grid_blends_only_algorithms_nobody_measured():
    key = dict(mapping="core", P=4, size=8, target="avg")
    cal_grid = pd.DataFrame([dict(operation="bcast", algorithm=a, predicted=p, **key) for a, p in ((1, 4.0), (2, 9.0))]
                            + [dict(operation="reduce", algorithm=2, predicted=9.0, **key)])
    openmpi = cal_grid.assign(predicted=1.0)
    measured = {"avg": pd.DataFrame({"operation": ["bcast"], "algorithm": [1]})}
    weights = pd.DataFrame({"operation": ["bcast", "reduce"], "target": ["avg", "avg"], "weight": [0.5, 1.0]})
    got = tr.transfer_grid(cal_grid, openmpi, measured, weights)
    # bcast 1 measured: as calibrated; bcast 2 nobody measured: sqrt(9 x 1); reduce's weight 1: as calibrated
    assert got.tolist() == pytest.approx([4.0, 3.0, 9.0])


def test_held_out_weights_trust_a_calibration_that_prices_unseen_algorithms_well():
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, algorithms=(1, 2, 3), sizes=(1, 8192))
    start = {"bcast": start_from(table, 1.3)}
    opts = cal.CalibrationOptions(4, 11, "soft_l1", 0.1, 2.0, 20, 1e-5, ("avg",))
    y = cells["measured"].to_numpy()
    # an openmpi mode twice too slow everywhere: the calibration, which recovers the machine from
    # any two algorithms, prices the third better, and the weight trusts it. The linear tree held
    # out is foreign to the other two (no parent of theirs has P - 1 children): not among them
    got = tr.held_out_weights({"avg": cells}, {"avg": 2 * y}, start, OPTIONS, md.Placements(TINY), opts, 7)
    row = got.iloc[0]
    assert (row["operation"], row["target"], row["algorithms"], row["cells"]) == \
        ("bcast", "avg", 2, int((cells["algorithm"] != 1).sum()))
    assert row["error_openmpi"] == pytest.approx(np.log(2))
    assert row["error_calibrated"] < 0.1 and row["weight"] >= 0.8
    assert row["error_transferred"] <= row["error_calibrated"] + 1e-12
    # an exact openmpi mode: the weight goes to it
    exact = tr.held_out_weights({"avg": cells}, {"avg": y}, start, OPTIONS, md.Placements(TINY), opts, 7)
    assert exact["weight"].iloc[0] == 0.0 and exact["error_transferred"].iloc[0] == 0.0


TREES = [{"operation": "bcast", "algorithm": 1, "tree": "linear"},
         {"operation": "bcast", "algorithm": 6, "tree": "binomial"},
         {"operation": "bcast", "algorithm": 8, "schedule": "scatter_allgather"},
         {"operation": "reduce", "algorithm": 7, "schedule": "rabenseifner"}]


def test_an_algorithms_family_is_its_shapes_kind():
    # the linear tree (the root and P - 1 others): flat; any other tree shape, and the default (its
    # fixed rules run trees): tree; a schedule of blocks: blocks; an algorithm without a shape: tree
    assert [tr.family(TREES, "bcast", a) for a in (0, 1, 6, 8)] == ["tree", "flat", "tree", "blocks"]
    assert tr.family(TREES, "reduce", 7) == "blocks" and tr.family(TREES, "reduce", 2) == "tree"


def test_a_flat_tree_is_foreign_to_trees_but_covers_them():
    # the linear bcast beside the default and the binomial tree: no measured parent had P - 1
    # children, so it is foreign; the binomial tree beside the linear one alone is not (the linear
    # root's receivers take every count of children up to P - 1)
    asked = pd.DataFrame({"operation": ["bcast", "bcast"], "algorithm": [1, 6]})
    trees_only = pd.DataFrame({"operation": ["bcast", "bcast"], "algorithm": [0, 6]})
    flat_only = pd.DataFrame({"operation": ["bcast"], "algorithm": [1]})
    assert tr.foreign(asked, trees_only, TREES).tolist() == [True, False]
    assert tr.foreign(asked, flat_only, TREES).tolist() == [False, False]


def test_an_algorithm_is_foreign_where_no_measured_one_of_its_operation_shares_its_family():
    asked = pd.DataFrame({"operation": ["bcast", "bcast", "bcast", "reduce", "reduce"], "algorithm": [6, 8, 8, 7, 7]})
    known = pd.DataFrame({"operation": ["bcast", "bcast"], "algorithm": [0, 1]})
    # bcast 8 beside trees only: foreign; bcast 6 a tree; reduce: nothing measured of it, nothing to be foreign to
    assert tr.foreign(asked, known, TREES).tolist() == [False, True, True, False, False]
    with_blocks = pd.concat([known, pd.DataFrame({"operation": ["bcast", "reduce"], "algorithm": [8, 1]})])
    assert tr.foreign(asked, with_blocks, TREES).tolist() == [False, False, False, True, True]


def test_the_grid_prices_a_foreign_algorithm_by_the_openmpi_mode_alone():
    key = dict(mapping="core", P=4, size=8, target="avg")
    cal_grid = pd.DataFrame([dict(operation="bcast", algorithm=a, predicted=9.0, **key) for a in (1, 6, 8)])
    openmpi = cal_grid.assign(predicted=1.0)
    measured = {"avg": pd.DataFrame({"operation": ["bcast"], "algorithm": [1]})}
    weights = pd.DataFrame({"operation": ["bcast"], "target": ["avg"], "weight": [0.5]})
    # bcast 1 measured: as calibrated; bcast 6, a tree nobody measured: sqrt(9 x 1); bcast 8, blocks
    # beside measured trees: the openmpi mode's 1; without the shapes every algorithm is a tree
    assert tr.transfer_grid(cal_grid, openmpi, measured, weights, TREES).tolist() == pytest.approx([9.0, 3.0, 1.0])
    assert tr.transfer_grid(cal_grid, openmpi, measured, weights).tolist() == pytest.approx([9.0, 3.0, 3.0])


def test_held_out_weights_leave_out_an_algorithm_foreign_to_the_others():
    # bcast 3 a scatter-allgather (blocks) beside two trees: held out, the calibration of the trees
    # says nothing of it, so the weight is chosen on the two trees alone
    options = blocks_options(3)
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, algorithms=(2, 5, 3), sizes=(1, 8192), options=options)
    start = {"bcast": start_from(table, 1.3, options)}
    opts = cal.CalibrationOptions(4, 11, "soft_l1", 0.1, 2.0, 20, 1e-5, ("avg",))
    y = cells["measured"].to_numpy()
    got = tr.held_out_weights({"avg": cells}, {"avg": 2 * y}, start, options, md.Placements(TINY), opts, 7)
    row = got.iloc[0]
    assert row["algorithms"] == 2 and row["cells"] == int((cells["algorithm"] != 3).sum())


CELL_KEY = dict(mapping="core", size=8, target="avg")


def one_measured_curve():
    """Measured linear bcast at P = 2..6, which the openmpi mode prices e^0.1, e^-0.2, e^0.3, e^-0.4,
    e^0.5 off: the 80 % quantile of |log error| is 0.42 (numpy's linear interpolation)."""
    measured = {"avg": pd.DataFrame({"operation": "bcast", "algorithm": 1, "P": [2, 3, 4, 5, 6], "measured": 1.0,
                                     "mapping": "core", "size": 8})}
    openmpi = pd.DataFrame({"operation": "bcast", "algorithm": 1, "P": [2, 3, 4, 5, 6],
                            "predicted": np.exp([0.1, -0.2, 0.3, -0.4, 0.5]), **CELL_KEY})
    return measured, openmpi


def test_a_foreign_algorithms_interval_is_as_wide_as_the_openmpi_modes_error():
    key = CELL_KEY
    measured, openmpi = one_measured_curve()
    grid = pd.DataFrame([dict(mode=m, operation="bcast", algorithm=a, P=4, predicted=2.0, **key)
                         for m in ("calibrated", "hybrid", "openmpi") for a in (6, 8)])
    lower, upper = np.full(6, 1.9), np.full(6, 2.1)
    lo, up = tr.unmeasured_bounds(grid, openmpi, measured, TREES, lower, upper)
    width = np.quantile([0.1, 0.2, 0.3, 0.4, 0.5], 0.8)
    # bcast 8 (blocks) in the fitted modes: widened; bcast 6 (a tree) and the openmpi mode's rows: as they were
    assert up.tolist() == pytest.approx([2.1, 2 * np.exp(width), 2.1, 2 * np.exp(width), 2.1, 2.1])
    assert lo.tolist() == pytest.approx([1.9, 2 * np.exp(-width), 1.9, 2 * np.exp(-width), 1.9, 1.9])
    # a narrower error keeps the wider interval it had
    lo, up = tr.unmeasured_bounds(grid, openmpi, measured, TREES, np.full(6, 0.1), np.full(6, 40.0))
    assert up.tolist() == pytest.approx([40.0] * 6) and lo.tolist() == pytest.approx([0.1] * 6)
    # the hybrid's bcast 8 priced by a twin's measurement (the default running its shape) keeps its own
    twin = grid.assign(twin=[False, False, False, True, False, False])
    lo, up = tr.unmeasured_bounds(twin, openmpi, measured, TREES, lower, upper)
    assert up.tolist() == pytest.approx([2.1, 2 * np.exp(width), 2.1, 2.1, 2.1, 2.1])


def test_physics_width_is_the_openmpi_modes_80th_percentile_error():
    # |log error| 0.1 .. 0.5 and a cell without a price: numpy's linear quantile, 0.42
    assert tr.physics_width(np.ones(6), np.exp([0.1, -0.2, 0.3, -0.4, 0.5, np.nan])) == pytest.approx(0.42)
    assert np.isnan(tr.physics_width([1.0], [np.nan]))


def test_an_unmeasured_tree_without_an_interval_gets_the_openmpi_modes_error():
    key = CELL_KEY
    measured, openmpi = one_measured_curve()
    # bcast 6 (a tree nobody measured) without an interval, bcast 1 (measured) without one either
    grid = pd.DataFrame([dict(mode="calibrated", operation="bcast", algorithm=a, P=4, predicted=2.0, **key)
                         for a in (6, 1)])
    lo, up = tr.unmeasured_bounds(grid, openmpi, measured, TREES, np.full(2, np.nan), np.full(2, np.nan))
    width = np.quantile([0.1, 0.2, 0.3, 0.4, 0.5], 0.8)
    assert up[0] == pytest.approx(2 * np.exp(width)) and lo[0] == pytest.approx(2 * np.exp(-width))
    assert np.isnan(up[1]) and np.isnan(lo[1])  # a measured algorithm's interval is the validation's alone
    # bcast 1 under map-by node, a mapping nobody measured, without an interval: widened too
    other = grid.assign(mapping="node")
    lo, up = tr.unmeasured_bounds(other, openmpi, measured, TREES, np.full(2, np.nan), np.full(2, np.nan))
    assert up.tolist() == pytest.approx([2 * np.exp(width)] * 2)
