"""Base scores of a joint class x rotation network, per rotation (section 3.4 of the paper).

Reehorst and Schniter, "Score combining for contrastive OOD detection", section 3.4,
combine ``m = 6 x |T| = 24`` base scores ("glrt-SupCSI+", Table 1) computed on each
rotated copy ``R_j(x)`` of an input, ``j = 0..|T|-1``. This module computes them from
arrays that a network has already produced (NumPy only; :mod:`abstain.torch` extracts
them), one column per (kind, shift), in the order ``kind``-major then shift:

============  ====================================================  ===================
column        value (higher = more OOD)                             paper
============  ====================================================  ===================
``cos_J``     ``-max_i cos(h(R_j x), h(R_j x_i))`` over training    ``s_cos,j``, eq. (3)
``norm_J``    ``-||h(R_j x)||``                                     ``s_norm,j``, eq. (4)
``shift_J``   ``-log sum_k softmax(l(R_j x))[k*T + j]``             ``s_shift,j``, eq. (5)
``supcsi_J``  ``-max_k softmax(l(R_j x)[j::T])_k``                  ``s_supCSI,j``, eq. (25)
``supocsvm_J`` ``-max_k [sum_i a_kji rbf(x_i, x) - rho_kj]``        ``s_supOCSVM,j``, eq. (26)
``supmah_J``  ``min_k [(h-mu_kj)' S_kj^-1 (h-mu_kj) + log|S_kj|]``  ``s_supMah,j``, eq. (27)
============  ====================================================  ===================

``J`` is the rotation angle in degrees (0, 90, 180, 270). ``h`` is the penultimate
feature and ``l`` the ``K * T`` logits of one network trained to classify the joint
label ``k * T + j`` (class ``k``, rotation ``j``; see :func:`joint_labels`). A new input's
feature of all zeros (a ReLU layer's) has no direction: its cosine is 0, as in
:class:`CSI` (the training features must be non-zero).

**Direction.** The paper's base scores are inlier scores (higher = more inlier). This
module follows the library rule, **higher = more OOD**, by negating each of them here at
the edge; for ``supmah`` the paper's ``-min_k[...]`` is returned as ``min_k[...]``.
Feed the matrix to :class:`abstain.combine.ScoreCombiner` with the default
``higher_is_inlier=False``.

**What differs from the paper.** The paper takes ``s_cos``, ``s_norm`` and ``s_shift``
from CSI's contrastively (SimCLR) trained network and its shift head ``w``, and
``s_supCSI`` from SupCSI's network. No contrastive network is trained here: all six kinds
come from the one supervised joint class x rotation network (the network the paper uses
for ``s_supMah``). ``s_shift,j`` is therefore the joint head's log-probability of the
true rotation ``j`` (its class-marginal), not a separate shift head's logit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.base import ParamsMixin
from .._core.optional import require
from .._core.serialize import (
    Array,
    Field,
    Int,
    Number,
    Record,
    Seq,
    Text,
    dumps,
    serializable,
)
from .._core.validation import (
    Interval,
    Options,
    RandomState,
    as_class_labels,
    as_real_array,
    check_int,
    plain,
)
from ._base import (
    max_cosine,
    ocsvm_decision,
    row_means,
    row_norms,
    svm_gamma,
    unit_rows,
    unit_rows_or_zero,
)
from ._logits import neg_log_share, neg_max_softmax

__all__ = [
    "BASE_SCORE_KINDS",
    "CSI",
    "ShiftedBaseScores",
    "SupCSI",
    "joint_labels",
    "rotation_training_set",
    "rotations",
]

F64 = NDArray[np.float64]

#: The six base-score kinds of glrt-SupCSI+ (paper, Table 1), in column order.
BASE_SCORE_KINDS: tuple[str, ...] = ("cos", "norm", "shift", "supcsi", "supocsvm", "supmah")
_LOGIT_KINDS = ("shift", "supcsi")


# --------------------------------------------------------------------------- rotations
def _check_shifts(shifts: Any) -> tuple[int, ...]:
    try:
        out = tuple(int(s) for s in shifts)
    except (TypeError, ValueError):
        raise ValueError(f"shifts must be a sequence of integers; got {plain(shifts)}.") from None
    if not out or any(s != t for s, t in zip(out, shifts, strict=True)):
        raise ValueError(f"shifts must be a non-empty sequence of integers; got {plain(shifts)}.")
    if len(set(s % 4 for s in out)) != len(out):
        raise ValueError(f"shifts must be distinct modulo 4; got {plain(shifts)}.")
    return out


def rotations(images: ArrayLike, shifts: Sequence[int] = (0, 1, 2, 3)) -> NDArray[Any]:
    """The rotated copies ``R_j(x)``: ``np.rot90(x, shifts[j])`` (counter-clockwise).

    Parameters
    ----------
    images : array-like of shape (n, H, W)
    shifts : sequence of int, default (0, 1, 2, 3)
        Quarter turns of each transformation; 0/1/2/3 are 0/90/180/270 degrees.

    Returns
    -------
    ndarray of shape (len(shifts), n, H, W), dtype of ``images``. Odd quarter turns
    need square images.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import rotations
    >>> R = rotations(np.array([[[1, 2], [3, 4]]]))
    >>> R.shape, R[1, 0].tolist()
    ((4, 1, 2, 2), [[2, 4], [1, 3]])
    """
    X = np.asarray(unmasked(images, "images"))
    if X.ndim != 3 or X.shape[0] == 0:
        raise ValueError(f"images must have shape (n, H, W) with n >= 1; got {X.shape}.")
    turns = _check_shifts(shifts)
    if X.shape[1] != X.shape[2] and any(s % 2 for s in turns):
        raise ValueError(f"odd quarter turns need square images (H == W); got {X.shape}.")
    return np.stack([np.rot90(X, s, axes=(1, 2)) for s in turns])


def joint_labels(labels: ArrayLike, n_shifts: int) -> tuple[NDArray[np.int64], ...]:
    """Joint labels ``k * n_shifts + j`` for every shift ``j``, one array per shift.

    The coding of the joint class x rotation head: output ``k * n_shifts + j`` is class
    ``k`` seen under rotation ``j``, so ``logits[:, j::n_shifts]`` are the ``K`` class
    logits of rotation ``j`` (the paper's column ``l_{:,j}``).

    Examples
    --------
    >>> from abstain.detectors import joint_labels
    >>> [a.tolist() for a in joint_labels([0, 2], 4)]
    [[0, 8], [1, 9], [2, 10], [3, 11]]
    """
    y = as_class_labels(labels, "labels")
    T = check_int("n_shifts", n_shifts, 1)
    return tuple(y * T + j for j in range(T))


def rotation_training_set(
    images: ArrayLike, labels: ArrayLike, shifts: Sequence[int] = (0, 1, 2, 3)
) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """The joint class x rotation training set: every image under every shift.

    Row ``j * n + i`` is ``rotations(images, shifts)[j, i]`` with label
    ``labels[i] * len(shifts) + j`` (:func:`joint_labels`); train a network with
    ``K * len(shifts)`` outputs on it.

    Returns
    -------
    X : ndarray of shape (len(shifts) * n, H, W)
    y : ndarray of int64, shape (len(shifts) * n,)

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import rotation_training_set
    >>> X, y = rotation_training_set(np.zeros((2, 3, 3)), [1, 0], shifts=(0, 2))
    >>> X.shape, y.tolist()
    ((4, 3, 3), [2, 0, 3, 1])
    """
    R = rotations(images, shifts)
    y = joint_labels(labels, R.shape[0])
    if y[0].shape[0] != R.shape[1]:
        raise ValueError(f"labels must have length {R.shape[1]} to match images; got "
                         f"{y[0].shape[0]}.")
    return R.reshape((-1,) + R.shape[2:]), np.concatenate(y)


# --------------------------------------------------------------------------- validation
def _as_stack(values: ArrayLike, name: str, *, last: int | None = None,
              shifts: int | None = None) -> F64:
    arr = as_real_array(values, name)
    if arr.ndim != 3 or 0 in arr.shape:
        raise ValueError(f"{name} must have shape (n_shifts, n, d) with no empty axis; got "
                         f"{arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got NaN or inf.")
    if shifts is not None and arr.shape[0] != shifts:
        raise ValueError(f"{name} must have {shifts} shifts on axis 0 (as in fit); got "
                         f"{arr.shape[0]}.")
    if last is not None and arr.shape[2] != last:
        raise ValueError(f"{name} must have {last} columns on the last axis; got "
                         f"{arr.shape[2]}.")
    return arr


def _check_kinds(kinds: Any) -> tuple[str, ...]:
    if isinstance(kinds, str):
        kinds = (kinds,)
    try:
        out = tuple(kinds)
    except TypeError:
        raise ValueError(f"kinds must be distinct names from {BASE_SCORE_KINDS}; "
                         f"got {plain(kinds)}.") from None
    bad = [k for k in out if k not in BASE_SCORE_KINDS]
    if not out or bad or len(set(out)) != len(out):
        raise ValueError(f"kinds must be distinct names from {BASE_SCORE_KINDS}; "
                         f"got {plain(kinds)}.")
    return tuple(k for k in BASE_SCORE_KINDS if k in out)


# --------------------------------------------------------------------------- estimator
@serializable("base-scores")
class ShiftedBaseScores(ParamsMixin):
    """The glrt-SupCSI+ base scores (paper, Table 1) from per-rotation network outputs.

    ``fit`` takes the penultimate features of the ID training images under every
    rotation, ``features[j] = h(R_j(X_train))`` of shape (n_shifts, n, d), and their class
    labels; ``score`` takes the same for new images (plus the joint head's logits for the
    logit kinds) and returns one column per (kind, shift), higher = more OOD (see the
    module docstring for the formulas and the sign convention).

    Parameters
    ----------
    kinds : sequence of str, default all of :data:`BASE_SCORE_KINDS`
        Which kinds to compute; columns follow the order of :data:`BASE_SCORE_KINDS`.
    shifts : sequence of int, default (0, 1, 2, 3)
        Quarter turns of the rotations the features were computed under; used for
        the column names and to check the logits' width ``K * len(shifts)``.
    ridge : float >= 0, default 1e-6
        ``supmah``: each class covariance ``S_kj`` (maximum-likelihood, divided by the
        class count ``n_k``) is replaced by ``S_kj + ridge * (trace(S_kj) / d) * I``
        before its inverse and log-determinant (via ``numpy.linalg.eigh``), so a
        rank-deficient covariance (``n_k <= d``, or ReLU features that are always 0)
        stays invertible. A scale-free ridge: relative to the mean eigenvalue.
    nu : float in (0, 1], default 0.1
        ``supocsvm``: scikit-learn ``OneClassSVM(kernel="rbf", nu=nu, gamma=g)`` per
        class and shift; ``nu`` bounds the fraction of training outliers.
    gamma : float > 0 or "scale", default "scale"
        RBF width ``rbf(a, b) = exp(-g ||a - b||^2)``; "scale" is scikit-learn's
        ``g = 1 / (d * var(F_kj))`` over all entries of that class's features.
    svm_max_samples : int, optional
        Fit each OC-SVM on at most this many rows of its class (drawn without
        replacement with ``random_state``); None uses all. OC-SVM training is
        quadratic to cubic in the rows.
    random_state : int, default 0
    block : int, default 1024
        Test rows per block of the exact nearest-neighbour and kernel products.

    Attributes
    ----------
    names_ : list of str
        Column names, e.g. ``"supmah_90"``.
    n_shifts_, n_classes_, n_features_in_ : int
    bank_ : ndarray (n_shifts, n, d)
        Unit-norm training features (``cos``).
    means_ : ndarray (n_shifts, K, d); whiteners_ : ndarray (n_shifts, K, d, d);
    logdets_ : ndarray (n_shifts, K)
        ``supmah``: ``S_kj^-1 = W W'`` with ``W = whiteners_[j, k]``.
    svm_ : list of list of dict
        ``supocsvm``: ``svm_[j][k]`` holds ``support`` (s, d), ``dual_coef`` (s,),
        ``rho`` and ``gamma``; enough to evaluate the RBF OC-SVM in NumPy.

    Notes
    -----
    scikit-learn's ``OneClassSVM.decision_function(x) = sum_i a_i rbf(x_i, x) - rho`` is
    the bracket of eq. (26) (positive inside the support); it is evaluated here from the
    stored support vectors and negated. The training features' own ``cos`` score is -1
    (each is its own nearest neighbour), so fit z-values (:class:`abstain.combine.
    ScoreCombiner`) on held-out inliers, not on the rows given to ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import ShiftedBaseScores
    >>> rng = np.random.default_rng(0)
    >>> F = rng.normal(size=(2, 60, 3)) + 5.0
    >>> y = np.repeat([0, 1], 30)
    >>> bs = ShiftedBaseScores(kinds=("norm", "supmah"), shifts=(0, 2)).fit(F, y)
    >>> bs.names_
    ['norm_0', 'norm_180', 'supmah_0', 'supmah_180']
    >>> S = bs.score(np.concatenate([F[:, :2], F[:, :2] + 8.0], axis=1))
    >>> S.shape, bool(S[2:, 2:].min() > S[:2, 2:].max())
    ((4, 4), True)
    """

    def __init__(self, *, kinds: Sequence[str] = BASE_SCORE_KINDS,
                 shifts: Sequence[int] = (0, 1, 2, 3),
                 ridge: float = 1e-6, nu: float = 0.1, gamma: float | str = "scale",
                 svm_max_samples: int | None = None, random_state: int = 0,
                 block: int = 1024) -> None:
        self.kinds = kinds
        self.shifts = shifts
        self.ridge = ridge
        self.nu = nu
        self.gamma = gamma
        self.svm_max_samples = svm_max_samples
        self.random_state = random_state
        self.block = block

    #: kinds and shifts are lists checked entry by entry in ``_validate_params``.
    _parameter_constraints = {
        "ridge": [Interval(float, 0, None, closed="left")],
        "nu": [Interval(float, 0, 1, closed="right")],
        "gamma": [Options(("scale",)), Interval(float, 0, None, closed="neither")],
        "svm_max_samples": [Interval(int, 1, None, closed="left"), None],
        "random_state": [RandomState()],
        "block": [Interval(int, 1, None, closed="left")]}

    def _validate_params(self) -> None:
        super()._validate_params()
        _check_kinds(self.kinds)
        _check_shifts(self.shifts)

    # ------------------------------------------------------------------ fit
    def fit(self, features: ArrayLike, y: ArrayLike) -> ShiftedBaseScores:
        """Fit on ID training features (n_shifts, n, d) and class labels (n,) in 0..K-1."""
        self._validate_params()
        kinds = _check_kinds(self.kinds)
        shifts = _check_shifts(self.shifts)
        F = _as_stack(features, "features", shifts=len(shifts))
        labels = as_class_labels(y, "y")
        T, n, d = F.shape
        if labels.shape[0] != n:
            raise ValueError(f"y must have length {n} to match features; got {labels.shape[0]}.")
        K = int(labels.max()) + 1
        counts = np.bincount(labels, minlength=K)
        if np.any(counts == 0):
            raise ValueError(f"y must use every class 0..{K - 1}; class "
                             f"{int(np.argmin(counts))} has no rows.")
        for name in ("bank_", "means_", "whiteners_", "logdets_", "svm_"):  # a refit's kinds
            self.__dict__.pop(name, None)
        self.kinds_ = kinds
        self.n_shifts_, self.n_classes_, self.n_features_in_ = T, K, d
        self.names_ = [f"{k}_{90 * (s % 4)}" for k in kinds for s in shifts]
        if "cos" in kinds:
            self.bank_ = unit_rows(F, "features: the cosine score")
        if "supmah" in kinds:
            self._fit_mahalanobis(F, labels, K, counts)
        if "supocsvm" in kinds:
            self._fit_ocsvm(F, labels, K)
        return self

    def _fit_mahalanobis(self, F: F64, labels: NDArray[np.int64], K: int,
                         counts: NDArray[np.int64]) -> None:
        ridge = float(self.ridge)
        if np.any(counts < 2):
            raise ValueError("supmah needs at least 2 training rows per class; class "
                             f"{int(np.argmin(counts))} has {int(counts.min())}.")
        T, _, d = F.shape
        means = np.zeros((T, K, d))
        whiteners = np.zeros((T, K, d, d))
        logdets = np.zeros((T, K))
        for j in range(T):
            for k in range(K):
                Fk = F[j, labels == k]
                mu = Fk.mean(axis=0)
                C = Fk - mu
                # in units of a power of two near the spread (exact): the covariance of
                # features near 1e160 overflowed (LAPACK failed), near 1e-170 underflowed
                top = float(np.max(np.abs(C)))
                if not np.isfinite(top):
                    raise ValueError(f"supmah: the features of class {k} under shift {j} "
                                     "spread beyond the float64 range; scale them down.")
                if top == 0.0:
                    raise ValueError(f"supmah: the features of class {k} under shift {j} are "
                                     "all equal (no spread), so no covariance can whiten "
                                     "them, whatever the ridge (it is relative to the "
                                     "spread); give rows that differ.")
                e = int(np.frexp(top)[1])
                Cs = np.ldexp(C, -e)
                S = Cs.T @ Cs / Fk.shape[0]
                S = S + ridge * (np.trace(S) / d) * np.eye(d)
                evals, evecs = np.linalg.eigh(S)
                if not evals.min() > 0.0:
                    raise ValueError(f"supmah: the covariance of class {k} under shift {j} "
                                     "is singular; use ridge > 0.")
                means[j, k] = mu
                whiteners[j, k] = np.ldexp(evecs / np.sqrt(evals), -e)
                logdets[j, k] = float(np.sum(np.log(evals))) + 2.0 * d * e * np.log(2.0)
        self.means_, self.whiteners_, self.logdets_ = means, whiteners, logdets

    def _fit_ocsvm(self, F: F64, labels: NDArray[np.int64], K: int) -> None:
        OneClassSVM = require("sklearn.svm", "sklearn", "the 'supocsvm' base score").OneClassSVM
        nu = float(self.nu)
        cap = self.svm_max_samples
        rng = np.random.default_rng(self.random_state)
        svm: list[list[dict[str, Any]]] = []
        for j in range(F.shape[0]):
            row = []
            for k in range(K):
                Fk = F[j, labels == k]
                if cap is not None and Fk.shape[0] > int(cap):
                    Fk = Fk[np.sort(rng.choice(Fk.shape[0], int(cap), replace=False))]
                g = svm_gamma(Fk, self.gamma)
                model = OneClassSVM(kernel="rbf", nu=nu, gamma=g)
                # its libsvm seed, else drawn from NumPy's global generator (the one-class
                # fit does not use it: only the global state would change)
                model.random_state = 0
                model.fit(Fk)
                row.append({"support": np.asarray(model.support_vectors_, dtype=np.float64),
                            "dual_coef": np.asarray(model.dual_coef_, np.float64).ravel(),
                            "rho": float(-model.intercept_[0]), "gamma": g})
            svm.append(row)
        self.svm_ = svm

    # ------------------------------------------------------------------ score
    def score(self, features: ArrayLike, logits: ArrayLike | None = None) -> F64:
        """Base scores of new inputs, shape (n, len(names_)); higher = more OOD.

        Parameters
        ----------
        features : array-like of shape (n_shifts, n, d)
            ``features[j] = h(R_j(X))``, rotations as in ``fit``.
        logits : array-like of shape (n_shifts, n, K * n_shifts), optional
            The joint head's logits of the same rotated inputs; needed for the kinds
            ``shift`` and ``supcsi``.
        """
        self._check_fitted("names_")
        T, K = self.n_shifts_, self.n_classes_
        F = _as_stack(features, "features", shifts=T, last=self.n_features_in_)
        L = None
        if any(k in self.kinds_ for k in _LOGIT_KINDS):
            if logits is None:
                raise ValueError("logits are needed for the kinds 'shift' and 'supcsi'; got "
                                 "None.")
            L = _as_stack(logits, "logits", shifts=T, last=K * T)
            if L.shape[1] != F.shape[1]:
                raise ValueError(f"logits must have {F.shape[1]} rows like features; got "
                                 f"{L.shape[1]}.")
        cols = []
        for kind in self.kinds_:
            for j in range(T):
                cols.append(self._column(kind, j, F[j], None if L is None else L[j]))
        return np.stack(cols, axis=1)

    def _column(self, kind: str, j: int, Fj: F64, Lj: F64 | None) -> F64:
        T = self.n_shifts_
        if kind == "norm":
            return -row_norms(Fj)
        if kind == "cos":
            unit = unit_rows_or_zero(Fj, "features: the cosine score")  # as CSI's
            return -max_cosine(unit, self.bank_[j], int(self.block))
        if kind in _LOGIT_KINDS:
            assert Lj is not None
            own = Lj[:, j::T]  # the K class logits of rotation j (column l_{:,j})
            if kind == "shift":
                return neg_log_share(own, np.delete(Lj, np.s_[j::T], axis=1))
            return neg_max_softmax(own, 1.0)
        if kind == "supmah":
            best = np.full(Fj.shape[0], np.inf)
            for k in range(self.n_classes_):
                Z = (Fj - self.means_[j, k]) @ self.whiteners_[j, k]
                best = np.minimum(best, np.einsum("ij,ij->i", Z, Z) + self.logdets_[j, k])
            return best
        # supocsvm
        best = np.full(Fj.shape[0], -np.inf)
        for part in self.svm_[j]:
            best = np.maximum(best, ocsvm_decision(Fj, part, int(self.block)))
        return -best

    def fit_score(self, features: ArrayLike, y: ArrayLike,
                  logits: ArrayLike | None = None) -> F64:
        """``fit(features, y).score(features, logits)``."""
        return self.fit(features, y).score(features, logits)

    # ------------------------------------------------------------------ JSON
    _FIELDS: dict[str, Field] = {
        "n_shifts_": Int(1, dim="T"),
        "n_classes_": Int(1, dim="K"),
        "n_features_in_": Int(1, dim="d"),
        "kinds_": Seq(Text(BASE_SCORE_KINDS), min_length=1, convert=tuple),
        "names_": Seq(Text()),
        "bank_": Array(("T", None, "d"), optional=True),
        "means_": Array(("T", "K", "d"), optional=True),
        "whiteners_": Array(("T", "K", "d", "d"), optional=True),
        "logdets_": Array(("T", "K"), optional=True),
        "svm_": Seq(Seq(Record({"support": Array(("s", "d")), "dual_coef": Array(("s",)),
                                "rho": Number(), "gamma": Number(0.0, low_open=True)}),
                        length="K"), length="T", optional=True),
    }

    def _after_load(self) -> None:
        kinds = _check_kinds(self.kinds)
        if self.kinds_ != kinds:
            raise ValueError(f"fitted.kinds_ must be {list(kinds)}, the kinds of params.kinds; "
                             f"got {list(self.kinds_)}.")
        shifts = _check_shifts(self.shifts)
        if self.n_shifts_ != len(shifts):
            raise ValueError(f"fitted.n_shifts_ must be {len(shifts)}, the length of "
                             f"params.shifts; got {self.n_shifts_}.")
        names = [f"{k}_{90 * (s % 4)}" for k in kinds for s in shifts]
        if self.names_ != names:
            raise ValueError(f"fitted.names_ must be {names}; got {self.names_}.")
        for name, kind in (("bank_", "cos"), ("means_", "supmah"), ("whiteners_", "supmah"),
                           ("logdets_", "supmah"), ("svm_", "supocsvm")):
            if hasattr(self, name) and kind not in kinds:
                raise ValueError(f"fitted.{name} must be absent: kinds_ has no {kind!r}.")
            if not hasattr(self, name) and kind in kinds:
                raise ValueError(f"fitted.{name} is missing: the kind {kind!r} needs it.")
        if hasattr(self, "bank_"):
            _check_unit_rows("bank_", self.bank_)
        if hasattr(self, "logdets_"):
            # fit's log-determinant of each class covariance: -2 log |det W| of its whitener
            _, logabs = np.linalg.slogdet(self.whiteners_)
            if not np.allclose(self.logdets_, -2.0 * logabs, rtol=1e-9, atol=1e-9):
                raise ValueError("fitted.logdets_ must be -2 log |det W| of each whitener W of "
                                 "fitted.whiteners_, as a fit computes them; got other values.")

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`. Arrays are base64
        of little-endian float64 bytes; the OC-SVMs are stored as support vectors, dual
        coefficients, ``rho`` and ``gamma`` (no pickle)."""
        return dumps(self)


def _check_unit_rows(name: str, bank: F64) -> None:
    """Refuse a loaded bank whose rows are not of unit norm, as a fit stores them."""
    norm = np.sqrt(np.sum(bank * bank, axis=-1))
    if norm.size and not np.allclose(norm, 1.0, rtol=0.0, atol=1e-6):
        raise ValueError(f"fitted.{name} must hold rows of unit norm, as a fit stores them; got "
                         f"norms from {float(norm.min()):.6g} to {float(norm.max()):.6g}.")


# --------------------------------------------------------------------------- CSI, SupCSI
def _outputs_field(outputs: Any, field: str) -> Any:
    """``outputs[field]`` of a dict such as :func:`abstain.torch.csi_outputs` returns."""
    if not isinstance(outputs, dict) or field not in outputs:
        got = sorted(outputs) if isinstance(outputs, dict) else type(outputs).__name__
        raise ValueError(f"outputs must be a dict with a {field!r} entry (as "
                         f"abstain.torch.csi_outputs returns); got {got}.")
    return outputs[field]


class _ShiftedDetector(ParamsMixin):
    """What CSI and SupCSI share: the ``shifts`` parameter, checked entry by entry, and a
    loaded document's number of shifts checked against it."""

    shifts: Sequence[int]
    n_shifts_: int

    def _validate_params(self) -> None:
        super()._validate_params()
        _check_shifts(self.shifts)

    def _after_load(self) -> None:
        if self.n_shifts_ != len(_check_shifts(self.shifts)):
            raise ValueError(f"fitted.n_shifts_ must be {len(_check_shifts(self.shifts))}, the "
                             f"length of params.shifts; got {self.n_shifts_}.")
        bank = getattr(self, "bank_", None)
        if bank is not None:  # CSI: the training projections as unit rows
            _check_unit_rows("bank_", bank)
        weights = getattr(self, "lambda_con_", None)
        if weights is not None and not np.all(weights > 0):
            raise ValueError("fitted.lambda_con_ must hold positive weights (1 / the mean norm "
                             "of the training projections); got a value <= 0.")
        if not np.all(getattr(self, "lambda_shift_", 1.0) != 0):  # 1 / a mean: never 0
            raise ValueError("fitted.lambda_shift_ must hold non-zero weights (1 / the mean "
                             "shift logit of the training inputs); got 0.")

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)


