"""Edited detector documents that no fit writes are refused by ``load_json`` in one line:
arrays beyond the range of the products' type (NaN scores), bank rows that are not unit
rows, bases that are not orthonormal, fitted parts that contradict their parameters, and
the width of a logit detector kept across a round trip."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from abstain import load_json
from abstain.detectors import GEN, KNN, MSP, DetectorBank, Energy, Mahalanobis, MaxLogit, ViM

RNG = np.random.default_rng(9)
N, D, K = 100, 5, 3
F = RNG.normal(size=(N, D)) + 1
Y = RNG.integers(0, K, N)
W, B = RNG.normal(size=(K, D)), RNG.normal(size=K)


def _enc(a):
    return {"shape": list(a.shape),
            "float64_le_base64": base64.b64encode(np.ascontiguousarray(a, "<f8").tobytes())
            .decode()}


def _dec(v):
    return np.frombuffer(base64.b64decode(v["float64_le_base64"]), "<f8").reshape(v["shape"])


def _edited(det, edit):
    doc = json.loads(det.to_json())
    edit(doc)
    return json.dumps(doc)


def _bank_row(doc, value):
    bank = _dec(doc["fitted"]["bank_"]).copy()
    bank[0] = value
    doc["fitted"]["bank_"] = _enc(bank)


@pytest.mark.parametrize(("make", "edit", "match"), [
    (lambda: ViM(dim=2).fit(F, weight=W, bias=B),
     lambda d: d["fitted"].update(weight_=_enc(np.full((K, D), 1e39))),
     r"fitted\.weight_ must hold values of magnitude at most 3\.403e\+38 for dtype='float32'"),
    (lambda: ViM(dim=2).fit(F, weight=W, bias=B), lambda d: d["params"].update(dim=3),
     r"fitted\.dim_ must be 3"),
    (lambda: ViM(dim=2).fit(F, weight=W, bias=B),
     lambda d: d["fitted"].update(residual_basis_=_enc(2 * _dec(d["fitted"]["residual_basis_"]))),
     r"fitted\.residual_basis_ must hold orthonormal columns"),
    (lambda: Mahalanobis().fit(F, Y),
     lambda d: d["fitted"].update(whitener_=_enc(np.full((D, D), 1e200))),
     r"fitted\.whitener_ must hold orthonormal columns"),
    (lambda: Mahalanobis().fit(F, Y),
     lambda d: d["fitted"].update(whitener_=_enc(np.hstack([_dec(d["fitted"]["whitener_"])] * 2))),
     r"fitted\.whitener_ must have at most 5 columns"),
    (lambda: Mahalanobis().fit(F, Y),
     lambda d: d["fitted"].update(means_=_enc(np.full((K, D), 1e39))),
     r"fitted\.means_ must hold values of magnitude at most"),
    (lambda: KNN(k=3, normalize=False).fit(F), lambda d: _bank_row(d, 1e30),
     r"fitted\.bank_ must hold features of magnitude at most 4\.125e\+18 for dtype='float32'"),
    (lambda: KNN(k=3).fit(F),
     lambda d: d["fitted"].update(bank_=_enc(2 * _dec(d["fitted"]["bank_"]))),
     r"fitted\.bank_ must hold rows of unit norm \(normalize=True\); got norms from 2 to 2"),
    (lambda: KNN(k=3, bank_size=20, random_state=0).fit(F),
     lambda d: d["params"].update(bank_size=10),
     r"fitted\.bank_ must hold at most params\.bank_size = 10 rows, as a fit keeps; got 20"),
    (lambda: ViM(dim=2).fit(F, weight=W, bias=B),
     lambda d: d["fitted"].update(origin_=_enc(_dec(d["fitted"]["origin_"]) + 5.0)),
     r"fitted\.origin_ must be -pinv\(fitted\.weight_\) @ fitted\.bias_"),
    (lambda: ViM(dim=2).fit(F, weight=W, bias=B),
     lambda d: d["fitted"].update(center_=_enc(np.full(D, 1e300))),
     r"fitted\.center_ must hold values of magnitude at most"),
])
def test_edited_feature_detectors_are_refused(make, edit, match):
    det = make()
    load_json(det.to_json()).score(F[:4])  # the unedited document loads
    with pytest.raises(ValueError, match=match):
        load_json(_edited(det, edit))


def test_a_bank_whose_fitted_parts_contradict_its_parameters_is_refused():
    train = {"logits": RNG.normal(size=(50, 3)), "features": RNG.normal(size=(50, 4))}
    bank = DetectorBank([MSP(), KNN(k=5)]).fit(train)
    load_json(bank.to_json())
    cases = [
        (lambda d: d["fitted"].update(detectors_=d["fitted"]["detectors_"][::-1]),
         r"fitted\.detectors_\[0\] must be params\.detectors\[0\] fitted, a MSP; got a KNN"),
        (lambda d: d["fitted"].update(names_=["a", "a"]),
         r"fitted\.names_ must be \['msp', 'knn'\]"),
        (lambda d: d["fitted"]["detectors_"][1]["params"].update(k=7),
         r"fitted\.detectors_\[1\] must have the parameters of params\.detectors\[1\]; k is 7, "
         r"not 5"),
    ]
    for edit, match in cases:
        with pytest.raises(ValueError, match=match):
            load_json(_edited(bank, edit))


@pytest.mark.parametrize("cls", [MSP, Energy, GEN, MaxLogit])
def test_a_logit_detector_keeps_its_width_across_a_round_trip(cls):
    det = cls().fit(np.zeros((2, 3)))
    back = load_json(det.to_json())
    for d in (det, back):
        with pytest.raises(ValueError, match=r"logits must have 3 column\(s\), as in fit"):
            d.score(np.zeros((2, 4)))
    unfitted = load_json(cls().to_json())
    assert unfitted.score(np.zeros((2, 4))).shape == (2,)


def test_edited_shifted_base_scores_and_csi_are_refused():
    from abstain.detectors import CSI, ShiftedBaseScores

    rng = np.random.default_rng(4)
    T, n, p = 2, 40, 4
    feats = rng.normal(size=(T, n, p)) + 1.0
    labels = rng.integers(0, 2, n)
    csi = CSI(shifts=(0, 1)).fit(feats, rng.normal(size=(T, n, T)) + 2.0)
    base = ShiftedBaseScores(kinds=("cos", "supmah"), shifts=(0, 1)).fit(feats, labels)
    for det in (csi, base):
        load_json(det.to_json())
    for det, edit, match in (
            (csi, lambda d: d["fitted"].update(bank_=_enc(3 * _dec(d["fitted"]["bank_"]))),
             r"fitted\.bank_ must hold rows of unit norm, as a fit stores them; got norms from 3"),
            (csi, lambda d: d["fitted"].update(lambda_con_=_enc(
                -_dec(d["fitted"]["lambda_con_"]))), r"fitted\.lambda_con_ must hold positive"),
            (base, lambda d: d["fitted"].update(bank_=_enc(0 * _dec(d["fitted"]["bank_"]))),
             r"fitted\.bank_ must hold rows of unit norm"),
            (base, lambda d: d["fitted"].update(logdets_=_enc(_dec(d["fitted"]["logdets_"]) + 50)),
             r"fitted\.logdets_ must be -2 log \|det W\| of each whitener")):
        with pytest.raises(ValueError, match=match):
            load_json(_edited(det, edit))
