"""Input checks shared by every public function.

One message format everywhere: ``"<argument> must <condition>; got <what>."``
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "as_features",
    "as_scores",
    "as_losses",
    "as_losses_and_scores",
    "check_same_length",
    "check_fraction",
    "check_probability",
    "as_is_ood",
    "check_positive",
    "check_choice",
]


def _describe(x: NDArray[Any]) -> str:
    return f"an array of shape {x.shape}"


def _as_1d_float(
    name: str, values: ArrayLike, allow_empty: bool = False
) -> NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        what = type(values).__name__
        raise ValueError(f"{name} must be an array of real numbers; got {what}.") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got {_describe(arr)}.")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty; got an array of length 0.")
    # min and max propagate NaN and expose +-inf: two allocation-free passes.
    if arr.size and not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} must be finite; got {bad} NaN or infinite value(s).")
    return arr


def as_features(X: ArrayLike, name: str = "X") -> NDArray[np.float64]:
    """Return ``X`` as a finite, non-empty 2-D float64 array."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be an array of real numbers; got {type(X).__name__}."
        ) from exc
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must be a non-empty 2-D array (n_samples, n_features); got {_describe(arr)}."
        )
    if not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} must be finite; got {bad} NaN or infinite value(s).")
    return arr


def unit_rows(F: NDArray[np.float64], who: str) -> NDArray[np.float64]:
    """``F`` with every row (last axis) scaled to unit L2 norm; a zero row is an error."""
    norm = np.linalg.norm(F, axis=-1, keepdims=True)
    if np.any(norm == 0):
        raise ValueError(f"{who} cannot scale a feature vector of norm 0; "
                         f"got {int(np.count_nonzero(norm == 0))} such row(s).")
    return F / norm


def as_scores(
    values: ArrayLike, name: str = "uncertainty", *, allow_empty: bool = False
) -> NDArray[np.float64]:
    """Return ``values`` as a finite 1-D float64 array (non-empty unless ``allow_empty``)."""
    return _as_1d_float(name, values, allow_empty)


def as_losses(values: ArrayLike, name: str = "losses") -> NDArray[np.float64]:
    """Return ``values`` as a finite, non-negative, non-empty 1-D float64 array."""
    arr = _as_1d_float(name, values)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative; got minimum {arr.min()!r}.")
    return arr


def as_losses_and_scores(
    losses: ArrayLike, uncertainty: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate a ``(losses, uncertainty)`` pair of equal length."""
    ls = as_losses(losses)
    u = as_scores(uncertainty)
    check_same_length(losses=ls, uncertainty=u)
    return ls, u


def check_same_length(**arrays: NDArray[Any]) -> None:
    """Raise if the named arrays differ in length."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"{' and '.join(lengths)} must have the same length; got {desc}.")


def _as_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number; got {value!r}.")
    return float(value)


def check_fraction(name: str, value: Any) -> float:
    """Return ``value`` as a float in (0, 1]."""
    v = _as_real(name, value)
    if not (0.0 < v <= 1.0):
        raise ValueError(f"{name} must be in (0, 1]; got {value!r}.")
    return v


def check_probability(name: str, value: Any) -> float:
    """Return ``value`` as a float in [0, 1]."""
    v = _as_real(name, value)
    if not (0.0 <= v <= 1.0):
        raise ValueError(f"{name} must be in [0, 1]; got {value!r}.")
    return v


def as_is_ood(values: ArrayLike, name: str = "is_ood") -> NDArray[np.bool_]:
    """Return ``values`` as a 1-D boolean array holding both classes (0/1 or bool)."""
    arr = _as_1d_float(name, values)
    if not np.all((arr == 0.0) | (arr == 1.0)):
        raise ValueError(f"{name} must hold only 0/1 or False/True; got other values.")
    out = arr == 1.0
    n_ood = int(np.count_nonzero(out))
    if n_ood == 0 or n_ood == out.size:
        what = "OOD" if n_ood else "ID"
        raise ValueError(
            f"{name} must contain both ID (False) and OOD (True) samples; got only {what}."
        )
    return out


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite float > 0 (or >= 0 with ``allow_zero``)."""
    v = _as_real(name, value)
    ok = math.isfinite(v) and (v >= 0.0 if allow_zero else v > 0.0)
    if not ok:
        interval = "[0, inf)" if allow_zero else "(0, inf)"
        raise ValueError(f"{name} must be a finite number in {interval}; got {value!r}.")
    return v


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}.")
    return str(value)