@serializable("detector")
class CSI(_ShiftedDetector):
    """CSI's score (Tack et al. 2020; eqs. 3-7 of the score-combining paper), negated:
    higher = more OOD.

    From a network's outputs on the shifted copies ``R_j(x)`` (CSI's network:
    :func:`abstain.torch.train_csi` without labels), per shift ``j``: ``s_cos,j`` (eq. 3,
    the largest cosine similarity of the projection ``g(R_j x)`` to the training
    projections of the same shift), ``s_norm,j = ||g(R_j x)||`` (eq. 4) and ``s_shift,j
    = w_j(R_j x)`` (eq. 5, the shift head's logit of the true shift). The score is
    ``-sum_j [lambda_con_j s_cos,j s_norm,j + lambda_shift_j s_shift,j]`` (eq. 6) with the
    balancing weights of eq. 7 computed on the training inputs in :meth:`fit`:
    ``lambda_con_j = 1 / mean_i s_norm,j(x_i)`` and ``lambda_shift_j = 1 / mean_i
    s_shift,j(x_i)``, as the original method does. :meth:`base_scores` returns the
    ``3 T`` base scores (higher = more OOD) that glrt-CSI combines instead.

    Parameters
    ----------
    shifts : sequence of int, default (0, 1, 2, 3)
        The quarter turns of the network's shifts, in the order of its outputs.
    block : int, default 1024
        Rows per block of the cosine similarities (memory).

    Attributes
    ----------
    bank_ : ndarray (T, n_train, p)
        Unit-norm training projections.
    lambda_con_, lambda_shift_ : ndarray (T,)
        The weights of eq. 7.
    n_shifts_, n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import CSI
    >>> rng = np.random.default_rng(0)
    >>> def outputs(n, shift=0.0):
    ...     z = rng.normal(size=(4, n, 8)) + 3.0 + shift
    ...     logits = np.stack([np.eye(4)[j] * 5 + rng.normal(size=(n, 4)) for j in range(4)])
    ...     return {"projections": z, "logits": logits}
    >>> csi = CSI().fit_outputs(outputs(200))
    >>> inlier, outlier = csi.score_outputs(outputs(50)), csi.score_outputs(outputs(50, -6.0))
    >>> bool(np.median(outlier) > np.median(inlier))
    True
    """

    def __init__(self, *, shifts: Sequence[int] = (0, 1, 2, 3), block: int = 1024) -> None:
        self.shifts = shifts
        self.block = block

    _parameter_constraints = {"block": [Interval(int, 1, None, closed="left")]}

    def _raw(self, projections: ArrayLike, logits: ArrayLike
             ) -> tuple[F64, F64, F64]:
        """``(cos, norm, shift)``, each (n, T), in CSI's own direction (higher = inlier)."""
        T = self.n_shifts_
        Z = _as_stack(projections, "projections", last=self.n_features_in_, shifts=T)
        L = _as_stack(logits, "logits", last=T, shifts=T)
        if L.shape[1] != Z.shape[1]:
            raise ValueError(f"logits must have the rows of projections ({Z.shape[1]}); got "
                             f"{L.shape[1]}.")
        norms = row_norms(Z)
        unit = unit_rows_or_zero(Z, "projections: the cosine score", norms)
        norm = norms.T
        cos = np.stack([max_cosine(unit[j], self.bank_[j], int(self.block))
                        for j in range(T)], axis=1)
        shift = np.stack([L[j, :, j] for j in range(T)], axis=1)
        return cos, norm, shift

    def fit(self, projections: ArrayLike, logits: ArrayLike) -> CSI:
        """Fit on the training inputs' projections (T, n, p) and shift logits (T, n, T)."""
        self._validate_params()
        T = len(_check_shifts(self.shifts))
        Z = _as_stack(projections, "projections", shifts=T)
        L = _as_stack(logits, "logits", last=T, shifts=T)
        if L.shape[1] != Z.shape[1]:
            raise ValueError(f"logits must have the rows of projections ({Z.shape[1]}); got "
                             f"{L.shape[1]}.")
        norm = row_norms(Z)  # (T, n), finite for projections near 1e160 and 1e-170
        if np.any(norm == 0):
            raise ValueError("projections must be non-zero (a cosine needs a direction); got "
                             "a zero row.")
        if not np.all(np.isfinite(norm)):
            raise ValueError("projections must have norms within the float64 range; got a "
                             "row whose norm overflows (scale them down).")
        shift_mean = row_means(L[np.arange(T), :, np.arange(T)])  # (T, n): s_shift,j
        if np.any(shift_mean == 0):
            raise ValueError("the training inputs' mean shift logit s_shift,j must be non-zero "
                             "for eq. 7's weight 1 / mean; got 0.")
        self.n_shifts_, self.n_features_in_ = T, int(Z.shape[2])
        self.bank_ = unit_rows(Z, "projections: the cosine score")
        with np.errstate(divide="ignore", over="ignore"):
            lambda_con = 1.0 / row_means(norm)
            lambda_shift = 1.0 / shift_mean
        if not (np.all(np.isfinite(lambda_con)) and np.all(np.isfinite(lambda_shift))):
            raise ValueError("eq. 7's weights 1 / mean (norm of projections, shift logit) must "
                             "be finite; got a mean below 1 / 1.8e308: scale the inputs up.")
        self.lambda_con_, self.lambda_shift_ = lambda_con, lambda_shift
        return self

    def fit_outputs(self, outputs: Any) -> CSI:
        """:meth:`fit` on :func:`abstain.torch.csi_outputs` of the training inputs."""
        return self.fit(_outputs_field(outputs, "projections"), _outputs_field(outputs, "logits"))

    def score(self, projections: ArrayLike, logits: ArrayLike) -> F64:
        """CSI's score of new inputs, shape (n,); higher = more OOD."""
        self._check_fitted("bank_")
        cos, norm, shift = self._raw(projections, logits)
        return -(cos * norm @ self.lambda_con_ + shift @ self.lambda_shift_)

    def score_outputs(self, outputs: Any) -> F64:
        """:meth:`score` of :func:`abstain.torch.csi_outputs`."""
        return self.score(_outputs_field(outputs, "projections"),
                          _outputs_field(outputs, "logits"))

    def base_scores(self, projections: ArrayLike, logits: ArrayLike) -> F64:
        """The ``3 T`` base scores, higher = more OOD (each negated), columns ``cos_J``,
        ``norm_J``, ``shift_J`` (``J`` the angle in degrees, as :attr:`names_`): what
        glrt-CSI combines (:class:`abstain.combine.ScoreCombiner`)."""
        self._check_fitted("bank_")
        cos, norm, shift = self._raw(projections, logits)
        return -np.hstack([cos, norm, shift])

    @property
    def names_(self) -> list[str]:
        """The columns of :meth:`base_scores`."""
        self._check_fitted("bank_")
        return [f"{k}_{90 * (s % 4)}" for k in ("cos", "norm", "shift") for s in self.shifts]

    _FIELDS: dict[str, Field] = {
        "n_shifts_": Int(1, dim="T"),
        "n_features_in_": Int(1, dim="p"),
        "bank_": Array(("T", None, "p")),
        "lambda_con_": Array(("T",)),
        "lambda_shift_": Array(("T",)),
    }



