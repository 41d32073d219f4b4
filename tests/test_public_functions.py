"""Bad input to every public function and estimator raises ValueError naming the argument.

Table-driven, as scikit-learn's ``test_public_functions``: each entry calls one public
function (or an estimator's fit / score) with valid arguments, and every array argument is
replaced in turn by empty, NaN, inf, complex, string, wrong-ndim and wrong-length values;
each must raise ``ValueError`` whose message starts with the argument's name and says what
was got (STYLE.md rule 10). The final tests hold the exact numbers and messages of the
issue "Nothing lost, no silent wrong number".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from abstain import combine, detectors, metrics, models, scores, tables

RNG = np.random.default_rng(0)
N = 12
U = np.linspace(0.05, 0.95, N)  # one score column
L01 = (np.arange(N) % 3 == 0).astype(float)  # 0/1 losses
OOD = np.arange(N) % 2 == 1
S2 = np.column_stack([U, U[::-1]])  # two score columns
LOGITS = RNG.normal(size=(N, 3))
FEATS = RNG.normal(size=(N, 4))
PROBA = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)

# what a bad value of each kind must say, after the argument's name
SAYS = {
    "empty": r"(must not be empty|non-empty|n >= 1|got shape \(0,|got \(0,)",
    "nan": r"(NaN|finite)",
    "inf": r"(finite|infinite)",
    "complex": r"dtype complex128",
    "string": r"dtype <U",
    "text": r"dtype <U3",
    "ndim": r"(one-dimensional|2-D|shape)",
    "wide": r"(one-dimensional|shape|columns)",  # (n, 3) for (n,): same length, not 1-D
    "length": r"(same length|shape of)",
    "table": r"(got a ScoreTable: pass the arrays, or pass the table alone|is a ScoreTable; "
             r".* pass the table to the metrics)",
    "one_class": r"must contain both ID \(False\) and OOD \(True\) samples; got only ID",
}

TABLE = tables.ScoreTable.from_arrays(U, L01)


def _bad_1d(x: np.ndarray) -> dict[str, Any]:
    nan, inf = x.astype(float), x.astype(float)
    nan[0], inf[0] = np.nan, np.inf
    return {"empty": [], "nan": nan, "inf": inf, "complex": x + 1j,
            "string": x.astype(str), "text": "abc", "ndim": x[:, None, None],
            "wide": np.column_stack([x, x, x]), "length": x[:-1], "table": TABLE}


def _bad_2d(x: np.ndarray) -> dict[str, Any]:
    nan, inf = x.astype(float), x.astype(float)
    nan[0, 0], inf[0, 0] = np.nan, np.inf
    return {"empty": np.empty((0, x.shape[1])), "nan": nan, "inf": inf, "complex": x + 1j,
            "string": x.astype(str), "text": "abc", "ndim": x[:, 0, None, None],
            "table": TABLE}


Call = Callable[..., Any]
# (id, call, valid keyword arguments, {argument: the kinds it must refuse, None = all})
CASES: list[tuple[str, Call, dict[str, Any], dict[str, Any]]] = []


def case(name: str, call: Call, good: dict[str, Any], **refuse: Any) -> None:
    CASES.append((name, call, good, refuse))


ALL = None
NO_LEN = ("empty", "nan", "inf", "complex", "string", "text", "ndim", "table")
M2 = ("empty", "nan", "inf", "complex", "string", "text", "ndim", "table")

for f in (metrics.aurc, metrics.e_aurc, metrics.augrc, metrics.sele_loss,
          metrics.risk_coverage_curve):
    case(f.__name__, f, {"losses": L01, "uncertainty": U}, losses=ALL, uncertainty=ALL)
case("selective_risk_at_coverage",
     lambda **k: metrics.selective_risk_at_coverage(k["losses"], k["uncertainty"], 0.5),
     {"losses": L01, "uncertainty": U}, losses=ALL, uncertainty=ALL)
case("coverage_at_risk", lambda **k: metrics.coverage_at_risk(k["losses"], k["uncertainty"], .5),
     {"losses": L01, "uncertainty": U}, losses=ALL, uncertainty=ALL)
for f in (metrics.auroc, metrics.aupr_in, metrics.aupr_out, metrics.fpr_at_tpr,
          metrics.tnr_at_tpr, metrics.detection_rate_at_false_alarm, metrics.ood_roc_curve,
          metrics.ood_pr_curve):
    case(f.__name__, f, {"is_ood": OOD, "scores": U}, is_ood=ALL, scores=ALL)
for f, extra in ((metrics.oscr, {}), (metrics.ccr_at_fpr, {"fpr": 0.5}),
                 (metrics.selective_risk_at_tpr_fpr, {"tpr": 0.5, "fpr": 0.5}),
                 (metrics.selective_risk_at_precision_recall,
                  {"precision": 0.5, "recall": 0.5}),
                 (metrics.risk_coverage_curve_at_fpr, {"fpr": 0.5})):
    case(f.__name__, lambda f=f, extra=extra, **k: f(**k, **extra),
         {"losses": L01, "is_ood": OOD, "scores": U}, losses=ALL, is_ood=ALL, scores=ALL)
case("evaluate_ood",
     lambda **k: metrics.evaluate_ood(k["losses"], k["is_ood"], {"u": k["scores"]}),
     {"losses": L01, "is_ood": OOD, "scores": U}, losses=ALL, is_ood=ALL, scores=ALL)
case("bootstrap_indices", lambda **k: metrics.bootstrap_indices(k["strata"], 3),
     {"strata": OOD}, strata=("empty", "ndim"))
case("bootstrap_interval",
     lambda **k: metrics.bootstrap_interval(lambda i: 0.0, k["strata"], n_bootstrap=3),
     {"strata": OOD}, strata=("empty", "ndim"))
case("auroc, two scores", metrics.auroc, {"is_ood": OOD, "scores": S2},
     scores=("nan", "inf", "complex", "string"))

for cls in (models.BoundedAbstention, models.BoundedImprovement, models.CostBased):
    case(cls.__name__, lambda cls=cls, **k: cls().fit(**k), {"uncertainty": U, "losses": L01},
         uncertainty=ALL, losses=ALL)
for cls in (models.BoundedTPRFPR, models.BoundedPrecisionRecall, models.CostBasedOOD):
    case(cls.__name__, lambda cls=cls, **k: cls().fit(**k),
         {"scores": U, "is_ood": OOD, "losses": L01}, scores=ALL, is_ood=ALL, losses=ALL)
case("least_fpr_at_tpr", lambda **k: models.least_fpr_at_tpr(**k, tpr=0.5),
     {"scores": U, "is_ood": OOD}, scores=ALL, is_ood=ALL)
case("most_recall_at_precision", lambda **k: models.most_recall_at_precision(**k, precision=.5),
     {"scores": U, "is_ood": OOD}, scores=ALL, is_ood=ALL)

for cls in (detectors.MSP, detectors.MaxLogit, detectors.Energy, detectors.ODIN, detectors.GEN):
    case(f"{cls.__name__}.score", lambda cls=cls, **k: cls().score(k["logits"]),
         {"logits": LOGITS}, logits=M2)
case("KNN.fit", lambda **k: detectors.KNN(k=2).fit(k["features"]), {"features": FEATS},
     features=M2)
case("KNN.score", lambda **k: detectors.KNN(k=2).fit(FEATS).score(k["features"]),
     {"features": FEATS}, features=M2)
case("ReAct.score",
     lambda **k: detectors.ReAct().fit(FEATS, weight=np.ones((3, 4))).score(k["features"]),
     {"features": FEATS}, features=M2)

case("EmpiricalZ.fit", lambda **k: combine.EmpiricalZ().fit(k["S_train"]), {"S_train": S2},
     S_train=M2)
case("EmpiricalZ.transform", lambda **k: combine.EmpiricalZ().fit(S2).transform(k["S"]),
     {"S": S2}, S=M2)
case("ScoreCombiner.fit", lambda **k: combine.ScoreCombiner(method="glrt").fit(k["S_train"]),
     {"S_train": S2}, S_train=M2)
case("ScoreCombiner.fit,auto",
     lambda **k: combine.ScoreCombiner(random_state=0, n_bootstrap=5).fit(S2, k["S_outliers"]),
     {"S_outliers": S2 + 1.0}, S_outliers=M2)
for f in (combine.conformal_pvalues, combine.empirical_pvalues):  # stat may be empty
    case(f.__name__, f, {"cal_stat": U, "stat": U}, cal_stat=NO_LEN, stat=NO_LEN[1:])
case("conformal_threshold", lambda **k: combine.conformal_threshold(k["cal_stat"], 0.5),
     {"cal_stat": U}, cal_stat=NO_LEN)

case("mcp", scores.mcp, {"proba": PROBA}, proba=NO_LEN)
case("margin", scores.margin, {"decision": LOGITS}, decision=M2)
case("sele_objective", scores.sele_objective, {"scores": U, "losses": L01}, scores=ALL,
     losses=ALL)

Y = np.arange(N) % 3
case("true_class_probability", lambda **k: scores.true_class_probability(k["proba"], Y),
     {"proba": PROBA}, proba=NO_LEN)
case("conditional_risk", scores.conditional_risk, {"proba": PROBA},
     proba=("nan", "inf", "complex", "string"))
case("least_risk_bound", lambda **k: models.least_risk_bound(**k, delta=0.1),
     {"uncertainty": U, "losses": L01}, uncertainty=ALL, losses=ALL)
case("inlier_covariance", combine.inlier_covariance, {"Z_train": S2}, Z_train=M2)
case("Mahalanobis.score",
     lambda **k: detectors.Mahalanobis().fit(FEATS, Y).score(k["features"]),
     {"features": FEATS}, features=M2)

case("ScoreTable.from_arrays",
     lambda **k: tables.ScoreTable.from_arrays(k["uncertainty"], k["losses"]),
     {"uncertainty": U, "losses": L01}, uncertainty=ALL, losses=ALL)
case("PairResampler",
     lambda **k: metrics.PairResampler(k["losses"], k["is_ood"], k["scores"], tpr=0.5, fpr=0.5),
     {"losses": L01, "is_ood": OOD, "scores": S2}, losses=ALL, is_ood=ALL, scores=M2)
case("TableResampler",
     lambda **k: tables.TableResampler(k["uncertainty"], k["losses"]),
     {"uncertainty": U, "losses": L01}, uncertainty=ALL, losses=ALL)
case("TableResampler, marked",
     lambda **k: tables.TableResampler(k["uncertainty"], k["losses"], k["is_ood"]),
     {"uncertainty": U, "losses": L01, "is_ood": OOD},
     losses=("inf", "complex", "string", "text", "ndim", "wide", "length", "table"),
     is_ood=("empty", "nan", "inf", "complex", "string", "text", "ndim", "wide", "length",
             "table"))  # NaN losses: allowed on OOD rows (the file format's empty cells)
case("PairTable.from_arrays",
     lambda **k: tables.PairTable.from_arrays(k["scores"], k["losses"], is_ood=k["is_ood"]),
     {"scores": S2, "losses": L01, "is_ood": OOD}, scores=M2,
     losses=("nan", "inf", "complex", "string", "text", "ndim", "wide", "length", "table"),
     is_ood=("empty", "nan", "inf", "complex", "string", "text", "ndim", "wide", "length",
             "table"))  # losses empty: a length mismatch; one class in a batch: accepted
case("StreamingMetric.update",
     lambda **k: metrics.StreamingMetric("aurc").update(k["losses"], k["uncertainty"]),
     {"uncertainty": U, "losses": L01}, uncertainty=ALL, losses=ALL)
case("bootstrap_win_fraction",
     lambda **k: scores.bootstrap_win_fraction(k["losses"], k["uncertainty"], U[::-1],
                                               n_bootstrap=3, random_state=0),
     {"losses": L01, "uncertainty": U}, losses=ALL, uncertainty=ALL)
case("ordinal_margin", scores.ordinal_margin, {"decision": U, "thresholds": np.array([.3, .6])},
     decision=NO_LEN, thresholds=NO_LEN)
for cls in (scores.LossRegression, scores.SELE):
    case(f"{cls.__name__}.fit", lambda cls=cls, **k: cls().fit(k["X"], Y, k["losses"]),
         {"X": FEATS, "losses": L01}, X=M2, losses=ALL)
    case(f"{cls.__name__}.score",
         lambda cls=cls, **k: cls().fit(FEATS, Y, L01).score(k["X"], Y), {"X": FEATS}, X=M2)
case("TCP.fit", lambda **k: scores.TCP().fit(k["X"], Y, k["true_class_proba"]),
     {"X": FEATS, "true_class_proba": PROBA.max(axis=1)}, X=M2, true_class_proba=ALL)
case("select_regularization",
     lambda **k: scores.select_regularization(scores.SELE(), k["X"], Y, L01, FEATS, Y,
                                              k["losses_val"], grid=(0.0, 1.0)),
     {"X": FEATS, "losses_val": L01}, X=M2, losses_val=ALL)
case("combine", lambda **k: combine.combine(k["values"], "fisher"),
     {"values": np.column_stack([U, U[::-1]])}, values=M2)
case("csi_statistic",
     lambda **k: combine.csi_statistic(k["cos"], S2, S2, norm_train=S2, shift_train=S2),
     {"cos": S2}, cos=M2)
case("GuaranteedDetector.fit",
     lambda **k: combine.GuaranteedDetector(alpha=0.3, delta=0.5).fit(k["cal_stat"]),
     {"cal_stat": U}, cal_stat=NO_LEN)
case("ScoreCombiner.score",
     lambda **k: combine.ScoreCombiner(method="glrt").fit(S2).score(k["S"]), {"S": S2}, S=M2)
case("ScoreCombiner.score,single",
     lambda **k: combine.ScoreCombiner(random_state=0, n_bootstrap=5).fit(
         S2, S2[:, ::-1] + [5.0, 0.0]).score(k["S"]), {"S": S2}, S=M2)
case("ViM.score",
     lambda **k: detectors.ViM(dim=2).fit(FEATS, weight=RNG.normal(size=(3, 4)),
                                          bias=np.zeros(3)).score(k["features"]),
     {"features": FEATS}, features=M2)
case("Mahalanobis.fit", lambda **k: detectors.Mahalanobis().fit(k["features"], Y),
     {"features": FEATS}, features=M2)
case("DoubleScoreDetector.fit",
     lambda **k: models.DoubleScoreDetector(detectors.MSP(), detectors.MaxLogit()).fit(
         {"logits": k["logits"]}), {"logits": LOGITS}, logits=M2)

case("DetectorBank.fit",
     lambda **k: detectors.DetectorBank([detectors.MSP(), detectors.KNN(k=2)]).fit(
         {"logits": k["logits"], "features": FEATS}), {"logits": LOGITS}, logits=M2)
case("DetectorBank.score",
     lambda **k: detectors.DetectorBank([detectors.MSP(), detectors.KNN(k=2)]).fit(
         {"logits": LOGITS, "features": FEATS}).score({"logits": k["logits"],
                                                      "features": FEATS}),
     {"logits": LOGITS}, logits=M2)
case("BankDetector.fit",
     lambda **k: combine.BankDetector(
         detectors.DetectorBank([detectors.MSP(), detectors.MaxLogit()]), method="glrt",
         alpha=0.5, delta=0.5).fit({"logits": k["logits"]}, None, {"logits": LOGITS}),
     {"logits": LOGITS}, logits=M2)
case("LeaveClassesOut.split", lambda **k: list(detectors.LeaveClassesOut().split(k["y"])),
     {"y": np.arange(N) % 4}, y=("empty", "nan", "inf", "complex", "ndim"))
case("restrict_outputs",
     lambda **k: detectors.restrict_outputs({"logits": LOGITS}, k["rows"], [0, 1]),
     {"rows": np.arange(3)}, rows=("nan", "complex", "string", "text", "ndim"))
case("shuffled_columns", lambda **k: detectors.shuffled_columns(k["X"], random_state=0),
     {"X": FEATS}, X=("empty", "nan", "inf", "complex", "string", "text", "table"))
case("tune_detector",
     lambda **k: models.tune_detector(detectors.ODIN(), {"temperature": [1.0, 10.0]},
                                      {"logits": k["id_outputs.logits"]}, random_state=0),
     {"id_outputs.logits": LOGITS},  # NaN, inf and ndim are named by the detector: logits
     **{"id_outputs.logits": ("empty", "complex", "string")})


def _params() -> list[Any]:
    out = []
    for name, call, good, refuse in CASES:
        for arg, kinds in refuse.items():
            x = np.asarray(good[arg])
            bad = _bad_1d(x) if x.ndim == 1 else _bad_2d(x)
            if arg.endswith("is_ood"):
                bad["one_class"] = np.zeros_like(x)
            for kind in kinds or bad:
                out.append(pytest.param(call, good, arg, kind, bad[kind],
                                        id=f"{name}-{arg}-{kind}"))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(("call", "good", "arg", "kind", "value"), _params())
def test_bad_input_raises_value_error_naming_the_argument(
        call: Call, good: dict[str, Any], arg: str, kind: str, value: Any) -> None:
    call(**good)  # the valid call works
    says = SAYS[kind]
    if kind == "length":  # either argument may be the one named
        pattern = says
    elif kind == "table":  # in the table's own place, the arguments it replaces are named
        pattern = rf"^({re.escape(arg)}\b.*{says}|.* must be omitted when a ScoreTable is given)"
    else:
        pattern = rf"^{re.escape(arg)}\b.*{says}"
    with pytest.raises(ValueError, match=pattern) as info:
        call(**{**good, arg: value})
    check_plain(str(info.value))


def check_plain(message: str) -> None:
    """No NumPy repr in ``message``, and what it got is not what it requires."""
    assert "np." not in message and "dtype object" not in message, message
    required, _, got = message.partition("; got ")
    got = got.split(";")[0].rstrip(".").strip()
    if got:
        assert got not in required, f"got {got!r} is what is required: {message}"


#: Public names with no array input of their own, or checked elsewhere: result types and
#: constants, the registry,
#: the wrapper of a scikit-learn estimator (tests/test_sklearn_compat.py), the guarantee's
#: arithmetic on integers (tests/combine), the scorers of model selection, which take a fitted
#: estimator (tests/metrics/test_scorers.py), the loss matrices (tests/scores/test_losses.py)
#: and the rotation base scores (tests/detectors/test_base_scores.py).
NOT_ARRAY_FUNCTIONS = {
    "make_detector", "far_guarantee", "SelectiveClassifier",
    "EquivalentModels", "Detector", "FARGuarantee", "RegularizationSearch",
    "SelectivePrediction", "ConditionalRisk", "BootstrapInterval", "OODEvaluation",
    "DetectorTuning", "ProxySplit", "ProxyOutputs",
    "BinnedTable", "Bounded",  # built by ScoreTable.binned: tests/tables/test_binned.py
    "neg_aurc_scorer", "neg_selective_risk_scorer", "coverage_at_risk_scorer",
    # loss matrices of a class count, and their checks: tests/scores/test_losses.py
    "zero_one_loss", "absolute_error_loss", "check_loss_matrix", "sample_losses",
    # the base scores of a class x rotation network: tests/detectors/test_base_scores.py
    "ShiftedBaseScores", "joint_labels", "rotation_training_set", "rotations",
    # CSI's and SupCSI's scores of the same stacks: tests/detectors/test_csi.py
    "CSI", "SupCSI",
    # the registry of reject rules: tests/models/test_rule_registry.py
    "RuleSpec", "RuleTarget", "register_rule",
    # the registry of metrics, and evaluate_ood on tables: tests/metrics/test_metric_registry.py
    "MetricSpec", "register_metric", "evaluate_ood_tables",
    # checks of a scalar option (tests/metrics/test_bootstrap.py, the doctests), and what a
    # pair's search resolves to (tests/app/test_report.py, the doctest)
    "check_bootstrap", "check_pair_search", "resolve_search",
    # many resamples of a TableResampler at once, its totals and the counts of a block of
    # resamples (row indices): tests/metrics/test_metric_replicates.py
    "metric_replicates", "ResampleTotals", "resample_counts",
}


@pytest.mark.parametrize("module", [tables, metrics, scores, combine, detectors, models],
                         ids=lambda m: m.__name__)
def test_every_public_function_and_estimator_is_in_the_table(module: Any) -> None:
    covered = {name.split(",")[0].split(".")[0] for name, *_ in CASES}
    public = {n for n in module.__all__ if callable(getattr(module, n))
              and not n.isupper() and not n.endswith("Curve")}
    missing = public - covered - NOT_ARRAY_FUNCTIONS
    assert not missing, f"add {sorted(missing)} to CASES"


# ---------------------------------------------------------------- the cases

BIG = [1e308, 1e308, 0.0]
SC = [0.3, 0.2, 0.1]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("f", [metrics.aurc, metrics.augrc, metrics.e_aurc, metrics.sele_loss])
def test_losses_near_the_float_maximum_give_the_scaled_number(f: Call) -> None:
    for u in (SC, SC[::-1]):
        assert f(BIG, u) == pytest.approx(f([1.0, 1.0, 0.0], u) * 1e308, rel=1e-15)
    assert metrics.aurc(BIG, SC) == pytest.approx(35 / 9 * 1e307, rel=1e-15)


@pytest.mark.parametrize("cls", [models.BoundedTPRFPR, models.BoundedPrecisionRecall,
                                 models.CostBasedOOD])
def test_ood_fits_refuse_losses_whose_sum_overflows(cls: Any) -> None:
    with pytest.raises(ValueError, match=r"^losses must have a weighted sum on ID rows of at "
                                         r"most .*; got inf\.$"):
        cls().fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], [1e308, 1e308, 0, 0])


@pytest.mark.parametrize(("value", "dtype"), [
    ([1 + 2j, 2.0], "complex128"),
    (np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), r"datetime64\[D\]"),
    (np.array([1, 2], dtype="timedelta64[s]"), r"timedelta64\[s\]"),
    (np.array([1.0, "a"], dtype=object), "object"),
    (["0.1", "0.2"], "<U3"),
])
def test_scores_of_a_non_real_dtype_are_refused_with_the_dtype(value: Any, dtype: str) -> None:
    with pytest.raises(ValueError, match=rf"^uncertainty must be an array of real numbers "
                                         rf"\(int, float or bool dtype\); got dtype {dtype}\.$"):
        metrics.aurc([0.0, 1.0], value)


def test_is_ood_as_strings_says_the_dtype_and_what_is_accepted() -> None:
    with pytest.raises(ValueError, match=r"^is_ood must hold 0/1 or False/True \(int, float or "
                                         r"bool dtype\); got dtype <U1\.$"):
        metrics.auroc(["0", "1"], [0.1, 0.2])
    assert metrics.auroc([False, True], [0.1, 0.2]) == 1.0


OOD2 = [0, 1, 0, 1, 0, 1]
TWO = np.column_stack([np.arange(6.0), np.arange(6.0)[::-1]])
LOSS6 = [0, 0, 1, 0, 0, 0]


@pytest.mark.parametrize("call", [
    lambda **k: metrics.auroc(OOD2, TWO, **k),
    lambda **k: metrics.oscr(LOSS6, OOD2, TWO, **k),
    lambda **k: metrics.ood_roc_curve(OOD2, TWO, **k),
    lambda **k: metrics.ood_pr_curve(OOD2, TWO, **k),
    lambda **k: metrics.risk_coverage_curve_at_fpr(LOSS6, OOD2, TWO, 0.5, **k),
    lambda **k: metrics.selective_risk_at_tpr_fpr(LOSS6, OOD2, TWO, 0.5, 0.5, **k),
    lambda **k: metrics.selective_risk_at_precision_recall(LOSS6, OOD2, TWO, 0.5, 0.5, **k),
])
@pytest.mark.parametrize("bad", [-5, 0, 2.5, True])
def test_n_directions_is_an_integer_of_at_least_one(call: Call, bad: Any) -> None:
    with pytest.raises(ValueError, match=rf"^n_directions must be an integer >= 1; got {bad!r}"):
        call(n_directions=bad)


@pytest.mark.parametrize("bad", [1, 0, 2.5])
def test_n_points_is_an_integer_of_at_least_two(bad: Any) -> None:
    for call in (lambda: metrics.auroc(OOD2, TWO, n_points=bad),
                 lambda: metrics.oscr(LOSS6, OOD2, TWO, n_points=bad),
                 lambda: metrics.auroc(OOD2, TWO[:, 0], n_points=bad)):
        with pytest.raises(ValueError, match=rf"^n_points must be an integer >= 2; got {bad!r}"):
            call()


@pytest.mark.parametrize("cls", [detectors.MSP, detectors.MaxLogit, detectors.Energy,
                                 detectors.ODIN, detectors.GEN])
def test_logit_detectors_fitted_with_data_refuse_another_width(cls: Any) -> None:
    det = cls().fit(LOGITS)
    with pytest.raises(ValueError, match=r"^logits must have 3 column\(s\), as in fit; got 4\."):
        det.score(np.ones((2, 4)))
    assert cls().fit().score(np.ones((2, 4))).shape == (2,)  # no data at fit: any width


def test_feature_detectors_refuse_another_width() -> None:
    for det in (detectors.KNN(k=2).fit(FEATS),
                detectors.ReAct().fit(FEATS, weight=np.ones((3, 4)))):
        with pytest.raises(ValueError, match=r"^features must have 4 column\(s\), as in fit; "
                                             r"got 3\."):
            det.score(np.ones((2, 3)))


@pytest.mark.parametrize("est", [combine.ScoreCombiner(), combine.EmpiricalZ()])
def test_combiners_need_two_training_rows(est: Any) -> None:
    with pytest.raises(ValueError, match=r"^S_train must have at least 2 rows; got 1\.$"):
        est.fit([[1.0, 2.0]])


@pytest.mark.parametrize("gamma", [0, -1, 1.5])
def test_gen_gamma_says_its_true_interval(gamma: float) -> None:
    with pytest.raises(ValueError, match=rf"^gamma must be in \(0, 1\]; got {gamma!r}\.$"):
        detectors.GEN(gamma=gamma).score(LOGITS)


@pytest.mark.parametrize("delta", [1, 1.5, 0])
def test_bounded_improvement_delta_says_open_unit_interval(delta: float) -> None:
    with pytest.raises(ValueError, match=rf"^delta must be in \(0, 1\); got {delta!r}\.$"):
        models.BoundedImprovement(target_risk=0.5, delta=delta).fit(U, L01)


NAN = float("nan")
S4, O4 = [0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]


def test_nan_losses_on_ood_rows_are_ignored() -> None:
    assert metrics.oscr([0, 1, NAN, NAN], O4, S4) == metrics.oscr([0, 1, 0, 0], O4, S4)
    for cls in (models.BoundedTPRFPR, models.BoundedPrecisionRecall, models.CostBasedOOD):
        a = cls().fit(S4, O4, [0, 1, NAN, NAN])
        b = cls().fit(S4, O4, [0, 1, 5, 7])
        assert (a.threshold_, a.risk_) == (b.threshold_, b.risk_)


def test_nan_on_id_rows_and_inf_anywhere_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^losses must not be NaN on ID rows \(NaN is accepted "
                                         r"on OOD rows only\); got 1 NaN on ID rows\.$"):
        models.BoundedTPRFPR().fit(S4, O4, [NAN, 0, NAN, 0])
    for ls in ([0, 0, np.inf, 0], [np.inf, 0, 0, 0]):
        with pytest.raises(ValueError, match=r"^losses must be finite; got 1 infinite value"):
            metrics.oscr(ls, O4, S4)


def test_pandas_series_are_accepted_wherever_arrays_are() -> None:
    pd = pytest.importorskip("pandas")
    s, loss, ood = pd.Series(U), pd.Series(L01), pd.Series(OOD)
    assert metrics.aurc(loss, s) == metrics.aurc(L01, U)
    assert metrics.auroc(ood, s) == metrics.auroc(OOD, U)
    assert metrics.oscr(loss, ood, s) == metrics.oscr(L01, OOD, U)
    rule = models.BoundedAbstention(0.5).fit(s, loss)
    assert rule.threshold_ == models.BoundedAbstention(0.5).fit(U, L01).threshold_
    assert rule.accept_proba(s).tolist() == rule.accept_proba(U).tolist()


F = np.float64
I = np.int64  # noqa: E741
#: (id, call, the argument named, the value shown): out-of-range targets given as NumPy
#: scalars, as they come out of arrays and config files read with NumPy
TARGETS: list[tuple[str, Call, str, str]] = [
    ("selective_risk_at_coverage", lambda: metrics.selective_risk_at_coverage(L01, U, F(1.5)),
     "coverage", "1.5"),
    ("coverage_at_risk", lambda: metrics.coverage_at_risk(L01, U, F(-0.5)), "target_risk", "-0.5"),
    ("fpr_at_tpr", lambda: metrics.fpr_at_tpr(OOD, U, F(1.25)), "tpr", "1.25"),
    ("ccr_at_fpr", lambda: metrics.ccr_at_fpr(L01, OOD, U, F(2.0)), "fpr", "2.0"),
    ("detection_rate_at_false_alarm",
     lambda: metrics.detection_rate_at_false_alarm(OOD, U, F(1.0)), "false_alarm", "1.0"),
    ("auroc", lambda: metrics.auroc(OOD, S2, n_directions=I(0)), "n_directions", "0"),
    ("bootstrap_interval",
     lambda: metrics.bootstrap_interval(lambda i: 0.0, OOD, n_bootstrap=I(-1)), "n_bootstrap",
     "-1"),
    ("BoundedAbstention", lambda: models.BoundedAbstention(F(0.0)).fit(U, L01),
     "target_coverage", "0.0"),
    ("BoundedImprovement", lambda: models.BoundedImprovement(F(-1.0)).fit(U, L01),
     "target_risk", "-1.0"),
    ("BoundedTPRFPR", lambda: models.BoundedTPRFPR(tpr=F(1.5)).fit(U, OOD, L01), "tpr", "1.5"),
    ("least_fpr_at_tpr", lambda: models.least_fpr_at_tpr(U, OOD, tpr=F(0.0)), "tpr", "0.0"),
    ("KNN", lambda: detectors.KNN(k=I(0)).fit(FEATS), "k", "0"),
    ("GEN", lambda: detectors.GEN(gamma=F(2.0)).score(LOGITS), "gamma", "2.0"),
    ("conformal_threshold", lambda: combine.conformal_threshold(U, F(1.5)), "alpha", "1.5"),
    ("GuaranteedDetector", lambda: combine.GuaranteedDetector(alpha=F(0.3), delta=F(1.5)).fit(U),
     "delta", "1.5"),
    ("StreamingMetric", lambda: metrics.StreamingMetric("aurc", ties=np.str_("first")), "ties",
     "'first'"),
]


@pytest.mark.parametrize(("call", "arg", "shown"), [pytest.param(*t[1:], id=t[0])
                                                    for t in TARGETS])
def test_out_of_range_numpy_targets_are_named_and_shown_as_plain_numbers(
        call: Call, arg: str, shown: str) -> None:
    with pytest.raises(ValueError, match=rf"^{arg} must .*; got {re.escape(shown)}\.$") as info:
        call()
    check_plain(str(info.value))


@pytest.mark.parametrize("call", [
    lambda: metrics.oscr(None, OOD, U), lambda: metrics.ccr_at_fpr(None, OOD, U, 0.5),
    lambda: metrics.selective_risk_at_tpr_fpr(None, OOD, U, 0.5, 0.5),
    lambda: metrics.selective_risk_at_precision_recall(None, OOD, U, 0.5, 0.5),
    lambda: metrics.risk_coverage_curve_at_fpr(None, OOD, U, 0.5),
    lambda: models.BoundedTPRFPR().fit(U, OOD, None),
    lambda: models.BoundedPrecisionRecall().fit(U, OOD, None),
])
def test_metrics_of_the_losses_refuse_none_instead_of_zero_losses(call: Call) -> None:
    with pytest.raises(ValueError, match=r"^losses must be an array of real numbers; got None\.$"):
        call()


def test_metrics_without_losses_name_only_the_arguments_passed() -> None:
    for call in (lambda: metrics.auroc(OOD[:-1], U),
                 lambda: models.least_fpr_at_tpr(U, OOD[:-1], tpr=0.5),
                 lambda: models.most_recall_at_precision(U, OOD[:-1], precision=0.5)):
        with pytest.raises(ValueError, match=r"^scores and is_ood must have the same length; "
                                             r"got scores has 12, is_ood has 11\.$"):
            call()
    for bad in ("abc", TABLE, None):  # a TypeError from len() before
        with pytest.raises(ValueError, match=r"^is_ood must "):
            models.most_recall_at_precision(U, bad, precision=0.5)
