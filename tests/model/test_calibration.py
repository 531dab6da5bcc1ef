"""The calibrated mode: parametric costs by hand, recovery of known parameters, no test cell in a fit."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from collat.model import calibration as cal
from collat import model as md
from collat.model import validation as va
from collat.model.openmpi_mode import predict_arrays

# 2 nodes x 2 sockets x 2 cores, no shared L3 (as tests/test_model.py): map-by core at P = 8 puts
# ranks 0-1 on one socket (core), 2-3 on the other (socket), 4-7 on the second node (node)
TINY = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 2, "cores_per_l3": 1, "numa_per_socket": 1}
CHANNELS = ["core", "socket", "node"]
OPTIONS = md.ModelOptions.from_config({
    "modes": ["openmpi", "calibrated"], "unpinned_channel": "core", "grid_step": 1, "extra_sizes": [],
    "cleanings": ["robust"],
    "paper": {"hockney_weighting": "none", "nbft_target": "avg", "algorithms": [], "max_P": []},
    "openmpi": {
        "nbft_target": "max",
        "trees": [{"operation": op, "algorithm": a, "tree": t} for op in ("bcast", "reduce")
                  for a, t in ((1, "linear"), (2, "binary"), (3, "pipeline"))],
        "default_rules": {"bcast": [{"P_below": None, "sizes": [[None, 2]]}],
                          "reduce": [{"P_below": None, "sizes": [[None, 2]]}]},
        "contention": {"links": [], "trees": []}, "link_target": None,  # no shared link: the fits by hand
        "eager_limit": 4096, "small_limit": None, "concurrent_rendezvous": False,
    },
})
TRUE = np.array([[0.3, 2e-4, 0.2, 1e-4], [0.8, 3e-4, 0.5, 2e-4], [2.0, 5e-4, 0.9, 4e-4]])
# with the small-message gap (gap_us_small): smaller on core and socket, none on node
TRUE5 = np.c_[TRUE, [0.1, 0.2, 0.9]]
SMALL = replace(OPTIONS, openmpi=replace(OPTIONS.openmpi, small_limit=64.0))


def test_parametric_costs_by_hand():
    c = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], max_receivers=3, overhead=0.25, eager_limit=64,
                             waits=(0.1, 0.7), memory=1e-5, forward=0.15)
    # alpha = L + G m, beta = g + g' m: node at 1000 B: 2 + 0.5 = 2.5 and 0.9 + 0.4 = 1.3
    assert c.alpha[2, 1] == pytest.approx(2.5) and c.beta[2, 1] == pytest.approx(1.3)
    # one message (the p2p curve) = alpha + beta; the table: 0 receivers cost 0, n cost alpha + n beta
    assert c.curves[0](np.array([1000.0]))[0] == pytest.approx(0.3 + 0.2 + 0.2 + 0.1)
    assert c.table_by_receivers[1, :, 1].tolist() == pytest.approx([0, 0.8 + 0.3 + 0.7, 1.1 + 2 * 0.7, 1.1 + 3 * 0.7])
    assert (c.overhead, c.eager_limit, c.wait_eager, c.wait_rendezvous, c.memory_contention, c.forward) == (
        0.25, 64, 0.1, 0.7, 1e-5, 0.15)


def test_the_small_message_gap_prices_sizes_up_to_its_limit():
    c = cal.parametric_costs(TRUE5, CHANNELS, [1, 64, 1000], max_receivers=3, small_limit=64)
    # socket: beta = 0.2 + 2e-4 m up to 64 B, 0.5 + 2e-4 m above; alpha never steps
    assert c.beta[1].tolist() == pytest.approx([0.2 + 2e-4, 0.2 + 64 * 2e-4, 0.5 + 0.2])
    assert c.alpha[1].tolist() == pytest.approx([0.8 + 3e-4, 0.8 + 64 * 3e-4, 0.8 + 0.3])
    # one message on core: L + g_small + (G + g') m at 64 B, L + g + (G + g') m at 1000 B
    assert c.curves[0](np.array([64.0, 1000.0])).tolist() == pytest.approx([0.3 + 0.1 + 64 * 3e-4, 0.3 + 0.2 + 0.3])
    # without a limit the small gap is never used; four columns: one gap for every size
    assert np.array_equal(cal.parametric_costs(TRUE5, CHANNELS, [1, 1000], 3).beta,
                          cal.parametric_costs(TRUE, CHANNELS, [1, 1000], 3).beta)


def test_a_batch_prices_every_parameter_set_as_if_alone():
    # two parameter sets side by side on the size axis: each column keeps its own latency, gap,
    # overhead, memory contention, forward delay and waits (eager below 64 B, rendezvous above)
    sizes, second = [1, 1000], TRUE * np.array([1.5, 0.5, 2.0, 3.0])
    batch = cal.parametric_costs(np.stack([TRUE, second]), CHANNELS, sizes, 7, overhead=[0.25, 0.5],
                                 eager_limit=64, waits=[[0.1, 0.7], [0.3, 0.9]], memory=[1e-5, 4e-5],
                                 forward=[0.15, 0.6])
    alone = [cal.parametric_costs(TRUE, CHANNELS, sizes, 7, 0.25, 64, (0.1, 0.7), 1e-5, 0.15),
             cal.parametric_costs(second, CHANNELS, sizes, 7, 0.5, 64, (0.3, 0.9), 4e-5, 0.6)]
    assert batch.sizes.tolist() == [1, 1000, 1, 1000]
    for operation in ("bcast", "reduce"):
        for algorithm in (1, 2, 3):
            got = predict_arrays(operation, algorithm, "core", [2, 5, 8], batch, OPTIONS, md.Placements(TINY))[0]
            for b, costs in enumerate(alone):
                want = predict_arrays(operation, algorithm, "core", [2, 5, 8], costs, OPTIONS,
                                         md.Placements(TINY))[0]
                for target in ("avg", "max"):
                    assert got[target][:, 2 * b:2 * b + 2] == pytest.approx(want[target], rel=1e-12)


def test_a_problem_prices_its_planned_curves_as_predict_arrays_does():
    """Problem.predict plans each curve once per sizes and prices the plan with every step's costs:
    the same numbers as predict_arrays, for one parameter set and for a batch of two."""
    cells = pd.DataFrame([{"operation": "bcast", "algorithm": a, "mapping": "core", "P": P, "size": m,
                           "measured": 1.0} for a in (1, 2) for P in (2, 5, 8) for m in (1, 1000)])
    problem = cal.Problem(cells, "bcast", "avg", 8, 8)
    placements = md.Placements(TINY)
    for params in (TRUE, np.stack([TRUE, TRUE * 1.5])):
        B = len(params) if params.ndim == 3 else 1
        costs = cal.parametric_costs(params, CHANNELS, problem.sizes, 7, *(
            (np.full(B, 0.1), 64, np.tile([0.2, 0.9], (B, 1)), np.full(B, 1e-5), np.full(B, 0.05)) if B > 1
            else (0.1, 64, (0.2, 0.9), 1e-5, 0.05)))
        got = problem.predict(costs, OPTIONS, placements)
        for b in range(len(got)):
            for (a, P, m), value in zip(problem.cells[["algorithm", "P", "size"]].itertuples(index=False), got[b]):
                want = predict_arrays("bcast", a, "core", [P], costs, OPTIONS, placements)[0]["avg"]
                assert value == pytest.approx(want[0, b * len(problem.sizes) + list(problem.sizes).index(m)],
                                              rel=1e-12)
    assert len(problem._plans) == 2 and all(len(plans) == 2 for plans in problem._plans.values())  # per width
    laid = [key for key in problem._merged if key[0] not in ("trees of", "placed")]
    assert len(laid) == 1  # the two curves' forests laid out once, for both widths
    # where each plan's ranks sit, read once per plan (two curves at two widths)
    assert sum(key[0] == "placed" for key in problem._merged) == 4


def test_a_call_s_start_skew_grows_with_the_ranks_of_the_fullest_other_node():
    """TINY has 4 cores a node. map-by core fills node 0 first: no rank elsewhere up to P = 4, then
    1-4 on node 1; map-by node alternates: P = 2: 1 on node 1, P = 5: 2, P = 8: 4. A skew of 0.5 us
    per such rank adds 0.5 x that to both targets of every algorithm; without one (the openmpi
    mode's costs, and a one-node machine) nothing is added."""
    placements = md.Placements(TINY)
    assert placements.remote([2, 4, 5, 8], "core").tolist() == [0, 0, 1, 4]
    assert placements.remote([2, 3, 5, 8], "node").tolist() == [1, 1, 2, 4]
    assert md.Placements({**TINY, "nodes": 1}).remote([2, 4], "node").tolist() == [0, 0]
    plain = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], 7, overhead=0.1)
    skewed = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], 7, overhead=0.1, skew=0.5)
    assert plain.skew == 0.0 and skewed.skew == 0.5
    Pv = [2, 4, 5, 8]
    for mapping, want in (("core", [0, 0, 1, 4]), ("node", [1, 2, 2, 4])):
        assert placements.remote(Pv, mapping).tolist() == want
        want = np.array(want, float)
        for a in (1, 2, 3):
            base = predict_arrays("bcast", a, mapping, Pv, plain, OPTIONS, placements)[0]
            more = predict_arrays("bcast", a, mapping, Pv, skewed, OPTIONS, placements)[0]
            for target in ("avg", "max"):
                np.testing.assert_allclose(more[target] - base[target], 0.5 * want[:, None] * np.ones((1, 2)),
                                           atol=1e-12)
    # a calibration on cells with no rank off the root's node does not fit it
    cells = pd.DataFrame([{"operation": "bcast", "algorithm": 1, "mapping": "core", "P": P, "size": 1,
                           "measured": 1.0} for P in (2, 3, 4)])
    fit = cal.calibrate(cells, "bcast", "avg", cal.parametric_costs(TRUE, CHANNELS, [1], 7), OPTIONS, placements,
                        cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 2.0, 1, 1e-8, ("avg",)), 7)
    row = fit.set_index("parameter").loc[cal.SKEW]
    assert not row["fitted"] and row["value"] == pytest.approx(row["start"])


