"""abstain.combine._pvalues: the empirical z-values (EmpiricalZ) and the empirical and
conformal p-values against double loops, with many ties."""

from __future__ import annotations

import numpy as np
import pytest
from reference.combine_ref import empirical_z_ref, pvalues_ref
from scipy import stats

from abstain.combine import EmpiricalZ, conformal_pvalues, empirical_pvalues


@pytest.mark.parametrize("n_levels", [2, 5, None])
def test_empirical_z_matches_double_loop(rng, n_levels):
    for _ in range(10):
        n, m, k = int(rng.integers(1, 15)), int(rng.integers(1, 4)), int(rng.integers(1, 12))
        draw = (lambda size: rng.integers(0, n_levels, size).astype(float)) if n_levels \
            else (lambda size: rng.normal(size=size))
        train, test = draw((n, m)), draw((k, m)) + (rng.integers(-1, 2, (k, m)) if n_levels else 0)
        got = EmpiricalZ().fit(train).transform(test)
        np.testing.assert_allclose(got, empirical_z_ref(train, test), rtol=1e-12, atol=1e-12)


def test_empirical_z_finite_and_bounded(rng):
    train = rng.normal(size=(50, 3))
    test = np.array([[-1e300, 0.0, 1e300], [1e300, -1e300, 0.0]])
    z = EmpiricalZ().fit(train).transform(test)
    bound = stats.norm.isf(1 / 52)
    assert np.isfinite(z).all()
    assert np.all(np.abs(z) <= bound + 1e-12)
    np.testing.assert_allclose(z[0, [0, 2]], [-bound, bound])


def test_empirical_z_is_symmetric_for_a_fresh_inlier(rng):
    # the n + 1 gaps between sorted training scores are equally likely for a fresh inlier;
    # their z-values are antisymmetric, so z is exactly symmetric about 0 under H0
    train = rng.normal(size=(9, 1))
    edges = np.sort(train[:, 0])
    mids = np.concatenate(([edges[0] - 1], (edges[1:] + edges[:-1]) / 2, [edges[-1] + 1]))
    z = EmpiricalZ().fit(train).transform(mids[:, None])[:, 0]
    np.testing.assert_allclose(z, -z[::-1], atol=1e-15)
    assert np.all(np.diff(z) > 0)


@pytest.mark.parametrize("conformal", [False, True])
def test_pvalues_match_loops_with_many_ties(rng, conformal):
    func = conformal_pvalues if conformal else empirical_pvalues
    for _ in range(20):
        n, k = int(rng.integers(1, 30)), int(rng.integers(0, 20))
        cal = rng.integers(0, 4, n).astype(float)
        s = rng.integers(-1, 6, k).astype(float)
        np.testing.assert_allclose(func(cal, s), pvalues_ref(cal, s, conformal), rtol=1e-15)
    cal2 = rng.integers(0, 3, (25, 3)).astype(float)
    s2 = rng.integers(0, 4, (9, 3)).astype(float)
    got = func(cal2, s2)
    for j in range(3):
        np.testing.assert_allclose(got[:, j], pvalues_ref(cal2[:, j], s2[:, j], conformal))


def test_conformal_pvalues_range(rng):
    cal = rng.normal(size=19)
    p = conformal_pvalues(cal, rng.normal(size=200) * 5)
    assert p.min() >= 1 / 20 and p.max() <= 1.0
