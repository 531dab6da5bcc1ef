"""An experiment for the issue on algorithms nobody measured: one learned model of the calibrated
mode's log residual, from what each run sends (not which algorithm it is), against the hybrid on
the validation's unseen_algorithm folds.

    .venv/bin/python benchmarks/learned_correction.py [--results results] [--config config/config.yaml]

Reads a finished run's results/model/validation_predictions.parquet: per unseen_algorithm fold
(one algorithm held out), the calibrated mode refitted without it prices the training cells and the
test cells. Features of a cell (operation, algorithm, mapping, P, size) come from the messages
OpenMPI sends (collat.model.shapes.messages, at a large count: the shape of the run) and the
placement: messages and bytes through the root, the largest number a rank sends or receives,
the share of bytes over each channel, the messages over the slowest channel, rounds, nodes
spanned, log P, log size, the calibrated price. The algorithm's number is not a feature: an
algorithm nobody measured is a new point in the same space.

A scikit-learn HistGradientBoostingRegressor (quantile loss at 0.1, 0.5, 0.9) is fitted on the
training cells' log(measured / calibrated) of each fold; the prediction is calibrated x
exp(median), the 80 % interval calibrated x exp(q0.1 .. q0.9), and that interval widened by a
margin found on inner folds of the training part (each training algorithm held out in turn; the
80th percentile of how far its cells fall outside: conformalized quantile regression by group).
Printed per operation and mapping:
the median over the held-out curves of each curve's median relative error, for the calibrated
mode, the hybrid, the hybrid without twins, the learned correction and `ensemble`, the geometric
mean of the learned correction and the hybrid without twins (two forecasts with equal weights),
`ensemble_twins`, the same with the hybrid's twins kept where it found one, and the share of test
cells inside each 80 % interval; then how many held-out curves each ensemble prices better and
worse than the hybrid without twins and the hybrid. Nothing is tuned on the folds it reports
(the boosting's settings are scikit-learn's defaults but for the loss).

The validation's calibrated price of a held-out algorithm is the calibration's transfer
(collat.model.transfer), while the boosting learns the residuals of the calibration's own prices:
the two agree only where the transfer weight is 1 (every fold of the study's data).
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=None)
def _facts():
    from collat.config.defaults import openmpi_facts

    return openmpi_facts("4.1")


@functools.lru_cache(maxsize=None)
def _placed(P: int, mapping: str, machine_key: tuple):
    from collat.model.placement import place_arrays

    ranks = place_arrays(P, mapping, dict(machine_key))
    return np.asarray(ranks["node"]), np.asarray(ranks["socket"])


@functools.lru_cache(maxsize=None)
def _messages(operation: str, algorithm: int, P: int, count: int):
    from collat.model.shapes.messages import messages

    msgs = messages(operation, algorithm, P, count, _facts()["trees"], _facts()["default_rules"])
    return np.array(msgs, dtype=float).reshape(-1, 3)


@functools.lru_cache(maxsize=None)
def shape_features(operation: str, algorithm: int, P: int, size: int, mapping: str, machine_key: tuple) -> tuple:
    """What one run sends, from its exact messages (the run's shape: sizes below 2^20 bytes at their
    own count, larger ones scaled from 2^20 bytes)."""
    count = max(size, 1)
    m = _messages(operation, algorithm, P, min(count, 1 << 20))
    node, socket = _placed(P, mapping, machine_key)
    if not len(m):
        return (0.0,) * 12
    src, dst = m[:, 0].astype(int), m[:, 1].astype(int)
    nbytes = m[:, 2] * (count / min(count, 1 << 20))
    inter_node = node[src] != node[dst]
    inter_socket = ~inter_node & (socket[src] != socket[dst])
    total = nbytes.sum()
    sent = np.bincount(src, minlength=P)
    received = np.bincount(dst, minlength=P)
    root = ((src == 0) | (dst == 0))
    slow = inter_node if inter_node.any() else inter_socket
    slow_per_rank = np.bincount(src[slow], minlength=P).max() if slow.any() else 0
    return (len(m) / P, total / count / P, sent.max(), received.max(), root.sum(), nbytes[root].sum() / count,
            nbytes[inter_node].sum() / max(total, 1), nbytes[inter_socket].sum() / max(total, 1),
            slow_per_rank, len(np.unique(node)), np.log2(P), np.log2(max(size, 1)))


FEATURES = ["messages_per_rank", "bytes_per_rank", "max_sent", "max_received", "root_messages", "root_bytes",
            "share_inter_node", "share_inter_socket", "slowest_channel_messages", "nodes", "log2_P", "log2_size",
            "log_calibrated"]


def features(cells: pd.DataFrame, machine: dict) -> np.ndarray:
    key = tuple(sorted(machine.items()))
    cols = ["operation", "algorithm", "mapping", "P", "size"]
    unique = cells[cols].drop_duplicates().reset_index(drop=True)
    rows = np.array([shape_features(o, int(a), int(p), int(s), m, key)
                     for o, a, m, p, s in unique.itertuples(index=False)], dtype=float)
    at = cells[cols].merge(unique.reset_index(), on=cols, how="left")["index"].to_numpy()
    out = np.column_stack([rows[at], np.log(cells["predicted"].to_numpy(float))])
    op = (cells["operation"] == "reduce").to_numpy(float)[:, None]
    return np.hstack([out, op])


def gp_quantiles(X, y, Xt, alphas, cells: int, fitted: dict) -> dict:
    """Quantiles of a Gaussian process's predictive distribution of the log residual: scikit-learn's
    GaussianProcessRegressor, a constant times an RBF kernel with one length per feature (standardized)
    plus white noise, fitted by maximum marginal likelihood on ``cells`` random training cells. The
    first call's kernel is kept in ``fitted`` and reused with no new fit (the inner folds of one
    training part)."""
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    from sklearn.preprocessing import StandardScaler

    if "scaler" not in fitted:
        fitted["scaler"] = StandardScaler().fit(X)
    scaler = fitted["scaler"]
    Xs, Xts = scaler.transform(X), scaler.transform(Xt)
    keep = np.random.default_rng(0).permutation(len(Xs))[:cells]
    if "kernel" in fitted:
        gp = GaussianProcessRegressor(kernel=fitted["kernel"], optimizer=None, normalize_y=True)
    else:
        kernel = ConstantKernel(1.0) * RBF(np.ones(X.shape[1]), (1e-2, 1e3)) + WhiteKernel(0.1, (1e-4, 10.0))
        gp = GaussianProcessRegressor(kernel=kernel, normalize_y=True, random_state=0)
    gp.fit(Xs[keep], y[keep])
    fitted.setdefault("kernel", gp.kernel_)
    mean, sd = gp.predict(Xts, return_std=True)
    return {a: mean + norm.ppf(a) * sd for a in alphas}


def curve_errors(d: pd.DataFrame, column: str) -> pd.Series:
    rel = (d[column] - d["measured"]).abs() / d["measured"]
    return rel.groupby([d["operation"], d["algorithm"], d["mapping"]]).median()


def main() -> int:
    from sklearn.ensemble import HistGradientBoostingRegressor

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=REPO / "results", help="a finished run's results directory")
    ap.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml", help="its config (the machine)")
    ap.add_argument("--target", default="avg")
    ap.add_argument("--learner", choices=["boosting", "gp"], default="boosting",
                    help="gradient boosting's quantiles, or a Gaussian process's mean and sd")
    ap.add_argument("--gp-cells", type=int, default=1000,
                    help="training cells a Gaussian process is fitted on (a random subset, seed 0)")
    args = ap.parse_args()
    machine = yaml.safe_load(args.config.read_text())["machine"]
    machine = {k: v for k, v in machine.items() if k != "name"}
    v = pd.read_parquet(args.results / "model" / "validation_predictions.parquet")
    v = v[(v["split"] == "unseen_algorithm") & (v["target"] == args.target)]
    keys = ["operation", "algorithm", "mapping", "P", "size", "fold"]
    out = []
    for fold, d in v.groupby("fold"):
        cal = d[d["model"] == "calibrated"]
        train = cal[~cal["scored"] & cal["measured"].gt(0) & cal["predicted"].gt(0)]
        test = cal[cal["scored"] & cal["predicted"].gt(0)].copy()
        X, y = features(train, machine), np.log(train["measured"] / train["predicted"]).to_numpy()
        Xt = features(test, machine)

        def quantiles(Xa, ya, Xb, alphas=(0.1, 0.5, 0.9)):
            if args.learner == "gp":
                return gp_quantiles(Xa, ya, Xb, alphas, args.gp_cells, fitted)
            return {a: HistGradientBoostingRegressor(loss="quantile", quantile=a, random_state=0).fit(Xa, ya).predict(Xb)
                    for a in alphas}

        fitted = {}  # the Gaussian process's kernel, fitted once on the whole training part, reused by its inner folds

        q = quantiles(X, y, Xt)
        # conformal widening on inner folds of the training part: each training algorithm held out
        # in turn, the 0.1 / 0.9 quantiles fitted on the others; the margin is the 80th percentile
        # of how far its cells fall outside (conformalized quantile regression, by group)
        groups = train["algorithm"].to_numpy()
        outside = []
        for g in np.unique(groups):
            inner = groups != g
            qi = quantiles(X[inner], y[inner], X[~inner], (0.1, 0.9))
            outside.append(np.maximum(qi[0.1] - y[~inner], y[~inner] - qi[0.9]))
        margin = np.quantile(np.concatenate(outside), 0.8)
        test["learned"] = test["predicted"] * np.exp(q[0.5])
        ratio = np.log(test["measured"] / test["predicted"]).to_numpy()
        test["inside"] = (ratio >= q[0.1]) & (ratio <= q[0.9])
        test["inside_conformal"] = (ratio >= q[0.1] - margin) & (ratio <= q[0.9] + margin)
        for other in ("hybrid", "hybrid_untwinned"):
            o = d[(d["model"] == other) & d["scored"]][keys + ["predicted"]].rename(columns={"predicted": other})
            test = test.merge(o, on=keys, how="left")
        test = test.rename(columns={"predicted": "calibrated"})
        out.append(test)
        print(f"fold {fold}: {len(train)} training cells, {len(test)} test cells", flush=True)
    t = pd.concat(out, ignore_index=True)
    t["ensemble"] = np.sqrt(t["learned"] * t["hybrid_untwinned"])
    # the hybrid's twins (a measured default that ran the same tree) kept, the ensemble elsewhere
    twin = ~np.isclose(t["hybrid"], t["hybrid_untwinned"], rtol=1e-9)
    t["ensemble_twins"] = np.where(twin, t["hybrid"], t["ensemble"])
    models = ["calibrated", "hybrid", "hybrid_untwinned", "learned", "ensemble", "ensemble_twins"]
    per = pd.DataFrame({m: curve_errors(t, m) for m in models})
    table = per.groupby(level=["operation", "mapping"]).median()
    table.loc[("all", "all"), :] = per.median()
    for column, name in (("inside", "inside_80"), ("inside_conformal", "inside_80_conformal")):
        table[name] = t.groupby(["operation", "mapping"])[column].mean()
        table.loc[("all", "all"), name] = t[column].mean()
    print(table.round(3).to_markdown())
    for ours, theirs in (("ensemble", "hybrid_untwinned"), ("ensemble_twins", "hybrid")):
        d = per[ours] - per[theirs]
        print(f"{ours} against {theirs}: {int((d < 0).sum())} held-out curves better, {int((d > 0).sum())} "
              f"worse; mean curve error {per[ours].mean():.3f} against {per[theirs].mean():.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
