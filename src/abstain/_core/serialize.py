"""The one JSON codec and the registry of every fitted kind.

Every fitted object is written as one document shape (keys sorted)::

    {"format": "abstain/1", "kind": "<ClassName>", "params": {...}, "fitted": {...}}

``params`` holds the constructor's keyword arguments: JSON scalars, nested documents (an
estimator given as a parameter, written with ``"fitted": null``), or flat lists of either
(a list of estimators, as :class:`abstain.detectors.DetectorBank` takes).
``fitted`` holds the fitted attributes, each described by a field of the class's schema
(``_FIELDS``, merged along the class hierarchy; the field types are in :mod:`.schema` and
re-exported here): a nested fitted estimator is a nested document of the same shape, an
array is ``{"shape": [...], "float64_le_base64": "..."}`` (little-endian float64 bytes),
and a non-finite float scalar is one of the strings ``"nan"``, ``"inf"``, ``"-inf"``,
allowed only where its field says so.

:func:`read_document` (what :func:`abstain.load_json` calls) validates the whole document
and raises one ``ValueError`` that names the offending field; a document of any other
format is refused. A class joins the registry (:func:`serializable`) when its module is
imported; this module names no module above it.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .schema import (
    Array,
    Context,
    Field,
    Flag,
    Int,
    Labels,
    Number,
    Record,
    Seq,
    Text,
    Tup,
    bad_value,
    join_path,
    show,
)
from .validation import plain

__all__ = [
    "FORMAT",
    "FAMILIES",
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
    "check_fitted_copy",
    "dumps",
    "read_document",
    "registered_kinds",
    "serializable",
]

#: The format tag of every document written by ``to_json``.
FORMAT = "abstain/1"

#: The families of kinds (a nested field may accept any kind of one family).
FAMILIES = ("rule", "ood", "score", "detector", "double-score", "base-scores", "combine",
            "svor", "table")

#: How deep documents may nest in one another (a double-score detector uses 2).
MAX_DEPTH = 8

_KEYS = ("format", "kind", "params", "fitted")


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
            raise bad_value(where, self.expected(), value)
        return _document(value, where, params_only=False)

    def _load(self, value: Any, where: str, ctx: Context) -> Any:
        obj = _load_document(value, where, Context(ctx.depth + 1), param=False)
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
    """A registered class: its family and fields."""

    cls: type
    family: str
    fields: dict[str, Field]


_KINDS: dict[str, Kind] = {}

T = TypeVar("T", bound=type)


def serializable(family: str) -> Callable[[T], T]:
    """Class decorator: register a class for ``to_json``/:func:`abstain.load_json` under its name.

    The fitted attributes are the ``_FIELDS`` dicts of the class and its bases, merged
    from the base down (a subclass may redefine a field). The class must follow the
    estimator contract (``get_params``, ``_check_fitted``) and may define
    ``_validate_params()`` (the parameter checks ``fit`` runs, also run on loading) and
    ``_after_load()`` (derived attributes and checks across fields, after loading). A
    document must hold every parameter.
    """
    assert family in FAMILIES, family

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
    """Every kind registered so far, by class name.

    A class registers when its module is imported; :func:`abstain.load_json` imports every
    registering module first, so that it reads every kind.
    """
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
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]  # a number given as a 0-d array is that number
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):  # Fraction too
        value = float(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{where} must be finite to be written as JSON; got {plain(value)}.")
        return float(value)
    if name == "random_state":
        # a SeedSequence of an integer alone seeds as that integer does; a Generator's or
        # BitGenerator's state is not stored: the loaded object draws afresh
        if (isinstance(value, np.random.SeedSequence) and isinstance(value.entropy, int)
                and value.entropy >= 0 and not value.spawn_key
                and value.pool_size == np.random.SeedSequence().pool_size):
            return int(value.entropy)
        return None
    if type(value).__name__ in _KINDS and _KINDS[type(value).__name__].cls is type(value):
        return _document(value, where, params_only=True)
    if (type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "to_numpy")
            and getattr(value, "ndim", 0) == 1):
        value = value.to_numpy()  # labels as a pandas Index of any kind, or a Series
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        out = []
        for i, v in enumerate(items):
            if isinstance(v, (list, tuple, dict, np.ndarray)):
                raise ValueError(f"{where}[{i}] must be a scalar to be written as JSON; got "
                                 f"{show(v)}.")
            out.append(_dump_param(v, f"{where}[{i}]"))
        return out
    raise ValueError(f"{where} of type {type(value).__name__} cannot be written as JSON.")


def _document(obj: Any, where: str = "", *, params_only: bool = False) -> dict[str, Any]:
    entry = _entry_of(obj, where)
    params = {k: _dump_param(v, join_path(join_path(where, "params"), k), name=k)
              for k, v in obj.get_params(deep=False).items()}
    fitted: dict[str, Any] | None = None
    if not params_only:
        missing = [k for k, f in entry.fields.items() if not f.optional and not hasattr(obj, k)]
        if missing:
            obj._check_fitted(missing[0])  # raises NotFittedError
        fitted = {k: f.dump(getattr(obj, k), join_path(join_path(where, "fitted"), k))
                  for k, f in entry.fields.items() if hasattr(obj, k)}
    return {"format": FORMAT, "kind": entry.cls.__name__, "params": params, "fitted": fitted}


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """The JSON document of a fitted registered object (the body of every ``to_json``),
    read back before it is returned, so that no document is written that
    :func:`abstain.load_json` refuses.

    Raises :class:`~abstain.NotFittedError` when a required fitted attribute is missing, and
    ``ValueError`` when the document would be refused: parameters changed after the fit
    (``set_params``) that its fitted state no longer matches.
    """
    text = json.dumps(_document(obj), sort_keys=True, allow_nan=False, indent=indent)
    try:
        _parse_and_load(text)
    except ValueError as exc:
        hint = (" If its parameters changed after fit (set_params), fit it again or set them "
                "back first." if hasattr(obj, "set_params") else "")
        raise ValueError(f"this {type(obj).__name__} cannot be saved: load_json would refuse "
                         f"its document ({exc}){hint}") from None
    return text


# --------------------------------------------------------------------------- reading
def _check_keys(doc: dict[str, Any], required: set[str], allowed: set[str], where: str) -> None:
    for key in sorted(required):
        if key not in doc:
            raise ValueError(f"{join_path(where, key)} is missing: a document needs "
                             f"{', '.join(sorted(required))}.")
    for key in doc:
        if key not in allowed:
            raise ValueError(f"{join_path(where, str(key))} is not a key of this document; the "
                             f"keys are {', '.join(sorted(allowed))}.")


def _check_columns(value: Any) -> None:
    expected = 'an object {"scores": [column names]}'
    if not isinstance(value, dict) or set(value) != {"scores"}:
        raise bad_value("columns", expected, value)
    scores = value["scores"]
    if not isinstance(scores, list) or not all(isinstance(s, str) for s in scores):
        raise bad_value("columns.scores", "a list of strings", scores)


def _load_param(value: Any, where: str, ctx: Context) -> Any:
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise bad_value(where, "a finite number", value)
        return value
    if isinstance(value, list):
        out = []
        for i, v in enumerate(value):
            if isinstance(v, list):
                raise bad_value(f"{where}[{i}]", "a JSON scalar or a document (params lists "
                                "are flat)", v)
            out.append(_load_param(v, f"{where}[{i}]", ctx))  # a dict: an estimator
        return out
    # a dict: an estimator given as a parameter
    return _load_document(value, where, Context(ctx.depth + 1), param=True)


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


def _load_document(doc: Any, where: str, ctx: Context, *, param: bool) -> Any:
    top = not where
    if ctx.depth > MAX_DEPTH:
        raise ValueError(f"{where} nests documents more than {MAX_DEPTH} deep.")
    if not isinstance(doc, dict):
        raise bad_value(where or "the document", "a JSON object (a document written by to_json)",
                   doc)
    fmt = doc.get("format")
    if fmt != FORMAT:
        raise bad_value(join_path(where, "format"), f"{FORMAT!r}, the one format of abstain "
                        "documents (write the object again with to_json)", fmt)
    keys = set(_KEYS)
    _check_keys(doc, keys, keys | ({"columns"} if top else set()), where)
    if top and "columns" in doc:
        _check_columns(doc["columns"])
    kind = doc["kind"]
    if not isinstance(kind, str) or kind not in _KINDS:
        raise bad_value(join_path(where, "kind"),
                        "a registered kind: " + _alternatives(sorted(_KINDS)), kind)
    entry = _KINDS[kind]
    cls: Any = entry.cls

    # params: JSON scalars, flat lists, nested documents; then the class's own checks
    raw = doc["params"]
    p_where = join_path(where, "params")
    if not isinstance(raw, dict):
        raise bad_value(p_where, "an object of parameters", raw)
    names = cls._param_names()
    for key in raw:
        if key not in names:
            raise ValueError(f"{join_path(p_where, str(key))} is not a parameter of {kind}; "
                             + (f"the parameters are {', '.join(names)}." if names else
                                f"a {kind} has no parameters."))
    # every parameter is written by to_json: one left out would silently take the
    # constructor's default beside fitted attributes computed with another value
    for name in names:
        if name not in raw:
            raise ValueError(f"{join_path(p_where, name)} is missing: a {kind} document needs "
                             f"every parameter ({', '.join(names)}); write the value the "
                             "object was fitted with.")
    params = {k: _load_param(v, join_path(p_where, k), ctx) for k, v in raw.items()}
    obj = cls(**params)
    _validate_params(obj, where)

    # fitted: every required field, no other, each checked by its schema
    raw = doc["fitted"]
    f_where = join_path(where, "fitted")
    if raw is None and param:
        return obj  # an unfitted estimator given as a parameter
    if not isinstance(raw, dict):
        raise bad_value(f_where, "an object of fitted attributes", raw)
    fields = entry.fields
    for key in raw:
        if key not in fields:
            raise ValueError(f"{join_path(f_where, str(key))} is not a fitted attribute of {kind}; "
                             f"the fitted attributes are {', '.join(fields) or 'none'}.")
    for key, f in fields.items():
        if key not in raw:
            if f.optional:
                continue
            raise ValueError(f"{join_path(f_where, key)} is missing: a fitted {kind} needs "
                             f"{', '.join(k for k, g in fields.items() if not g.optional)}.")
        setattr(obj, key, f.load(raw[key], join_path(f_where, key), ctx))
    for hook in ("_after_load", "_loaded_names"):  # the second: NamedFeatures' check
        after = getattr(obj, hook, None)
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
        with open(path, encoding="utf-8-sig") as fh:  # a byte-order mark first is no text
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


def read_document(text_or_path: str | bytes | os.PathLike[str]) -> Any:
    """Read a document of a registered kind: the decoder behind :func:`abstain.load_json`.

    Only the kinds registered so far are known (their modules imported);
    :func:`abstain.load_json` imports every registering module, then calls this.
    """
    source = ""
    if isinstance(text_or_path, os.PathLike):
        source = str(os.fspath(text_or_path))
        text: str | bytes = _read_file(text_or_path)
    elif isinstance(text_or_path, (bytes, bytearray)):
        text = bytes(text_or_path)
    elif isinstance(text_or_path, str):
        text = text_or_path.removeprefix("\ufeff")  # as bytes with a byte-order mark load
        if text.lstrip()[:1] not in ("{", "[") and _is_file(text):
            source, text = text, _read_file(text)
    else:
        raise bad_value("text_or_path", "a JSON string or the path of a file", text_or_path)
    try:
        return _parse_and_load(text)
    except ValueError as exc:
        if source:
            raise ValueError(f"{source}: {exc}") from None
        if isinstance(text, str) and text.lstrip()[:1] not in ("{", "[") \
                and str(exc).startswith("the document is not valid JSON"):
            raise ValueError("text_or_path must be a JSON document or the path of an existing "
                             f"file; got {show(text)}, which is neither.") from None
        raise


class _DuplicateKey(ValueError):
    """A JSON object that holds one key twice."""


def check_fitted_copy(fitted: Any, given: Any, where: str, what: str) -> None:
    """Refuse a loaded fitted part (``where``, such as ``fitted.ood_``) that is not the
    estimator ``given`` as a parameter (``what``) fitted: another class, or another value
    of one of its parameters."""
    if type(fitted) is not type(given):
        raise ValueError(f"{where} must be {what} fitted, a {type(given).__name__}; got a "
                         f"{type(fitted).__name__}.")
    mine, theirs = given.get_params(deep=False), fitted.get_params(deep=False)
    differ = [k for k in mine if mine[k] != theirs[k]]
    if differ:
        raise ValueError(f"{where} must have the parameters of {what}; {differ[0]} is "
                         f"{plain(theirs[differ[0]])}, not {plain(mine[differ[0]])}.")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the document, refusing a key written twice: ``json`` would keep the
    last value silently, and a hand-edited file that holds two values is not read exactly."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"the document holds the key {key!r} twice in one object; "
                                "keep one of its values.")
        out[key] = value
    return out


def _parse_and_load(text: str | bytes) -> Any:
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError("the document nests too deeply to be read.") from None
    except _DuplicateKey as exc:
        raise ValueError(str(exc)) from None
    except ValueError as exc:  # JSONDecodeError, a refused constant, a too-long integer
        raise ValueError(f"the document is not valid JSON: {exc}.") from None
    try:
        return _load_document(doc, "", Context(0), param=False)
    except RecursionError:
        raise ValueError("the document nests too deeply to be read.") from None
