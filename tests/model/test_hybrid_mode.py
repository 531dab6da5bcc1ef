"""Nearest measurements in log latency: the naive baseline and the hybrid mode, by hand."""

import numpy as np
import pandas as pd
import pytest

from collat.model import hybrid_mode as co


def frame(rows):
    return pd.DataFrame(rows, columns=["operation", "algorithm", "mapping", "P", "size", "measured"])


def cells(fn=lambda alg, P: 1.0 + 0.5 * P * alg):
    return frame([("bcast", alg, m, P, s, fn(alg, P)) for alg in (1, 2) for m in ("core", "node") for s in (1, 2048)
                  for P in range(2, 42, 2)])


def test_features_weigh_categories_over_any_grid_distance():
    c = frame([("bcast", 1, "core", 8, 1024, 1.0), ("reduce", 2, "node", 2, 1, 1.0)])
    f = co.features(c, ["bcast", "reduce"], [1, 2], ["core", "node"])
    assert f[0].tolist() == [3.0, 10.0, 100.0, 0.0, 10.0, 0.0, 10.0, 0.0]
    assert f[1].tolist() == [1.0, 0.0, 0.0, 100.0, 0.0, 10.0, 0.0, 10.0]


def test_nearest_neighbour_takes_the_nearest_cell_of_the_same_algorithm_and_mapping():
    c = cells()
    train, test = c[c["P"] % 4 == 2], c[(c["P"] % 4 == 0)]
    got = co.nearest_neighbour(train, test, 1)
    # P = 4k lies between 4k - 2 and 4k + 2; in log2 P the upper one is nearer (log2(6/4) < log2(4/2)),
    # so k = 1 takes the value at P + 2: measured + 0.5 * 2 * algorithm (at P = 40, the last, P - 2)
    step = np.where(test["P"].to_numpy() == 40, -1.0, 1.0)
    want = test["measured"].to_numpy() + step * 0.5 * 2 * test["algorithm"].to_numpy()
    assert got == pytest.approx(want)
    assert np.isnan(co.nearest_neighbour(train.iloc[:0], test, 1)).all()


def test_hybrid_interpolates_the_residual_along_its_curve_in_log_P():
    # residuals log(2/1) at P = 2 and log(16/2) = log 8 at P = 16; P = 4 lies a third of the way in
    # log2 P (1 -> 2 -> 4): log 2 + (log 8 - log 2) / 3 = log 2 + log(4) / 3, so 3 x 2 x 4^(1/3).
    # The algorithm-2 cell at P = 4 (residual log 100) is another curve: not used.
    train = frame([("bcast", 1, "core", 2, 1, 2.0), ("bcast", 1, "core", 16, 1, 16.0),
                   ("bcast", 2, "core", 4, 1, 100.0)])
    test = frame([("bcast", 1, "core", 4, 1, np.nan), ("bcast", 1, "core", 16, 1, np.nan)])
    got = co.hybrid(train, np.array([1.0, 2.0, 1.0]), test, np.array([3.0, 5.0]), 2)
    assert got[0] == pytest.approx(3 * 2 * 4 ** (1 / 3))
    assert got[1] == pytest.approx(5 * 8)  # a measured cell: its own residual


def test_hybrid_keeps_the_share_bend_of_the_models_bend_between_two_measured_P():
    # as above: at P = 4 the measurements' straight line in log is 2 x 8^(1/3) = 4, the prices' line
    # 1 x 2^(1/3); the model's bend there is log(3 / 2^(1/3)). bend = 0 draws the measurements' line,
    # 0.5 keeps half the bend in log; a measured cell is its measurement whatever the weight
    train = frame([("bcast", 1, "core", 2, 1, 2.0), ("bcast", 1, "core", 16, 1, 16.0)])
    test = frame([("bcast", 1, "core", 4, 1, np.nan), ("bcast", 1, "core", 16, 1, np.nan)])
    prices = np.array([1.0, 2.0])
    for bend, want in ((1.0, 3 * 2 * 4 ** (1 / 3)), (0.0, 4.0), (0.5, 4.0 * np.sqrt(3 / 2 ** (1 / 3)))):
        got = co.hybrid(train, prices, test, np.array([3.0, 2.0]), 2, bend=bend)
        assert got == pytest.approx([want, 16.0]), bend


