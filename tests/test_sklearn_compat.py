"""SelectiveClassifier and SVOR inside scikit-learn's checks and model selection.

Both keep scikit-learn's contract (docs/architecture.md, "Verbs and argument order"):
``score(X, y)`` is the accuracy, a float, so model selection works without ``scoring``; the
per-input uncertainty is ``uncertainty(X)``, which the scorers of ``abstain.metrics`` use.
"""

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the sklearn extra is not installed")

from sklearn.datasets import load_iris  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import accuracy_score  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from abstain import SelectiveClassifier  # noqa: E402
from abstain.metrics import neg_aurc_scorer  # noqa: E402
from abstain.ordinal import SVOR  # noqa: E402

#: The check_estimator checks that SelectiveClassifier fails, and why: none.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}

#: The check_estimator checks that SVOR fails, and why.
SVOR_EXPECTED_FAILED_CHECKS = {
    "check_classifiers_train": (
        "the check's three-class data are blobs in the plane in no order along any "
        "direction; an ordinal model orders the classes along <x, w> and reaches 0.40 "
        "training accuracy there (0.74 under the best relabelling), below the check's "
        "0.83; its binary half passes (0.955)"
    ),
}


def _check(estimator, expected):
    results = check_estimator(estimator, expected_failed_checks=expected, on_skip=None)
    # Every unexpected failure raises; every expected one does fail (the list stays honest).
    status = {r["check_name"]: r["status"] for r in results}
    assert {name: status[name] for name in expected} == dict.fromkeys(expected, "xfail")
    assert "failed" not in status.values()


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.mark.filterwarnings("ignore:Estimator SelectiveClassifier does not inherit")
def test_check_estimator():
    _check(SelectiveClassifier(LogisticRegression()), EXPECTED_FAILED_CHECKS)


@pytest.mark.filterwarnings("ignore:Estimator SVOR does not inherit")
def test_svor_check_estimator():
    _check(SVOR(), SVOR_EXPECTED_FAILED_CHECKS)


@pytest.mark.parametrize("make", [
    lambda: SelectiveClassifier(LogisticRegression(max_iter=1000), random_state=0),
    SVOR,
], ids=["SelectiveClassifier", "SVOR"])
def test_model_selection_without_scoring_uses_the_accuracy(iris, make):
    X, y = iris
    cv = KFold(3, shuffle=True, random_state=0)
    default = cross_val_score(make(), X, y, cv=cv, error_score="raise")
    assert default.dtype == np.float64 and default.shape == (3,) and default.min() > 0.8
    np.testing.assert_array_equal(default, cross_val_score(make(), X, y, cv=cv,
                                                           scoring="accuracy"))
    fold = [accuracy_score(y[te], make().fit(X[tr], y[tr]).predict(X[te]))
            for tr, te in cv.split(X)]
    np.testing.assert_array_equal(default, fold)
    grid = ({"estimator__C": [1e-3, 1.0]} if isinstance(make(), SelectiveClassifier)
            else {"C": [1e-3, 1.0]})
    search = GridSearchCV(make(), grid, cv=cv, error_score="raise").fit(X, y)
    with_accuracy = GridSearchCV(make(), grid, cv=cv, scoring="accuracy").fit(X, y)
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"],
                                  with_accuracy.cv_results_["mean_test_score"])
    assert search.best_params_ == with_accuracy.best_params_ == {next(iter(grid)): 1.0}
    assert search.score(X, y) == accuracy_score(y, search.predict(X))


def test_grid_search_by_aurc(iris):
    X, y = iris
    clf = SelectiveClassifier(LogisticRegression(max_iter=1000), random_state=0)
    search = GridSearchCV(clf, {"estimator__C": [1e-3, 1.0]}, scoring=neg_aurc_scorer, cv=3)
    search.fit(X, y)
    assert search.best_params_ == {"estimator__C": 1.0}
    assert -0.05 < search.best_score_ <= 0.0
    assert search.best_estimator_.reject_model_.coverage_ == pytest.approx(0.9, abs=0.05)
    assert search.score(X, y) == neg_aurc_scorer(search.best_estimator_, X, y)
