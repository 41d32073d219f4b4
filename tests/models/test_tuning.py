"""abstain.models._tuning: tune_detector's criterion equals the AUROC computed by hand for
every candidate, the shuffled outliers keep every column's values, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.detectors import KNN, ODIN, ViM
from abstain.metrics import auroc
from abstain.models import tune_detector


def _data(seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(300, 1))
    F = np.hstack([z, z + 0.2 * rng.normal(size=(300, 1)), rng.normal(size=(300, 2))])
    W = rng.normal(size=(3, 4))
    out = lambda X: {"features": X, "logits": X @ W.T}  # noqa: E731
    return out(F[:200]), out(F[200:]), out(rng.normal(size=(80, 4)) * 2.0), W


def test_auroc_criterion_equals_a_loop_over_the_grid():
    train, val, ood, _ = _data()
    grid = {"k": [1, 3, 10], "normalize": [False, True]}
    tuned = tune_detector(KNN(), grid, val, ood, train_outputs=train)
    assert tuned.criterion == "auroc" and len(tuned.params) == 6
    assert tuned.params[1] == {"k": 1, "normalize": True}  # itertools.product order
    labels = np.r_[np.zeros(100, bool), np.ones(80, bool)]
    for cand, got in zip(tuned.params, tuned.scores, strict=True):
        det = KNN(**cand).fit(train["features"])
        s = np.r_[det.score(val["features"]), det.score(ood["features"])]
        assert got == auroc(labels, s)
    best = int(np.argmax(tuned.scores))
    assert tuned.best_params == tuned.params[best] and tuned.best_score == tuned.scores[best]
    assert tuned.detector.get_params()["k"] == tuned.best_params["k"]
    assert hasattr(tuned.detector, "bank_")  # fitted


def test_ties_go_to_the_first_candidate_and_lists_of_dicts():
    train, val, ood, _ = _data(1)
    tuned = tune_detector(ODIN(), [{"temperature": 1.0}, {"temperature": 1.0}], val, ood)
    assert tuned.scores[0] == tuned.scores[1] and tuned.best_params is tuned.params[0]


def test_shuffled_criterion_keeps_each_column_and_is_seeded():
    from abstain.models._tuning import _shuffled_outputs

    _, val, _, _ = _data(2)
    out = _shuffled_outputs(val, np.random.default_rng(0), ("features",))
    assert not np.array_equal(out["features"], val["features"])
    np.testing.assert_array_equal(np.sort(out["features"], axis=0),
                                  np.sort(val["features"], axis=0))
    train, val, _, W = _data(3)
    a = tune_detector(ViM(), {"dim": [1, 2, 3]}, val, train_outputs=train, weight=W,
                      random_state=5)
    b = tune_detector(ViM(), {"dim": [1, 2, 3]}, val, train_outputs=train, weight=W,
                      random_state=5)
    assert a.criterion == "shuffled"
    np.testing.assert_array_equal(a.scores, b.scores)
    shuffled = _shuffled_outputs(val, np.random.default_rng(5), ("features",))
    det = ViM(dim=2).fit(train["features"], weight=W)
    s = np.r_[det.score(val["features"]), det.score(shuffled["features"])]
    assert a.scores[1] == auroc(np.repeat([False, True], 100), s)


def test_bad_input():
    train, val, ood, _ = _data(4)
    with pytest.raises(ValueError, match="detector must be a detector"):
        tune_detector("knn", {"k": [1]}, val, ood, train_outputs=train)
    with pytest.raises(ValueError, match="grid names 'kk', which is not a parameter"):
        tune_detector(KNN(), {"kk": [1]}, val, ood, train_outputs=train)
    with pytest.raises(ValueError, match=r"grid\['k'\] must be a non-empty list"):
        tune_detector(KNN(), {"k": []}, val, ood, train_outputs=train)
    with pytest.raises(ValueError, match="grid must be a dict"):
        tune_detector(KNN(), [], val, ood, train_outputs=train)
    with pytest.raises(ValueError, match="pass train_outputs="):
        tune_detector(KNN(), {"k": [1]}, val, ood)
    with pytest.raises(ValueError, match="model is used only by detectors that perturb"):
        tune_detector(KNN(), {"k": [1]}, val, ood, train_outputs=train, model=object())
    with pytest.raises(ValueError, match="k must be an integer"):
        tune_detector(KNN(), {"k": [0]}, val, ood, train_outputs=train)