def test_hybrid_beyond_the_measured_P_carries_the_end_and_averages_with_the_trend():
    train = frame([("bcast", 1, "core", 2, 1, 2.0), ("bcast", 1, "core", 8, 1, 8.0)])
    test = frame([("bcast", 1, "core", P, 1, np.nan) for P in (4, 32, 64)])
    # residuals log 2 at P = 2 and log 4 at P = 8: P = 32 and 64 carry log 4
    plain = co.hybrid(train, np.array([1.0, 2.0]), test, np.array([3.0, 5.0, 7.0]), 1)
    assert plain == pytest.approx([3 * np.sqrt(8), 5 * 4, 7 * 4])
    # a trend counts beyond the measured P only, and only where positive: sqrt(20 x 45) = 30
    trend = np.array([1000.0, 45.0, -1.0])
    got = co.hybrid(train, np.array([1.0, 2.0]), test, np.array([3.0, 5.0, 7.0]), 1, trend)
    assert got == pytest.approx([3 * np.sqrt(8), 30.0, 28.0])
    values, where = co.curve_residuals(train, np.log([2.0, 4.0]), frame([("bcast", 1, "core", 1, 1, 0),
                                                                       ("bcast", 2, "core", 4, 1, 0)]))
    assert values[0] == pytest.approx(np.log(2.0)) and np.isnan(values[1])
    assert where.tolist() == [2, 0]  # below the smallest P: beyond; another curve: none


def test_a_full_node_s_residuals_and_the_others_are_interpolated_apart():
    # residual 0 at P = 2 and 8, log 2 at P = 16 (the node full there, as on the 16-core node)
    train = frame([("bcast", 1, "core", P, 1, 1.0) for P in (2, 8, 16)]).assign(full_node=[False, False, True])
    values = np.log([1.0, 1.0, 2.0])
    test = frame([("bcast", 1, "core", P, 1, np.nan) for P in (4, 12, 16)])
    # without the column: P = 12 between 8 and 16, log2(12 / 8) = 0.585 of the way
    plain, where = co.curve_residuals(train, values, test)
    assert plain == pytest.approx([0.0, np.log2(1.5) * np.log(2.0), np.log(2.0)]) and where.tolist() == [1, 1, 1]
    # with it: P = 12 (no node full) carries P = 8's; inside the curve's measured P all the same
    got, where = co.curve_residuals(train, values, test.assign(full_node=[False, False, True]))
    assert got == pytest.approx([0.0, 0.0, np.log(2.0)]) and where.tolist() == [1, 1, 1]
    # a full node's cell on a curve measured where none is: every train cell of the curve answers
    got, _ = co.curve_residuals(train.assign(full_node=False), values, test.assign(full_node=[False, False, True]))
    assert got == pytest.approx(plain)


def test_cells_are_marked_full_on_the_operations_a_calibration_found_slower_there():
    """A node of 16 cores: full from P = 16 under map-by core, from P = 31 on two nodes under map-by
    node; marked only on the operations the calibration measured a slowdown on (its 95 % interval
    above 1: bcast, not reduce, whose interval reaches 1, nor a factor held at its start)."""
    from collat.model.calibrated_mode import FULL, slowed_operations

    machine = {"nodes": 2, "sockets_per_node": 1, "cores_per_socket": 16, "cores_per_l3": 16}
    cells = pd.DataFrame({"operation": ["bcast", "bcast", "bcast", "reduce"], "mapping": ["core", "core", "node", "core"],
                          "P": [15, 16, 30, 16]})
    table = pd.DataFrame({"operation": ["bcast", "reduce", "bcast"], "target": ["avg", "avg", "max"],
                          "parameter": FULL, "fitted": [True, True, False], "value": [1.5, 1.2, 1.5],
                          "low": [1.3, 0.98, 1.5]})
    assert slowed_operations(table, "avg") == {"bcast"} and slowed_operations(table, "max") == set()
    marked = co.mark_full(cells, machine, slowed_operations(table, "avg"))
    assert marked[co.FULL].tolist() == [False, True, False, False]
    assert co.mark_full(cells.assign(P=[15, 16, 31, 16]), machine, {"bcast", "reduce"})[co.FULL].tolist() == [
        False, True, True, True]


def test_against_compares_the_directions_of_two_forecasts_per_curve():
    """Size 1: over P = 32, 64 the trend rises (45 -> 90) and the model falls (5 -> 4): against.
    Size 2: both rise: not. Size 4: one cell, no direction: not. The P = 128 cell of size 1 is not
    among ``cells``: not, and not counted in its curve's slopes."""
    test = frame([("bcast", 1, "core", P, s, np.nan) for s, P in ((1, 32), (1, 64), (1, 128), (2, 32), (2, 64),
                                                                   (4, 64))])
    trend = np.array([45.0, 90.0, 1.0, 45.0, 90.0, 3.0])
    model = np.array([5.0, 4.0, 100.0, 5.0, 7.0, 3.0])
    cells = np.array([True, True, False, True, True, True])
    assert co.against(test, trend, model, cells).tolist() == [True, True, False, False, False, False]