def test_the_barrier_s_release_queue_spreads_the_starts_whole_on_the_max_in_share_on_the_avg():
    """TINY has 4 cores a node. OpenMPI 4.1's barrier: linear for P = 4-7 (the root releases the
    ranks of node 1 at once: 1, 2, 3 under map-by core at P = 5, 6, 7), recursive doubling at
    P = 8 (rank r swaps with r ^ 4: four messages into each node under map-by core, none under
    map-by node, where r and r ^ 4 share a node). A spread of 0.5 us per queued message adds 0.5 n
    to the completion and 0.5 n times the binary reduce's average share to the average:
    P = 5, OpenMPI's binary tree 0 <- 1, 2; 1 <- 3; 2 <- 4: subtrees 5, 2, 2, 1, 1, share
    (5/6 - 1/2 + 2 (2/3 - 1/2)) / 5 = 2/15."""
    from collat.config.defaults import openmpi_facts
    from collat.model.shapes import barrier

    rules = tuple(openmpi_facts("4.1")["barrier_rules"])
    options = replace(OPTIONS, openmpi=replace(OPTIONS.openmpi, barrier_rules=rules))
    placements = md.Placements(TINY)
    assert placements.release_queue([2, 4, 5, 6, 7, 8], "core", rules).tolist() == [0, 0, 1, 2, 3, 4]
    assert placements.release_queue([5, 8], "node", rules).tolist() == [2, 0]
    assert barrier.average_share({"tree": "binary"}, "reduce", 5) == pytest.approx(2 / 15)
    plain = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], 7, overhead=0.1)
    spread = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], 7, overhead=0.1, release=0.5)
    Pv = [4, 5, 8]
    base = predict_arrays("reduce", 2, "core", Pv, plain, options, placements)[0]
    more = predict_arrays("reduce", 2, "core", Pv, spread, options, placements)[0]
    queue = np.array([0.0, 1.0, 4.0])
    np.testing.assert_allclose(more["max"] - base["max"], 0.5 * queue[:, None] * np.ones((1, 2)), atol=1e-12)
    share = np.array([barrier.average_share({"tree": "binary"}, "reduce", P) for P in Pv])
    np.testing.assert_allclose(more["avg"] - base["avg"], 0.5 * (queue * share)[:, None] * np.ones((1, 2)),
                               atol=1e-12)
    # a calibration's problem prices the same, twice (the second time from where it kept the ranks' places)
    cells = pd.DataFrame([{"operation": "reduce", "algorithm": 2, "mapping": "core", "P": P, "size": m,
                           "measured": 1.0} for P in Pv for m in (1, 1000)])
    problem = cal.Problem(cells, "reduce", "avg", 8, 8)
    for _ in range(2):
        got = problem.predict(spread, options, placements)[0]
        np.testing.assert_allclose(got, more["avg"].ravel(), rtol=1e-12)
    # without the MPI version's barrier rules, nothing is added
    same = predict_arrays("reduce", 2, "core", Pv, spread, OPTIONS, placements)[0]
    np.testing.assert_allclose(same["avg"], base["avg"], atol=1e-12)


def test_per_byte_terms_are_fitted_only_beyond_their_half_performance_length():
    start = np.array([[0.3, 2e-4, 0.2, 1e-4]])  # n_1/2: 0.3 / 2e-4 = 1500 B, 0.2 / 1e-4 = 2000 B
    extra = (cal.OVERHEAD, cal.MEMORY)
    assert cal.free_parameters(start, 1024, extra).tolist() == [True, False, True, False, True, False]
    assert cal.free_parameters(start, 1800, extra).tolist() == [True, True, True, False, True, True]
    assert cal.free_parameters(start, 2048, extra).all()


def test_start_takes_intercepts_and_slopes_of_the_openmpi_costs():
    sizes = np.array([1.0, 1001.0])
    alpha = np.array([[1.0, 3.0]])
    beta = np.array([[0.5, 0.5]])  # flat: its per-byte term floors at 1e-7
    start = cal.start(md.ChannelCosts(["core"], sizes, alpha + beta, alpha, beta))
    assert start[0].tolist() == pytest.approx([1.0, 2e-3, 0.5, 1e-7, 0.5])
    # a gap that steps above 64 B: gap_us from the first size above, gap_us_small at the smallest
    sizes = np.array([1.0, 64.0, 128.0, 1001.0])
    beta = np.array([[0.2, 0.2, 0.6, 0.7]])  # slope (0.7 - 0.2) / 1000
    alpha = np.ones_like(beta)
    start = cal.start(md.ChannelCosts(["core"], sizes, alpha + beta, alpha, beta), small_limit=64)
    assert start[0].tolist() == pytest.approx([1.0, 1e-7, 0.6 - 5e-4 * 127, 5e-4, 0.2])
    # one message costs the point-to-point time: the flight's per-byte term is at least the
    # point-to-point slope (2 -> 5 us over 1000 B) less the gap's (0.5 -> 1.5 us)
    sizes = np.array([1.0, 1001.0])
    start = cal.start(md.ChannelCosts(["core"], sizes, [[2.0, 5.0]], [[1.0, 1.0]], [[0.5, 1.5]]))
    assert start[0].tolist() == pytest.approx([1.0, 3e-3 - 1e-3, 0.5, 1e-3, 0.5])


