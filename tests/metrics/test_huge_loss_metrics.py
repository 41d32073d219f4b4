"""Selective metrics with losses near the float64 maximum: the exact value, not ``inf``.

Every prefix or group sum of losses is kept in units of a power of two (exact scaling), so
each metric equals its ``fractions.Fraction`` reference to rounding, and scaling ordinary
losses by a power of two scales every result by it, bit for bit.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference.metrics_ref import (
    augrc_linearity_ref,
    aurc_linearity_ref,
    aurc_ref,
    risk_coverage_curve_ref,
    sele_ref,
    selective_risk_at_coverage_ref,
)
from reference.models_ref import bounded_improvement_ref

from abstain import ScoreTable
from abstain.metrics import (
    augrc,
    aurc,
    coverage_at_risk,
    e_aurc,
    risk_coverage_curve,
    sele_loss,
    selective_risk_at_coverage,
)

MAX = float(np.finfo(np.float64).max)
HUGE = (MAX, 1e308, 2.0**1023, MAX / 3, 0.75e308, 1.0, 0.25, 0.0)


@st.composite
def huge_cases(draw, max_size: int = 7):
    """(losses, uncertainty): losses near the float64 maximum mixed with ordinary ones, and
    scores with heavy ties."""
    n = draw(st.integers(1, max_size))
    losses = draw(hnp.arrays(np.float64, n, elements=st.sampled_from(HUGE)))
    uncertainty = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.1, 0.2, 0.3])))
    return losses, uncertainty


def _close(got: float, expected: float, rel: float = 1e-12) -> bool:
    return math.isclose(got, expected, rel_tol=rel, abs_tol=0.0)


@given(huge_cases())
def test_areas_match_the_exact_reference(case):
    losses, u = case
    assert _close(aurc(losses, u), float(aurc_linearity_ref(losses, u, exact=True)))
    assert _close(augrc(losses, u), float(augrc_linearity_ref(losses, u, exact=True)))
    assert _close(sele_loss(losses, u), float(sele_ref(losses, u, exact=True)))
    assert _close(aurc(losses, u, ties="index"),
                  float(aurc_ref(losses, u, ties="index", exact=True)))
    oracle = aurc_linearity_ref(losses, losses, exact=True)
    excess = float(aurc_linearity_ref(losses, u, exact=True) - oracle)
    assert math.isclose(e_aurc(losses, u), excess, rel_tol=1e-12,
                        abs_tol=1e-12 * float(losses.max()))


@given(huge_cases(), st.sampled_from([0.2, 0.5, 0.75, 1.0]))
def test_curve_and_risk_at_coverage_match_the_exact_reference(case, coverage):
    losses, u = case
    curve = risk_coverage_curve(losses, u)
    ref = risk_coverage_curve_ref(losses, u)
    assert np.all(np.isfinite(curve.risk))
    np.testing.assert_allclose(curve.risk, ref.risk, rtol=1e-12, atol=0.0)
    got = selective_risk_at_coverage(losses, u, coverage)
    assert _close(got, float(selective_risk_at_coverage_ref(losses, u, coverage, exact=True)))


@given(huge_cases(), st.sampled_from([1e308, MAX, 2.0**1022, 0.5, 1e-300]))
def test_coverage_at_risk_matches_the_exact_reference(case, target):
    losses, u = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = bounded_improvement_ref(u, losses, target)
    assert _close(coverage_at_risk(losses, u, target), float(ref.coverage))


def test_the_examples_of_the_issue():
    assert selective_risk_at_coverage([1e308, 1e308], [0.1, 0.2], 1.0) == 1e308
    assert risk_coverage_curve([1e308, 1e308], [0.1, 0.2]).risk.tolist() == [1e308, 1e308]
    # a tie group whose sum exceeds the float64 range
    assert aurc([1e308] * 4, [0.1] * 4) == 1e308
    assert _close(augrc([MAX] * 3, [0.1, 0.1, 0.2]), 2 / 3 * MAX, rel=1e-15)


def test_a_table_gives_the_same_numbers():
    losses, u = np.array([4e307, 5e307, 0.0, 6e307]), np.array([0.1, 0.1, 0.2, 0.3])
    table = ScoreTable.from_arrays(u[:2], losses[:2]).update(u[2:], losses[2:])
    for f in (aurc, augrc, sele_loss, e_aurc):
        assert f(table) == f(losses, u), f.__name__
    np.testing.assert_array_equal(risk_coverage_curve(table).risk,
                                  risk_coverage_curve(losses, u).risk)
    assert selective_risk_at_coverage(table, coverage=0.5) == \
        selective_risk_at_coverage(losses, u, 0.5)


@given(hnp.arrays(np.float64, st.integers(1, 12),
                  elements=st.integers(0, 8).map(lambda k: k / 4.0) | st.floats(0.0, 3.0)),
       st.integers(0, 3), st.sampled_from([0.3, 0.5, 0.9, 1.0]))
def test_scaling_by_a_power_of_two_scales_every_result_bit_for_bit(losses, levels, coverage):
    """Ordinary losses and the same losses times 2**1000 (which the metrics must rescale)
    follow the same float operations: results differ by the factor 2**1000 exactly."""
    u = np.arange(losses.size) % (levels + 1) * 0.1
    big = losses * 2.0**1000
    c = 2.0**1000
    for f in (aurc, augrc, sele_loss, e_aurc):
        assert f(big, u) == f(losses, u) * c, f.__name__
    assert selective_risk_at_coverage(big, u, coverage) == \
        selective_risk_at_coverage(losses, u, coverage) * c
    np.testing.assert_array_equal(risk_coverage_curve(big, u).risk,
                                  risk_coverage_curve(losses, u).risk * c)
    if losses.max() > 0:
        target = float(losses.mean())
        assert coverage_at_risk(big, u, target * c) == coverage_at_risk(losses, u, target)