def test_hybrid_beyond_the_measured_P_keeps_the_models_direction_against_the_trend():
    """Residuals log 2 at P = 2 and log 4 at P = 8; beyond, the model falls (5 -> 4) while the trend
    rises (45 -> 90): the carried residual alone, 5 x 4 and 4 x 4. With a model that rises too
    (5 -> 7), the geometric means sqrt(20 x 45) = 30 and sqrt(28 x 90)."""
    train = frame([("bcast", 1, "core", 2, 1, 2.0), ("bcast", 1, "core", 8, 1, 8.0)])
    test = frame([("bcast", 1, "core", P, 1, np.nan) for P in (32, 64)])
    trend = np.array([45.0, 90.0])
    got = co.hybrid(train, np.array([1.0, 2.0]), test, np.array([5.0, 4.0]), 1, trend)
    assert got == pytest.approx([20.0, 16.0])
    got = co.hybrid(train, np.array([1.0, 2.0]), test, np.array([5.0, 7.0]), 1, trend)
    assert got == pytest.approx([30.0, np.sqrt(28 * 90)])


def test_hybrid_where_nothing_was_measured_averages_with_the_unfitted_forecast():
    train = frame([("bcast", 1, "core", 4, 1, 2.0)])
    test = frame([("bcast", 2, "node", 4, 1, np.nan), ("bcast", 2, "core", 4, 1, np.nan),
                  ("bcast", 1, "core", 4, 2, np.nan)])
    # every cell takes the only residual, log 2: 10 x 2 = 20, 3 x 2 = 6, 7 x 2 = 14. The unfitted
    # forecast counts where no algorithm was measured at (operation, mapping): map-by node
    # (sqrt(20 x 5) = 10), not algorithm 2 beside algorithm 1, nor size 2 of the measured mapping
    got = co.hybrid(train, np.array([1.0]), test, np.array([10.0, 3.0, 7.0]), 1,
                    unfitted=np.array([5.0, 1000.0, 56.0]))
    assert got == pytest.approx([10.0, 6.0, 14.0])


def test_hybrid_of_an_unseen_algorithm_takes_the_other_algorithms_residuals():
    train = frame([("bcast", 1, "core", 4, 1, 2.0), ("bcast", 1, "core", 64, 1, 2.0),
                   ("reduce", 2, "core", 4, 1, 1000.0)])
    test = frame([("bcast", 2, "core", 4, 1, np.nan)])
    # the reduce cell of the same algorithm id is 100 sqrt 2 away (another operation): the two
    # bcast cells of the other algorithm are nearer
    got = co.hybrid(train, np.array([1.0, 4.0, 1.0]), test, np.array([10.0]), 2)
    # residuals log 2 (distance 10 sqrt 2) and log 0.5 (distance sqrt(200 + 16)): weights 1/d
    d = np.array([np.sqrt(200.0), np.sqrt(216.0)])
    want = 10.0 * np.exp((np.log(2.0) / d[0] + np.log(0.5) / d[1]) / (1 / d).sum())
    assert got[0] == pytest.approx(want)


def test_default_twins_are_the_train_cells_priced_as_the_same_run():
    train = frame([("bcast", 0, "core", 8, 4, 2.0), ("bcast", 1, "core", 8, 4, 8.0), ("bcast", 6, "core", 8, 4, 5.0),
                   ("bcast", 0, "core", 16, 4, 3.0), ("bcast", 0, "node", 8, 4, 7.0)])
    test = frame([("bcast", 5, "core", 8, 4, np.nan), ("bcast", 5, "core", 16, 4, np.nan),
                  ("bcast", 5, "core", 32, 4, np.nan)])
    # at P = 8 the default and algorithm 1 are priced 1.5 like the test cell (algorithm 6: 1.6, another
    # run; the node cell: another mapping): the geometric mean of 2 and 8; at P = 16 the default is
    # priced 2.0 against 2.5; nothing at P = 32
    got = co.default_twins(train, np.array([1.5, 1.5 * (1 + 1e-12), 1.6, 2.0, 1.5]), test, np.array([1.5, 2.5, 4.0]))
    assert got[0] == pytest.approx(4.0) and np.isnan(got[1:]).all()


