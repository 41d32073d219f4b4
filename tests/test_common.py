"""Common checks over every estimator: the scikit-learn contract and the JSON round trip.

``estimators.CASES`` must cover every class registered for serialisation; each is
constructed with its defaults and fitted on a small synthetic sample.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from estimators import CASES

import abstain._load  # noqa: F401  (imports every module that registers a kind)
from abstain import NotFittedError, SelectiveClassifier, load_json
from abstain._core.serialize import registered_kinds
from abstain.exceptions import ConvergenceWarning, InfeasibleTargetWarning

NAMES = sorted(CASES)


def _fitted(name: str) -> Any:
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleTargetWarning)  # defaults meet their targets
        warnings.simplefilter("ignore", ConvergenceWarning)
        return case.fit(case.make())


def _same_params(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal parameters, nested estimators compared by type and parameters (a tuple comes
    back from JSON as a list)."""
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if hasattr(x, "get_params"):
            if type(x) is not type(y) or not _same_params(x.get_params(), y.get_params()):
                return False
        elif isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
            # a list of estimators (DetectorBank's detectors) item by item
            if len(x) != len(y) or not _same_params(dict(enumerate(x)), dict(enumerate(y))):
                return False
        elif not (x is y or x == y):
            return False
    return True


def test_the_registry_covers_every_serialisable_class():
    # ScoreTable is data, not an estimator: tests/tables/test_table.py checks its round trip
    kinds = {k: v for k, v in registered_kinds().items() if v.family != "table"}
    assert set(CASES) == set(kinds), "add the new class to tests/estimators.py"
    for name, case in CASES.items():
        assert type(case.make()) is kinds[name].cls


@pytest.mark.parametrize("name", NAMES)
def test_json_round_trip_gives_the_same_outputs(name):
    obj = _fitted(name)
    text = obj.to_json()
    doc = json.loads(text, parse_constant=pytest.fail)  # standard JSON: no NaN constants
    assert (doc["format"], doc["kind"]) == ("abstain/1", name)
    assert sorted(doc) == ["fitted", "format", "kind", "params"]
    loaded = load_json(text)
    assert type(loaded) is type(obj)
    assert _same_params(loaded.get_params(deep=False), obj.get_params(deep=False))
    assert loaded.to_json() == text  # nothing lost or changed on the way
    got, want = CASES[name].outputs(loaded), CASES[name].outputs(obj)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=f"{name}.{key}")


@pytest.mark.parametrize("name", NAMES)
def test_params_round_trip_through_set_params_and_clone(name):
    obj = CASES[name].make()
    params = obj.get_params(deep=False)
    again = type(obj)().set_params(**params)
    assert _same_params(again.get_params(deep=False), params)
    assert _same_params(again.get_params(deep=True), obj.get_params(deep=True))
    base = pytest.importorskip("sklearn.base")
    copy = base.clone(obj)
    assert copy is not obj and _same_params(copy.get_params(deep=False), params)
    fitted = _fitted(name)
    assert _same_params(base.clone(fitted).get_params(deep=False),
                        fitted.get_params(deep=False))


@pytest.mark.parametrize("name", NAMES)
def test_unfitted_use_raises_not_fitted(name):
    case = CASES[name]
    obj = case.make()
    if case.use is None:  # no fitted state: usable at once, and fitting changes nothing
        before = case.outputs(obj)
        text = obj.to_json()
        after = case.outputs(_fitted(name))
        for key in before:
            np.testing.assert_array_equal(before[key], after[key])
        assert load_json(text).to_json() == text
        return
    with pytest.raises(NotFittedError, match="not fitted yet"):
        case.use(obj)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        obj.to_json()


@pytest.mark.parametrize("name", NAMES)
def test_loading_runs_the_classes_own_parameter_checks(name):
    doc = json.loads(_fitted(name).to_json())
    first = next(iter(doc["params"]), None)
    if first is None:  # MaxLogit: no parameters
        doc["params"] = {"bogus": 1}
        with pytest.raises(ValueError, match="params.bogus is not a parameter of MaxLogit"):
            load_json(json.dumps(doc))
        return
    doc["params"][first] = "not a number" if doc["params"][first] != "x" else 1.5
    with pytest.raises(ValueError, match=r"^params[.:]"):
        load_json(json.dumps(doc))


def test_selective_classifier_contract():
    base = pytest.importorskip("sklearn.base")
    from sklearn.linear_model import LogisticRegression

    from abstain import BoundedAbstention

    clf = SelectiveClassifier(LogisticRegression(), BoundedAbstention(0.8), random_state=0)
    params = clf.get_params(deep=False)
    again = SelectiveClassifier(None).set_params(**params)
    assert again.get_params(deep=False) == params
    copy = base.clone(clf)
    assert copy is not clf and _same_params(copy.get_params(deep=False), params)
    assert copy.get_params()["reject_model__target_coverage"] == 0.8
    X = np.vstack([np.zeros((10, 2)), np.ones((10, 2))]) + np.arange(20)[:, None] * 0.01
    with pytest.raises(NotFittedError, match="not fitted yet"):
        clf.accept_proba(X)
    assert not hasattr(clf, "to_json")  # wraps an arbitrary estimator: no JSON without pickle