@serializable("detector")
class SupCSI(_ShiftedDetector):
    """SupCSI's ensembled score (Tack et al. 2020; eq. 8 of the score-combining paper),
    negated: ``-max_k softmax((1/T) sum_j l_{:,j}(R_j x))_k``, higher = more OOD.

    ``l(R_j x)`` are the ``K T`` joint logits of the network (:func:`abstain.torch.train_csi`
    with labels) on the input turned by shift ``j``, output ``k T + j`` for class ``k``;
    ``l_{:,j}`` are the ``K`` class logits under the shift ``j`` that turned the input. The
    per-shift scores of eq. 25 (``supcsi_J``) that glrt-SupCSI combines are a kind of
    :class:`ShiftedBaseScores`.

    Parameters
    ----------
    shifts : sequence of int, default (0, 1, 2, 3)

    Attributes
    ----------
    n_shifts_, n_classes_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import SupCSI
    >>> confident = np.zeros((4, 1, 8)); confident[np.arange(4), 0, 4 + np.arange(4)] = 9.0
    >>> flat = np.zeros((4, 1, 8))
    >>> det = SupCSI().fit(np.concatenate([confident, flat], axis=1))
    >>> det.n_classes_, det.score(confident).round(4), det.score(flat).round(4)
    (2, array([-0.9999]), array([-0.5]))
    """

    def __init__(self, *, shifts: Sequence[int] = (0, 1, 2, 3)) -> None:
        self.shifts = shifts

    _parameter_constraints = {}  # shifts: checked in _validate_params

    def fit(self, logits: ArrayLike, y: ArrayLike | None = None) -> SupCSI:
        """Check the joint logits (T, n, K T) of training inputs: nothing else to learn."""
        self._validate_params()
        T = len(_check_shifts(self.shifts))
        L = _as_stack(logits, "logits", shifts=T)
        if L.shape[2] % T:
            raise ValueError(f"logits must have K * {T} columns (K classes times the shifts); "
                             f"got {L.shape[2]}.")
        self.n_shifts_, self.n_classes_ = T, L.shape[2] // T
        return self

    def fit_outputs(self, outputs: Any) -> SupCSI:
        """:meth:`fit` on :func:`abstain.torch.csi_outputs` of the training inputs."""
        return self.fit(_outputs_field(outputs, "logits"))

    def score(self, logits: ArrayLike) -> F64:
        """SupCSI's score of new inputs, shape (n,); higher = more OOD."""
        self._check_fitted("n_classes_")
        T = self.n_shifts_
        L = _as_stack(logits, "logits", last=self.n_classes_ * T, shifts=T)
        stack = np.stack([L[j][:, j::T] for j in range(T)])
        with np.errstate(over="ignore"):
            mean = stack.mean(axis=0)  # (n, K)
        if not np.isfinite(mean).all():  # logits near the float maximum: halved 256 times
            mean = (stack * 2.0**-8).mean(axis=0) * 2.0**8  # (exact) so the sum stays finite
        return neg_max_softmax(np.ascontiguousarray(mean), 1.0)

    def score_outputs(self, outputs: Any) -> F64:
        """:meth:`score` of :func:`abstain.torch.csi_outputs`."""
        return self.score(_outputs_field(outputs, "logits"))

    #: at most 2**24 classes: a head of more outputs than that is no network's
    _FIELDS: dict[str, Field] = {"n_shifts_": Int(1), "n_classes_": Int(1, 2**24)}