def test_default_twins_interpolate_between_two_twin_P_of_one_provider():
    # the default is a twin at P = 4 (measured 2 where priced 1: residual log 2) and P = 16 (3 priced
    # 3: log 1): at P = 8, halfway in log2 P, the residual is log sqrt 2. The default measured at
    # P = 32 runs another tree (priced 5 against 4): nothing between 16 and 32, nor beyond 32
    train = frame([("bcast", 0, "core", 4, 1, 2.0), ("bcast", 0, "core", 16, 1, 3.0),
                   ("bcast", 0, "core", 32, 1, 9.0)])
    test = frame([("bcast", 5, "core", P, 1, np.nan) for P in (4, 8, 16, 24, 32, 64)])
    got = co.default_twins(train, np.array([1.0, 3.0, 5.0]), test, np.array([1.0, 10.0, 3.0, 3.5, 4.0, 6.0]))
    assert got[0] == pytest.approx(2.0) and got[2] == pytest.approx(3.0)
    assert got[1] == pytest.approx(10.0 * np.sqrt(2.0))
    assert np.isnan(got[3:]).all()


def test_hybrid_of_an_unseen_algorithm_takes_a_twins_measurement():
    train = frame([("bcast", 0, "core", 8, 4, 2.0), ("bcast", 0, "core", 16, 4, 6.0),
                   ("bcast", 5, "node", 8, 4, 9.0)])
    test = frame([("bcast", 5, "core", 8, 4, np.nan), ("bcast", 5, "core", 16, 4, np.nan),
                  ("bcast", 5, "node", 8, 4, np.nan), ("bcast", 5, "node", 16, 4, np.nan)])
    # core: no train cell of algorithm 5. At P = 8 the default is priced as the same run (1.0): its
    # measurement. At P = 16 it is not (3.0 against 4.0): the nearest residuals, the default's at
    # P = 16 (log 2, distance sqrt(200)) and P = 8 (log 2, sqrt(201)), tied with algorithm 5's under
    # map-by node (log 3, sqrt(201)). Node: algorithm 5 has a train cell, whose residual (log 3) is
    # carried along its curve, also at P = 8 where the twin would be the measurement itself
    got = co.hybrid(train, np.array([1.0, 3.0, 3.0]), test, np.array([1.0, 4.0, 3.0, 3.0]), 2)
    w = 1 / np.sqrt([200.0, 201.0, 201.0])
    assert got[0] == pytest.approx(2.0)
    assert got[1] == pytest.approx(4.0 * np.exp((w * np.log([2.0, 2.0, 3.0])).sum() / w.sum()))
    assert got[2] == pytest.approx(9.0) and got[3] == pytest.approx(9.0)


def test_twin_answers_are_the_cells_the_hybrid_prices_by_a_twins_measurement():
    """As above: at P = 8 under map-by core the hybrid takes the default's measurement (a twin); at
    P = 16 the default is priced as another run; under map-by node algorithm 5 has its own train
    cell, whose curve the twin does not price."""
    train = frame([("bcast", 0, "core", 8, 4, 2.0), ("bcast", 0, "core", 16, 4, 6.0),
                   ("bcast", 5, "node", 8, 4, 9.0)])
    test = frame([("bcast", 5, "core", 8, 4, np.nan), ("bcast", 5, "core", 16, 4, np.nan),
                  ("bcast", 5, "node", 8, 4, np.nan), ("bcast", 5, "node", 16, 4, np.nan)])
    got = np.isfinite(co.twin_answers(train, np.array([1.0, 3.0, 3.0]), test, np.array([1.0, 4.0, 3.0, 3.0])))
    assert got.tolist() == [True, False, False, False]
    assert not np.isfinite(co.twin_answers(train, np.array([1.0, 3.0, 3.0]), test.iloc[:0], np.zeros(0))).any()


def pairs():
    """Map-by core, P = 4: algorithms 1 and 2 priced 1 with residual +0.4, 3 and 4 priced e^2 with
    -0.4 (runs priced alike err alike); map-by node: 1 and 2 priced 1, residuals +0.5 and -0.5;
    map-by socket: algorithm 1 alone."""
    train = frame([("bcast", a, "core", 4, 1, 1.0) for a in (1, 2, 3, 4)]
                  + [("bcast", a, "node", 4, 1, 1.0) for a in (1, 2)] + [("bcast", 1, "socket", 4, 1, 1.0)])
    r = np.array([0.4, 0.4, -0.4, -0.4, 0.5, -0.5, 0.1])
    priced = np.array([1.0, 1.0, np.e ** 2, np.e ** 2, 1.0, 1.0, 1.0])
    return train, r, priced


