"""The one JSON codec and the registry of every fitted kind.

Every fitted object is written as one document shape (keys sorted)::

    {"format": "abstain/1", "kind": "<ClassName>", "params": {...}, "fitted": {...}}

``params`` holds the constructor's keyword arguments: JSON scalars, flat lists of them,
or nested documents (an estimator given as a parameter, written with ``"fitted": null``).
``fitted`` holds the fitted attributes, each described by a field of the class's schema
(``_FIELDS``, merged along the class hierarchy): a nested fitted estimator is a nested
document of the same shape, an array is ``{"shape": [...], "float64_le_base64": "..."}``
(little-endian float64 bytes), and a non-finite float scalar is one of the strings
``"nan"``, ``"inf"``, ``"-inf"``, allowed only where its field says so.

:func:`load_json` validates the whole document and raises one ``ValueError`` that names
the offending field; documents of the legacy per-family formats (``abstain.rule/1``, ...)
are read into the same validation.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "FORMAT",
    "LEGACY_FORMATS",
    "Array",
    "Field",
    "Flag",
    "Int",
    "Labels",
    "Nested",
    "Number",
    "Record",
    "Seq",
    "Text",
    "Tup",
    "dumps",
    "load_family",
    "load_json",
    "registered_kinds",
    "serializable",
]

#: The format tag of every document written by ``to_json``.
FORMAT = "abstain/1"

#: Tags of the per-family formats of earlier releases, read by :func:`load_json`.
LEGACY_FORMATS: dict[str, str] = {
    "abstain.rule/1": "rule",
    "abstain.ood/1": "ood",
    "abstain.score/1": "score",
    "abstain.detector/1": "detector",
    "abstain.double-score/1": "double-score",
    "abstain.base-scores/1": "base-scores",
    "abstain.combine/1": "combine",
    "abstain.svor/1": "svor",
}

#: The modules that register kinds; imported by :func:`load_json` before it looks one up.
_MODULES = (
    "abstain.models.selective",
    "abstain.models.ood",
    "abstain.models.double_score",
    "abstain.scores.learned",
    "abstain.detectors.logits",
    "abstain.detectors.features",
    "abstain.detectors.base_scores",
    "abstain.combine.pvalues",
    "abstain.combine.guarantee",
    "abstain.combine.pipeline",
    "abstain.ordinal",
)

#: How deep documents may nest in one another (a double-score detector uses 2).
MAX_DEPTH = 8

_SPECIAL = ("nan", "inf", "-inf")
_KEYS = ("format", "kind", "params", "fitted")


# --------------------------------------------------------------------------- messages
def _show(value: Any) -> str:
    """``repr`` of a value from a document, cut short for a message."""
    if isinstance(value, dict):
        return "an object" if value else "{}"
    if isinstance(value, list) and len(repr(value)) > 60:
        return f"a list of length {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bad(where: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"{where} must be {expected}; got {_show(value)}.")


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


@dataclass
class _Ctx:
    """State of one document being read: legacy list arrays, nesting depth, bound dims."""

    legacy: bool
    depth: int
    dims: dict[str, tuple[int, str]] = field(default_factory=dict)

    def bind(self, name: str, n: int, where: str) -> int | None:
        """Bind dimension ``name`` to ``n``; return the earlier value if it differs."""
        if name in self.dims:
            m = self.dims[name][0]
            return m if m != n else None
        self.dims[name] = (n, where)
        return None

    def child(self) -> _Ctx:
        return _Ctx(self.legacy, self.depth, dict(self.dims))


# --------------------------------------------------------------------------- fields
class Field:
    """One fitted attribute's schema: how it is written and what a document may hold.

    ``none``: the value may be None (``null``); ``optional``: the attribute may be
    absent (not set by ``fit``), and then the document leaves it out.
    """

    def __init__(self, *, none: bool = False, optional: bool = False) -> None:
        self.none = none
        self.optional = optional

    def describe(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def expected(self) -> str:
        return self.describe() + (" or null" if self.none else "")

    def dump(self, value: Any, where: str) -> Any:
        if value is None:
            if self.none:
                return None
            raise ValueError(f"{where} is None, which its field does not allow.")
        return self._dump(value, where)

    def load(self, value: Any, where: str, ctx: _Ctx) -> Any:
        if value is None:
            if self.none:
                return None
            raise _bad(where, self.expected(), value)
        return self._load(value, where, ctx)

    def _dump(self, value: Any, where: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _load(self, value: Any, where: str, ctx: _Ctx) -> Any:  # pragma: no cover
        raise NotImplementedError


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def _within(v: float, low: float | None, high: float | None, low_open: bool,
            high_open: bool) -> bool:
    if low is not None and (v < low or (low_open and v == low)):
        return False
    return not (high is not None and (v > high or (high_open and v == high)))


class Number(Field):
    """A float: finite, in an optional interval; ``special`` lists the non-finite values
    (``"nan"``, ``"inf"``, ``"-inf"``) the field allows, written as those strings."""

    def __init__(self, low: float | None = None, high: float | None = None, *,
                 low_open: bool = False, high_open: bool = False,
                 special: tuple[str, ...] = (), none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        assert all(s in _SPECIAL for s in special)
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.special = special

    def describe(self) -> str:
        base = "a finite number" + _interval(self.low, self.high, self.low_open, self.high_open)
        parts = [base, *self.special]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]

    def _check(self, v: float) -> bool:
        if not math.isfinite(v):
            return ("nan" if math.isnan(v) else "inf" if v > 0 else "-inf") in self.special
        return _within(v, self.low, self.high, self.low_open, self.high_open)

    def _dump(self, value: Any, where: str) -> Any:
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise _bad(where, self.expected(), value)
        v = float(value)
        if not self._check(v):
            raise _bad(where, self.expected(), v)
        if math.isfinite(v):
            return v
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")

    def _load(self, value: Any, where: str, ctx: _Ctx) -> float:
        if isinstance(value, str) and value in self.special:
            return float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(where, self.expected(), value)
        try:
            v = float(value)
        except OverflowError:
            raise _bad(where, self.expected(), value) from None
        if not math.isfinite(v) or not self._check(v):
            raise _bad(where, self.expected(), value)
        return v


class Int(Field):
    """An integer ``>= low`` (and ``<= high``); ``dim`` names a dimension it must equal
    wherever else that name appears in the document (array shapes, list lengths)."""

    def __init__(self, low: int = 0, high: int | None = None, *, dim: str | None = None,
                 none: bool = False, optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.low, self.high, self.dim = low, high, dim

    def describe(self) -> str:
        if self.high is not None:
            return f"an integer in [{self.low}, {self.high}]"
        return f"an integer >= {self.low}"

    def _ok(self, value: Any) -> bool:
        return bool(not isinstance(value, (bool, np.bool_))
                    and isinstance(value, (int, np.integer))
                    and value >= self.low and (self.high is None or value <= self.high))

    def _dump(self, value: Any, where: str) -> int:
        if not self._ok(value):
            raise _bad(where, self.expected(), value)
        return int(value)

    def _load(self, value: Any, where: str, ctx: _Ctx) -> int:
        if not self._ok(value):
            raise _bad(where, self.expected(), value)
        if self.dim is not None:
            other = ctx.bind(self.dim, int(value), where)
            if other is not None:
                raise ValueError(f"{where} must be {other} to match "
                                 f"{ctx.dims[self.dim][1]}; got {value!r}.")
        return int(value)


class Flag(Field):
    """``true`` or ``false``."""

    def describe(self) -> str:
        return "true or false"

    def _dump(self, value: Any, where: str) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise _bad(where, self.expected(), value)
        return bool(value)

    def _load(self, value: Any, where: str, ctx: _Ctx) -> bool:
        if not isinstance(value, bool):
            raise _bad(where, self.expected(), value)
        return value


class Text(Field):
    """A string, optionally one of ``choices``."""

    def __init__(self, choices: Sequence[str] | None = None, *, none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.choices = None if choices is None else tuple(choices)

    def describe(self) -> str:
        if self.choices is None:
            return "a string"
        return "one of " + ", ".join(map(repr, self.choices))

    def _ok(self, value: Any) -> bool:
        return isinstance(value, str) and (self.choices is None or value in self.choices)

    def _dump(self, value: Any, where: str) -> str:
        if not self._ok(value):
            raise _bad(where, self.expected(), value)
        return str(value)

    def _load(self, value: Any, where: str, ctx: _Ctx) -> str:
        if not self._ok(value):
            raise _bad(where, self.expected(), value)
        return str(value)


def _check_length(where: str, n: int, length: int | str | None, min_length: int,
                  ctx: _Ctx | None) -> None:
    if n < min_length:
        raise ValueError(f"{where} must hold at least {min_length} item(s); got {n}.")
    if isinstance(length, int) and n != length:
        raise ValueError(f"{where} must hold {length} item(s); got {n}.")
    if isinstance(length, str) and ctx is not None:
        other = ctx.bind(length, n, where)
        if other is not None:
            raise ValueError(f"{where} must hold {other} item(s) to match "
                             f"{ctx.dims[length][1]}; got {n}.")


class Labels(Field):
    """Class labels: a list of JSON scalars (strings, integers, finite numbers, booleans).

    ``integer``: integers only; ``unique_sorted``: strictly increasing, as ``np.unique``
    returns them; ``convert`` builds the attribute from the list (default ``np.asarray``).
    """

    def __init__(self, *, integer: bool = False, unique_sorted: bool = True,
                 length: int | str | None = None, min_length: int = 0,
                 convert: Callable[[list[Any]], Any] = np.asarray, none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.integer, self.unique_sorted = integer, unique_sorted
        self.length, self.min_length, self.convert = length, min_length, convert

    def describe(self) -> str:
        what = "integers" if self.integer else "labels (strings or numbers)"
        order = ", sorted and distinct" if self.unique_sorted else ""
        return f"a list of {what}{order}"

    def _item_ok(self, v: Any) -> bool:
        if self.integer:
            return isinstance(v, int) and not isinstance(v, bool)
        if isinstance(v, float):
            return math.isfinite(v)
        return isinstance(v, (str, int))

    def _check(self, items: list[Any], where: str, ctx: _Ctx | None) -> None:
        for i, v in enumerate(items):
            if not self._item_ok(v):
                raise _bad(f"{where}[{i}]", "an integer" if self.integer
                           else "a string or a finite number", v)
        _check_length(where, len(items), self.length, self.min_length, ctx)
        if self.unique_sorted and len(items) > 1:
            arr = np.asarray(items)
            if arr.ndim != 1 or not np.array_equal(np.unique(arr), arr):
                raise _bad(where, self.expected(), items)

    def _dump(self, value: Any, where: str) -> list[Any]:
        items = np.asarray(value).tolist()
        if not isinstance(items, list):
            raise _bad(where, self.expected(), value)
        self._check(items, where, None)
        return items

    def _load(self, value: Any, where: str, ctx: _Ctx) -> Any:
        if not isinstance(value, list):
            raise _bad(where, self.expected(), value)
        self._check(value, where, ctx)
        return self.convert(value)


class Seq(Field):
    """A list of items of one field; ``length`` an int or a dimension name."""

    def __init__(self, item: Field, *, length: int | str | None = None, min_length: int = 0,
                 convert: Callable[[list[Any]], Any] = list, none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.item, self.length, self.min_length, self.convert = item, length, min_length, convert

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"

    def _dump(self, value: Any, where: str) -> list[Any]:
        if isinstance(value, (str, dict)) or not isinstance(value, (list, tuple)):
            raise _bad(where, self.expected(), value)
        _check_length(where, len(value), self.length, self.min_length, None)
        return [self.item.dump(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def _load(self, value: Any, where: str, ctx: _Ctx) -> Any:
        if not isinstance(value, list):
            raise _bad(where, self.expected(), value)
        _check_length(where, len(value), self.length, self.min_length, ctx)
        return self.convert([self.item.load(v, f"{where}[{i}]", ctx) for i, v in enumerate(value)])


class Tup(Field):
    """A fixed-length list whose items have their own fields; ``convert(*items)``."""

    def __init__(self, *items: Field, convert: Callable[..., Any] = lambda *a: tuple(a),
                 none: bool = False, optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.items, self.convert = items, convert

    def describe(self) -> str:
        return f"a list of {len(self.items)} items"

    def _dump(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, (list, tuple)) or len(value) != len(self.items):
            raise _bad(where, self.expected(), value)
        pairs = enumerate(zip(self.items, value, strict=True))
        return [f.dump(v, f"{where}[{i}]") for i, (f, v) in pairs]

    def _load(self, value: Any, where: str, ctx: _Ctx) -> Any:
        if not isinstance(value, list) or len(value) != len(self.items):
            raise _bad(where, self.expected(), value)
        return self.convert(*(f.load(v, f"{where}[{i}]", ctx)
                              for i, (f, v) in enumerate(zip(self.items, value, strict=True))))


class Record(Field):
    """A JSON object with exactly the given keys (a dict attribute). Dimension names
    first bound inside one record stay local to it."""

    def __init__(self, fields: dict[str, Field], *, none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.fields = fields

    def describe(self) -> str:
        return "an object with keys " + ", ".join(map(repr, self.fields))

    def _dump(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) != set(self.fields):
            raise _bad(where, self.expected(), value)
        return {k: f.dump(value[k], _at(where, k)) for k, f in self.fields.items()}

    def _load(self, value: Any, where: str, ctx: _Ctx) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) != set(self.fields):
            raise _bad(where, self.expected(), value)
        local = ctx.child()
        return {k: f.load(value[k], _at(where, k), local) for k, f in self.fields.items()}


Dim = int | str | None


class Array(Field):
    """A float64 array, written as ``{"shape": [...], "float64_le_base64": "..."}``.

    ``shape`` gives each axis: an int, a dimension name (equal wherever it recurs in
    the document) or None (any length). Every axis is non-empty; entries are finite
    (and > 0 with ``positive``).
    """

    def __init__(self, shape: tuple[Dim, ...], *, positive: bool = False, none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.shape, self.positive = shape, positive

    def describe(self) -> str:
        what = "positive" if self.positive else "finite"
        return (f"a {len(self.shape)}-d array of {what} numbers "
                '{"shape": [...], "float64_le_base64": "..."}')

    def _check_values(self, arr: NDArray[np.float64], where: str) -> None:
        if not np.isfinite(arr).all():
            raise ValueError(f"{where} must hold finite numbers; got "
                             f"{int(np.count_nonzero(~np.isfinite(arr)))} NaN or infinite.")
        if self.positive and not (arr > 0).all():
            raise ValueError(f"{where} must hold positive numbers; got minimum {arr.min()!r}.")

    def _dump(self, value: Any, where: str) -> dict[str, Any]:
        arr = np.ascontiguousarray(value, dtype="<f8")
        if arr.ndim != len(self.shape) or 0 in arr.shape:
            raise ValueError(f"{where} must be a non-empty {len(self.shape)}-d array; got "
                             f"shape {arr.shape}.")
        self._check_values(arr, where)
        return {"shape": list(arr.shape),
                "float64_le_base64": base64.b64encode(arr.tobytes()).decode("ascii")}

    def _load(self, value: Any, where: str, ctx: _Ctx) -> NDArray[np.float64]:
        if ctx.legacy and isinstance(value, list):
            try:  # earlier formats wrote some arrays as nested lists of numbers
                arr = np.array(value, dtype=np.float64)
            except (TypeError, ValueError, OverflowError):
                raise _bad(where, "a nested list of numbers of one shape", value) from None
        else:
            arr = self._decode(value, where)
        if arr.ndim != len(self.shape) or 0 in arr.shape:
            raise ValueError(f"{where} must be a non-empty {len(self.shape)}-d array; got "
                             f"shape {arr.shape}.")
        self._check_values(arr, where)
        self._check_shape(arr.shape, where, ctx)
        return arr

    def _decode(self, value: Any, where: str) -> NDArray[np.float64]:
        if not isinstance(value, dict) or set(value) != {"shape", "float64_le_base64"}:
            raise _bad(where, 'an array {"shape": [...], "float64_le_base64": "..."}', value)
        shape, data = value["shape"], value["float64_le_base64"]
        if not isinstance(shape, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise _bad(f"{where}.shape", "a list of non-negative integers", shape)
        if len(shape) != len(self.shape):
            raise ValueError(f"{where} must be a {len(self.shape)}-d array; got shape "
                             f"{tuple(shape)}.")
        if not isinstance(data, str):
            raise _bad(f"{where}.float64_le_base64", "a base64 string", data)
        try:
            raw = base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise ValueError(f"{where}.float64_le_base64 must be valid base64; got a string "
                             f"of length {len(data)} that is not.") from None
        if len(raw) != 8 * math.prod(shape):
            raise ValueError(f"{where}.float64_le_base64 must hold {8 * math.prod(shape)} bytes "
                             f"for shape {tuple(shape)}; got {len(raw)}.")
        return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)

    def _check_shape(self, shape: tuple[int, ...], where: str, ctx: _Ctx) -> None:
        for axis, (want, n) in enumerate(zip(self.shape, shape, strict=True)):
            if isinstance(want, int) and n != want:
                raise ValueError(f"{where} must have shape {self._expected(ctx)}; got {shape}.")
            if isinstance(want, str):
                other = ctx.bind(want, n, f"{where} axis {axis}")
                if other is not None:
                    raise ValueError(f"{where} must have shape {self._expected(ctx)} to match "
                                     f"{ctx.dims[want][1]}; got {shape}.")

    def _expected(self, ctx: _Ctx) -> str:
        dims = [str(d) if isinstance(d, int) else "n" if d is None
                else str(ctx.dims[d][0]) if d in ctx.dims else d for d in self.shape]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


class Nested(Field):
    """A nested fitted document, of one of ``kinds`` (class names) or of a ``family``."""

    def __init__(self, *kinds: str, family: str | None = None, none: bool = False,
                 optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.kinds, self.family = kinds, family

    def _allowed(self) -> list[str]:
        if self.kinds:
            return list(self.kinds)
        return sorted(k for k, e in _KINDS.items() if e.family == self.family)

    def describe(self) -> str:
        return "a document of kind " + _alternatives(self._allowed())

    def _dump(self, value: Any, where: str) -> dict[str, Any]:
        entry = _entry_of(value, where)
        if entry.cls.__name__ not in self._allowed():
            raise _bad(where, self.expected(), value)
        return _document(value, where, params_only=False)

    def _load(self, value: Any, where: str, ctx: _Ctx) -> Any:
        obj = _load_document(value, where, _Ctx(False, ctx.depth + 1), param=False)
        if type(obj).__name__ not in self._allowed():
            raise ValueError(f"{where} must be a document of kind "
                             f"{_alternatives(self._allowed())}; got {type(obj).__name__}.")
        return obj


def _alternatives(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Kind:
    """A registered class: its family (the legacy format it was written in) and fields."""

    cls: type
    family: str
    fields: dict[str, Field]


_KINDS: dict[str, Kind] = {}

T = TypeVar("T", bound=type)


def serializable(family: str) -> Callable[[T], T]:
    """Class decorator: register a class for ``to_json``/:func:`load_json` under its name.

    The fitted attributes are the ``_FIELDS`` dicts of the class and its bases, merged
    from the base down (a subclass may redefine a field). The class must follow the
    estimator contract (``get_params``, ``_check_fitted``) and may define
    ``_validate_params()`` (the parameter checks ``fit`` runs, also run on loading) and
    ``_after_load()`` (derived attributes and checks across fields, after loading).
    """
    assert family in LEGACY_FORMATS.values(), family

    def register(cls: T) -> T:
        fields: dict[str, Field] = {}
        for klass in reversed(cls.__mro__):
            fields.update(klass.__dict__.get("_FIELDS", {}))
        name = cls.__name__
        if name in _KINDS and _KINDS[name].cls.__qualname__ != cls.__qualname__:
            raise RuntimeError(f"two serialisable classes are named {name!r}.")
        _KINDS[name] = Kind(cls, family, fields)
        return cls

    return register


def registered_kinds() -> dict[str, Kind]:
    """Every registered kind by class name (imports the modules that register them)."""
    for module in _MODULES:
        importlib.import_module(module)
    return dict(_KINDS)


def _entry_of(obj: Any, where: str) -> Kind:
    entry = _KINDS.get(type(obj).__name__)
    if entry is None or entry.cls is not type(obj):
        raise ValueError(f"{where or 'the object'} of type {type(obj).__name__} cannot be "
                         "written as JSON: it is not a registered abstain estimator.")
    return entry


# --------------------------------------------------------------------------- writing
def _dump_param(value: Any, where: str, *, name: str = "") -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{where} must be finite to be written as JSON; got {value!r}.")
        return float(value)
    if name == "random_state":
        return None  # a Generator's state is not stored: the loaded object draws afresh
    if type(value).__name__ in _KINDS and _KINDS[type(value).__name__].cls is type(value):
        return _document(value, where, params_only=True)
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        out = []
        for i, v in enumerate(items):
            if isinstance(v, (list, tuple, dict, np.ndarray)):
                raise ValueError(f"{where}[{i}] must be a scalar to be written as JSON; got "
                                 f"{_show(v)}.")
            out.append(_dump_param(v, f"{where}[{i}]"))
        return out
    raise ValueError(f"{where} of type {type(value).__name__} cannot be written as JSON.")


def _document(obj: Any, where: str = "", *, params_only: bool = False) -> dict[str, Any]:
    entry = _entry_of(obj, where)
    params = {k: _dump_param(v, _at(_at(where, "params"), k), name=k)
              for k, v in obj.get_params(deep=False).items()}
    fitted: dict[str, Any] | None = None
    if not params_only:
        missing = [k for k, f in entry.fields.items() if not f.optional and not hasattr(obj, k)]
        if missing:
            obj._check_fitted(missing[0])  # raises NotFittedError
        fitted = {k: f.dump(getattr(obj, k), _at(_at(where, "fitted"), k))
                  for k, f in entry.fields.items() if hasattr(obj, k)}
    return {"format": FORMAT, "kind": entry.cls.__name__, "params": params, "fitted": fitted}


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """The JSON document of a fitted registered object (the body of every ``to_json``).

    Raises :class:`~abstain.NotFittedError` when a required fitted attribute is missing.
    """
    return json.dumps(_document(obj), sort_keys=True, allow_nan=False, indent=indent)


# --------------------------------------------------------------------------- reading
def _legacy(doc: dict[str, Any], fmt: str, where: str, top: bool) -> dict[str, Any]:
    """A document of an earlier per-family format in the current shape."""
    family = LEGACY_FORMATS[fmt]
    extra = {"columns"} if top else set()
    if family == "double-score":
        parts = ("misclassification", "ood", "selector")
        keys = {"format", "scale", *parts}
        _check_keys(doc, keys, keys | extra, where)

        def template(d: Any) -> Any:  # the fitted part as a parameter (its "params")
            return {**d, "fitted": None} if isinstance(d, dict) else d

        return {"format": FORMAT, "kind": "DoubleScoreDetector",
                "params": {p: template(doc[p]) for p in parts},
                "fitted": {**{f"{p}_": doc[p] for p in parts}, "scale_": doc["scale"]},
                **{k: doc[k] for k in extra if k in doc}}
    key = "detector" if family == "detector" else "model"
    keys = {"format", key, "params", "fitted"}
    _check_keys(doc, keys, keys | extra, where)
    kind = doc[key]
    members = sorted(k for k, e in _KINDS.items() if e.family == family)
    if kind not in members:
        raise ValueError(f"{_at(where, key)} must be {_alternatives(members)} in a document "
                         f"of format {fmt!r}; got {_show(kind)}.")
    out = {k: v for k, v in doc.items() if k != key}
    out.update(format=FORMAT, kind=kind)
    return out


def _check_keys(doc: dict[str, Any], required: set[str], allowed: set[str], where: str) -> None:
    for key in sorted(required):
        if key not in doc:
            raise ValueError(f"{_at(where, key)} is missing: a document needs "
                             f"{', '.join(sorted(required))}.")
    for key in doc:
        if key not in allowed:
            raise ValueError(f"{_at(where, str(key))} is not a key of this document; the keys "
                             f"are {', '.join(sorted(allowed))}.")


def _check_columns(value: Any) -> None:
    expected = 'an object {"scores": [column names]}'
    if not isinstance(value, dict) or set(value) != {"scores"}:
        raise _bad("columns", expected, value)
    scores = value["scores"]
    if not isinstance(scores, list) or not all(isinstance(s, str) for s in scores):
        raise _bad("columns.scores", "a list of strings", scores)


def _load_param(value: Any, where: str, ctx: _Ctx) -> Any:
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _bad(where, "a finite number", value)
        return value
    if isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, (list, dict)):
                raise _bad(f"{where}[{i}]", "a JSON scalar (params lists are flat)", v)
            _load_param(v, f"{where}[{i}]", ctx)
        return list(value)
    # a dict: an estimator given as a parameter
    return _load_document(value, where, _Ctx(False, ctx.depth + 1), param=True)


def _prefix(where: str, message: str) -> str:
    return f"{where}.{message}" if where else message


def _validate_params(obj: Any, where: str) -> None:
    check = getattr(obj, "_validate_params", None)
    if check is None:
        return
    try:
        check()
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        msg = str(exc)
        for name in obj.get_params(deep=False):
            if msg.startswith(f"{name} "):
                raise ValueError(_prefix(where, f"params.{msg}")) from None
        raise ValueError(_prefix(where, f"params: {msg}")) from None


def _load_document(doc: Any, where: str, ctx: _Ctx, *, param: bool) -> Any:
    top = not where
    if ctx.depth > MAX_DEPTH:
        raise ValueError(f"{where} nests documents more than {MAX_DEPTH} deep.")
    if not isinstance(doc, dict):
        raise _bad(where or "the document", "a JSON object (a document written by to_json)",
                   doc)
    fmt = doc.get("format")
    if isinstance(fmt, str) and fmt in LEGACY_FORMATS:
        doc = _legacy(doc, fmt, where, top)
        ctx = _Ctx(True, ctx.depth)
    elif fmt == FORMAT:
        keys = set(_KEYS)
        _check_keys(doc, keys, keys | ({"columns"} if top else set()), where)
    else:
        raise _bad(_at(where, "format"), f"{FORMAT!r} (or a legacy tag: "
                   f"{', '.join(LEGACY_FORMATS)})", fmt)
    if top and "columns" in doc:
        _check_columns(doc["columns"])
    kind = doc["kind"]
    if not isinstance(kind, str) or kind not in _KINDS:
        raise _bad(_at(where, "kind"), "a registered kind: " + _alternatives(sorted(_KINDS)),
                   kind)
    entry = _KINDS[kind]
    cls: Any = entry.cls

    # params: JSON scalars, flat lists, nested documents; then the class's own checks
    raw = doc["params"]
    p_where = _at(where, "params")
    if not isinstance(raw, dict):
        raise _bad(p_where, "an object of parameters", raw)
    names = cls._param_names()
    for key in raw:
        if key not in names:
            raise ValueError(f"{_at(p_where, str(key))} is not a parameter of {kind}; the "
                             f"parameters are {', '.join(names)}.")
    params = {k: _load_param(v, _at(p_where, k), ctx) for k, v in raw.items()}
    obj = cls(**params)
    _validate_params(obj, where)

    # fitted: every required field, no other, each checked by its schema
    raw = doc["fitted"]
    f_where = _at(where, "fitted")
    if raw is None and param:
        return obj  # an unfitted estimator given as a parameter
    if not isinstance(raw, dict):
        raise _bad(f_where, "an object of fitted attributes", raw)
    fields = entry.fields
    for key in raw:
        if key not in fields:
            raise ValueError(f"{_at(f_where, str(key))} is not a fitted attribute of {kind}; "
                             f"the fitted attributes are {', '.join(fields) or 'none'}.")
    for key, f in fields.items():
        if key not in raw:
            if f.optional:
                continue
            raise ValueError(f"{_at(f_where, key)} is missing: a fitted {kind} needs "
                             f"{', '.join(k for k, g in fields.items() if not g.optional)}.")
        setattr(obj, key, f.load(raw[key], _at(f_where, key), ctx))
    after = getattr(obj, "_after_load", None)
    if after is not None:
        try:
            after()
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise ValueError(_prefix(where, str(exc))) from None
    return obj


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON (a non-finite number is written as the "
                     'string "nan", "inf" or "-inf")')


def _read_file(path: Any) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ValueError(f"text_or_path names no file: {str(path)!r}.") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{str(path)!r} is not UTF-8 text: {exc.reason}.") from None
    except OSError as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc.strerror or exc}.") from None


def _is_file(text: str) -> bool:
    try:
        return os.path.isfile(text)
    except (OSError, ValueError):  # pragma: no cover - isfile already returns False
        return False


def load_json(text_or_path: str | bytes | os.PathLike[str]) -> Any:
    """Load any fitted abstain object written by its ``to_json``. Only JSON is parsed.

    Parameters
    ----------
    text_or_path : str, bytes or path-like
        The JSON document, or the path of a file holding it (a ``str`` that does not
        start with ``{`` is taken as a path when such a file exists).

    Returns
    -------
    The fitted object, of the class named by the document's ``kind``.

    Raises
    ------
    ValueError
        For any problem with the document: not JSON, nested too deeply, not an object,
        an unknown format or kind, a parameter of the wrong type or out of range, a
        fitted attribute missing, unknown, of the wrong type, out of range, non-finite
        where its field does not allow it, or an array of the wrong shape. The message
        names the field, e.g. ``fitted.threshold_``; for a file it starts with the path.

    Examples
    --------
    >>> import abstain
    >>> rule = abstain.CostBased(reject_cost=0.3).fit([0.1, 0.2, 0.6, 0.9], [0, 0, 1, 1])
    >>> abstain.load_json(rule.to_json()).threshold_
    0.2
    >>> abstain.load_json('{"format": "abstain/1", "kind": "CostBased", "params": {}}')
    Traceback (most recent call last):
    ...
    ValueError: fitted is missing: a document needs fitted, format, kind, params.
    """
    source = ""
    if isinstance(text_or_path, os.PathLike):
        source = str(os.fspath(text_or_path))
        text: str | bytes = _read_file(text_or_path)
    elif isinstance(text_or_path, (bytes, bytearray)):
        text = bytes(text_or_path)
    elif isinstance(text_or_path, str):
        text = text_or_path
        if text.lstrip()[:1] not in ("{", "[") and _is_file(text):
            source, text = text, _read_file(text)
    else:
        raise _bad("text_or_path", "a JSON string or the path of a file", text_or_path)
    try:
        return _parse_and_load(text)
    except ValueError as exc:
        if source:
            raise ValueError(f"{source}: {exc}") from None
        if isinstance(text, str) and text.lstrip()[:1] not in ("{", "[") \
                and str(exc).startswith("the document is not valid JSON"):
            raise ValueError("text_or_path must be a JSON document or the path of an existing "
                             f"file; got {_show(text)}, which is neither.") from None
        raise


def _parse_and_load(text: str | bytes) -> Any:
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("the document nests too deeply to be read.") from None
    except ValueError as exc:  # JSONDecodeError, a refused constant, a too-long integer
        raise ValueError(f"the document is not valid JSON: {exc}.") from None
    registered_kinds()
    try:
        return _load_document(doc, "", _Ctx(False, 0), param=False)
    except RecursionError:
        raise ValueError("the document nests too deeply to be read.") from None


def load_family(text: Any, caller: str, family: str) -> Any:
    """The deprecated per-family loaders: :func:`load_json` with a ``FutureWarning`` and a
    check that the object is of ``family``."""
    warnings.warn(f"{caller} is deprecated and will be removed in the next release; use "
                  "abstain.load_json, which loads every kind.", FutureWarning, stacklevel=3)
    obj = load_json(text)
    kind = _KINDS[type(obj).__name__]
    if kind.family != family:
        members = sorted(k for k, e in _KINDS.items() if e.family == family)
        raise ValueError(f"{caller} loads {_alternatives(members)}; the document holds a "
                         f"{type(obj).__name__} (abstain.load_json loads every kind).")
    return obj
