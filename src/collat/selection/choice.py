"""Choosing the collective algorithm from the model, its regret, and an OpenMPI dynamic-rules file.

For every (operation, mapping, P, size) the model's pick is the modelled algorithm with the
smallest expected latency (mode ``selection.mode``, on the target scored; :func:`expected_latency`:
the prediction, raised by how uncertain it is where the mode gives an 80 % interval, so that an
algorithm priced with a wider interval, one nobody measured, must be predicted faster to win),
OpenMPI's default (algorithm 0, priced through its fixed rules) included unless
``selection.default_candidate`` is off: a rules file that names 0 hands that cell back to the
fixed rules. Where the data has two forced
algorithms or more at that cell, the measured best is the one of them with the smallest measured
latency (median over runs, flagged outliers left out), and the regret of a choice is its measured
latency over the measured best: for the model (its pick among the algorithms measured at that
cell) and for OpenMPI's default (algorithm 0, measured as such). An algorithm measured at a few
cells only competes at those cells: it never takes the other cells out of the score.

The rules file (:mod:`collat.selection.rulesfile`) gives OpenMPI 4.1, per communicator and message size, the
model's pick among every modelled algorithm, measured or not; :func:`regret` scores it too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collat.model.shapes.openmpi import COLLECTIVE_IDS  # noqa: F401 (the stage's API)
from collat.selection.rulesfile import lookup, parse_rules, write_rules  # noqa: F401 (the stage's API)
from collat.config.settings import NOT_OUT_OF_SAMPLE

CELL = ["operation", "mapping", "P", "size"]
SIGNIFICANT = 9  # digits of a prediction that rank it: closer ones tie (the smaller algorithm id wins)


def price_sd(predicted, upper) -> np.ndarray:
    """The sd of log latency of a price whose 80 % interval ends at ``upper``: the model's log error
    taken as normal, the prediction its median and the interval its central
    :data:`collat.model.validation.INTERVAL`, so log(upper / predicted) / z, z the normal quantile
    at (1 + INTERVAL) / 2 (1.28). NaN where there is no interval."""
    from statistics import NormalDist

    from collat.model.validation import INTERVAL

    p, u = np.asarray(predicted, float), np.asarray(upper, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(u / p) / NormalDist().inv_cdf((1.0 + INTERVAL) / 2.0)


def expected_latency(predicted, sd) -> np.ndarray:
    """The mean latency of a price ``predicted`` (the median) whose log has the sd ``sd``: predicted
    exp(sd^2 / 2), a log-normal's mean. The prediction itself where ``sd`` is NaN."""
    p, s = np.asarray(predicted, float), np.asarray(sd, float)
    return np.where(np.isfinite(s), p * np.exp(0.5 * s ** 2), p)


def choice_sd(predictions: pd.DataFrame, measured: dict, widths: pd.DataFrame, machine: dict,
              bounds: np.ndarray) -> np.ndarray:
    """The sd of each price's own error (:func:`price_sd`), rows of the model stage's grid: the 80 %
    interval the validation found where the cell stands (:func:`collat.model.validation.grid_bounds`
    with ``measured``, target -> measured cells, ``widths``, results/model/intervals.csv, the
    ``machine`` and the size ``bounds``), without the spread between two runs of one configuration
    that the grid's intervals add for a new run: that spread is every candidate's, and what tells
    candidates apart is how well each is priced. On a curve nobody measured (no spread there) the
    grid's own interval where it is wider (column ``upper``: an algorithm of a kind none measured, or
    one the validation found no width for, :func:`collat.model.transfer.unmeasured_bounds`). NaN for
    a mode without intervals."""
    from collat.model.validation import MEASURED_CURVE, grid_bounds

    _, upper = grid_bounds(predictions, measured, widths, machine, bounds)
    sd = price_sd(predictions["predicted"], upper)
    if "upper" in predictions:
        unseen = np.zeros(len(predictions), dtype=bool)
        for target, rows in predictions.groupby("target", sort=False).indices.items():
            known = measured.get(target)
            unseen[rows] = True if known is None else ~pd.MultiIndex.from_frame(
                predictions.iloc[rows][MEASURED_CURVE]).isin(pd.MultiIndex.from_frame(known[MEASURED_CURVE]))
        own = price_sd(predictions["predicted"], predictions["upper"])
        sd = np.where(unseen, np.fmax(sd, own), sd)
    return sd


