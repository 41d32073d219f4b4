"""The field types of the serialisation schemas: how one fitted attribute is written to
JSON and what a document may hold in its place.

A class lists its fitted attributes as ``_FIELDS = {"name_": Number(0.0, 1.0), ...}``;
:mod:`.serialize` writes and reads them. Every check raises ``ValueError`` with the message
``"<path> must be <what>; got <value>."``, the path naming the field in the document (such
as ``fitted.threshold_``).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .validation import plain

__all__ = [
    "SPECIAL",
    "Array",
    "Context",
    "Dim",
    "Field",
    "Flag",
    "Int",
    "Labels",
    "Number",
    "Record",
    "Seq",
    "Text",
    "Tup",
    "bad_value",
    "join_path",
    "show",
]

#: The strings that stand for the non-finite floats a field may allow.
SPECIAL = ("nan", "inf", "-inf")


# --------------------------------------------------------------------------- messages
def show(value: Any) -> str:
    """``repr`` of a value from a document, cut short for a message."""
    if isinstance(value, dict):
        return "an object" if value else "{}"
    if isinstance(value, list) and len(repr(value)) > 60:
        return f"a list of length {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def bad_value(where: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"{where} must be {expected}; got {show(value)}.")


def join_path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


@dataclass
class Context:
    """State of one document being read: nesting depth, bound dims."""

    depth: int
    dims: dict[str, tuple[int, str]] = field(default_factory=dict)

    def bind(self, name: str, n: int, where: str) -> int | None:
        """Bind dimension ``name`` to ``n``; return the earlier value if it differs."""
        if name in self.dims:
            m = self.dims[name][0]
            return m if m != n else None
        self.dims[name] = (n, where)
        return None

    def child(self) -> Context:
        return Context(self.depth, dict(self.dims))


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

    def load(self, value: Any, where: str, ctx: Context) -> Any:
        if value is None:
            if self.none:
                return None
            raise bad_value(where, self.expected(), value)
        return self._load(value, where, ctx)

    def _dump(self, value: Any, where: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _load(self, value: Any, where: str, ctx: Context) -> Any:  # pragma: no cover
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
        assert all(s in SPECIAL for s in special)
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.special = special

    def describe(self) -> str:
        base = "a finite number" + _interval(self.low, self.high, self.low_open, self.high_open)
        parts = [base, *(f'"{s}"' for s in self.special)]  # the strings, as written
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]

    def _check(self, v: float) -> bool:
        if not math.isfinite(v):
            return ("nan" if math.isnan(v) else "inf" if v > 0 else "-inf") in self.special
        return _within(v, self.low, self.high, self.low_open, self.high_open)

    def _dump(self, value: Any, where: str) -> Any:
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise bad_value(where, self.expected(), value)
        v = float(value)
        if not self._check(v):
            raise bad_value(where, self.expected(), v)
        if math.isfinite(v):
            return v
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")

    def _load(self, value: Any, where: str, ctx: Context) -> float:
        if isinstance(value, str) and value in self.special:
            return float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad_value(where, self.expected(), value)
        try:
            v = float(value)
        except OverflowError:
            raise bad_value(where, self.expected(), value) from None
        if math.isinf(v):  # a literal beyond the float64 range (1e400), which JSON reads as inf
            name = "inf" if v > 0 else "-inf"
            hint = f'; write the string "{name}" where that is meant' if name in self.special \
                else ""
            raise ValueError(f"{where} must be {self.expected()}; got a number beyond the "
                             f"float64 range{hint}.")
        if not math.isfinite(v) or not self._check(v):
            raise bad_value(where, self.expected(), value)
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
            raise bad_value(where, self.expected(), value)
        return int(value)

    def _load(self, value: Any, where: str, ctx: Context) -> int:
        if not self._ok(value):
            raise bad_value(where, self.expected(), value)
        if self.dim is not None:
            other = ctx.bind(self.dim, int(value), where)
            if other is not None:
                raise ValueError(f"{where} must be {other} to match "
                                 f"{ctx.dims[self.dim][1]}; got {plain(value)}.")
        return int(value)


class Flag(Field):
    """``true`` or ``false``."""

    def describe(self) -> str:
        return "true or false"

    def _dump(self, value: Any, where: str) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise bad_value(where, self.expected(), value)
        return bool(value)

    def _load(self, value: Any, where: str, ctx: Context) -> bool:
        if not isinstance(value, bool):
            raise bad_value(where, self.expected(), value)
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
            raise bad_value(where, self.expected(), value)
        return str(value)

    def _load(self, value: Any, where: str, ctx: Context) -> str:
        if not self._ok(value):
            raise bad_value(where, self.expected(), value)
        return str(value)


def _check_length(where: str, n: int, length: int | str | None, min_length: int,
                  ctx: Context | None) -> None:
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

    def _check(self, items: list[Any], where: str, ctx: Context | None) -> None:
        for i, v in enumerate(items):
            if not self._item_ok(v):
                raise bad_value(f"{where}[{i}]", "an integer" if self.integer
                           else "a string or a finite number", v)
        # one kind of label, as every fit takes them: strings, numbers or booleans (a mix
        # would load as strings, or compare unlike the labels of the data)
        kinds = ["a string" if isinstance(v, str) else "a boolean" if isinstance(v, bool)
                 else "a number" for v in items]
        other = next((i for i, k in enumerate(kinds) if k != kinds[0]), None)
        if other is not None:
            raise ValueError(f"{where} must hold labels of one kind (strings, numbers or "
                             f"booleans); got {kinds[0]} ({items[0]!r}) at [0] and "
                             f"{kinds[other]} ({items[other]!r}) at [{other}].")
        _check_length(where, len(items), self.length, self.min_length, ctx)
        if self.unique_sorted and len(items) > 1:
            arr = np.asarray(items)
            if arr.ndim != 1 or not np.array_equal(np.unique(arr), arr):
                raise bad_value(where, self.expected(), items)

    def _dump(self, value: Any, where: str) -> list[Any]:
        items = np.asarray(value).tolist()
        if not isinstance(items, list):
            raise bad_value(where, self.expected(), value)
        self._check(items, where, None)
        return items

    def _load(self, value: Any, where: str, ctx: Context) -> Any:
        if not isinstance(value, list):
            raise bad_value(where, self.expected(), value)
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
            raise bad_value(where, self.expected(), value)
        _check_length(where, len(value), self.length, self.min_length, None)
        return [self.item.dump(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def _load(self, value: Any, where: str, ctx: Context) -> Any:
        if not isinstance(value, list):
            raise bad_value(where, self.expected(), value)
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
            raise bad_value(where, self.expected(), value)
        pairs = enumerate(zip(self.items, value, strict=True))
        return [f.dump(v, f"{where}[{i}]") for i, (f, v) in pairs]

    def _load(self, value: Any, where: str, ctx: Context) -> Any:
        if not isinstance(value, list) or len(value) != len(self.items):
            raise bad_value(where, self.expected(), value)
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
            raise bad_value(where, self.expected(), value)
        return {k: f.dump(value[k], join_path(where, k)) for k, f in self.fields.items()}

    def _load(self, value: Any, where: str, ctx: Context) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) != set(self.fields):
            raise bad_value(where, self.expected(), value)
        local = ctx.child()
        return {k: f.load(value[k], join_path(where, k), local) for k, f in self.fields.items()}


Dim = int | str | None


class Array(Field):
    """A float64 array, written as ``{"shape": [...], "float64_le_base64": "..."}``.

    ``shape`` gives each axis: an int, a dimension name (equal wherever it recurs in
    the document) or None (any length). Every axis is non-empty unless ``empty`` (an
    array of no entries that the object can hold, such as the losses of a table of OOD
    rows only); entries are finite (and > 0 with ``positive``).
    """

    def __init__(self, shape: tuple[Dim, ...], *, positive: bool = False, empty: bool = False,
                 none: bool = False, optional: bool = False) -> None:
        super().__init__(none=none, optional=optional)
        self.shape, self.positive, self.empty = shape, positive, empty

    def _check_ndim(self, arr: NDArray[np.float64], where: str) -> None:
        if arr.ndim != len(self.shape) or (0 in arr.shape and not self.empty):
            what = "" if self.empty else "non-empty "
            raise ValueError(f"{where} must be a {what}{len(self.shape)}-d array; got "
                             f"shape {arr.shape}.")

    def describe(self) -> str:
        what = "positive" if self.positive else "finite"
        return (f"a {len(self.shape)}-d array of {what} numbers "
                '{"shape": [...], "float64_le_base64": "..."}')

    def _check_values(self, arr: NDArray[np.float64], where: str) -> None:
        if not np.isfinite(arr).all():
            raise ValueError(f"{where} must hold finite numbers; got "
                             f"{int(np.count_nonzero(~np.isfinite(arr)))} NaN or infinite.")
        if self.positive and not (arr > 0).all():
            raise ValueError(f"{where} must hold positive numbers; got minimum {plain(arr.min())}.")

    def _dump(self, value: Any, where: str) -> dict[str, Any]:
        arr = np.ascontiguousarray(value, dtype="<f8")
        self._check_ndim(arr, where)
        self._check_values(arr, where)
        return {"shape": list(arr.shape),
                "float64_le_base64": base64.b64encode(arr.tobytes()).decode("ascii")}

    def _load(self, value: Any, where: str, ctx: Context) -> NDArray[np.float64]:
        arr = self._decode(value, where)
        self._check_ndim(arr, where)
        self._check_values(arr, where)
        self._check_shape(arr.shape, where, ctx)
        return arr

    def _decode(self, value: Any, where: str) -> NDArray[np.float64]:
        if not isinstance(value, dict) or set(value) != {"shape", "float64_le_base64"}:
            raise bad_value(where, 'an array {"shape": [...], "float64_le_base64": "..."}', value)
        shape, data = value["shape"], value["float64_le_base64"]
        if not isinstance(shape, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise bad_value(f"{where}.shape", "a list of non-negative integers", shape)
        if len(shape) != len(self.shape):
            raise ValueError(f"{where} must be a {len(self.shape)}-d array; got shape "
                             f"{tuple(shape)}.")
        if not isinstance(data, str):
            raise bad_value(f"{where}.float64_le_base64", "a base64 string", data)
        try:
            raw = base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise ValueError(f"{where}.float64_le_base64 must be valid base64; got a string "
                             f"of length {len(data)} that is not.") from None
        if len(raw) != 8 * math.prod(shape):
            raise ValueError(f"{where}.float64_le_base64 must hold {8 * math.prod(shape)} bytes "
                             f"for shape {tuple(shape)}; got {len(raw)}.")
        return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)

    def _check_shape(self, shape: tuple[int, ...], where: str, ctx: Context) -> None:
        for axis, (want, n) in enumerate(zip(self.shape, shape, strict=True)):
            if isinstance(want, int) and n != want:
                raise ValueError(f"{where} must have shape {self._expected(ctx)}; got {shape}.")
            if isinstance(want, str):
                other = ctx.bind(want, n, f"{where} axis {axis}")
                if other is not None:
                    raise ValueError(f"{where} must have shape {self._expected(ctx)} to match "
                                     f"{ctx.dims[want][1]}; got {shape}.")

    def _expected(self, ctx: Context) -> str:
        dims = [str(d) if isinstance(d, int) else "n" if d is None
                else str(ctx.dims[d][0]) if d in ctx.dims else d for d in self.shape]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
