"""Segmented linear regression (eq. 12), cleaning profiles and the Table 2/4 reproduction."""

import numpy as np
import pandas as pd
import pytest

from collat.regression import segmented as rg
from collat.model.placement import active_units
from collat.ingest.quality import cleaning_mask

MACHINE = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 4, "numa_per_socket": 4}


def segmented_truth(P, bins):
    """b0 = 2, b1 = 0.05; with 2/3/4 sockets active: intercept +1/+3/+6, slope +0.02/+0.04/+0.1."""
    b2 = {1: 0.0, 2: 1.0, 3: 3.0, 4: 6.0}
    b3 = {1: 0.0, 2: 0.02, 3: 0.04, 4: 0.1}
    return np.array([2 + 0.05 * p + b2[k] + b3[k] * p for p, k in zip(P, bins)])


def test_exact_case_recovers_coefficients_and_slopes():
    P = np.arange(2, 257, 2)
    bins = active_units(P, "core", MACHINE)
    assert bins.min() == 1 and bins.max() == 4 and (bins[P == 64] == 1).all() and (bins[P == 66] == 2).all()
    model = rg.fit(P, segmented_truth(P, bins), bins, "P")
    got = dict(zip(model["columns"], model["params"]))
    assert got == pytest.approx({"const": 2, "P": 0.05, "z[2]": 1, "P:z[2]": 0.02, "z[3]": 3, "P:z[3]": 0.04,
                                 "z[4]": 6, "P:z[4]": 0.1}, abs=1e-9)
    assert model["r2"] == pytest.approx(1.0)
    sl = pd.Series(*[rg.slopes(model)[k] for k in ("estimate", "term")])
    assert sl.to_dict() == pytest.approx({"slope[1]": 0.05, "slope[2]": 0.07, "slope[3]": 0.09, "slope[4]": 0.15})
    y = segmented_truth(P, bins)
    assert rg.r2(y, rg.cv_predictions(P, y, bins, "P", 5, 0)) == pytest.approx(1.0)
    # extrapolation from P <= 128 continues the last fitted bin (2 sockets) over bins 3 and 4
    ex = rg.extrapolation_predictions(P, y, bins, "P", 128)
    assert np.isnan(ex[P <= 128]).all()
    assert ex[P > 128] == pytest.approx(2 + 1 + 0.07 * P[P > 128])


def test_standard_errors_and_noise():
    rng = np.random.default_rng(0)
    P = np.repeat(np.arange(2, 129), 3)
    bins = active_units(P, "socket", MACHINE)  # one node active up to 128 ranks
    assert set(bins) == {1}
    y = 1.0 + 0.1 * P + rng.normal(0, 0.5, len(P))
    model = rg.fit(P, y, bins, "P")
    assert model["columns"] == ["const", "P"]
    assert model["params"][1] == pytest.approx(0.1, abs=3 * model["bse"][1])
    assert model["bse"][1] == pytest.approx(0.5 / np.sqrt(((P - P.mean()) ** 2).sum()), rel=0.2)
    assert model["r2_adj"] < model["r2"] < 1


def test_forms_and_bins_from_the_machine():
    P = np.array([2, 4, 8, 200])
    X, names = rg.design(P, active_units(P, "socket", MACHINE), "log2P+P")
    assert names == ["const", "log2P", "P", "z[2]", "P:z[2]"]
    assert X[:, 1].tolist() == [1, 2, 3, np.log2(200)] and X[:, 3].tolist() == [0, 0, 0, 1]
    X, names = rg.design(P, active_units(P, "node", MACHINE), "log2P")
    assert names == ["const", "log2P"]
    small = dict(MACHINE, cores_per_socket=12)
    assert active_units(np.array([12, 13, 24, 25]), "core", small).tolist() == [1, 2, 2, 3]
    assert active_units(np.array([24, 25]), "socket", small).tolist() == [1, 2]
    with pytest.raises(ValueError, match="expected one of P, log2P"):
        rg.design(P, np.ones(4, int), "quadratic")
    assert rg.form_of([{"operation": "bcast", "algorithm": 5, "form": "log2P+P"}], "bcast", 5) == "log2P+P"
    assert rg.form_of([], "bcast", 5) == "P"


