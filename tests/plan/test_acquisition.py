"""The next launches by expected regret and error removed (collat.plan.acquisition)."""

import math

import numpy as np
import pandas as pd
import pytest

from collat.plan import acquisition
from collat.plan.acquisition import Uncertainty


def phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_curve_sd_grows_per_octave_to_the_nearest_measured_P_up_to_the_cap():
    u = Uncertainty(0.03, 0.1, 0.3)
    assert acquisition.curve_sd(np.array([2, 4, 16]), np.array([4]), u) == pytest.approx([0.13, 0.03, 0.23])
    assert acquisition.curve_sd(np.array([2, 4, 1024]), np.array([4]), u)[2] == pytest.approx(0.3)  # 8 octaves: capped
    assert acquisition.curve_sd(np.array([2, 4]), np.array([]), u) == pytest.approx([0.3, 0.3])  # nothing measured


def test_cell_value_is_an_option_on_the_choice_plus_the_expected_error():
    err = math.sqrt(2 / math.pi)
    # predicted best (1 us) against a runner-up at 1 us, log sd 1: E[(X - 1)+] = e^0.5 Phi(1) - Phi(0)
    call = math.exp(0.5) * phi(1) - phi(0)
    assert acquisition.cell_value(np.log(1.0), 1.0, 1.0) == pytest.approx(call + err)
    # predicted at 2 us against a best of 1 us: E[(1 - X)+] = Phi(-d2) - e^(ln 2 + 0.5) Phi(-d1)
    d1 = math.log(2) + 1
    put = phi(-(d1 - 1)) - math.exp(math.log(2) + 0.5) * phi(-d1)
    assert acquisition.cell_value(np.log(2.0), 1.0, 1.0) == pytest.approx(put + err)
    # Monte Carlo of the same put, to 1 %
    x = np.exp(np.log(2.0) + np.random.default_rng(0).standard_normal(2_000_000))
    assert np.mean(np.maximum(1.0 - x, 0)) == pytest.approx(put, rel=0.01)
    # no other algorithm: the error only; a measured cell (sd 0): nothing
    assert acquisition.cell_value(0.0, np.nan, 0.5) == pytest.approx(0.5 * err)
    assert acquisition.cell_value(0.0, 2.0, 0.0) == 0.0
    # the rival as uncertain: the option on the ratio has the sd of both (sqrt(0.6^2 + 0.8^2) = 1)
    assert acquisition.cell_value(np.log(2.0), 1.0, 0.6, 0.8) == pytest.approx(put + 0.6 * err)


def test_strikes_are_the_best_of_the_other_algorithms():
    grid = pd.DataFrame({"operation": "bcast", "mapping": "core", "P": [4, 4, 4, 8], "size": 1,
                         "algorithm": [1, 2, 5, 1], "predicted": [2.0, 3.0, 1.0, 7.0]})
    s, rival = acquisition.strikes(grid)
    assert s[:3] == pytest.approx([1.0, 1.0, 2.0]) and np.isnan(s[3])  # the best's strike: the runner-up
    assert list(rival) == [5, 5, 1, -1]


def one_curve(P, sizes=(1, 1024)):
    return pd.DataFrame([{"operation": "bcast", "algorithm": 6, "mapping": "core", "P": p, "size": s,
                          "predicted": 10.0} for p in P for s in sizes])


def test_next_launches_take_the_largest_drop_of_error_then_update_the_curve():
    # one curve, no rival (the error part only); sd = octaves to the nearest measured P (floor 0, cap 10)
    grid = one_curve([2, 4, 8, 16, 32])
    measured = pd.DataFrame({"operation": ["bcast"], "algorithm": [6], "mapping": ["core"], "P": [2]})
    u = Uncertainty(0.0, 1.0, 10.0)
    picks = acquisition.next_launches(grid, measured, u, budget=2)
    # sds before [0, 1, 2, 3, 4]: measuring 16 leaves [0, 1, 1, 0, 1] (7 octaves less), 8 or 32 only 6;
    # then 4, 8 and 32 each remove 1: the first, 4
    assert list(picks["P"]) == [16, 4]
    assert picks["value"].iloc[0] == pytest.approx(7 * 2 * math.sqrt(2 / math.pi))  # 2 sizes
    assert picks["choice"].iloc[0] == pytest.approx(0.0)


def test_next_launches_within_a_cost_budget_and_never_a_measured_launch():
    grid = one_curve([2, 4, 8, 16, 32])
    measured = pd.DataFrame({"operation": ["bcast"], "algorithm": [6], "mapping": ["core"], "P": [2]})
    cost = pd.Series([1.0, 1.0, 1.0, 1.0, 100.0],
                     index=pd.MultiIndex.from_tuples([("bcast", 6, "core", p) for p in (2, 4, 8, 16, 32)],
                                                     names=["operation", "algorithm", "mapping", "P"]))
    picks = acquisition.next_launches(grid, measured, Uncertainty(0.0, 1.0, 10.0), budget=3.0, cost=cost)
    assert 32 not in set(picks["P"]) and 2 not in set(picks["P"]) and picks["cost"].sum() <= 3.0
    assert len(picks) == 3


