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