def test_cleaning_profiles():
    df = pd.DataFrame({"operation": ["bcast"] * 4, "algorithm": [0, 0, 0, 1], "mapping": ["core"] * 4,
                       "size": [1, 1, 2, 1], "avg": [5.0, 9.0, 9.0, 9.0], "outlier": [False, True, False, False]})
    paper = {"size": 1, "thresholds": [{"operation": "bcast", "algorithm": 0, "mapping": "core", "max_us": 8}]}
    assert cleaning_mask(df, "paper", paper).tolist() == [True, False, False, True]
    assert cleaning_mask(df, "robust").tolist() == [True, False, True, True]
    assert cleaning_mask(df, "none").all()
    with pytest.raises(ValueError, match="expected one of paper, robust, none"):
        cleaning_mask(df, "strict")


TABLE2 = {0: (0.924, 0.901, 0.899), 1: (0.995, 0.996, 0.995), 2: (0.971, 0.984, 0.987), 5: (0.976, 0.956, 0.891)}
TABLE4 = {0: (0.893, 0.877, 0.912), 1: (0.988, 0.882, 0.941), 2: (0.952, 0.966, 0.976), 4: (0.987, 0.961, 0.363)}


@pytest.fixture(scope="module")
def one_byte(study_tables, config):
    c = study_tables[0]["collective"]
    c = c[c["size"] == 1]
    options = dict(config["regression"], cleanings=["paper", "robust"], targets=["avg", "max"])
    scores, coefs, preds = rg.segmented_models(c, config["machine"], options, config["paper"]["cleaning"])
    return scores, coefs, preds


@pytest.mark.parametrize("operation,table", [("bcast", TABLE2), ("reduce", TABLE4)])
def test_tables_2_and_4_reproduced(one_byte, operation, table):
    scores = one_byte[0]
    s = scores[(scores["operation"] == operation) & (scores["target"] == "avg") & (scores["cleaning"] == "paper")]
    s = s.set_index(["algorithm", "mapping"])["r2"]
    for alg, published in table.items():
        for mapping, value in zip(("core", "socket", "node"), published):
            assert s[(alg, mapping)] == pytest.approx(value, abs=0.02), (operation, alg, mapping)


def test_scores_have_every_column_and_validation(one_byte):
    scores, coefs, preds = one_byte
    for col in ["operation", "algorithm", "mapping", "size", "target", "cleaning", "r2", "r2_adj", "r2_cv",
                "r2_extrapolation", "n"]:
        assert col in scores.columns
    ok = scores.dropna(subset=["r2"])
    assert (ok["r2_adj"] <= ok["r2"] + 1e-12).all()
    assert (ok["r2_cv"] <= ok["r2"] + 1e-9).all()  # out of sample never beats in sample here
    assert set(ok["target"]) == {"avg", "max"} and set(ok["cleaning"]) == {"paper", "robust"}
    # the per-socket slope of the linear bcast, map-by core: one more process costs more on later sockets
    c = coefs[(coefs["operation"] == "bcast") & (coefs["algorithm"] == 1) & (coefs["mapping"] == "core")
              & (coefs["target"] == "avg") & (coefs["cleaning"] == "robust")].set_index("term")
    assert {"slope[1]", "slope[2]", "slope[3]", "slope[4]"} <= set(c.index)
    assert (c["se"] >= 0).all()
    assert c.loc["slope[1]", "estimate"] > 0
    grid = preds[preds["run"] == -1]
    assert set(grid["P"]) == set(range(2, 257)) and grid["measured"].isna().all()


def test_log2_form_is_what_the_text_says_and_misses_at_map_by_node(study_tables, config):
    """The text's log2(P) regressor does not give the published binary R² at map-by node; log2P+P does."""
    c = study_tables[0]["collective"]
    c = c[(c["size"] == 1) & (c["mapping"] == "node") & (c["operation"] == "bcast") & (c["algorithm"] == 5)]
    P, y = c["P"].to_numpy(), c["avg"].to_numpy()
    bins = active_units(P, "node", config["machine"])
    assert rg.fit(P, y, bins, "log2P+P")["r2"] == pytest.approx(0.891, abs=0.002)
    assert rg.fit(P, y, bins, "log2P")["r2"] == pytest.approx(0.832, abs=0.002)


