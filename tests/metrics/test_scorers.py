"""Scorers for scikit-learn's model selection: the metric of the estimator's 0/1 errors and
uncertainty, negated where lower is better, usable as ``scoring=``."""

import pickle

import numpy as np
import pytest

from abstain import BoundedAbstention, SelectiveClassifier
from abstain.metrics import (
    aurc,
    coverage_at_risk,
    coverage_at_risk_scorer,
    neg_aurc_scorer,
    neg_selective_risk_scorer,
    selective_risk_at_coverage,
)
from abstain.ordinal import SVOR

sklearn = pytest.importorskip("sklearn", reason="the sklearn extra is not installed")
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402


class Fixed:
    """A fitted estimator stand-in: row ``i`` of ``X`` is an index into fixed outputs."""

    def __init__(self, labels, uncertainty):
        self.labels = np.asarray(labels)
        self.u = np.asarray(uncertainty, dtype=float)

    def predict(self, X):
        return self.labels[np.asarray(X, dtype=int).ravel()]

    def uncertainty(self, X):
        return self.u[np.asarray(X, dtype=int).ravel()]


SCORERS = [
    (neg_aurc_scorer, lambda e, u: -aurc(e, u)),
    (neg_selective_risk_scorer(0.5), lambda e, u: -selective_risk_at_coverage(e, u, 0.5)),
    (neg_selective_risk_scorer(1.0), lambda e, u: -selective_risk_at_coverage(e, u, 1.0)),
    (neg_selective_risk_scorer(0.3), lambda e, u: -selective_risk_at_coverage(e, u, 0.3)),
    (coverage_at_risk_scorer(0.2), lambda e, u: coverage_at_risk(e, u, 0.2)),
    (coverage_at_risk_scorer(0.01), lambda e, u: coverage_at_risk(e, u, 0.01)),
]
IDS = ["aurc", "risk@0.5", "risk@1", "risk@0.3", "coverage@0.2", "coverage@0.01"]


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.mark.parametrize(("scorer", "metric"), SCORERS, ids=IDS)
def test_scorer_is_the_metric_of_the_errors_with_its_tie_rule(rng, scorer, metric):
    for _ in range(20):
        n = int(rng.integers(1, 30))
        y = rng.integers(0, 3, n)
        pred = np.where(rng.uniform(size=n) < 0.3, (y + 1) % 3, y)
        u = rng.integers(0, 4, n) / 4.0  # many ties
        errors = (pred != y).astype(float)
        X = np.arange(n)[:, None]
        value = scorer(Fixed(pred, u), X, y)
        assert isinstance(value, float)
        assert value == metric(errors, u)
        perm = rng.permutation(n)  # the tie rule does not depend on the row order
        assert scorer(Fixed(pred, u), X[perm], y[perm]) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize(("scorer", "metric"), SCORERS, ids=IDS)
def test_scorer_on_selective_classifier_and_svor(iris, scorer, metric):
    X, y = iris
    train = np.arange(len(y)) % 3 != 0
    models = [SelectiveClassifier(LogisticRegression(C=0.05, max_iter=1000), random_state=0),
              SVOR(C=0.1)]
    for model in models:
        model.fit(X[train], y[train])
        errors = (model.predict(X[~train]) != y[~train]).astype(float)
        assert errors.sum() > 0  # the metric is not trivially 0
        assert scorer(model, X[~train], y[~train]) == metric(errors, model.uncertainty(X[~train]))


def test_string_labels_and_bounds():
    est = Fixed(["a", "b", "b", "a"], [0.1, 0.2, 0.3, 0.4])
    y = np.array(["a", "b", "a", "a"])
    X = np.arange(4)[:, None]
    assert neg_aurc_scorer(est, X, y) == -aurc([0, 0, 1, 0], [0.1, 0.2, 0.3, 0.4])
    perfect = Fixed(y, [0.1, 0.2, 0.3, 0.4])
    assert neg_aurc_scorer(perfect, X, y) == 0.0  # +0.0: greater is better, 0 the best
    assert neg_selective_risk_scorer(0.5)(perfect, X, y) == 0.0
    assert coverage_at_risk_scorer(0.1)(perfect, X, y) == 1.0
    assert coverage_at_risk_scorer(0.1)(Fixed(["b"] * 4, [0.0] * 4), X, y) == 0.0


def test_a_scorer_pickles(iris):
    X, y = iris
    model = SVOR(C=0.1).fit(X, y)
    for scorer in (neg_aurc_scorer, neg_selective_risk_scorer(0.5), coverage_at_risk_scorer(0.2)):
        assert pickle.loads(pickle.dumps(scorer))(model, X, y) == scorer(model, X, y)


def test_an_estimator_without_uncertainty_is_refused(iris):
    X, y = iris
    plain = LogisticRegression(max_iter=1000).fit(X, y)
    message = (r"^estimator must have an uncertainty\(X\) method \(higher = rejected first\), "
               r"such as SelectiveClassifier or SVOR; got LogisticRegression\. Wrap a plain "
               r"classifier in abstain\.SelectiveClassifier\.$")
    for scorer in (neg_aurc_scorer, neg_selective_risk_scorer(0.5), coverage_at_risk_scorer(0.2)):
        with pytest.raises(TypeError, match=message):
            scorer(plain, X, y)
    with pytest.raises(TypeError, match=message):
        cross_val_score(LogisticRegression(max_iter=1000), X, y, cv=3,
                        scoring=neg_aurc_scorer, error_score="raise")


