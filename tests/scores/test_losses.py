"""abstain.scores._losses: loss matrices against explicit loops, per-sample losses, bad input."""

import numpy as np
import pytest
from reference.scores_ref import absolute_error_loss_ref, zero_one_loss_ref

from abstain.scores import absolute_error_loss, check_loss_matrix, sample_losses, zero_one_loss


@pytest.mark.parametrize("k", range(2, 8))
def test_loss_matrices(k):
    np.testing.assert_array_equal(zero_one_loss(k), zero_one_loss_ref(k))
    np.testing.assert_array_equal(absolute_error_loss(k), absolute_error_loss_ref(k))


def test_sample_losses_index_the_matrix():
    y_true, y_pred = np.array([0, 2, 1, 2]), np.array([0, 0, 2, 2])
    np.testing.assert_array_equal(sample_losses(y_true, y_pred), [0, 1, 1, 0])
    np.testing.assert_array_equal(
        sample_losses(y_true, y_pred, absolute_error_loss(3)), [0, 2, 1, 0]
    )
    user = [[0, 1, 5], [1, 0, 1], [9, 1, 0]]
    np.testing.assert_array_equal(sample_losses(y_true, y_pred, user), [0, 9, 1, 0])
    # The 0/1 loss needs no integer labels: strings, dates.
    np.testing.assert_array_equal(sample_losses(["a", "b"], ["a", "c"]), [0, 1])
    days = np.array(["2026-01-01", "2026-01-02"], "datetime64[D]")
    np.testing.assert_array_equal(sample_losses(days, days[::-1]), [1, 1])
    # durations compare with integers (counts of their unit), as NumPy compares them
    np.testing.assert_array_equal(
        sample_losses(np.array([1, 2, 3], "timedelta64[D]"), [1, 2, 4]), [0, 0, 1])


def test_zero_one_losses_is_sample_losses():
    """``abstain.evaluation.zero_one_losses``, the default loss of ``evaluate_scores``,
    compared labels with ``!=``: text labels against numbers, or a missing label, counted as
    errors without a word. It is ``sample_losses``, which refuses them."""
    from abstain.evaluation import zero_one_losses

    np.testing.assert_array_equal(zero_one_losses([0, 1, 2], [0, 2, 2]), [0, 1, 0])
    np.testing.assert_array_equal(zero_one_losses(["a", "b"], np.array(["a", "c"], object)),
                                  [0, 1])
    with pytest.raises(ValueError, match=r"^y_true must hold labels of the type that the "
                       r"model predicts \(numbers"):
        zero_one_losses(["0", "1"], [0, 1])
    with pytest.raises(ValueError, match="^y_true must not hold missing labels"):
        zero_one_losses(np.array([0, None], object), [0, 1])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: zero_one_loss(1), "n_classes"),
        (lambda: absolute_error_loss(2.5), "n_classes"),
        (lambda: check_loss_matrix([[0, 1, 2]]), "square"),
        (lambda: check_loss_matrix([[0, -1], [1, 0]]), "non-negative"),
        (lambda: check_loss_matrix([[0, np.nan], [1, 0]]), "finite"),
        (lambda: check_loss_matrix(np.eye(3), n_classes=2), "2 x 2"),
        (lambda: sample_losses([0, 1], [0]), "same length"),
        (lambda: sample_losses([0, 3], [0, 1], zero_one_loss(3)), "y_true"),
        (lambda: sample_losses([0, 1], [0.5, 1.0], zero_one_loss(3)), "y_pred"),
        # a missing label or labels of another type would count as errors
        (lambda: sample_losses([0.0, np.nan, 1.0], [0, 1, 1]), "^y_true must hold finite"),
        (lambda: sample_losses(np.array([0, None, 1], object), [0, 1, 1]),
         r"^y_true must not hold missing labels; got 1 \(None, NaN, NaT or NA\)\.$"),
        (lambda: sample_losses([0, 1], np.array(["a", float("nan")], object)),
         "^y_pred must not hold missing"),
        (lambda: sample_losses(["0", "1", "1"], [0, 1, 1]),
         r"^y_true must hold labels of the type that the model predicts \(numbers"),
        # text kept as objects (pandas), a NumPy NaN among objects
        (lambda: sample_losses(np.array(["a", "b"], object), [0, 1]),
         r"^y_true must hold labels of the type that the model predicts \(numbers"),
        (lambda: sample_losses([0, 1], np.array(["a", "b"], object)),
         r"^y_true must hold labels of the type that the model predicts \(strings"),
        (lambda: sample_losses(np.array([0, np.float32("nan")], object), [0, 1]),
         "^y_true must not hold missing labels"),
        # bytes never equal text (NumPy's b"a" != "a"), kept as such or as objects
        (lambda: sample_losses(np.array([b"a", b"b"]), ["a", "b"]),
         r"^y_true must hold labels of the type that the model predicts \(strings, dtype "
         r"<U1\); got bytes, dtype \|S1\.$"),
        (lambda: sample_losses(np.array(["a"], object), np.array([b"a"], object)),
         r"^y_true must hold labels of the type that the model predicts \(bytes"),
        (lambda: sample_losses(np.array(["2026-01-01"], "datetime64[D]"), ["2026-01-01"]),
         r"^y_true must hold labels of the type that the model predicts \(strings, dtype "
         r"<U10\); got dates"),
        (lambda: sample_losses(np.array(["2026-01-01", "NaT"], "datetime64[D]"),
                               np.array(["2026-01-01", "2026-01-02"], "datetime64[D]")),
         r"^y_true must not hold missing labels; got 1 \(None, NaN, NaT or NA\)\.$"),
    ],
)
def test_bad_loss_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
