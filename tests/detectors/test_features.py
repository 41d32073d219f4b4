"""Detectors against the direct re-derivations in tests/reference/detectors_ref.py."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import detectors_ref as R

from abstain import CostBased, NotFittedError, load_json
from abstain.detectors import (
    DETECTORS,
    GEN,
    KNN,
    MSP,
    ODIN,
    DoubleScoreDetector,
    Energy,
    Mahalanobis,
    MaxLogit,
    ReAct,
    ViM,
    detector_from_json,
    make_detector,
)
from abstain.metrics import auroc
from abstain.ood import BoundedPrecisionRecall, BoundedTPRFPR

TOL = 1e-9


def toy(rng, n_id=300, n_ood=300, K=4, d=8):
    """ID: one bright coordinate per class; OOD: flat logits and energy off the class space."""
    y = rng.integers(0, K, n_id)
    f_id = np.zeros((n_id, d))
    f_id[np.arange(n_id), y] = 4.0
    f_id[:, :K] += rng.normal(0, 0.5, (n_id, K))
    f_id[:, K:] = rng.normal(0, 0.1, (n_id, d - K))
    f_ood = np.hstack([rng.normal(0.5, 0.5, (n_ood, K)), rng.normal(1.0, 0.5, (n_ood, d - K))])
    W = np.hstack([2.0 * np.eye(K), np.zeros((K, d - K))])
    b = rng.normal(0, 0.1, K)
    F = np.maximum(np.vstack([f_id, f_ood]), 0.0)
    return F, y, W, b, np.repeat([False, True], [n_id, n_ood])


def fit_on(det, F, y, W, b):
    return det.fit(F if det.inputs == "features" else F @ W.T + b, y, weight=W, bias=b)


def inputs_of(det, F, W, b):
    return F if det.inputs == "features" else F @ W.T + b


# ------------------------------------------------------------- against the references


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


@pytest.mark.parametrize("percentile", [50.0, 90.0, 100.0])
def test_react_against_reference(percentile):
    rng = np.random.default_rng(3)
    train = np.maximum(rng.normal(0, 1, (50, 5)), 0)
    W, b = rng.normal(size=(3, 5)), rng.normal(size=3)
    test = np.maximum(rng.normal(0, 2, (20, 5)), 0)
    det = ReAct(percentile=percentile).fit(train, weight=W, bias=b)
    np.testing.assert_allclose(det.score(test), R.react(test, train, W, b, percentile),
                               rtol=1e-12, atol=TOL)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_knn_against_brute_force_with_ties(normalize, k):
    rng = np.random.default_rng(4)
    train = rng.integers(-2, 3, (25, 3)).astype(float)   # duplicates: tied distances
    test = rng.integers(-2, 3, (15, 3)).astype(float)
    train[np.all(train == 0, axis=1)] = 1.0
    test[np.all(test == 0, axis=1)] = 1.0
    det = KNN(k=k, normalize=normalize, block=4).fit(train)
    np.testing.assert_allclose(det.score(test), R.knn(test, train, k, normalize), atol=1e-7)


def test_knn_block_size_and_bank_order_do_not_matter():
    rng = np.random.default_rng(5)
    train, test = rng.normal(size=(60, 4)), rng.normal(size=(33, 4))
    a = KNN(k=5, block=1).fit(train).score(test)
    b = KNN(k=5, block=1000).fit(train[rng.permutation(60)]).score(test)
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("dim", [1, 3, 5])
def test_vim_against_reference(dim):
    rng = np.random.default_rng(6)
    train = rng.normal(size=(80, 6)) * [4, 3, 2, 1, 0.5, 0.2] + 1.0
    W, b = rng.normal(size=(4, 6)), rng.normal(size=4)
    test = rng.normal(size=(20, 6)) * 2
    det = ViM(dim=dim).fit(train, weight=W, bias=b)
    np.testing.assert_allclose(det.score(test), R.vim(test, train, W, b, dim), rtol=1e-9,
                               atol=1e-9)
    assert det.dim_ == dim and det.residual_basis_.shape == (6, 6 - dim)


def test_vim_default_dim():
    from abstain.detectors.features import _default_vim_dim

    assert [_default_vim_dim(d) for d in (2, 128, 512, 768, 2048)] == [1, 64, 256, 512, 1000]


def test_mahalanobis_against_explicit_inverse():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 90)
    train = rng.normal(size=(90, 4)) @ rng.normal(size=(4, 4)) + 3.0 * y[:, None]
    test = rng.normal(size=(25, 4)) * 3
    det = Mahalanobis().fit(train, y)
    np.testing.assert_allclose(det.score(test), R.mahalanobis(test, train, y), rtol=1e-9)
    assert det.classes_ == [0, 1, 2]


def test_mahalanobis_singular_covariance_uses_the_pseudo_inverse():
    rng = np.random.default_rng(8)
    base = rng.normal(size=(40, 2))
    train = np.hstack([base, base[:, :1]])  # the third feature copies the first
    y = np.arange(40) % 2
    det = Mahalanobis().fit(train, y)
    assert det.whitener_.shape == (3, 2)
    # along the null direction (e1 - e3) the distance does not grow
    x = det.means_[:1]
    shifted = x + np.array([[1.0, 0.0, -1.0]])
    np.testing.assert_allclose(det.score(shifted), det.score(x), atol=1e-9)


# ------------------------------------------------------------------ common behaviour


@pytest.mark.parametrize("name", list(DETECTORS))
def test_direction_on_a_toy_id_ood_pair(name):
    F, y, W, b, is_ood = toy(np.random.default_rng(9))
    det = fit_on(make_detector(name), F[~is_ood], y, W, b)
    s = det.score(inputs_of(det, F, W, b))
    assert s.shape == (F.shape[0],)
    assert auroc(is_ood, s) > 0.9, name


@pytest.mark.parametrize("name", list(DETECTORS))
def test_json_round_trip(name):
    F, y, W, b, is_ood = toy(np.random.default_rng(10), n_id=120, n_ood=30)
    det = fit_on(make_detector(name), F[~is_ood], y, W, b)
    text = det.to_json()
    assert json.loads(text)["format"] == "abstain/1"
    back = load_json(text)
    assert type(back) is type(det) and back.get_params() == det.get_params()
    X = inputs_of(det, F, W, b)
    np.testing.assert_array_equal(back.score(X), det.score(X))


@pytest.mark.parametrize("name", list(DETECTORS))
def test_score_outputs_reads_the_right_field(name):
    F, y, W, b, is_ood = toy(np.random.default_rng(11), n_id=60, n_ood=10)
    det = fit_on(make_detector(name), F[~is_ood], y, W, b)
    outputs = {"logits": F @ W.T + b, "features": F}
    np.testing.assert_array_equal(det.score_outputs(outputs), det.score(inputs_of(det, F, W, b)))


@pytest.mark.parametrize("name", ["msp", "mls", "energy", "odin", "gen", "knn", "vim",
                                  "mahalanobis", "react"])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_scores_permute_with_the_rows(name, seed):
    rng = np.random.default_rng(seed)
    F, y, W, b, is_ood = toy(rng, n_id=40, n_ood=10)
    det = fit_on(make_detector(name, **({"k": 3} if name == "knn" else {})), F[~is_ood], y, W, b)
    X = inputs_of(det, F, W, b)
    perm = rng.permutation(X.shape[0])
    np.testing.assert_allclose(det.score(X[perm]), det.score(X)[perm], rtol=1e-12, atol=1e-12)


def test_clone_and_params():
    sklearn = pytest.importorskip("sklearn.base")
    det = KNN(k=7, normalize=False)
    assert sklearn.clone(det).get_params() == det.get_params()
    assert repr(ViM(dim=3)) == "ViM(dim=3)"


# -------------------------------------------------------------------------- bad input


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


@pytest.mark.parametrize("cls", [ReAct, KNN, ViM, Mahalanobis])
def test_feature_detectors_must_be_fitted(cls):
    with pytest.raises(NotFittedError, match="not fitted"):
        cls().score([[1.0, 2.0]])


def test_feature_detector_errors():
    F = np.abs(np.random.default_rng(12).normal(size=(10, 3)))
    W = np.ones((2, 3))
    with pytest.raises(ValueError, match="weight="):
        ReAct().fit(F)
    with pytest.raises(ValueError, match=r"weight must have shape \(n_classes, 3\)"):
        ViM(dim=1).fit(F, weight=np.ones((2, 4)))
    with pytest.raises(ValueError, match="bias must be"):
        ReAct().fit(F, weight=W, bias=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="percentile"):
        ReAct(percentile=0).fit(F, weight=W)
    with pytest.raises(ValueError, match="k must be at most"):
        KNN(k=11).fit(F)
    with pytest.raises(ValueError, match="k must be an integer"):
        KNN(k=0).fit(F)
    with pytest.raises(ValueError, match="norm 0"):
        KNN(k=1).fit(np.vstack([F, np.zeros(3)]))
    with pytest.raises(ValueError, match="dim must be smaller"):
        ViM(dim=3).fit(F, weight=W)
    with pytest.raises(ValueError, match="labels y|X and labels"):
        Mahalanobis().fit(F)
    with pytest.raises(ValueError, match="y must have shape"):
        Mahalanobis().fit(F, [0, 1])
    with pytest.raises(ValueError, match="covariance is zero"):
        Mahalanobis().fit(np.ones((4, 2)), [0, 0, 1, 1])
    det = KNN(k=2).fit(F)
    with pytest.raises(ValueError, match="3 columns as in fit"):
        det.score(np.ones((2, 4)))
    with pytest.raises(ValueError, match="needs the ID training features"):
        KNN().fit()


def test_make_detector_and_json_errors():
    with pytest.raises(ValueError, match="unknown detector 'foo'; known: msp"):
        make_detector("foo")
    knn = KNN(k=1).fit([[1.0, 0.0]])
    with pytest.warns(FutureWarning, match="abstain.load_json"):
        assert detector_from_json(knn.to_json()).get_params() == knn.get_params()
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="format must be"):
        detector_from_json('{"format": "x"}')
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="detector_from_json loads"):
        detector_from_json(CostBased().fit().to_json())
    with pytest.raises(ValueError, match="detector must be .* in a document of format"):
        load_json('{"format": "abstain.detector/1", "detector": "os.system", "params": {}, '
                  '"fitted": {}}')
    doc = json.loads(knn.to_json())
    doc["fitted"]["evil_"] = 1
    with pytest.raises(ValueError, match="fitted.evil_ is not a fitted attribute of KNN"):
        load_json(json.dumps(doc))
    doc = json.loads(knn.to_json())
    doc["fitted"]["bank_"]["shape"] = [5, 5]
    with pytest.raises(ValueError, match="bytes for shape"):
        load_json(json.dumps(doc))
    with pytest.raises(ValueError, match="'features' attribute"):
        KNN(k=1).fit([[1.0, 0.0]]).score_outputs(object())
    with pytest.raises(ValueError, match="no 'logits' entry"):
        MSP().score_outputs({"features": [[1.0]]})


# ------------------------------------------------------------------ double scores


def double_setup(seed=13):
    rng = np.random.default_rng(seed)
    F, y, W, b, is_ood = toy(rng, n_id=400, n_ood=200)
    train = {"features": F[~is_ood][:200], "logits": F[~is_ood][:200] @ W.T + b}
    val_idx = np.r_[200:400, 400:600]
    val = {"features": F[val_idx], "logits": F[val_idx] @ W.T + b}
    pred = np.argmax(val["logits"], axis=1)
    y_val = np.r_[y[200:400], np.zeros(200, dtype=int)]
    losses = (pred != y_val).astype(float)
    return train, y[:200], W, b, val, is_ood[val_idx], losses


def test_double_score_matches_a_hand_built_selector():
    train, y, W, b, val, is_ood, losses = double_setup()
    det = DoubleScoreDetector(MSP(), KNN(k=5), BoundedTPRFPR(tpr=0.8, fpr=0.1))
    det.fit(train, y, weight=W, bias=b).tune(val, is_ood, losses)
    r = MSP().score(train["logits"])
    g = KNN(k=5).fit(train["features"]).score(train["features"])
    scale = np.array([r.std(), g.std()])
    np.testing.assert_allclose(det.scale_, scale)
    S = np.stack([MSP().score(val["logits"]),
                  KNN(k=5).fit(train["features"]).score(val["features"])], axis=1) / scale
    hand = BoundedTPRFPR(tpr=0.8, fpr=0.1).fit(S, is_ood, losses)
    assert det.selector_.risk_ == hand.risk_ and det.selector_.weights_ == hand.weights_
    np.testing.assert_array_equal(det.accept_proba(val), hand.accept_proba(S))
    assert det.selector_.tpr_ >= 0.8 and det.selector_.fpr_ <= 0.1
    # the user's selector is not fitted in place
    assert not hasattr(det.selector, "threshold_")


def test_double_score_is_never_worse_than_its_parts():
    train, y, W, b, val, is_ood, losses = double_setup(14)
    det = DoubleScoreDetector(MSP(), ViM(dim=4), BoundedTPRFPR(tpr=0.8, fpr=0.3))
    det.fit(train, y, weight=W, bias=b).tune(val, is_ood, losses)
    S = det.scores(val)
    for j in (0, 1):
        single = BoundedTPRFPR(tpr=0.8, fpr=0.3).fit(S[:, j], is_ood, losses)
        if single.feasible_:
            assert det.selector_.risk_ <= single.risk_ + 1e-12


def test_double_score_json_round_trip_and_defaults():
    train, y, W, b, val, is_ood, losses = double_setup(15)
    det = DoubleScoreDetector(ood=Mahalanobis(),
                              selector=BoundedPrecisionRecall(precision=0.7, recall=0.7))
    det.fit(train, y, weight=W, bias=b).tune(val, is_ood, losses)
    back = load_json(det.to_json())
    with pytest.warns(FutureWarning, match="abstain.load_json"):
        assert type(DoubleScoreDetector.from_json(det.to_json())) is DoubleScoreDetector
    np.testing.assert_array_equal(back.accept_proba(val), det.accept_proba(val))
    np.testing.assert_array_equal(back.score(val), det.score(val))
    assert isinstance(DoubleScoreDetector().fit(train).misclassification_, MSP)


def test_double_score_errors():
    train, y, W, b, val, is_ood, losses = double_setup(16)
    with pytest.raises(NotFittedError):
        DoubleScoreDetector().scores(val)
    with pytest.raises(NotFittedError):
        DoubleScoreDetector().fit(train).accept(val)
    with pytest.raises(ValueError, match="misclassification must be a detector"):
        DoubleScoreDetector(misclassification="msp").fit(train)
    det = DoubleScoreDetector(ood=KNN(k=3)).fit(train)
    with pytest.raises(ValueError, match="same inputs"):
        det.scores({"logits": val["logits"], "features": val["features"][:5]})
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="detector is missing"):
        DoubleScoreDetector.from_json('{"format": "abstain.detector/1"}')
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="loads DoubleScoreDetector"):
        DoubleScoreDetector.from_json(MSP().to_json())
