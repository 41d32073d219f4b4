"""Last-bit perturbation of what differs between CPUs.

NumPy dispatches vectorised ``arctan2``/``cos``/``sin`` kernels and SIMD sorts by CPU, C
libraries and BLAS kernels differ in their last bits, so a search that is exact on one CPU
must give the same result when every transcendental it might call and every rounded
projection it sorts or bounds with moves by a few units in the last place, and when an
unstable sort orders tied values otherwise. :func:`last_bits` does that with pytest's
``monkeypatch``: each result of a wrapped function moves by a random whole number of ulps
in ``[-k, k]`` (exact zeros stay zero, as every CPU returns them), and ``np.argsort``
without ``kind="stable"`` returns its ties in a random order.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

#: NumPy and math functions that a CPU may round differently.
NUMPY = ("arctan2", "arctan", "cos", "sin", "tan", "hypot")
MATH = ("atan2", "atan", "cos", "sin", "tan", "hypot")
#: Functions of the library's searches, replaced wherever a module of abstain holds them:
#: the unit vectors of angles and the rounded projections the searches sort and bound with.
LIBRARY = ("cos_sin", "along")


def _nudge(x: Any, rng: np.random.Generator, k: int) -> Any:
    if isinstance(x, tuple):
        return tuple(_nudge(v, rng, k) for v in x)
    if isinstance(x, float):
        return float(_nudge(np.array([x]), rng, k)[0])
    a = np.asarray(x)
    if a.dtype.kind != "f":
        return x
    steps = rng.integers(-k, k + 1, a.shape)
    out = a + steps * np.spacing(np.abs(a)).astype(a.dtype)
    return np.where(a == 0, a, out).astype(a.dtype)


def _wrap(fn: Callable[..., Any], rng: np.random.Generator, k: int) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return _nudge(fn(*args, **kwargs), rng, k)

    return wrapped


def shuffled_ties(monkeypatch: Any, seed: int = 0) -> None:
    """Until the test ends, an unstable ``np.argsort`` (no ``kind``, or ``"quicksort"``) of a
    1-D array, or of a 2-D one along its last axis, returns tied values in a random order,
    as another CPU's sort kernel may."""
    rng = np.random.default_rng(seed)
    argsort = np.argsort

    def shuffled(a: Any, axis: int = -1, kind: str | None = None, order: Any = None,
                 **kwargs: Any) -> Any:
        arr = np.asarray(a)
        if kind not in (None, "quicksort") or order is not None or arr.ndim not in (1, 2) \
                or axis not in (-1, arr.ndim - 1):
            return argsort(a, axis=axis, kind=kind, order=order, **kwargs)
        rows = arr.reshape(-1, arr.shape[-1]) if arr.size else arr.reshape(1, -1)
        out = np.empty(rows.shape, dtype=np.intp)
        for r in range(rows.shape[0]):
            noise = rng.random(rows.shape[1])
            out[r] = np.lexsort((noise, rows[r]))  # by value, ties in random order
        return out.reshape(arr.shape)

    monkeypatch.setattr(np, "argsort", shuffled)


def last_bits(monkeypatch: Any, k: int = 2, seed: int = 0) -> None:
    """Perturb, until the test ends, the results of :data:`NUMPY`, :data:`MATH` and the
    library's :data:`LIBRARY` functions by up to ``k`` ulps (random, reproducible), and
    shuffle the ties of unstable sorts (:func:`shuffled_ties`)."""
    shuffled_ties(monkeypatch, seed)
    rng = np.random.default_rng(seed)
    for name in NUMPY:
        monkeypatch.setattr(np, name, _wrap(getattr(np, name), rng, k))
    for name in MATH:
        monkeypatch.setattr(math, name, _wrap(getattr(math, name), rng, k))
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith("abstain.") or mod is None:
            continue
        for name in LIBRARY:
            fn = getattr(mod, name, None)
            if callable(fn):
                monkeypatch.setattr(mod, name, _wrap(fn, rng, k))
