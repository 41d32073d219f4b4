"""abstain.combine against brute-force references, scipy, properties and its error messages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
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
from scipy import stats

from abstain import NotFittedError, load_json
from abstain.combine import (
    METHODS,
    EmpiricalZ,
    GuaranteedDetector,
    ScoreCombiner,
    combine,
    conformal_pvalues,
    conformal_threshold,
    csi_statistic,
    empirical_pvalues,
    far_guarantee,
    from_json,
    inlier_covariance,
)
from abstain.combine.qp import _nonneg_qp
from abstain.combine.statistics import _log_sf
from abstain.metrics import auroc

MONOTONE = tuple(m for m in METHODS if m != "glrt_cov")


def _random_cov(rng, m, kind):
    if kind == "identity":
        return np.eye(m)
    if kind == "equi":
        rho = rng.uniform(-0.9 / max(m - 1, 1), 0.95)
        return (1 - rho) * np.eye(m) + rho * np.ones((m, m))
    a = rng.normal(size=(m, m + 2))
    c = a @ a.T / (m + 2) + 0.05 * np.eye(m)
    d = np.sqrt(np.diag(c))
    return c / d[:, None] / d[None, :]


# --------------------------------------------------------------------------- z-values
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


def test_higher_is_inlier_negates_the_inputs(rng):
    train, test = rng.normal(size=(40, 3)), rng.normal(size=(7, 3))
    plain = EmpiricalZ().fit(train).transform(test)
    flipped = EmpiricalZ(higher_is_inlier=True).fit(-train).transform(-test)
    np.testing.assert_array_equal(plain, flipped)
    for method in ("glrt", "fisher", "glrt_cov"):
        a = ScoreCombiner(method=method).fit(train).score(test)
        b = ScoreCombiner(method=method, higher_is_inlier=True).fit(-train).score(-test)
        np.testing.assert_array_equal(a, b)
    cal = rng.normal(size=100)
    d1 = GuaranteedDetector(alpha=0.1, delta=0.2).fit(cal)
    d2 = GuaranteedDetector(alpha=0.1, delta=0.2, higher_is_inlier=True).fit(-cal)
    np.testing.assert_array_equal(d1.accept(test[:, 0]), d2.accept(-test[:, 0]))
    np.testing.assert_array_equal(d1.score(test[:, 0]), d2.score(-test[:, 0]))


@pytest.mark.parametrize("method", METHODS)
def test_direction_on_a_toy_id_ood_pair(rng, method):
    """Base scores higher = more OOD; OOD inputs get positive z and larger statistics."""
    m = 6
    train = rng.normal(size=(2000, m))
    id_test = rng.normal(size=(400, m))
    ood_test = rng.normal(loc=1.5, size=(400, m))
    comb = ScoreCombiner(method=method).fit(train)
    assert abs(comb.transform(id_test).mean()) < 0.1
    assert comb.transform(ood_test).mean() > 1.0
    stat = comb.score(np.vstack([id_test, ood_test]))
    is_ood = np.r_[np.zeros(400), np.ones(400)]
    assert auroc(is_ood, stat) > 0.9
    # the paper's direction (inlier scores, small statistic = OOD) gives the same ranking
    paper = ScoreCombiner(method=method, higher_is_inlier=True).fit(-train)
    np.testing.assert_array_equal(paper.score(-np.vstack([id_test, ood_test])), stat)


# --------------------------------------------------------------------------- p-values
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


# --------------------------------------------------------------------------- GLRT
@pytest.mark.parametrize("eps", [0.0, 0.25, 1.0])
def test_glrt_matches_numerical_maximisation(rng, eps):
    Z = rng.normal(scale=2.0, size=(25, 4))
    got = combine(Z, "glrt", epsilon=eps)
    ref = [glrt_ref(z, eps) for z in Z]
    np.testing.assert_allclose(got, ref, rtol=1e-7, atol=1e-7)


def test_glrt_closed_forms(rng):
    z = rng.uniform(0.3, 3.0, size=(5, 4))
    np.testing.assert_allclose(combine(z, "glrt"), 0.5 * (z**2).sum(1))
    z = rng.uniform(-3.0, 0.2, size=(5, 4))
    np.testing.assert_allclose(combine(z, "glrt"), (0.25 * z - 0.25**2 / 2).sum(1))
    # the negated paper statistic t_GLRT = sum (z-/2 - z) z-, z- = min(z_paper, -eps)
    zp = -z
    zm = np.minimum(zp, -0.25)
    np.testing.assert_allclose(combine(z, "glrt"), -((zm / 2 - zp) * zm).sum(1))


@pytest.mark.parametrize("m", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("kind", ["identity", "equi", "random"])
def test_glrt_cov_matches_active_set_enumeration(rng, m, kind):
    cov = _random_cov(rng, m, kind)
    Z = rng.multivariate_normal(np.zeros(m), cov, size=30) + rng.normal(0.5, 1.0, (30, 1))
    got = combine(Z, "glrt_cov", cov=cov)
    ref = [glrt_cov_enum(z, cov, 0.25) for z in Z]
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_glrt_cov_matches_scipy_nnls_and_slsqp_for_24_scores(rng):
    m = 24
    cov = _random_cov(rng, m, "random")
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


def test_glrt_cov_solver_is_exact_and_the_fallback_agrees(rng):
    m = 12
    cov = _random_cov(rng, m, "equi")
    q = np.linalg.inv(cov)
    W = rng.multivariate_normal(np.zeros(m), cov, size=500) - 0.25
    x, n_fallback = _nonneg_qp(q, cov, W)
    assert n_fallback == 0
    y = (x - W) @ q  # gradient of the QP: KKT x >= 0, y >= 0, x * y = 0
    assert x.min() >= 0 and y.min() > -1e-9 and np.abs(x * y).max() < 1e-9
    x2, n_fallback2 = _nonneg_qp(q, cov, W[:20], max_iter=0)
    assert n_fallback2 == 20
    np.testing.assert_allclose(x2, x[:20], atol=1e-10)


def test_glrt_cov_permutation_equivariance(rng):
    m = 5
    cov = _random_cov(rng, m, "random")
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


# --------------------------------------------------------------------------- p-value combiners
@pytest.mark.parametrize("method", ["fisher", "stouffer"])
def test_fisher_and_stouffer_match_scipy(rng, method):
    Z = rng.normal(scale=1.5, size=(30, 5))
    P = stats.norm.sf(Z)
    ref = [stats.combine_pvalues(p, method=method).statistic for p in P]
    np.testing.assert_allclose(combine(Z, method), ref, rtol=1e-10)
    np.testing.assert_allclose(combine(P, method, scale="p"), ref, rtol=1e-10)


def test_bonferroni_matches_tippett(rng):
    P = rng.uniform(0.001, 1.0, size=(20, 6))
    tippett = [stats.combine_pvalues(p, method="tippett").statistic for p in P]
    np.testing.assert_allclose(combine(P, "bonferroni", scale="p"), -np.log(6 * np.array(tippett)))


@pytest.mark.parametrize("method, ref", [("bonferroni", bonferroni_ref), ("simes", simes_ref),
                                         ("hc", hc_ref), ("bj", bj_ref), ("alr", alr_ref)])
@pytest.mark.parametrize("m", [1, 2, 5, 8])
def test_sorting_combiners_match_loops(rng, method, ref, m):
    Z = rng.normal(scale=1.5, size=(25, m))
    Z[:5] = np.round(Z[:5])  # tied p-values within rows
    got = combine(Z, method)
    np.testing.assert_allclose(got, [ref(z) for z in Z], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_z_and_p_scales_agree(rng, method):
    Z = rng.normal(size=(20, 5))
    cov = _random_cov(rng, 5, "random") if method == "glrt_cov" else None
    np.testing.assert_allclose(combine(Z, method, cov=cov),
                               combine(stats.norm.sf(Z), method, scale="p", cov=cov),
                               rtol=1e-8, atol=1e-8)


def test_extreme_z_stays_finite_in_log_space():
    Z = np.array([[40.0, 0.0, -1.0]])
    for method in METHODS:
        cov = np.eye(3) if method == "glrt_cov" else None
        assert np.isfinite(combine(Z, method, cov=cov)).all(), method
    # -log p(40) = 40^2 / 2 + log(40 sqrt(2 pi)) + O(1 / 40^2)
    logp40 = stats.norm.logsf(40.0)
    expected = -2 * (logp40 + stats.norm.logsf(0.0) + stats.norm.logsf(-1.0))
    np.testing.assert_allclose(combine(Z, "fisher"), [expected], rtol=1e-12)
    assert combine(Z, "fisher")[0] > 1600


def test_log_sf_is_relatively_accurate_everywhere():
    z = np.linspace(-38.0, 60.0, 20001)
    ref = stats.norm.logsf(z)
    np.testing.assert_allclose(_log_sf(z), ref, rtol=1e-12, atol=0)


@pytest.mark.filterwarnings("error")
def test_huge_z_gives_no_nan_and_no_warning():
    Z = np.array([[0.0, 0.0, 0.0], [54.0, 0.0, -1.0], [60.0, 60.0, 60.0], [-60.0, 0.0, 1.0]])
    for method in METHODS:
        cov = np.eye(3) if method == "glrt_cov" else None
        stat = combine(Z, method, cov=cov)
        assert not np.isnan(stat).any() and np.all(stat[1:3] > stat[0]), method
        assert np.isfinite(stat).all() or method == "hc", method  # HC's true value > 1e308


def test_p_equal_to_one_is_allowed():
    P = np.array([[1.0, 0.5], [1.0, 1.0]])
    assert np.all(np.isfinite(combine(P, "fisher", scale="p")))
    assert combine(P, "glrt", scale="p")[1] == -np.inf
    assert combine(P, "glrt", scale="p", epsilon=0.0)[1] == 0.0
    assert combine(P, "hc", scale="p")[1] == -np.inf


_rows = hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 6)),
                   elements=st.floats(-6, 6, allow_nan=False, allow_subnormal=False))


@given(Z=_rows, seed=st.integers(0, 2**16))
def test_permutation_invariance(Z, seed):
    perm = np.random.default_rng(seed).permutation(Z.shape[1])
    for method in MONOTONE:
        np.testing.assert_allclose(combine(Z[:, perm], method), combine(Z, method),
                                   rtol=1e-12, atol=1e-12)


@given(Z=_rows, col=st.integers(0, 5), bump=st.floats(0.0, 3.0))
def test_monotone_in_each_z(Z, col, bump):
    Z2 = Z.copy()
    Z2[:, col % Z.shape[1]] += bump
    for method in MONOTONE:
        before, after = combine(Z, method), combine(Z2, method)
        assert np.all(after >= before - 1e-9 * (1 + np.abs(before))), method


def test_csi_statistic_matches_loop(rng):
    cos, norm = rng.uniform(0, 1, (7, 4)), rng.uniform(0.5, 2, (7, 4))
    shift = rng.normal(size=(7, 4))
    nt, stt = rng.uniform(0.5, 2, (20, 4)), rng.normal(1.0, 0.5, (20, 4))
    np.testing.assert_allclose(csi_statistic(cos, norm, shift, norm_train=nt, shift_train=stt),
                               csi_ref(cos.tolist(), norm.tolist(), shift.tolist(),
                                       nt.tolist(), stt.tolist()), rtol=1e-12)


# --------------------------------------------------------------------------- FAR guarantee
@pytest.mark.parametrize("n", [1, 10, 44, 45, 46, 100, 999, 1000, 5000])
@pytest.mark.parametrize("alpha, delta", [(0.05, 0.1), (0.01, 0.05), (0.2, 0.01), (0.5, 0.5)])
def test_far_guarantee_matches_algorithm_2(n, alpha, delta):
    g = far_guarantee(n, alpha, delta)
    assert g.rank == algorithm2_ref(n, alpha, delta)
    assert g.feasible == (g.rank > 0) == (n >= g.min_n)
    if g.feasible:
        assert stats.beta.sf(alpha, g.rank, n + 1 - g.rank) <= delta
        assert g.achieved_alpha <= alpha
        assert g.level == g.rank / (n + 1)
        if g.rank < n:  # the next order statistic would break the guarantee
            assert stats.beta.sf(alpha, g.rank + 1, n - g.rank) > delta


def test_min_n_is_the_smallest_feasible_size():
    for alpha, delta in [(0.05, 0.1), (0.01, 0.01), (0.3, 0.5), (0.1, 0.9)]:
        need = far_guarantee(10, alpha, delta).min_n
        assert need == math.ceil(math.log(delta) / math.log(1 - alpha))
        assert far_guarantee(need, alpha, delta).feasible
        assert need == 1 or not far_guarantee(need - 1, alpha, delta).feasible
    assert far_guarantee(1, 0.05, 0.1).min_n == 45


def test_detector_is_algorithm_3_with_ties(rng):
    for _ in range(10):
        n = int(rng.integers(45, 200))
        cal = rng.integers(0, 6, n).astype(float)
        test = rng.integers(-1, 8, 50).astype(float)
        det = GuaranteedDetector(alpha=0.05, delta=0.1).fit(cal)
        a = (det.rank_ + 0.99) / (n + 1)  # the level Algorithm 2 returns
        np.testing.assert_array_equal(~det.accept(test), algorithm3_ref(cal, test, a))
        np.testing.assert_array_equal(~det.accept(test),
                                      conformal_pvalues(cal, test) <= det.level_)


def test_conformal_threshold_is_the_order_statistic(rng):
    for n, alpha in [(20, 0.05), (99, 0.1), (1000, 0.05), (10, 0.1), (7, 0.2)]:
        cal = rng.normal(size=n)
        k = math.ceil((n + 1) * (1 - alpha))
        assert conformal_threshold(cal, alpha) == np.sort(cal)[k - 1]
        # E[FAR] <= alpha: FAR ~ Beta(l, n + 1 - l) with l = n + 1 - k
        assert (n + 1 - k) / (n + 1) <= alpha + 1e-12


def test_guaranteed_is_more_conservative_than_conformal(rng):
    cal = rng.normal(size=1000)
    det = GuaranteedDetector(alpha=0.05, delta=0.1).fit(cal)
    assert det.threshold_ > conformal_threshold(cal, 0.05)
    assert det.achieved_alpha_ <= 0.05


# --------------------------------------------------------------------------- estimators & JSON
def _fitted_objects(rng):
    train = rng.normal(size=(60, 3))
    return [
        EmpiricalZ().fit(train),
        EmpiricalZ(higher_is_inlier=True).fit(train),
        ScoreCombiner(method="glrt", epsilon=0.5).fit(train),
        ScoreCombiner(method="glrt_cov").fit(train),
        ScoreCombiner(method="simes", higher_is_inlier=True).fit(train),
        GuaranteedDetector(alpha=0.1, delta=0.05).fit(rng.normal(size=200)),
    ]


def test_json_round_trip_is_exact(rng):
    test = rng.normal(size=(30, 3)) * 3
    for obj in _fitted_objects(rng):
        text = obj.to_json()
        doc = json.loads(text)
        assert doc["format"] == "abstain/1" and doc["kind"] == type(obj).__name__
        back = load_json(text)
        assert type(back) is type(obj) and back.get_params() == obj.get_params()
        if isinstance(obj, GuaranteedDetector):
            np.testing.assert_array_equal(back.accept(test[:, 0]), obj.accept(test[:, 0]))
            assert back.threshold_ == obj.threshold_ and back.rank_ == obj.rank_
        elif isinstance(obj, EmpiricalZ):
            np.testing.assert_array_equal(back.transform(test), obj.transform(test))
        else:
            np.testing.assert_array_equal(back.score(test), obj.score(test))


def test_estimator_contract():
    sklearn_base = pytest.importorskip("sklearn.base")
    for obj in (EmpiricalZ(higher_is_inlier=True), ScoreCombiner(method="bj"),
                GuaranteedDetector(alpha=0.2)):
        clone = sklearn_base.clone(obj)
        assert clone.get_params() == obj.get_params() and clone is not obj
    with pytest.raises(NotFittedError, match="not fitted yet"):
        EmpiricalZ().transform([[0.0]])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        ScoreCombiner().score([[0.0]])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        GuaranteedDetector().accept([0.0])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        GuaranteedDetector().to_json()


# --------------------------------------------------------------------------- errors
def test_combine_errors():
    Z = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"method must be one of 'glrt', 'glrt_cov', 'stouffer'"):
        combine(Z, "tippett")
    with pytest.raises(ValueError, match="scale must be one of 'z', 'p'"):
        combine(Z, scale="q")
    with pytest.raises(ValueError, match=r"Z must be a non-empty 2-D array .*reshape\(1, -1\)"):
        combine([0.1, 0.2])
    with pytest.raises(ValueError, match=r"Z must be a non-empty 2-D array .*shape \(0, 2\)"):
        combine(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="Z must be finite; got 1 NaN"):
        combine([[0.0, np.nan]])
    with pytest.raises(ValueError, match="Z must be finite; got 1 infinite"):
        combine([[0.0, np.inf]])
    with pytest.raises(ValueError, match="Z must be an array of real numbers"):
        combine([["a", "b"]])
    with pytest.raises(ValueError, match=r"P must hold p-values in \(0, 1\]; got 1 outside"):
        combine([[0.0, 0.5]], "fisher", scale="p")
    with pytest.raises(ValueError, match=r"P must hold p-values in \(0, 1\]; got 2 outside"):
        combine([[1.5, -0.1]], "fisher", scale="p")
    with pytest.raises(ValueError, match="P must not contain NaN"):
        combine([[np.nan, 0.5]], "fisher", scale="p")
    with pytest.raises(ValueError, match=r"epsilon is used only by methods 'glrt' and 'glrt_cov'"):
        combine(Z, "fisher", epsilon=0.1)
    with pytest.raises(ValueError, match=r"epsilon must be a finite number in \[0, inf\)"):
        combine(Z, "glrt", epsilon=-0.1)
    with pytest.raises(ValueError, match="cov must be given for method='glrt_cov'"):
        combine(Z, "glrt_cov")
    with pytest.raises(ValueError, match="cov is used only by method='glrt_cov'"):
        combine(Z, "glrt", cov=np.eye(2))
    with pytest.raises(ValueError, match=r"cov must have shape \(2, 2\)"):
        combine(Z, "glrt_cov", cov=np.eye(3))
    with pytest.raises(ValueError, match="cov must be symmetric"):
        combine(Z, "glrt_cov", cov=[[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match="cov must be positive definite"):
        combine(Z, "glrt_cov", cov=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="cov must be finite"):
        combine(Z, "glrt_cov", cov=[[1.0, np.nan], [np.nan, 1.0]])
    with pytest.raises(ValueError, match=r"P must be < 1 for method='glrt_cov'"):
        combine([[1.0, 0.5]], "glrt_cov", scale="p", cov=np.eye(2))


def test_estimator_errors(rng):
    with pytest.raises(ValueError, match=r"S_train must be a non-empty 2-D array"):
        EmpiricalZ().fit([1.0, 2.0])
    with pytest.raises(ValueError, match="S_train must be finite; got 1 NaN"):
        EmpiricalZ().fit([[1.0], [np.nan]])
    with pytest.raises(ValueError, match="higher_is_inlier must be True or False; got 'yes'"):
        EmpiricalZ(higher_is_inlier="yes").fit([[1.0]])
    ez = EmpiricalZ().fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"S must have 2 column\(s\), as in fit; got 3"):
        ez.transform(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="S must be finite"):
        ez.transform([[0.0, -np.inf]])
    with pytest.raises(ValueError, match="method must be one of"):
        ScoreCombiner(method="mean").fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="epsilon is used only by methods"):
        ScoreCombiner(method="hc", epsilon=0.3).fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"cal_stat must hold at least 45 values for FAR <= "
                                         r"alpha=0.05 with probability >= 1 - delta=0.1; got 44"):
        GuaranteedDetector(alpha=0.05, delta=0.1).fit(rng.normal(size=44))
    with pytest.raises(ValueError, match="cal_stat must be one-dimensional"):
        GuaranteedDetector().fit(np.zeros((50, 2)))
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\); got 1.0"):
        GuaranteedDetector(alpha=1.0).fit(np.zeros(50))
    with pytest.raises(ValueError, match=r"Z_train must have at least 2 rows; got 1"):
        inlier_covariance([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"sigma must be a finite number in \[0, inf\)"):
        inlier_covariance(np.zeros((3, 2)), sigma=-1.0)


def test_function_errors():
    with pytest.raises(ValueError, match="n must be a positive integer; got 0"):
        far_guarantee(0, 0.05, 0.1)
    with pytest.raises(ValueError, match="n must be a positive integer; got 10.0"):
        far_guarantee(10.0, 0.05, 0.1)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\); got 0"):
        far_guarantee(10, 0.05, 0)
    with pytest.raises(ValueError, match="alpha must be a real number; got '0.1'"):
        far_guarantee(10, "0.1", 0.1)
    with pytest.raises(ValueError, match=r"cal_stat must hold at least ceil\(1/alpha\) = 20 "
                                         r"values for alpha=0.05; got 19"):
        conformal_threshold(np.zeros(19), 0.05)
    with pytest.raises(ValueError, match="cal_stat must not be empty"):
        conformal_pvalues([], [1.0])
    with pytest.raises(ValueError, match="stat must be finite"):
        empirical_pvalues([1.0, 2.0], [np.nan])
    with pytest.raises(ValueError, match=r"stat must be 2-D with 2 column\(s\) like cal_stat"):
        conformal_pvalues(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="cal_stat must be 1-D"):
        conformal_pvalues(np.zeros((3, 2, 1)), np.zeros(3))
    good = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"norm must have the shape of cos \(2, 3\)"):
        csi_statistic(good, np.ones((2, 2)), good, norm_train=good, shift_train=good)
    with pytest.raises(ValueError, match=r"shift_train must have 3 column\(s\)"):
        csi_statistic(good, good, good, norm_train=good, shift_train=np.ones((2, 2)))
    with pytest.raises(ValueError, match="shift_train must have non-zero column means"):
        csi_statistic(good, good, good, norm_train=good, shift_train=np.zeros((2, 3)))


def test_from_json_errors(rng):
    with pytest.warns(FutureWarning, match="abstain.load_json"):
        assert isinstance(from_json(EmpiricalZ().fit([[1.0]]).to_json()), EmpiricalZ)
    rule = '{"format": "abstain.rule/1", "model": "CostBased", "params": {}, "fitted": {}}'
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="fitted.threshold_"):
        from_json(rule)
    with pytest.raises(ValueError, match="model must be EmpiricalZ, GuaranteedDetector or "
                                         "ScoreCombiner in a document of format"):
        load_json(json.dumps({"format": "abstain.combine/1", "model": "Pickle", "params": {},
                              "fitted": {}}))
    legacy = {"format": "abstain.combine/1", "model": "EmpiricalZ", "params": {},
              "fitted": {"sorted_train_": [[2.0, 1.0]]}}
    with pytest.raises(ValueError, match="fitted.sorted_train_ must be sorted ascending"):
        load_json(json.dumps(legacy))
    doc = json.loads(GuaranteedDetector().fit(rng.normal(size=50)).to_json())
    del doc["fitted"]["rank_"]
    with pytest.raises(ValueError, match="fitted.rank_ is missing"):
        load_json(json.dumps(doc))


# --------------------------------------------------------------------------- statistical validity
DRAWS, N_CAL, ALPHA, DELTA = 2000, 1000, 0.05, 0.1


@pytest.mark.slow
@pytest.mark.parametrize("levels", [None, 40])
def test_far_guarantee_holds_over_many_calibration_draws(levels):
    """Fraction of calibration draws whose true FAR exceeds alpha: <= delta for Algorithm 2
    (within 3 Monte-Carlo standard errors), about one half for the plain conformal rule.

    Inlier statistic U(0, 1) (true FAR of threshold t: 1 - t) or, with ``levels``, U(0, 1)
    rounded down to a grid of 40 values (heavy ties; true FAR of t = k / 40: (39 - k) / 40).
    """
    rng = np.random.default_rng(2024)
    cal = rng.random((DRAWS, N_CAL))
    if levels:
        cal = np.floor(cal * levels) / levels

    def true_far(t):  # the tied FAR is a multiple of 1/levels: round it to that grid
        return 1 - t if not levels else (levels - 1 - round(t * levels)) / levels

    g = far_guarantee(N_CAL, ALPHA, DELTA)
    guaranteed = np.empty(DRAWS)
    plain = np.empty(DRAWS)
    for d in range(DRAWS):
        det = GuaranteedDetector(alpha=ALPHA, delta=DELTA).fit(cal[d])
        guaranteed[d] = true_far(det.threshold_)
        plain[d] = true_far(conformal_threshold(cal[d], ALPHA))
    exact = stats.beta.sf(ALPHA, g.rank, N_CAL + 1 - g.rank)  # Pr{FAR > alpha}, continuous case
    violations = np.mean(guaranteed > ALPHA)
    slack = 3 * math.sqrt(DELTA * (1 - DELTA) / DRAWS)
    assert violations <= DELTA + slack
    if not levels:
        assert abs(violations - exact) <= slack
        assert abs(plain.mean() - ALPHA) < 0.002  # E[FAR] = l / (n + 1) ~ alpha
        assert np.mean(plain > ALPHA) > 0.3  # the in-expectation rule fails about half the time
    print(f"levels={levels}: Pr(FAR > alpha) guaranteed {violations:.4f} (exact {exact:.4f}), "
          f"plain conformal {np.mean(plain > ALPHA):.4f}")
