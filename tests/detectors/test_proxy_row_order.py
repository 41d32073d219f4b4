"""Proxies drawn from the rows' contents: the same rows in another order give the same
splits, tuning and bank; integer labels in any container name the logit columns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain.combine import BankDetector
from abstain.detectors import (
    KNN,
    MSP,
    DetectorBank,
    Energy,
    LeaveClassesOut,
    Mahalanobis,
    shuffled_columns,
)
from abstain.models import tune_detector


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _data(n=300, k=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n + 100)
    F = np.eye(k)[y] * 1.5 + rng.normal(size=(n + 100, k))
    return ({"features": F[:n], "logits": F[:n].copy()}, y[:n],
            {"features": F[n:], "logits": F[n:].copy()})


def _permuted(outputs, p):
    return {k: v[p] for k, v in outputs.items()}


def test_held_out_class_proxies_do_not_depend_on_the_row_order():
    # the proxy inliers were drawn by position: 6 orders of the same rows gave 6 criteria
    # of tune_detector and two choices of BankDetector (stouffer [1, 3] or single [1])
    tr, y, va = _data()
    base = LeaveClassesOut(random_state=0).split_outputs(tr, y)
    p = np.random.default_rng(5).permutation(y.size)
    moved = LeaveClassesOut(random_state=0).split_outputs(_permuted(tr, p), y[p])
    for a, b in zip(base, moved, strict=True):
        np.testing.assert_array_equal(np.sort(p[b.split.inliers]), a.split.inliers)
        np.testing.assert_array_equal(np.sort(p[b.split.fit]), a.split.fit)
    bank = DetectorBank([MSP(), Energy(), KNN(k=5, normalize=False), Mahalanobis()])
    fits, scores = set(), set()
    for s in range(3):
        p = np.random.default_rng(100 + s).permutation(y.size) if s else np.arange(y.size)
        t = tune_detector(KNN(normalize=False), {"k": [1, 3, 10, 30]}, va,
                          train_outputs=_permuted(tr, p), y=y[p], random_state=0)
        scores.add(tuple(t.scores.tolist()))
        d = BankDetector(bank, n_bootstrap=50, alpha=0.2, random_state=0).fit(
            _permuted(tr, p), y[p], va)
        fits.add((d.combiner_.method_, tuple(d.combiner_.columns_),
                  float(d.guarantee_.threshold_)))
    assert len(scores) == 1 and len(fits) == 1


def test_shuffled_columns_do_not_depend_on_the_row_order():
    X = np.random.default_rng(0).normal(size=(50, 3))
    p = np.random.default_rng(1).permutation(50)
    np.testing.assert_array_equal(shuffled_columns(X[p], random_state=0),
                                  shuffled_columns(X, random_state=0))
    _, _, va = _data()
    a = tune_detector(KNN(normalize=False), {"k": [1, 3, 10]}, {"features": va["features"]},
                      train_outputs={"features": va["features"]}, criterion="shuffled",
                      random_state=0)
    b = tune_detector(KNN(normalize=False), {"k": [1, 3, 10]},
                      {"features": va["features"][::-1]},
                      train_outputs={"features": va["features"]}, criterion="shuffled",
                      random_state=0)
    np.testing.assert_array_equal(a.scores, b.scores)


def test_python_integers_in_an_object_array_name_the_logit_columns():
    # labels 0..3 as objects kept every logit column: MSP still knew the held-out class
    tr, y, _ = _data()
    for a, b in zip(LeaveClassesOut(random_state=0).split_outputs(tr, y),
                    LeaveClassesOut(random_state=0).split_outputs(tr, y.astype(object)),
                    strict=True):
        assert a.fit["logits"].shape[1] == b.fit["logits"].shape[1] == 3
        np.testing.assert_array_equal(a.fit["logits"], b.fit["logits"])


@pytest.mark.parametrize("shift", [-1, 1])
def test_integer_labels_beyond_the_logit_columns_name_y(shift):
    # the message named "kept", an argument the caller never passed
    tr, y, va = _data()
    with pytest.raises(ValueError, match=r"^y must hold the logit columns' indices 0\.\.3 "):
        tune_detector(KNN(), {"k": [1, 5]}, va, train_outputs=tr, y=y + shift,
                      random_state=0)
    with pytest.raises(ValueError, match=r"^y must hold the logit columns' indices 0\.\.3 "):
        BankDetector(DetectorBank([MSP(), KNN(k=5)]), random_state=0).fit(tr, y + shift, va)


def test_a_bank_that_cannot_fit_a_split_names_the_split():
    tr, y, va = _data(n=200)
    with pytest.raises(ValueError, match=r"^the bank cannot be fitted on held-out-class split "
                                         r"0 \(\d+ fitting rows of its kept classes\): k must"):
        BankDetector(DetectorBank([MSP(), KNN(k=150)]), random_state=0).fit(tr, y, va)


def test_python_integers_beyond_int64_name_y():
    # astype(np.int64) of 2**70 ended in an OverflowError
    tr, y, _ = _data()
    labels = np.array([int(v) for v in y], dtype=object)
    labels[0] = 2**70
    with pytest.raises(ValueError, match=r"^y must hold the logit columns' indices 0\.\.3 "):
        list(LeaveClassesOut(random_state=0).split_outputs(tr, labels))


def test_the_same_values_in_another_dtype_or_with_negative_zeros_give_the_same_proxies():
    # rows were ordered by their bytes: float32 and float64 copies of the same values, or
    # zeros written -0.0, drew other proxy rows, another KNN bank, other shuffled columns
    tr, y, _ = _data()
    F = np.maximum(tr["features"], 0.0).astype(np.float32)  # ReLU-like: many zeros
    copies = [F, F.astype(np.float64), np.where(F == 0, -0.0, F).astype(np.float32)]
    assert all(np.array_equal(F, c) for c in copies)
    splits = [[(s.split.fit.tolist(), s.split.inliers.tolist(), s.split.outliers.tolist())
               for s in LeaveClassesOut(random_state=0).split_outputs(
                   {"features": c, "logits": c}, y)] for c in copies]
    assert splits[1] == splits[0] and splits[2] == splits[0]
    banks = [KNN(k=3, bank_size=40, normalize=False, random_state=0).fit(c).score(F)
             for c in copies]
    np.testing.assert_array_equal(banks[1], banks[0])
    np.testing.assert_array_equal(banks[2], banks[0])
    shuffled = [shuffled_columns(c, random_state=0) for c in copies]
    np.testing.assert_array_equal(shuffled[1], shuffled[0])
    np.testing.assert_array_equal(shuffled[2], shuffled[0])