def test_a_calibration_that_keeps_the_measured_fan_outs_starts_from_them_and_moves_a_line_under_them():
    sizes = np.array([1.0, 1001.0])
    alpha, beta = np.array([[1.0, 3.0]]), np.array([[0.5, 0.5]])
    # measured T_NBFT with n = 0..3 receivers: convex at 1 B (1.5, 3, 5), on the line at 1001 B
    measured = np.array([[[0.0, 1.5, 3.0, 5.0], [0.0, 3.5, 4.0, 4.5]]])  # [K, S, n]
    openmpi = md.ChannelCosts(["core"], sizes, alpha + beta, alpha, beta, measured)
    first = cal.start(openmpi)  # [1.0, 2e-3, 0.5, 1e-7, 0.5]: the line 1.002 + 0.5 n at 1 B, 3.002 + 0.5001 n at 1001 B (g' m = 1e-7 x 1001)
    shape = cal.fanout_shape(openmpi, first, sizes)
    assert shape[0, :, 0] == pytest.approx([0.0, 1.5 - 1.502, 3.0 - 2.002, 5.0 - 2.502], abs=1e-6)
    assert shape[0, :, 1] == pytest.approx([0.0, 3.5 - 3.5021, 4.0 - 4.0022, 4.5 - 4.5023], abs=1e-6)
    # at the start the calibrated fan-outs are the measured ones; a latency 1 us larger lifts them by 1
    at_start = cal.parametric_costs(first, ["core"], sizes, 3, shape=shape)
    assert at_start.table_by_receivers[0].T == pytest.approx(measured[0], abs=1e-9)
    lifted = cal.parametric_costs(first + [[1.0, 0, 0, 0, 0]], ["core"], sizes, 3, shape=shape)
    assert lifted.table_by_receivers[0, 1:].T == pytest.approx(measured[0, :, 1:] + 1.0, abs=1e-9)
    # in a batch every parameter set keeps the shape; one size alone picks its column
    batch = cal.parametric_costs(np.stack([first, first + [[1.0, 0, 0, 0, 0]]]), ["core"], sizes, 3, [0.0, 0.0],
                                 np.inf, [(0.0, 1.0)] * 2, [0.0, 0.0], [0.0, 0.0], shape=shape)
    assert batch.table_by_receivers[0, :, 2:].T == pytest.approx(lifted.table_by_receivers[0].T, abs=1e-9)
    assert cal.fanout_shape(openmpi, first, [1001.0])[0, :, 0] == pytest.approx(shape[0, :, 1])
    with pytest.raises(ValueError, match="not among"):
        cal.fanout_shape(openmpi, first, [512.0])


def test_fanout_shapes_unless_every_fan_out_is_a_line():
    costs = md.ChannelCosts(["core"], [1.0, 1001.0], [[1.5, 3.5]], [[1.0, 3.0]], [[0.5, 0.5]],
                            np.zeros((1, 2, 4)))
    assert cal.fanout_shapes({"bcast": costs}, "line", -1.0) is None
    shapes = cal.fanout_shapes({"bcast": costs, "reduce": costs}, "auto", -1.0)
    assert set(shapes.first) == {"bcast", "reduce"} and shapes.of("bcast", [1.0]).shape == (1, 4, 1)


def test_the_gaps_are_fitted_only_where_a_calibration_size_prices_them():
    start = np.array([[0.3, 2e-4, 0.2, 1e-4, 0.1]])
    extra = (cal.OVERHEAD,)
    # sizes 1-1024 B around a 64 B limit: both gaps; only up to 64 B: the small gap alone
    assert cal.free_parameters(start, 1024, extra, 1, 64).tolist() == [True, False, True, False, True, True]
    assert cal.free_parameters(start, 64, extra, 1, 64).tolist() == [True, False, False, False, True, True]
    assert cal.free_parameters(start, 1024, extra, 128, 64).tolist() == [True, False, True, False, False, True]
    assert cal.free_parameters(start, 1024, extra).tolist() == [True, False, True, False, False, True]  # no limit


def synthetic_cells(operation, table, algorithms=(1, 2, 3), P=(2, 3, 4, 5, 6, 7, 8), sizes=(1, 64, 8192),
                    options=OPTIONS, mappings=("core",)):
    grid = pd.DataFrame([{"operation": operation, "algorithm": a, "mapping": m, "P": p, "size": s}
                         for m in mappings for a in algorithms for p in P for s in sizes])
    grid["measured"] = cal.predict_cells(table, grid, "avg", CHANNELS, options, md.Placements(TINY), 7)
    return grid


def true_table(operation, overhead=0.4, memory=2e-5, waits=(0.05, 0.6), forward=0.05, skew=0.01, full=1.0):
    # forward and skew at their start: on TINY (P <= 8) an inner rank's delay trades with the
    # channels' latencies (pipeline: every hop pays both), and the start skew (1-4 ranks on the
    # second node at P = 5-8 under map-by core) with the node channel's gap (a linear root sends
    # to each of them), so the weak prior holds them where they start; ``full``: how many times slower a
    # call is where a node of 4 cores is full (P >= 4 under map-by core, P >= 7 under map-by node)
    rows = [(c, q, TRUE5[k, j]) for k, c in enumerate(CHANNELS) for j, q in enumerate(cal.PARAMETERS)]
    rows += [("all", cal.OVERHEAD, overhead), ("all", cal.MEMORY, memory), ("all", cal.FORWARD, forward),
             ("all", cal.SKEW, skew), ("all", cal.FULL, full)]
    if operation == "reduce":
        rows += [("all", w, v) for w, v in zip(cal.WAITS, waits)]
    return pd.DataFrame([{"operation": operation, "target": "avg", "channel": c, "parameter": q, "value": v}
                         for c, q, v in rows])


def start_from(table, factor, options=OPTIONS, sizes=(1, 64, 8192)):
    """The openmpi costs a calibration starts from: the true ones off by ``factor``."""
    costs = cal.costs_from_table(table, table["operation"].iloc[0], "avg", CHANNELS, sizes, 7, 4096)
    off = cal.parametric_costs(TRUE5 * factor, CHANNELS, sizes, 7, small_limit=options.openmpi.small_limit)
    off.eager_limit = costs.eager_limit
    return off


@pytest.mark.parametrize("operation", ["bcast", "reduce"])
@pytest.mark.parametrize("options, sizes", [(OPTIONS, (1, 64, 8192)), (SMALL, (1, 64, 128, 8192))],
                         ids=["one gap", "small-message gap"])
def test_calibration_recovers_what_made_the_data(operation, options, sizes):
    table = true_table(operation)
    cells = synthetic_cells(operation, table, sizes=sizes, options=options)
    opts = cal.CalibrationOptions(points_per_curve=7, sizes_per_curve=11, loss="soft_l1", f_scale=0.1,
                                  prior_sd=10.0, max_nfev=200, tolerance=1e-8, targets=("avg",))
    start = start_from(table, 1.6, options, sizes)
    before = np.abs(np.log(cal.predict_cells(
        cal.calibrate(cells, operation, "avg", start, options, md.Placements(TINY),
                      cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 10.0, 1, 1e-8, ("avg",)), 7),
        cells, "avg", CHANNELS, options, md.Placements(TINY), 7) / cells["measured"]))
    fit = cal.calibrate(cells, operation, "avg", start, options, md.Placements(TINY), opts, 7)
    assert list(fit.columns) == cal.CALIBRATION_COLUMNS and (fit["cells"] == len(cells)).all()
    after = np.abs(np.log(cal.predict_cells(fit, cells, "avg", CHANNELS, options, md.Placements(TINY), 7)
                          / cells["measured"]))
    assert np.median(before) > 0.1 and np.median(after) < 0.01  # the data are reproduced
    assert fit["rms_log_residual"].iloc[0] < 0.02
    # no cell reaches the mmap threshold: no fault term, written as 0 and not fitted
    fault = fit[fit["parameter"] == cal.FAULT]
    assert len(fault) == (operation == "reduce") and (fault["value"] == 0).all() and not fault["fitted"].any()
    # without a limit no cell prices the small-message gap: it keeps its start, unfitted
    small = fit[fit["parameter"] == "gap_us_small"]
    assert small["fitted"].all() == (options is SMALL)
    # a full node (P >= 4) as fast as the others: no slowdown to speak of
    assert fit.loc[fit["parameter"] == cal.FULL, "value"].iloc[0] == pytest.approx(1.0, abs=0.01)
    fit = fit[fit["fitted"] & (fit["parameter"] != cal.FULL)]
    value = fit.set_index(["channel", "parameter"])["value"]
    truth = table.set_index(["channel", "parameter"])["value"]
    # every parameter within three standard errors of the truth: the uncertainty is honest
    err = np.abs(np.log(value / truth.loc[value.index]))
    assert (err.to_numpy() <= 3 * fit["se_log"].to_numpy() + 0.02).all(), err
    # the node and socket costs are pinned to 10 %; on core, the gap trades with the per-call
    # overhead (both are paid once per message of a small tree), but their sum is pinned
    for channel in ("socket", "node"):
        for q in cal.PARAMETERS[:4]:
            assert value[(channel, q)] == pytest.approx(truth[(channel, q)], rel=0.1), (channel, q)
    if options is SMALL:  # the step: the socket's small-message gap is 0.4 of its gap (0.2 / 0.5)
        assert value[("socket", "gap_us_small")] / value[("socket", "gap_us")] == pytest.approx(0.4, rel=0.2)
        assert value[("node", "gap_us_small")] == pytest.approx(0.9, rel=0.1)  # no step
    assert value[("core", "gap_us")] + value[("all", cal.OVERHEAD)] == pytest.approx(0.2 + 0.4, rel=0.05)
    assert ((fit["low"] <= fit["value"]) & (fit["value"] <= fit["high"])).all()