def test_a_close_race_is_worth_more_than_a_settled_one():
    # two algorithms: at P = 16 they are predicted equal (a race), at P = 4 one is 10x slower
    rows = []
    for p, (a, b) in {4: (100.0, 10.0), 16: (10.0, 10.0)}.items():
        rows += [{"operation": "bcast", "algorithm": 1, "mapping": "core", "P": p, "size": 1, "predicted": a},
                 {"operation": "bcast", "algorithm": 6, "mapping": "core", "P": p, "size": 1, "predicted": b}]
    measured = pd.DataFrame({"operation": "bcast", "algorithm": [6, 6], "mapping": "core", "P": [4, 16]})
    picks = acquisition.next_launches(pd.DataFrame(rows), measured, Uncertainty(0.0, 1.0, 0.5), budget=2)
    assert list(picks["P"]) == [16, 4] and picks["choice"].iloc[0] > picks["choice"].iloc[1]


def test_estimate_uncertainty_from_interpolating_measured_P():
    # log latency = log2 P on every curve but one bent point: an interior P off the line by 0.5 (log)
    P = np.array([2, 4, 8, 16, 32, 64])
    rows = []
    for alg in range(30):
        y = np.log2(P) * 1.0
        rows += [{"operation": "bcast", "algorithm": alg, "mapping": "core", "P": p, "size": 1,
                  "measured": np.exp(v + (0.5 if (alg == 0 and p == 8) else 0.0))} for p, v in zip(P, y)]
    cells = pd.DataFrame(rows)
    prior = Uncertainty(0.0, 9.0, 9.0)
    u = acquisition.estimate_uncertainty(cells, prior, physics=cells["measured"].to_numpy() * np.e ** 0.2)
    assert u.per_octave == pytest.approx(0.0)  # straight in log-log: interpolation is exact (the median)
    assert u.cap == pytest.approx(0.2)  # the physics 0.2 off everywhere
    assert acquisition.estimate_uncertainty(cells.head(6), prior) == prior  # too few points: the prior


def test_the_models_error_on_held_out_algorithms_caps_its_operations_curves():
    P = np.array([2, 4, 8, 16, 32, 64])
    cells = pd.DataFrame([{"operation": op, "algorithm": alg, "mapping": "core", "P": p, "size": 1, "measured": float(p)}
                          for op in ("bcast", "reduce") for alg in range(5) for p in P])
    prior = Uncertainty(0.05, 0.1, 9.0)
    u = acquisition.estimate_uncertainty(cells, prior, physics=cells["measured"].to_numpy() * np.e ** 0.2,
                                         held_out={"bcast": 0.3, "reduce": 0.01, "allreduce": float("nan")})
    assert u.cap == pytest.approx(0.2)  # in sample: the physics 0.2 off
    assert dict(u.caps) == pytest.approx({"bcast": 0.3, "reduce": 0.05})  # never below the floor; NaN ignored
    bcast, reduce = u.of(("bcast", 9, "core")), u.of(("reduce", 9, "core"))
    assert (bcast.cap, reduce.cap, bcast.per_octave) == pytest.approx((0.3, 0.05, u.per_octave))
    # a curve nobody measured is at its operation's cap, one measured at P = 4 grows to it
    assert acquisition.curve_sd(np.array([2, 64]), np.array([]), bcast) == pytest.approx([0.3, 0.3])
    assert acquisition.curve_sd(np.array([4, 64]), np.array([4]), reduce) == pytest.approx([0.05, 0.05])
    assert Uncertainty(0.05, 0.1, 0.2).of(("bcast", 1, "core")) == Uncertainty(0.05, 0.1, 0.2)  # nothing of its own


def test_a_curve_that_bends_gets_its_own_growth():
    # 30 straight curves, and one (algorithm 0) whose P = 8 sits 0.5 (log) above the line at 12 sizes:
    # interpolating P = 8 from 4 and 16 misses by 0.5 over 1 octave; P = 4 and 16 miss by 0.25 over 1
    P = np.array([2, 4, 8, 16, 32])
    rows = [{"operation": "bcast", "algorithm": a, "mapping": "core", "P": p, "size": s,
             "measured": np.exp(np.log2(p) + (0.5 if (a == 0 and p == 8) else 0.0))}
            for a in range(30) for s in range(12) for p in P]
    u = acquisition.estimate_uncertainty(pd.DataFrame(rows), Uncertainty(0.0, 9.0, 9.0))
    assert u.per_octave == pytest.approx(0.0)
    assert u.of(("bcast", 0, "core")).per_octave == pytest.approx(0.25)  # median of 0.25, 0.5, 0.25 per size
    assert u.of(("bcast", 1, "core")).per_octave == pytest.approx(0.0)
    assert u.of(("reduce", 1, "core")) is u  # a curve with no examples: the global growth


