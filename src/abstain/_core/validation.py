"""Input checks shared by every public function.

One message format everywhere: ``"<argument> must <condition>; got <what>."``
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arrays import as_array, check_exact_in_float64, exact_frame, unmasked

F64 = NDArray[np.float64]

__all__ = [
    "as_class_labels", "empty_batch", "as_label_indices", "as_features",
    "as_is_ood", "as_labels", "as_losses", "as_losses_and_scores", "as_matrix", "as_proba",
    "as_real_array", "as_pvalues", "as_scores", "Boolean", "Constraint", "Constraints",
    "InstanceOf", "Interval", "IsArray", "IsCallable", "Options", "RandomState", "check_bool",
    "check_params", "check_choice", "check_float_dtype", "check_columns", "check_fraction",
    "check_int", "check_label_type", "check_open_unit", "check_positive", "check_probability",
    "check_random_state", "check_same_length", "nonfinite", "plain", "validate_params",
]


def _python(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _python(value.tolist()) if value.size <= 8 else value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        items = [_python(v) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def plain(value: Any) -> str:
    """``repr`` of ``value`` with NumPy scalars as Python numbers, for error messages.

    ``np.float64(0.5)`` reads ``0.5``, ``np.int64(3)`` reads ``3``, also inside tuples and
    lists and small arrays (shown as lists); a large array reads as its shape and dtype.

    Examples
    --------
    >>> import numpy as np
    >>> plain(np.float64(0.5)), plain((np.int64(2), np.int64(3))), plain(np.array([1.5]))
    ('0.5', '(2, 3)', '[1.5]')
    """
    value = _python(value)
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return repr(value)


#: Where each table goes instead of an array argument.
TABLE_USE = {
    "ScoreTable": "as the first argument of a metric (aurc(table), auroc(table)) or of "
                  "a rule's fit (BoundedAbstention().fit(table))",
    "PairTable": "as the first argument of a metric of two scores (auroc(table), "
                 "oscr(table)) or of an OOD rule's fit (BoundedTPRFPR().fit(table))",
    "BinnedTable": "to its own methods (table.aurc(), table.auroc()) or as the first "
                   "argument of a rule's fit (BoundedAbstention().fit(table))",
}


def _describe(x: NDArray[Any]) -> str:
    return f"an array of shape {x.shape}"


def as_real_array(values: ArrayLike, name: str, dtype: Any = np.float64) -> NDArray[Any]:
    """``values`` as a float64 (or ``dtype``) array of any shape, or the one message for
    what is not.

    Integers, unsigned integers, floats and bools convert; complex, datetime, timedelta,
    string, bytes and object (e.g. mixed or ragged) input is refused with its dtype.
    """
    values = unmasked(values, name)
    try:
        arr = as_array(values, name)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise ValueError(
            f"{name} must be an array of real numbers; got {type(values).__name__} "
            "that is not a rectangular array."
        ) from exc
    if arr.dtype.kind not in "biuf":
        _refuse_table(values, name)
        raise ValueError(
            f"{name} must be an array of real numbers (int, float or bool dtype); "
            f"got dtype {arr.dtype}."
        )
    if np.dtype(dtype) == np.float64 and (arr.dtype.itemsize > 8 if arr.dtype.kind == "f"
                                          else arr.dtype.itemsize == 8):
        check_exact_in_float64(arr, name)
    exact_frame(values, arr, name)  # integer columns beside float ones
    with np.errstate(over="ignore"):  # an overflow becomes inf, refused by the finite check
        return arr.astype(dtype, copy=False)


def _refuse_table(values: Any, name: str) -> None:
    """Raise the message for a table (or None) given where an array is expected."""
    if isinstance(values, np.ndarray) and values.shape == () and values.dtype == object:
        values = values.item()  # np.asarray(table) on the way here
    kind = type(values).__name__
    if kind in TABLE_USE and type(values).__module__.startswith("abstain."):
        raise ValueError(f"{name} must be an array of real numbers; got a {kind}: pass the "
                         f"arrays, or pass the table alone {TABLE_USE[kind]}.")
    if values is None:
        raise ValueError(f"{name} must be an array of real numbers; got None.")


def _as_1d_float_and_min(name: str, values: ArrayLike,
                         allow_empty: bool = False) -> tuple[F64, float]:
    """The finite 1-D float64 array of ``values`` and its smallest value (NaN if empty)."""
    arr = as_real_array(values, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got {_describe(arr)}.")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty; got an array of length 0.")
    if not arr.size:
        return arr, math.nan
    # min and max propagate NaN and expose +-inf: two allocation-free passes.
    lo = arr.min()
    if not (np.isfinite(lo) and np.isfinite(arr.max())):
        raise ValueError(f"{name} must be finite; got {nonfinite(arr)}.")
    return arr, float(lo)


def nonfinite(arr: NDArray[np.float64]) -> str:
    """``"k NaN"``, ``"k infinite value(s)"`` or both, for the message of a finiteness check."""
    n_nan = int(np.count_nonzero(np.isnan(arr)))
    n_inf = int(np.count_nonzero(np.isinf(arr)))
    parts = ([f"{n_nan} NaN"] if n_nan else []) + ([f"{n_inf} infinite value(s)"] if n_inf else [])
    return " and ".join(parts)


def as_matrix(
    values: ArrayLike, name: str = "X", *, columns: str = "n_features", finite: bool = True,
    min_rows: int = 1, dtype: Any = np.float64,
) -> NDArray[Any]:
    """Return ``values`` as a non-empty 2-D float64 (or ``dtype``) array
    ``(n_samples, <columns>)``.

    NaN is always refused; infinite values too unless ``finite=False``; fewer than
    ``min_rows`` rows too. Finite values that overflow ``dtype`` (float32 beyond 3.4e38)
    are refused as beyond its range.
    """
    arr = as_real_array(values, name, dtype)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        hint = " (one sample: pass values.reshape(1, -1))" if arr.ndim == 1 and arr.size else ""
        raise ValueError(f"{name} must be a non-empty 2-D array (n_samples, {columns}){hint}; "
                         f"got {_describe(arr)}.")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} rows; got {arr.shape[0]}.")
    if finite:
        if not np.isfinite(arr).all():
            wide = as_real_array(values, name) if np.dtype(dtype) != np.float64 else arr
            if np.isfinite(wide).all():  # finite values the narrower dtype cannot hold
                raise ValueError(f"{name} holds values beyond the {np.dtype(dtype).name} range "
                                 f"(up to {float(np.max(np.abs(wide))):.4g}); scale them, or "
                                 f"use dtype='float64'.")
            raise ValueError(f"{name} must be finite; got {nonfinite(arr)}.")
    elif np.isnan(arr).any():
        n_nan = int(np.isnan(arr).sum())
        raise ValueError(f"{name} must not contain NaN; got {n_nan} NaN value(s).")
    return arr


def as_features(X: ArrayLike, name: str = "X", dtype: Any = np.float64) -> NDArray[Any]:
    """``X`` as a finite, non-empty 2-D float64 (or ``dtype``) array (n_samples, n_features)."""
    return as_matrix(X, name, dtype=dtype)


#: The floating-point types a detector may compute in (its ``dtype=`` parameter).
FLOAT_DTYPES = ("float32", "float64")


def check_float_dtype(name: str, value: Any) -> np.dtype[Any]:
    """Return ``value``, one of ``"float32"`` or ``"float64"``, as a NumPy dtype."""
    return np.dtype(check_choice(name, value, FLOAT_DTYPES))


def as_pvalues(values: ArrayLike, name: str = "P") -> NDArray[np.float64]:
    """Return ``values`` as a non-empty (n_samples, n_scores) array of p-values in (0, 1]."""
    arr = as_matrix(values, name, columns="n_scores", finite=False)
    bad = ~((arr > 0.0) & (arr <= 1.0))
    if bad.any():
        first = arr[bad][0]
        raise ValueError(f"{name} must hold p-values in (0, 1]; got {int(bad.sum())} outside, "
                         f"e.g. {plain(first)}.")
    return arr


def as_proba(proba: ArrayLike, name: str = "proba") -> NDArray[np.float64]:
    """Return ``proba`` as an (n_samples, n_classes >= 2) matrix of probability rows."""
    p = as_real_array(proba, name)
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] < 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_classes >= 2); "
                         f"got shape {p.shape}.")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite; got NaN or infinite entries.")
    if np.any(p < 0) or not np.allclose(p.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError(f"{name} must be non-negative with rows summing to 1.")
    return p


def check_columns(name: str, arr: NDArray[Any], m: int) -> None:
    """Raise unless ``arr`` has ``m`` columns, as at fit."""
    if arr.shape[1] != m:
        raise ValueError(f"{name} must have {m} column(s), as in fit; got {arr.shape[1]}.")


def as_class_labels(labels: ArrayLike, name: str) -> NDArray[np.int64]:
    """Return ``labels`` as a non-empty 1-D array of non-negative integer class indices."""
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array; got shape {y.shape}.")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.issubdtype(y.dtype, np.floating) or not np.all(np.isfinite(y)) \
                or np.any(y != np.round(y)):
            raise ValueError(f"{name} must hold integer class indices; got "
                             f"{_not_integer(y, name)}.")
    y = y.astype(np.int64)
    if y.min() < 0:
        raise ValueError(f"{name} must be non-negative class indices; got min {plain(y.min())}.")
    return y


def _not_integer(y: NDArray[Any], name: str) -> str:
    """What is wrong with labels of a non-integer dtype, for a message."""
    if y.dtype.kind == "f":
        bad = ~np.isfinite(y)
        if bad.any():
            return f"float values, {nonfinite(y)}"
        frac = y[y != np.round(y)]
        if frac.size:
            return f"float values such as {plain(frac[0])}"
        return f"dtype {y.dtype} (whole numbers: pass {name}.astype(int))"
    if y.dtype.kind == "b":
        return "dtype bool"
    return f"dtype {y.dtype}"


def as_label_indices(labels: ArrayLike, name: str, n: int, k: int) -> NDArray[np.intp]:
    """Return ``labels`` as ``n`` integer class indices in ``0..k-1`` (one per row), or the
    message that says which of the shape, the dtype or the range is wrong."""
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"{name} must be integer labels of shape ({n},), one per row; got "
                         f"shape {y.shape}.")
    if y.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integer labels; got {_not_integer(y, name)}.")
    if n and (y.min() < 0 or y.max() >= k):
        raise ValueError(f"{name} must hold class indices in 0..{k - 1}; got values from "
                         f"{plain(y.min())} to {plain(y.max())}.")
    return y.astype(np.intp, copy=False)


def as_labels(values: Any, name: str = "y") -> NDArray[Any]:
    """Return ``values`` as a non-empty 1-D array of class labels, as given.

    Integers, floats without NaN or infinity, bools, strings and objects (such as mixed
    labels) are kept with their dtype; a column vector, complex, datetime and timedelta
    values are refused.
    """
    values = unmasked(values, name)
    try:
        arr = as_array(values, name)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise ValueError(f"{name} must be a 1-D array of class labels; got "
                         f"{type(values).__name__} that is not a rectangular array.") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of class labels; got {_describe(arr)}.")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty; got an array of length 0.")
    if arr.dtype.kind not in "biufUSO":
        raise ValueError(f"{name} must hold class labels (numbers or strings); got dtype "
                         f"{arr.dtype}.")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite labels; got {nonfinite(arr)}.")
    return arr


def check_label_type(labels: NDArray[Any], prediction: NDArray[Any], name: str = "y") -> None:
    """Raise when ``labels`` are strings and ``prediction`` numbers, or any other two kinds
    of labels (numbers, strings, bytes, dates) that never compare equal.

    Such labels never equal a prediction, so every comparison would count as an error.
    Object arrays of one kind (all strings, as pandas keeps text, all bytes, or all numbers)
    are of it.
    """
    def kind(a: NDArray[Any]) -> str | None:
        v = a.tolist() if a.dtype.kind == "O" else None
        k = a.dtype.kind if v is None else "U" if all(isinstance(x, str) for x in v) else (
            "S" if all(isinstance(x, bytes) for x in v) else "f" if all(
                isinstance(x, (int, float, np.number)) and not isinstance(x, (bool, np.bool_))
                for x in v) else "O")
        # durations compare with integers (as counts of their unit); dates with neither
        return ("strings" if k == "U" else "bytes" if k == "S" else "numbers" if k in "biuf"
                else "dates" if k == "M" else None)

    got, want = kind(labels), kind(prediction)
    if got is not None and want is not None and got != want:
        raise ValueError(f"{name} must hold labels of the type that the model predicts "
                         f"({want}, dtype {prediction.dtype}); got {got}, dtype {labels.dtype}.")


def as_scores(
    values: ArrayLike, name: str = "uncertainty", *, allow_empty: bool = False
) -> NDArray[np.float64]:
    """Return ``values`` as a finite 1-D float64 array (non-empty unless ``allow_empty``)."""
    return _as_1d_float_and_min(name, values, allow_empty)[0]


def check_nan_only_on_ood(losses: NDArray[np.float64],
                          ood: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Raise unless every NaN of ``losses`` is on an OOD row; return the NaN mask.

    The file format writes NaN for the loss of an OOD row, where the loss is ignored.
    """
    nan = np.isnan(losses)
    if np.any(nan & ~ood):
        raise ValueError("losses must not be NaN on ID rows (NaN is accepted on OOD rows "
                         f"only); got {int(np.count_nonzero(nan & ~ood))} NaN on ID rows.")
    return nan


