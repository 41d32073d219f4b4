"""Post-hoc OOD detectors on a trained network's logits and features.

Every detector returns one score per input with the library's one direction: **a higher
score means more out-of-distribution** (confidences such as the maximum softmax
probability are negated here, never in the core). A detector works on one kind of input,
named by its class attribute ``inputs``:

- ``"logits"``: :class:`MSP`, :class:`MaxLogit`, :class:`Energy`, :class:`ODIN`, :class:`GEN`
  take the classifier's logits, shape (n, K), and need no fitting;
- ``"features"``: :class:`ReAct`, :class:`KNN`, :class:`ViM`, :class:`Mahalanobis` take the
  penultimate features, shape (n, d), and are fitted on the in-distribution training set;
  ReAct and ViM also need the last linear layer ``logits = features @ weight.T + bias``
  (``weight`` of shape (K, d), ``bias`` of shape (K,)).

All share one protocol: ``fit(X, y=None, *, weight=None, bias=None)`` (arguments a method
does not use are ignored), ``score(X)``, ``score_outputs(outputs)`` (picks
``outputs.logits`` or ``outputs.features``, e.g. from :func:`abstain.torch.extract`), and
``to_json`` with :func:`detector_from_json`. Nothing here needs PyTorch; ODIN's input
perturbation, which needs gradients, is :func:`abstain.torch.odin_logits`.

:class:`DoubleScoreDetector` pairs a misclassification score with an OOD score and tunes
their combination with a reject model of :mod:`abstain.ood` (Franc, Prusa and Paplham,
2023, section 4: KNN+MSP, ViM+MSP).
"""

from __future__ import annotations

import base64
import copy
import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from ._base import ParamsMixin
from ._validation import as_features, check_positive, unit_rows

__all__ = [
    "DETECTORS",
    "GEN",
    "KNN",
    "MSP",
    "ODIN",
    "DoubleScoreDetector",
    "Energy",
    "Mahalanobis",
    "MaxLogit",
    "ReAct",
    "ViM",
    "detector_from_json",
    "make_detector",
]

_FORMAT = "abstain.detector/1"


# --------------------------------------------------------------------------- helpers


def _encode_array(a: NDArray[Any]) -> dict[str, Any]:
    arr = np.ascontiguousarray(a, dtype="<f8")
    return {"shape": list(arr.shape), "float64_le_base64": base64.b64encode(arr.tobytes()).decode()}


def _decode_array(doc: Any, name: str) -> NDArray[np.float64]:
    if not isinstance(doc, dict) or set(doc) != {"shape", "float64_le_base64"}:
        raise ValueError(f"fitted array {name!r} in the detector file is malformed.")
    shape = tuple(int(v) for v in doc["shape"])
    raw = base64.b64decode(doc["float64_le_base64"], validate=True)
    if len(raw) != 8 * math.prod(shape):
        raise ValueError(f"fitted array {name!r} has {len(raw)} bytes for shape {shape}.")
    return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    return int(value)