def _ranked(p: pd.DataFrame) -> pd.DataFrame:
    """``p`` sorted per cell by :func:`expected_latency` with its column ``sd`` (by its prediction
    without one) to :data:`SIGNIFICANT` digits, then by algorithm id: a value that differs from
    another in the last bits only (the default priced beside the algorithm it runs, a calibration
    refitted to rounding) ties with it, and the tie goes to the smaller id (the default, 0), run
    after run (but for a pair that straddles a rounding boundary: about one in 10^4 of such pairs)."""
    v = expected_latency(p["predicted"], p["sd"]) if "sd" in p else p["predicted"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        digits = SIGNIFICANT - 1 - np.floor(np.log10(np.abs(v)))
    scale = np.where(np.isfinite(digits), 10.0 ** np.where(np.isfinite(digits), digits, 0), 1.0)
    key = np.round(v * scale) / scale
    ties = ["algorithm", "segsize"] if "segsize" in p else ["algorithm"]  # whole messages win a tie
    return (p.assign(_key=key).sort_values(CELL + ["_key", *ties], kind="stable").drop(columns="_key"))


CHOOSERS = ("model", "rules_file", "default")


def best_validated_mode(scores: pd.DataFrame, modes: list[str], target: str) -> str:
    """``selection.mode: best``: of ``modes`` (model.modes) validated out of sample, the one with the
    smallest mean over the validation's splits of the median relative error over cells (``scores``:
    results/model/validation.csv, :func:`collat.model.validation.leaderboard`), on ``target``; only a mode
    scored on every split competes. ValueError when none is."""
    from collat.model.validation import leaderboard

    board = leaderboard(scores[scores["target"] == target])
    splits = board["split"].nunique()
    board = board[board["model"].isin([m for m in modes if m not in NOT_OUT_OF_SAMPLE])]
    mean = board.groupby("model")["median_mape"].agg(["mean", "size"])
    mean = mean[mean["size"] == splits]["mean"].sort_index()
    if mean.empty:
        raise ValueError(f"selection.mode best: no mode of {modes} was validated on every split of target {target}")
    return str(mean.idxmin())


def what_if_mode(predictions: pd.DataFrame, mapping: str, preferred: str | None = None) -> str:
    """The mode that picks under ``mapping`` on a machine nobody measured (``predictions``: its
    results/model/what_if/{name}.parquet): ``preferred`` (the selection's mode) where it priced that
    mapping, else the most corrected mode that did: hybrid (only where the machine places ranks as
    the measured one did), calibrated, openmpi. ValueError when none did."""
    priced = set(predictions.loc[predictions["mapping"] == mapping, "mode"])
    for mode in ([preferred] if preferred else []) + ["hybrid", "calibrated", "openmpi"]:
        if mode in priced:
            return mode
    raise ValueError(f"no mode priced map-by {mapping}")


def _latency(lat: pd.Series, cells: pd.DataFrame, algorithm) -> np.ndarray:
    """Measured latency of ``algorithm`` (a column of ids or one id) at each of ``cells``; NaN where
    it was not measured."""
    return lat.reindex(pd.MultiIndex.from_frame(cells[CELL].assign(algorithm=algorithm))).to_numpy()


def _within_and_geomean(r: pd.Series) -> tuple[float, float]:
    """Share of regrets within 10 % of the best and their geometric mean (NaN without any)."""
    if not len(r):
        return np.nan, np.nan
    return float((r <= 1.1).mean()), float(np.exp(np.log(r).mean()))


def predicted_best(predictions: pd.DataFrame, candidates: dict | None = None, mode: str = "openmpi",
                   target: str = "max", default: bool = False) -> pd.DataFrame:
    """Per cell, the algorithm with the smallest expected latency (:func:`_ranked`; ties: the smaller
    id, so the default wins a tie); ``candidates`` restricts the forced algorithms per operation
    ({operation: [ids]}); ``default``: OpenMPI's default (0) is a candidate too."""
    p = predictions[(predictions["mode"] == mode) & (predictions["target"] == target)
                    & (predictions["algorithm"] >= (0 if default else 1)) & predictions["predicted"].notna()]
    if candidates is not None:
        keep = np.array(p["algorithm"] == 0)
        for op, ids in candidates.items():
            keep |= ((p["operation"] == op) & p["algorithm"].isin(ids)).to_numpy()
        p = p[keep]
    best = _ranked(p).drop_duplicates(CELL, keep="first")
    keep = CELL + ["algorithm", "predicted"] + (["segsize"] if "segsize" in best else [])
    return best[keep].rename(columns={"algorithm": "predicted_best"}).reset_index(drop=True)


def with_segments(predictions: pd.DataFrame, ratios: pd.DataFrame, mode: str) -> pd.DataFrame:
    """The chooser's ``predictions`` with a ``segsize`` column (0: whole messages) and, for every
    forced algorithm OpenMPI cuts into segments and segment size smaller than the message, a row
    priced as its whole-message prediction times the model's ratio of the two prices (``ratios``,
    results/model/segments.parquet: the openmpi mode's for the openmpi chooser, the calibrated
    mode's for the calibrated mode and the hybrid, whose correction, measured on whole messages,
    carries over). Nothing measured prices a segment size: those rows are the model's bet."""
    pricing = "openmpi" if mode == "openmpi" else "calibrated"
    r = ratios[(ratios["mode"] == pricing) & (ratios["size"] > ratios["segsize"])].drop(columns="mode")
    keys = ["operation", "algorithm", "mapping", "P", "size", "target"]
    cut = predictions.merge(r, on=keys, how="inner")
    ratio = cut.pop("ratio")
    for column in ("predicted", "lower", "upper"):  # an interval as wide, relative to its price, as the message's
        if column in cut:
            cut[column] = cut[column] * ratio
    return pd.concat([predictions.assign(segsize=0), cut], ignore_index=True)


def measured_table(collective: pd.DataFrame, target: str = "avg") -> pd.DataFrame:
    """Median over runs of the measured latency per (cell, algorithm), outliers left out."""
    c = collective[~collective["outlier"] & collective[target].notna()]
    return c.groupby(CELL + ["algorithm"], as_index=False)[target].median().rename(columns={target: "measured"})


def measured_best(measured: pd.DataFrame) -> pd.DataFrame:
    """Per cell where two forced algorithms or more were measured: the fastest of them
    (``measured_best``, ``best_latency``) and how many were compared (``algorithms``)."""
    forced = measured[measured["algorithm"] > 0]
    have = forced.groupby(CELL)["algorithm"].nunique().rename("algorithms").reset_index()
    compared = have[have["algorithms"] >= 2]
    f = forced.merge(compared, on=CELL).sort_values(CELL + ["measured", "algorithm"], kind="stable")
    best = f.drop_duplicates(CELL, keep="first")
    return best.rename(columns={"algorithm": "measured_best", "measured": "best_latency"}).reset_index(drop=True)


def measured_candidates(predictions: pd.DataFrame, measured: pd.DataFrame, default: bool) -> pd.DataFrame:
    """The rows of ``predictions`` whose (cell, algorithm) was measured as a forced algorithm, and
    OpenMPI's default wherever ``default``: what a pick scored against the measured best may choose."""
    forced = measured.loc[measured["algorithm"] > 0, CELL + ["algorithm"]]
    keep = predictions.merge(forced, on=CELL + ["algorithm"], how="inner")
    if default:
        keep = pd.concat([keep, predictions[predictions["algorithm"] == 0]], ignore_index=True)
    return keep


ALGORITHMS = ("every", "measured")  # config selection.algorithms: what a rules file may name


def rules_candidates(predictions: pd.DataFrame, measured: pd.DataFrame, algorithms: str) -> pd.DataFrame:
    """The rows of ``predictions`` a rules file may name (config ``selection.algorithms``): every
    row (``every``), or (``measured``) those of a forced algorithm with a cell of ``measured``
    (operation, algorithm, mapping, P, size) under its operation and mapping at any P, and OpenMPI's
    default (algorithm 0)."""
    if algorithms == "every":
        return predictions
    if algorithms != "measured":
        raise ValueError(f"selection.algorithms {algorithms!r}: expected one of {', '.join(ALGORITHMS)}")
    curve = ["operation", "algorithm", "mapping"]
    have = measured.loc[measured["algorithm"] > 0, curve].drop_duplicates()
    keep = pd.MultiIndex.from_frame(predictions[curve]).isin(pd.MultiIndex.from_frame(have))
    return predictions[keep | (predictions["algorithm"] == 0).to_numpy()]


#: :func:`regret`'s summary, one row per (operation, mapping, chooser); none where no cell has two
#: forced algorithms measured (a user who measured OpenMPI's default alone)
REGRET_COLUMNS = ["operation", "mapping", "chooser", "target", "mode", "cells", "algorithms", "complete_share",
                  "unmeasured_share", "foreign_share", "default_share", "within_10pct", "geomean_regret",
                  "median_regret", "max_regret"]


def regret(predictions: pd.DataFrame, collective: pd.DataFrame, target: str = "avg",
           mode: str = "openmpi", default: bool = True,
           algorithms: str = "every", trees=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-cell choices and regrets, summary per operation x mapping x chooser), the model's picks
    made by ``mode`` on its prediction of ``target``, the measured column scored.

    Choosers: ``model`` (the model's pick among the algorithms measured at the cell, and the default
    when ``default``), ``rules_file`` (its pick among the algorithms a rules file may name,
    :func:`rules_candidates` with ``algorithms``: what the rules file tells OpenMPI; scored where
    that algorithm was measured, ``unmeasured_share`` says how often it was not, and
    ``foreign_share`` how often it is of a kind none of the operation's measured algorithms is,
    priced by the physics: :func:`collat.model.transfer.foreign` with ``trees``, config
    ``model.openmpi.trees``; NaN without them) and ``default``.
    The measured best is the best forced algorithm measured at the cell: OpenMPI's default can beat
    it where it runs a shape no forced run of the data had (regret below 1). Each summary row says
    how many cells it scored, how many algorithms were measured in them (``algorithms``) and in
    what share of its cells all of them were (``complete_share``).
    """
    measured = measured_table(collective, target)
    best = measured_best(measured)
    candidates = measured_candidates(predictions, measured, default)
    pick = predicted_best(candidates, None, mode, target, default)
    cells = best.merge(pick, on=CELL, how="inner")
    cells = cells.merge(predicted_best(rules_candidates(predictions, measured, algorithms), None, mode, target,
                                       default)[CELL + ["predicted_best"]]
                        .rename(columns={"predicted_best": "file_pick"}), on=CELL, how="left")
    # the pick among the forced algorithms alone: what compares with the measured best (a forced one)
    cells = cells.merge(predicted_best(measured_candidates(predictions, measured, False), None, mode, target,
                                       False)[CELL + ["predicted_best"]]
                        .rename(columns={"predicted_best": "forced_pick"}), on=CELL, how="left")
    lat = measured.set_index(CELL + ["algorithm"])["measured"]

    cells["mode"] = mode
    cells["model_latency"] = _latency(lat, cells, cells["predicted_best"])
    cells["rules_file_latency"] = _latency(lat, cells, cells["file_pick"])
    cells["default_latency"] = _latency(lat, cells, 0)
    for chooser in CHOOSERS:
        cells[f"regret_{chooser}"] = cells[f"{chooser}_latency"] / cells["best_latency"]
    rows = []
    picks = {"model": "predicted_best", "rules_file": "file_pick"}
    forced = measured[measured["algorithm"] > 0]
    alien = pd.Series(np.nan, index=cells.index)  # a pick of a kind none of the operation's measured ones is
    if trees is not None:
        from collat.model.transfer import foreign

        picked = cells[["operation"]].assign(algorithm=cells["file_pick"].fillna(-1).astype(int))
        alien = pd.Series(foreign(picked, forced[["operation", "algorithm"]].drop_duplicates(), trees).astype(float),
                          index=cells.index)
    for (op, mapping), g in cells.groupby(["operation", "mapping"]):
        algorithms = forced.merge(g[CELL], on=CELL)["algorithm"].nunique()
        for chooser in CHOOSERS:
            r = g[f"regret_{chooser}"].dropna()
            chose_default = (g[picks[chooser]] == 0).mean() if chooser in picks else 1.0
            within, geomean = _within_and_geomean(r)
            rows.append({"operation": op, "mapping": mapping, "chooser": chooser, "target": target, "mode": mode,
                         "cells": len(r), "algorithms": algorithms,
                         "complete_share": float((g["algorithms"] == algorithms).mean()),
                         "unmeasured_share": float(1 - len(r) / len(g)),
                         "foreign_share": float(alien[g.index].mean()) if chooser == "rules_file" else np.nan,
                         "default_share": float(chose_default), "within_10pct": within, "geomean_regret": geomean,
                         "median_regret": float(r.median()) if len(r) else np.nan,
                         "max_regret": float(r.max()) if len(r) else np.nan})
    return cells, pd.DataFrame(rows, columns=REGRET_COLUMNS)


def rules_faninout(trees, operation: str, given: dict | None = None) -> dict[int, int]:
    """The fan-in/out a rules file writes for each algorithm of ``operation``: ``given`` (config
    ``selection.faninout``, algorithm -> value) where it names one, else the ``fanout`` of the
    algorithm's shape in ``trees`` (config ``model.openmpi.trees``: the chain's 4, what a forced
    chain runs and the model prices it with). OpenMPI hands a rule's fan-in/out to the chain, which
    with 0 runs a single chain (fan-out 1, the pipeline's shape); the other shapes take none."""
    out = {int(t["algorithm"]): int(t["fanout"]) for t in trees
           if t["operation"] == operation and t.get("fanout") is not None}
    out.update({int(k): int(v) for k, v in (given or {}).items()})
    return out


def rules_blocks(best: pd.DataFrame, faninout: dict) -> list[tuple[int, list[tuple[int, int, int, int]]]]:
    """Compressed rule blocks of one collective and mapping from a predicted_best frame.

    Message-size rules keep only the sizes where the choice changes; consecutive communicator
    sizes with identical rules share one block. ``faninout`` maps algorithm -> fan-in/out (chain: 4);
    a ``segsize`` column (:func:`with_segments`) gives each pick's segment size (else 0).
    """
    blocks: list[tuple[int, list]] = []
    for P, g in best.sort_values(["P", "size"]).groupby("P"):
        rules, last = [], None
        segsizes = g["segsize"] if "segsize" in g else np.zeros(len(g), dtype=np.int64)
        for size, alg, seg in zip(g["size"], g["predicted_best"], segsizes):
            if (alg, seg) != last:
                rules.append((0 if not rules else int(size), int(alg), int(faninout.get(int(alg), 0)), int(seg)))
                last = (alg, seg)
        if blocks and blocks[-1][1] == rules:
            continue
        blocks.append((int(P), rules))
    return blocks


def rules_text(best: pd.DataFrame, trees, faninout: dict | None = None) -> str:
    """The rules file of one mapping from its predicted_best frame: :func:`rules_blocks` of every
    operation it picks an algorithm for, in OpenMPI's order, each algorithm with the fan-in/out of
    :func:`rules_faninout` (``trees``, ``faninout``: config ``model.openmpi.trees`` and
    ``selection.faninout``). An operation nobody measured, such as bcast in a reduce-only campaign,
    is left to OpenMPI's fixed rules: a collective with no block would make OpenMPI drop the whole
    file."""
    blocks = {op: rules_blocks(best[best["operation"] == op], rules_faninout(trees, op, faninout))
              for op in COLLECTIVE_IDS}
    return write_rules({op: b for op, b in blocks.items() if b})


UNSEEN_COLUMNS = ["operation", "mapping", "left_out", "target", "model", "cells", "within_10pct", "geomean_regret",
                  "left_out_best", "left_out_picked", "left_out_found"]


def _with_sd(folds: pd.DataFrame, expected: bool) -> pd.DataFrame:
    """Validation predictions with the column ``sd`` of :func:`_ranked` from their own intervals
    (:func:`price_sd`; a fold's intervals are the model's own error, no run spread in them) when
    ``expected``; a training cell the fold priced has none (measured): its prediction ranks it."""
    return folds.assign(sd=price_sd(folds["predicted"], folds["upper"])) if expected and "upper" in folds else folds


def regret_unseen_algorithm(folds: pd.DataFrame, collective: pd.DataFrame, target: str = "avg",
                            model: str = "calibrated", expected: bool = True) -> pd.DataFrame:
    """The selection under the validation's unseen_algorithm split: in each fold the model was
    fitted without one algorithm and priced every algorithm of the operation; its pick among the
    algorithms measured at a cell is scored against their measured best, where two or more were.

    ``folds`` is results/model/validation_predictions.parquet. Per operation x mapping x left-out
    algorithm: cells, within_10pct, geomean_regret, left_out_best (cells where the left-out
    algorithm is the measured best), left_out_picked (cells where the model picked it) and
    left_out_found (of the cells where it is best, the share where the model picked it). The pick
    is the smallest expected latency (:func:`_with_sd`) when ``expected``, else the smallest
    prediction.
    """
    f = folds[(folds["model"] == model) & (folds["split"] == "unseen_algorithm") & (folds["target"] == target)
              & (folds["algorithm"] > 0) & folds["predicted"].notna()]
    f = _with_sd(f, expected)
    if f.empty:
        return pd.DataFrame(columns=UNSEEN_COLUMNS)
    measured = measured_table(collective, target)
    best = measured_best(measured)
    lat = measured.set_index(CELL + ["algorithm"])["measured"]
    rows = []
    for fold, g in f.groupby("fold", sort=True):
        op, left_out = fold.split()[0], int(fold.split()[1])
        pick = _ranked(measured_candidates(g, measured, False)).drop_duplicates(CELL)
        cells = best.merge(pick[CELL + ["algorithm"]].rename(columns={"algorithm": "pick"}), on=CELL)
        cells["regret"] = _latency(lat, cells, cells["pick"]) / cells["best_latency"]
        for mapping, c in cells.groupby("mapping", sort=True):
            r = c["regret"].dropna()
            is_best = c["measured_best"] == left_out
            within, geomean = _within_and_geomean(r)
            rows.append({"operation": op, "mapping": mapping, "left_out": left_out, "target": target, "model": model,
                         "cells": len(r), "within_10pct": within, "geomean_regret": geomean,
                         "left_out_best": int(is_best.sum()), "left_out_picked": int((c["pick"] == left_out).sum()),
                         "left_out_found": float((c.loc[is_best, "pick"] == left_out).mean()) if is_best.any()
                         else np.nan})
    return pd.DataFrame(rows, columns=UNSEEN_COLUMNS)


SPARSE_COLUMNS = ["operation", "mapping", "target", "model", "cells", "within_10pct", "geomean_regret",
                  "default_within_10pct", "default_geomean_regret", "neighbour_within_10pct",
                  "neighbour_geomean_regret"]


def neighbour_picks(measured: pd.DataFrame, cells: pd.DataFrame, default: bool = True) -> np.ndarray:
    """For each of ``cells`` (operation, mapping, P, size), the algorithm measured fastest at the
    nearest other measured P of the same operation, mapping and size (the smaller P when two are as
    near; ties in latency: the smaller id), among the forced algorithms and, when ``default``,
    OpenMPI's default, at a P where all of them were measured; -1 where there is none.

    A reference for a pick at a P nobody measured that a model cannot be expected to beat: a
    measurement of every candidate a few P away (on the study's data the next measured P, 4 away,
    where the sparse_P split's model saw the measurements 32 P apart). Where it is poor, the best
    algorithm changes faster with P than measurements can follow (or than their noise allows)."""
    candidates = measured[measured["algorithm"] >= (0 if default else 1)]
    complete = measured_best(measured)[CELL]
    if default:
        complete = complete.merge(candidates.loc[candidates["algorithm"] == 0, CELL], on=CELL)
    best = (candidates.merge(complete, on=CELL).sort_values(CELL + ["measured", "algorithm"], kind="stable")
            .drop_duplicates(CELL)[CELL + ["algorithm"]])
    out = np.full(len(cells), -1, dtype=np.int64)
    where = cells.reset_index(drop=True).groupby(["operation", "mapping", "size"], sort=False).indices
    for key, g in best.groupby(["operation", "mapping", "size"], sort=False):
        rows = where.get(key)
        if rows is None or len(g) < 2:
            continue
        Q, alg = g["P"].to_numpy(), g["algorithm"].to_numpy()  # sorted by P
        P = cells["P"].to_numpy()[rows]
        i = np.searchsorted(Q, P)  # Q[i] >= P
        below = np.where(i > 0, i - 1, -1)
        above = np.where((i < len(Q)) & (Q[np.minimum(i, len(Q) - 1)] == P), i + 1, i)
        above = np.where(above < len(Q), above, -1)
        d_below = np.where(below >= 0, P - Q[np.maximum(below, 0)], np.inf)
        d_above = np.where(above >= 0, Q[np.maximum(above, 0)] - P, np.inf)
        pick = np.where(d_below <= d_above, below, above)
        out[rows] = np.where(pick >= 0, alg[np.maximum(pick, 0)], -1)
    return out


def regret_sparse_P(folds: pd.DataFrame, collective: pd.DataFrame, target: str = "avg", model: str = "hybrid",
                    default: bool = True, expected: bool = True) -> pd.DataFrame:
    """The selection at communicator sizes nobody measured: the validation's sparse_P split, whose
    model saw every ``sparse_every``-th measured P only. At each test cell (operation, mapping, P,
    size) where the fold priced every forced algorithm measured there (and the default when ``default``), the pick
    is the smallest expected latency (:func:`_with_sd`; the smallest prediction unless ``expected``);
    its regret is scored against the measured best forced algorithm, beside OpenMPI's default on the
    same cells and the pick of the measurements at the nearest other measured P (:func:`neighbour_picks`).

    ``folds`` is results/model/validation_predictions.parquet. Per operation x mapping: cells,
    within_10pct and geomean_regret of the pick, of the default and of the neighbour's pick.
    """
    f = folds[(folds["model"] == model) & (folds["split"] == "sparse_P") & (folds["target"] == target)
              & (folds["algorithm"] >= (0 if default else 1)) & folds["predicted"].notna()]
    f = _with_sd(f, expected)
    if f.empty:
        return pd.DataFrame(columns=SPARSE_COLUMNS)
    measured = measured_table(collective, target)
    best = measured_best(measured)
    # the fold must have priced every algorithm measured at the cell (and the default when asked)
    candidates = measured_candidates(f, measured, default)
    wanted = measured[measured["algorithm"] > 0].groupby(CELL)["algorithm"].nunique().rename("wanted")
    priced = candidates[candidates["algorithm"] > 0].groupby(CELL)["algorithm"].nunique().rename("priced")
    both = pd.concat([wanted, priced], axis=1, join="inner").reset_index()
    complete = both.loc[both["wanted"] == both["priced"], CELL]
    if default:
        complete = complete.merge(f.loc[f["algorithm"] == 0, CELL], on=CELL)
    pick = (_ranked(candidates.merge(complete, on=CELL))
            .drop_duplicates(CELL)[CELL + ["algorithm"]].rename(columns={"algorithm": "pick"}))
    cells = best.merge(pick, on=CELL)
    lat = measured.set_index(CELL + ["algorithm"])["measured"]
    cells["regret"] = _latency(lat, cells, cells["pick"]) / cells["best_latency"]
    cells["default_regret"] = _latency(lat, cells, 0) / cells["best_latency"]
    cells["neighbour_regret"] = _latency(lat, cells, neighbour_picks(measured, cells, default)) / cells["best_latency"]
    rows = []
    for (op, mapping), c in cells.groupby(["operation", "mapping"], sort=True):
        r, d, n = c["regret"].dropna(), c["default_regret"].dropna(), c["neighbour_regret"].dropna()
        (within, geomean), (d_within, d_geomean) = _within_and_geomean(r), _within_and_geomean(d)
        n_within, n_geomean = _within_and_geomean(n)
        rows.append({"operation": op, "mapping": mapping, "target": target, "model": model, "cells": len(r),
                     "within_10pct": within, "geomean_regret": geomean, "default_within_10pct": d_within,
                     "default_geomean_regret": d_geomean, "neighbour_within_10pct": n_within,
                     "neighbour_geomean_regret": n_geomean})
    return pd.DataFrame(rows, columns=SPARSE_COLUMNS)
