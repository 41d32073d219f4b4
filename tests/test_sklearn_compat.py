"""SelectiveClassifier and SVOR inside scikit-learn's checks and model selection.

Both define ``score(X)`` as the per-input uncertainty (docs/architecture.md, "Verbs and
argument order"), not scikit-learn's ``score(X, y)`` accuracy, so model selection is given
an explicit ``scoring`` and the checks that call ``score(X, y)`` are expected to fail.
"""

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the sklearn extra is not installed")

from sklearn.datasets import load_iris  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from abstain import SelectiveClassifier  # noqa: E402
from abstain.ordinal import SVOR  # noqa: E402

_SCORE_IS_UNCERTAINTY = "score(X) is the per-input uncertainty and takes no y"

#: The check_estimator checks that SelectiveClassifier fails, and why.
EXPECTED_FAILED_CHECKS = {
    "check_fit_score_takes_y": _SCORE_IS_UNCERTAINTY,
    "check_pipeline_consistency": f"{_SCORE_IS_UNCERTAINTY}; the check calls score(X, y)",
    "check_n_features_in_after_fitting": f"{_SCORE_IS_UNCERTAINTY}; predict, predict_proba "
                                         "and the rest do check n_features_in_",
    "check_do_not_raise_errors_in_init_or_set_params": (
        "the check passes the name of the **deprecated catch-all (which maps the 0.1 "
        "keyword score to score_func until 0.3) as a keyword, and __init__ refuses "
        "unknown keywords with TypeError"
    ),
}


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.mark.filterwarnings("ignore:Estimator SelectiveClassifier does not inherit")
def test_check_estimator():
    results = check_estimator(
        SelectiveClassifier(LogisticRegression()),
        expected_failed_checks=EXPECTED_FAILED_CHECKS,
        on_skip=None,
    )
    # Every unexpected failure raises; every expected one does fail (the list stays honest).
    status = {r["check_name"]: r["status"] for r in results}
    assert {name: status[name] for name in EXPECTED_FAILED_CHECKS} == dict.fromkeys(
        EXPECTED_FAILED_CHECKS, "xfail"
    )
    assert "failed" not in status.values()


def test_cross_val_score_and_grid_search(iris):
    X, y = iris
    clf = SelectiveClassifier(LogisticRegression(max_iter=1000), random_state=0)
    acc = cross_val_score(clf, X, y, scoring="accuracy", cv=3)
    assert acc.shape == (3,) and acc.min() > 0.85
    search = GridSearchCV(clf, {"estimator__C": [1e-3, 1.0]}, scoring="accuracy", cv=3)
    search.fit(X, y)
    assert search.best_params_ == {"estimator__C": 1.0}
    assert search.best_estimator_.reject_model_.coverage_ == pytest.approx(0.9, abs=0.05)


def test_default_scoring_is_refused(iris):
    # Without an explicit scoring scikit-learn would call score(X, y): it cannot.
    X, y = iris
    clf = SelectiveClassifier(LogisticRegression(max_iter=1000), random_state=0)
    with pytest.raises(TypeError, match="positional argument"):
        cross_val_score(clf, X, y, cv=3, error_score="raise")


def test_svor_in_model_selection(iris):
    X, y = iris
    acc = cross_val_score(SVOR(), X, y, scoring="accuracy", cv=3)
    assert acc.shape == (3,) and acc.min() > 0.85
    search = GridSearchCV(SVOR(), {"C": [1e-3, 1.0]}, scoring="accuracy", cv=3).fit(X, y)
    assert search.best_params_ == {"C": 1.0}
    assert np.isfinite(search.best_score_)
