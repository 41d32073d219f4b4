"""One verb per meaning (docs/architecture.md): ``score`` is the uncertainty, ``accept`` /
``accept_proba`` the decision, ``predict`` class labels; on the scikit-learn-shaped
``SelectiveClassifier`` and ``SVOR``, ``score(X, y)`` is the accuracy and ``uncertainty(X)``
the uncertainty. The spellings of the unreleased 0.1 development versions are gone."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import BoundedAbstention, BoundedImprovement, CostBased
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD


def _rule_data(rng):
    u = np.round(rng.uniform(size=200), 1)  # many ties: the randomised decisions matter
    losses = (rng.uniform(size=200) < u).astype(float)
    return u, losses


# --------------------------------------------------------------------------- reject rules
@pytest.mark.parametrize("rule", [
    CostBased(reject_cost=0.3, random_state=0),
    BoundedAbstention(target_coverage=0.55, random_state=0),
    BoundedImprovement(target_risk=0.2, random_state=0),
])
def test_reject_rule_verbs(rng, rule):
    u, losses = _rule_data(rng)
    rule.fit(u, losses)
    new = np.round(rng.uniform(size=50), 1)
    score = rule.score(new)
    np.testing.assert_array_equal(score, new)
    assert score is not new
    np.testing.assert_array_equal(rule.accept_proba(new), rule.accept_proba(score))
    assert rule.accept(new).dtype == bool
    assert not hasattr(rule, "predict")  # predict is for class labels only


@pytest.mark.parametrize("rule", [
    BoundedTPRFPR(tpr=0.6, fpr=0.4, random_state=0),
    BoundedPrecisionRecall(precision=0.6, recall=0.6, random_state=0),
    CostBasedOOD(0.3, 1.0, 0.0, random_state=0),
])
def test_ood_rule_verbs(rng, rule):
    s = np.round(rng.uniform(size=(300, 2)), 1)
    is_ood = rng.uniform(size=300) < s[:, 1]
    losses = (rng.uniform(size=300) < s[:, 0]).astype(float)
    rule.fit(s, is_ood, losses)
    new = np.round(rng.uniform(size=(50, 2)), 1)
    assert rule.accept(new).dtype == bool
    assert not hasattr(rule, "predict")


def test_unfitted_reject_rule_score():
    from abstain.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        BoundedAbstention().score([0.1])


# --------------------------------------------------------------------------- GuaranteedDetector
@pytest.mark.parametrize("higher_is_inlier", [False, True])
def test_guaranteed_detector_verbs(rng, higher_is_inlier):
    from abstain.combine import GuaranteedDetector

    cal = rng.integers(0, 8, 300).astype(float)  # ties with the threshold
    det = GuaranteedDetector(alpha=0.1, delta=0.1, higher_is_inlier=higher_is_inlier).fit(cal)
    ties = [det.threshold_, -det.threshold_]
    stat = np.concatenate([rng.integers(-2, 10, 200).astype(float), ties])
    score = det.score(stat)
    np.testing.assert_array_equal(score, -stat if higher_is_inlier else stat)
    accept = det.accept(stat)
    np.testing.assert_array_equal(accept, score <= det.threshold_)
    assert accept[score == det.threshold_].all()  # a tie is an inlier
    proba = det.accept_proba(stat)
    assert proba.dtype == np.float64 and set(np.unique(proba)) <= {0.0, 1.0}
    np.testing.assert_array_equal(proba, accept.astype(float))
    assert not hasattr(det, "predict")


# --------------------------------------------------------------------------- learned scores
@pytest.mark.parametrize("name", ["LossRegression", "SELE", "TCP"])
def test_learned_score_verbs(rng, name):
    from abstain import scores

    X = rng.normal(size=(120, 3))
    y_pred = rng.integers(0, 3, 120)
    target = (rng.uniform(size=120) < 0.3).astype(float)
    learner = getattr(scores, name)(C=1.0).fit(X, y_pred, target)
    u = learner.score(X, y_pred)
    expected = learner.decision_function(X, y_pred)
    np.testing.assert_array_equal(u, -expected if name == "TCP" else expected)
    assert not hasattr(learner, "predict")


# --------------------------------------------------------------------------- SVOR
def test_svor_verbs(rng):
    from abstain.evaluation import default_baseline
    from abstain.ordinal import SVOR

    X = rng.normal(size=(150, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=150), [-0.5, 0.5])
    model = SVOR(C=10.0).fit(X, y)
    u = model.uncertainty(X)
    np.testing.assert_array_equal(default_baseline(model, X), u)
    assert model.score(X, y) == np.mean(model.predict(X) == y)  # scikit-learn's accuracy
    assert not hasattr(model, "margin_score")
    assert set(model.predict(X)) <= set(model.classes_)  # predict stays: labels


# --------------------------------------------------------------------------- SelectiveClassifier
def test_selective_classifier_takes_score_func_only():
    from sklearn.svm import LinearSVC

    from abstain import SelectiveClassifier

    clf = SelectiveClassifier(LinearSVC(), score_func="margin")
    assert clf.get_params()["score_func"] == "margin" and "score" not in clf.get_params()
    with pytest.raises(TypeError, match="unexpected keyword argument 'score'"):
        SelectiveClassifier(LinearSVC(), score="margin")


def test_selective_classifier_verbs():
    from sklearn.datasets import load_digits
    from sklearn.svm import LinearSVC

    from abstain import SelectiveClassifier

    X, y = load_digits(return_X_y=True)
    clf = SelectiveClassifier(LinearSVC(), BoundedAbstention(0.7), score_func="margin",
                              random_state=0).fit(X[:600] / 16, y[:600])
    new = X[600:900] / 16
    u = clf.uncertainty(new)
    np.testing.assert_array_equal(u, -clf.estimator_.decision_function(new).max(axis=1))
    assert clf.score(new, y[600:900]) == np.mean(clf.predict(new) == y[600:900])
    np.testing.assert_array_equal(clf.accept_proba(new), clf.reject_model_.accept_proba(u))
    np.testing.assert_array_equal(clf.accept(new), clf.predict_with_reject(new).accept)
    assert set(clf.predict(new)) <= set(clf.classes_)  # predict stays: labels


# --------------------------------------------------------------------------- argument order
TRUTH = {"losses", "is_ood", "y", "labels", "true_class_proba"}
SCORES = {"uncertainty", "scores", "X", "outputs", "features", "S_train", "cal_stat",
          "projections", "logits"}  # a network's outputs per shift (CSI, SupCSI)
FIT_MODULES = [
    "abstain.models._selective", "abstain.models._ood", "abstain.models._double_score",
    "abstain.models._classifier", "abstain.scores._learned", "abstain.detectors._logits",
    "abstain.detectors._features", "abstain.detectors._base_scores", "abstain.combine._pvalues",
    "abstain.combine._guarantee", "abstain.combine._pipeline", "abstain.ordinal",
]


def _metric_functions():
    import inspect

    import abstain.metrics as metrics

    # the bootstrap helpers resample rows of any statistic, the scorers take scikit-learn's
    # (estimator, X, y), the checks take one option, the registry takes a MetricSpec and
    # evaluate_ood_tables takes tables that hold the truth: not metrics of scores
    helpers = {"bootstrap_indices", "bootstrap_interval", "neg_aurc_scorer",
               "neg_selective_risk_scorer", "coverage_at_risk_scorer", "check_bootstrap",
               "check_pair_search", "resolve_search", "register_metric",
               "evaluate_ood_tables", "metric_replicates", "resample_counts"}
    return [getattr(metrics, n) for n in metrics.__all__
            if inspect.isfunction(getattr(metrics, n)) and n not in helpers]


def _fit_methods():
    import importlib
    import inspect

    out = []
    for name in FIT_MODULES:
        module = importlib.import_module(name)
        for cls_name, cls in vars(module).items():
            if (inspect.isclass(cls) and cls.__module__ == name and not cls_name.startswith("_")
                    and hasattr(cls, "fit")):
                out.append(cls.fit)
                if hasattr(cls, "tune"):
                    out.append(cls.tune)
    return out


@pytest.mark.parametrize("func", _metric_functions(), ids=lambda f: f.__name__)
def test_metrics_take_the_truth_first_and_keywords(func):
    import inspect

    params = list(inspect.signature(func).parameters.values())
    assert all(p.kind is not p.POSITIONAL_ONLY for p in params)
    names = [p.name for p in params]
    assert names[0] in ("losses", "is_ood")
    truth = [n for n in names if n in ("losses", "is_ood")]
    assert names[: len(truth)] == truth
    assert names[len(truth)] in ("uncertainty", "scores")


@pytest.mark.parametrize("fit", _fit_methods(), ids=lambda f: f.__qualname__)
def test_fits_take_the_scores_first_and_keywords(fit):
    import inspect

    params = list(inspect.signature(fit).parameters.values())[1:]
    assert all(p.kind is not p.POSITIONAL_ONLY for p in params)
    names = [p.name for p in params]
    scores = [i for i, n in enumerate(names) if n in SCORES]
    truth = [i for i, n in enumerate(names) if n in TRUTH]
    assert scores, names
    assert not truth or max(scores) < min(truth), names


def test_fit_methods_are_found():
    names = {f.__qualname__ for f in _fit_methods()}
    assert {"CostBased.fit", "BoundedTPRFPR.fit", "DoubleScoreDetector.tune", "SELE.fit",
            "SVOR.fit", "ShiftedBaseScores.fit", "GuaranteedDetector.fit"} <= names


# --------------------------------------------------------------------------- no alias in use
def test_workflow_warns_nothing(rng):
    """A selective, an OOD and a combining workflow, end to end, with the new verbs only."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    from abstain import SelectiveClassifier
    from abstain.combine import GuaranteedDetector, ScoreCombiner
    from abstain.evaluation import default_baseline
    from abstain.metrics import aurc, auroc
    from abstain.ordinal import SVOR
    from abstain.scores import LossRegression, select_regularization

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        X = rng.normal(size=(600, 3))
        y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
        clf = SelectiveClassifier(LogisticRegression(), BoundedAbstention(0.8),
                                  random_state=0).fit(X[:400], y[:400])
        u = clf.uncertainty(X[400:])
        all_losses = (clf.predict(X) != y).astype(float)
        losses = all_losses[400:]
        assert 0.0 <= aurc(losses, u) <= 1.0
        labels, keep = clf.predict_with_reject(X[400:])
        np.testing.assert_array_equal(keep, clf.accept(X[400:]))
        search = select_regularization(LossRegression(features="shared"), X[:200], None,
                                       all_losses[:200], X[200:400], None, all_losses[200:400])
        learned = search.best.score(X[400:])
        rule = BoundedImprovement(target_risk=0.3, random_state=0).fit(learned, losses)
        assert rule.accept(rule.score(learned)).shape == (200,)
        ordinal = SVOR(C=1.0).fit(X[:200], np.digitize(X[:200, 0], [-0.5, 0.5]))
        np.testing.assert_array_equal(default_baseline(ordinal, X[400:]),
                                      ordinal.uncertainty(X[400:]))
        s = np.column_stack([u, rng.uniform(size=200)])
        is_ood = rng.uniform(size=200) < 0.3
        sel = BoundedTPRFPR(tpr=0.5, fpr=0.5, random_state=0).fit(s, is_ood, losses)
        assert sel.accept(s).dtype == bool and 0.0 <= auroc(is_ood, sel.score(s)) <= 1.0
        comb = ScoreCombiner(method="fisher").fit(rng.normal(size=(400, 2)))
        det = GuaranteedDetector(alpha=0.1, delta=0.1).fit(comb.score(rng.normal(size=(400, 2))))
        flagged = ~det.accept(comb.score(rng.normal(size=(50, 2)) + 3.0))
        assert flagged.mean() > 0.5
        np.testing.assert_array_equal(det.accept_proba([0.0, 9.0]), [1.0, 0.0])
