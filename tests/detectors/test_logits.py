"""abstain.detectors._logits: MSP, ODIN, Energy, MaxLogit and GEN against the direct
re-derivations in tests/reference/detectors_ref.py, their parameters and bad logits."""

from __future__ import annotations

import numpy as np
import pytest
from reference import detectors_ref as R

from abstain.detectors import GEN, MSP, ODIN, Energy, MaxLogit

TOL = 1e-9


@pytest.mark.parametrize("T", [1.0, 0.5, 1000.0])
def test_msp_odin_energy_maxlogit_against_reference(T):
    rng = np.random.default_rng(1)
    L = rng.normal(0, 5, (40, 6))
    L[:5] = np.round(L[:5])  # some tied logits
    np.testing.assert_allclose(MSP(temperature=T).score(L), R.msp(L, T), rtol=1e-12, atol=TOL)
    np.testing.assert_allclose(ODIN(temperature=T).score(L), R.msp(L, T), rtol=1e-12, atol=TOL)
    np.testing.assert_allclose(Energy(temperature=T).score(L), R.energy(L, T), rtol=1e-12)
    np.testing.assert_array_equal(MaxLogit().score(L), -L.max(axis=1))


def test_energy_is_negative_logsumexp_and_stable_for_large_logits():
    from scipy.special import logsumexp

    L = np.array([[1000.0, 999.0, -1000.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(Energy().score(L), -logsumexp(L, axis=1))
    assert np.all(np.isfinite(MSP().score(L * 10)))


@pytest.mark.parametrize(("gamma", "top_m"), [(0.1, 100), (0.5, 2), (1.0, 1)])
def test_gen_against_reference(gamma, top_m):
    L = np.random.default_rng(2).normal(0, 3, (30, 5))
    np.testing.assert_allclose(GEN(gamma=gamma, top_m=top_m).score(L), R.gen(L, gamma, top_m),
                               rtol=1e-12)


@pytest.mark.parametrize("n_classes", [1, 2, 32, 33, 40])
@pytest.mark.parametrize(("gamma", "top_m"), [(0.1, 100), (0.3, 7), (1.0, 1)])
def test_gen_on_both_layouts_with_ties(n_classes, gamma, top_m):
    """GEN on few columns (softmax of the transposed copy) and on many (along rows), with
    tied logits, a dominant entry and all-equal rows: the reference; the caller's array is
    left as it was."""
    L = np.round(np.random.default_rng(n_classes).normal(0, 3, (40, n_classes)))
    L[0] = 0.0
    L[1, 0] = 60.0
    before = L.copy()
    np.testing.assert_allclose(GEN(gamma=gamma, top_m=top_m).score(L), R.gen(L, gamma, top_m),
                               rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(L, before)


@pytest.mark.parametrize("det", [MSP(), MaxLogit(), Energy(), ODIN(), GEN()])
@pytest.mark.parametrize(("bad", "match"), [
    ([[np.nan, 1.0]], "finite"), ([1.0, 2.0], "2-D"), (np.zeros((0, 3)), "2-D"),
    ([[np.inf, 0.0]], "finite"),
])
def test_logit_detectors_reject_bad_logits(det, bad, match):
    with pytest.raises(ValueError, match=match):
        det.score(bad)


@pytest.mark.parametrize(("det", "match"), [
    (MSP(temperature=0.0), "temperature"), (Energy(temperature=-1.0), "temperature"),
    (ODIN(epsilon=-0.1), "epsilon"), (GEN(gamma=1.5), "gamma"), (GEN(top_m=0), "top_m"),
])
def test_bad_parameters(det, match):
    with pytest.raises(ValueError, match=match):
        det.score([[1.0, 2.0]])
def test_logsumexp_rows_equals_scipys() -> None:
    """The detectors' own logsumexp: SciPy's values on spread, dominant, tied and
    one-column logits."""
    from scipy.special import logsumexp

    from abstain.detectors._logits import logsumexp_rows

    rng = np.random.default_rng(0)
    cases = [rng.normal(size=(500, 10)) * 5, rng.normal(size=(50, 1)),
             np.array([[3.0, 3.0, 3.0], [800.0, 0.0, -800.0], [-1e3, -1e3, 0.0]]),
             np.hstack([np.full((20, 1), 60.0), rng.normal(size=(20, 4))])]
    for z in cases:
        np.testing.assert_allclose(logsumexp_rows(z), logsumexp(z, axis=1), rtol=1e-15)


def test_log1p_of_the_rest_equals_numpys() -> None:
    """The log1p of the terms beside the peak (from NumPy's vectorised log, corrected for
    the rounding of 1 + x): np.log1p's values to two units in the last place, from 0 and
    subnormals (where 1 + x rounds to 1) to the largest sums of terms."""
    from abstain.detectors._logits import _log1p

    rng = np.random.default_rng(3)
    x = np.concatenate([[0.0, 5e-324, 2.0**-1074 * 3, 2.0**-53, 2.0**-52, 1.0, 2.0**40],
                        10.0 ** rng.uniform(-320, 6, 20_000), rng.random(2_000)])
    np.testing.assert_allclose(_log1p(x), np.log1p(x), rtol=4.5e-16, atol=0.0)
    assert _log1p(np.array([0.0]))[0] == 0.0


@pytest.mark.parametrize("n_classes", [3, 10, 40])
def test_logsumexp_rows_counts_a_tied_peak_among_rows_without(n_classes) -> None:
    """Rows whose peak is unique (their ties are not counted) beside one row whose peak is
    tied and rows with one dominant entry (a sum of tiny terms): SciPy's values."""
    from scipy.special import logsumexp

    from abstain.detectors._logits import logsumexp_rows

    rng = np.random.default_rng(n_classes)
    z = rng.normal(size=(400, n_classes)) * 5
    z[7, :2] = z[7].max() + 1.0  # the one tied peak
    z[8] = -40.0
    z[8, 1] = 0.0  # logsumexp = log1p(e**-40 * (K - 1)), about 4e-18 * (K - 1)
    z[9] = -800.0
    z[9, 0] = 1.0
    assert np.count_nonzero(z == z.max(axis=1, keepdims=True)) == 401
    np.testing.assert_allclose(logsumexp_rows(z), logsumexp(z, axis=1), rtol=1e-14, atol=0.0)
    without_tie = np.delete(z, 7, axis=0)
    np.testing.assert_allclose(logsumexp_rows(without_tie), logsumexp(without_tie, axis=1),
                               rtol=1e-14, atol=0.0)


@pytest.mark.parametrize("n_classes", [1, 2, 10, 32, 33, 200])
def test_small_detectors_equal_scipys_softmax_on_both_layouts(n_classes) -> None:
    """Energy, MSP and MaxLogit on few columns (reduced on a transposed copy) and on many
    (reduced along rows): SciPy's values, with tied peaks, -0.0 beside +0.0, huge and tiny
    logits; the caller's array is left as it was."""
    from scipy.special import logsumexp, softmax

    from abstain.detectors import MSP, Energy, MaxLogit

    rng = np.random.default_rng(n_classes)
    z = np.round(rng.normal(size=(300, n_classes)) * 4)  # many ties, tied peaks included
    z[0] = 0.0
    z[1, ::2] = -0.0
    z[2] = 1e300
    z[3, 0] = -1e300
    z[4] = 1e-300
    z[5, 0] = 700.0
    before = z.copy()
    np.testing.assert_allclose(Energy().score(z), -logsumexp(z, axis=1), rtol=1e-14)
    np.testing.assert_allclose(Energy(temperature=3.0).score(z),
                               -3.0 * logsumexp(z / 3.0, axis=1), rtol=1e-14)
    np.testing.assert_allclose(MSP().score(z), -softmax(z, axis=1).max(axis=1), rtol=1e-14)
    np.testing.assert_allclose(MSP(temperature=2.0).score(z),
                               -softmax(z / 2.0, axis=1).max(axis=1), rtol=1e-14)
    np.testing.assert_array_equal(MaxLogit().score(z), -z.max(axis=1))
    np.testing.assert_array_equal(z, before)


@pytest.mark.parametrize("dtype", [bool, np.int64, np.float32])
def test_small_detectors_take_bool_int_and_float32_logits(dtype) -> None:
    from abstain.detectors import MSP, Energy, MaxLogit

    z = (np.arange(24).reshape(6, 4) % 3 == 0) if dtype is bool else \
        np.arange(24).reshape(6, 4).astype(dtype)
    as64 = np.asarray(z, dtype=np.float64)
    for det in (Energy(), MSP(), MaxLogit()):
        np.testing.assert_array_equal(det.score(z), det.score(as64))


@pytest.mark.parametrize("top_m", [1, 2, 100])
def test_gen_keeps_one_minus_p_of_a_top_probability_that_rounds_to_one(top_m):
    """A top probability that rounds to 1 keeps its 1 - p, and a probability below the
    float range its term: rows of growing margins keep distinct, exact scores (60-digit
    reference), not a score of 0 or one without the (1 - p) factor."""
    L = np.array([[40.0, 0.0, 0.0], [50.0, 0.0, 0.0], [60.0, 0.0, 0.0],
                  [800.0, 0.0, -5.0], [900.0, 0.0, -5.0], [0.0, -1000.0, -1000.0],
                  [3.0, 3.0, -2000.0], [7.0, 1.0, 2.0]])
    got = GEN(top_m=top_m).score(L)
    np.testing.assert_allclose(got, R.gen(L, 0.1, top_m), rtol=1e-13)
    assert np.all(got > 0)
    assert np.all(np.diff(got[:3]) < 0) and got[4] < got[3]


@pytest.mark.parametrize("make", [lambda: MSP(), lambda: Energy(), lambda: Energy(temperature=3.0),
                                  lambda: GEN(), lambda: ODIN(temperature=1000.0)])
def test_a_row_scored_alone_gets_its_score_in_a_batch(make):
    # with 9 to 32 classes the per-row sum was NumPy's pairwise sum for one row and a sum
    # row after row in a batch: other last bits alone (MSP: 12 of 200 rows)
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(200, 10)) * 3
    det = make().fit(logits)
    batch = det.score(logits)
    alone = np.array([det.score(logits[i : i + 1])[0] for i in range(200)])
    assert np.array_equal(alone, batch)


def test_an_energy_beyond_float64_is_refused_in_one_line():
    # -inf came back with NumPy's overflow warning only, against the "finite" docstring
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^the free energy of these logits at temperature "
                           r"1e\+307 is beyond float64; scale the logits down"):
            Energy(temperature=1e307).score([[1.7e308] * 10, [0.0] * 10])
        assert np.isfinite(Energy(temperature=1e300).score([[1e308] * 10])).all()


@pytest.mark.parametrize("det", [MSP(), MSP(temperature=0.01), Energy(temperature=0.01), GEN(),
                                 GEN(gamma=1.0, top_m=2), MaxLogit()])
def test_logit_detectors_ignore_the_global_error_state(det):
    # terms of exp(-800) are 0 by design: np.seterr(all="raise") must not turn them into
    # a FloatingPointError, nor change a score
    logits = np.array([[800.0, 0.0, 100.0], [0.5, 0.2, 0.1], [3.0, 3.0, -900.0]])
    expected = det.fit().score(logits)
    with np.errstate(all="raise"):
        got = det.fit().score(logits)
    np.testing.assert_array_equal(got, expected)