def as_losses(values: ArrayLike, name: str = "losses") -> NDArray[np.float64]:
    """Return ``values`` as a finite, non-negative, non-empty 1-D float64 array."""
    arr, lo = _as_1d_float_and_min(name, values)
    if lo < 0:
        raise ValueError(f"{name} must be non-negative; got minimum {plain(lo)}.")
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
    if not _is_real(value):
        raise ValueError(f"{name} must be a real number; got {plain(value)}.")
    try:
        return float(value)
    except OverflowError:  # an int beyond the float range
        raise ValueError(f"{name} must be a finite real number; got an integer of "
                         f"{int(math.floor(value)).bit_length()} bits.") from None


def check_fraction(name: str, value: Any) -> float:
    """Return ``value`` as a float in (0, 1]."""
    v = _as_real(name, value)
    if not (0.0 < v <= 1.0):
        raise ValueError(f"{name} must be in (0, 1]; got {plain(value)}.")
    return v


def check_probability(name: str, value: Any) -> float:
    """Return ``value`` as a float in [0, 1]."""
    v = _as_real(name, value)
    if not (0.0 <= v <= 1.0):
        raise ValueError(f"{name} must be in [0, 1]; got {plain(value)}.")
    return v


def check_open_unit(name: str, value: Any) -> float:
    """Return ``value`` as a float in (0, 1)."""
    v = _as_real(name, value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1); got {plain(value)}.")
    return v


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is True or False (a NumPy bool too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {plain(value)}.")
    return bool(value)


def as_is_ood(values: ArrayLike, name: str = "is_ood") -> NDArray[np.bool_]:
    """Return ``values`` as a 1-D boolean array holding both classes (0/1 or bool)."""
    values = unmasked(values, name)
    try:
        values = as_array(values, name)
        kind = values.dtype.kind
    except (TypeError, ValueError):  # ragged: as_real_array below says so
        kind = "f"
    if kind not in "biuf":
        _refuse_table(values, name)
        raw = np.asarray(values)
        raise ValueError(f"{name} must hold 0/1 or False/True (int, float or bool dtype); "
                         f"got dtype {raw.dtype}.")
    marks = np.asarray(values) if kind == "b" else None
    if marks is not None and marks.ndim == 1 and marks.size:
        out = marks.copy()  # bool marks: nothing to convert or check but both classes
    else:
        arr = _as_1d_float_and_min(name, values)[0]
        if not np.all((arr == 0.0) | (arr == 1.0)):
            raise ValueError(f"{name} must hold only 0/1 or False/True; got other values.")
        out = arr == 1.0
    n_ood = int(np.count_nonzero(out))
    if n_ood == 0 or n_ood == out.size:
        raise ValueError(f"{name} must contain both ID (False) and OOD (True) samples; got "
                         f"only {'OOD' if n_ood else 'ID'}.")
    return out


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite float > 0 (or >= 0 with ``allow_zero``)."""
    v = _as_real(name, value)
    if not (math.isfinite(v) and (v >= 0.0 if allow_zero else v > 0.0)):
        interval = "[0, inf)" if allow_zero else "(0, inf)"
        raise ValueError(f"{name} must be a finite number in {interval}; got {plain(value)}.")
    return v


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; "
                         f"got {plain(value)}.")
    return str(value)


def check_int(name: str, value: Any, low: int) -> int:
    """Return ``value`` as an int >= ``low`` (a bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {plain(value)}.")
    return int(value)


def check_random_state(name: str, value: Any) -> None:
    """Raise unless ``value`` seeds ``numpy.random.default_rng``: None, an int >= 0, a
    ``Generator``, a ``BitGenerator`` or a ``SeedSequence``."""
    if value is None or isinstance(
            value, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be None, an integer >= 0 or a numpy Generator, "
                         f"BitGenerator or SeedSequence; got {plain(value)}.")


# --- Parameter constraints as data -------------------------------------------------------
# A class states ``_parameter_constraints = {"name": [constraint, ...]}`` and a public
# function ``@validate_params({...})``; a value is accepted when one of its constraints
# accepts it. ``None`` in a list accepts None (and is not named in the message).


class Constraint:
    """One set of accepted values of a parameter; ``condition`` completes "<name> must".

    A constraint built with ``condition=`` says that text for every refused value.
    """

    condition = ""
    said = False  # True when ``condition`` was given: it then replaces every refusal

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is in this set."""
        raise NotImplementedError

    def refusal(self, name: str, value: Any) -> str:
        """The message for ``value``, refused, when this is the parameter's one constraint."""
        return f"{name} must {self.condition}; got {plain(value)}."

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.condition!r})"


