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


def test_a_full_node_s_residuals_go_apart_where_the_inner_folds_err_less_so():
    # one curve per operation at P = 2, 4, 8, 12, 16, a node full at P = 16, every price 1. The bcast
    # measures 1 up to P = 12 and 2 at P = 16 (the full node's own cost); the reduce P / 2 (a residual
    # linear in log2 P, full node or not). The fold that trains on 2, 8, 16 tests P = 12 between a
    # full node and none: apart, the bcast carries P = 8's residual (error 0) where across it takes
    # log2(1.5) of the way to log 2 (error 0.405); the reduce interpolates exactly across and errs
    # log(6 / 4) apart. P = 4 lies between 2 and 8: the same either way, it does not decide
    rows = [(op, 1, "core", P, 1, m(P)) for op, m in (("bcast", lambda P: 2.0 if P == 16 else 1.0),
                                                      ("reduce", lambda P: P / 2)) for P in (2, 4, 8, 12, 16)]
    train = frame(rows).assign(full_node=lambda d: d["P"] == 16)
    trained = train["P"].isin([2, 8, 16]).to_numpy()
    folds = [(trained, ~trained, np.ones(len(train)))]
    apart, cells = be.apart_by_operation(train, folds)
    assert apart == {"bcast": True, "reduce": False} and cells == {"bcast": 1, "reduce": 1}
    # without the column nothing goes apart; keep_apart clears the column where not chosen
    assert be.apart_by_operation(train.drop(columns="full_node"), folds) == ({}, {})
    kept = be.keep_apart(train, apart)
    assert kept["full_node"].tolist() == [False] * 4 + [True] + [False] * 5
