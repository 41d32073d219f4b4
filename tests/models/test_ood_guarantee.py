"""BoundedTPRFPR(delta=...): the certified TPR and FPR against a loop reference, its
refusals, and the guarantee checked over 1000 draws."""

import math
import warnings

import numpy as np
import pytest
from reference.ltt_ref import certified_tpr_fpr_ref
from scipy import stats

from abstain import InfeasibleTargetWarning, load_json
from abstain.models import BoundedTPRFPR


def test_certified_rule_matches_reference_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(4, 200))
        ood = rng.random(n) < 0.5
        ood[:2] = [False, True]
        s = rng.integers(0, int(rng.integers(2, 25)), n) + 3.0 * ood * rng.random(n)
        s = np.round(s)  # many ties
        losses = (rng.random(n) < 0.3).astype(float)
        tpr, fpr = float(rng.choice([0.3, 0.6, 0.9])), float(rng.choice([0.2, 0.5, 1.0]))
        delta = float(rng.choice([0.05, 0.2, 0.5]))
        want = certified_tpr_fpr_ref(s.tolist(), ood.tolist(), losses.tolist(), tpr, fpr, delta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            got = BoundedTPRFPR(tpr=tpr, fpr=fpr, delta=delta).fit(s, ood, losses)
        if want is None:
            assert not got.feasible_
        else:
            assert got.feasible_ and got.accept_prob_ == 1.0
            assert got.threshold_ == want[0] and got.risk_ == pytest.approx(want[1])


def test_two_scores_round_trip_and_refusals():
    rng = np.random.default_rng(1)
    ood = rng.random(3000) < 0.5
    S = np.column_stack([rng.normal(size=3000) + ood, rng.normal(size=3000) + 2 * ood])
    losses = (rng.random(3000) < 0.1).astype(float)
    rule = BoundedTPRFPR(0.8, 0.3, delta=0.1, n_directions=12).fit(S, ood, losses)
    assert rule.feasible_ and rule.tpr_ >= 0.8 and rule.fpr_ <= 0.3
    back = load_json(rule.to_json())
    assert back.delta == 0.1
    np.testing.assert_array_equal(back.accept(S), rule.accept(S))
    with pytest.raises(ValueError, match="^search must be 'grid' with delta"):
        BoundedTPRFPR(0.8, 0.3, delta=0.1, search="exact").fit(S, ood, losses)
    with pytest.raises(ValueError, match="^sample_weight must be None with delta"):
        BoundedTPRFPR(0.8, 0.3, delta=0.1).fit(S, ood, losses, sample_weight=np.ones(3000))
    with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\)"):
        BoundedTPRFPR(0.8, 0.3, delta=1.0).fit(S, ood, losses)


def test_a_rate_no_sample_can_certify_is_infeasible():
    s, ood = np.arange(40.0), np.arange(40) % 2 == 1
    with pytest.warns(InfeasibleTargetWarning, match="certified with delta 0.1"):
        rule = BoundedTPRFPR(tpr=1.0, fpr=1.0, delta=0.1).fit(s, ood, np.zeros(40))
    assert not rule.feasible_ and not np.any(rule.accept(s))


DRAWS, N, TPR, FPR, DELTA = 1000, 1000, 0.8, 0.3, 0.1
SLACK = 3 * math.sqrt(DELTA * (1 - DELTA) / DRAWS)


def _violations(increasing_loss: bool, **params):
    """ID scores N(0, 1), OOD N(2.5, 1): accepting s <= t has TPR Phi(t), FPR Phi(t - 2.5).
    A loss that grows with the score makes the least-risk rule sit on the TPR bound; a
    zero loss makes it take the largest TPR, on the FPR bound."""
    rng = np.random.default_rng(7)
    ood = rng.random((DRAWS, N)) < 0.5
    s = rng.normal(size=(DRAWS, N)) + 2.5 * ood
    if increasing_loss:
        losses = (rng.random((DRAWS, N)) < stats.norm.cdf(s) / 2).astype(float)
    else:
        losses = np.zeros((DRAWS, N))
    bad = feasible = 0
    for row in range(DRAWS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            rule = BoundedTPRFPR(TPR, FPR, **params).fit(s[row], ood[row], losses[row])
        if rule.feasible_:
            feasible += 1
            t = rule.threshold_
            bad += stats.norm.cdf(t) < TPR or stats.norm.cdf(t - 2.5) > FPR
    assert feasible >= 0.9 * DRAWS
    return bad / DRAWS


@pytest.mark.slow
@pytest.mark.parametrize("increasing_loss", [True, False])
def test_certified_rates_hold_over_draws(increasing_loss):
    assert _violations(increasing_loss, delta=DELTA) <= DELTA + SLACK


@pytest.mark.slow
def test_empirical_rates_do_not():
    assert _violations(True) > 0.3


def test_a_score_table_is_refused_with_delta():
    from abstain import ScoreTable

    table = ScoreTable.from_arrays([0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 0.0, 0.0],
                                   is_ood=[False, False, True, True])
    with pytest.raises(ValueError, match="a ScoreTable keeps no rows"):
        BoundedTPRFPR(tpr=0.5, fpr=0.5, delta=0.1).fit(table)
