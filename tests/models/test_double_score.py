"""abstain.models._double_score: DoubleScoreDetector against a hand-built selector on its
two scores, against each score alone, its JSON round trip and its errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain import NotFittedError, load_json
from abstain.detectors import KNN, MSP, Mahalanobis, MaxLogit, ViM
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, DoubleScoreDetector


@pytest.fixture
def double_setup(toy):
    """``double_setup(seed)``: train, y, W, b, val, is_ood, losses from the toy data."""

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

    return double_setup


def test_double_score_matches_a_hand_built_selector(double_setup):
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


def test_double_score_is_never_worse_than_its_parts(double_setup):
    train, y, W, b, val, is_ood, losses = double_setup(14)
    det = DoubleScoreDetector(MSP(), ViM(dim=4), BoundedTPRFPR(tpr=0.8, fpr=0.3))
    det.fit(train, y, weight=W, bias=b).tune(val, is_ood, losses)
    S = det.scores(val)
    for j in (0, 1):
        single = BoundedTPRFPR(tpr=0.8, fpr=0.3).fit(S[:, j], is_ood, losses)
        if single.feasible_:
            assert det.selector_.risk_ <= single.risk_ + 1e-12


def test_double_score_json_round_trip_and_defaults(double_setup):
    train, y, W, b, val, is_ood, losses = double_setup(15)
    det = DoubleScoreDetector(ood=Mahalanobis(),
                              selector=BoundedPrecisionRecall(precision=0.7, recall=0.7))
    det.fit(train, y, weight=W, bias=b).tune(val, is_ood, losses)
    back = load_json(det.to_json())
    assert type(back) is DoubleScoreDetector
    np.testing.assert_array_equal(back.accept_proba(val), det.accept_proba(val))
    np.testing.assert_array_equal(back.score(val), det.score(val))
    assert isinstance(DoubleScoreDetector().fit(train).misclassification_, MSP)


def test_double_score_errors(double_setup):
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


def test_a_refit_drops_the_selector_tuned_on_the_previous_fit(double_setup):
    """``fit`` replaces both detectors and the scales: the selector tuned on the old scores
    accepted everything on the new ones; the refitted object needs ``tune`` again."""
    train, y, W, b, val, is_ood, losses = double_setup(17)
    det = DoubleScoreDetector().fit(train, y).tune(val, is_ood, losses)
    det.fit({"logits": train["logits"][:, :2] * 1e-12, "features": train["features"]}, y)
    with pytest.raises(NotFittedError):
        det.accept_proba(val)


def test_a_file_whose_fitted_parts_are_not_its_parameters_is_refused():
    import copy
    import json

    rng = np.random.default_rng(0)

    def outputs(f):  # type: ignore[no-untyped-def]
        return {"features": f, "logits": f.copy()}

    det = DoubleScoreDetector(MSP(), KNN(k=5), BoundedTPRFPR(tpr=0.8, fpr=0.2)).fit(
        outputs(rng.normal(size=(300, 2)) + [2.0, 0.0]))
    val = np.vstack([rng.normal(size=(200, 2)) + [2.0, 0.0],
                     rng.normal(size=(200, 2)) * 0.3 + [-3.0, 4.0]])
    det = det.tune(outputs(val), np.repeat([False, True], 200),
                   (val[:, 1] > val[:, 0]).astype(float))
    doc = json.loads(det.to_json())
    assert np.array_equal(load_json(json.dumps(doc)).accept_proba(outputs(val)),
                          det.accept_proba(outputs(val)))
    swapped = copy.deepcopy(doc)
    fitted = swapped["fitted"]
    fitted["misclassification_"], fitted["ood_"] = fitted["ood_"], fitted["misclassification_"]
    other_k = copy.deepcopy(doc)
    other_k["fitted"]["ood_"]["params"]["k"] = 1
    other_tpr = copy.deepcopy(doc)
    other_tpr["fitted"]["selector_"]["params"]["tpr"] = 0.3
    for bad, message in (
            (swapped, r"^fitted\.misclassification_ must be params\.misclassification fitted, "
                      r"a MSP; got a KNN\.$"),
            (other_k, r"^fitted\.ood_ must have the parameters of params\.ood; k is 1, not 5\.$"),
            (other_tpr, r"^fitted\.selector_ must have the parameters of params\.selector; tpr "
                        r"is 0\.3, not 0\.8\.$")):
        with pytest.raises(ValueError, match=message):
            load_json(json.dumps(bad))


def test_the_scales_do_not_depend_on_the_order_of_the_fitting_rows():
    # np.std summed the raw scores in row order: its last bits moved with the order, and
    # with them the scaled scores that tune's search groups into ties
    rng = np.random.default_rng(0)
    features = rng.normal(size=(3000, 4))
    weight = rng.normal(size=(3, 4))
    labels = rng.integers(0, 3, 3000)
    scales = []
    for seed in range(6):
        p = np.random.default_rng(seed).permutation(3000)
        f = features[p]
        scales.append(DoubleScoreDetector().fit({"features": f, "logits": f @ weight.T},
                                                labels[p]).scale_)
    for s in scales[1:]:
        np.testing.assert_array_equal(s, scales[0])


def test_scores_near_the_float_maximum_give_a_finite_scale_not_an_overflow():
    rng = np.random.default_rng(0)
    logits = rng.random((50, 4)) * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = DoubleScoreDetector(MSP(), MaxLogit()).fit(
            {"features": rng.normal(size=(50, 3)), "logits": logits}, rng.integers(0, 4, 50))
    assert np.all(np.isfinite(d.scale_)) and d.scale_[1] > 1e307