def test_group_scores_by_hand_and_as_sklearn():
    """R² and the median relative error of every group in one pass: by hand, and R² as sklearn's
    r2_score on each group (constant measurements: 1 when exact, else 0; NaN below two rows)."""
    from sklearn.metrics import r2_score

    from collat.regression.segmented import group_scores

    f = pd.DataFrame({
        "g": ["a", "a", "a", "a", "b", "b", "c", "d", "d"],
        "measured": [1.0, 2.0, 3.0, 5.0, 2.0, 2.0, 4.0, 2.0, 2.0],
        "predicted": [1.0, 2.0, 4.0, np.nan, 2.0, 2.0, 5.0, 1.0, 3.0],
    })
    out = group_scores(f, ["g"]).set_index("g")
    # a: the NaN row is left out; SS_res = 1, mean 2, SS_tot = 2 -> 0.5; errors 0, 0, 1/3 -> median 0
    assert out.loc["a", "n"] == 3 and out.loc["a", "r2"] == pytest.approx(0.5) and out.loc["a", "mape"] == 0.0
    assert out.loc["a", "r2"] == pytest.approx(r2_score([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]))
    assert out.loc["b", "r2"] == 1.0 and out.loc["d", "r2"] == 0.0 and out.loc["d", "mape"] == 0.5
    assert out.loc["d", "r2"] == r2_score([2.0, 2.0], [1.0, 3.0])
    assert np.isnan(out.loc["c", "r2"]) and out.loc["c", "mape"] == pytest.approx(0.25)


def test_r2_is_sklearns_r2_score():
    """regression.r2 gives r2_score's number on random data, on a constant measurement (exact fit:
    1, else 0), and leaves out rows that are not finite (NaN below two)."""
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(7)
    for n in (2, 3, 17, 200):
        y, p = rng.lognormal(size=n), rng.lognormal(size=n)
        assert rg.r2(y, p) == pytest.approx(r2_score(y, p), rel=1e-12, abs=1e-12)
    assert rg.r2([3.0, 3.0], [3.0, 3.0]) == r2_score([3.0, 3.0], [3.0, 3.0]) == 1.0
    assert rg.r2([3.0, 3.0], [2.0, 3.0]) == r2_score([3.0, 3.0], [2.0, 3.0]) == 0.0
    assert rg.r2([1.0, 2.0, 4.0], [1.0, np.nan, 3.0]) == pytest.approx(r2_score([1.0, 4.0], [1.0, 3.0]))
    assert np.isnan(rg.r2([1.0, 2.0], [1.0, np.nan]))


def test_prediction_operator_is_the_least_squares_fit():
    """Hand-computed: y = 1 + 2P on P = 1, 2, 3 in one bin; a test row in a bin the training part has
    not seen continues the fitted line (no z term); H maps any y to its fit's predictions."""
    H = rg.prediction_operator([1, 2, 3], [1, 1, 1], [4, 5], [1, 2], "P")
    assert H @ np.array([3.0, 5.0, 7.0]) == pytest.approx([9.0, 11.0])
    # least squares: y = (0, 0, 1) has slope 1/2 and intercept 1/3 - 2/2 = -2/3; at P = 4: 4/3
    assert (H @ np.array([0.0, 0.0, 1.0]))[0] == pytest.approx(4 / 3)
    assert not H.flags.writeable  # cached: shared by every call with the same P and bins
    assert rg.prediction_operator([1, 2, 3], [1, 1, 1], [4, 5], [1, 2], "P") is H


def test_cv_folds_are_scikit_learns():
    """Folds over the distinct P values as KFold(shuffle, seed) draws them: every row of one P is
    predicted by a fit that saw no row of that P (a y that is 0 except at one P is predicted there
    from zeros)."""
    from sklearn.model_selection import KFold

    P = np.repeat(np.arange(2, 22), 2)
    levels = np.unique(P)
    for f, (_, test) in enumerate(KFold(5, shuffle=True, random_state=3).split(levels)):
        y = np.where(np.isin(P, levels[test]), 100.0, 0.0)
        cv = rg.cv_predictions(P, y, np.ones(len(P), int), "P", 5, 3)
        assert cv[np.isin(P, levels[test])] == pytest.approx(0.0, abs=1e-9)