def test_a_jump_at_a_socket_boundary_is_not_growth_along_P():
    # 30 curves, log latency = log P, one (log) higher from the second socket on (P = 10, 14 of
    # 8-core sockets). Interpolating P = 6 from 4 and 10 misses by log2(6/4) / log2(10/4) of the
    # jump over log2(6/4) octaves: 1 / log2(2.5) per octave; P = 10 from 6 and 14 by 1 - log2(10/6) /
    # log2(14/6) over log2(14/10) octaves; P = 4 (from 2 and 6, one socket) exactly
    machine = {"nodes": 1, "sockets_per_node": 2, "cores_per_socket": 8, "cores_per_l3": 4}
    P = np.array([2, 4, 6, 10, 14])
    rows = [{"operation": "bcast", "algorithm": a, "mapping": "core", "P": p, "size": 1,
             "measured": float(p) * np.exp(1.0 if p > 8 else 0.0)} for a in range(30) for p in P]
    cells, prior = pd.DataFrame(rows), Uncertainty(0.0, 9.0, 9.0)
    at_10 = (1 - np.log2(10 / 6) / np.log2(14 / 6)) / np.log2(14 / 10)
    assert at_10 > 1 / np.log2(2.5)  # the median of 0, 1 / log2(2.5) and at_10
    assert acquisition.estimate_uncertainty(cells, prior).per_octave == pytest.approx(1 / np.log2(2.5))
    # each P between two of its own socket alone: P = 4, exact
    assert acquisition.estimate_uncertainty(cells, prior, machine=machine).per_octave == pytest.approx(0.0)


def test_each_placement_regime_of_a_curve_grows_at_its_own_rate():
    # 30 curves over 12 sizes on one node of two 8-core sockets (map-by core: P <= 8 fill one socket):
    # straight in log-log on the first socket, a zig-zag of 0.1 (log, odd P higher) on the second.
    # An even P of the second socket interpolated from its odd neighbours misses by 0.1, an odd one
    # from its even neighbours by 0.1 too; the nearer neighbour is P + 1, log2((P + 1) / P) octaves
    machine = {"nodes": 1, "sockets_per_node": 2, "cores_per_socket": 8, "cores_per_l3": 4}
    P = np.arange(2, 17)
    rows = [{"operation": "bcast", "algorithm": a, "mapping": "core", "P": p, "size": s,
             "measured": float(p) * np.exp(0.1 if (p > 8 and p % 2) else 0.0)}
            for a in range(30) for s in range(12) for p in P]
    u = acquisition.estimate_uncertainty(pd.DataFrame(rows), Uncertainty(0.0, 9.0, 9.0), machine=machine)
    second = sorted(0.1 / np.log2((p + 1) / p) for p in range(10, 16))  # P = 10 .. 15: both neighbours on it
    rough = (second[2] + second[3]) / 2  # their median
    curve = u.of(("bcast", 0, "core"))
    # P = 3 .. 7 have both neighbours on the first socket, 10 .. 15 on the second
    assert np.ravel(curve.spans) == pytest.approx([3, 7, 0.0, 10, 15, rough])
    assert rough == pytest.approx(0.9006, abs=1e-4)
    # a P takes the growth of the regime it lies in, or of the nearest in log P (8: 7 is nearer than 10)
    assert curve.growth(np.array([4, 8, 9, 12, 64])) == pytest.approx([0.0, 0.0, rough, rough, rough])
    assert u.growth(np.array([4, 12])) == pytest.approx([u.per_octave] * 2)  # no curve: one growth
    assert acquisition.estimate_uncertainty(pd.DataFrame(rows), Uncertainty(0.0, 9.0, 9.0)).regimes == ()


def test_a_launch_goes_where_its_regime_grows():
    # one algorithm (no choice to make: only the error counts), measured at P = 2 and 16; its first
    # socket (P <= 8) is as straight as measured, its second grows 1 per octave: P = 4 and 8 are
    # known to the floor, P = 12 is not (0.415 octave to 16)
    u = Uncertainty(0.0, 0.5, 5.0, regimes=((("bcast", 1, "core"), ((2, 8, 0.0), (9, 16, 1.0))),))
    curve = u.of(("bcast", 1, "core"))
    assert acquisition.curve_sd(np.array([4, 8, 12]), np.array([2, 16]), curve) == pytest.approx(
        [0.0, 0.0, np.log2(16 / 12)])
    grid = pd.DataFrame([{"operation": "bcast", "algorithm": 1, "mapping": "core", "P": p, "size": 1,
                          "predicted": float(p)} for p in (2, 4, 8, 12, 16)])
    measured = pd.DataFrame({"operation": ["bcast"] * 2, "algorithm": [1, 1], "mapping": ["core"] * 2, "P": [2, 16]})
    picks = acquisition.next_launches(grid, measured, u, budget=1)
    assert picks["P"].tolist() == [12]
    assert picks["reason"].iloc[0].endswith("log sd 0.42, growing 1 per octave from the nearest measured P 16")
    # the whole expected error sqrt(2 / pi) sd of P = 12 is removed
    assert picks["value"].iloc[0] == pytest.approx(np.sqrt(2 / np.pi) * np.log2(16 / 12))
