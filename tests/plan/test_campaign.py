"""One round of a campaign: the model's launches, then the first design or the picks (collat.plan.campaign)."""

import numpy as np
import pandas as pd
import pytest

from collat.plan.campaign import PlanOptions, launch_seconds, missing_model_launches, plan_round, uncut_first_design

FOUR = {"name": "f", "nodes": 1, "sockets_per_node": 1, "cores_per_socket": 4, "cores_per_l3": 2}
ALGS = {"bcast": [{"id": 0, "name": "default"}, {"id": 1, "name": "linear"}]}
OPTS = PlanOptions(launches=5, node_hours=None, first_per_curve=3, every_P_below=32, nbft_points=4,
                   overhead_seconds=2.0, prior={"floor": None, "per_octave": 0.1, "cap": 0.3})


def test_a_machine_with_nothing_measured_gets_the_model_launches_and_a_first_design():
    plan, u = plan_round(FOUR, ALGS, ["core"], ["cache", "core"], OPTS)
    assert u is None
    model = plan[plan["kind"] != "collective"]
    assert list(zip(model["kind"], model["channel"], model["P"])) == [
        ("pt2pt", "cache", 2), ("nbft", "cache", 2), ("pt2pt", "core", 2), ("nbft", "core", 2), ("nbft", "core", 3)]
    coll = plan[plan["kind"] == "collective"]
    # the budget (5) over two curves of P 2..4, the ends of every curve first, then P = 3
    assert list(zip(coll["algorithm"], coll["P"])) == [(0, 2), (1, 2), (0, 4), (1, 4), (0, 3)]
    assert (plan["nodes"] == 1).all() and coll["benchmark"].eq("osu_bcast").all()


def test_what_is_measured_is_not_planned_again():
    pt2pt = pd.DataFrame({"channel": ["cache", "core"]})
    nbft = pd.DataFrame({"operation": "bcast", "channel": ["cache", "core", "core"], "P": [2, 2, 3]})
    assert missing_model_launches(FOUR, ["cache", "core"], ["bcast"], OPTS, pt2pt, nbft).empty
    partial = missing_model_launches(FOUR, ["cache", "core"], ["bcast"], OPTS, pt2pt, nbft.head(2))
    assert list(partial["P"]) == [2, 3] and set(partial["channel"]) == {"core"}  # one P is no line


def test_with_predictions_the_picks_spend_the_budget_on_unmeasured_launches():
    rows = [{"operation": "bcast", "algorithm": a, "mapping": "core", "P": P, "size": s,
             "predicted": (1.0 + P) * (1 + a) * (1 + s / 1024)} for a in (0, 1) for P in (2, 3, 4) for s in (1, 1024)]
    pred = pd.DataFrame(rows)
    measured = pred[pred["P"] == 2].rename(columns={"predicted": "measured"})
    plan, u = plan_round(FOUR, ALGS, ["core"], ["cache", "core"], OPTS, pd.DataFrame({"channel": ["cache", "core"]}),
                         pd.DataFrame({"operation": "bcast", "channel": ["cache", "core", "core"], "P": [2, 2, 3]}),
                         measured, pred, None, 0.05)
    assert u.floor == pytest.approx(0.05) and (plan["kind"] == "collective").all()
    assert u.caps == ()  # no error on held-out algorithms given: the in-sample cap
    _, held = plan_round(FOUR, ALGS, ["core"], ["cache", "core"], OPTS, pd.DataFrame({"channel": ["cache", "core"]}),
                         pd.DataFrame({"operation": "bcast", "channel": ["cache", "core", "core"], "P": [2, 2, 3]}),
                         measured, pred, None, 0.05, held_out={"bcast": 0.4})
    assert held.caps == (("bcast", 0.4),)
    assert len(plan) == 4 and not (plan["P"] == 2).any()  # 4 unmeasured launches, fewer than the budget
    # OSU's loops: 1100 x latency up to 8 KiB, plus the overhead
    expected = 2.0 + 1100 * 1e-6 * ((1 + 3) * 1 * (1 + 1 / 1024) + (1 + 3) * 1 * 2)
    got = plan.set_index(["algorithm", "P"]).loc[(0, 3), "seconds"]
    assert got == pytest.approx(expected)


def test_launch_seconds_follow_osu_defaults():
    grid = pd.DataFrame({"operation": "bcast", "algorithm": 1, "mapping": "core", "P": 2, "size": [8192, 16384],
                         "predicted": [10.0, 100.0]})
    s = launch_seconds(grid, 1.0)
    assert s.iloc[0] == pytest.approx(1.0 + 1100 * 10e-6 + 110 * 100e-6)
    assert launch_seconds(grid, 0.0, iterations=5, warmup=0).iloc[0] == pytest.approx(5 * 110e-6)


def test_the_planner_starts_from_the_configs_floor_else_the_datas_else_three_percent():
    from collat.plan.campaign import starting_uncertainty

    cfg = {"floor": None, "per_octave": 0.1, "cap": 0.3}
    assert starting_uncertainty(cfg, 0.05).floor == 0.05
    assert starting_uncertainty(cfg, float("nan")).floor == 0.03  # no cell measured twice: no floor of repeats
    assert starting_uncertainty(cfg, None).floor == 0.03
    assert starting_uncertainty({**cfg, "floor": 0.2}, 0.05).floor == 0.2


def test_a_budget_short_of_the_first_design_measures_every_operation_and_mapping_defaults_first():
    algs = {"bcast": [{"id": i, "name": f"b{i}"} for i in range(4)], "reduce": [{"id": i, "name": f"r{i}"} for i in range(3)]}
    opts = PlanOptions(launches=9, node_hours=None, first_per_curve=2, every_P_below=32, nbft_points=4,
                       overhead_seconds=2.0, prior={"floor": None, "per_octave": 0.1, "cap": 0.3})
    plan, _ = plan_round({**FOUR, "nodes": 2}, algs, ["core", "node"], ["cache", "core", "node"], opts)
    coll = plan[plan["kind"] == "collective"]
    # 7 algorithms x 2 mappings = 14 curves, 2 P each: 9 launches take the first P (2) of the four
    # (operation, mapping) groups in turn, algorithm by algorithm from the default
    assert (coll["P"] == 2).all()
    assert list(zip(coll["operation"], coll["mapping"], coll["algorithm"])) == [
        ("bcast", "core", 0), ("bcast", "node", 0), ("reduce", "core", 0), ("reduce", "node", 0),
        ("bcast", "core", 1), ("bcast", "node", 1), ("reduce", "core", 1), ("reduce", "node", 1),
        ("bcast", "core", 2)]


def test_a_node_hours_budget_that_cannot_cut_a_first_design_says_so():
    hours = PlanOptions(launches=None, node_hours=0.01, first_per_curve=2, every_P_below=32, nbft_points=4,
                        overhead_seconds=2.0, prior={"floor": None, "per_octave": 0.1, "cap": 0.3})
    two = {**FOUR, "nodes": 2}
    plan, u = plan_round(two, ALGS, ["core"], ["cache", "core", "node"], hours)
    coll = plan[plan["kind"] == "collective"]
    assert len(coll) == 4 and list(coll["nodes"]) == [1, 1, 2, 2]  # P = 2 and 8 of two curves: not cut
    assert uncut_first_design(plan, hours, u) == (
        "plan.budget.node_hours does not cut a first design: nothing measured prices its launches yet "
        "(4 collective launches over 6 nodes in all, the largest on 2); plan.budget.launches cuts it")
    assert uncut_first_design(plan, OPTS, u) is None  # a launch budget cuts it
