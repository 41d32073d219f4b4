"""abstain.combine._qp: the GLRT with a covariance (``combine(..., "glrt_cov")``), its
non-negative QP solver and the inlier covariance of eq. 34, against active-set enumeration
and scipy's NNLS and SLSQP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.combine_ref import glrt_cov_enum, glrt_cov_nnls, glrt_cov_slsqp

from abstain.combine import ScoreCombiner, combine, inlier_covariance
from abstain.combine._qp import _nonneg_qp


@pytest.mark.parametrize("m", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("kind", ["identity", "equi", "random"])
def test_glrt_cov_matches_active_set_enumeration(rng, m, kind, random_cov):
    cov = random_cov(rng, m, kind)
    Z = rng.multivariate_normal(np.zeros(m), cov, size=30) + rng.normal(0.5, 1.0, (30, 1))
    got = combine(Z, "glrt_cov", cov=cov)
    ref = [glrt_cov_enum(z, cov, 0.25) for z in Z]
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_glrt_cov_matches_scipy_nnls_and_slsqp_for_24_scores(rng, random_cov):
    m = 24
    cov = random_cov(rng, m, "random")
    Z = rng.multivariate_normal(np.zeros(m), cov, size=150)
    Z[75:] += rng.normal(0.8, 1.0, size=(75, m))
    got = combine(Z, "glrt_cov", cov=cov, epsilon=0.25)
    np.testing.assert_allclose(got, [glrt_cov_nnls(z, cov, 0.25) for z in Z],
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got[:10], [glrt_cov_slsqp(z, cov, 0.25) for z in Z[:10]],
                               rtol=1e-5, atol=1e-5)


def test_glrt_cov_with_identity_is_glrt(rng):
    Z = rng.normal(scale=2, size=(300, 7))
    for eps in (0.0, 0.25, 0.7):
        np.testing.assert_allclose(combine(Z, "glrt_cov", cov=np.eye(7), epsilon=eps),
                                   combine(Z, "glrt", epsilon=eps), rtol=1e-12, atol=1e-12)


def test_glrt_cov_solver_is_exact_and_the_fallback_agrees(rng, random_cov):
    m = 12
    cov = random_cov(rng, m, "equi")
    q = np.linalg.inv(cov)
    W = rng.multivariate_normal(np.zeros(m), cov, size=500) - 0.25
    x, n_fallback = _nonneg_qp(q, cov, W)
    assert n_fallback == 0
    y = (x - W) @ q  # gradient of the QP: KKT x >= 0, y >= 0, x * y = 0
    assert x.min() >= 0 and y.min() > -1e-9 and np.abs(x * y).max() < 1e-9
    x2, n_fallback2 = _nonneg_qp(q, cov, W[:20], max_iter=0)
    assert n_fallback2 == 20
    np.testing.assert_allclose(x2, x[:20], atol=1e-10)


def test_glrt_cov_permutation_equivariance(rng, random_cov):
    m = 5
    cov = random_cov(rng, m, "random")
    Z = rng.normal(size=(40, m))
    perm = rng.permutation(m)
    np.testing.assert_allclose(combine(Z[:, perm], "glrt_cov", cov=cov[np.ix_(perm, perm)]),
                               combine(Z, "glrt_cov", cov=cov), rtol=1e-10, atol=1e-10)


def test_inlier_covariance_is_eq_34(rng):
    Z = rng.normal(size=(30, 4))
    ref = sum(np.outer(z, z) for z in Z) / 29 + 1e-6 * np.eye(4)
    np.testing.assert_allclose(inlier_covariance(Z), ref)
    comb = ScoreCombiner(method="glrt_cov", sigma=1e-3).fit(Z)
    np.testing.assert_allclose(comb.cov_, inlier_covariance(comb.transform(Z), 1e-3))


def test_glrt_cov_of_a_row_does_not_depend_on_the_rows_scored_with_it(rng, random_cov):
    # a BLAS product of many rows may take other kernels (other last bits) than one row: the
    # row that sets a calibrated threshold must score the same alone and in any batch
    m = 5
    cov = random_cov(rng, m, "random")
    Z = rng.multivariate_normal(np.zeros(m), cov, size=1000)
    batch = combine(Z, "glrt_cov", cov=cov)
    alone = np.array([combine(Z[i:i + 1], "glrt_cov", cov=cov)[0] for i in range(len(Z))])
    assert np.array_equal(alone, batch)
    pairs = np.concatenate([combine(Z[i:i + 2], "glrt_cov", cov=cov) for i in range(0, 1000, 2)])
    assert np.array_equal(pairs, batch)


def test_inlier_covariance_does_not_depend_on_the_row_order():
    # Z' Z by BLAS summed in row order: cov_ and every glrt_cov score moved in the last
    # bits with a permutation of S_train, and columns with the same z-values got
    # diagonal entries 5.6e-16 apart
    rng = np.random.default_rng(0)
    S = rng.normal(size=(1000, 2))
    S[:, 1] += 0.5 * S[:, 0]
    a = ScoreCombiner(method="glrt_cov").fit(S)
    assert a.cov_[0, 0] == a.cov_[1, 1]  # every column's z-values: the same multiset
    T = rng.normal(size=(200, 2))
    for k in range(20):
        p = np.random.default_rng(k).permutation(S.shape[0])
        b = ScoreCombiner(method="glrt_cov").fit(S[p])
        np.testing.assert_array_equal(b.cov_, a.cov_)
        np.testing.assert_array_equal(b.score(T), a.score(T))
    Z = rng.normal(size=(500, 3))
    want = np.array([[math.fsum(x) for x in row] for row in
                     (Z[:, :, None] * Z[:, None, :]).transpose(1, 2, 0).tolist()]) / 499
    np.testing.assert_array_equal(inlier_covariance(Z, sigma=0.0), want)