def _linear_layer(weight: ArrayLike | None, bias: ArrayLike | None, n_features: int,
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
    b = np.asarray(bias, dtype=np.float64)
    if b.shape != (W.shape[0],) or not np.isfinite(b).all():
        raise ValueError(f"bias must be a finite array of shape ({W.shape[0]},); got "
                         f"shape {b.shape}.")
    return W, b


def _neg_max_softmax(logits: NDArray[np.float64], temperature: float) -> NDArray[np.float64]:
    """``-max_k softmax(logits / T)_k``, computed as ``-exp(max - logsumexp)``."""
    z = logits / temperature
    return -np.exp(z.max(axis=1) - logsumexp(z, axis=1))


def _neg_energy(logits: NDArray[np.float64], temperature: float) -> NDArray[np.float64]:
    """The free energy ``-T logsumexp(logits / T)`` (higher = more OOD)."""
    return -temperature * logsumexp(logits / temperature, axis=1)


class Detector(ParamsMixin):
    """Shared protocol of the detectors; see the module docstring."""

    inputs: ClassVar[str] = "logits"
    _ARRAYS: ClassVar[tuple[str, ...]] = ()
    _VALUES: ClassVar[tuple[str, ...]] = ()

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> Detector:
        """Nothing to learn: a logit-based score. Checks ``X`` when given; returns self."""
        if X is not None:
            self._inputs(X)
        return self

    def _inputs(self, X: ArrayLike) -> NDArray[np.float64]:
        arr = as_features(X, self.inputs)
        expected = getattr(self, "n_features_in_", None)
        if expected is not None and arr.shape[1] != expected:
            raise ValueError(f"{self.inputs} must have {expected} columns as in fit; got "
                             f"{arr.shape[1]}.")
        return arr

    def score(self, X: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_outputs(self, outputs: Any) -> NDArray[np.float64]:
        """Score a network's outputs: ``outputs.logits`` or ``outputs.features`` (or keys)."""
        return self.score(_pick(outputs, self.inputs))

    def to_json(self) -> str:
        """Parameters and fitted state as plain JSON; load with :func:`detector_from_json`.

        Arrays are stored as base64 of little-endian float64 bytes (a KNN bank of
        60000 x 128 features takes about 82 MB).
        """
        fitted: dict[str, Any] = {}
        for name in self._ARRAYS:
            if hasattr(self, name):
                fitted[name] = _encode_array(getattr(self, name))
        for name in self._VALUES:
            if hasattr(self, name):
                fitted[name] = getattr(self, name)
        doc = {"format": _FORMAT, "detector": type(self).__name__,
               "params": self.get_params(deep=False), "fitted": fitted}
        return json.dumps(doc, sort_keys=True, allow_nan=False)


def _pick(outputs: Any, field: str) -> Any:
    if isinstance(outputs, Mapping):
        if field not in outputs:
            raise ValueError(f"outputs has no {field!r} entry; got keys {sorted(outputs)}.")
        return outputs[field]
    if not hasattr(outputs, field):
        raise ValueError(f"outputs must have a {field!r} attribute (e.g. abstain.torch.extract"
                         f"'s result) or key; got {type(outputs).__name__}.")
    return getattr(outputs, field)


# ------------------------------------------------------------------ logit-based scores


class MSP(Detector):
    """Maximum softmax probability (Hendrycks and Gimpel, 2017), negated.

    ``score = -max_k softmax(logits / T)_k``. Also the asymptotically best
    misclassification score of a calibrated classifier, hence the ``s_r`` of the
    double-score methods.

    Parameters
    ----------
    temperature : float > 0, default 1 (the paper's plain softmax)

    Examples
    --------
    >>> from abstain.detectors import MSP
    >>> MSP().score([[4.0, 0.0, 0.0], [1.0, 1.0, 1.0]]).round(4)
    array([-0.9647, -0.3333])
    """

    def __init__(self, temperature: float = 1.0) -> None:
        self.temperature = temperature

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        T = check_positive("temperature", self.temperature)
        return _neg_max_softmax(self._inputs(X), T)


class MaxLogit(Detector):
    """Maximum logit score, MLS (Hendrycks et al., 2022), negated: ``-max_k logits_k``.

    No parameters.

    Examples
    --------
    >>> from abstain.detectors import MaxLogit
    >>> MaxLogit().score([[4.0, 0.0], [1.0, 2.0]])
    array([-4., -2.])
    """

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        return -self._inputs(X).max(axis=1)


class Energy(Detector):
    """Free energy (Liu et al., 2020): ``score = -T logsumexp(logits / T)``.

    Parameters
    ----------
    temperature : float > 0, default 1 (the paper's choice)

    Examples
    --------
    >>> from abstain.detectors import Energy
    >>> Energy().score([[0.0, 0.0]]).round(6)
    array([-0.693147])
    """

    def __init__(self, temperature: float = 1.0) -> None:
        self.temperature = temperature

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        return _neg_energy(self._inputs(X), check_positive("temperature", self.temperature))


class ODIN(Detector):
    """ODIN (Liang et al., 2018): temperature-scaled MSP of a perturbed input, negated.

    ``score = -max_k softmax(f(x') / T)_k`` where ``x' = x - epsilon *
    sign(-grad_x log softmax(f(x) / T)_yhat)``. The perturbation needs the network's
    gradient: compute the logits ``f(x')`` with :func:`abstain.torch.odin_logits` using this
    detector's ``temperature`` and ``epsilon`` and pass them to :meth:`score`. On
    unperturbed logits (``epsilon = 0``) the score is the temperature-scaled MSP.

    Parameters
    ----------
    temperature : float > 0, default 1000 (the paper's choice)
    epsilon : float >= 0, default 0.0014
        Perturbation size in the network's input units; the paper tunes it on
        validation data, 0.0014 is its most frequent value. Used by
        ``abstain.torch.odin_logits``, stored here so one object holds the method.

    Examples
    --------
    >>> from abstain.detectors import ODIN
    >>> ODIN(temperature=1000.0).score([[4.0, 0.0], [1.0, 1.0]]).round(6)
    array([-0.501, -0.5  ])
    """

    def __init__(self, temperature: float = 1000.0, epsilon: float = 0.0014) -> None:
        self.temperature = temperature
        self.epsilon = epsilon

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of (perturbed) logits ``X``, shape (n, K) -> (n,)."""
        check_positive("epsilon", self.epsilon, allow_zero=True)
        return _neg_max_softmax(self._inputs(X), check_positive("temperature",
                                                                self.temperature))


class GEN(Detector):
    """Generalised entropy, GEN (Liu, Lochman and Zach, 2023).

    ``score = sum over the top_m largest p_k of p_k^gamma (1 - p_k)^gamma`` with
    ``p = softmax(logits)``: larger for flatter predictions, so higher = more OOD.

    Parameters
    ----------
    gamma : float in (0, 1], default 0.1 (the paper's choice)
    top_m : int >= 1, default 100 (the paper's choice for 1000 classes); at most K is used

    Examples
    --------
    >>> from abstain.detectors import GEN
    >>> GEN(top_m=2).score([[5.0, 0.0, 0.0], [1.0, 1.0, 1.0]]).round(4)
    array([1.2536, 1.7207])
    """

    def __init__(self, gamma: float = 0.1, top_m: int = 100) -> None:
        self.gamma = gamma
        self.top_m = top_m

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        gamma = check_positive("gamma", self.gamma)
        if gamma > 1:
            raise ValueError(f"gamma must be in (0, 1]; got {self.gamma!r}.")
        m = _check_int("top_m", self.top_m, 1)
        z = self._inputs(X)
        p = np.exp(z - logsumexp(z, axis=1, keepdims=True))
        k = min(m, p.shape[1])
        top = -np.partition(-p, k - 1, axis=1)[:, :k] if k < p.shape[1] else p
        return np.sum(top**gamma * (1.0 - top) ** gamma, axis=1)


# ---------------------------------------------------------------- feature-based scores


class ReAct(Detector):
    """ReAct (Sun, Guo and Li, 2021): energy of the logits of clipped features.

    ``score = -T logsumexp((min(features, c) @ weight.T + bias) / T)`` where ``c`` is the
    ``percentile``-th percentile of all entries of the ID training features.

    Parameters
    ----------
    percentile : float in (0, 100], default 90 (the paper's choice)
    temperature : float > 0, default 1

    Attributes
    ----------
    threshold_ : float
        The clipping value ``c``.
    weight_, bias_ : ndarray of shape (K, d) and (K,)

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import ReAct
    >>> F = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    >>> det = ReAct(percentile=50).fit(F, weight=np.eye(2))
    >>> float(det.threshold_), det.score([[10.0, 0.0]]).round(4)
    (2.5, array([-2.5789]))
    """

    inputs = "features"
    _ARRAYS = ("weight_", "bias_")
    _VALUES = ("threshold_", "n_features_in_")

    def __init__(self, percentile: float = 90.0, temperature: float = 1.0) -> None:
        self.percentile = percentile
        self.temperature = temperature

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> ReAct:
        """Fit on ID training features ``X`` (n, d) and the last layer ``weight``, ``bias``."""
        if X is None:
            raise ValueError("ReAct.fit needs the ID training features X.")
        q = float(self.percentile)
        if not 0 < q <= 100:
            raise ValueError(f"percentile must be in (0, 100]; got {self.percentile!r}.")
        F = as_features(X, "features")
        self.weight_, self.bias_ = _linear_layer(weight, bias, F.shape[1], "ReAct")
        self.threshold_ = float(np.percentile(F, q))
        self.n_features_in_ = int(F.shape[1])
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("threshold_")
        T = check_positive("temperature", self.temperature)
        F = np.minimum(self._inputs(X), self.threshold_)
        return _neg_energy(F @ self.weight_.T + self.bias_, T)


class KNN(Detector):
    """Deep nearest neighbours (Sun, Ming, Zhu and Li, 2022): distance to the k-th neighbour.

    ``score(x)`` is the Euclidean distance from ``x`` to its ``k``-th nearest ID
    training feature; with ``normalize=True`` (the paper's choice) every feature is
    first scaled to unit L2 norm. Distances are computed exactly, by blocks of the
    matrix product, in O(n_test * n_train * d) time and ``block`` x ``n_train`` memory.
    Equal distances are counted with multiplicity.

    Parameters
    ----------
    k : int >= 1, default 50 (the paper's choice for CIFAR-10 with the full training set)
    normalize : bool, default True
    block : int, default 1024
        Test rows per block.

    Attributes
    ----------
    bank_ : ndarray of shape (n_train, d)
        The (normalised) training features.

    Examples
    --------
    >>> from abstain.detectors import KNN
    >>> det = KNN(k=1, normalize=False).fit([[0.0, 0.0], [3.0, 4.0]])
    >>> det.score([[0.0, 1.0], [3.0, 3.0]])
    array([1., 1.])
    """

    inputs = "features"
    _ARRAYS = ("bank_",)
    _VALUES = ("n_features_in_",)

    def __init__(self, k: int = 50, normalize: bool = True, block: int = 1024) -> None:
        self.k = k
        self.normalize = normalize
        self.block = block

    def _prepare(self, F: NDArray[np.float64]) -> NDArray[np.float64]:
        return unit_rows(F, "KNN with normalize=True") if self.normalize else F

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> KNN:
        """Store the ID training features ``X`` (n, d)."""
        if X is None:
            raise ValueError("KNN.fit needs the ID training features X.")
        k = _check_int("k", self.k, 1)
        F = as_features(X, "features")
        if k > F.shape[0]:
            raise ValueError(f"k must be at most the number of training rows ({F.shape[0]}); "
                             f"got {k}.")
        self.bank_ = self._prepare(F)
        self.n_features_in_ = int(F.shape[1])
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("bank_")
        k = _check_int("k", self.k, 1)
        block = _check_int("block", self.block, 1)
        if k > self.bank_.shape[0]:
            raise ValueError(f"k must be at most the number of training rows "
                             f"({self.bank_.shape[0]}); got {k}.")
        Q = self._prepare(self._inputs(X))
        bank = self.bank_
        bank_sq = np.einsum("ij,ij->i", bank, bank)
        out = np.empty(Q.shape[0])
        for start in range(0, Q.shape[0], block):
            q = Q[start : start + block]
            # squared distance up to the row constant |q|^2: |t|^2 - 2 q.t
            d = bank_sq[None, :] - 2.0 * (q @ bank.T)
            kth = np.partition(d, k - 1, axis=1)[:, k - 1]
            out[start : start + block] = kth + np.einsum("ij,ij->i", q, q)
        return np.sqrt(np.maximum(out, 0.0))


def _default_vim_dim(n_features: int) -> int:
    if n_features >= 2048:
        return 1000
    if n_features >= 768:
        return 512
    return max(1, n_features // 2)


class ViM(Detector):
    """Virtual-logit matching, ViM (Wang, Li, Feng and Zhang, 2022).

    With the origin ``u = -pinv(weight) @ bias``, the principal subspace is spanned by
    the ``dim`` leading eigenvectors of the uncentred covariance of ``features - u``
    on the ID training set (``numpy.linalg.eigh``); the residual is the projection on
    the other eigenvectors. ``alpha = mean max-logit / mean residual norm`` on the
    training set, and ``score = alpha * ||residual(x)|| - logsumexp(logits(x))``: the
    negated ViM score (the energy of the logits plus the virtual logit).

    Parameters
    ----------
    dim : int or None, default None
        Dimension ``D`` of the principal subspace, ``1 <= D < d``. None: 1000 for
        ``d >= 2048`` and 512 for ``d >= 768`` (the paper's choices for its backbones),
        else ``d // 2`` (as OpenOOD uses 256 for 512-d ResNet-18 features).

    Attributes
    ----------
    origin_ : ndarray (d,)
    residual_basis_ : ndarray (d, d - D)
    alpha_ : float
    weight_, bias_ : ndarray (K, d), (K,)

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import ViM
    >>> rng = np.random.default_rng(0)
    >>> F = rng.normal(size=(200, 4)) * [3.0, 3.0, 0.1, 0.1]
    >>> det = ViM(dim=2).fit(F, weight=rng.normal(size=(3, 4)))
    >>> s = det.score([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 5.0, 5.0]])
    >>> bool(s[1] > s[0])
    True
    """

    inputs = "features"
    _ARRAYS = ("weight_", "bias_", "origin_", "residual_basis_")
    _VALUES = ("alpha_", "dim_", "n_features_in_")

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> ViM:
        """Fit on ID training features ``X`` (n, d) and the last layer ``weight``, ``bias``."""
        if X is None:
            raise ValueError("ViM.fit needs the ID training features X.")
        F = as_features(X, "features")
        d = F.shape[1]
        if d < 2:
            raise ValueError("ViM needs at least 2 feature dimensions; got 1.")
        D = _default_vim_dim(d) if self.dim is None else _check_int("dim", self.dim, 1)
        if D >= d:
            raise ValueError(f"dim must be smaller than the feature dimension {d}; got {D}.")
        W, b = _linear_layer(weight, bias, d, "ViM")
        u = -np.linalg.pinv(W) @ b
        C = F - u
        evals, evecs = np.linalg.eigh(C.T @ C / C.shape[0])
        order = np.argsort(-evals, kind="stable")
        R = evecs[:, order[D:]]
        vlogit = np.linalg.norm(C @ R, axis=1)
        logits = F @ W.T + b
        mean_v = float(vlogit.mean())
        if mean_v <= 0:
            raise ValueError("ViM: the training features have no residual beyond the "
                             f"{D}-dimensional principal subspace; choose a smaller dim.")
        self.weight_, self.bias_, self.origin_, self.residual_basis_ = W, b, u, R
        self.alpha_ = float(logits.max(axis=1).mean()) / mean_v
        self.dim_ = D
        self.n_features_in_ = d
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("alpha_")
        F = self._inputs(X)
        vlogit = np.linalg.norm((F - self.origin_) @ self.residual_basis_, axis=1)
        energy = logsumexp(F @ self.weight_.T + self.bias_, axis=1)
        return self.alpha_ * vlogit - energy


class Mahalanobis(Detector):
    """Class-conditional Gaussians with a shared covariance (Lee, Lee, Lee and Shin, 2018).

    ``score(x) = min_c (x - m_c)^T S^+ (x - m_c)``: the squared Mahalanobis distance to
    the nearest class mean, with the class means ``m_c`` and the pooled within-class
    covariance ``S`` of the ID training features. ``S^+`` is the pseudo-inverse from
    ``numpy.linalg.eigh``: eigenvalues at most ``rcond * max eigenvalue`` are dropped.
    The paper's input preprocessing and layer ensemble are not part of this score.

    Parameters
    ----------
    rcond : float >= 0, default 1e-10

    Attributes
    ----------
    classes_ : list
    means_ : ndarray (n_classes, d)
    whitener_ : ndarray (d, r)
        ``S^+ = whitener_ @ whitener_.T``.

    Examples
    --------
    >>> from abstain.detectors import Mahalanobis
    >>> X = [[0.0, 0.0], [2.0, 0.0], [10.0, 1.0], [12.0, -1.0]]
    >>> det = Mahalanobis().fit(X, [0, 0, 1, 1])
    >>> det.means_.tolist(), det.score([[1.0, 0.0], [6.0, 0.0]]).round(3).tolist()
    ([[1.0, 0.0], [11.0, 0.0]], [0.0, 50.0])
    """

    inputs = "features"
    _ARRAYS = ("means_", "whitener_")
    _VALUES = ("classes_", "n_features_in_")

    def __init__(self, rcond: float = 1e-10) -> None:
        self.rcond = rcond

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> Mahalanobis:
        """Fit class means and the shared covariance on ID features ``X`` and labels ``y``."""
        if X is None or y is None:
            raise ValueError("Mahalanobis.fit needs the ID training features X and labels y.")
        rcond = check_positive("rcond", self.rcond, allow_zero=True)
        F = as_features(X, "features")
        labels = np.asarray(y)
        if labels.shape != (F.shape[0],):
            raise ValueError(f"y must have shape ({F.shape[0]},) to match X; got "
                             f"{labels.shape}.")
        classes, inv = np.unique(labels, return_inverse=True)
        inv = inv.reshape(-1)
        counts = np.bincount(inv)
        means = np.zeros((classes.size, F.shape[1]))
        np.add.at(means, inv, F)
        means /= counts[:, None]
        C = F - means[inv]
        evals, evecs = np.linalg.eigh(C.T @ C / F.shape[0])
        keep = evals > rcond * max(float(evals.max()), 0.0)
        if not np.any(keep):
            raise ValueError("Mahalanobis: the within-class covariance is zero (every class "
                             "has identical features).")
        self.classes_ = classes.tolist()
        self.means_ = means
        self.whitener_ = evecs[:, keep] / np.sqrt(evals[keep])
        self.n_features_in_ = int(F.shape[1])
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("whitener_")
        Z = self._inputs(X) @ self.whitener_
        M = self.means_ @ self.whitener_
        d2 = (np.einsum("ij,ij->i", Z, Z)[:, None] - 2.0 * Z @ M.T
              + np.einsum("ij,ij->i", M, M)[None, :])
        return np.maximum(d2.min(axis=1), 0.0)


class DoubleScoreDetector(ParamsMixin):
    """A double-score selector: a misclassification score with an OOD score.

    Section 4 of Franc, Prusa and Paplham (2023): the selector thresholds
    ``s_r(x) + mu * s_g(x)`` (more precisely ``cos(a) s_r + sin(a) s_g``), where ``s_r``
    detects misclassified ID inputs (default :class:`MSP`) and ``s_g`` detects OOD
    inputs (default :class:`KNN`); the paper's KNN+MSP and ViM+MSP. The direction and
    threshold are tuned post hoc by a reject model of :mod:`abstain.ood` on a
    validation sample of ID and OOD inputs.

    Each score is divided by its standard deviation on the ID data given to :meth:`fit`
    before the two are combined. This changes no ranking that a direction can express;
    it only makes the grid of directions (``search="grid"``) equally fine on both scores.

    Parameters
    ----------
    misclassification : Detector or None
        ``s_r``; None means ``MSP()``.
    ood : Detector or None
        ``s_g``; None means ``KNN()``.
    selector : an abstain.ood reject model or None
        Fitted (a clone of it) by :meth:`tune`; None means ``BoundedTPRFPR()``.

    Attributes
    ----------
    misclassification_, ood_ : Detector
        The fitted detectors.
    scale_ : ndarray (2,)
        Standard deviations of the two scores on the fitting data.
    selector_ : the tuned reject model (after :meth:`tune`)

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import DoubleScoreDetector, MSP, KNN
    >>> from abstain.ood import BoundedTPRFPR
    >>> rng = np.random.default_rng(0)
    >>> W = np.eye(2)
    >>> def outputs(features):
    ...     return {"features": features, "logits": features @ W.T}
    >>> train = rng.normal(size=(300, 2)) + [2.0, 0.0]
    >>> det = DoubleScoreDetector(MSP(), KNN(k=5), BoundedTPRFPR(tpr=0.8, fpr=0.2))
    >>> det = det.fit(outputs(train))
    >>> val = np.vstack([rng.normal(size=(200, 2)) + [2.0, 0.0],
    ...                  rng.normal(size=(200, 2)) * 0.3 + [-3.0, 4.0]])
    >>> is_ood = np.repeat([False, True], 200)
    >>> losses = (val[:, 1] > val[:, 0]).astype(float)   # the ID classifier's 0/1 loss
    >>> det = det.tune(outputs(val), is_ood, losses)
    >>> det.selector_.feasible_, det.selector_.fpr_ <= 0.2, det.selector_.tpr_ >= 0.8
    (True, True, True)
    >>> det.accept(outputs(np.array([[2.0, 0.0], [-3.0, 4.0]]))).tolist()
    [True, False]
    """

    def __init__(self, misclassification: Detector | None = None, ood: Detector | None = None,
                 selector: Any = None) -> None:
        self.misclassification = misclassification
        self.ood = ood
        self.selector = selector

    def fit(self, outputs: Any, labels: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None
            ) -> DoubleScoreDetector:
        """Fit both detectors on the ID training outputs (``logits`` and/or ``features``).

        ``outputs`` is an object with ``logits`` / ``features`` attributes (such as
        :func:`abstain.torch.extract`'s result) or a dict with those keys; each detector
        reads the one it needs.
        """
        r = MSP() if self.misclassification is None else self.misclassification
        g = KNN() if self.ood is None else self.ood
        for name, det in (("misclassification", r), ("ood", g)):
            if not isinstance(det, Detector):
                raise ValueError(f"{name} must be a detector of abstain.detectors; got "
                                 f"{type(det).__name__}.")
        self.misclassification_ = copy.deepcopy(r).fit(_pick(outputs, r.inputs), labels,
                                                        weight=weight, bias=bias)
        self.ood_ = copy.deepcopy(g).fit(_pick(outputs, g.inputs), labels,
                                         weight=weight, bias=bias)
        raw = self._raw(outputs)
        scale = raw.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        return self

    def _raw(self, outputs: Any) -> NDArray[np.float64]:
        s_r = self.misclassification_.score_outputs(outputs)
        s_g = self.ood_.score_outputs(outputs)
        if s_r.shape != s_g.shape:
            raise ValueError(f"the two scores have {s_r.shape[0]} and {s_g.shape[0]} rows; "
                             "logits and features must describe the same inputs.")
        return np.stack([s_r, s_g], axis=1)

    def scores(self, outputs: Any) -> NDArray[np.float64]:
        """The two scaled columns ``(s_r, s_g)``, shape (n, 2), higher = reject first."""
        self._check_fitted("scale_")
        return self._raw(outputs) / self.scale_

    def tune(self, outputs: Any, is_ood: ArrayLike, losses: ArrayLike, *,
             sample_weight: ArrayLike | None = None) -> DoubleScoreDetector:
        """Fit (a copy of) the selector on a validation sample of ID and OOD outputs.

        ``losses`` are the classifier's losses on the ID rows (OOD entries ignored).
        """
        from .ood import BoundedTPRFPR

        sel = BoundedTPRFPR() if self.selector is None else copy.deepcopy(self.selector)
        self.selector_ = sel.fit(self.scores(outputs), is_ood, losses,
                                 sample_weight=sample_weight)
        return self

    def score(self, outputs: Any) -> NDArray[np.float64]:
        """The tuned combined score ``cos(a) s_r + sin(a) s_g`` (scaled), shape (n,)."""
        self._check_fitted("selector_")
        return np.asarray(self.selector_.score(self.scores(outputs)))

    def accept_proba(self, outputs: Any) -> NDArray[np.float64]:
        """Acceptance probability of the tuned selector, shape (n,)."""
        self._check_fitted("selector_")
        return np.asarray(self.selector_.accept_proba(self.scores(outputs)))

    def accept(self, outputs: Any) -> NDArray[np.bool_]:
        """Accept (True) or reject; ties drawn with the selector's ``random_state``."""
        self._check_fitted("selector_")
        return np.asarray(self.selector_.accept(self.scores(outputs)))

    def to_json(self) -> str:
        """Both fitted detectors, the scales and the tuned selector as plain JSON.

        Load with :meth:`from_json`.
        """
        self._check_fitted("selector_")
        doc = {"format": "abstain.double-score/1",
               "misclassification": json.loads(self.misclassification_.to_json()),
               "ood": json.loads(self.ood_.to_json()),
               "scale": [float(v) for v in self.scale_],
               "selector": json.loads(self.selector_.to_json())}
        return json.dumps(doc, sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> DoubleScoreDetector:
        """Load a detector written by :meth:`to_json`; only plain JSON is parsed."""
        from .ood import selector_from_json

        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("format") != "abstain.double-score/1":
            raise ValueError("text must be a JSON double-score detector written by to_json "
                             "(format 'abstain.double-score/1').")
        r = detector_from_json(json.dumps(doc["misclassification"]))
        g = detector_from_json(json.dumps(doc["ood"]))
        sel = selector_from_json(json.dumps(doc["selector"]))
        out = cls(misclassification=r, ood=g, selector=sel)
        out.misclassification_, out.ood_, out.selector_ = r, g, sel
        scale = np.asarray(doc["scale"], dtype=np.float64)
        if scale.shape != (2,) or not np.all(scale > 0):
            raise ValueError("scale in the double-score file must be two positive numbers.")
        out.scale_ = scale
        return out


DETECTORS: dict[str, type[Detector]] = {
    "msp": MSP,
    "mls": MaxLogit,
    "energy": Energy,
    "odin": ODIN,
    "gen": GEN,
    "react": ReAct,
    "knn": KNN,
    "vim": ViM,
    "mahalanobis": Mahalanobis,
}


def make_detector(name: str, **params: Any) -> Detector:
    """A detector by its short name (a key of :data:`DETECTORS`), e.g. ``"knn"``.

    >>> from abstain.detectors import make_detector
    >>> make_detector("knn", k=10)
    KNN(k=10, normalize=True, block=1024)
    """
    key = str(name).lower()
    if key not in DETECTORS:
        raise ValueError(f"unknown detector {name!r}; known: {', '.join(DETECTORS)}.")
    return DETECTORS[key](**params)


def detector_from_json(text: str) -> Detector:
    """Load a detector written by ``to_json``; only plain JSON is parsed, no code runs.

    >>> from abstain.detectors import KNN, detector_from_json
    >>> det = KNN(k=1).fit([[1.0, 0.0], [0.0, 1.0]])
    >>> detector_from_json(det.to_json()).score([[1.0, 0.1]]).round(4)
    array([0.0996])
    """
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(f"text must be a JSON detector written by to_json (format {_FORMAT!r}).")
    classes = {cls.__name__: cls for cls in DETECTORS.values()}
    name = doc.get("detector")
    if name not in classes:
        raise ValueError(f"detector must be one of {sorted(classes)}; got {name!r}.")
    det = classes[name](**doc.get("params", {}))
    for key, value in doc.get("fitted", {}).items():
        if key in det._ARRAYS:
            setattr(det, key, _decode_array(value, key))
        elif key in det._VALUES:
            setattr(det, key, value)
        else:
            raise ValueError(f"unknown fitted attribute {key!r} for {name}.")
    return det
