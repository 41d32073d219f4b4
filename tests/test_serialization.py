"""Fitted rules round-trip through plain JSON; parameters follow scikit-learn's contract."""

import json
import math
import warnings

import numpy as np
import pytest

from abstain import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
    InfeasibleTargetWarning,
    NotFittedError,
    rule_from_json,
)

RNG = np.random.default_rng(7)
U = RNG.integers(0, 5, 40).astype(float)
L = (RNG.random(40) < U / 5).astype(float)

RULES = [
    CostBased(reject_cost=0.3),
    BoundedAbstention(target_coverage=0.65, random_state=3),
    BoundedImprovement(target_risk=0.15),
    BoundedImprovement(target_risk=0.3, delta=0.2),
    BoundedImprovement(target_risk=1e-6),  # infeasible
]


def _strict_loads(text):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("rule", RULES, ids=repr)
def test_json_round_trip(rule):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        rule.fit(U, L)
    text = rule.to_json()
    _strict_loads(text)
    loaded = rule_from_json(text)
    assert type(loaded) is type(rule)
    assert loaded.get_params() == rule.get_params()
    for name in ("threshold_", "accept_prob_", "coverage_", "risk_", "feasible_", "n_samples_"):
        a, b = getattr(rule, name), getattr(loaded, name)
        assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), name
    assert loaded.equivalent_ == rule.equivalent_
    grid = np.linspace(-1, 6, 29)
    np.testing.assert_array_equal(loaded.accept_proba(grid), rule.accept_proba(grid))
    if isinstance(rule.random_state, int):
        np.testing.assert_array_equal(loaded.accept(U), rule.accept(U))


def test_plug_in_cost_rule_round_trip():
    rule = CostBased(reject_cost=0.2).fit()
    loaded = rule_from_json(rule.to_json())
    assert loaded.threshold_ == 0.2 and loaded.equivalent_ is None


@pytest.mark.parametrize(
    "text, match",
    [
        ("[1, 2]", "abstain.rule/1"),
        ('{"format": "abstain.rule/1", "model": "os.system", "params": {}, "fitted": {}}', "model"),
        (
            '{"format": "abstain.rule/1", "model": "CostBased", "params": {}, '
            '"fitted": {"__class__": 1}}',
            "unknown fitted attribute",
        ),
    ],
)
def test_bad_rule_files(text, match):
    with pytest.raises(ValueError, match=match):
        rule_from_json(text)


def test_unfitted_rule_refuses():
    for rule in (CostBased(0.1), BoundedAbstention(0.5), BoundedImprovement(0.1)):
        with pytest.raises(NotFittedError, match="not fitted"):
            rule.accept_proba([0.1])
        with pytest.raises(NotFittedError):
            rule.to_json()


def test_sklearn_clone_and_params():
    from sklearn.base import clone

    rule = BoundedImprovement(target_risk=0.2, delta=0.1, random_state=0)
    copy = clone(rule)
    assert copy is not rule and copy.get_params() == rule.get_params()
    rule.set_params(target_risk=0.3)
    assert rule.target_risk == 0.3
    with pytest.raises(ValueError, match="not a parameter"):
        rule.set_params(target=0.3)
    expected = "BoundedAbstention(target_coverage=0.8, random_state=None)"
    assert repr(BoundedAbstention(0.8)) == expected


def test_accept_is_reproducible_and_matches_probability():
    u = np.zeros(20000)  # one tie group: every decision is randomised
    rule = BoundedAbstention(target_coverage=0.3, random_state=11).fit(u[:10], np.zeros(10))
    first, second = rule.accept(u), rule.accept(u)
    np.testing.assert_array_equal(first, second)
    assert abs(first.mean() - 0.3) < 0.02
    assert rule.accept_proba(np.array([])).shape == (0,)
