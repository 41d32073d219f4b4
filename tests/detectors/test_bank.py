"""abstain.detectors._bank: DetectorBank equals its detectors fitted one by one, names, JSON,
bad input."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import NotFittedError, load_json
from abstain.detectors import KNN, MSP, DetectorBank, Energy, Mahalanobis, ViM


def _outputs(n, seed):
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, 5))
    W = np.random.default_rng(99).normal(size=(3, 5))
    return {"features": F, "logits": F @ W.T}, W


def test_columns_equal_the_detectors_fitted_one_by_one():
    train, W = _outputs(80, 0)
    new, _ = _outputs(30, 1)
    y = np.arange(80) % 3
    dets = [MSP(), KNN(k=4), Mahalanobis(dtype="float64"), ViM(dim=2), KNN(k=9)]
    bank = DetectorBank(dets).fit(train, y, weight=W)
    assert bank.names_ == ["msp", "knn", "mahalanobis", "vim", "knn_2"]
    expected = np.column_stack([
        MSP().score(new["logits"]),
        KNN(k=4).fit(train["features"]).score(new["features"]),
        Mahalanobis(dtype="float64").fit(train["features"], y).score(new["features"]),
        ViM(dim=2).fit(train["features"], weight=W).score(new["features"]),
        KNN(k=9).fit(train["features"]).score(new["features"]),
    ])
    np.testing.assert_array_equal(bank.score(new), expected)
    assert not hasattr(dets[1], "bank_")  # the given detectors are left unfitted
    loaded = load_json(bank.to_json())
    np.testing.assert_array_equal(loaded.score(new), expected)
    assert loaded.names_ == bank.names_


def test_names_and_attribute_outputs():
    train, _ = _outputs(20, 2)

    class Outputs:  # an object with .logits and .features, as abstain.torch.extract gives
        logits, features = train["logits"], train["features"]

    bank = DetectorBank([MSP(), Energy()], names=["conf", "energy"]).fit(Outputs())
    assert bank.names_ == ["conf", "energy"] and bank.score(Outputs()).shape == (20, 2)


def test_bad_input():
    train, _ = _outputs(20, 3)
    with pytest.raises(NotFittedError, match="not fitted"):
        DetectorBank([MSP()]).score(train)
    with pytest.raises(ValueError, match="detectors must be a non-empty list of detectors"):
        DetectorBank().fit(train)
    with pytest.raises(ValueError, match="detectors must be a non-empty list"):
        DetectorBank([]).fit(train)
    with pytest.raises(ValueError, match=r"detectors\[1\] must be a detector"):
        DetectorBank([MSP(), "knn"]).fit(train)
    with pytest.raises(ValueError, match="names must be a list of 2 non-empty strings"):
        DetectorBank([MSP(), Energy()], names=["a"]).fit(train)
    with pytest.raises(ValueError, match="names must be distinct"):
        DetectorBank([MSP(), Energy()], names=["a", "a"]).fit(train)
    with pytest.raises(ValueError, match="outputs has no 'features' entry"):
        DetectorBank([KNN(k=2)]).fit({"logits": train["logits"]})
    bank = DetectorBank([MSP(), KNN(k=2)]).fit(train)
    with pytest.raises(ValueError, match="the same number of rows"):
        bank.score({"logits": train["logits"], "features": train["features"][:5]})


def test_a_document_whose_detectors_do_not_match_its_params_is_refused():
    import json

    train, _ = _outputs(20, 4)
    doc = json.loads(DetectorBank([MSP(), Energy()]).fit(train).to_json())
    doc["fitted"]["detectors_"] = doc["fitted"]["detectors_"][:1]
    doc["fitted"]["names_"] = doc["fitted"]["names_"][:1]
    with pytest.raises(ValueError, match=r"fitted\.detectors_ must hold one detector per "
                                         r"params\.detectors \(2\); got 1\."):
        load_json(json.dumps(doc))
