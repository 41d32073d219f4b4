"""abstain.detectors._proxy: held-out classes as proxy outliers, and outputs restricted to
the classes kept."""

from __future__ import annotations

import numpy as np
import pytest
from reference.proxy_ref import content_splits

from abstain.detectors import MSP, LeaveClassesOut, restrict_outputs


@pytest.mark.parametrize(("k", "n_splits", "want"), [(1, None, 6), (2, None, 3), (1, 4, 4),
                                                     (4, None, 1)])
def test_splits_partition_the_rows_and_hold_each_class_out_once(k, n_splits, want):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 6, 300)
    cv = LeaveClassesOut(k, n_splits=n_splits, inlier_fraction=0.3, random_state=1)
    splits = list(cv.split(y))
    assert len(splits) == want == cv.get_n_splits(y)
    seen = []
    for s in splits:
        assert len(s.held_out) == k and len(s.kept) == 6 - k
        assert sorted(np.r_[s.fit, s.inliers, s.outliers].tolist()) == list(range(300))
        assert set(y[s.outliers]) == set(s.held_out.tolist())
        assert set(y[s.fit]) == set(y[s.inliers]) == set(s.kept.tolist())
        for c in s.kept:  # inlier_fraction of each kept class, rounded
            n_c = int((y == c).sum())
            assert int((y[s.inliers] == c).sum()) == min(max(round(0.3 * n_c), 1), n_c - 1)
        seen += s.held_out.tolist()
    assert len(seen) == len(set(seen))
    again = list(LeaveClassesOut(k, n_splits=n_splits, inlier_fraction=0.3,
                                 random_state=1).split(y))
    assert all(np.array_equal(a.inliers, b.inliers) for a, b in zip(splits, again, strict=True))


def test_string_labels_and_two_rows_per_class():
    y = np.array(["cat", "dog", "cow", "cat", "dog", "cow"])
    s = next(LeaveClassesOut(random_state=0).split(y))
    assert len(s.fit) == len(s.inliers) == 2 and len(s.outliers) == 2


