"""abstain.detectors._registry and the protocol every detector shares: make_detector over
DETECTORS on a toy ID/OOD pair, the direction, the JSON round trip, score_outputs, row
permutation, and the errors of make_detector and of the detector documents."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abstain import load_json
from abstain.detectors import DETECTORS, KNN, MSP, make_detector
from abstain.metrics import auroc


def fit_on(det, F, y, W, b):
    return det.fit(F if det.inputs == "features" else F @ W.T + b, y, weight=W, bias=b)


def inputs_of(det, F, W, b):
    return F if det.inputs == "features" else F @ W.T + b


@pytest.mark.parametrize("name", list(DETECTORS))
def test_direction_on_a_toy_id_ood_pair(name, toy):
    F, y, W, b, is_ood = toy(np.random.default_rng(9))
    det = fit_on(make_detector(name), F[~is_ood], y, W, b)
    s = det.score(inputs_of(det, F, W, b))
    assert s.shape == (F.shape[0],)
    assert auroc(is_ood, s) > 0.9, name


@pytest.mark.parametrize("name", list(DETECTORS))
def test_json_round_trip(name, toy):
    F, y, W, b, is_ood = toy(np.random.default_rng(10), n_id=120, n_ood=30)
    det = fit_on(make_detector(name), F[~is_ood], y, W, b)
    text = det.to_json()
    assert json.loads(text)["format"] == "abstain/1"
    back = load_json(text)
    assert type(back) is type(det) and back.get_params() == det.get_params()
    X = inputs_of(det, F, W, b)
    np.testing.assert_array_equal(back.score(X), det.score(X))


@pytest.mark.parametrize("name", list(DETECTORS))
def test_score_outputs_reads_the_right_field(name, toy):
    F, y, W, b, is_ood = toy(np.random.default_rng(11), n_id=60, n_ood=10)
    det = fit_on(make_detector(name), F[~is_ood], y, W, b)
    outputs = {"logits": F @ W.T + b, "features": F}
    np.testing.assert_array_equal(det.score_outputs(outputs), det.score(inputs_of(det, F, W, b)))


@pytest.mark.parametrize("name", ["msp", "mls", "energy", "odin", "gen", "knn", "vim",
                                  "mahalanobis", "react"])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_scores_permute_with_the_rows(name, toy, seed):
    rng = np.random.default_rng(seed)
    F, y, W, b, is_ood = toy(rng, n_id=40, n_ood=10)
    det = fit_on(make_detector(name, **({"k": 3} if name == "knn" else {})), F[~is_ood], y, W, b)
    X = inputs_of(det, F, W, b)
    perm = rng.permutation(X.shape[0])
    # float32 products (the feature detectors' default) round by the rows' place in a block
    tol = 1e-5 if getattr(det, "dtype", "float64") == "float32" else 1e-12
    np.testing.assert_allclose(det.score(X[perm]), det.score(X)[perm], rtol=tol, atol=tol)


def test_make_detector_and_json_errors():
    with pytest.raises(ValueError, match="unknown detector 'foo'; known: msp"):
        make_detector("foo")
    knn = KNN(k=1).fit([[1.0, 0.0]])
    assert load_json(knn.to_json()).get_params() == knn.get_params()
    with pytest.raises(ValueError, match="^format must be 'abstain/1'"):
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