def test_transfer_leaves_out_one_training_algorithm_at_a_time():
    train, r, priced = pairs()
    got = co.transfer(train, r, priced, 3, "bcast")
    # map-by core, algorithm 1 left out: its three neighbours (sqrt(200) away) weigh 1 (algorithm 2,
    # priced alike) and exp(-2 / scale) (3 and 4): guess g = (0.4 - 0.8 e) / (1 + 2 e), e = exp(-2 /
    # scale), and -g for 3 and 4. Slope 0.4 / g, clipped to 1 (g <= 0.4), at every finite scale; at
    # scale inf, g = -0.4 / 3: a negative slope, clipped to 0. Map-by node: each algorithm's guess is
    # the other's residual: slope -1, clipped to 0, whatever the scale. The mean's least absolute error:
    # |0.4 - g| on map-by core, least at the smallest scale, 0.25. The weighted median does better:
    # algorithm 1's neighbours weigh 1 at +0.4 against 2 e at -0.4, so while e < 1/2 (every finite
    # scale) the guess is +0.4 itself, no error at all; the first of those scales, 0.25
    assert got.centre == "median"
    assert got.scale == 0.25
    assert got.slopes[("bcast", "core")] == 1.0
    assert got.slopes[("bcast", "node")] == 0.0
    assert ("bcast", "socket") not in got.slopes.index  # one algorithm: nothing to leave out


def test_an_unseen_algorithm_borrows_the_residuals_of_runs_priced_alike():
    train, r, priced = pairs()
    test = frame([("bcast", 5, "core", 4, 1, np.nan), ("bcast", 5, "node", 4, 1, np.nan),
                  ("bcast", 1, "core", 4, 2, np.nan)])
    assert list(co.beside_measured(train, test)) == [True, True, False]  # another size of algorithm 1: no
    got = co.unseen_algorithm_residual(train, r, priced, test, np.array([1.0, 1.0, 1.0]), np.array([0, 1]), 3)
    # map-by core: algorithm 5 priced 1 like 1 and 2 (weight 1 each) against 3 and 4 (e^-8 each, scale
    # 0.25): the weighted median, +0.4, share 1; map-by node: share 0
    assert got == pytest.approx([0.4, 0.0])
    # through the hybrid (k = 3), algorithm 5 priced 1.1 (at 1 its runs would be 1's and 2's twins,
    # whose measurements it would take): weights 1.1^-4 for 1 and 2 outweigh e^-8 1.1^4 for 3 and 4
    measured = train.assign(measured=priced * np.exp(r))
    out = co.hybrid(measured, priced, test.iloc[:1], np.array([1.1]), 3)
    assert out[0] == pytest.approx(1.1 * np.exp(0.4))


def test_transfer_takes_the_mean_where_it_guesses_the_left_out_algorithms_better():
    """Four algorithms priced alike with residuals 0.2, 0.4, 0.6, 0.8. Left out in turn, the others'
    mean guesses 0.6, 0.533, 0.467, 0.4 and their median 0.6, 0.6, 0.4, 0.4. Through the origin the
    mean's slope is 0.9333 / 1.0222 = 0.913, absolute errors 0.348, 0.087, 0.174, 0.435 (sum 1.044);
    the median's 0.92 / 1.04 = 0.885, errors 0.331, 0.131, 0.246, 0.446 (1.154): the mean, at every
    scale alike (one price), the first, 0.25."""
    train = frame([("bcast", a, "core", 4, 1, 1.0) for a in (1, 2, 3, 4)])
    r = np.array([0.2, 0.4, 0.6, 0.8])
    got = co.transfer(train, r, np.ones(4), 3, "bcast")
    assert got.centre == "mean" and got.scale == 0.25
    assert got.slopes[("bcast", "core")] == pytest.approx(0.9333333 / 1.0222222, rel=1e-6)
    test = frame([("bcast", 5, "core", 4, 1, np.nan)])
    # algorithm 5 borrows the slope times the mean of all four, 0.5
    assert co.unseen_algorithm_residual(train, r, np.ones(4), test, np.ones(1), np.array([0]), 3) == pytest.approx(
        [0.5 * 0.9333333 / 1.0222222], rel=1e-6)


def test_weighted_median_of_each_row():
    values = np.array([[1.0, 2.0, 3.0], [5.0, 1.0, 3.0], [1.0, 2.0, 3.0], [0.0, 10.0, 0.0], [3.0, 1.0, 2.0]])
    weights = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [0.0, 1.0, 0.0], [5.0, 1.0, 1.0]])
    # the middle of three; half the weight reached exactly at 1 (then the next value with weight, 5:
    # their mean 3, the zero-weight 3 skipped); exactly at 2 (mean with 3); one value with weight; 3
    # holds more than half
    assert co.weighted_median(values, weights) == pytest.approx([2.0, 3.0, 2.5, 10.0, 3.0])


