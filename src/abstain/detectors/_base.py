"""The detector protocol: ``fit`` on in-distribution outputs, ``score`` new ones (higher =
more OOD)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import NamedFeatures, ParamsMixin
from .._core.schema import Int
from .._core.serialize import Field, dumps
from .._core.validation import as_features, as_real_array, as_scores, check_columns


def linear_layer(weight: ArrayLike | None, bias: ArrayLike | None, n_features: int,
                  method: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate the last layer ``(weight (K, d), bias (K,))``; bias defaults to zeros."""
    if weight is None:
        raise ValueError(f"{method} needs the last linear layer: pass weight= of shape "
                         f"(n_classes, {n_features}) (and bias= of shape (n_classes,)).")
    W = as_features(weight, "weight")
    if W.shape[1] != n_features:
        raise ValueError(f"weight must have shape (n_classes, {n_features}) to match the "
                         f"features; got {W.shape}.")
    if bias is None:
        return W, np.zeros(W.shape[0])
    b = as_real_array(bias, "bias")
    if b.shape != (W.shape[0],):
        raise ValueError(f"bias must be a finite array of shape ({W.shape[0]},); got "
                         f"shape {b.shape}.")
    return W, as_scores(b, "bias")  # the finiteness check, with its count of NaN and inf


def row_norms(F: NDArray[np.float64]) -> NDArray[np.float64]:
    """The L2 norm of every row (last axis) of ``F``, finite wherever the norm itself is: a
    row whose sum of squares leaves the normal range (it overflows, or underflows and loses
    digits) is divided by its largest entry first (``np.linalg.norm`` returned inf near
    1e160 and 0 near 1e-170)."""
    with np.errstate(over="ignore", under="ignore"):
        norm = np.linalg.norm(F, axis=-1)
        info = np.finfo(F.dtype)
        odd = ~(norm >= np.sqrt(info.tiny) / info.eps) | ~np.isfinite(norm)
        if np.any(odd):
            top = np.max(np.abs(F[odd]), axis=-1)
            safe = np.where(top > 0, top, 1.0)
            norm[odd] = top * np.linalg.norm(F[odd] / safe[..., None], axis=-1)
    return norm


def unit_rows(F: NDArray[np.float64], who: str) -> NDArray[np.float64]:
    """``F`` with every row (last axis) scaled to unit L2 norm; a zero row is an error.
    A row whose sum of squares leaves the normal range of ``F``'s type (it overflows, or
    underflows and loses digits) is divided by its largest entry first."""
    with np.errstate(over="ignore", under="ignore"):  # such rows are taken again below
        norm = np.linalg.norm(F, axis=-1, keepdims=True)
    info = np.finfo(F.dtype)
    odd = ~(norm >= np.sqrt(info.tiny) / info.eps) | ~np.isfinite(norm)
    if np.any(odd):
        rows = np.flatnonzero(odd.reshape(-1))
        flat = F.reshape(-1, F.shape[-1])
        top = np.max(np.abs(flat[rows]), axis=-1, keepdims=True)
        if np.any(top == 0):
            # in float32, features below its range (about 1.4e-45) were 0 when cast to it
            hint = ("" if F.dtype != np.float32 else " in float32 (where features below "
                    "about 1.4e-45 are 0: if those rows are not all zero, multiply the "
                    "features by a constant, or use dtype='float64')")
            raise ValueError(f"{who} cannot scale a feature vector of norm 0{hint}; "
                             f"got {int(np.count_nonzero(top == 0))} such row(s).")
        scaled = flat[rows] / top
        norm = norm.reshape(-1, 1).copy()
        norm[rows] = 1.0
        out = flat / norm
        out[rows] = scaled / np.linalg.norm(scaled, axis=-1, keepdims=True)
        return out.reshape(F.shape)
    return F / norm