def test_auto_keeps_the_measured_shape_where_the_fan_outs_bend():
    # the NBFT stage measured fan-outs 0.3 n^2 us above the line; the cells are made from the true
    # parameters with that shape under them
    table = true_table("bcast")
    start = start_from(table, 1.3)
    n = np.arange(8, dtype=float)
    flat = cal.fanout_shapes({"bcast": start}, "measured", OPTIONS.openmpi.small_limit).of("bcast", start.sizes)
    assert np.abs(flat).max() < 0.01  # fan-outs on their line: (almost) nothing to keep
    start.table_by_receivers = start.table_by_receivers + (0.3 * n * n)[None, :, None]
    start.table_by_receivers[:, 0, :] = 0.0
    shapes = cal.fanout_shapes({"bcast": start}, "measured", OPTIONS.openmpi.small_limit)
    truth = pd.concat([table, pd.DataFrame([{"operation": "bcast", "target": "avg", "channel": "all",
                                             "parameter": "nbft_shape", "value": 1.0}])], ignore_index=True)
    grid = pd.DataFrame([{"operation": "bcast", "algorithm": a, "mapping": "core", "P": p, "size": s}
                         for a in (1, 2, 3) for p in range(2, 9) for s in (1, 64, 8192)])
    grid["measured"] = cal.predict_cells(truth, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7, shapes)
    opts = cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 10.0, 200, 1e-8, ("avg",), "auto")
    fit = cal.calibrate(grid, "bcast", "avg", start, OPTIONS, md.Placements(TINY), opts, 7)
    assert cal.keeps_shape(fit, "bcast", "avg")
    assert fit.set_index("parameter").loc["nbft_shape", ["fitted", "low", "high"]].tolist() == [False, 1.0, 1.0]
    again = np.abs(np.log(cal.predict_cells(fit, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7, shapes)
                          / grid["measured"]))
    assert np.median(again) < 0.01  # the data are reproduced (as by a calibration of a line on a line)
    # a line alone cannot bend: it misses, and a table without shapes prices the line
    line = cal.calibrate(grid, "bcast", "avg", start, OPTIONS, md.Placements(TINY), replace(opts, nbft_shape="line"), 7)
    assert not cal.keeps_shape(line, "bcast", "avg")
    missed = cal.predict_cells(line, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7, shapes)
    assert np.median(np.abs(np.log(missed / grid["measured"]))) > 2 * np.median(again)
    assert not cal.keeps_shape(table, "bcast", "avg")  # a table written before the row: a line


def test_fit_predict_never_sees_the_test_cells():
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, algorithms=(1, 2), sizes=(1, 8192))
    start = {"bcast": start_from(table, 1.3)}
    opts = cal.CalibrationOptions(4, 11, "soft_l1", 0.1, 2.0, 20, 1e-5, ("avg",))
    train, test = cells[cells["algorithm"] == 1], cells[cells["algorithm"] == 2]

    def run(test_cells):
        return cal.fit_predict(train, test_cells, "avg", None, None, start, OPTIONS, md.Placements(TINY), opts, 7)["calibrated"]

    first = run(test)
    # the test part's measurements have no say: garbage there changes nothing
    assert np.array_equal(first, run(test.assign(measured=1e6)))
    assert np.isfinite(first).all()
    # an operation with no training cell cannot be predicted
    other = test.assign(operation="reduce")
    assert np.isnan(cal.fit_predict(train, other, "avg", None, None, start, OPTIONS, md.Placements(TINY), opts, 7)["calibrated"]).all()
    # the hybrid: the same calibration, corrected by its residuals on the train cells; a test cell
    # equal to a train cell gets that cell's measurement, and the test part still has no say
    both = cal.fit_predict(train, pd.concat([test, train.iloc[:3]], ignore_index=True), "avg", None, None, start, OPTIONS,
                           md.Placements(TINY), opts, 7, hybrid_neighbours=2)
    assert np.array_equal(both["calibrated"][:len(test)], first)
    assert both["hybrid"][len(test):] == pytest.approx(train["measured"].to_numpy()[:3])
    again = cal.fit_predict(train, test.assign(measured=1e6), "avg", None, None, start, OPTIONS, md.Placements(TINY), opts, 7,
                            hybrid_neighbours=2)["hybrid"]
    assert np.allclose(again, both["hybrid"][:len(test)]) and np.isfinite(again).all()
    # an interval from inner folds of the training part: the 80 % quantile of the calibrated mode's
    # |log error| on the inner test cells, priced by a calibration of the inner training cells alone
    half = (train["P"] > 4).to_numpy()
    inner = va.InnerFolds(((~half, half, None, None, np.zeros(half.sum())),), ("calibrated", "hybrid"))
    got = cal.fit_predict(train, test, "avg", None, None, start, OPTIONS, md.Placements(TINY), opts, 7,
                          hybrid_neighbours=2, inner=inner)
    priced = cal.fit_predict(train[~half], train[half], "avg", None, None, start, OPTIONS, md.Placements(TINY), opts,
                             7)["calibrated"]
    assert got["interval"]["calibrated"] == pytest.approx(va.interval_width(train["measured"][half], priced))
    # ... which is not what the calibration of the whole training part, inner test cells included, gives
    seen = cal.fit_predict(train, train[half], "avg", None, None, start, OPTIONS, md.Placements(TINY), opts,
                           7)["calibrated"]
    assert not np.allclose(seen, priced)
    assert np.isfinite(got["interval"]["hybrid"].base) and np.array_equal(got["calibrated"], first)
    assert "interval_regime" not in got  # no regime folds given
    # regime folds (in the validation: each mapping held out): their own width, the same way
    regime = va.InnerFolds(inner.folds, inner.models, "", ((half, ~half, None, None, np.zeros((~half).sum())),))
    both = cal.fit_predict(train, test, "avg", None, None, start, OPTIONS, md.Placements(TINY), opts, 7,
                           hybrid_neighbours=2, inner=regime)
    other = cal.fit_predict(train[half], train[~half], "avg", None, None, start, OPTIONS, md.Placements(TINY), opts,
                            7)["calibrated"]
    assert both["interval"] == got["interval"]
    assert both["interval_regime"]["calibrated"] == pytest.approx(va.interval_width(train["measured"][~half], other))


def test_validate_calls_a_fitted_model_on_disjoint_parts():
    table = true_table("bcast")
    c = synthetic_cells("bcast", table, algorithms=(1, 2), P=tuple(range(2, 9)), sizes=(1, 8192))
    collective = c.rename(columns={"measured": "avg"}).assign(max=lambda d: d["avg"], outlier=False, run=0)
    seen = []

    def fitted(train, test, target, trend, unfitted, inner):
        key = ["operation", "algorithm", "mapping", "P", "size"]
        assert len(trend) == len(unfitted) == len(test)  # other forecasts of each test cell, or NaN
        assert train.merge(test[test["scored"]], on=key).empty  # no calibration row in its own test part
        for a, b, inner_trend, inner_unfitted, far in inner.folds:  # inner folds: of the training part only
            assert len(a) == len(b) == len(train) and not (a & b).any() and len(inner_unfitted) == len(far) == b.sum()
        assert inner.models[:2] == ("calibrated", "hybrid")
        seen.append(len(test))
        # an interval of x 1.2 around 1.1 y holds every cell; x 1.05 none
        return {"calibrated": test["measured"].to_numpy() * 1.1,
                "interval": {"calibrated": va.Width(np.log(1.2 if target == "avg" else 1.05))}}

    stage = c.assign(mode="calibrated", target="avg", predicted=np.nan)  # the all-data fit is not scored
    options = va.ValidationOptions(sparse_every=3, extrapolation_P=5, size_max_train=1, neighbours=1,
                                   targets=("avg",))
    scores, table = va.validate(collective, stage, TINY, [], options, {"calibrated": fitted})
    # sparse_P, extrapolation, two algorithms, sizes; no unseen_mapping: one mapping leaves nothing to train on
    assert len(seen) == 1 + 1 + 2 + 1
    cal_scores = scores[scores["model"] == "calibrated"]
    # leave one algorithm out: the fold also priced the trained algorithm (unscored, for the selection)
    folds = table[(table["model"] == "calibrated") & (table["split"] == "unseen_algorithm")]
    assert set(folds.loc[~folds["scored"], "algorithm"]) == {1, 2}
    assert (cal_scores.groupby("split")["n"].sum()["unseen_algorithm"]) == len(c)
    assert np.allclose(cal_scores.loc[cal_scores["n"] > 0, "mape"], 0.1)  # |1.1 y - y| / y
    assert (cal_scores.loc[cal_scores["n"] > 0, "coverage"] == 1.0).all()
    assert va.leaderboard(scores).set_index("model").loc["calibrated", "coverage"].tolist() == [1.0] * 4
    assert table.loc[table["model"] != "calibrated", "lower"].isna().all()  # no interval