def test_weighted_median_is_numpys_weighted_quantile_bit_for_bit():
    """The one-pass median equals numpy's weighted inverted_cdf quantile from below and above, ties,
    zero weights, exact halves and a row with a NaN value included."""
    rng = np.random.default_rng(7)
    values = np.round(rng.normal(size=(300, 9)) * 2) / 2  # many ties
    weights = np.round(rng.random((300, 9)) * 3)  # zero weights and exact halves
    weights[:, 0] += 1.0
    values[5, 3] = np.nan
    lower = np.quantile(values, 0.5, axis=1, weights=weights, method="inverted_cdf")
    upper = -np.quantile(-values, 0.5, axis=1, weights=weights, method="inverted_cdf")
    got = co.weighted_median(values, weights)
    assert np.array_equal(got, 0.5 * (lower + upper), equal_nan=True) and np.isnan(got[5])


def test_hybrid_leaves_out_what_the_model_could_not_price():
    train = frame([("bcast", 1, "core", 2, 1, 2.0), ("bcast", 1, "core", 4, 1, 8.0)])
    test = frame([("bcast", 1, "core", 2, 1, np.nan), ("bcast", 1, "core", 4, 1, np.nan)])
    got = co.hybrid(train, np.array([np.nan, 2.0]), test, np.array([3.0, np.nan]), 1)
    assert got[0] == pytest.approx(3.0 * 4.0) and np.isnan(got[1])  # the only finite residual is log 4
    assert np.array_equal(co.hybrid(train, np.array([np.nan, np.nan]), test, np.array([3.0, 1.0]), 1),
                          np.array([3.0, 1.0]))


def test_every_neighbour_tied_with_the_kth_counts():
    # an unseen algorithm: the three other algorithms at the same (P, size) are all 10 sqrt 2 away;
    # with k = 2 all three count, whatever their order
    train = frame([("bcast", a, "core", 4, 1, m) for a, m in ((1, 1.0), (2, 2.0), (3, 4.0))])
    test = frame([("bcast", 5, "core", 4, 1, np.nan)])
    want = np.exp(np.mean(np.log([1.0, 2.0, 4.0])))  # equal weights: the geometric mean, 2
    assert co.nearest_neighbour(train, test, 2)[0] == pytest.approx(want)
    assert co.nearest_neighbour(train.iloc[::-1], test, 2)[0] == pytest.approx(want)


def test_knn_equals_a_brute_force_search_over_the_one_hot_features():
    """The per-level search (train groups asked in increasing one-hot distance, stopping when the
    next level cannot be nearer than the k-th) gives the brute-force answer over :func:`features`,
    on cells where own-group, other-algorithm and other-mapping neighbours mix: few train cells per
    group, far apart in size."""
    rng = np.random.default_rng(3)
    rows = [(op, alg, m, int(2 ** rng.integers(1, 9)), int(2 ** rng.integers(0, 21)), 0.0)
            for op in ("bcast", "reduce") for alg in (1, 2, 3) for m in ("core", "node") for _ in range(4)]
    data = frame(rows).drop_duplicates(["operation", "algorithm", "mapping", "P", "size"]).reset_index(drop=True)
    values = rng.normal(size=len(data))
    test = frame([(op, alg, m, int(2 ** rng.integers(1, 9)), int(2 ** rng.integers(0, 21)), 0.0)
                  for op in ("bcast", "reduce") for alg in (1, 4) for m in ("core", "socket") for _ in range(5)])
    ops, algs, maps = ["bcast", "reduce"], [1, 2, 3, 4], ["core", "node", "socket"]
    xa, xb = co.features(data, ops, algs, maps), co.features(test, ops, algs, maps)
    for k in (1, 3, 5):
        got = co.knn_log(data, values, test, k)
        dist = np.sqrt(((xb[:, None, :] - xa[None, :, :]) ** 2).sum(axis=2))
        for i in range(len(test)):
            d = dist[i]
            take = d <= np.sort(d)[k - 1] * (1 + 1e-9)
            w = np.where(take & (d == 0), 1.0, 0.0) if (take & (d == 0)).any() else np.where(take, 1 / d, 0.0)
            assert got[i] == pytest.approx((w * values).sum() / w.sum(), rel=1e-12), (k, i)


