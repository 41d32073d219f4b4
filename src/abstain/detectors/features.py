"""Detectors on penultimate features, fitted on in-distribution training data: ReAct, KNN,
ViM, Mahalanobis."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from .._core.serialize import Array, Int, Labels, Number, serializable
from .._core.validation import as_features, check_bool, check_int, check_positive, unit_rows
from .base import Detector, linear_layer
from .logits import neg_energy


@serializable("detector")
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
    _FIELDS = {
        "n_features_in_": Int(1, dim="d"),
        "weight_": Array(("K", "d")),
        "bias_": Array(("K",)),
        "threshold_": Number(),
    }

    def __init__(self, percentile: float = 90.0, temperature: float = 1.0) -> None:
        self.percentile = percentile
        self.temperature = temperature

    def _validate_params(self) -> None:
        q = self.percentile
        if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating)) \
                or not 0 < q <= 100:
            raise ValueError(f"percentile must be in (0, 100]; got {self.percentile!r}.")
        check_positive("temperature", self.temperature)

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> ReAct:
        """Fit on ID training features ``X`` (n, d) and the last layer ``weight``, ``bias``."""
        if X is None:
            raise ValueError("ReAct.fit needs the ID training features X.")
        self._validate_params()
        q = float(self.percentile)
        F = as_features(X, "features")
        self.weight_, self.bias_ = linear_layer(weight, bias, F.shape[1], "ReAct")
        self.threshold_ = float(np.percentile(F, q))
        self.n_features_in_ = int(F.shape[1])
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("threshold_")
        self._validate_params()
        T = float(self.temperature)
        F = np.minimum(self._inputs(X), self.threshold_)
        return neg_energy(F @ self.weight_.T + self.bias_, T)


@serializable("detector")
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
    _FIELDS = {"n_features_in_": Int(1, dim="d"), "bank_": Array((None, "d"))}

    def __init__(self, k: int = 50, normalize: bool = True, block: int = 1024) -> None:
        self.k = k
        self.normalize = normalize
        self.block = block

    def _validate_params(self) -> None:
        check_int("k", self.k, 1)
        check_bool("normalize", self.normalize)
        check_int("block", self.block, 1)

    def _prepare(self, F: NDArray[np.float64]) -> NDArray[np.float64]:
        return unit_rows(F, "KNN with normalize=True") if self.normalize else F

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> KNN:
        """Store the ID training features ``X`` (n, d)."""
        if X is None:
            raise ValueError("KNN.fit needs the ID training features X.")
        self._validate_params()
        k = int(self.k)
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
        self._validate_params()
        k, block = int(self.k), int(self.block)
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


@serializable("detector")
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
    _FIELDS = {
        "n_features_in_": Int(2, dim="d"),
        "dim_": Int(1),
        "weight_": Array(("K", "d")),
        "bias_": Array(("K",)),
        "origin_": Array(("d",)),
        "residual_basis_": Array(("d", None)),
        "alpha_": Number(),
    }

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def _validate_params(self) -> None:
        if self.dim is not None:
            check_int("dim", self.dim, 1)

    def _after_load(self) -> None:
        d = self.n_features_in_
        if self.residual_basis_.shape[1] != d - self.dim_:
            raise ValueError(f"fitted.residual_basis_ must have shape ({d}, {d - self.dim_}) "
                             f"for fitted.dim_ = {self.dim_}; got {self.residual_basis_.shape}.")

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> ViM:
        """Fit on ID training features ``X`` (n, d) and the last layer ``weight``, ``bias``."""
        if X is None:
            raise ValueError("ViM.fit needs the ID training features X.")
        F = as_features(X, "features")
        d = F.shape[1]
        if d < 2:
            raise ValueError("ViM needs at least 2 feature dimensions; got 1.")
        self._validate_params()
        D = _default_vim_dim(d) if self.dim is None else int(self.dim)
        if D >= d:
            raise ValueError(f"dim must be smaller than the feature dimension {d}; got {D}.")
        W, b = linear_layer(weight, bias, d, "ViM")
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


@serializable("detector")
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
    _FIELDS = {
        "n_features_in_": Int(1, dim="d"),
        "classes_": Labels(length="c", min_length=1, convert=list),
        "means_": Array(("c", "d")),
        "whitener_": Array(("d", None)),
    }

    def __init__(self, rcond: float = 1e-10) -> None:
        self.rcond = rcond

    def _validate_params(self) -> None:
        check_positive("rcond", self.rcond, allow_zero=True)

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> Mahalanobis:
        """Fit class means and the shared covariance on ID features ``X`` and labels ``y``."""
        if X is None or y is None:
            raise ValueError("Mahalanobis.fit needs the ID training features X and labels y.")
        self._validate_params()
        rcond = float(self.rcond)
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
