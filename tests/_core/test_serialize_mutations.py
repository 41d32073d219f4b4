"""Hostile documents by mutation: every valid document of every kind, with one node dropped,
retyped, made NaN / infinite / huge, or nested one level deeper, is either loaded to an object
that still works (finite outputs, probabilities in [0, 1]) or refused with one ValueError,
never any other exception."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from estimators import CASES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abstain import load_json

_DOCS: dict[str, dict[str, Any]] = {}


def _document(kind: str) -> dict[str, Any]:
    if kind not in _DOCS:
        case = CASES[kind]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = case.fit(case.make())
        _DOCS[kind] = json.loads(obj.to_json())
    return json.loads(json.dumps(_DOCS[kind]))  # a fresh copy to mutate


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):  # the first entries stand for the rest
            out += _paths(v, (*prefix, i))
    return out


_REPLACEMENTS = [None, True, "abc", "nan", "inf", -1, 0, 1e308, -1e308, math.nan, math.inf,
                 [], {}, [[1.0]], {"a": 1}, 2.5]
_MUTATIONS = ["drop", "nest", *range(len(_REPLACEMENTS))]


def _mutate(doc: dict[str, Any], path: tuple[Any, ...], how: Any) -> None:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if how == "drop":
        if isinstance(parent, dict):
            del parent[last]
        else:
            parent.pop(last)
    elif how == "nest":
        parent[last] = [parent[last]]
    else:
        parent[last] = _REPLACEMENTS[how]


def _works(obj: Any, kind: str, huge: bool) -> None:
    """The loaded object's outputs on new data are finite (no NaN, and no infinity unless a
    huge number, still a valid float, was written into the document), and probabilities are
    in [0, 1]."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            outputs = CASES[kind].outputs(obj)
        except ValueError:
            return  # a clean refusal at use (e.g. a width that no longer matches) is fine
    for name, value in outputs.items():
        arr = np.asarray(value)
        if arr.dtype.kind in "fc":
            ok = ~np.isnan(arr) if huge else np.isfinite(arr)
            assert np.all(ok), (kind, name, arr)
            if "proba" in name:
                assert np.all((arr >= 0) & (arr <= 1)), (kind, name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_document_loads_to_a_working_object_or_is_refused(data):
    kind = data.draw(st.sampled_from(sorted(CASES)))
    doc = _document(kind)
    paths = _paths(doc)
    path = data.draw(st.sampled_from(paths))
    how = data.draw(st.sampled_from(_MUTATIONS))
    _mutate(doc, path, how)
    text = json.dumps(doc)  # NaN and inf become the non-standard tokens JSON parsers accept
    try:
        obj = load_json(text)
    except ValueError:
        return
    huge = how in (_REPLACEMENTS.index(1e308), _REPLACEMENTS.index(-1e308))
    _works(obj, kind, huge)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_kind_has_a_document_to_mutate(kind):
    assert _document(kind)["kind"] == kind


# ---------------------------------------------------------------- every node, every mutation
def _tables() -> dict[str, Any]:
    """Fitted documents of the tables (not estimators: no ``CASES`` entry), and their use."""
    from abstain import CostBased, PairTable, ScoreTable
    from abstain.metrics import aurc, auroc
    from abstain.models import BoundedTPRFPR

    rng = np.random.default_rng(3)
    u = np.round(rng.random(40), 1)
    losses = (rng.random(40) < u).astype(float)
    ood = np.arange(40) % 3 == 0
    pairs = np.round(rng.random((40, 2)), 1)
    grid = np.linspace(-0.5, 1.5, 9)
    return {
        "ScoreTable": (ScoreTable.from_arrays(u, losses),
                       lambda t: {"aurc": aurc(t),
                                  "accept_proba": CostBased(0.3).fit(t).accept_proba(grid)}),
        "ScoreTable with is_ood": (ScoreTable.from_arrays(u, losses, is_ood=ood),
                                   lambda t: {"auroc": auroc(t)}),
        "PairTable": (PairTable.from_arrays(pairs, losses, is_ood=ood),
                      lambda t: {"accept_proba": BoundedTPRFPR(0.5, 0.5).fit(t)
                                 .accept_proba(np.stack([grid, grid], axis=1))}),
    }


_TABLES = _tables()
_KINDS = sorted(CASES) + sorted(_TABLES)


def _fitted(name: str) -> tuple[dict[str, Any], Callable[[Any], dict[str, Any]]]:
    if name in _TABLES:
        table, use = _TABLES[name]
        return json.loads(table.to_json()), use
    return _document(name), CASES[name].outputs


#: what every node of a document is set to: the non-finite numbers (as the strings a document
#: writes them as: a bare NaN or Infinity token is not JSON and is refused before any field
#: is read), the extreme ones, zero and -1, an integer beyond int64, a string, null and a
#: nested list
_VALUES: list[Any] = ["nan", "inf", "-inf", 1e308, -1e308, 0, -1, 2**70, "abc", None, [[1.0]]]


def _all_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _all_paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:2]):  # the first entries stand for the rest
            out += _all_paths(v, (*prefix, i))
    return out