def test_a_calibration_on_small_sizes_keeps_the_per_byte_terms_at_their_start():
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, sizes=(1, 16, 256, 1024))
    start = start_from(table, 1.3)
    opts = cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 2.0, 50, 1e-5, ("avg",))
    fit = cal.calibrate(cells, "bcast", "avg", start, OPTIONS, md.Placements(TINY), opts, 7).set_index("parameter")
    per_byte = fit.loc[["us_per_byte", "gap_us_per_byte", cal.MEMORY]]
    assert not per_byte["fitted"].any() and per_byte["se_log"].isna().all()
    assert (per_byte["value"] == per_byte["start"]).all()
    latency = fit.loc[["latency_us", "gap_us", cal.OVERHEAD]]
    assert latency["fitted"].all() and (latency["value"] != latency["start"]).all()


def test_the_calibrated_mode_prices_its_targets_in_one_pass_as_each_alone():
    """CalibratedMode.curve prices avg and max side by side (batched_costs_from_table): the same
    rows, numbers and order as one pass per target with its own parameters."""
    from collat.model.calibrated_mode import CalibratedMode
    from collat.model.predict import curve_frame

    table = pd.concat([true_table(op).assign(target=t, value=lambda d, f=f: d["value"] * f)
                       for op in ("bcast", "reduce") for t, f in (("avg", 1.0), ("max", 1.7))], ignore_index=True)
    # the bcast's avg calibration shared its rendezvous bytes, its max one did not
    table = pd.concat([table, pd.DataFrame([{"operation": "bcast", "target": t, "channel": "all",
                                             "parameter": cal.CONCURRENT, "value": v}
                                            for t, v in (("avg", 1.0), ("max", 0.0))])], ignore_index=True)
    mode = CalibratedMode.from_table(table, CHANNELS, [1, 64, 8192], 7, SMALL)
    assert {op: targets for op, (targets, _) in mode.costs.items()} == {"bcast": ("avg", "max"),
                                                                     "reduce": ("avg", "max")}
    for operation in ("bcast", "reduce"):
        for algorithm in (0, 1, 2, 3):
            got = mode.curve(operation, algorithm, "socket", [2, 5, 8], md.Placements(TINY))
            want = []
            for target in ("avg", "max"):
                shared = operation == "bcast" and target == "avg"
                costs = cal.costs_from_table(table, operation, target, CHANNELS, [1, 64, 8192], 7,
                                             SMALL.openmpi.eager_limit, SMALL.openmpi.small_limit, shared)
                t, names, chosen = predict_arrays(operation, algorithm, "socket", [2, 5, 8], costs, SMALL,
                                                  md.Placements(TINY), with_average=target != "max")
                want.append(curve_frame(np.array([2, 5, 8]), costs.sizes, {target: t[target]}, names, 1, chosen))
                if shared and algorithm == 1:  # the flag is kept: the linear bcast's 8 KiB at P = 8 differs
                    alone = cal.costs_from_table(table, operation, target, CHANNELS, [1, 64, 8192], 7,
                                                 SMALL.openmpi.eager_limit, SMALL.openmpi.small_limit, False)
                    one = predict_arrays(operation, algorithm, "socket", [8], alone, SMALL, md.Placements(TINY),
                                         with_average=True)[0]["avg"][0, 2]
                    assert abs(t["avg"][2, 2] / one - 1) > 0.01
            pd.testing.assert_frame_equal(got, pd.concat(want, ignore_index=True))
            assert (got.loc[got["target"] == "max", "predicted"].to_numpy()
                    > got.loc[got["target"] == "avg", "predicted"].to_numpy()).all()  # each its own parameters


def test_concurrent_bytes_are_a_bcast_s_per_byte_gaps_above_the_eager_limit():
    c = cal.parametric_costs(TRUE, CHANNELS, [1, 4096, 8192], max_receivers=3, eager_limit=4096, concurrent=True)
    # gap_us_per_byte x size above 4096 B only (core 1e-4, socket 2e-4, node 4e-4); node is the network
    np.testing.assert_allclose(c.bytes_part(), [[0, 0, 0.8192], [0, 0, 1.6384], [0, 0, 3.2768]])
    assert c.group.tolist() == [0, 0, 1]
    assert not cal.parametric_costs(TRUE, CHANNELS, [8192], max_receivers=3, eager_limit=4096).bytes_part().any()
    from collat.model.calibrated_mode import concurrent_bytes, rendezvous_forms
    assert concurrent_bytes("bcast", True) and not concurrent_bytes("reduce", True)
    assert not concurrent_bytes("bcast", False)
    # auto: a bcast's calibration tries both, shared first; a reduce's one
    assert rendezvous_forms("bcast", "auto") == (True, False) and rendezvous_forms("reduce", "auto") == (False,)
    assert rendezvous_forms("bcast", False) == (False,)
    # one flag per parameter set of a batch: the second set's bytes move one receiver after another
    both = cal.parametric_costs(np.stack([TRUE, TRUE]), CHANNELS, [8192], 3, [0, 0], 4096, [[0, 1], [0, 1]],
                                [0, 0], [0, 0], concurrent=[True, False])
    assert both.bytes_part()[:, 0].tolist() == pytest.approx([0.8192, 1.6384, 3.2768])
    assert not both.bytes_part()[:, 1].any()


def test_an_unseen_algorithm_is_priced_as_far_as_the_calibration_carries():
    """In the unseen_algorithm split the inner folds hold out each training algorithm, calibrate the
    others, and choose the blend of calibrated and openmpi prices (collat.model.transfer) that an
    unseen algorithm gets; the training algorithms keep the calibrated price."""
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, algorithms=(1, 2, 3), sizes=(1, 8192))
    start = {"bcast": start_from(table, 1.3)}
    opts = cal.CalibrationOptions(4, 11, "soft_l1", 0.1, 2.0, 20, 1e-5, ("avg",))
    train = cells[cells["algorithm"] != 3].reset_index(drop=True)
    test = cells[cells["algorithm"] == 3].reset_index(drop=True)
    folds = []
    for alg in (1, 2):
        held = (train["algorithm"] == alg).to_numpy()
        folds.append((~held, held, None, train["measured"].to_numpy()[held] * np.exp(0.02), np.zeros(held.sum())))

    def run(split, unfitted):
        inner = va.InnerFolds(tuple(folds), ("calibrated",), split)
        return cal.fit_predict(train, test, "avg", None, unfitted, start, OPTIONS, md.Placements(TINY), opts, 7,
                               inner=inner)["calibrated"]

    plain = cal.fit_predict(train, test, "avg", None, None, start, OPTIONS, md.Placements(TINY), opts, 7)["calibrated"]
    openmpi = test["measured"].to_numpy() * 3.0
    # the inner folds' openmpi prices are within 2 % of the measurements, better than any
    # calibration of one algorithm: the weight is 0, and the unseen algorithm gets the openmpi price
    assert run("unseen_algorithm", openmpi) == pytest.approx(openmpi)
    # another split, or no openmpi price: the calibrated price as it is
    assert run("sparse_P", openmpi) == pytest.approx(plain)
    assert run("unseen_algorithm", None) == pytest.approx(plain)