def unit_rows_or_zero(F: NDArray[np.float64], who: str,
                      norm: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """:func:`unit_rows` of the rows of ``F`` that are not all zero; a zero row, which has
    no direction, stays 0 (a cosine of 0). ``norm``: :func:`row_norms` of ``F`` where the
    caller has them."""
    nonzero = (row_norms(F) if norm is None else norm) > 0
    unit = np.zeros(F.shape)
    unit[nonzero] = unit_rows(F[nonzero], who)
    return unit


class Detector(NamedFeatures, ParamsMixin):
    """Shared protocol of the detectors; see the module docstring."""

    inputs: ClassVar[str] = "logits"
    # a logit detector fitted on logits refuses another width, after a round trip too
    _FIELDS: dict[str, Field] = {"n_features_in_": Int(1, 2**31 - 1, optional=True)}

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> Detector:
        """Nothing to learn: a logit-based score. Checks ``X`` when given and then refuses
        logits of another width in ``score``; returns self."""
        self._validate_params()
        self.__dict__.pop("n_features_in_", None)
        self._fit_names(X)
        if X is not None:
            self.n_features_in_ = int(self._inputs(X).shape[1])
        return self

    def _inputs(self, X: ArrayLike, dtype: Any = np.float64) -> NDArray[Any]:
        self._check_names(X)
        arr = as_features(X, self.inputs, dtype)
        expected = getattr(self, "n_features_in_", None)
        if expected is not None:
            check_columns(self.inputs, arr, int(expected))
        return arr

    def score(self, X: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_outputs(self, outputs: Any) -> NDArray[np.float64]:
        """Score a network's outputs: ``outputs.logits`` or ``outputs.features`` (or keys)."""
        return self.score(pick_output(outputs, self.inputs))

    def to_json(self) -> str:
        """Parameters and fitted state as plain JSON; load with :func:`abstain.load_json`.

        Arrays are stored as base64 of little-endian float64 bytes (a KNN bank of
        60000 x 128 features takes about 82 MB).
        """
        return dumps(self)


def squares_normal(C: NDArray[Any], who: str, dt: Any, also: str = "",
                   wider: Callable[[], NDArray[Any]] | None = None) -> None:
    """Refuse centred features ``C`` whose squares leave the normal range of ``dt`` with its
    digits: distances and covariances of round-off (KNN 2e-4 off at 1e-160, 0 at 1e-165).
    ``wider``: features before ``dt`` rounded them (those it made 0: below its range),
    whose spread counts where ``C`` is all zero."""
    low, spread = math.sqrt(np.finfo(dt).tiny / np.finfo(dt).eps), float(np.max(np.abs(C)))
    if spread == 0.0 and wider is not None:
        W = np.asarray(wider(), dtype=np.float64)  # max - min: no round-off of a mean
        spread = float(np.max(np.ptp(W, axis=0)))
    if 0.0 < spread < low:
        raise ValueError(f"{who}: the features vary by at most {spread:.3g} (below {low:.3g}), "
                         f"so their squares lose digits in {dt.name}; multiply them by a "
                         f"constant{also}.")


def label_classes(labels: NDArray[Any]) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """The sorted distinct labels and each row's index among them, or a one-line
    ``ValueError`` for labels of mixed kinds (numbers beside strings, None), which have no
    order."""
    odd = [v for v in labels.tolist() if not isinstance(v, (str, int, float))]
    try:
        if odd:
            raise TypeError
        classes, inv = np.unique(labels, return_inverse=True)
    except TypeError:
        raise ValueError("y must hold class labels of one kind, all numbers or all "
                         f"strings; got {labels.dtype.name} values such as "
                         f"{(odd or labels.tolist())[0]!r}.") from None
    return classes, inv.reshape(-1)


def pick_output(outputs: Any, field: str) -> Any:
    if isinstance(outputs, Mapping):
        if field not in outputs:
            raise ValueError(f"outputs has no {field!r} entry; got keys {sorted(outputs)}.")
        return outputs[field]
    if not hasattr(outputs, field):
        raise ValueError(f"outputs must have a {field!r} attribute (e.g. abstain.torch.extract"
                         f"'s result) or key; got {type(outputs).__name__}.")
    return getattr(outputs, field)


def row_means(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """The mean of each row of ``a``: its correctly rounded sum (``math.fsum``, so the same
    in any order of the row and any memory layout; a plain mean's last bits changed with
    both) over its length, in units of a power of two near its largest magnitude (no
    overflow near the float maximum: logits or norms of 1e308)."""
    unit = np.ldexp(1.0, np.frexp(np.max(np.abs(a), axis=1))[1] - 1)  # exact scaling
    sums = np.array([math.fsum(row) for row in (a / unit[:, None]).tolist()])
    return unit * (sums / a.shape[1])


# ------------------------------------------------------ kernels of the shifted base scores
def max_cosine(Q: NDArray[np.float64], bank: NDArray[np.float64],
               block: int) -> NDArray[np.float64]:
    """Exact ``max_i <q, bank_i>`` of unit rows, by blocks of the matrix product."""
    if block < 1:
        raise ValueError(f"block must be >= 1; got {block}.")
    out = np.empty(Q.shape[0])
    for start in range(0, Q.shape[0], block):
        out[start:start + block] = (Q[start:start + block] @ bank.T).max(axis=1)
    return np.minimum(out, 1.0)


def svm_gamma(F: NDArray[np.float64], gamma: float | str) -> float:
    if isinstance(gamma, str):
        var = float(F.var())
        return 1.0 / (F.shape[1] * var) if var > 0 else 1.0
    return float(gamma)


def ocsvm_decision(X: NDArray[np.float64], part: dict[str, Any], block: int) -> NDArray[np.float64]:
    """``sum_i a_i exp(-gamma ||sv_i - x||^2) - rho``: sklearn's decision_function."""
    sv, coef, g = part["support"], part["dual_coef"], part["gamma"]
    sv_sq = np.einsum("ij,ij->i", sv, sv)
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], block):
        q = X[start:start + block]
        with np.errstate(over="ignore", invalid="ignore"):  # refused just below
            d2 = np.einsum("ij,ij->i", q, q)[:, None] - 2.0 * q @ sv.T + sv_sq
        # inf - inf, or -inf where 2 q.sv alone overflowed: no distance to compare (+inf is
        # a distance beyond float64, a kernel of 0)
        if np.any(np.isnan(d2) | (d2 == -np.inf)):
            raise ValueError("supocsvm: the squared distances between the features and the "
                             "support vectors overflow float64 (entries beyond about 1e154); "
                             "scale the features down.")
        out[start:start + block] = np.exp(-g * np.maximum(d2, 0.0)) @ coef
    return out - part["rho"]