def _named_by(path: tuple[Any, ...]) -> str:
    """The key a refusal must name: the last key of the path (a list index names the list)."""
    return [k for k in path if isinstance(k, str)][-1]


#: Fields whose every valid value describes another valid model, one the new data need not
#: fit: class labels. A document whose classes_ no longer hold the labels of the new data
#: loads, and the use refuses those labels with a ValueError naming classes_.
_DATA_DEPENDENT = ("classes_",)


def _check(obj: Any, use: Callable[[Any], dict[str, Any]], want: dict[str, Any],
           path: tuple[Any, ...]) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = use(obj)
        except ValueError as exc:
            if _named_by(path) in _DATA_DEPENDENT and _named_by(path) in str(exc):
                return None
            return f"use raised ValueError: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed
            return f"use raised {type(exc).__name__}: {exc}"
    for key, value in want.items():
        arr = np.asarray(got[key])
        if arr.shape != np.shape(value):
            return f"{key} has shape {arr.shape}, not {np.shape(value)}"
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            return f"{key} is not finite: {arr}"
    return None


@pytest.mark.parametrize("name", _KINDS)
def test_every_node_dropped_or_replaced_is_refused_naming_it_or_loads_to_a_working_object(name):
    """Every key dropped, every node set to each of ``_VALUES``: ``load_json`` refuses with
    a ValueError that names the key, or the object it returns gives finite outputs of the
    original shapes on new data (the parameters and the finiteness and range of each fitted
    attribute are validated on loading, not at use). A dropped parameter is always refused."""
    doc, use = _fitted(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = use(load_json(json.dumps(doc)))
    failures = []
    for path in _all_paths(doc):
        hows: list[Any] = ["drop"] if isinstance(path[-1], str) else []
        for how in [*hows, *range(len(_VALUES))]:
            mutated = json.loads(json.dumps(doc))
            parent = mutated
            for key in path[:-1]:
                parent = parent[key]
            if how == "drop":
                del parent[path[-1]]
            else:
                parent[path[-1]] = _VALUES[how]
            what = "drop" if how == "drop" else repr(_VALUES[how])
            try:
                obj = load_json(json.dumps(mutated))
            except ValueError as exc:
                if _named_by(path) not in str(exc):
                    failures.append(f"{path} {what}: refused without naming "
                                    f"{_named_by(path)!r}: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - reported, not swallowed
                failures.append(f"{path} {what}: {type(exc).__name__}: {exc}")
                continue
            if how == "drop" and len(path) > 1 and path[-2] == "params":
                failures.append(f"{path} drop: a document missing a parameter loaded")
                continue
            problem = _check(obj, use, want, path)
            if problem is not None:
                failures.append(f"{path} {what}: loaded, but {problem}")
    assert not failures, f"{len(failures)} failure(s):\n" + "\n".join(failures[:40])
