"""Segmented linear regression of collective latency against P (study eq. 12) with honest validation.

For one (operation, algorithm, mapping, size, target)::

    T(P) = b0 + b1 x + sum_i (b2_i z_i + b3_i x z_i)                               (study eq. 12)

``z_i`` is the dummy of bin i = the number of active units of the level the mapping fills one
after another (sockets under map-by core, nodes under map-by socket, none under map-by node;
:func:`collat.model.placement.active_units`), one dummy per bin after the first. The slope in bin i is
``b1 + b3_i``: the cost of one more process there. The regressor ``x`` depends on the form:

* ``P``       -- x = P (linear and chain algorithms);
* ``log2P``   -- x = log2(P) (the paper's text for the binary tree);
* ``log2P+P`` -- x = P plus one global log2(P) term (what the study's code fitted for the binary
  tree; it reproduces the published R² in all six binary cells, ``log2P`` does not at map-by node).

Validation: in-sample R² and adjusted R²; K-fold cross-validated R² with folds over the distinct
P values (every row of one P in the same fold); extrapolation R²: fit on P up to a fraction of the
machine, score on the rest, unseen bins continuing the last fitted bin's line.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

FORMS = ("P", "log2P", "log2P+P")


def design(P, bins, form: str, n_bins: int | None = None, lowest: int | None = None) -> tuple[np.ndarray, list[str]]:
    """The design matrix of study eq. 12 and its column names: const, [log2P], x, then z[k] and x:z[k]
    for bins k above the lowest (up to ``n_bins``).

    ``bins`` holds the bin (active units, 1-based) of each row; columns are named by the bin's
    count of active units so that coefficients read as 'with k sockets active'.
    """
    if form not in FORMS:
        raise ValueError(f"regression form {form!r}: expected one of {', '.join(FORMS)}")
    P = np.asarray(P, dtype=float)
    bins = np.asarray(bins, dtype=int)
    x = np.log2(P) if form == "log2P" else P
    cols, names = [np.ones_like(P)], ["const"]
    if form == "log2P+P":
        cols.append(np.log2(P))
        names.append("log2P")
    xname = "log2P" if form == "log2P" else "P"
    cols.append(x)
    names.append(xname)
    if lowest is None:
        lowest = int(bins.min()) if len(bins) else 1
    top = int(bins.max()) if n_bins is None else n_bins
    for k in range(lowest + 1, top + 1):
        z = (bins == k).astype(float)
        cols += [z, x * z]
        names += [f"z[{k}]", f"{xname}:z[{k}]"]
    return np.column_stack(cols), names


def fit(P, y, bins, form: str) -> dict:
    """OLS fit of study eq. 12 (statsmodels): coefficients, standard errors, covariance, R², adjusted R²."""
    # here, and not statsmodels.api (2.0 s against 1.5 s): importing it costs every script that only predicts
    from statsmodels.regression.linear_model import OLS

    X, names = design(P, bins, form)
    res = OLS(np.asarray(y, float), X).fit()
    return {"params": np.asarray(res.params), "bse": np.asarray(res.bse), "cov": np.asarray(res.cov_params()),
            "r2": float(res.rsquared),
            "r2_adj": float(res.rsquared_adj), "n": int(res.nobs), "form": form, "columns": names,
            "min_bin": int(np.min(bins))}


def predict(model: dict, P, bins) -> np.ndarray:
    """Predictions of a fitted model; bins beyond the fitted ones continue the last fitted bin's line,
    bins below the lowest fitted one use the first bin's line."""
    return _design_on(model["columns"], model["min_bin"], model["form"], P, bins) @ np.asarray(model["params"])


def _design_on(columns: list[str], min_bin: int, form: str, P, bins) -> np.ndarray:
    """[rows, columns]: the design of rows (P, bins) on the columns of a fit (:func:`predict` is it
    times the fit's coefficients): bins clipped to the fitted ones, a term the fit has not, 0."""
    fitted = [int(c[2:-1]) for c in columns if c.startswith("z[")]
    last = max(fitted, default=min_bin)
    X, names = design(P, np.clip(np.asarray(bins, int), min_bin, last), form, n_bins=last, lowest=min_bin)
    column = {n: j for j, n in enumerate(columns)}
    out = np.zeros((len(X), len(columns)))
    for i, n in enumerate(names):
        if n in column:
            out[:, column[n]] = X[:, i]
    return out


