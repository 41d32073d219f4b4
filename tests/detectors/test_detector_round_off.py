"""Detectors where a float computation sat at the edge of its range or its precision: a small
temperature on huge logits, features of lower rank than their dimension (float32 round-off
taken for a direction), features too large for the squared distances, a ReAct layer whose
clipped logits overflow, NaN labels, and a seeded BankDetector fitted twice."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from abstain import load_json
from abstain.combine import BankDetector
from abstain.detectors import (
    GEN,
    KNN,
    MSP,
    ODIN,
    DetectorBank,
    Energy,
    Mahalanobis,
    ReAct,
    ShiftedBaseScores,
    ViM,
)


@pytest.mark.parametrize("temperature", [1e-3, 1e-300, 0.5, 1.0, 1e3])
def test_a_small_temperature_on_huge_logits_stays_finite(temperature):
    logits = np.array([[1e306, 0.0], [1e306, 1e306], [-1e306, 1e306], [1.0, 2.0]])
    energy = Energy(temperature).fit().score(logits)
    msp = MSP(temperature).fit().score(logits)
    assert np.all(np.isfinite(energy)) and np.all(np.isfinite(msp))
    assert energy[0] == pytest.approx(-1e306) and msp[0] == pytest.approx(-1.0)
    assert msp[1] == pytest.approx(-0.5)  # two equal peaks
    # on small logits the shifted form is the definition -T logsumexp(x / T)
    x = logits[3] / temperature
    expected = -temperature * (x.max() + np.log(np.exp(x - x.max()).sum()))
    assert energy[3] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("temperature", [1e308, 4e307])
def test_a_huge_temperature_brings_a_difference_beyond_float64_back_in_range(temperature):
    # z - peak overflowed to -inf before the division by T: that term of exp(-2) was lost
    logits = np.array([[1e308, -1e308], [-1e308, 1e308]])
    gap = 1e308 / temperature * 2.0  # (z - peak) / T, the difference itself beyond float64
    z = 1e308 / temperature
    want_energy = -temperature * (z + math.log1p(math.exp(-gap)))
    got = Energy(temperature).fit().score(logits)
    np.testing.assert_allclose(got, [want_energy] * 2, rtol=1e-12)
    np.testing.assert_allclose(MSP(temperature).fit().score(logits),
                               [-1.0 / (1.0 + math.exp(-gap))] * 2, rtol=1e-12)


def _rank_two(seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(200, 2)) @ rng.normal(size=(2, 4)), rng


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vim_refuses_features_with_no_residual_beyond_their_rank(dtype):
    F, rng = _rank_two(0)
    with pytest.raises(ValueError, match="no residual beyond the 2-dimensional principal "
                                         "subspace; choose a smaller dim"):
        ViM(dim=2, dtype=dtype).fit(F, weight=rng.normal(size=(3, 4)))
    ViM(dim=1, dtype=dtype).fit(F, weight=rng.normal(size=(3, 4)))  # a real residual


@pytest.mark.parametrize("seed", range(10))
def test_mahalanobis_in_float32_drops_the_null_space_of_rank_deficient_features(seed):
    F, rng = _rank_two(seed)
    y = rng.integers(0, 2, F.shape[0])
    f32 = Mahalanobis().fit(F, y)
    f64 = Mahalanobis(dtype="float64").fit(F, y)
    assert f32.whitener_.shape[1] == f64.whitener_.shape[1] == 2
    np.testing.assert_allclose(f32.score(F[:20]), f64.score(F[:20]), rtol=1e-3, atol=1e-3)


def test_mahalanobis_refuses_nan_labels():
    F, rng = _rank_two(0)
    y = rng.integers(0, 2, F.shape[0]).astype(float)
    y[:2] = np.nan
    with pytest.raises(ValueError, match=r"^y must hold finite labels; got 2 NaN"):
        Mahalanobis().fit(F, y)


@pytest.mark.parametrize(("y", "match"), [
    (np.array(["a", 1] * 3, dtype=object), r"^y must hold class labels of one kind.*'a'"),
    ([None] * 6, r"^y must hold class labels of one kind.*None"),
    (np.array([1 + 1j] * 6), r"^y must hold class labels \(numbers or strings\); got dtype "
                             r"complex128"),
    (np.array(["2020-01-01"] * 6, dtype="datetime64[D]"), r"got dtype datetime64"),
])
def test_mahalanobis_refuses_labels_it_could_not_save(y, match):
    """Mixed labels failed in NumPy's sort; complex and datetime ones were fitted, and the
    fitted detector could then not be saved."""
    F = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match=match):
        Mahalanobis().fit(F, y)


def test_mahalanobis_rcond_is_below_one():
    """rcond >= 1 drops every eigenvalue; it was refused as a zero covariance."""
    F = np.random.default_rng(1).normal(size=(30, 3))
    with pytest.raises(ValueError, match=r"^rcond must be in \[0, 1\); got 1\.0\.$"):
        Mahalanobis(rcond=1.0).fit(F, np.zeros(30))


@pytest.mark.parametrize(("dtype", "scale"), [("float64", 1e200), ("float32", 2e19)])
def test_knn_without_normalising_refuses_features_whose_squares_overflow(dtype, scale):
    F = np.array([[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]])
    with pytest.raises(ValueError, match="KNN with normalize=False needs features of "
                                         "magnitude at most"):
        KNN(k=1, normalize=False, dtype=dtype).fit(F * scale)
    det = KNN(k=1, normalize=False, dtype=dtype).fit(F)
    with pytest.raises(ValueError, match="needs features of magnitude at most"):
        det.score(F * scale)
    assert det.score(F).tolist() == [0.0, 0.0, 0.0]


def test_react_refuses_at_fit_a_layer_that_a_load_refuses():
    rng = np.random.default_rng(0)
    F = np.abs(rng.normal(size=(10, 3))) * 1e30
    with pytest.raises(ValueError, match=r"^ReAct\.fit: the threshold_ \(percentile 90 of X\) "
                       "with this weight and bias must keep the logits of clipped features "
                       "within"):
        ReAct().fit(F, weight=rng.normal(size=(2, 3)) * 1e10)
    ok = ReAct().fit(F / 1e30, weight=rng.normal(size=(2, 3)))
    assert load_json(ok.to_json()).threshold_ == ok.threshold_


@pytest.mark.parametrize("seed", [0, np.random.default_rng(7)])
def test_a_seeded_bank_detector_fits_its_unseeded_detectors_the_same_way(seed):
    rng = np.random.default_rng(0)
    W = np.hstack([3 * np.eye(3), np.zeros((3, 3))])

    def draw(n):
        y = rng.integers(0, 3, n)
        F = np.abs(rng.normal(0, 0.3, (n, 6)))
        F[np.arange(n), y] += 2
        return {"features": F, "logits": F @ W.T}, y

    train, y = draw(300)
    cal, _ = draw(300)
    test, _ = draw(50)
    bank = DetectorBank([MSP(), KNN(k=5, bank_size=100)])
    fits = []
    for _ in range(2):
        state = seed if isinstance(seed, int) else np.random.default_rng(7)
        fits.append(BankDetector(bank, method="glrt", alpha=0.1, delta=0.2,
                                 random_state=state).fit(train, y, cal))
    np.testing.assert_array_equal(fits[0].score(test), fits[1].score(test))
    assert bank.get_params()["detectors"][1].random_state is None  # the bank is unchanged


@pytest.mark.parametrize(("dtype", "scale"), [("float64", 1e160), ("float32", 1e20)])
def test_features_whose_covariance_overflows_are_refused_in_one_line(dtype, scale):
    F, rng = _rank_two(0)
    F = (F + rng.normal(size=F.shape)) * scale
    y = rng.integers(0, 2, F.shape[0])
    for fit in (lambda: Mahalanobis(dtype=dtype).fit(F, y),
                lambda: ViM(dim=2, dtype=dtype).fit(F, weight=rng.normal(size=(3, 4))),
                lambda: Mahalanobis(dtype=dtype).fit(F * 1e80, y)):
        # NumPy's own warning first was an error under np.errstate(over="raise")
        with np.errstate(all="raise"), pytest.raises(
                ValueError, match=rf"the covariance of the training features overflows in "
                                  rf"{dtype}"):
            fit()


def test_logit_scores_beyond_float64_take_no_overflow_warning():
    # the division by a temperature below 1, and GEN's shift by the row's peak, overflowed
    # to -inf (a term of 0, as meant) outside the guard: a RuntimeWarning, and an error
    # under np.errstate(over="raise"), for scores that are right
    with np.errstate(all="raise"):
        assert MSP(temperature=1e-3).score([[1e306, 0.0]]).tolist() == [-1.0]
        assert ODIN(temperature=1e-3).score([[1e306, 0.0]]).tolist() == [-1.0]
        assert GEN().score([[1e308, -1e308]]).tolist() == [0.0]


@pytest.mark.parametrize(("dtype", "scales"), [("float32", (1e20, 1e-25)),
                                               ("float64", (1e155, 1e-170, 1e300))])
def test_cosine_knn_is_scale_invariant_where_the_sum_of_squares_leaves_the_float_range(
        dtype, scales):
    """KNN(normalize=True) divides each row by its norm: rows whose squares overflow (all
    scores 0.0 before) or underflow (refused as of norm 0) score as the unscaled ones."""
    rng = np.random.default_rng(3)
    F, Q = rng.normal(size=(50, 4)), rng.normal(size=(6, 4))
    want = KNN(k=3, dtype="float64").fit(F).score(Q)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for scale in scales:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = KNN(k=3, dtype=dtype).fit(F * scale).score(Q * scale)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="norm 0"):
        KNN(k=1, dtype=dtype).fit(np.vstack([F, np.zeros(4)]) * scales[0])
    if dtype == "float32":  # rows of 1e-50 are 0 in float32: the message says so
        with pytest.raises(ValueError, match=r"norm 0 in float32 \(where features below "
                                             r"about 1\.4e-45 are 0: if those rows are not all "
                                             r"zero, .* dtype='float64'\)"):
            KNN(k=1).fit(F * 1e-50)


def test_cosine_base_score_is_scale_invariant_at_huge_features():
    rng = np.random.default_rng(4)
    G, Gq = rng.normal(size=(1, 40, 3)) + 2, rng.normal(size=(1, 3, 3)) + 2
    y = np.repeat([0, 1], 20)
    det = ShiftedBaseScores(kinds=("cos",), shifts=(0,))
    want = det.fit(G, y).score(Gq)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ShiftedBaseScores(kinds=("cos",), shifts=(0,)).fit(G * 1e160, y).score(Gq * 1e160)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("offset", [0.0, 100.0, -3e4])
def test_float32_vim_and_mahalanobis_keep_the_spread_of_features_far_from_the_origin(offset):
    """Centred on a point near the features before the float32 products, the scores stay
    within about 1e-6 of float64 (relative to ViM's terms) whatever the features' mean; raw
    products at a mean of 100 were off by 8.5e-3 (Mahalanobis) and 1.8 (ViM)."""
    rng = np.random.default_rng(5)
    n, d, k = 1000, 16, 3
    F = rng.normal(size=(n, d)) + offset
    y = rng.integers(0, k, n)
    F[np.arange(n), y] += 3
    T = rng.normal(size=(200, d)) + offset
    W = rng.normal(size=(k, d))
    b = rng.normal(size=k) - F.mean(axis=0) @ W.T + 5.0  # a positive mean max-logit
    m64, m32 = (Mahalanobis(dtype=t).fit(F, y).score(T) for t in ("float64", "float32"))
    np.testing.assert_allclose(m32, m64, rtol=2e-6)
    v64, v32 = (ViM(dim=4, dtype=t).fit(F, weight=W, bias=b) for t in ("float64", "float32"))
    terms = v64.alpha_ * 2 + np.abs(v64.score(T)) + np.abs(T @ W.T + b).max(axis=1)
    assert np.max(np.abs(v32.score(T) - v64.score(T)) / terms) < 2e-6
    back = load_json(v32.to_json())
    np.testing.assert_array_equal(back.score(T), v32.score(T))


def test_float32_products_that_overflow_are_refused_in_one_line():
    """Rows near 1e38 (finite in float32) scored 0.0 (Mahalanobis: -inf clamped at 0) or
    NaN (ViM)."""
    rng = np.random.default_rng(0)
    F, y = rng.normal(size=(40, 3)), np.repeat([0, 1], 20)
    Q = np.array([[1.0, 2.0, 3.0], [3e38, -3e38, 1e38]])
    with pytest.raises(ValueError, match=r"^Mahalanobis: the scores overflow in float32 "
                                         r".*or use dtype='float64'\.$"):
        Mahalanobis().fit(F, y).score(Q)
    W = rng.normal(size=(2, 3))
    vim = ViM(dim=1).fit(F, weight=W, bias=10.0 - F.mean(axis=0) @ W.T)
    with pytest.raises(ValueError, match=r"^ViM: the scores overflow in float32"):
        vim.score(Q)
    assert np.all(np.isfinite(ViM(dim=1, dtype="float64").fit(
        F, weight=W, bias=10.0 - F.mean(axis=0) @ W.T).score(Q)))
    # ReAct clips from above only: features far below 0 overflowed the logits to a NaN score
    react = ReAct().fit(F, weight=np.ones((2, 3)), bias=np.zeros(2))
    with pytest.raises(ValueError, match=r"^ReAct: the scores overflow in float32"):
        react.score(np.full((1, 3), -2e38))
    with pytest.raises(ValueError, match=r"^ReAct: the scores overflow in float64"):
        ReAct(dtype="float64").fit(F, weight=np.ones((2, 3)), bias=np.zeros(2)).score(
            np.full((1, 3), -1e308))
