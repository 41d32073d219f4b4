"""Plug-in uncertainty scores from a model's own outputs (Franc et al. 2023, section 3.2):
conditional risk, MCP, margin, the ordinal margin and the true-class probability. Higher =
reject first."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.exact import sum_round_off
from .._core.validation import (
    Options,
    as_label_indices,
    as_proba,
    as_real_array,
    validate_params,
)
from ._losses import check_loss_matrix

__all__ = [
    "ConditionalRisk",
    "conditional_risk",
    "mcp",
    "margin",
    "ordinal_margin",
    "true_class_probability",
]


class ConditionalRisk(NamedTuple):
    """Plug-in prediction and its conditional risk.

    Attributes
    ----------
    prediction : ndarray of shape (n,)
        Column indices of ``proba``, or the labels of ``classes`` when given.
    risk : ndarray of float, shape (n,)
    """

    prediction: NDArray[Any]
    risk: NDArray[np.float64]


def _expected_loss(p: NDArray[np.float64], mat: NDArray[np.float64] | None,
                   ) -> NDArray[np.float64]:
    """``expected[i, yhat] = sum_y p[i, y] * loss[y, yhat]`` (the 0/1 loss if ``mat`` is
    None: the row total less ``p[i, yhat]``, which serves the prediction's ties only; the
    risk is :func:`_zero_one_risk`), each sum taken over its terms in ascending order, so a
    row's risks do not depend on the batch it is scored in, on the CPU (a BLAS product adds
    in an order that depends on both, which would move tie groups of the uncertainty and the
    prediction's tie rule), or on the order of the classes: rows whose terms are the same
    numbers in another order (``[0.1, 0.2, 0.7]`` and ``[0.7, 0.2, 0.1]`` under the 0/1
    loss) get the same risks and tie."""
    k = p.shape[1]
    if mat is None:  # sum over y != yhat: the row total less p[yhat]
        return np.sort(p, axis=1).sum(axis=1, keepdims=True) - p
    out = np.empty(p.shape)
    step = max(1, (1 << 22) // (k * k))  # rows per block of (rows, K, K) terms
    for i in range(0, p.shape[0], step):
        terms = p[i : i + step, :, None] * mat[None, :, :]
        terms.sort(axis=1)
        out[i : i + step] = terms.sum(axis=1)
    return out


def _zero_one_risk(p: NDArray[np.float64], pred: NDArray[np.intp]) -> NDArray[np.float64]:
    """``sum_{y != pred} p[y]`` of each row under the 0/1 loss, over the other classes'
    probabilities in ascending order (the predicted class's taken as 0 and sorted first),
    so that a confident row keeps its small risk (``[1e-17, 1.0]``: 1e-17, where the row
    total less ``p[pred]`` is 0) and rows with the same other terms tie."""
    rest = p.copy()
    rest[np.arange(p.shape[0]), pred] = 0.0
    rest.sort(axis=1)
    return rest.sum(axis=1)


def _plugin_prediction(p: NDArray[np.float64], mat: NDArray[np.float64] | None,
                       expected: NDArray[np.float64]) -> NDArray[np.intp]:
    """``argmin_yhat`` of the ``expected`` losses, the lowest class index among those
    within the round-off of the sums of the least (:func:`~abstain._core.exact.sum_round_off`
    of ``2K`` terms times the sum of the terms' magnitudes, the library's tie rule for sums):
    a near tie is a tie, whichever the loss matrix and the order of the additions."""
    k = p.shape[1]
    size = p.sum(axis=1, keepdims=True) if mat is None else _expected_loss(p, np.abs(mat))
    slack = sum_round_off(2 * k) * size + k * 2.0**-1070
    least = np.min(expected, axis=1, keepdims=True)
    return np.argmax(expected - slack <= least, axis=1)


def conditional_risk(
    proba: ArrayLike, loss: ArrayLike | None = None, prediction: ArrayLike | None = None,
    *, classes: ArrayLike | None = None,
) -> ConditionalRisk:
    """Plug-in Bayes prediction and conditional risk, eq. (3) and eq. (9) with ``p_hat``.

    ``r(x) = sum_y p_hat(y | x) * loss[y, h(x)]``. With ``prediction=None`` the
    prediction is the plug-in Bayes classifier ``h(x) = argmin_yhat sum_y p_hat(y|x)
    loss[y, yhat]`` (ties: the lowest class index; classes whose expected losses differ by
    less than the round-off of their sums, a relative ``4 (2K + 2) eps``, are tied: the
    0/1 loss given as a matrix predicts as ``loss=None``, and probabilities that tie in
    decimals, ``[0.5, 0.1, 0.4]`` under the absolute error, tie) and the risk is the least
    expected loss (the tied classes' risks differ by round-off only); otherwise the risk of
    the given predictions. Each sum is taken over its terms in ascending order (under the
    0/1 loss, the other classes' probabilities), so rows that hold the same numbers in
    another class order get the same risk, and a confident row keeps a risk far below the
    round-off of 1 (``[1e-17, 1.0]``: 1e-17). With an exact posterior, ``r`` is a proper
    uncertainty score, so thresholding it solves all three reject models.

    Parameters
    ----------
    proba : array-like of shape (n, K)
        Estimated class posteriors, rows summing to 1.
    loss : array-like of shape (K, K), optional
        ``loss[y_true, y_pred]``; default the 0/1 loss.
    prediction : array-like of shape (n,), optional
        Predictions of another classifier ``h`` to score: column indices ``0..K-1``, or
        labels of ``classes`` when it is given.
    classes : array-like of shape (K,), optional
        The label of each column of ``proba`` (a scikit-learn model's ``classes_``). The
        returned prediction is then in these labels, so ``prediction != y_true`` is the 0/1
        loss whatever the labels are (strings, or integers that are not ``0..K-1``).

    Returns
    -------
    ConditionalRisk
        ``(prediction, risk)``.

    Examples
    --------
    >>> from abstain.scores import conditional_risk
    >>> from abstain.scores import absolute_error_loss
    >>> pred, risk = conditional_risk([[0.3, 0.3, 0.4]], absolute_error_loss(3))
    >>> pred.tolist(), [round(r, 6) for r in risk.tolist()]  # the median, not the mode
    ([1], [0.7])
    >>> conditional_risk([[0.2, 0.8], [0.9, 0.1]], classes=["cat", "dog"]).prediction.tolist()
    ['dog', 'cat']
    """
    p = as_proba(proba)
    k = p.shape[1]
    mat = None if loss is None else check_loss_matrix(loss, k)
    if mat is not None and np.array_equal(mat, 1.0 - np.eye(k)):
        mat = None  # the 0/1 loss given as a matrix: the sums of loss=None
    labels = None if classes is None else _as_classes(classes, k)
    if prediction is None:
        expected = _expected_loss(p, mat)
        pred = _plugin_prediction(p, mat, expected)
        # the least expected loss, which the near-tied classes reach up to round-off: the
        # tied class of the lowest index may be one ulp above it in one class order and
        # not in another
        risk = (_zero_one_risk(p, np.argmax(p, axis=1)) if mat is None
                else np.min(expected, axis=1))
    else:
        pred = (_label_index(labels, prediction, p.shape[0]) if labels is not None
                else as_label_indices(prediction, "prediction", p.shape[0], k))
        # a given prediction under the 0/1 loss needs no expected losses of the others
        risk = (_zero_one_risk(p, pred) if mat is None else
                np.take_along_axis(_expected_loss(p, mat), pred[:, None], axis=1)[:, 0])
    out = pred.astype(np.intp) if labels is None else labels[pred]
    return ConditionalRisk(out, np.maximum(risk, 0.0))


def _as_classes(classes: ArrayLike, k: int) -> NDArray[Any]:
    labels = np.asarray(unmasked(classes, "classes"))
    if labels.shape != (k,):
        raise ValueError(f"classes must hold one label per column of proba ({k}); got shape "
                         f"{labels.shape}.")
    try:
        distinct = np.unique(labels).size
    except TypeError:  # numbers beside strings (an object array) have no order
        raise ValueError(f"classes must hold labels of one kind, all numbers or all strings; "
                         f"got {labels.dtype.name} values such as {labels.tolist()}.") from None
    if distinct != k:
        raise ValueError("classes must hold distinct labels; got a repeated label.")
    return labels


def _label_index(labels: NDArray[Any], prediction: ArrayLike, n: int) -> NDArray[np.intp]:
    """Column index of each predicted label in ``labels``."""
    pred = np.asarray(unmasked(prediction, "prediction"))
    if pred.shape != (n,):
        raise ValueError(f"prediction must have shape ({n},); got {pred.shape}.")
    order = np.argsort(labels, kind="stable")
    try:
        pos = np.searchsorted(labels[order], pred)
    except TypeError:  # labels of another kind than the classes': none is a class
        raise ValueError(f"prediction must hold labels of classes; got {pred.tolist()[0]!r}, "
                         f"not comparable with the classes {labels.tolist()}.") from None
    pos = np.minimum(pos, labels.size - 1)
    found = labels[order][pos] == pred
    if not np.all(found):
        bad = pred[~found][0]
        raise ValueError(f"prediction must hold labels of classes; got {bad.item()!r}.")
    return order[pos]


def mcp(proba: ArrayLike) -> NDArray[np.float64]:
    """Maximal class probability score ``1 - max_y p_hat(y | x)`` (Example 1).

    The 0/1-loss case of :func:`conditional_risk`, to the last bit: summed as the other
    classes' probabilities in ascending order, so a confident row keeps its risk
    (``[1e-17, 1.0]``: 1e-17, which ``1 - 1.0`` rounds to 0, tying it with ``[0, 1]``).

    Examples
    --------
    >>> from abstain.scores import mcp
    >>> mcp([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2]]).round(6).tolist()
    [0.3, 0.6]
    """
    p = as_proba(proba)
    return np.maximum(_zero_one_risk(p, np.argmax(p, axis=1)), 0.0)


@validate_params({"kind": [Options(("max", "top2"))]})
def margin(decision: ArrayLike, kind: str = "max") -> NDArray[np.float64]:
    """Margin score of a linear classifier, as an uncertainty (higher = reject first).

    Binary decision values ``f(x)`` (shape (n,)): ``-|f(x)|``, whatever ``kind``.
    Multi-class scores ``f_y(x)`` (shape (n, K)):

    - ``kind="max"`` (default): ``-max_y f_y(x)``, the negated score of the predicted
      class. This is the formula of Franc et al. (2023, section 5.2.1), "s(x) = max_y
      <w_y, x> + b_y", and the special case of the learned score of eq. (37) with the
      classifier's own parameters that the paper names right after it.
    - ``kind="top2"``: ``-(f_(1)(x) - f_(2)(x))``, the negated gap between the two
      highest class scores (the "runner-up" rule of Le Cun et al. 1990 that the paper
      cites in section 2). The same section 5.2.1 says the margin score "is
      proportional to a distance between the input x and the decision boundary"; for
      ``K > 2`` classes that describes the gap (the boundary of the predicted class is
      where it ties with the runner-up), not ``max_y f_y``, so the paper's text does
      not settle which one its experiments used. With ``K = 2`` columns ``(-g, g)``
      the gap is ``2 |g|``, the binary margin.

    The sign is flipped so the core's single direction holds: a larger margin means a
    more confident prediction. Equal margins stay equal (no tie-breaking here).

    Parameters
    ----------
    decision : array-like of shape (n,) or (n, K)
        Decision values, e.g. a scikit-learn ``decision_function`` output.
    kind : {"max", "top2"}, default "max"
        Which multi-class margin; ignored for binary (1-D) decision values.

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> from abstain.scores import margin
    >>> margin([2.0, -0.5, 0.1]).tolist()
    [-2.0, -0.5, -0.1]
    >>> margin([[1.0, 3.0, 2.5], [0.5, 0.2, -1.0]]).tolist()
    [-3.0, -0.5]
    >>> margin([[1.0, 3.0, 2.5], [0.5, 0.2, -1.0]], kind="top2").tolist()
    [-0.5, -0.3]
    """
    d = as_real_array(decision, "decision")
    if d.ndim not in (1, 2) or d.shape[0] == 0 or (d.ndim == 2 and d.shape[1] < 2):
        raise ValueError(
            f"decision must have shape (n,) or (n, K) with K >= 2 and n >= 1; got {d.shape}."
        )
    if not np.all(np.isfinite(d)):
        raise ValueError("decision must be finite; got NaN or infinite entries.")
    if d.ndim == 1:
        return -np.abs(d)
    if kind == "max":
        return -d.max(axis=1)
    top = np.partition(d, d.shape[1] - 2, axis=1)[:, -2:]
    with np.errstate(over="ignore"):
        gap = top[:, 1] - top[:, 0]
    _check_finite_gap(gap, "the gap between the two largest decision values")
    return -gap


def _check_finite_gap(gap: NDArray[np.float64], what: str) -> None:
    """Refuse a difference of finite values that overflows float64 (an infinite score)."""
    if not np.all(np.isfinite(gap)):
        row = int(np.flatnonzero(~np.isfinite(gap))[0])
        raise ValueError(f"{what} of row {row} exceeds the float64 range; divide the "
                         f"decision values by a constant (the scores' order is unchanged).")


def ordinal_margin(decision: ArrayLike, thresholds: ArrayLike) -> NDArray[np.float64]:
    """Margin score of a linear ordinal classifier, as an uncertainty (higher = reject first).

    ``-min_j |f(x) - b_j|``: the negated distance of the decision value ``f(x) = <x, w>``
    to the nearest threshold (Franc et al. 2023, section 5.2.2, where ``min_j |f(x) -
    b_j|`` is the confidence). The sign is flipped as in :func:`margin`, so a point
    close to a class boundary is rejected first. The order of ``thresholds`` does not
    matter.

    Parameters
    ----------
    decision : array-like of shape (n,)
        Decision values ``<x, w>``.
    thresholds : array-like of shape (K - 1,)
        Thresholds ``b``, ``K >= 2``.

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> from abstain.scores import ordinal_margin
    >>> ordinal_margin([0.2, 1.5, 3.0], [0.0, 1.0, 2.0]).tolist()
    [-0.2, -0.5, -1.0]
    """
    d = as_real_array(decision, "decision")
    b = as_real_array(thresholds, "thresholds")
    if d.ndim != 1 or d.shape[0] == 0:
        raise ValueError(f"decision must have shape (n,) with n >= 1; got {d.shape}.")
    if b.ndim != 1 or b.shape[0] == 0:
        raise ValueError(f"thresholds must have shape (K - 1,) with K >= 2; got {b.shape}.")
    for name, arr in (("decision", d), ("thresholds", b)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite; got NaN or infinite entries.")
    b = np.sort(b)
    # The nearest threshold is one of the two neighbours of f in the sorted thresholds.
    pos = np.searchsorted(b, d)
    with np.errstate(over="ignore"):
        below = np.abs(d - b[np.maximum(pos - 1, 0)])
        above = np.abs(d - b[np.minimum(pos, b.size - 1)])
    nearest = np.minimum(below, above)
    _check_finite_gap(nearest, "the distance of the decision value to its nearest threshold")
    return -nearest


def true_class_probability(proba: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    """The probability a classifier gives to the true class, ``p_hat(y_i | x_i)``.

    The regression target of :class:`TCP`.

    Parameters
    ----------
    proba : array-like of shape (n, K)
        Estimated posteriors, columns in class-index order.
    y : array-like of int, shape (n,)
        True class indices in ``0..K-1``.

    Examples
    --------
    >>> from abstain.scores import true_class_probability
    >>> true_class_probability([[0.7, 0.3], [0.4, 0.6]], [0, 0]).tolist()
    [0.7, 0.4]
    """
    p = as_proba(proba, "proba")  # rows of probabilities, as conditional_risk takes them
    labels = as_label_indices(y, "y", p.shape[0], p.shape[1])
    return p[np.arange(p.shape[0]), labels]