def fit_predict(P_train, y_train, bins_train, P_test, bins_test, form) -> np.ndarray:
    """Least-squares fit of study eq. 12 on the training rows, predictions for the test rows (no
    standard errors: the fast path of cross-validation and validation splits). Least squares is
    linear in y: the predictions are :func:`prediction_operator` times ``y_train``."""
    return prediction_operator(P_train, bins_train, P_test, bins_test, form) @ np.asarray(y_train, float)


def prediction_operator(P_train, bins_train, P_test, bins_test, form) -> np.ndarray:
    """The matrix H [test, train] with predictions = H y_train for every y measured at the training
    rows: the test rows' design (bins beyond the fitted ones continued as :func:`predict` does)
    times the minimum-norm least-squares solution pinv(X_train) (numpy's ``lstsq`` and ``pinv``
    cut the same small singular values). One per distinct (training P and bins, test P and bins,
    form): the sizes, targets and cleanings of one curve mostly share their P values, and the
    stages fit thousands of them."""
    arrays = (np.asarray(P_train, float), np.asarray(bins_train, np.int64), np.asarray(P_test, float),
              np.asarray(bins_test, np.int64))
    return _operator(form, *(np.ascontiguousarray(a).tobytes() for a in arrays))


@lru_cache(maxsize=512)
def _operator(form: str, P_train: bytes, bins_train: bytes, P_test: bytes, bins_test: bytes) -> np.ndarray:
    """:func:`prediction_operator` of the arrays as bytes (float64 P, int64 bins), cached."""
    Ptr, btr = np.frombuffer(P_train, float), np.frombuffer(bins_train, np.int64)
    X, names = design(Ptr, btr, form)
    out = _design_on(names, int(btr.min()), form, np.frombuffer(P_test, float),
                     np.frombuffer(bins_test, np.int64)) @ np.linalg.pinv(X)
    out.flags.writeable = False
    return out


