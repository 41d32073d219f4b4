"""abstain.models._tuning: tune_detector's criterion equals the AUROC computed by hand for
every candidate, the shuffled outliers keep every column's values, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from reference.proxy_ref import content_splits

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
    # ties within FLAT_TOLERANCE of the best go to the first (KNN()'s own k=50 is no candidate)
    best = int(np.flatnonzero(tuned.scores >= tuned.scores.max() - 1e-3)[0])
    assert tuned.best_params == tuned.params[best] and tuned.best_score == tuned.scores[best]
    assert tuned.detector.get_params()["k"] == tuned.best_params["k"]
    assert hasattr(tuned.detector, "bank_")  # fitted


def test_ties_go_to_the_first_candidate_and_lists_of_dicts():
    train, val, ood, _ = _data(1)
    with pytest.warns(UserWarning, match="cannot tell the candidates apart .* kept the first"
                      ) as caught:
        tuned = tune_detector(ODIN(), [{"temperature": 1.0}, {"temperature": 1.0}], val, ood)
    assert caught[0].filename == __file__  # the caller's line, not validate_params'
    assert tuned.scores[0] == tuned.scores[1] and tuned.best_params is tuned.params[0]
    assert tuned.flat


def test_ties_prefer_the_detectors_own_parameters():
    train, val, ood, _ = _data(1)
    own = 1.0 + 1e-12  # the same scores to the last bits or nearly: a tie
    with pytest.warns(UserWarning, match="kept the detector's own parameters"):
        tuned = tune_detector(ODIN(temperature=own), {"temperature": [1.0, own]}, val, ood)
    assert tuned.best_params == {"temperature": own}


def _classes(seed=0, n=400):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    F = np.eye(4)[y] * 3.0 + rng.normal(size=(n, 4))
    W = np.eye(4)
    return {"features": F, "logits": F @ W.T}, y, W


def test_held_out_classes_criterion_equals_a_loop_by_hand():
    from abstain.detectors import LeaveClassesOut, restrict_outputs

    train, y, W = _classes()
    val, _, _ = _classes(1, 100)
    grid = {"dim": [1, 2]}
    tuned = tune_detector(ViM(), grid, val, train_outputs=train, y=y, weight=W, random_state=3)
    assert tuned.criterion == "held_out_classes"
    splits = content_splits(LeaveClassesOut(n_splits=5, random_state=np.random.default_rng(3)),
                            train, y)
    assert len(splits) == 4
    for cand, got in zip(tuned.params, tuned.scores, strict=True):
        values = []
        for sp in splits:
            fit, w, b = restrict_outputs(train, sp.fit, sp.kept, weight=W)
            det = ViM(**cand).fit(fit["features"], weight=w, bias=b)
            s_in = det.score(train["features"][sp.inliers])
            s_out = det.score(train["features"][sp.outliers])
            values.append(auroc(np.r_[np.zeros(s_in.size, bool), np.ones(s_out.size, bool)],
                                np.r_[s_in, s_out]))
        assert got == pytest.approx(np.mean(values), abs=1e-12)
    assert tuned.detector.get_params()["dim"] == tuned.best_params["dim"]


def test_a_flat_criterion_warns_and_keeps_the_default():
    train, y, _ = _classes(2)
    far = {"features": train["features"] * 100.0, "logits": train["logits"] * 100.0}
    with pytest.warns(UserWarning, match="'auroc' criterion cannot tell the candidates apart"):
        tuned = tune_detector(KNN(k=5, normalize=False), {"k": [1, 5, 20]},
                              {"features": train["features"][:50]}, far,
                              train_outputs={"features": train["features"][50:]})
    assert tuned.flat and tuned.best_params == {"k": 5} and np.all(tuned.scores == 1.0)


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


@pytest.mark.parametrize("criterion", ["held_out_classes", "shuffled"])
@pytest.mark.parametrize("seed", [0, "generator"])
def test_a_detector_that_draws_is_tuned_the_same_way_for_one_seed(criterion, seed):
    # a KNN with a bank draws its bank: every candidate takes one seed from random_state
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 300)
    F = np.eye(4)[y] * 3 + rng.normal(size=(300, 4))
    runs = [tune_detector(KNN(normalize=False, bank_size=50), {"k": [1, 5, 20]},
                          {"features": F[200:]}, train_outputs={"features": F[:200]},
                          y=y[:200], criterion=criterion,
                          random_state=np.random.default_rng(1) if seed == "generator" else seed)
            for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.scores, runs[0].scores)
        assert r.best_params == runs[0].best_params
        np.testing.assert_array_equal(r.detector.score(F[200:]), runs[0].detector.score(F[200:]))


def test_labels_of_another_length_than_the_outputs_are_refused():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 300)
    F = np.eye(4)[y] * 3 + rng.normal(size=(300, 4))
    for n in (100, 250):
        with pytest.raises(ValueError, match=rf"^y must have one label per row of the outputs' "
                                             rf"features \(200 rows\); got {n} labels\."):
            tune_detector(KNN(normalize=False), {"k": [1, 5]}, {"features": F[200:]},
                          train_outputs={"features": F[:200]}, y=y[:n], random_state=0)


def test_bad_input():
    train, val, ood, _ = _data(4)
    with pytest.raises(ValueError, match="detector must be a detector"):
        tune_detector("knn", {"k": [1]}, val, ood, train_outputs=train)
    with pytest.raises(ValueError, match="grid names 'kk', which is not a parameter"):
        tune_detector(KNN(), {"kk": [1]}, val, ood, train_outputs=train)
    with pytest.raises(ValueError, match=r"grid\['k'\] must be a non-empty list"):
        tune_detector(KNN(), {"k": []}, val, ood, train_outputs=train)
    # a 1-d array of values is a list of them (it was refused, its message showing a list)
    arrays = tune_detector(KNN(normalize=False), {"k": np.array([1, 5])}, val, ood,
                           train_outputs=train)
    lists = tune_detector(KNN(normalize=False), {"k": [1, 5]}, val, ood, train_outputs=train)
    assert arrays.best_params == lists.best_params and type(arrays.best_params["k"]) is int
    with pytest.raises(ValueError, match="grid must be a dict"):
        tune_detector(KNN(), [], val, ood, train_outputs=train)
    with pytest.raises(ValueError, match="pass train_outputs="):
        tune_detector(KNN(), {"k": [1]}, val, ood)
    with pytest.raises(ValueError, match="model is used only by detectors that perturb"):
        tune_detector(KNN(), {"k": [1]}, val, ood, train_outputs=train, model=object())
    with pytest.raises(ValueError, match="k must be an integer"):
        tune_detector(KNN(), {"k": [0]}, val, ood, train_outputs=train)
    with pytest.raises(ValueError, match="criterion must be one of 'auto'"):
        tune_detector(KNN(), {"k": [1]}, val, ood, train_outputs=train, criterion="best")
    with pytest.raises(ValueError, match="criterion 'auroc' needs ood_outputs"):
        tune_detector(KNN(), {"k": [1]}, val, train_outputs=train, criterion="auroc")
    with pytest.raises(ValueError, match="criterion 'held_out_classes' needs train_outputs "
                                         "and their labels y"):
        tune_detector(KNN(), {"k": [1]}, val, train_outputs=train, criterion="held_out_classes")
    with pytest.raises(ValueError, match="ood_outputs are used only by criterion 'auroc'"):
        tune_detector(KNN(), {"k": [1]}, val, ood, train_outputs=train, criterion="shuffled")
    with pytest.raises(ValueError, match="y must hold at least 3 classes"):
        tune_detector(KNN(), {"k": [1]}, val, train_outputs=train, y=np.arange(200) % 2)
    # a k that the training rows allow but a split's fitting rows do not: the split is named
    with pytest.raises(ValueError, match=r"^candidate \{'k': 190\} cannot be fitted on "
                                         r"held-out-class split 0 \(\d+ fitting rows of its "
                                         r"kept classes\): k must be at most"):
        tune_detector(KNN(), {"k": [5, 190]}, val, train_outputs=train, y=np.arange(200) % 3)
