"""Hostile documents by mutation: every valid document of every kind, with one node dropped,
retyped, made NaN / infinite / huge, or nested one level deeper, is either loaded to an object
that still works (finite outputs, probabilities in [0, 1]) or refused with one ValueError,
never any other exception."""

from __future__ import annotations

import json
import math
import warnings
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