def test_the_neighbour_search_is_asked_once_per_cells():
    """A validation fold asks for the same neighbours twice (baseline, hybrid): the second answer is
    the first (the same object); cells at another P are a new question."""
    train = frame([("bcast", a, "core", P, 1, 1.0) for a in (1, 2) for P in (2, 4, 8)])
    test = frame([("bcast", 5, "core", 4, 1, np.nan)])
    first = co.nearest_cells(train, test, 2)
    assert co.nearest_cells(train.copy(), test.copy(), 2) is first
    moved = train.assign(P=train["P"] * 2)
    assert co.nearest_cells(moved, test, 2) is not first
    # the values do not enter the search: another set of values, the same neighbours, its own mean
    assert co.knn_log(train, np.full(len(train), 3.0), test, 2)[0] == pytest.approx(3.0)


def test_hybrid_predictions_take_the_residuals_where_another_grid_priced_the_measured_cells():
    """A what-if grid at P = 2 and 16 prices neither measured cell (P = 4, 8); the measured machine's
    grid does (calibrated 1 and 2, measured 2 and 8: residuals log 2 and log 4). With it, P = 2 carries
    log 2 (below the measured P) and P = 16 log 4; without it no measured cell lies on the grid."""
    key = ["operation", "algorithm", "mapping", "P", "size"]
    row = lambda P, v: {"mode": "calibrated", "operation": "bcast", "algorithm": 1, "mapping": "core", "P": P,  # noqa: E731
                        "size": 1, "target": "avg", "predicted": v}
    what_if = pd.DataFrame([row(2, 3.0), row(16, 5.0)])
    measured_grid = pd.DataFrame([row(4, 1.0), row(8, 2.0)])
    measured = {"avg": frame([("bcast", 1, "core", 4, 1, 2.0), ("bcast", 1, "core", 8, 1, 8.0)])}
    got = co.hybrid_predictions(what_if, measured, 1, at_measured=measured_grid)
    assert got[key].equals(what_if[key]) and set(got["mode"]) == {"hybrid"}
    assert got["predicted"].tolist() == pytest.approx([3 * 2, 5 * 4])
    assert co.hybrid_predictions(what_if, measured, 1)["predicted"].tolist() == [3.0, 5.0]


def test_a_what_if_grid_takes_the_measured_grids_word_on_the_trends_direction():
    """Measured at P = 4 and 8 (residuals log 2, log 4); the measured machine's grid goes on to P = 16
    and 32, where the model falls (3 -> 2.5) and the trend rises (30 -> 60): against. The what-if
    grid holds P = 16 and 64 (no trend there): alone its one cell beyond with a trend shows no
    direction, but it takes the measured grid's word, so P = 16 carries log 4 alone (5 x 4), as on
    the measured grid (3 x 4); with a trend that falls too (30 -> 20) both average with it."""
    row = lambda P, v: {"mode": "calibrated", "operation": "bcast", "algorithm": 1, "mapping": "core", "P": P,  # noqa: E731
                        "size": 1, "target": "avg", "predicted": v}
    measured = {"avg": frame([("bcast", 1, "core", 4, 1, 2.0), ("bcast", 1, "core", 8, 1, 8.0)])}
    measured_grid = pd.DataFrame([row(4, 1.0), row(8, 2.0), row(16, 3.0), row(32, 2.5)])
    what_if = pd.DataFrame([row(16, 5.0), row(64, 7.0)])
    for rising, want_grid, want_what_if in ((True, [2.0, 8.0, 12.0, 10.0], [20.0, 28.0]),
                                            (False, [2.0, 8.0, np.sqrt(12 * 30), np.sqrt(10 * 20)],
                                             [np.sqrt(20 * 30), 28.0])):
        trend = pd.DataFrame([{**row(P, v), "mode": "segmented"}
                              for P, v in ((4, 10.0), (8, 20.0), (16, 30.0), (32, 60.0 if rising else 20.0))])
        grid = co.hybrid_predictions(measured_grid, measured, 1, trend)
        assert grid["predicted"].tolist() == pytest.approx(want_grid)
        got = co.hybrid_predictions(what_if, measured, 1, trend, at_measured=measured_grid)
        assert got["predicted"].tolist() == pytest.approx(want_what_if)


