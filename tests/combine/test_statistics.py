"""abstain.combine._statistics: the GLRT and the p-value combiners (``combine``) and CSI's
statistic against brute-force references, scipy, properties and the error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference.combine_ref import (
    alr_ref,
    bj_ref,
    bonferroni_ref,
    csi_ref,
    glrt_ref,
    hc_ref,
    simes_ref,
)
from scipy import stats

from abstain.combine import STATISTICS, combine, csi_statistic
from abstain.combine._statistics import _log_sf

MONOTONE = tuple(m for m in STATISTICS if m != "glrt_cov")


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


@pytest.mark.parametrize("method", STATISTICS)
def test_z_and_p_scales_agree(rng, method, random_cov):
    Z = rng.normal(size=(20, 5))
    cov = random_cov(rng, 5, "random") if method == "glrt_cov" else None
    np.testing.assert_allclose(combine(Z, method, cov=cov),
                               combine(stats.norm.sf(Z), method, scale="p", cov=cov),
                               rtol=1e-8, atol=1e-8)


def test_extreme_z_stays_finite_in_log_space():
    Z = np.array([[40.0, 0.0, -1.0]])
    for method in STATISTICS:
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
    for method in STATISTICS:
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


# --------------------------------------------------------------------------- errors
def test_combine_errors():
    Z = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"method must be one of 'glrt', 'glrt_cov', 'stouffer'"):
        combine(Z, "tippett")
    with pytest.raises(ValueError, match="scale must be one of 'z', 'p'"):
        combine(Z, scale="q")
    with pytest.raises(ValueError,
                       match=r"values must be a non-empty 2-D array .*reshape\(1, -1\)"):
        combine([0.1, 0.2])
    with pytest.raises(ValueError, match=r"values must be a non-empty 2-D array .*shape \(0, 2\)"):
        combine(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="values must be finite; got 1 NaN"):
        combine([[0.0, np.nan]])
    with pytest.raises(ValueError, match="values must be finite; got 1 infinite"):
        combine([[0.0, np.inf]])
    with pytest.raises(ValueError, match="values must be an array of real numbers"):
        combine([["a", "b"]])
    with pytest.raises(ValueError, match=r"values must hold p-values in \(0, 1\]; got 1 outside"):
        combine([[0.0, 0.5]], "fisher", scale="p")
    with pytest.raises(ValueError, match=r"values must hold p-values in \(0, 1\]; got 2 outside"):
        combine([[1.5, -0.1]], "fisher", scale="p")
    with pytest.raises(ValueError, match="values must not contain NaN"):
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
    with pytest.raises(ValueError, match=r"values must be < 1 for method='glrt_cov'"):
        combine([[1.0, 0.5]], "glrt_cov", scale="p", cov=np.eye(2))


def test_glrt_refuses_an_epsilon_whose_terms_leave_the_float64_range():
    from abstain.combine import ScoreCombiner

    Z = np.array([[0.1, 2.0], [1.0, 3.0]])
    got = combine(Z, "glrt", epsilon=1e150)  # the largest allowed: finite, as its terms are
    assert np.all(np.isfinite(got))
    message = (r"epsilon must be in \[0, 1e\+150\] \(the GLRT's terms \(z - epsilon / 2\) \* "
               r"epsilon must stay within the float64 range\); got 1e\+155")
    with pytest.raises(ValueError, match=message):
        combine(Z, "glrt", epsilon=1e155)
    with pytest.raises(ValueError, match=message):
        combine(Z, "glrt_cov", epsilon=1e155, cov=np.eye(2))
    with pytest.raises(ValueError, match=r"^epsilon must be a finite number in \[0, 100\]"):
        ScoreCombiner(method="glrt", epsilon=1e155).fit(Z)  # a combiner's own, narrower range


def test_glrt_refuses_z_values_whose_statistic_leaves_the_float64_range():
    message = (r"values must keep the GLRT statistic within the float64 range \(\|z\| up to "
               r"about 1e154\); got row 1 with largest \|value\| 1e\+200, whose statistic is inf")
    Z = np.array([[0.5, 1.0], [1e200, 0.0]])
    with np.errstate(all="raise"):  # NumPy's overflow warning came first (an error here)
        with pytest.raises(ValueError, match=message):
            combine(Z, "glrt")
        with pytest.raises(ValueError, match=message):
            combine(Z, "glrt_cov", cov=np.eye(2))
    # p = 1 is z = -inf: the statistic -inf is its exact value, not an overflow
    assert combine([[1.0, 0.5]], "glrt", scale="p")[0] == -np.inf


@pytest.mark.parametrize("method", [m for m in STATISTICS if m != "glrt_cov"])
@pytest.mark.parametrize("scale", ["z", "p"])
def test_every_column_order_gives_the_same_statistic_to_the_last_bit(method, scale):
    # the docs say the combiners are invariant to permuting the columns: so are their bits
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(2000, 6)) * rng.choice([0.1, 1.0, 3.0], 6)
    values = Z if scale == "z" else stats.norm.sf(Z)
    want = combine(values, method, scale=scale)
    for _ in range(5):
        perm = rng.permutation(6)
        np.testing.assert_array_equal(combine(values[:, perm], method, scale=scale), want)


@pytest.mark.parametrize("method", [m for m in STATISTICS if m != "glrt_cov"])
def test_a_row_has_the_same_statistic_in_any_memory_layout(method):
    # NumPy reduced along the rows of a column-major (Fortran, column-sliced) array in
    # another order: a calibration row at a threshold scored alone was flagged
    rng = np.random.default_rng(12)
    Z = rng.normal(size=(400, 12))
    c_order = combine(Z, method)
    assert np.array_equal(combine(np.asfortranarray(Z), method), c_order)
    assert np.array_equal(combine(Z[:, list(range(12))], method), c_order)
    alone = np.array([combine(np.asfortranarray(Z[i:i + 1]), method)[0] for i in range(50)])
    assert np.array_equal(alone, c_order[:50])


def test_higher_criticism_of_one_low_z_is_accurate_monotone_and_finite():
    # t - p cancelled for p near 1 (7 % off at z = -8, decreasing in z near -8.3) and
    # p (1 - p) underflowed to 0 / 0 (NaN) below z of about -38
    from scipy import special

    z = np.array([-10.0, -8.4, -8.35, -8.3, -8.25, -8.2, -5.0, -1.0, 0.0, 2.0])
    got = combine(z[:, None], "hc")
    p = special.ndtr(-z)  # the p-value; 1 - p = ndtr(z) without cancellation
    want = np.sqrt((1 - p) / p)  # m = 1: t = 1
    want = np.where(p > 0.5, np.sqrt(special.ndtr(z) / p), want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(np.diff(got) > 0)
    far = combine(np.array([[-55.0], [-60.0], [-1000.0]]), "hc")
    assert np.all(np.isfinite(far)) and np.all(far >= 0.0)


def test_stouffer_of_z_values_near_the_float_maximum_is_finite_where_it_is():
    # the row sum overflowed first: inf for 1.414e308
    import warnings

    Z = np.array([[1e308, 1e308], [-1e308, -1e308], [1.2e308, -5e307], [0.5, 1.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = combine(Z, "stouffer")
    np.testing.assert_allclose(got, [1e308 * math.sqrt(2.0), -1e308 * math.sqrt(2.0),
                                     (1.2e308 - 5e307) / math.sqrt(2.0), math.sqrt(2.0)],
                               rtol=1e-15)
    assert got[3] == 2.0 / math.sqrt(2.0)  # rows that do not overflow: as before


def test_berk_jones_and_alr_keep_their_digits_where_p_is_near_i_over_m():
    # K+(t, p) was a difference of O(1) terms: 1.07e-19 came out 0 or 2e-16, and a smaller
    # p_(1) (more OOD) gave a smaller statistic in 19 of 2,000 steps
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def bj(ps):
        m, best = len(ps), mp.mpf(0)
        ps = sorted(mp.mpf(float(v)) for v in ps)
        for i in range(max(1, m // 2)):
            t, p = mp.mpf(i + 1) / m, ps[i]
            if p < t:
                best = max(best, m * (t * mp.log(t / p) + (1 - t) * mp.log((1 - t) / (1 - p))))
        return best

    for d in (1e-6, 1e-8, 1e-10, 1e-12):
        row = [0.25 - d, 0.9, 0.9, 0.9]
        assert combine([row], "bj", scale="p")[0] == pytest.approx(float(bj(row)), rel=1e-12)
    rows = np.column_stack([0.25 - np.arange(1, 2001) * 1e-11, np.full((2000, 3), 0.9)])
    for method in ("bj", "alr"):
        assert np.all(np.diff(combine(rows, method, scale="p")) >= 0)


def test_csi_statistic_keeps_its_terms_near_the_float_maximum():
    # the training means overflowed to inf: the weight became 0 and the term vanished
    from abstain.combine import csi_statistic

    got = csi_statistic([[0.5]], [[1e308]], [[1e308]], norm_train=[[1e308], [1e308]],
                        shift_train=[[1e308], [1e308]])
    assert got.tolist() == [-1.5]


@pytest.mark.parametrize("method", STATISTICS)
def test_statistics_ignore_the_global_error_state(method):
    # a z-value of 40 has a p-value of 4e-350, which is 0 in float64 by design: under
    # np.seterr(all="raise") every statistic gives the same values, and no error
    z = np.array([[40.0, 0.5, -0.3], [1.0, 2.0, 0.0], [-40.0, -39.0, 0.1]])
    kw = {"cov": np.eye(3) + 0.1} if method == "glrt_cov" else {}
    expected = combine(z, method=method, **kw)
    with np.errstate(all="raise"):
        got = combine(z, method=method, **kw)
    np.testing.assert_array_equal(got, expected)


def test_csi_statistic_does_not_depend_on_the_order_or_layout_of_the_training_rows():
    # the training means were plain means: Fortran order changed 19 of 20 scores, a row
    # permutation 17 (last bits); they are now correctly rounded sums
    rng = np.random.default_rng(0)
    cos, nrm, sh = rng.random((20, 4)), rng.random((20, 4)) * 10, rng.normal(size=(20, 4))
    nt, st = rng.random((1000, 4)) * 10, rng.normal(size=(1000, 4)) + 3
    base = csi_statistic(cos, nrm, sh, norm_train=nt, shift_train=st)
    perm = rng.permutation(1000)
    for a, b in ((np.asfortranarray(nt), np.asfortranarray(st)), (nt[perm], st[perm])):
        np.testing.assert_array_equal(csi_statistic(cos, nrm, sh, norm_train=a, shift_train=b),
                                      base)
