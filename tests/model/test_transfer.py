"""How far the calibration carries to an unmeasured algorithm: the blend, its weight, the grid."""

import numpy as np
import pandas as pd
import pytest

from collat import model as md
from collat.model import calibration as cal
from collat.model import transfer as tr
from test_calibration import OPTIONS, TINY, start_from, synthetic_cells, true_table


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
    # any two algorithms, prices the third better, and the weight trusts it
    got = tr.held_out_weights({"avg": cells}, {"avg": 2 * y}, start, OPTIONS, md.Placements(TINY), opts, 7)
    row = got.iloc[0]
    assert (row["operation"], row["target"], row["algorithms"], row["cells"]) == ("bcast", "avg", 3, len(cells))
    assert row["error_openmpi"] == pytest.approx(np.log(2))
    assert row["error_calibrated"] < 0.1 and row["weight"] >= 0.8
    assert row["error_transferred"] <= row["error_calibrated"] + 1e-12
    # an exact openmpi mode: the weight goes to it
    exact = tr.held_out_weights({"avg": cells}, {"avg": y}, start, OPTIONS, md.Placements(TINY), opts, 7)
    assert exact["weight"].iloc[0] == 0.0 and exact["error_transferred"].iloc[0] == 0.0
