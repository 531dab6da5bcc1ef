"""How much of the model's bend between measured P the hybrid keeps, by hand."""

import numpy as np
import pandas as pd
import pytest

from collat.model import bend as be


def frame(rows):
    return pd.DataFrame(rows, columns=["operation", "algorithm", "mapping", "P", "size", "measured"])


def test_model_bend_is_the_price_less_the_straight_line_between_its_prices_at_the_train_P():
    train = frame([("bcast", 1, "core", 2, 1, 1.0), ("bcast", 1, "core", 8, 1, 1.0)])
    test = frame([("bcast", 1, "core", 4, 1, np.nan), ("bcast", 1, "core", 8, 1, np.nan),
                  ("bcast", 1, "core", 16, 1, np.nan), ("bcast", 2, "core", 4, 1, np.nan)])
    got = be.model_bend(train, [1.0, 4.0], test, [5.0, 6.0, 7.0, 8.0])
    # P = 4 halfway between 2 and 8 in log2 P: the line of the prices 1 and 4 is sqrt(4) = 2; at the
    # train P = 8 it is the price there, 4; P = 16 is beyond the train P and algorithm 2 has none
    assert got[:2] == pytest.approx([np.log(5 / 2), np.log(6 / 4)])
    assert np.isnan(got[2:]).all()


def test_bend_weight_keeps_the_share_of_the_bend_that_the_errors_ask_for():
    # the hybrid with the whole bend is 0.2 too high where the bend is 0.4: half of it is right
    assert be.bend_weight([0.2, 0.2, -0.1], [0.4, 0.4, -0.2]) == 0.5
    assert be.bend_weight([0.3, -0.1], [0.0, 0.0]) == 1.0  # no bend: every weight ties, the model's shape
    assert be.bend_weight([np.nan], [0.3]) == 1.0  # no cell: the model's shape
    assert be.bend_weight([0.5, 0.5], [0.5, 0.5]) == 0.0  # the bend is all of the error: a straight line


def test_inner_fold_errors_score_the_hybrid_between_two_train_P_only():
    train = frame([("bcast", 1, "core", 2, 1, 1.0), ("bcast", 1, "core", 4, 1, 2.0),
                   ("bcast", 1, "core", 8, 1, 4.0), ("bcast", 1, "core", 16, 1, 8.0)])
    a = np.array([True, False, True, False])
    prices = np.array([1.0, 3.0, 4.0, 9.0])  # the fold's calibration: exact at its train P 2 and 8
    at, error, bend = be.inner_fold_errors(train, [(a, ~a, prices)])
    # P = 4: residuals 0 at both ends, so the hybrid is the price 3 against 2 measured; the line of the
    # prices there is 2, so the bend is log(3 / 2): all of the error. P = 16 is beyond P = 8: not scored
    assert at["P"].tolist() == [4]
    assert error == pytest.approx([np.log(1.5)]) and bend == pytest.approx([np.log(1.5)])
    assert be.weights_by_operation(at, error, bend) == {"bcast": 0.0}
