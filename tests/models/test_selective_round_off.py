"""The selective reject models where a float computation sits on a tie or a tiny part of a
group: a group whose mean loss equals the reject cost, an acceptance of 1e-8 of a group, a
coverage times n a round-off away from a whole number, a coverage below 1e-16, and the
target risk at which the bounded-improvement model gives a fitted rule. Each case is checked
in rational arithmetic (the float inputs taken as the exact numbers they are)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from abstain import BoundedAbstention, BoundedImprovement, CostBased
from abstain.metrics import selective_risk_at_coverage


def _exact_risk(u, losses, threshold, nu):
    """Expected accepted loss over expected accepted count of the rule, in Fractions."""
    acc = [Fraction(1) if v < threshold else Fraction(nu) if v == threshold else Fraction(0)
           for v in u]
    count = sum(acc)
    return sum(a * Fraction(loss) for a, loss in zip(acc, losses, strict=True)) / count


@pytest.mark.parametrize(("u", "losses", "cost"), [
    ([0.0, 1.0], [0.1, 0.3], 0.3),
    ([-1.154808463059043, -0.1147871579753869, -0.11251733694348373],
     [5.36193944419103e18, 7.140901904858455e18, 1.2405087166322577e19], 1.2405087166322577e19),
])
def test_a_group_whose_mean_loss_is_the_reject_cost_is_accepted(u, losses, cost):
    # accepting the last group changes the exact cost by 0: the largest coverage wins
    rule = CostBased(cost).fit(u, losses)
    assert rule.coverage_ == 1.0 and rule.threshold_ == max(u)


def _exact_cost(u, losses, cost, accepted):
    """The exact total cost of accepting the rows whose score is in ``accepted``."""
    return sum(Fraction(loss) if v in accepted else Fraction(cost)
               for v, loss in zip(u.tolist(), losses.tolist(), strict=True))


def test_cost_based_is_optimal_against_exact_costs_on_random_draws():
    # the rule's exact cost is the least up to a relative 1e-12, and a last group whose
    # losses all equal the reject cost is always accepted (its cost is exactly 0)
    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(1, 7))
        u = rng.integers(0, 4, n).astype(float)
        losses = rng.choice([0.1, 0.2, 0.3, 0.7, 1 / 3, 2 / 3], n)
        cost = float(rng.choice(losses))
        rule = CostBased(cost).fit(u, losses)
        values = sorted(set(u.tolist()))
        costs = [_exact_cost(u, losses, cost, values[:k]) for k in range(len(values) + 1)]
        got = sum(v <= rule.threshold_ for v in values)
        assert costs[got] <= min(costs) * (1 + Fraction(1, 10**12))
        last = losses[u == values[-1]]
        if got == len(values) - 1 and np.all(last == cost):
            pytest.fail(f"the last group (losses {last}) is the reject cost: accept it")


def test_cost_based_does_not_depend_on_the_order_of_the_rows():
    # a group whose losses sum to its count times the reject cost in one order and not in
    # another (0.1 + 0.3 + 0.4 + 0.4 against 4 * 0.3): equal costs, the largest coverage
    u = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    losses = np.array([0.1, 0.3, 0.4, 0.4, 0.7])
    for order in ([0, 1, 2, 3, 4], [1, 3, 0, 2, 4]):
        rule = CostBased(0.3).fit(u[order], losses[order])
        assert (rule.coverage_, rule.threshold_) == (0.8, 0.0)
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        u = rng.integers(0, 3, n).astype(float)
        losses = rng.choice([0.1, 0.2, 0.3, 0.4, 0.7, 1 / 3], n)
        cost = float(rng.choice([0.1, 0.2, 0.3, 0.4, 1 / 3]))
        rules = {(r.threshold_, r.coverage_) for r in (
            CostBased(cost).fit(u[p], losses[p]) for p in
            (rng.permutation(n) for _ in range(6)))}
        assert len(rules) == 1, (u, losses, cost, rules)


@pytest.mark.parametrize("model", ["improvement", "abstention"])
def test_cost_based_at_the_low_end_of_the_equivalent_reject_costs_returns_the_rule(model):
    # the low end is a chord's slope in floats, which may fall an ulp below the exact one
    rng = np.random.default_rng(4)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        u = rng.integers(0, 4, n).astype(float)
        losses = rng.choice([0.0, 0.1, 0.3, 0.63, 1.0], n)
        rule = (BoundedImprovement(float(rng.choice([0.2, 0.5, 0.7])))
                if model == "improvement" else
                BoundedAbstention(float(rng.choice([0.25, 0.5, 0.75])))).fit(u, losses)
        interval = rule.equivalent_.reject_cost
        if (interval is None or not rule.feasible_ or interval[0] == 0.0
                or rule.accept_prob_ < 1.0  # CostBased accepts whole groups only
                or interval[0] == interval[1]):  # a tie with the next rule as well
            continue
        low, high = interval
        for cost in (low, 0.5 * (low + high) if math.isfinite(high) else 2 * low):
            other = CostBased(cost).fit(u, losses)
            assert (other.threshold_, other.coverage_) == (rule.threshold_, rule.coverage_)


def test_a_tiny_acceptance_of_a_group_keeps_the_risk_at_the_target():
    u, losses = np.arange(11.0), np.r_[np.zeros(10), 1.0]
    rule = BoundedImprovement(1e-9).fit(u, losses)
    assert rule.threshold_ == 10.0
    assert rule.accept_prob_ == pytest.approx(1.000000001e-08, rel=1e-12)
    exact = _exact_risk(u, losses, rule.threshold_, rule.accept_prob_)
    assert exact <= Fraction(1e-9) * (1 + Fraction(1, 10**12))
    assert rule.risk_ == pytest.approx(float(exact), rel=1e-12)


def test_bounded_improvement_meets_small_targets_exactly_on_random_draws():
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(2, 12))
        u = rng.integers(0, 5, n).astype(float)
        losses = rng.choice([0.0, 0.0, 0.25, 1.0, 3e5], n)
        target = float(10.0 ** rng.uniform(-12, -2)) * float(losses.max() or 1.0)
        rule = BoundedImprovement(target).fit(u, losses)
        if not rule.feasible_:
            continue
        exact = _exact_risk(u, losses, rule.threshold_, rule.accept_prob_)
        assert exact <= Fraction(target) * (1 + Fraction(1, 10**12))
        assert rule.risk_ == pytest.approx(float(exact), rel=1e-12, abs=0.0)


def test_a_coverage_a_round_off_from_a_whole_count_is_that_count():
    u = np.arange(100.0)
    losses = np.zeros(100)
    losses[7] = 1e300  # the eighth row: 0.07 * 100 == 7.000000000000001 would take 1e-15 of it
    rule = BoundedAbstention(0.07).fit(u, losses)
    assert rule.risk_ == 0.0
    assert selective_risk_at_coverage(losses, u, 0.07) == 0.0


@pytest.mark.parametrize("coverage", [1e-17, 1e-20, 1e-300])
def test_a_coverage_below_the_round_off_of_one_still_fits(coverage):
    u, losses = [0.0, 1.0], [1.0, 0.0]
    rule = BoundedAbstention(coverage).fit(u, losses)
    assert rule.threshold_ == 0.0 and rule.accept_prob_ == pytest.approx(2 * coverage)
    assert rule.coverage_ == coverage and rule.risk_ == 1.0
    assert selective_risk_at_coverage(losses, u, coverage) == 1.0


def test_the_equivalent_target_risk_gives_the_same_rule_on_random_draws():
    # equivalent_.target_risk = (r, r) promises that BoundedImprovement(r) fits this rule
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(500):
        n = int(rng.integers(2, 10))
        u = rng.integers(0, 4, n).astype(float)
        losses = rng.choice([0.0, 0.25, 0.5, 1.0], n)
        rule = BoundedAbstention(float(rng.choice([1 / 6, 0.25, 0.5, 0.7]))).fit(u, losses)
        tr = rule.equivalent_.target_risk
        if tr is None or tr[1] == math.inf or tr[0] == 0.0:
            continue
        seen += 1
        other = BoundedImprovement(tr[0]).fit(u, losses)
        assert other.coverage_ == pytest.approx(rule.coverage_, rel=1e-12)
    assert seen > 50


def test_an_exact_risk_tie_with_a_larger_rule_is_no_equivalent_target():
    losses = [1, 0.25, 0, 0.25, 0.5, 1, 0.5, 0, 0]
    u = [1, 0, 3, 3, 2, 1, 3, 1, 2]
    rule = BoundedAbstention(1 / 6).fit(u, losses)
    # with acceptance 1/6 of its group the rule's exact risk is 7/18, as is accepting
    # everything: that is the bounded-improvement model's optimum at 7/18
    assert _exact_risk(u, losses, rule.threshold_, Fraction(1, 6)) == Fraction(7, 18) \
        == _exact_risk(u, losses, 3.0, 1.0)
    assert rule.risk_ == pytest.approx(7 / 18, rel=1e-15)
    assert BoundedImprovement(rule.risk_).fit(u, losses).coverage_ == 1.0
    assert rule.equivalent_.target_risk is None


@pytest.mark.parametrize("cost", [0.2, 0.1, 1 / 3, 0.7])
@pytest.mark.parametrize("n", [1, 3, 7, 10])
def test_cost_based_cost_is_the_reject_cost_or_the_mean_loss_to_the_last_bit(cost, n):
    rejected = CostBased(cost).fit(np.arange(float(n)), np.full(n, 1e300))
    assert rejected.coverage_ == 0.0 and rejected.cost_ == cost
    losses = np.full(n, 0.01)
    accepted = CostBased(cost).fit(np.arange(float(n)), losses)
    assert accepted.coverage_ == 1.0 and accepted.cost_ == float(np.sum(losses) / n)


def test_the_reject_cost_of_a_randomised_rule_does_not_depend_on_the_row_order():
    # the group's mean and its chord, equal in exact arithmetic, were compared as floats:
    # None for 18 of 30 row orders of the same rows
    from abstain import BoundedAbstention

    rng = np.random.default_rng(8)
    u = np.repeat(np.arange(10.0), 12)
    losses = np.clip(u / 10 + rng.choice([-0.03, 0.0, 0.01, 0.02], u.size), 0, 1) + 0.1 / 3
    seen = set()
    for _ in range(30):
        p = rng.permutation(u.size)
        eq = BoundedAbstention(0.45).fit(u[p], losses[p]).equivalent_
        assert eq.reject_cost is not None
        low, high = eq.reject_cost
        assert low == high == pytest.approx(losses[u == 4].mean(), rel=1e-12)  # 54 of 120
        seen.add(low)
    assert len(seen) <= 3  # the group's sum in another order: its last bits only


def test_exact_loss_sums_of_many_rows_keep_costs_apart():
    # the tie slack grew with the rows (4 (n + 2) eps): at 4.5e14 rows it was 0.4 of the
    # costs, so accepting a group of mean loss 0.295 tied with rejecting all at 0.15 (and
    # the document was refused on load); at 1e8 rows a cost 1e-8 above the least tied too
    from abstain import ScoreTable, load_json

    c, ones = 452202187060705, 133505576105910
    t = ScoreTable.from_totals([0.0], [c], [float(ones)], loss_values=[0.0, 1.0],
                               loss_counts=[c - ones, ones])
    rule = CostBased(reject_cost=0.15).fit(t)
    assert (rule.coverage_, rule.cost_) == (0.0, 0.15)
    assert load_json(rule.to_json()).coverage_ == 0.0
    t = ScoreTable.from_totals([0.0, 1.0, 2.0], [50_000_000, 10, 49_999_990],
                               [0.0, 6.0, 49_999_990.0], loss_values=[0.0, 1.0],
                               loss_counts=[50_000_004, 49_999_996])
    rule = CostBased(0.5).fit(t)
    assert (rule.threshold_, rule.coverage_, rule.cost_) == (0.0, 0.5, 0.25)