@pytest.mark.parametrize(("y", "u", "message"), [
    ([0, 1, 1], [0.1, 0.2, 0.3], r"^X and y must have the same length; got X has 4, y has 3\.$"),
    ([[0], [1], [1], [0]], [0.1, 0.2, 0.3, 0.4],
     r"^y must be a 1-D array of class labels; got an array of shape \(4, 1\)\.$"),
    ([0.0, np.nan, 1.0, 1.0], [0.1, 0.2, 0.3, 0.4], r"^y must hold finite labels; got 1 NaN\.$"),
    (["0", "1", "1", "0"], [0.1, 0.2, 0.3, 0.4],
     r"^y must hold labels of the type that the model predicts \(numbers, dtype int64\); got "
     r"strings, dtype <U1\.$"),
    ([0, 1, 1, 0], [0.1, np.nan, 0.3, 0.4], r"^uncertainty\(X\) must be finite; got 1 NaN\.$"),
    ([0, 1, 1, 0], [0.1, 0.2, 0.3],
     r"^predict\(X\) and uncertainty\(X\) must have the same length; got predict\(X\) has 4, "
     r"uncertainty\(X\) has 3\.$"),
])
def test_bad_labels_and_outputs_are_refused(y, u, message):
    est = Fixed([0, 1, 0, 0], u)
    est.uncertainty = lambda X: np.asarray(u, dtype=float)
    for scorer in (neg_aurc_scorer, neg_selective_risk_scorer(0.5), coverage_at_risk_scorer(0.2)):
        with pytest.raises(ValueError, match=message):
            scorer(est, np.arange(4)[:, None], y)


@pytest.mark.parametrize(("make", "value", "message"), [
    (neg_selective_risk_scorer, 0.0, r"^coverage must be in \(0, 1\]; got 0\.0\.$"),
    (neg_selective_risk_scorer, 1.5, r"^coverage must be in \(0, 1\]; got 1\.5\.$"),
    (neg_selective_risk_scorer, "0.5", r"^coverage must be a real number; got '0\.5'\.$"),
    (coverage_at_risk_scorer, 0.0, r"^target_risk must be "),
    (coverage_at_risk_scorer, np.nan, r"^target_risk must be "),
])
def test_bad_parameters_are_refused_when_the_scorer_is_made(make, value, message):
    with pytest.raises(ValueError, match=message):
        make(value)


def test_a_column_of_predictions_and_targets_given_as_numbers_of_any_type():
    # predict(X) of shape (n, 1) broadcast against y: "losses must be one-dimensional; got
    # an array of shape (4, 4)"; a 0-d array or a Fraction was "not a real number; got 0.5"
    from fractions import Fraction

    est = Fixed(np.array([[0], [1], [0], [0]]), [0.1, 0.2, 0.3, 0.4])
    est.uncertainty = lambda X: np.array([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match=r"^predict\(X\) must return one label per row "
                                         r"\(one-dimensional\); got shape \(4, 1\)\.$"):
        neg_aurc_scorer(est, np.arange(4)[:, None], [0, 1, 1, 0])
    for coverage in (np.array(0.5), Fraction(1, 2)):
        neg_selective_risk_scorer(coverage)  # taken when the scorer is made
        assert selective_risk_at_coverage([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], coverage) == 0.5


def test_cross_val_score_with_a_scorer_is_the_scorer_on_each_fold(iris):
    X, y = iris
    clf = SelectiveClassifier(LogisticRegression(C=0.05, max_iter=1000), BoundedAbstention(0.8),
                              random_state=0)
    cv = KFold(3, shuffle=True, random_state=0)
    for scorer in (neg_aurc_scorer, neg_selective_risk_scorer(0.8), coverage_at_risk_scorer(0.05)):
        got = cross_val_score(clf, X, y, cv=cv, scoring=scorer)
        expected = [scorer(clone(clf).fit(X[tr], y[tr]), X[te], y[te]) for tr, te in cv.split(X)]
        np.testing.assert_array_equal(got, expected)


def test_grid_search_picks_the_model_of_least_aurc(iris):
    X, y = iris
    cv = KFold(3, shuffle=True, random_state=0)
    grid = {"C": [0.001, 0.03, 1.0]}
    search = GridSearchCV(SVOR(), grid, scoring=neg_aurc_scorer, cv=cv).fit(X, y)
    mean_aurc = {c: np.mean([aurc((m.predict(X[te]) != y[te]).astype(float),
                                  m.uncertainty(X[te]))
                             for tr, te in cv.split(X)
                             for m in [SVOR(C=c).fit(X[tr], y[tr])]])
                 for c in grid["C"]}
    np.testing.assert_allclose(-search.cv_results_["mean_test_score"],
                               [mean_aurc[c] for c in grid["C"]], rtol=1e-12)
    assert search.best_params_ == {"C": min(mean_aurc, key=mean_aurc.get)}
    assert search.best_score_ == pytest.approx(-min(mean_aurc.values()), rel=1e-12)
    assert search.scorer_ is neg_aurc_scorer