def test_flat_runs_price_the_nbft_stages_flat_trees_by_hand():
    costs = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], max_receivers=7, overhead=0.25)
    costs.flat_runs = pd.DataFrame({"operation": "bcast", "channel": ["core"] * 4 + ["node"] * 2 + ["core"] * 2,
                                    "P": [2, 2, 5, 5, 3, 3, 9, 5], "size": [1, 1000, 1, 1000, 1, 1000, 1, 64],
                                    "target": "max", "latency": 1.0})
    runs = cal.FlatRuns(costs, "max", np.array([1.0, 1000.0]), 8, 7)
    # the slowest of n receivers on one channel: overhead + alpha + n beta, alpha = L + G m, beta = g + g' m;
    # P = 9 (8 receivers, more than 7) and 64 B (no calibration size) are left out
    L, G, g, gp = TRUE[0]
    want = [0.25 + L + G * m + n * (g + gp * m) for n, m in ((1, 1), (1, 1000), (4, 1), (4, 1000))]
    L, G, g, gp = TRUE[2]
    want += [0.25 + L + G * m + 2 * (g + gp * m) for m in (1, 1000)]
    assert runs.predict(costs, "bcast")[0].tolist() == pytest.approx(want)
    assert runs.log_measured.tolist() == [0.0] * 6
    assert cal.FlatRuns(costs, "avg", np.array([1.0, 1000.0]), 8, 7).predict(costs, "bcast").shape == (1, 0)
    # on nodes of 5 cores the core channel's P = 5 run fills one, and pays the full-node factor; the
    # node channel's 2 receivers fill none
    slow = cal.parametric_costs(TRUE, CHANNELS, [1, 1000], max_receivers=7, overhead=0.25, full=1.5)
    runs = cal.FlatRuns(costs, "max", np.array([1.0, 1000.0]), 8, 7, cores_per_node=5)
    assert runs.predict(slow, "bcast")[0] == pytest.approx(np.array(want) * [1, 1, 1.5, 1.5, 1, 1])


def test_a_calibration_with_flat_runs_fits_a_channel_no_collective_cell_exercises():
    # bcast at P <= 4 under map-by core on TINY: core and socket only; the node channel is priced by
    # its NBFT runs alone (made from the true costs), from a start 1.6x off
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, P=(2, 3, 4))
    start = start_from(table, 1.6)
    truth = cal.costs_from_table(table, "bcast", "avg", CHANNELS, start.sizes, 7, 4096)
    start.flat_runs = pd.DataFrame([{"operation": "bcast", "channel": "node", "P": p, "size": m, "target": "avg",
                                     "latency": 1.0} for p in range(2, 9) for m in start.sizes])
    # the runs as the true costs price them (FlatRuns' prices are checked by hand above)
    start.flat_runs["latency"] = cal.FlatRuns(start, "avg", start.sizes, 7, 7).predict(truth, "bcast")[0]
    opts = cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 10.0, 200, 1e-8, ("avg",))
    node, missed = {}, {}
    for flat in (False, True):
        fit = cal.calibrate(cells, "bcast", "avg", start, OPTIONS, md.Placements(TINY), replace(opts, flat_runs=flat),
                            7)
        node[flat] = fit.set_index(["channel", "parameter"])["value"]
        assert (fit["cells"] == len(cells)).all()  # the collective cells; the runs come beside them
        priced = cal.costs_from_table(fit, "bcast", "avg", CHANNELS, start.sizes, 7, 4096)
        runs = cal.FlatRuns(start, "avg", start.sizes, 7, 7)
        missed[flat] = np.median(np.abs(runs.predict(priced, "bcast")[0] - np.exp(runs.log_measured))
                                 / np.exp(runs.log_measured))
    # without the runs the node keeps its start (1.6x off) and misses them; with them, they are
    # reproduced and the node's gap is found
    truth_node = dict(zip(cal.PARAMETERS, TRUE5[2]))
    assert node[False][("node", "gap_us")] == pytest.approx(1.6 * truth_node["gap_us"], rel=0.01)
    assert missed[False] > 0.2 and missed[True] < 0.01
    assert node[True][("node", "gap_us")] == pytest.approx(truth_node["gap_us"], rel=0.1)



@pytest.mark.parametrize("shared", [True, False])
def test_auto_finds_how_the_rendezvous_bytes_moved(shared):
    # cells made with a bcast's bytes above the eager limit (4096) shared by a fan-out's receivers,
    # or moved one receiver after another; auto fits both and keeps the one that made them
    table = true_table("bcast")
    truth = pd.concat([table, pd.DataFrame([{"operation": "bcast", "target": "avg", "channel": "all",
                                             "parameter": cal.CONCURRENT, "value": float(shared)}])],
                      ignore_index=True)
    auto = replace(OPTIONS, openmpi=replace(OPTIONS.openmpi, concurrent_rendezvous="auto"))
    cells = synthetic_cells("bcast", truth, options=auto)
    start = start_from(table, 1.3)
    opts = cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 10.0, 200, 1e-8, ("avg",))
    fit = cal.calibrate(cells, "bcast", "avg", start, auto, md.Placements(TINY), opts, 7)
    row = fit.set_index("parameter").loc[cal.CONCURRENT]
    assert (row["value"], row["start"], row["fitted"]) == (float(shared), 1.0, False)
    again = cal.predict_cells(fit, cells, "avg", CHANNELS, auto, md.Placements(TINY), 7)
    assert np.median(np.abs(np.log(again / cells["measured"]))) < 0.01
    # nothing above the eager limit: the two tie, and the bytes stay shared (OpenMPI's bcast posts
    # every child's send at once); a reduce's never are
    small = cal.calibrate(cells[cells["size"] < 4096], "bcast", "avg", start, auto, md.Placements(TINY), opts, 7)
    assert small.set_index("parameter").loc[cal.CONCURRENT, "value"] == 1.0
    reduce = true_table("reduce")
    fit = cal.calibrate(synthetic_cells("reduce", reduce, options=auto), "reduce", "avg", start_from(reduce, 1.3),
                        auto, md.Placements(TINY), opts, 7)
    assert fit.set_index("parameter").loc[cal.CONCURRENT, "value"] == 0.0


def blocks_options(algorithm: int):
    """:data:`OPTIONS` with bcast ``algorithm`` a scatter-allgather (blocks that ranks exchange)."""
    trees = tuple(s for s in OPTIONS.openmpi.trees if not (s["operation"] == "bcast" and s["algorithm"] == algorithm))
    trees += ({"operation": "bcast", "algorithm": algorithm, "schedule": "scatter_allgather", "count_below": "P",
               "fallback": "linear"},)
    return replace(OPTIONS, openmpi=replace(OPTIONS.openmpi, trees=trees))


def blocks_case():
    """(options, cells, start, calibration options): bcast 1 linear, 2 blocks, 3 a tree, measured
    at sizes 1 and 8192 on TINY from the true costs, the start 1.3x off."""
    options = blocks_options(2)
    table = true_table("bcast")
    cells = synthetic_cells("bcast", table, algorithms=(1, 2, 3), sizes=(1, 8192), options=options)
    start = {"bcast": start_from(table, 1.3, options)}
    return options, cells, start, cal.CalibrationOptions(4, 11, "soft_l1", 0.1, 2.0, 20, 1e-5, ("avg",))


def test_fit_predict_prices_a_foreign_algorithm_by_the_openmpi_mode():
    # bcast 2 a scatter-allgather (blocks) held out beside the linear tree: the calibrated mode and
    # every hybrid take the openmpi mode's price, where it has one; a tree beside it is calibrated.
    # Below P elements and at P = 2 the schedule is the linear tree's run: the hybrids take the
    # measured twin there
    options, cells, start, opts = blocks_case()
    train, test = cells[cells["algorithm"] == 1], cells[cells["algorithm"] != 1].reset_index(drop=True)
    unfitted = np.where(np.arange(len(test)) % 2, np.nan, 7.0)
    got = cal.fit_predict(train, test, "avg", None, unfitted, start, options, md.Placements(TINY), opts, 7,
                          hybrid_neighbours=2)
    blocks = (test["algorithm"] == 2).to_numpy()
    priced = np.isfinite(unfitted)
    own_run = ((test["size"] > test["P"]) & (test["P"] > 2)).to_numpy()
    assert got["calibrated"][blocks & priced] == pytest.approx(7.0)
    for name in ("calibrated", "hybrid", "hybrid_carried", "hybrid_untwinned"):
        assert got[name][blocks & priced & own_run] == pytest.approx(7.0)
        assert (got[name][blocks & ~priced] != 7.0).all() and (got[name][~blocks] != 7.0).all()
    assert (got["hybrid"][blocks & priced & ~own_run] != 7.0).all()
    # the physics' price it built on, for every priced cell (no fresh buffers, no full node slowed
    # on TINY: the openmpi mode's price itself), for the interval's floor (collat.model.validation)
    assert got["physics"][priced] == pytest.approx(7.0) and np.isnan(got["physics"][~priced]).all()