def cv_predictions(P, y, bins, form: str, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Out-of-fold predictions, folds over the distinct P values (shuffled with ``seed``)."""
    P = np.asarray(P)
    levels, level = np.unique(P, return_inverse=True)
    out = np.full(len(P), np.nan)
    if len(levels) < folds:
        return out
    fold = _level_folds(len(levels), folds, seed)[level.ravel()]
    y, bins = np.asarray(y, float), np.asarray(bins)
    for f in range(folds):
        test = fold == f
        out[test] = fit_predict(P[~test], y[~test], bins[~test], P[test], bins[test], form)
    return out


@lru_cache(maxsize=64)
def _level_folds(n_levels: int, folds: int, seed: int) -> np.ndarray:
    """The fold of each of ``n_levels`` distinct P values: scikit-learn's shuffled KFold."""
    from sklearn.model_selection import KFold  # here: scikit-learn's import (1 s) only where folds are drawn

    out = np.empty(n_levels, dtype=np.int64)
    for f, (_, test) in enumerate(KFold(folds, shuffle=True, random_state=seed).split(np.arange(n_levels))):
        out[test] = f
    out.flags.writeable = False
    return out


def extrapolation_predictions(P, y, bins, form: str, P_max_train: float) -> np.ndarray:
    """Predictions for P > P_max_train from a fit on P <= P_max_train (NaN where trained)."""
    P = np.asarray(P)
    train = P <= P_max_train
    out = np.full(len(P), np.nan)
    if len(np.unique(P[train])) < 3 or train.all():
        return out
    out[~train] = fit_predict(P[train], np.asarray(y)[train], np.asarray(bins)[train], P[~train],
                                 np.asarray(bins)[~train], form)
    return out


def _r2_from_sums(ss_res, ss_tot, n):
    """R² from its sums as sklearn's r2_score has it: 1 - SS_res / SS_tot; with SS_tot = 0, 1 for an
    exact fit, else 0; NaN below 2 rows (arrays or scalars)."""
    ss_res, ss_tot, n = np.asarray(ss_res, float), np.asarray(ss_tot, float), np.asarray(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(ss_tot > 0, 1.0 - ss_res / ss_tot, np.where(ss_res == 0, 1.0, 0.0))
    return np.where(n >= 2, value, np.nan)


def r2(measured, predicted) -> float:
    """R² on the rows where both are known (NaN when fewer than 2), as sklearn's r2_score computes it
    (:func:`_r2_from_sums`; tests/test_regression.py pins it to r2_score, whose input checks cost a
    millisecond a call where the stages score thousands of groups)."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    ok = np.isfinite(m) & np.isfinite(p)
    m, p = m[ok], p[ok]
    if len(m) < 2:
        return float("nan")
    return float(_r2_from_sums(((m - p) ** 2).sum(), ((m - m.mean()) ** 2).sum(), len(m)))


def mape(measured, predicted) -> float:
    """Median absolute relative error |predicted - measured| / measured (NaN without rows)."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    return float(np.median(np.abs(p - m) / m)) if len(m) else float("nan")


def group_scores(frame: pd.DataFrame, keys: list[str], measured: str = "measured",
                 predicted: str = "predicted") -> pd.DataFrame:
    """:func:`r2` and :func:`mape` of every group of ``keys`` at once: columns ``keys``, ``n`` (rows
    where both are known), ``r2`` (:func:`_r2_from_sums`), ``mape``, sorted by ``keys``; a group with
    no known row has n = 0."""
    m, p = frame[measured].to_numpy(float), frame[predicted].to_numpy(float)
    ok = np.isfinite(m) & np.isfinite(p)
    key = frame[keys]
    d = pd.DataFrame({"m": np.where(ok, m, np.nan), "res": np.where(ok, (p - m) ** 2, np.nan),
                      "rel": np.where(ok, np.abs(p - m) / m, np.nan)}, index=frame.index)
    by = [key[k] for k in keys]
    g = d.groupby(by, sort=True, dropna=False)
    mean = g["m"].transform("mean")
    d["tot"] = (d["m"] - mean) ** 2
    g = d.groupby(by, sort=True, dropna=False)
    out = pd.DataFrame({"n": g["m"].count(), "ss_res": g["res"].sum(), "ss_tot": g["tot"].sum(),
                        "mape": g["rel"].median()})
    out["r2"] = _r2_from_sums(out["ss_res"].to_numpy(), out["ss_tot"].to_numpy(), out["n"].to_numpy())
    out.index.names = keys
    return out.reset_index()[keys + ["n", "r2", "mape"]]


def slopes(model: dict) -> dict[str, list]:
    """Per-bin slope b1 + b3_i of x with its standard error (the cost of one more process in bin i):
    columns ``term``, ``estimate``, ``se`` as lists."""
    xname = "log2P" if model["form"] == "log2P" else "P"
    names, params, cov = model["columns"], model["params"], model["cov"]
    ix = names.index(xname)
    rows = [{"term": f"slope[{model['min_bin']}]", "estimate": params[ix], "se": float(np.sqrt(cov[ix, ix]))}]
    for j, c in enumerate(names):
        if c.startswith(f"{xname}:z["):
            var = cov[ix, ix] + cov[j, j] + 2 * cov[ix, j]
            rows.append({"term": f"slope[{c[len(xname) + 3:-1]}]", "estimate": params[ix] + params[j],
                         "se": float(np.sqrt(max(var, 0.0)))})
    return {key: [r[key] for r in rows] for key in ("term", "estimate", "se")}


def form_of(forms: list[dict], operation: str, algorithm: int) -> str:
    """The configured regressor form of an (operation, algorithm); ``P`` unless listed."""
    for f in forms:
        if f["operation"] == operation and int(f["algorithm"]) == int(algorithm):
            return f["form"]
    return "P"


def segmented_models(collective: pd.DataFrame, machine: dict, options: dict, paper_cleaning: dict | None):
    """Fit study eq. 12 for every (operation, algorithm, mapping, size) x target x cleaning.

    Returns (scores, coefficients, predictions). ``options`` is config ``regression``; the
    ``paper`` cleaning is scored only at its size (see :func:`collat.ingest.quality.cleaning_mask`).
    """
    from collat.model.placement import active_units, total_cores
    from collat.ingest.quality import cleaning_mask

    cores = total_cores(machine)
    p_split = options["extrapolation_fraction"] * cores
    grid_P = np.arange(2, cores + 1, options.get("grid_step", 1))
    masks = {c: cleaning_mask(collective, c, paper_cleaning) for c in options["cleanings"]}
    scores, coefs, preds = [], [], []
    keys = ["operation", "algorithm", "mapping", "size"]
    # plain arrays, one lookup per group (a DataFrame filter per cleaning x target costs more than the fits)
    keep = {c: m.to_numpy(bool) for c, m in masks.items()}
    P_all, run_all = collective["P"].to_numpy(), collective["run"].to_numpy()
    y_all = {t: collective[t].to_numpy(float) for t in options["targets"]}
    names = collective["algorithm_name"].to_numpy(object)
    for (op, alg, mapping, size), rows in sorted(collective.groupby(keys, sort=True).indices.items()):
        form = form_of(options["forms"], op, alg)
        name = names[rows[0]]
        for cleaning in options["cleanings"]:
            sel = rows[keep[cleaning][rows]]
            for target in options["targets"]:
                d = sel[np.isfinite(y_all[target][sel])]
                ident = {"operation": op, "algorithm": int(alg), "algorithm_name": name, "mapping": mapping,
                         "size": int(size), "target": target, "cleaning": cleaning, "form": form}
                if d.size == 0:
                    continue
                P, y = P_all[d], y_all[target][d]
                bins = active_units(P, mapping, machine)
                n_params = design(P, bins, form)[0].shape[1]
                if len(np.unique(P)) <= n_params:
                    scores.append({**ident, "n": len(d), "r2": np.nan, "r2_adj": np.nan, "r2_cv": np.nan,
                                   "r2_extrapolation": np.nan, "n_extrapolation": 0, "mape": np.nan})
                    continue
                model = fit(P, y, bins, form)
                fitted = predict(model, P, bins)
                cv = cv_predictions(P, y, bins, form, options["cv_folds"], options["seed"])
                ex = extrapolation_predictions(P, y, bins, form, p_split)
                scores.append({**ident, "n": model["n"], "r2": model["r2"], "r2_adj": model["r2_adj"],
                               "r2_cv": r2(y, cv), "r2_extrapolation": r2(y, ex),
                               "n_extrapolation": int(np.isfinite(ex).sum()),
                               "mape": mape(y, fitted)})
                sl = slopes(model)
                coefs.append((ident, {"term": model["columns"] + sl["term"],
                                      "estimate": np.r_[model["params"], sl["estimate"]],
                                      "se": np.r_[model["bse"], sl["se"]]}))
                preds.append((ident, {"P": P, "run": run_all[d], "measured": y, "predicted": fitted,
                                      "predicted_cv": cv, "predicted_extrapolation": ex}))
                if cleaning == options["grid_cleaning"]:
                    nan = np.full(len(grid_P), np.nan)
                    preds.append((ident, {"P": grid_P, "run": np.full(len(grid_P), -1), "measured": nan,
                                          "predicted": predict(model, grid_P, active_units(grid_P, mapping, machine)),
                                          "predicted_cv": nan, "predicted_extrapolation": nan}))
    scores = pd.DataFrame(scores, columns=IDENT + SCORE_COLUMNS)
    return scores, _stack(coefs, ["term", "estimate", "se"]), _stack(preds, PREDICTION_COLUMNS)


IDENT = ["operation", "algorithm", "algorithm_name", "mapping", "size", "target", "cleaning", "form"]
SCORE_COLUMNS = ["n", "r2", "r2_adj", "r2_cv", "r2_extrapolation", "n_extrapolation", "mape"]
PREDICTION_COLUMNS = ["P", "run", "measured", "predicted", "predicted_cv", "predicted_extrapolation"]


def _stack(records: list[tuple[dict, dict]], columns: list[str]) -> pd.DataFrame:
    """One frame from (identity, column arrays) records without a per-record DataFrame."""
    lengths = np.array([len(next(iter(cols.values()))) for _, cols in records], dtype=int)
    out = {}
    for key in IDENT:
        out[key] = np.repeat(np.array([ident[key] for ident, _ in records], dtype=object), lengths)
    for c in columns:
        out[c] = np.concatenate([np.asarray(cols[c]) for _, cols in records]) if records else []
    frame = pd.DataFrame(out)
    return frame.astype({"operation": "string", "algorithm": "int64", "algorithm_name": "string",
                         "mapping": "string", "size": "int64", "target": "string", "cleaning": "string",
                         "form": "string"})
