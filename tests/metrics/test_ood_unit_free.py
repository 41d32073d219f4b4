"""The default search of the two-score metrics does not change with the units of a column.

``search="auto"`` (the default of :func:`auroc`, :func:`oscr`, :func:`fpr_at_tpr`,
:func:`tnr_at_tpr`, :func:`detection_rate_at_false_alarm`, :func:`ood_roc_curve`,
:func:`ood_pr_curve`, :func:`risk_coverage_curve_at_fpr`, :func:`selective_risk_at_tpr_fpr`
and :func:`selective_risk_at_precision_recall`) is the exact search up to
``AUTO_EXACT_ROWS`` rows and the grid of the standardised columns above; both give the same
value when a column is multiplied by a positive constant."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abstain import PairTable
from abstain.metrics import (
    AUTO_EXACT_ROWS,
    auroc,
    detection_rate_at_false_alarm,
    fpr_at_tpr,
    ood_pr_curve,
    ood_roc_curve,
    oscr,
    risk_coverage_curve_at_fpr,
    selective_risk_at_precision_recall,
    selective_risk_at_tpr_fpr,
    tnr_at_tpr,
)

SCALES = (2.0, 0.5, 2.0**-30, 2.0**40, 100.0, 1e-3, 0.37, 2.5e4)


def _metrics(losses, is_ood, s):
    """Every public pair metric at its default search."""
    return np.concatenate([
        [auroc(is_ood, s), oscr(losses, is_ood, s), fpr_at_tpr(is_ood, s),
         fpr_at_tpr(is_ood, s, 0.5), tnr_at_tpr(is_ood, s, 0.8),
         detection_rate_at_false_alarm(is_ood, s, 0.1)],
        ood_roc_curve(is_ood, s, fpr=np.linspace(0, 1, 11)).tpr,
    ])


def _rule_metrics(losses, is_ood, s):
    """The risk metrics and the PR curve, which defaulted to the grid of the raw columns."""
    return np.concatenate([
        [selective_risk_at_tpr_fpr(losses, is_ood, s, 0.5, 1.0),
         selective_risk_at_precision_recall(losses, is_ood, s, 0.01, 0.5)],
        risk_coverage_curve_at_fpr(losses, is_ood, s, 1.0, tpr=[0.5, 1.0]).risk,
        ood_pr_curve(is_ood, s, recall=[0.25, 0.5, 1.0]).precision,
    ])


@st.composite
def _samples(draw):
    """Scores that a multiplication keeps in general position or exactly: whole numbers,
    random levels or floats. (Pairs exactly on a line in decimal, such as rounded
    probabilities, may leave it when a column is multiplied by 100 in floating point, and
    the exact envelope, a maximum over directions, moves with them.)"""
    n = draw(st.integers(3, 24))
    kind = draw(st.sampled_from(["levels", "integers", "floats", "bools", "signed zeros"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "levels":  # few distinct values: many ties
        s = np.sort(rng.normal(size=(3, 2)), axis=0)[rng.integers(0, 3, (n, 2)), [0, 1]]
    elif kind == "integers":
        s = rng.integers(-3, 4, (n, 2))
    elif kind == "bools":
        s = rng.random((n, 2)) < 0.5
    elif kind == "signed zeros":
        s = np.where(rng.random((n, 2)) < 0.5, -0.0, 0.0)
        s[:, 1] += rng.integers(0, 2, n)
    else:
        s = rng.normal(size=(n, 2)) * 10.0 ** rng.uniform(-6, 6)
    is_ood = rng.random(n) < 0.5
    is_ood[:2] = [False, True]
    losses = rng.integers(0, 2, n).astype(float)
    return losses, is_ood, s


@settings(max_examples=60, deadline=None)
@given(_samples(), st.sampled_from(SCALES), st.integers(0, 1))
def test_default_is_unit_free(sample, scale, column):
    losses, is_ood, s = sample
    t = np.array(s, dtype=np.float64)
    t[:, column] *= scale
    np.testing.assert_allclose(_metrics(losses, is_ood, t), _metrics(losses, is_ood, s),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(_rule_metrics(losses, is_ood, t),
                               _rule_metrics(losses, is_ood, s), rtol=0, atol=1e-12)


def test_default_is_exact_up_to_the_auto_rows_and_the_scaled_grid_above():
    rng = np.random.default_rng(3)
    n = 300
    s = rng.normal(size=(n, 2)) * [1.0, 50.0]
    is_ood = rng.random(n) < 0.4
    s[is_ood] += [0.5, 40.0]
    losses = (rng.random(n) < 0.2).astype(float)
    assert auroc(is_ood, s) == auroc(is_ood, s, search="exact")
    assert oscr(losses, is_ood, s) == oscr(losses, is_ood, s, search="exact")
    assert fpr_at_tpr(is_ood, s) == fpr_at_tpr(is_ood, s, search="exact")
    args = (losses, is_ood, s, 0.8, 0.6)
    assert selective_risk_at_tpr_fpr(*args) == selective_risk_at_tpr_fpr(*args, search="exact")
    assert np.array_equal(ood_pr_curve(is_ood, s).precision,
                          ood_pr_curve(is_ood, s, search="exact").precision)
    n = AUTO_EXACT_ROWS + 1
    s = rng.normal(size=(n, 2)) * [1.0, 50.0]
    is_ood = rng.random(n) < 0.4
    s[is_ood] += [0.5, 40.0]
    z = s / s.std(axis=0)
    assert auroc(is_ood, s) == auroc(is_ood, z, search="grid")
    assert fpr_at_tpr(is_ood, s) == fpr_at_tpr(is_ood, z, search="grid")
    assert np.array_equal(ood_pr_curve(is_ood, s).precision,
                          ood_pr_curve(is_ood, z, search="grid").precision)
    losses = (rng.random(n) < 0.2).astype(float)
    assert selective_risk_at_tpr_fpr(losses, is_ood, s, 0.8, 0.6) == \
        selective_risk_at_tpr_fpr(losses, is_ood, z, 0.8, 0.6, search="grid")
    assert auroc(is_ood, s, search="grid") != auroc(is_ood, z, search="grid")


@pytest.mark.parametrize("scale", [100.0, 1e-3, 2.0**-7, 3.7e5])
def test_default_above_the_auto_rows_is_unit_free(scale):
    rng = np.random.default_rng(11)
    n = AUTO_EXACT_ROWS + 500
    s = rng.normal(size=(n, 2))
    is_ood = rng.random(n) < 0.4
    s[is_ood] += [0.7, 0.3]
    losses = (rng.random(n) < 0.25).astype(float)
    t = s * [scale, 1.0]
    np.testing.assert_allclose(_metrics(losses, is_ood, t), _metrics(losses, is_ood, s),
                               rtol=0, atol=1e-12)
    # the grid of the raw columns is not
    assert auroc(is_ood, t, search="grid") != auroc(is_ood, s, search="grid")


@pytest.mark.parametrize("n", [50, AUTO_EXACT_ROWS + 300])
def test_pair_table_default_is_unit_free(n, tied_pairs):
    s, is_ood, losses = tied_pairs(5, n, 0.4)
    s = np.round(s * 10)  # whole numbers, that x100 keeps exactly (see _samples)
    table = PairTable.from_arrays(s, losses, is_ood=is_ood)
    scaled = PairTable.from_arrays(s * [100.0, 1.0], losses, is_ood=is_ood)
    for fn in (lambda tb: auroc(tb), lambda tb: oscr(tb), lambda tb: fpr_at_tpr(tb)):
        assert fn(scaled) == pytest.approx(fn(table), abs=1e-12)
    assert auroc(table) == pytest.approx(auroc(is_ood, s), abs=1e-12)


def test_default_search_is_checked():
    with pytest.raises(ValueError, match="search must be one of 'auto', 'exact', 'grid'"):
        auroc([0, 1], [[0, 1], [1, 0]], search="fast")
    with pytest.raises(ValueError, match="n_directions"):
        fpr_at_tpr([0, 1], [[0, 1], [1, 0]], search="auto", n_directions=0)
    assert auroc([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4], search="auto") == 0.875


@pytest.mark.filterwarnings("error")  # refused before a spread of inf is computed
def test_default_refuses_bad_scores_as_the_metric_does():
    n = AUTO_EXACT_ROWS + 1
    is_ood = np.arange(n) % 2 == 0
    s = np.random.default_rng(0).normal(size=(n, 2))
    s[3, 1] = np.inf
    with pytest.raises(ValueError, match=r"^scores\[:, 1\] must be finite; got 1 infinite"):
        auroc(is_ood, s)
    with pytest.raises(ValueError, match="not a rectangular array"):
        oscr([0, 0], [0, 1], [[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match=r"shape \(n,\), \(n, 1\) or \(n, 2\)"):
        fpr_at_tpr([0, 1, 0], np.zeros((3, 3)))


@pytest.mark.parametrize("scale", [2.0**1000, 1e300, 2.0**-1000, 1e-300])
def test_the_scaled_grid_of_a_column_near_the_float_range_is_the_same(scale):
    # the deviation of a column near 1e300 overflowed in its squares: the column was divided
    # by inf and dropped out of the pair
    rng = np.random.default_rng(0)
    n = AUTO_EXACT_ROWS + 1000
    is_ood = rng.random(n) < 0.4
    losses = (rng.random(n) < 0.3) * 1.0
    s = np.c_[rng.normal(is_ood * 1.0), rng.normal(is_ood * 0.2)]
    big = s * [scale, 1.0]
    with np.errstate(all="raise"):
        got = _metrics(losses, is_ood, big)
    np.testing.assert_array_equal(got, _metrics(losses, is_ood, s))
    table = PairTable.from_arrays(big, losses, is_ood=is_ood)
    same = PairTable.from_arrays(s, losses, is_ood=is_ood)
    with np.errstate(all="raise"):
        assert auroc(table) == auroc(same)


def test_a_column_reaching_2_to_the_1023_keeps_its_scaled_grid():
    # the power of two above such a column, 2.0 ** 1024, overflowed to inf: the column was
    # divided by it to zeros and "auto" gave an AUROC of 0.5 (0.8183 on the grid)
    rng = np.random.default_rng(0)
    n = AUTO_EXACT_ROWS + 1000
    is_ood = rng.random(n) < 0.4
    losses = (rng.random(n) < 0.3) * 1.0
    s = np.c_[rng.normal(is_ood * 1.0), rng.normal(is_ood * 0.2)]
    big = s * [2.0 ** (1024 - np.frexp(np.abs(s[:, 0]).max())[1]), 1.0]
    assert 2.0**1023 <= np.abs(big[:, 0]).max() < np.inf
    with np.errstate(all="raise"):
        got = _metrics(losses, is_ood, big)
    np.testing.assert_array_equal(got, _metrics(losses, is_ood, s))


@pytest.mark.parametrize("search", ["exact", "grid"])
def test_scores_near_the_float_maximum_give_the_metrics_of_the_scores_halved(search):
    # differences (1e308 - -1e308) and projections (at 45 degrees) of such scores overflow:
    # the sample divides them by a power of two first, which changes no order
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(4, 12))
        s = rng.choice([-1.7e308, -1e308, 0.0, 1.0, 1e308, 1.7e308, 3.0], size=(n, 2))
        ood = rng.integers(0, 2, n)
        ood[:2] = [0, 1]
        small = s * 2.0**-20
        assert auroc(ood, s, search=search) == auroc(ood, small, search=search)
        assert fpr_at_tpr(ood, s, 0.5, search=search) == fpr_at_tpr(ood, small, 0.5,
                                                                     search=search)


def test_a_pair_rule_fitted_near_the_float_maximum_applies_the_rule_it_reports():
    import warnings

    from abstain.models import BoundedTPRFPR

    rng = np.random.default_rng(1)
    refused = applied = 0
    for _ in range(40):
        n = 12
        s = rng.choice([1.0e308, 1.2e308, 1.5e308, 1.7e308], size=(n, 2))
        ood = np.r_[np.zeros(6), np.ones(6)].astype(bool)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rule = BoundedTPRFPR(0.5, 0.5, search="exact").fit(s, ood, np.zeros(n))
            except ValueError as exc:  # a threshold beyond the float range: refused
                assert "combined score at the fitted rule exceeds the float64" in str(exc)
                refused += 1
                continue
        if not rule.feasible_:
            continue
        applied += 1
        p = rule.accept_proba(s)
        assert p[~ood].mean() == pytest.approx(rule.tpr_) and p[ood].mean() == pytest.approx(
            rule.fpr_)
    assert applied > 10 and refused > 0
