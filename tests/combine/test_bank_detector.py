"""abstain.combine._bank: BankDetector is the bank, z-values and guarantee fitted on the
stated splits; its false-alarm rate stays below alpha with probability 1 - delta."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import NotFittedError, load_json
from abstain.combine import BankDetector, GuaranteedDetector, ScoreCombiner
from abstain.detectors import KNN, MSP, DetectorBank, Energy


def _outputs(n, rng, scale=1.0):
    F = rng.normal(size=(n, 4)) * scale
    return {"features": F, "logits": F[:, :3] * 2.0}


def test_equals_the_three_steps_done_by_hand():
    rng = np.random.default_rng(0)
    train, cal, new = _outputs(100, rng), _outputs(300, rng), _outputs(50, rng, 2.0)
    bank = DetectorBank([MSP(), KNN(k=3, normalize=False)])
    det = BankDetector(bank, method="fisher", alpha=0.1, delta=0.1, z_fraction=0.4,
                       random_state=3).fit(train, calibration_outputs=cal)
    fitted = DetectorBank([MSP(), KNN(k=3, normalize=False)]).fit(train)
    S = fitted.score(cal)
    order = np.random.default_rng(3).permutation(300)
    comb = ScoreCombiner(method="fisher").fit(S[order[:120]])
    guar = GuaranteedDetector(alpha=0.1, delta=0.1).fit(comb.score(S[order[120:]]))
    assert (det.n_z_, det.n_calibration_) == (120, 180)
    assert det.guarantee_.threshold_ == guar.threshold_
    np.testing.assert_array_equal(det.score(new), comb.score(fitted.score(new)))
    np.testing.assert_array_equal(det.accept(new), guar.accept(comb.score(fitted.score(new))))
    np.testing.assert_array_equal(det.base_scores(new), fitted.score(new))
    loaded = load_json(det.to_json())
    np.testing.assert_array_equal(loaded.accept(new), det.accept(new))
    assert not hasattr(bank, "detectors_")  # the given bank is left unfitted


def test_false_alarm_rate_at_most_alpha_with_probability_one_minus_delta():
    # Inliers only: each trial draws a fresh calibration set, the FAR is measured on a large
    # fresh inlier sample. Pr(FAR > alpha) must be <= delta up to the trials' noise.
    alpha, delta, trials = 0.1, 0.2, 100
    rng = np.random.default_rng(1)
    train = _outputs(200, rng)
    test = _outputs(10000, rng)
    bank = DetectorBank([MSP(), Energy(), KNN(k=5, normalize=False)])
    S_test = None  # the bank is fitted on the same train rows in every trial
    over = 0
    for t in range(trials):
        det = BankDetector(bank, alpha=alpha, delta=delta, random_state=t).fit(
            train, calibration_outputs=_outputs(160, rng))
        if S_test is None:
            S_test = det.base_scores(test)
            np.testing.assert_array_equal(det.guarantee_.accept(det.combiner_.score(S_test)),
                                          det.accept(test))
        far = 1.0 - det.guarantee_.accept(det.combiner_.score(S_test)).mean()
        over += float(far) > alpha
    # binomial(100, p <= 0.2): mean <= 20, sd 4; 32 is 3 sd above
    assert over <= delta * trials + 3 * np.sqrt(trials * delta * (1 - delta))


def test_bad_input():
    rng = np.random.default_rng(2)
    train, cal = _outputs(50, rng), _outputs(40, rng)
    bank = DetectorBank([MSP()])
    with pytest.raises(NotFittedError, match="not fitted"):
        BankDetector(bank).accept(cal)
    with pytest.raises(ValueError, match="needs calibration_outputs"):
        BankDetector(bank).fit(train)
    with pytest.raises(ValueError, match="bank must be a DetectorBank"):
        BankDetector().fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match=r"calibration_outputs must have enough rows .* 45 for "
                                         r"FAR <= alpha=0.05 .* got 40 rows, split 20 \+ 20"):
        BankDetector(bank).fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match=r"z_fraction must be in \(0, 1\)"):
        BankDetector(bank, z_fraction=1.0).fit(train, calibration_outputs=cal)
    with pytest.raises(ValueError, match="method must be one of"):
        BankDetector(bank, method="vote").fit(train, calibration_outputs=cal)


def test_a_document_whose_parts_disagree_is_refused():
    import json

    rng = np.random.default_rng(5)
    det = BankDetector(DetectorBank([MSP()]), alpha=0.2, delta=0.2, random_state=0).fit(
        _outputs(30, rng), calibration_outputs=_outputs(60, rng))
    doc = json.loads(det.to_json())
    doc["params"]["method"] = "fisher"
    with pytest.raises(ValueError, match="fitted.combiner_ must use params.method 'fisher'"):
        load_json(json.dumps(doc))
    doc = json.loads(det.to_json())
    doc["fitted"]["n_calibration_"] = 7
    with pytest.raises(ValueError, match="fitted.guarantee_ must be calibrated on fitted"):
        load_json(json.dumps(doc))