def test_a_what_if_grid_takes_the_twins_found_on_the_measured_grid():
    """The default measured at P = 4 and 8 is priced as algorithm 5's run there (1 and 2; measured 2
    and 8). On the measured machine's grid (P = 4, 6, 8) algorithm 5, which nobody forced, takes the
    default's measurements at 4 and 8 and between them, at P = 6 (log2 6 - 2 = 0.585 of the way),
    the residual log 2 + 0.585 log 2. A what-if grid at P = 6 and 16 holds neither twin: alone it
    finds no measured cell at all, but it takes the measured grid's answer at P = 6; at P = 16 no
    twin answers, and the nearest residual does (the default's at P = 8, log 4: 5 x 4)."""
    row = lambda alg, P, v: {"mode": "calibrated", "operation": "bcast", "algorithm": alg, "mapping": "core",  # noqa: E731
                             "P": P, "size": 1, "target": "avg", "predicted": v}
    measured = {"avg": frame([("bcast", 0, "core", 4, 1, 2.0), ("bcast", 0, "core", 8, 1, 8.0)])}
    measured_grid = pd.DataFrame([row(0, 4, 1.0), row(0, 8, 2.0), row(5, 4, 1.0), row(5, 6, 1.5), row(5, 8, 2.0)])
    x = np.log2(6.0) - 2.0
    at6 = 1.5 * np.exp((1 - x) * np.log(2.0) + x * np.log(4.0))
    grid = co.hybrid_predictions(measured_grid, measured, 1)
    assert grid["predicted"].tolist()[2:] == pytest.approx([2.0, at6, 8.0])
    what_if = pd.DataFrame([row(5, 6, 1.5), row(5, 16, 5.0)])
    got = co.hybrid_predictions(what_if, measured, 1, at_measured=measured_grid)["predicted"].to_numpy()
    assert got[0] == pytest.approx(at6)
    assert got[1] == pytest.approx(20.0)
    assert co.hybrid_predictions(what_if, measured, 1)["predicted"].tolist() == [1.5, 5.0]


def test_a_what_if_grid_weighs_an_unmeasured_algorithms_neighbours_with_the_measured_grids_prices():
    """Algorithms 1 and 2 measured at P = 4 and 8; algorithm 5, which nobody ran, priced like 1 at P = 8
    and unlike 2. A what-if grid holding algorithm 5 at P = 16 only has no price of it at P = 8, where
    its nearest measured cells are: it reads the measured machine's grid, and answers as that grid
    does at P = 16; without that price (a measured grid that lacks P = 8 for algorithm 5) the
    neighbours weigh alike and the answer differs."""
    row = lambda alg, P, v: {"mode": "calibrated", "operation": "bcast", "algorithm": alg, "mapping": "core",  # noqa: E731
                             "P": P, "size": 1, "target": "avg", "predicted": v}
    r = np.exp([0.2, 0.6, 0.1, 0.3])  # residuals that grow with P, algorithm 1's the more
    measured = {"avg": frame([("bcast", 1, "core", 4, 1, r[0]), ("bcast", 1, "core", 8, 1, 2 * r[1]),
                              ("bcast", 2, "core", 4, 1, 2 * r[2]), ("bcast", 2, "core", 8, 1, 4 * r[3])])}
    shared = [row(1, 4, 1.0), row(1, 8, 2.0), row(2, 4, 2.0), row(2, 8, 4.0), row(5, 4, 1.0), row(5, 16, 4.0)]
    measured_grid = pd.DataFrame(shared + [row(5, 8, 2.0)])
    whole = co.hybrid_predictions(measured_grid, measured, 2)
    want = whole.loc[(whole["algorithm"] == 5) & (whole["P"] == 16), "predicted"].item()
    what_if = pd.DataFrame([row(5, 16, 4.0)])
    got = co.hybrid_predictions(what_if, measured, 2, at_measured=measured_grid)["predicted"].item()
    assert got == pytest.approx(want)
    lacking = co.hybrid_predictions(what_if, measured, 2, at_measured=pd.DataFrame(shared))["predicted"].item()
    assert lacking != pytest.approx(want)


def test_hybrid_prices_a_foreign_algorithm_by_the_unfitted_forecast_but_keeps_a_twin():
    train = frame([("bcast", 1, "core", 4, 1, 2.0), ("bcast", 1, "core", 8, 1, 2.0)])
    test = frame([("bcast", 8, "core", 4, 1, np.nan), ("bcast", 8, "core", 8, 1, np.nan),
                  ("bcast", 8, "core", 16, 1, np.nan)])
    # bcast 8 foreign to the measured linear bcast: the openmpi mode's 5 and 6, nothing borrowed (the
    # residual log 2 would double the model's 10); at P = 8 the model prices the measured linear
    # cell as the same run (a twin: its measurement, 2, answers); no unfitted price at P = 16: the
    # hybrid's price as if the algorithm were not foreign
    args = (train, np.array([1.0, 10.0]), test, np.array([10.0, 10.0, 30.0]), 2)
    unfitted = np.array([5.0, 6.0, np.nan])
    got = co.hybrid(*args, unfitted=unfitted, foreign=np.array([True, True, True]))
    plain = co.hybrid(*args, unfitted=unfitted)
    assert got == pytest.approx([5.0, 2.0, plain[2]]) and plain[0] != pytest.approx(5.0)