def _is_real(value: Any) -> bool:
    """A real number (a ``Fraction`` or a 0-d array of one too), not a bool."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return True
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)


class Interval(Constraint):
    """Numbers of ``kind`` (``float``: real, ``int``: integer; a bool is neither) from
    ``left`` to ``right`` (``None``: unbounded), the ends included as ``closed`` says:
    ``"both"``, ``"left"``, ``"right"`` or ``"neither"``. NaN is outside every interval
    and an unbounded real interval holds only finite numbers.

    Examples
    --------
    >>> Interval(float, 0, 1, closed="right").condition
    'be in (0, 1]'
    >>> Interval(float, 0, None, closed="neither").accepts(float("inf"))
    False
    >>> Interval(int, 1, None, closed="left").condition
    'be an integer >= 1'
    """

    def __init__(self, kind: type, left: float | None, right: float | None, *,
                 closed: str, condition: str | None = None) -> None:
        if kind not in (int, float) or closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"Interval takes int or float and closed 'both', 'left', "
                             f"'right' or 'neither'; got {kind!r} and {closed!r}.")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed
        lo = "[" if closed in ("both", "left") and left is not None else "("
        hi = "]" if closed in ("both", "right") and right is not None else ")"
        ends = (f"{lo}{'-inf' if left is None else _end(left)}, "
                f"{'inf' if right is None else _end(right)}{hi}")
        if kind is int:
            self.condition = (f"be an integer {'>=' if lo == '[' else '>'} {left}"
                              if right is None and left is not None
                              else f"be an integer in {ends}")
        elif left is None or right is None:
            self.condition = f"be a finite number in {ends}"
        else:
            self.condition = f"be in {ends}"
        if condition is not None:
            self.condition, self.said = condition, True

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is a number of this kind inside the interval."""
        if type(value) is float and self.kind is float:  # the common case, fast
            return math.isfinite(value) and self._inside(value)
        if self.kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                return False
        elif not _is_real(value):
            return False
        else:
            try:
                value = float(value)
            except OverflowError:  # an int beyond the float range
                return False
            if not math.isfinite(value):
                return False
        return self._inside(value)

    def _inside(self, value: Any) -> bool:
        left_ok = self.left is None or (
            value >= self.left if self.closed in ("both", "left") else value > self.left)
        right_ok = self.right is None or (
            value <= self.right if self.closed in ("both", "right") else value < self.right)
        return bool(left_ok and right_ok)

    def refusal(self, name: str, value: Any) -> str:
        """Says that ``value`` is not a (finite) real number, when it is not one."""
        if self.kind is float and not self.said:
            try:
                _as_real(name, value)
            except ValueError as exc:
                return str(exc)
        return super().refusal(name, value)