def test_bad_input():
    with pytest.raises(ValueError, match="y must hold at least 3 classes to hold out "
                                         "n_held_out=1 and keep two; got 2"):
        list(LeaveClassesOut().split([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="y must hold at least 2 rows of every class .* "
                                         "class 2 has 1"):
        list(LeaveClassesOut().split([0, 1, 0, 1, 2]))
    with pytest.raises(ValueError, match="n_held_out must be"):
        list(LeaveClassesOut(0).split([0, 1, 2]))
    with pytest.raises(ValueError, match=r"kept must hold class indices in 0\.\.2"):
        restrict_outputs({"logits": np.zeros((4, 3))}, [0], [0, 3])
    with pytest.raises(ValueError, match="outputs must have 'logits' or 'features'"):
        restrict_outputs({"x": np.zeros(3)}, [0])
    # a row index out of range: -1 was the last row, 4 an IndexError
    logits = np.arange(12.0).reshape(4, 3)
    for rows, got in (([-1], "-1 to -1"), ([0, 4], "0 to 4")):
        with pytest.raises(ValueError, match=rf"^rows must hold row indices in 0\.\.3; got "
                                             rf"values from {got}\.$"):
            restrict_outputs({"logits": logits}, rows, [0, 2])
    with pytest.raises(ValueError, match=r"^weight must have one row per logit column \(3\); "
                                         r"got shape \(2, 3\)\.$"):
        restrict_outputs({"logits": logits}, [0], [2], weight=np.ones((2, 3)))
    for y in (np.array([1, "a", 2, 1, "a", 2], dtype=object), [None, 1, 2, None, 1, 2]):
        with pytest.raises(ValueError, match="^y must hold class labels of one kind"):
            list(LeaveClassesOut().split(y))
        with pytest.raises(ValueError, match="^y must hold class labels of one kind"):
            LeaveClassesOut().get_n_splits(y)
    # no rows ([] is float64), 1-d logits, logits and features of other rows, a class twice
    sub, _, _ = restrict_outputs({"logits": logits}, [], [0, 2])
    assert sub["logits"].shape == (0, 2)
    with pytest.raises(ValueError, match=r"^outputs' logits must be a 2-d array"):
        restrict_outputs({"logits": np.zeros(4)}, [0], [0])
    with pytest.raises(ValueError, match=r"^outputs' logits and features must have the same "
                                         r"rows; got 4 and 2\.$"):
        restrict_outputs({"logits": logits, "features": np.zeros((2, 5))}, [0])
    with pytest.raises(ValueError, match=r"^kept must name each class once; got \[0, 0\]\.$"):
        restrict_outputs({"logits": logits}, [0], [0, 0])
    from abstain.detectors import joint_labels

    for n_shifts in (2.5, True, "3", 0):
        with pytest.raises(ValueError, match="^n_shifts must be an integer >= 1"):
            joint_labels([0, 1], n_shifts)


def test_restricted_outputs_score_as_a_network_of_the_kept_classes():
    rng = np.random.default_rng(2)
    logits, F = rng.normal(size=(10, 4)), rng.normal(size=(10, 3))
    W, b = rng.normal(size=(4, 3)), rng.normal(size=4)
    out, w, bb = restrict_outputs({"logits": logits, "features": F}, np.arange(5), [1, 3],
                                  weight=W, bias=b)
    np.testing.assert_array_equal(out["logits"], logits[:5][:, [1, 3]])
    np.testing.assert_array_equal(out["features"], F[:5])
    np.testing.assert_array_equal(w, W[[1, 3]])
    np.testing.assert_array_equal(bb, b[[1, 3]])
    # the softmax of the kept classes: MSP of the restricted logits
    p = np.exp(logits[:5][:, [1, 3]])
    np.testing.assert_allclose(MSP().score(out["logits"]), -(p / p.sum(1, keepdims=True)).max(1))


def test_split_outputs_is_split_then_restrict_outputs():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 80)
    outputs = {"logits": rng.normal(size=(80, 4)), "features": rng.normal(size=(80, 3))}
    W, b = rng.normal(size=(4, 3)), rng.normal(size=4)
    got = list(LeaveClassesOut(random_state=5).split_outputs(outputs, y, weight=W, bias=b))
    splits = content_splits(LeaveClassesOut(random_state=5), outputs, y)
    assert len(got) == len(splits) == 4
    for p, s in zip(got, splits, strict=True):
        fit, w, bb = restrict_outputs(outputs, s.fit, s.kept, weight=W, bias=b)
        for key in outputs:
            np.testing.assert_array_equal(p.fit[key], fit[key])
            np.testing.assert_array_equal(p.inliers[key],
                                          restrict_outputs(outputs, s.inliers, s.kept)[0][key])
            np.testing.assert_array_equal(p.outliers[key],
                                          restrict_outputs(outputs, s.outliers, s.kept)[0][key])
        np.testing.assert_array_equal(p.weight, w)
        np.testing.assert_array_equal(p.bias, bb)
        np.testing.assert_array_equal(p.y_fit, y[s.fit])
        np.testing.assert_array_equal(p.split.outliers, s.outliers)


def test_shuffled_columns_keep_each_column_and_break_the_links():
    from abstain.detectors import shuffled_columns

    rng = np.random.default_rng(0)
    x = rng.normal(size=500)
    X = np.column_stack([x, 2 * x + 1, np.round(x), -x])  # columns tied to each other
    S = shuffled_columns(X, random_state=1)
    assert S.shape == X.shape and S.dtype == np.float64
    for j in range(X.shape[1]):  # every column holds its own values, each once
        np.testing.assert_array_equal(np.sort(S[:, j]), np.sort(X[:, j]))
    assert np.mean(S[:, 1] == 2 * S[:, 0] + 1) < 0.02  # the links are gone
    # one permutation per column, drawn apart
    ranks = [np.argsort(np.argsort(S[:, j], kind="stable")) for j in (0, 1, 3)]
    assert not np.array_equal(ranks[0], ranks[1])
    assert not np.array_equal(ranks[0], ranks[2][::-1])
    # seeded: the same rows again; a Generator is used as it is
    np.testing.assert_array_equal(S, shuffled_columns(X, random_state=1))
    np.testing.assert_array_equal(S, shuffled_columns(X, random_state=np.random.default_rng(1)))
    assert not np.array_equal(S, shuffled_columns(X, random_state=2))
    # n_rows: the first rows of the same shuffle, so each column's values come from
    # distinct rows
    head = shuffled_columns(X, n_rows=40, random_state=1)
    np.testing.assert_array_equal(head, S[:40])
    assert all(np.unique(head[:, j]).size == 40 for j in (0, 1, 3))
    # integer input, and images shuffled per pixel
    images = np.arange(24).reshape(4, 3, 2)
    T = shuffled_columns(images, random_state=0)
    assert T.shape == images.shape
    for a in range(3):
        for b in range(2):
            assert sorted(T[:, a, b].tolist()) == images[:, a, b].tolist()


def test_shuffled_columns_bad_input():
    from abstain.detectors import shuffled_columns

    X = np.arange(12.0).reshape(6, 2)
    for bad, match in ((np.arange(5.0), "at least 2 rows"), (X[:1], "at least 2 rows"),
                       (np.zeros((3, 0)), "at least 2 rows"),
                       (np.array([["a", "b"], ["c", "d"]]), "real numbers")):
        with pytest.raises(ValueError, match=match):
            shuffled_columns(bad)
    for v, what in ((np.nan, "1 NaN"), (np.inf, "1 infinite")):
        Y = X.copy()
        Y[2, 1] = v
        with pytest.raises(ValueError, match=f"X must be finite; got {what}"):
            shuffled_columns(Y)
    for n_rows in (0, 7, -1, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"n_rows must be an integer in \[1, 6\]"):
            shuffled_columns(X, n_rows=n_rows)
    for seed in (-1, 1.5, "0"):
        with pytest.raises(ValueError, match="random_state must be"):
            shuffled_columns(X, random_state=seed)