def test_inner_folds_that_hold_out_a_foreign_algorithm_give_its_own_width():
    # bcast 1 linear, 2 blocks, 3 a tree, each held out of the other two in turn: the tree beside
    # the linear tree is of a kind they cover; the linear tree (P - 1 receivers) beside a tree and
    # blocks, and the blocks beside two trees, are foreign. Each width pools its own kind's folds
    options, train, start, opts = blocks_case()
    held = {a: (train["algorithm"] == a).to_numpy() for a in (1, 2, 3)}
    folds = tuple((~b, b, None, None, np.zeros(b.sum())) for b in held.values())
    inner = va.InnerFolds(folds, ("calibrated",), "unseen_algorithm")
    got = cal.fit_predict(train, train.head(2), "avg", None, None, start, options, md.Placements(TINY), opts, 7,
                          inner=inner)

    def priced(a):  # the held-out algorithm priced by a calibration of the other two alone
        return cal.fit_predict(train[~held[a]], train[held[a]], "avg", None, None, start, options,
                               md.Placements(TINY), opts, 7)["calibrated"]
    measured = train["measured"].to_numpy()
    assert got["interval"]["calibrated"] == pytest.approx(va.interval_width(measured[held[3]], priced(3)))
    assert got["interval_foreign"]["calibrated"] == pytest.approx(va.interval_width(
        np.r_[measured[held[1]], measured[held[2]]], np.r_[priced(1), priced(2)]))
    # without a foreign fold: no foreign width
    alone = va.InnerFolds(folds[2:], ("calibrated",), "unseen_algorithm")
    plain = cal.fit_predict(train, train.head(2), "avg", None, None, start, options, md.Placements(TINY), opts, 7,
                            inner=alone)
    assert plain["interval"] == got["interval"] and "interval_foreign" not in plain


def test_a_reduce_tree_s_inner_ranks_pay_fresh_pages_from_the_mmap_threshold():
    # forward 0.15 us, fault 2e-4 us per byte: below 128 KiB the delay alone, from it on plus 2e-4 m
    c = cal.parametric_costs(TRUE, CHANNELS, [1000, 131072, 262144], max_receivers=3, forward=0.15, fault=2e-4)
    assert c.forward.tolist() == pytest.approx([0.15, 0.15 + 26.2144, 0.15 + 52.4288])
    # a batch: each parameter set its own fault, column by column
    b = cal.parametric_costs(np.stack([TRUE, TRUE]), CHANNELS, [1000, 131072], 3, overhead=[0.1, 0.1],
                             waits=[[0.0, 1.0], [0.0, 1.0]], memory=[0.0, 0.0], forward=[0.15, 0.15], fault=[0.0, 1e-4])
    assert b.forward.tolist() == pytest.approx([0.15, 0.15, 0.15, 0.15 + 13.1072])
    # without a fault the delay stays one number
    assert cal.parametric_costs(TRUE, CHANNELS, [131072], 3, forward=0.15).forward == 0.15


def test_the_fault_cost_is_fitted_only_where_a_cell_reaches_the_mmap_threshold():
    start = np.array([[0.3, 2e-4, 0.2, 1e-4]])
    extra = (cal.OVERHEAD, cal.FAULT)
    assert cal.free_parameters(start, 65536, extra).tolist()[-1] is False
    assert cal.free_parameters(start, 131072, extra).tolist()[-1] is True


def test_fresh_memory_prices_the_buffers_an_algorithm_writes_at_the_calibrated_fault_cost():
    from collat.model.calibrated_mode import fresh_memory, with_machine_terms

    table = pd.DataFrame({"operation": "reduce", "target": ["avg", "max"], "channel": "all",
                          "parameter": cal.FAULT, "value": [1e-4, 2e-4]})
    trees = [{"operation": "reduce", "algorithm": 1, "tree": "linear", "fresh": 1},
             {"operation": "reduce", "algorithm": 2, "tree": "binary"},
             {"operation": "reduce", "algorithm": 7, "schedule": "rabenseifner", "fresh": 1.5}]
    cells = pd.DataFrame({"operation": ["reduce", "reduce", "reduce", "reduce", "bcast"],
                          "algorithm": [7, 7, 1, 2, 7], "size": [65536, 131072, 262144, 262144, 262144],
                          "target": ["avg", "avg", "max", "avg", "avg"]})
    # below the threshold nothing; Rabenseifner's 1.5 buffers at 1e-4 us/B, the linear root's one at
    # 2e-4 (max); a tree's inner ranks pay where they forward, not here; no fault fitted for bcast
    assert fresh_memory(cells, table, trees).tolist() == pytest.approx([0.0, 19.6608, 52.4288, 0.0, 0.0])
    # one target for every cell
    assert fresh_memory(cells.drop(columns="target"), table, trees, "max").tolist() == pytest.approx(
        [0.0, 39.3216, 52.4288, 0.0, 0.0])
    assert not fresh_memory(cells, None, trees).any()
    rows = cells.assign(predicted=10.0)
    assert with_machine_terms(rows, table, trees)["predicted"].tolist() == pytest.approx(
        [10.0, 29.6608, 62.4288, 10.0, 10.0])
    assert with_machine_terms(rows, None, trees) is rows


def test_rabenseifner_copies_its_send_buffer_and_a_socket_s_ranks_fault_their_pages_together():
    from collat.model.calibrated_mode import fresh_memory, with_machine_terms

    machine = {"nodes": 1, "sockets_per_node": 2, "cores_per_socket": 4, "cores_per_l3": 2}
    rows = [("all", cal.FAULT, 1e-4), ("all", cal.MEMORY, 2e-5), ("cache", "us_per_byte", 1e-4),
            ("cache", "gap_us_per_byte", 5e-5), ("core", "us_per_byte", 9e-4), ("core", "gap_us_per_byte", 9e-4)]
    table = pd.DataFrame([{"operation": "reduce", "target": "avg", "channel": c, "parameter": k, "value": v}
                          for c, k, v in rows])
    trees = [{"operation": "reduce", "algorithm": 1, "tree": "linear", "fresh": 1},
             {"operation": "reduce", "algorithm": 7, "schedule": "rabenseifner", "count_below": "pof2",
              "fallback": "linear", "fresh": 1.5, "copies": 1, "at_once": True}]
    cells = pd.DataFrame({"operation": "reduce", "target": "avg",
                          "algorithm": [7, 7, 7, 7, 1],
                          "mapping": ["core", "socket", "core", "core", "core"],
                          "P": [8, 4, 8, 8, 8],
                          "size": [262144, 262144, 65536, 4, 262144]})
    # 256 KiB, map-by core, P = 8 (4 ranks on each socket): 1.5 m fresh at 1e-4 us/B = 39.3216, one copy
    # of m at the fastest channel's (cache) 1e-4 + 5e-5 us/B = 39.3216, and the fresh bytes of the 3
    # other ranks of the socket at 2e-5 us/B each = 23.59296; map-by socket, P = 4: 2 ranks a socket,
    # 1 other = 7.86432; 64 KiB: below the mmap threshold the copy alone (9.8304); 4 B at P = 8: fewer
    # elements than 2^3, OpenMPI runs the linear fallback: nothing; the linear root faults alone
    want = [102.23616, 86.50752, 9.8304, 0.0, 26.2144]
    assert fresh_memory(cells, table, trees, machine=machine).tolist() == pytest.approx(want)
    # without the machine nobody is counted beside the rank
    assert fresh_memory(cells, table, trees).tolist() == pytest.approx([78.6432, 78.6432, 9.8304, 0.0, 26.2144])
    assert with_machine_terms(cells.assign(predicted=1.0), table, trees, machine)["predicted"].tolist() == \
        pytest.approx([w + 1.0 for w in want])