def _end(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() else repr(float(x))


class Options(Constraint):
    """The strings ``options``.

    Examples
    --------
    >>> Options(("mean", "max")).refusal("method", "min")
    "method must be one of 'mean', 'max'; got 'min'."
    """

    def __init__(self, options: tuple[str, ...]) -> None:
        self.options = tuple(options)
        self.condition = f"be one of {', '.join(map(repr, self.options))}"

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is one of the options."""
        try:
            return bool(value in self.options)
        except (TypeError, ValueError):  # an array compares elementwise
            return False


class Boolean(Constraint):
    """True or False (a NumPy bool too)."""

    condition = "be True or False"

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is a bool."""
        return isinstance(value, (bool, np.bool_))


class RandomState(Constraint):
    """What seeds ``numpy.random.default_rng``: None, an int >= 0, a ``Generator``, a
    ``BitGenerator`` or a ``SeedSequence``."""

    condition = "be None, an integer >= 0 or a numpy Generator, BitGenerator or SeedSequence"

    def __init__(self, *, legacy: bool = False) -> None:
        # legacy: a ``numpy.random.RandomState`` too, which scikit-learn's estimators take
        self.legacy = legacy
        if legacy:
            self.condition = ("be None, an integer >= 0 or a numpy Generator, BitGenerator, "
                              "SeedSequence or RandomState")

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` seeds a generator."""
        kinds = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)
        if value is None or isinstance(value, kinds + ((np.random.RandomState,) * self.legacy)):
            return True
        return Interval(int, 0, None, closed="left").accepts(value)


class IsCallable(Constraint):
    """A callable."""

    condition = "be a callable"

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is callable."""
        return callable(value)


class InstanceOf(Constraint):
    """An instance of ``types``, described to the user as ``what``."""

    def __init__(self, types: type | tuple[type, ...], what: str) -> None:
        self.types = types
        self.condition = f"be {what}"

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is an instance of the types."""
        return isinstance(value, self.types)

    def refusal(self, name: str, value: Any) -> str:
        """Names the type of ``value``, refused."""
        return f"{name} must {self.condition}; got {type(value).__name__}."


class IsArray(Constraint):
    """An array, or a sequence that ``numpy.asarray`` may read as one (a list, a tuple, a
    range; not a string); the argument's own check then says what is wrong with its
    values."""

    condition = "be an array-like"

    def __init__(self, condition: str | None = None) -> None:
        if condition is not None:
            self.condition = condition

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is an array or a sequence other than a string."""
        return not isinstance(value, (str, bytes)) and (hasattr(value, "__array__")
                                                        or hasattr(value, "__len__"))


Constraints = dict[str, list[Any]]


def check_params(values: dict[str, Any], constraints: Constraints) -> None:
    """Raise one ``ValueError`` for the first value not accepted by its constraints.

    ``values`` maps each name of ``constraints`` to its value. The message is the one of
    the constraint when there is one besides ``None``, else it lists the conditions.

    Examples
    --------
    >>> check_params({"alpha": 0.1}, {"alpha": [Interval(float, 0, 1, closed="neither")]})
    >>> check_params({"alpha": 1.5}, {"alpha": [Interval(float, 0, 1, closed="neither")]})
    Traceback (most recent call last):
    ...
    ValueError: alpha must be in (0, 1); got 1.5.
    """
    for name, allowed in constraints.items():
        value = values[name]
        if _accepted(value, allowed):
            continue
        shown = [c for c in allowed if c is not None]
        if len(shown) == 1:
            raise ValueError(shown[0].refusal(name, value))
        conditions = [c.condition for c in shown]
        raise ValueError(f"{name} must {', '.join(conditions[:-1])} or {conditions[-1]}; "
                         f"got {plain(value)}.")


def _accepted(value: Any, allowed: list[Any]) -> bool:
    for constraint in allowed:
        if constraint is None:
            if value is None:
                return True
        elif constraint.accepts(value):
            return True
    return False


def validate_params(constraints: Constraints) -> Any:
    """Decorator: check the named arguments of a function against ``constraints`` before
    its body runs. The signature and docstring stay the function's own; the check costs a
    dictionary look-up per argument. The constraints are the wrapper's
    ``_parameter_constraints``.

    Examples
    --------
    >>> @validate_params({"coverage": [Interval(float, 0, 1, closed="right")]})
    ... def half(x, *, coverage=1.0):
    ...     return coverage / 2
    >>> half([1], coverage=0.5)
    0.25
    >>> half([1], coverage=0)
    Traceback (most recent call last):
    ...
    ValueError: coverage must be in (0, 1]; got 0.
    """
    def decorate(func: Any) -> Any:
        params = list(inspect.signature(func).parameters.values())
        missing = set(constraints) - {p.name for p in params}
        if missing:
            raise ValueError(f"constraints must name parameters of {func.__name__}; got "
                             f"{', '.join(sorted(missing))}.")
        where = {p.name: (i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          else None, p.default) for i, p in enumerate(params)}
        checks = [(name, *where[name], allowed) for name, allowed in constraints.items()]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for name, index, default, allowed in checks:
                if name in kwargs:
                    value = kwargs[name]
                elif index is not None and index < len(args):
                    value = args[index]
                elif default is not inspect.Parameter.empty:
                    value = default
                else:  # missing: the call itself raises the TypeError
                    break
                if not _accepted(value, allowed):
                    check_params({name: value}, {name: allowed})  # raises its message
            return func(*args, **kwargs)

        wrapper._parameter_constraints = constraints  # type: ignore[attr-defined]
        return wrapper

    return decorate


def empty_batch(*arrays: Any) -> bool:
    """Whether every array given (None: not given) is empty: a batch of a stream with no
    rows, which an update takes as adding nothing."""
    return all(np.size(a) == 0 for a in arrays if a is not None)

