"""The score-combining references checked against hand-computed cases and each other.

These tests do not import abstain: they validate the yardstick itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reference.combine_ref import (
    algorithm2_ref,
    algorithm3_ref,
    alr_ref,
    bj_ref,
    bonferroni_ref,
    csi_ref,
    empirical_z_ref,
    glrt_cov_enum,
    glrt_cov_nnls,
    glrt_cov_slsqp,
    glrt_ref,
    hc_ref,
    pvalues_ref,
    simes_ref,
)

# z-values whose upper-tail p-values are exactly 0.1 and 0.6
Z_HAND = np.array([stats.norm.isf(0.1), stats.norm.isf(0.6)])


def test_hand_computed_p_combiners():
    assert bonferroni_ref(Z_HAND) == pytest.approx(-math.log(0.2))
    assert simes_ref(Z_HAND) == pytest.approx(-math.log(min(0.2, 0.6)))
    assert hc_ref(Z_HAND) == pytest.approx(math.sqrt(2) * 0.4 / math.sqrt(0.09))
    kl = 0.5 * math.log(0.5 / 0.1) + 0.5 * math.log(0.5 / 0.9)
    assert bj_ref(Z_HAND) == pytest.approx(2 * kl)
    assert alr_ref(Z_HAND) == pytest.approx(2 * kl)  # one term (i <= m/2 = 1), weight 1


def test_hand_computed_glrt_and_z():
    # mu* = (1, 0.25): 1/2 * 1 + (0.25 * (-1) - 0.25^2 / 2)
    assert glrt_ref(np.array([1.0, -1.0]), 0.25) == pytest.approx(0.21875, abs=1e-9)
    z = empirical_z_ref(np.array([[0.0], [1.0], [2.0]]), np.array([[1.0], [5.0]]))
    # #{train >= 1} = 2 -> p = 3/5; #{train >= 5} = 0 -> p = 1/5
    np.testing.assert_allclose(z[:, 0], [stats.norm.isf(0.6), stats.norm.isf(0.2)])


def test_hand_computed_pvalues_and_csi():
    cal, s = np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 4.0])
    np.testing.assert_allclose(pvalues_ref(cal, s, conformal=True), [4 / 5, 1 / 5])
    np.testing.assert_allclose(pvalues_ref(cal, s, conformal=False), [3 / 4, 0.0])
    assert algorithm3_ref(cal, s, 0.2).tolist() == [False, True]
    got = csi_ref([[0.5]], [[2.0]], [[1.0]], [[4.0]], [[2.0]])
    assert got[0] == pytest.approx(-(0.5 * 2.0 / 4.0 + 1.0 / 2.0))


@pytest.mark.parametrize("m", [2, 4])
def test_three_qp_solvers_agree(m):
    rng = np.random.default_rng(m)
    a = rng.normal(size=(m, m))
    cov = a @ a.T + 0.3 * np.eye(m)
    for z in rng.normal(scale=2, size=(10, m)):
        e = glrt_cov_enum(z, cov, 0.25)
        assert glrt_cov_nnls(z, cov, 0.25) == pytest.approx(e, rel=1e-9, abs=1e-9)
        assert glrt_cov_slsqp(z, cov, 0.25) == pytest.approx(e, rel=1e-5, abs=1e-5)
    z = rng.normal(size=m)
    assert glrt_cov_enum(z, np.eye(m), 0.25) == pytest.approx(glrt_ref(z, 0.25), abs=1e-8)


@pytest.mark.parametrize("v, alpha, delta", [(1000, 0.05, 0.1), (200, 0.1, 0.05), (50, 0.05, 0.1)])
def test_algorithm2_bisection_matches_a_linear_scan(v, alpha, delta):
    feasible = [ll for ll in range(1, v + 1)
                if stats.beta.ppf(1 - delta, ll, v + 1 - ll) <= alpha]
    assert algorithm2_ref(v, alpha, delta) == (max(feasible) if feasible else 0)