def test_the_physics_price_carries_the_memory_work_and_a_full_node_s_slowdown():
    from collat.model.calibrated_mode import physics_price

    machine = {"nodes": 1, "sockets_per_node": 1, "cores_per_socket": 4, "cores_per_l3": 4}
    table = pd.DataFrame({"operation": ["reduce", "reduce", "bcast"], "target": "avg", "channel": "all",
                          "parameter": [cal.FAULT, cal.FULL, cal.FULL], "value": [1e-4, 1.5, 1.2]})
    trees = [{"operation": "reduce", "algorithm": 1, "tree": "linear", "fresh": 1}]
    cells = pd.DataFrame({"operation": ["reduce", "reduce", "reduce", "bcast"], "algorithm": 1, "mapping": "core",
                          "P": [4, 3, 4, 4], "size": [262144, 262144, 8, 8]})
    # the linear root's fresh buffer, 1e-4 us/B x 256 KiB = 26.2144, then 1.5 times all where the
    # node's 4 cores each hold a rank (P = 4); at P = 3 a core is idle; the bcast's own factor
    got = physics_price(cells, np.full(4, 10.0), table, trees, "avg", machine)
    assert got.tolist() == pytest.approx([54.3216, 36.2144, 15.0, 12.0])
    # without the machine, nobody's node is known to be full; without a table, the openmpi mode's price
    assert physics_price(cells, np.full(4, 10.0), table, trees, "avg").tolist() == pytest.approx(
        [36.2144, 36.2144, 10.0, 10.0])
    assert physics_price(cells, np.full(4, 10.0), None, trees, "avg", machine).tolist() == [10.0] * 4


def test_fit_predict_adds_the_fresh_buffers_of_a_foreign_algorithm_at_the_fault_cost_it_fitted():
    # reduce 4 a Rabenseifner (blocks, 1.5 fresh buffers) held out beside the trees; the truth's inner
    # ranks fault at 1e-4 us per byte from 128 KiB on. Its price is the openmpi mode's (7 us, given)
    # plus what the training part's calibration finds a fresh byte costs times 1.5 m from 128 KiB on
    trees = tuple(s for s in OPTIONS.openmpi.trees if s["operation"] == "reduce")
    trees += ({"operation": "reduce", "algorithm": 4, "schedule": "rabenseifner", "count_below": "pof2",
               "fallback": "linear", "fresh": 1.5},)
    options = replace(OPTIONS, openmpi=replace(OPTIONS.openmpi, trees=trees))
    table = pd.concat([true_table("reduce"), pd.DataFrame([{"operation": "reduce", "target": "avg", "channel": "all",
                                                            "parameter": cal.FAULT, "value": 1e-4}])])
    sizes = (1, 8192, 262144)
    cells = synthetic_cells("reduce", table, algorithms=(1, 2, 3, 4), sizes=sizes, options=options)
    start = {"reduce": start_from(table, 1.3, options, sizes)}
    opts = cal.CalibrationOptions(4, 11, "soft_l1", 0.1, 2.0, 20, 1e-5, ("avg",))
    train, test = cells[cells["algorithm"] != 4].reset_index(drop=True), cells[cells["algorithm"] == 4]
    test = test.reset_index(drop=True)
    got = cal.fit_predict(train, test, "avg", None, np.full(len(test), 7.0), start, options, md.Placements(TINY),
                          opts, 7)
    fit = cal.calibrate_all({"avg": train}, start, options, md.Placements(TINY), opts, 7)
    fault = float(fit.loc[fit["parameter"] == cal.FAULT, "value"].iloc[0])
    assert fault > 0
    large = (test["size"] == 262144).to_numpy()
    assert got["calibrated"][~large] == pytest.approx(7.0)
    assert got["calibrated"][large] == pytest.approx(7.0 + fault * 1.5 * 262144)


def test_a_full_node_s_slowdown_is_measured_where_cells_have_one_and_cells_do_not():
    """Calls 1.3 times slower where a node of TINY has a rank on every core (map-by core from P = 4,
    map-by node from P = 7): fitted where cells leave a core idle and some fill a node they run on
    alone (map-by core, P = 4); 1 (none) and unfitted where every cell leaves a core idle (P = 2, 3),
    or where every full node has a second beside it (P = 5, 6), whose costs the slowdown would trade with."""
    table = true_table("bcast", full=1.3)
    cells = synthetic_cells("bcast", table, mappings=("core", "node"))
    opts = cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 10.0, 200, 1e-8, ("avg",))
    fit = cal.calibrate(cells, "bcast", "avg", start_from(table, 1.6), OPTIONS, md.Placements(TINY), opts, 7)
    row = fit[fit["parameter"] == cal.FULL].iloc[0]
    assert row["fitted"] and row["value"] == pytest.approx(1.3, rel=0.05)
    assert row["start"] == pytest.approx(1.1)  # a little slower at the start: both ways are open to the fit
    for P in ((2, 3), (2, 3, 5, 6)):
        fit = cal.calibrate(synthetic_cells("bcast", table, P=P), "bcast", "avg", start_from(table, 1.6), OPTIONS,
                            md.Placements(TINY), opts, 7)
        row = fit[fit["parameter"] == cal.FULL].iloc[0]
        assert not row["fitted"] and row["value"] == 1.0
    # the calibrated mode prices a full node's call 1.3 times the same call's at 1 (core, P = 4..8)
    slow = table.assign(value=np.where(table["parameter"] == cal.FULL, 1.3, table["value"]))
    fast = table.assign(value=np.where(table["parameter"] == cal.FULL, 1.0, table["value"]))
    grid = synthetic_cells("bcast", table, P=(3, 4, 8)).drop(columns="measured")
    ratio = (cal.predict_cells(slow, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7)
             / cal.predict_cells(fast, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7))
    assert ratio == pytest.approx(np.where(grid["P"] >= 4, 1.3, 1.0))


def test_without_a_full_cell_a_full_node_s_slowdown_is_the_nbft_runs():
    """Cells that leave every core of TINY idle (P = 2, 3 under map-by core) cannot tell how much
    slower a call on a full node is; the NBFT runs can: on the core channel 1 and 2 us with 1 and 2
    receivers, 4.5 us with 3, which fill a node of 4 cores: 1.5 times the line's 3. The factor is
    that, not fitted, and a full node's call is priced 1.5 times the same call at 1. Where cells
    fill a node alone (P = 4) the factor is fitted on them (the truth, 1) and the runs do not enter."""
    table = true_table("bcast")
    opts = cal.CalibrationOptions(7, 11, "soft_l1", 0.1, 10.0, 200, 1e-8, ("avg",))
    start = start_from(table, 1.6)
    start.flat_runs = pd.DataFrame([{"channel": "core", "P": P, "size": s, "target": "avg", "latency": v}
                                    for P, v in ((2, 1.0), (3, 2.0), (4, 4.5)) for s in (1, 64, 8192)])
    fit = cal.calibrate(synthetic_cells("bcast", table, P=(2, 3)), "bcast", "avg", start, OPTIONS,
                        md.Placements(TINY), opts, 7)
    row = fit[fit["parameter"] == cal.FULL].iloc[0]
    assert not row["fitted"] and row["value"] == pytest.approx(1.5) and row["start"] == pytest.approx(1.5)
    grid = synthetic_cells("bcast", table, P=(3, 4, 8)).drop(columns="measured")
    one = fit.assign(value=np.where(fit["parameter"] == cal.FULL, 1.0, fit["value"]))
    ratio = (cal.predict_cells(fit, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7)
             / cal.predict_cells(one, grid, "avg", CHANNELS, OPTIONS, md.Placements(TINY), 7))
    assert ratio == pytest.approx(np.where(grid["P"] >= 4, 1.5, 1.0))
    fit = cal.calibrate(synthetic_cells("bcast", table), "bcast", "avg", start, OPTIONS, md.Placements(TINY), opts, 7)
    row = fit[fit["parameter"] == cal.FULL].iloc[0]
    assert row["fitted"] and row["value"] == pytest.approx(1.0, abs=0.01)
