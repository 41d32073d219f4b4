"""Loss matrices ``loss[y_true, y_pred]`` for plug-in rules, per-sample losses, the
SELE proxy objective of a score (:func:`sele_objective`), the last Newton steps of
:class:`~abstain.scores.SELE`'s fit (:func:`newton_polish`) and the check of the learned
scores' class labels (:func:`check_class_labels`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.validation import (
    Interval,
    as_labels,
    as_losses,
    as_real_array,
    as_scores,
    check_label_type,
    check_same_length,
    plain,
    validate_params,
)

__all__ = ["zero_one_loss", "absolute_error_loss", "check_loss_matrix", "sample_losses",
           "sele_objective"]


@validate_params({"n_classes": [Interval(int, 2, None, closed="left")]})
def zero_one_loss(n_classes: int) -> NDArray[np.float64]:
    """The 0/1 loss matrix: ``loss[y, y_hat] = [y != y_hat]``.

    Examples
    --------
    >>> from abstain.scores import zero_one_loss
    >>> zero_one_loss(3).tolist()
    [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    """
    k = int(n_classes)
    return 1.0 - np.eye(k)


@validate_params({"n_classes": [Interval(int, 2, None, closed="left")]})
def absolute_error_loss(n_classes: int) -> NDArray[np.float64]:
    """The absolute-error loss of ordinal regression: ``loss[y, y_hat] = |y - y_hat|``.

    Its expectation is the mean absolute error (MAE).

    Examples
    --------
    >>> from abstain.scores import absolute_error_loss
    >>> absolute_error_loss(3).tolist()
    [[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]
    """
    k = int(n_classes)
    idx = np.arange(k, dtype=np.float64)
    return np.abs(idx[:, None] - idx[None, :])


def check_loss_matrix(loss: ArrayLike, n_classes: int | None = None) -> NDArray[np.float64]:
    """Validate a user loss matrix: square, finite, non-negative, ``loss[y_true, y_pred]``.

    Examples
    --------
    >>> from abstain.scores import check_loss_matrix
    >>> check_loss_matrix([[0, 5], [1, 0]]).tolist()
    [[0.0, 5.0], [1.0, 0.0]]
    """
    arr = as_real_array(loss, "loss")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"loss must be a square matrix of at least 2 x 2; got shape {arr.shape}.")
    if n_classes is not None and arr.shape[0] != n_classes:
        raise ValueError(
            f"loss must be {n_classes} x {n_classes} to match the {n_classes} classes; "
            f"got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("loss must be finite; got NaN or infinite entries.")
    if np.any(arr < 0):
        raise ValueError(f"loss must be non-negative; got minimum {plain(arr.min())}.")
    return arr


def sample_losses(
    y_true: ArrayLike, y_pred: ArrayLike, loss: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Per-sample losses ``loss[y_true[i], y_pred[i]]`` for integer labels ``0..K-1``.

    ``loss=None`` is the 0/1 loss (any labels, compared for equality; a missing label,
    NaN, None or pandas' NA, and strings against numbers are refused: they would count as
    errors).

    Examples
    --------
    >>> from abstain.scores import sample_losses, absolute_error_loss
    >>> sample_losses([0, 1, 2], [0, 2, 0]).tolist()
    [0.0, 1.0, 1.0]
    >>> sample_losses([0, 1, 2], [0, 2, 0], absolute_error_loss(3)).tolist()
    [0.0, 1.0, 2.0]
    """
    yt = np.asarray(unmasked(y_true, "y_true"))
    yp = np.asarray(unmasked(y_pred, "y_pred"))
    if yt.ndim != 1 or yp.shape != yt.shape:
        raise ValueError(
            "y_true and y_pred must be 1-D of the same length; "
            f"got shapes {yt.shape} and {yp.shape}."
        )
    if loss is None:
        if yt.size:
            yt, yp = _labels(yt, "y_true"), _labels(yp, "y_pred")
            check_label_type(yt, yp, "y_true")
        return (yt != yp).astype(np.float64)
    mat = check_loss_matrix(loss)
    k = mat.shape[0]
    for name, y in (("y_true", yt), ("y_pred", yp)):
        if not np.issubdtype(y.dtype, np.integer) or (y.size and (y.min() < 0 or y.max() >= k)):
            raise ValueError(f"{name} must hold integer labels in 0..{k - 1} to index loss.")
    return mat[yt, yp]


def _labels(y: NDArray[Any], name: str) -> NDArray[Any]:
    """``y`` as labels compared for equality, a missing one refused: NaN, NaT, None or
    pandas' NA (it would count as an error)."""
    if y.dtype.kind in "Mm":  # dates and durations compare as they are
        missing = int(np.count_nonzero(np.isnat(y)))
    else:
        y = as_labels(y, name)  # NaN among floats refused there
        missing = 0 if y.dtype.kind != "O" or _none_missing(y) else sum(
            1 for v in y.tolist() if v is None or (isinstance(v, (float, np.floating)) and v != v)
            or type(v).__name__ in ("NAType", "NaTType"))
    if missing:
        raise ValueError(f"{name} must not hold missing labels; got {missing} (None, NaN, NaT "
                         "or NA).")
    return y


def _none_missing(y: NDArray[Any]) -> bool:
    """Whether the object labels ``y`` certainly hold no missing one: no None, and every
    label equal to itself (NaN and NaT are not; pandas' NA cannot say, and is looked for
    one label at a time). A vectorised pass: 0.04 s on a million labels, where the loop
    that counts took 0.65 s."""
    try:
        return not (np.any(np.equal(y, np.array(None, dtype=object))) or np.any(y != y))
    except Exception:  # NA's truth value, labels that are arrays or that compare oddly
        return False


def sele_objective(
    scores: ArrayLike, losses: ArrayLike, *, groups: ArrayLike | None = None
) -> float:
    """The smooth SELE proxy ``psi_sele`` of eq. (30), averaged over chunks.

    ``psi_sele(s, T) = (1/m^2) sum_{i, j in T} loss_i * log(1 + exp(s_j - s_i))``
    over all ordered pairs of a chunk ``T`` of size ``m`` (``i = j`` included), and
    the mean of that over the chunks given by ``groups`` (one chunk by default).
    It is convex in ``s`` and bounds ``log(2) * sele_loss`` from above.

    Examples
    --------
    >>> from abstain.scores import sele_objective
    >>> round(sele_objective([0.0, 0.0], [1.0, 0.0]), 6)  # log(2) / 2
    0.346574
    """
    s = as_scores(scores, "scores")
    ls = as_losses(losses)
    if s.shape != ls.shape:
        raise ValueError(f"scores must have the shape of losses {ls.shape}; got {s.shape}.")
    labels = (np.zeros(len(ls), dtype=np.intp) if groups is None
              else np.asarray(unmasked(groups, "groups")))
    if labels.ndim != 1:
        raise ValueError(f"groups must be a 1-D array of chunk labels, one per score; got "
                         f"shape {labels.shape}.")
    check_same_length(losses=ls, groups=labels)
    # NaN (of any kind: float, complex, object, NaT; unequal to itself) is no chunk
    if np.any(labels != labels) or (labels.dtype.kind in "fc"
                                    and not np.isfinite(labels).all()):
        raise ValueError("groups must hold finite chunk labels; got NaN or infinite values.")
    try:
        uniq = np.unique(labels)
    except TypeError:  # labels of mixed kinds (None, numbers beside text) have no order
        raise ValueError("groups must hold chunk labels of one kind, all numbers or all "
                         f"strings; got values such as {labels.tolist()[:3]}.") from None
    total = 0.0
    for label in uniq:
        idx = np.flatnonzero(labels == label)
        chunk = s[idx]
        with np.errstate(over="ignore"):
            spread = chunk.max() - chunk.min()
        if not np.isfinite(spread):  # a difference of scores beyond float64
            raise ValueError("scores must differ by less than the float64 range (1.8e308) "
                             "within a chunk; divide them by a constant.")
        # only the rows with a loss add terms: their pairs, in blocks of rows of about 2**21
        # pairs (all m^2 pairs of a chunk of 40,000 rows took 38 GB)
        lossy = idx[ls[idx] != 0]
        step = max(1, (1 << 21) // max(idx.size, 1))
        part = 0.0
        for b0 in range(0, lossy.size, step):
            rows = lossy[b0 : b0 + step]
            z = chunk[None, :] - s[rows][:, None]
            part += float(ls[rows] @ np.logaddexp(0.0, z).sum(axis=1))
        total += part / len(idx) ** 2
    return total / len(uniq)


class ScaledProblem:
    """``problem`` (its ``value_grad``, ``hessp`` and ``size``) in the coordinates
    ``theta * scale``: gradients ``g / scale``, curvatures ``H / scale**2``. With ``scale``
    the powers of two near each coefficient's largest feature, a rule on the gradient norm
    does not depend on the units of a feature (features of 1e-13 beside an intercept of 1
    had a first gradient within the intercept's round-off: a fit of zeros, "converged")."""

    def __init__(self, problem: Any, scale: NDArray[np.float64]) -> None:
        self.problem, self.scale, self.size = problem, scale, problem.size

    def value_grad(self, flat: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        value, grad = self.problem.value_grad(flat / self.scale)
        return value, grad / self.scale

    def hessp(self, flat: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.problem.hessp(flat / self.scale, p / self.scale) / self.scale  # type: ignore[no-any-return]


def newton_polish(
    problem: Any, theta: NDArray[np.float64], gtol: float, max_steps: int
) -> tuple[NDArray[np.float64], float, int]:
    """Full Newton steps while they shrink the gradient norm of ``problem`` (its
    ``value_grad`` and ``hessp``, as :class:`~abstain.scores.SELE`'s objective has them).

    Near the optimum the trust region can no longer measure a decrease of ``F`` in
    float64 and stops early; the gradient norm still can, so it judges these steps.
    """
    import scipy.sparse.linalg  # on first use: commands start faster

    _, grad = problem.value_grad(theta)
    norm = float(np.linalg.norm(grad))
    size = theta.size
    steps = 0
    while norm > gtol and steps < max_steps:
        hess = scipy.sparse.linalg.LinearOperator(
            (size, size), matvec=lambda v, t=theta: problem.hessp(t, v), dtype=np.float64
        )
        step, _ = scipy.sparse.linalg.cg(hess, -grad, rtol=1e-3, atol=0.0, maxiter=10 * size)
        trial = theta + step
        _, trial_grad = problem.value_grad(trial)
        trial_norm = float(np.linalg.norm(trial_grad))
        if not trial_norm < norm:
            break
        theta, grad, norm = trial, trial_grad, trial_norm
        steps += 1
    return theta, norm, steps


def check_classes_param(classes: Any) -> None:
    """Refuse a ``classes`` parameter that is no non-empty 1-D array of labels of one kind
    (object labels, a fitted model's string ``classes_``, are taken when they sort)."""
    labels = np.asarray(classes)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"classes must be a non-empty 1-D array of labels or None; got "
                         f"{plain(classes)}.")
    check_one_kind(labels, "classes")


def check_one_kind(labels: NDArray[Any], name: str) -> None:
    """Refuse object labels of mixed kinds (None, numbers beside text): they do not sort."""
    if labels.dtype.kind == "O":
        try:
            np.unique(labels)
        except TypeError:
            raise ValueError(f"{name} must hold class labels of one kind, all numbers or all "
                             f"strings; got values such as {labels.tolist()[:3]}.") from None


def check_class_labels(classes: NDArray[Any], name: str) -> None:
    """Refuse labels that a fitted score's JSON cannot keep: bytes, dates, complex or long
    double numbers, NaN."""
    kind = classes.dtype.kind
    plain_items = kind != "O" or all(
        isinstance(v, (str, int, float, np.integer)) or (
            isinstance(v, np.floating) and v.dtype.itemsize <= 8) for v in classes.tolist())
    finite = (bool(np.all(np.isfinite(classes))) if kind == "f" else kind != "O" or not any(
        isinstance(v, (float, np.floating)) and not np.isfinite(v) for v in classes.tolist()))
    wide = kind == "f" and classes.dtype.itemsize > 8  # long double: no JSON number
    if kind in "SVMmc" or wide or not plain_items or not finite:
        raise ValueError(f"{name} must hold class labels that a saved score keeps: strings, "
                         f"integers or finite numbers; got {classes.dtype} values such as "
                         f"{classes[:3].tolist()!r}.")
