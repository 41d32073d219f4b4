"""Detectors on penultimate features, fitted on in-distribution training data: ReAct, KNN,
ViM, Mahalanobis."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.optional import require
from .._core.serialize import Array, Int, Labels, Number, serializable
from .._core.validation import (
    FLOAT_DTYPES,
    Boolean,
    Interval,
    Options,
    RandomState,
    as_features,
    as_labels,
    check_float_dtype,
    plain,
)
from ._base import Detector, label_classes, linear_layer, squares_normal, unit_rows
from ._logits import logsumexp_rows, neg_energy
from ._proxy import canonical_order


def _as_dtype(arr: NDArray[Any], dtype: np.dtype) -> NDArray:  # type: ignore[type-arg]
    return np.ascontiguousarray(arr, dtype=dtype)


@serializable("detector")
class ReAct(Detector):
    """ReAct (Sun, Guo and Li, 2021): energy of the logits of clipped features.

    ``score = -T logsumexp((min(features, c) @ weight.T + bias) / T)`` where ``c`` is the
    ``percentile``-th percentile of all entries of the ID training features.

    Parameters
    ----------
    percentile : float in (0, 100], default 90 (the paper's choice)
    temperature : float > 0, default 1
    dtype : {"float32", "float64"}, default "float32"
        Type of the matrix product (scores are returned as float64).

    Attributes
    ----------
    threshold_ : float
        The clipping value ``c``. :func:`abstain.load_json` refuses one whose clipped
        logits, up to ``|c| sum_j |weight_[k, j]| + |bias_[k]|``, overflow ``dtype``.
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
    _FIELDS = {"n_features_in_": Int(1, dim="d"), "weight_": Array(("K", "d")),
               "bias_": Array(("K",)), "threshold_": Number()}

    def __init__(self, percentile: float = 90.0, temperature: float = 1.0,
                 dtype: str = "float32") -> None:
        self.percentile = percentile
        self.temperature = temperature
        self.dtype = dtype

    _parameter_constraints = {"percentile": [Interval(float, 0, 100, closed="right")],
                              "temperature": [Interval(float, 0, None, closed="neither")],
                              "dtype": [Options(FLOAT_DTYPES)]}

    def _after_load(self) -> None:
        self._check_clipped_logits("fitted.threshold_ must keep")

    def _check_clipped_logits(self, lead: str) -> None:
        """Refuse a threshold and layer whose clipped features' logits overflow the dtype,
        with a message that starts with ``lead``."""
        # an input at or beyond the threshold in every entry has logits of magnitude up to
        # |c| sum_j |W_kj| + |b_k|: they must be finite in the type of the product
        dt = check_float_dtype("dtype", self.dtype)
        with np.errstate(over="ignore"):
            bound = abs(self.threshold_) * np.abs(self.weight_).sum(axis=1) + np.abs(self.bias_)
        limit = float(np.finfo(dt).max)
        if not np.all(bound <= limit):
            raise ValueError(
                f"{lead} the logits of clipped features within the "
                f"{dt.name} range of dtype: |threshold_| * sum_j |weight_[k, j]| + |bias_[k]| "
                f"<= {limit:.4g} for every class k; got threshold_ = {self.threshold_!r}, "
                f"which gives {float(bound.max()):.4g}.")

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> ReAct:
        """Fit on ID training features ``X`` (n, d) and the last layer ``weight``, ``bias``."""
        if X is None:
            raise ValueError("ReAct.fit needs the ID training features X.")
        self._validate_params()
        q = float(self.percentile)
        F = as_features(X, "features", check_float_dtype("dtype", self.dtype))
        self._fit_names(X)
        self.weight_, self.bias_ = linear_layer(weight, bias, F.shape[1], "ReAct")
        self.threshold_ = float(np.percentile(F, q))
        self.n_features_in_ = int(F.shape[1])
        # the logits of clipped features are finite, as a load checks
        self._check_clipped_logits(
            f"ReAct.fit: the threshold_ (percentile {q:g} of X) with this weight and bias "
            "must keep")
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("threshold_")
        self._validate_params()
        T = float(self.temperature)
        dt = check_float_dtype("dtype", self.dtype)
        F = np.minimum(self._inputs(X, dt), dt.type(self.threshold_))
        with np.errstate(over="ignore", invalid="ignore"):  # refused by _finite_scores
            logits = F @ _as_dtype(self.weight_.T, dt) + _as_dtype(self.bias_, dt)
        # clipped from above only: features far below 0 can overflow the logits (NaN energy)
        return neg_energy(_finite_scores(logits.astype(np.float64), F, dt, "ReAct"), T)


@serializable("detector")
class KNN(Detector):
    """Deep nearest neighbours (Sun, Ming, Zhu and Li, 2022): distance to the k-th neighbour.

    ``score(x)`` is the Euclidean distance from ``x`` to its ``k``-th nearest feature of
    the bank; with ``normalize=True`` (the paper's choice) every feature is first scaled
    to unit L2 norm. The bank is the ID training features, or a seeded random subset of
    ``bank_size`` of them (the paper uses 1% of ImageNet's training set).

    The search is exact: by blocks of ``block`` test rows, one BLAS matrix product gives
    ``|t|^2 - 2 q.t`` for every bank row ``t`` (the bank is stored with the column
    ``|t|^2`` appended), and an in-place ``partition`` picks the k-th smallest; time
    O(n_test * n_bank * d), memory ``block`` x ``n_bank``. Equal distances are counted
    with multiplicity. With ``backend="faiss"`` (or ``"auto"`` when faiss is installed and
    ``dtype="float32"`` and it searched a first block faster, see :func:`knn_backend`) the
    same exact search runs in faiss's ``IndexFlatL2``.

    Parameters
    ----------
    k : int >= 1, default 50 (the paper's choice for CIFAR-10 with the full training set)
    normalize : bool, default True
    block : int, default 1024
        Test rows per block.
    dtype : {"float32", "float64"}, default "float32"
        Type of the distances. In float32 a squared distance carries an absolute error of
        about ``1e-7 * max |x|^2`` (from the expansion ``|q|^2 + |t|^2 - 2 q.t``), so a
        distance near 0 one of about ``sqrt(1e-7) * max |x|`` (a test row equal to a bank
        row of unit norm may score 6e-4): it reorders only inputs whose squared distances
        agree to that precision.
    bank_size : int >= 1 or None, default None
        Keep a uniformly random subset of this many training rows (all rows when None or
        when the training set is not larger).
    random_state : None, int or numpy Generator, default None
        Seeds the subset of ``bank_size``.
    backend : {"auto", "numpy", "faiss"}, default "auto"
        ``"faiss"`` needs the extra ``faiss`` (``pip install 'abstain[faiss]'``) and
        ``dtype="float32"``; ``"auto"`` uses it when both hold and it searched the first
        block of test rows faster than NumPy (measured once per process and bank shape),
        else NumPy.

    Attributes
    ----------
    bank_ : ndarray of shape (n_bank, d)
        The (normalised) bank features.

    Examples
    --------
    >>> from abstain.detectors import KNN
    >>> det = KNN(k=1, normalize=False).fit([[0.0, 0.0], [3.0, 4.0]])
    >>> det.score([[0.0, 1.0], [3.0, 3.0]])
    array([1., 1.])
    """

    inputs = "features"
    _FIELDS = {"n_features_in_": Int(1, dim="d"), "bank_": Array((None, "d"))}

    def __init__(self, k: int = 50, normalize: bool = True, block: int = 1024,
                 dtype: str = "float32", bank_size: int | None = None,
                 random_state: object = None, backend: str = "auto") -> None:
        self.k = k
        self.normalize = normalize
        self.block = block
        self.dtype = dtype
        self.bank_size = bank_size
        self.random_state = random_state
        self.backend = backend

    _parameter_constraints = {"k": [Interval(int, 1, None, closed="left")],
                              "normalize": [Boolean()],
                              "block": [Interval(int, 1, None, closed="left")],
                              "dtype": [Options(FLOAT_DTYPES)],
                              "bank_size": [Interval(int, 1, None, closed="left"), None],
                              "random_state": [RandomState()],
                              "backend": [Options(("auto", "numpy", "faiss"))]}

    def _after_load(self) -> None:
        n_bank = self.bank_.shape[0]
        if self.k > n_bank:
            raise ValueError(f"params.k must be an integer in [1, {n_bank}] (fitted.bank_ has "
                             f"{n_bank} rows); got {self.k!r}.")
        if self.bank_size is not None and n_bank > self.bank_size:
            raise ValueError(f"fitted.bank_ must hold at most params.bank_size = "
                             f"{self.bank_size} rows, as a fit keeps; got {n_bank}.")
        B = self.bank_
        if self.normalize:  # a fit stores unit rows
            norm = _row_norms(B)
            if not np.allclose(norm, 1.0, rtol=0.0, atol=1e-6):
                raise ValueError("fitted.bank_ must hold rows of unit norm (normalize=True); "
                                 f"got norms from {norm.min():.6g} to {norm.max():.6g}.")
        else:
            limit = math.sqrt(float(np.finfo(np.dtype(self.dtype)).max) / (4.0 * B.shape[1]))
            top = float(np.max(np.abs(B)))
            if not top <= limit:
                raise ValueError(f"fitted.bank_ must hold features of magnitude at most "
                                 f"{limit:.4g} for dtype={self.dtype!r} (their squared distances "
                                 f"must be finite); got {top:.4g}.")

    def _prepare(self, F: NDArray) -> NDArray:  # type: ignore[type-arg]
        if self.normalize:
            return unit_rows(F, "KNN with normalize=True")
        # the distances expand to |q|^2 - 2 q.t + |t|^2: each term must be finite in the
        # type of the product (features near 1e200, or 2e19 in float32, gave NaN)
        limit = math.sqrt(float(np.finfo(F.dtype).max) / (4.0 * F.shape[1]))
        top = float(np.max(np.abs(F))) if F.size else 0.0
        if not top <= limit:
            raise ValueError(f"KNN with normalize=False needs features of magnitude at most "
                             f"{limit:.4g} in {F.dtype.name} (their squared distances must be "
                             f"finite); got {top:.4g}. Scale the features"
                             + (", or use dtype='float64'" if F.dtype == np.float32 else "")
                             + " or normalize=True.")
        return F

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> KNN:
        """Store the ID training features ``X`` (n, d), or a random ``bank_size`` of them."""
        if X is None:
            raise ValueError("KNN.fit needs the ID training features X.")
        self._validate_params()
        k = int(self.k)
        F = as_features(X, "features", check_float_dtype("dtype", self.dtype))
        self._fit_names(X)
        n = F.shape[0]
        if self.bank_size is not None and int(self.bank_size) < n:
            rng = np.random.default_rng(self.random_state)  # type: ignore[arg-type]
            # drawn from the rows in an order of their values: the same rows in another order
            # give the same bank
            canon = canonical_order(np.zeros(n, dtype=np.intp), F)
            F = F[np.sort(canon[rng.choice(n, size=int(self.bank_size), replace=False)])]
        if k > F.shape[0]:
            raise ValueError(f"k must be at most the number of bank rows ({F.shape[0]}); "
                             f"got {k}.")
        self.bank_ = self._prepare(F)
        if not self.normalize:  # unit rows are far apart enough
            zero = ~np.any(F, axis=0)  # columns all 0 in float32: maybe below its range
            squares_normal(F - F.mean(axis=0), "KNN", F.dtype, ", or use normalize=True",
                           (lambda: as_features(X, "", np.float64)[:, zero]) if zero.any()
                           else None)
        self.n_features_in_ = int(F.shape[1])
        return self

    def _backend(self, dt: np.dtype, bank: NDArray, Q: NDArray) -> str:  # type: ignore[type-arg]
        """``"numpy"`` or ``"faiss"``; for ``"auto"``, faiss only where it is installed, the
        dtype is float32 and :func:`knn_backend` measured it faster on these shapes."""
        if self.backend == "numpy":
            return "numpy"
        if self.backend == "faiss":
            if dt != np.float32:
                raise ValueError("backend='faiss' needs dtype='float32'; got "
                                 f"dtype={self.dtype!r}.")
            require("faiss", "faiss", "KNN(backend='faiss')")
            return "faiss"
        if dt != np.float32:
            return "numpy"
        try:
            import faiss  # noqa: F401
        except ImportError:
            return "numpy"
        return knn_backend(bank, Q, int(self.k), int(self.block))

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("bank_")
        self._validate_params()
        k, block = int(self.k), int(self.block)
        dt = check_float_dtype("dtype", self.dtype)
        bank = _as_dtype(self.bank_, dt)
        if k > bank.shape[0]:
            raise ValueError(f"k must be at most the number of bank rows "
                             f"({bank.shape[0]}); got {k}.")
        Q = _as_dtype(self._prepare(self._inputs(X, dt)), dt)
        kth = _KNN_SEARCH[self._backend(dt, bank, Q)](bank, Q, k, block)
        return np.sqrt(np.maximum(kth, 0.0))


def _kth_faiss(bank: NDArray, Q: NDArray, k: int, block: int) -> NDArray[np.float64]:  # type: ignore[type-arg]
    """Squared distance of each row of ``Q`` to its k-th nearest bank row, by faiss's exact
    ``IndexFlatL2`` (``block`` is not used)."""
    faiss = require("faiss", "faiss", "KNN(backend='faiss')")
    index = faiss.IndexFlatL2(bank.shape[1])
    index.add(bank)
    return np.asarray(index.search(Q, k)[0][:, k - 1], dtype=np.float64)


def _kth_numpy(bank: NDArray, Q: NDArray, k: int, block: int) -> NDArray[np.float64]:  # type: ignore[type-arg]
    """Squared distance of each row of ``Q`` to its k-th nearest bank row: one GEMM per
    block of ``block`` rows, ``[q, 1] . [-2 t, |t|^2] = |t|^2 - 2 q.t``, and a partition."""
    dt = bank.dtype
    aug_bank = np.empty((bank.shape[0], bank.shape[1] + 1), dtype=dt)
    np.multiply(bank, -2, out=aug_bank[:, :-1])
    aug_bank[:, -1] = np.einsum("ij,ij->i", bank, bank)
    n = Q.shape[0]
    aug_q = np.empty((min(block, n), Q.shape[1] + 1), dtype=dt)
    aug_q[:, -1] = 1
    buf = np.empty((min(block, n), bank.shape[0]), dtype=dt)
    out = np.empty(n)
    for start in range(0, n, block):
        q = Q[start : start + block]
        m = q.shape[0]
        aug_q[:m, :-1] = q
        d = buf[:m]
        np.matmul(aug_q[:m], aug_bank.T, out=d)
        d.partition(k - 1, axis=1)
        out[start : start + m] = d[:, k - 1]
    out += np.einsum("ij,ij->i", Q, Q, dtype=np.float64)
    return out


_KNN_SEARCH = {"numpy": _kth_numpy, "faiss": _kth_faiss}
#: The backend measured faster in this process, by (bank rows, features, k, block).
_KNN_BACKEND: dict[tuple[int, int, int, int], str] = {}


def knn_backend(bank: NDArray, Q: NDArray, k: int, block: int) -> str:  # type: ignore[type-arg]
    """``"numpy"`` or ``"faiss"``: the faster search of :class:`KNN` ``backend="auto"`` for
    this bank's shape, ``k`` and ``block``, measured once per process.

    The probe times each backend on the first ``block`` rows of ``Q`` (the full bank), best
    of two runs; faiss and NumPy's float32 product are each faster on some shapes (NumPy
    4.61 s against faiss's 5.33 s on one machine's benchmark). Both search exactly: the
    scores agree up to float32 rounding of the distances.
    """
    key = (bank.shape[0], bank.shape[1], k, block)
    if key not in _KNN_BACKEND:
        probe = Q[:block]
        best = {}
        for name, search in _KNN_SEARCH.items():
            runs = []
            for _ in range(2):
                start = time.perf_counter()
                search(bank, probe, k, block)
                runs.append(time.perf_counter() - start)
            best[name] = min(runs)
        _KNN_BACKEND[key] = min(best, key=best.__getitem__)
    return _KNN_BACKEND[key]


def _gram(C: NDArray[np.floating]) -> NDArray[np.float64]:
    """``C.T @ C`` in float64, computed in ``C``'s type by NumPy's own product (its BLAS's
    symmetric rank-k update, threaded as NumPy's BLAS threads), the upper triangle mirrored.

    NumPy's ``C.T @ C`` was the fastest kernel on both machines measured (50,000 x 512
    float32 features: 0.15 s against SciPy's ``ssyrk`` 0.22 s on a 2-core AVX2 machine whose
    two libraries bundle different OpenBLAS builds, 0.022 s against 0.064 s at 16 threads
    with AVX-512; ``benchmarks/bench_detectors.py`` times the three), and it is one kernel
    per machine, not a choice made by timing.
    """
    C = np.ascontiguousarray(C)
    with np.errstate(over="ignore", invalid="ignore"):  # refused by the caller's check
        upper = np.triu(C.T @ C).astype(np.float64)
    return upper + np.triu(upper, 1).T


def _in_range(dtype: str, **arrays: NDArray[np.float64]) -> None:
    """Refuse a loaded array that the products of ``dtype`` cannot hold (an entry beyond
    float32's range becomes inf there: NaN scores). A fit never stores one."""
    top = float(np.finfo(np.dtype(dtype)).max)
    for name, a in arrays.items():
        if a.size and not float(np.max(np.abs(a))) <= top:
            raise ValueError(f"fitted.{name} must hold values of magnitude at most "
                             f"{top:.4g} for dtype={dtype!r}; got {float(np.max(np.abs(a))):.4g}.")


def _orthonormal(name: str, A: NDArray[np.float64], scale: NDArray[np.float64] | None = None,
                 ) -> None:
    """Refuse loaded columns that are not orthonormal (``A`` divided by ``scale`` per
    column), as the eigenvectors a fit stores are."""
    B = A if scale is None else A / scale
    if not np.allclose(B.T @ B, np.eye(B.shape[1]), rtol=0.0, atol=1e-6):
        raise ValueError(f"fitted.{name} must hold orthonormal columns, as a fit stores "
                         "(eigenvectors); got others.")


def _work(X: ArrayLike, dt: np.dtype, convert: Any) -> NDArray[np.floating]:  # type: ignore[type-arg]
    """``convert(X, dtype)``: in float32 where ``X`` is float32 already and ``dt`` float32,
    else in float64, so that :func:`_minus` subtracts a reference point before rounding."""
    keep = dt == np.float32 and getattr(X, "dtype", None) == np.float32
    return convert(X, dt if keep else np.float64)  # type: ignore[no-any-return]


def _minus(F: NDArray[np.floating], ref: NDArray[np.float64], dt: np.dtype,  # type: ignore[type-arg]
           ) -> tuple[NDArray[np.floating], NDArray[np.float64]]:
    """``F - ref`` in ``dt`` and the reference point used, in float64: ``ref`` itself, or
    rounded to float32 where ``F`` is float32 (both sides then move by the same point).

    Features far from the origin (a mean of 100, a spread of 1) lose their spread in a
    float32 product of the raw features (``|x|^2 - 2 x.m + |m|^2`` cancels); centred on a
    point near them, a product keeps about 1e-7 of the spread."""
    if F.dtype == np.float32:
        r32 = ref.astype(np.float32)
        return F - r32, r32.astype(np.float64)
    return _as_dtype(F - ref, dt), ref


def _finite_scores(s: NDArray[np.float64], F: NDArray, dt: np.dtype,  # type: ignore[type-arg]
                   who: str) -> NDArray[np.float64]:
    """``s``, refused where a product overflowed (features near 1e38 in float32)."""
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{who}: the scores overflow in {dt.name} (features of magnitude up "
                         f"to {float(np.max(np.abs(F))):.4g}); scale the features"
                         + (" or use dtype='float64'." if dt == np.float32 else "."))
    return s


def _row_norms(A: NDArray[np.floating]) -> NDArray[np.float64]:
    """The Euclidean norm of each row of ``A``, its squares summed in float64 (one pass,
    several times faster than ``np.linalg.norm(A, axis=1)``, which squares into a new
    array and sums in ``A``'s type)."""
    return np.sqrt(np.einsum("ij,ij->i", A, A, dtype=np.float64))


#: The largest ``alpha_`` of :class:`ViM` (``2**512``, the square root of the largest float).
ALPHA_MAX = 2.0**512


def _default_vim_dim(n_features: int) -> int:
    if n_features >= 2048:
        return 1000
    if n_features >= 768:
        return 512
    return max(1, n_features // 2)


def _eigen_floor(evals: NDArray, d: int, dt: np.dtype,  # type: ignore[type-arg]
                 rcond: float = 0.0) -> float:
    """The eigenvalues of a covariance of ``d`` features computed in ``dt`` at or below
    which a direction is round-off: ``max(rcond, d * eps)`` of the largest (``d * eps`` is
    NumPy's rank tolerance)."""
    return max(rcond, d * float(np.finfo(dt).eps)) * max(float(evals.max()), 0.0)


def _finite_cov(cov: NDArray, F: NDArray, who: str,  # type: ignore[type-arg]
                dt: np.dtype | None = None) -> NDArray:  # type: ignore[type-arg]
    """``cov``, refused where it overflowed (features near 1e160, or 1e20 in float32: the
    eigendecomposition then fails with NumPy's "Eigenvalues did not converge")."""
    dt = F.dtype if dt is None else dt
    if not np.all(np.isfinite(cov)):
        raise ValueError(f"{who}: the covariance of the training features overflows in "
                         f"{dt.name} (features of magnitude up to "
                         f"{float(np.max(np.abs(F))):.4g}); scale the features"
                         + (" or use dtype='float64'." if dt == np.float32 else "."))
    return cov


def _stacked_eigh(C: NDArray[np.floating], off: NDArray[np.float64],  # type: ignore[type-arg]
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The eigenpairs of ``C' C / n + off off'`` from the singular values of the rows of
    ``C`` stacked with ``sqrt(n) off`` (through the QR factor of the stack when it has more
    rows than columns): accurate to the spread's own round-off, not to that of the sum."""
    n, d = C.shape
    M = np.vstack([C, math.sqrt(n) * off[None, :]]).astype(np.float64)
    top = np.linalg.qr(M, mode="r") if M.shape[0] > d else M  # the stack's R factor
    _, sv, vt = np.linalg.svd(np.asarray(top), full_matrices=True)
    evals = np.zeros(d)
    evals[: sv.size] = sv * sv / n
    return evals, vt.T


def _vim_parts(C: NDArray, R: NDArray, W: NDArray, b: NDArray,  # type: ignore[type-arg]
               center: NDArray, off: NDArray, dt: np.dtype,  # type: ignore[type-arg]
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """ViM's residual norms and logits of the features ``C`` centred on ``center``, whose
    offset from the origin is ``off``: the products of ``C`` in ``dt``, the terms of
    ``center`` added in float64."""
    with np.errstate(over="ignore", invalid="ignore"):  # refused by the caller's check
        Y = (C @ _as_dtype(R, dt)).astype(np.float64)
        Y += off @ R
        logits = (C @ _as_dtype(W.T, dt)).astype(np.float64)
        logits += center @ W.T + b
    return _row_norms(Y), logits


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
    dtype : {"float32", "float64"}, default "float32"
        Type of the matrix products (the covariance is accumulated by BLAS in this type,
        its eigendecomposition is in float64; scores are returned as float64).

    Attributes
    ----------
    origin_ : ndarray (d,)
    center_ : ndarray (d,)
        The training features' mean: the products of ``fit`` and ``score`` (in ``dtype``)
        take the features centred on it, and its own terms are added in float64, so that
        float32 keeps features far from the origin to about 1e-7 of their spread.
    residual_basis_ : ndarray (d, d - D)
    alpha_ : float in (0, 2**512]
        ``fit`` refuses training data that give a non-positive ``alpha`` (the virtual logit
        would shrink as the residual grows) or one above ``2**512``.
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
        "center_": Array(("d",)),
        "residual_basis_": Array(("d", None)),
        # positive, as fit makes it; at most 2**512, the square root of the largest float,
        # so that alpha_ times the residual norm of any input below that bound is finite
        "alpha_": Number(0.0, ALPHA_MAX, low_open=True),
    }

    def __init__(self, dim: int | None = None, dtype: str = "float32") -> None:
        self.dim = dim
        self.dtype = dtype

    _parameter_constraints = {"dim": [Interval(int, 1, None, closed="left"), None],
                              "dtype": [Options(FLOAT_DTYPES)]}

    def _after_load(self) -> None:
        d = self.n_features_in_
        if self.dim_ >= d:  # as fit refuses such a dim
            raise ValueError(f"fitted.dim_ must be smaller than fitted.n_features_in_ = {d}; "
                             f"got {self.dim_}.")
        if self.residual_basis_.shape[1] != d - self.dim_:
            raise ValueError(f"fitted.residual_basis_ must have shape ({d}, {d - self.dim_}) "
                             f"for fitted.dim_ = {self.dim_}; got {self.residual_basis_.shape}.")
        want = _default_vim_dim(d) if self.dim is None else self.dim
        if self.dim_ != want:
            raise ValueError(f"fitted.dim_ must be {want}, the dimension params.dim = "
                             f"{plain(self.dim)} gives for {d} features; got {self.dim_}.")
        _orthonormal("residual_basis_", self.residual_basis_)
        _in_range(self.dtype, weight_=self.weight_, residual_basis_=self.residual_basis_,
                  center_=self.center_)
        # the origin is the layer's, as fit computes it (to the round-off of a pseudo-inverse)
        u = -np.linalg.pinv(self.weight_) @ self.bias_
        if not np.allclose(self.origin_, u, rtol=1e-6,
                           atol=1e-9 * max(1.0, float(np.max(np.abs(u), initial=0.0)))):
            raise ValueError("fitted.origin_ must be -pinv(fitted.weight_) @ fitted.bias_, as a "
                             "fit computes it; got another vector.")

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> ViM:
        """Fit on ID training features ``X`` (n, d) and the last layer ``weight``, ``bias``."""
        if X is None:
            raise ValueError("ViM.fit needs the ID training features X.")
        self._validate_params()
        dt = check_float_dtype("dtype", self.dtype)
        F = _work(X, dt, lambda a, t: as_features(a, "features", t))
        self._fit_names(X)
        d = F.shape[1]
        if d < 2:
            raise ValueError("ViM needs at least 2 feature dimensions; got 1.")
        D = _default_vim_dim(d) if self.dim is None else int(self.dim)
        if D >= d:
            raise ValueError(f"dim must be smaller than the feature dimension {d}; got {D}.")
        W, b = linear_layer(weight, bias, d, "ViM")
        u = -np.linalg.pinv(W) @ b
        # the uncentred covariance of F - u, as the covariance of F around its mean (in dt,
        # which keeps the spread) plus the outer product of (mean - u) (in float64)
        C, ref = _minus(F, F.mean(axis=0, dtype=np.float64), dt)
        squares_normal(C, "ViM", dt, " (and divide the last layer's weight by it)", lambda: F)
        off = ref - u
        spread = _finite_cov(_gram(C) / C.shape[0], F, "ViM", dt)
        cov = spread + np.outer(off, off)
        spread_evals = np.linalg.eigvalsh(spread)
        spread_floor = _eigen_floor(spread_evals, d, dt)
        kept = spread_evals[spread_evals > spread_floor]
        # features far from the origin for their spread: the outer product swamps the
        # spread's small eigenvalues in the sum's round-off (0.2 % of the scores at a
        # spread of 1e-6 around 1), in either dtype; measured against the least eigenvalue
        # kept, not their mean (one large direction hid the small ones); the SVD of the
        # rows stacked with the offset keeps them
        stacked = float(off @ off) > 1e6 * (float(kept.min()) if kept.size else 0.0)
        if stacked:
            evals, evecs = _stacked_eigh(C, off)
        else:
            evals, evecs = np.linalg.eigh(cov)
        order = np.argsort(-evals, kind="stable")
        R = np.ascontiguousarray(evecs[:, order[D:]])
        vlogit, logits = _vim_parts(C, R, W, b, ref, off, dt)
        mean_v = float(vlogit.mean(dtype=np.float64))
        # eigenvalues within the round-off of the covariance are no residual: the scores
        # would be made of round-off (that of the spread in dt, of the sum in float64)
        floor = max(spread_floor,
                    0.0 if stacked else _eigen_floor(evals, d, np.dtype(np.float64)))
        if mean_v <= 0 or float(evals[order[D:]].max()) <= floor:
            raise ValueError("ViM: the training features have no residual beyond the "
                             f"{D}-dimensional principal subspace; choose a smaller dim.")
        alpha = float(logits.max(axis=1).mean(dtype=np.float64)) / mean_v
        if not alpha > 0:
            raise ValueError(
                "ViM needs a positive mean max-logit on the training features (alpha = mean "
                "max-logit / mean residual norm scales the virtual logit, which must grow with "
                f"the residual); got alpha = {alpha!r}. Give the last layer's weight and bias "
                "of a trained classifier.")
        if not alpha <= ALPHA_MAX:
            raise ValueError(f"ViM needs alpha = mean max-logit / mean residual norm <= 2**512; "
                             f"got {alpha!r} (a residual norm of {mean_v!r}): choose a smaller "
                             "dim.")
        self.weight_, self.bias_, self.origin_, self.residual_basis_ = W, b, u, R
        self.center_, self.alpha_ = ref, alpha
        self.dim_ = D
        self.n_features_in_ = d
        return self

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of features ``X``, shape (n, d) -> (n,)."""
        self._check_fitted("alpha_")
        self._validate_params()
        dt = check_float_dtype("dtype", self.dtype)
        F = _work(X, dt, self._inputs)
        C = _minus(F, self.center_, dt)[0]
        vlogit, logits = _vim_parts(C, self.residual_basis_, self.weight_, self.bias_,
                                    self.center_, self.center_ - self.origin_, dt)
        _finite_scores(logits, F, dt, "ViM")
        with np.errstate(over="ignore", invalid="ignore"):
            return _finite_scores(self.alpha_ * vlogit - logsumexp_rows(logits), F, dt, "ViM")


@serializable("detector")
class Mahalanobis(Detector):
    """Class-conditional Gaussians with a shared covariance (Lee, Lee, Lee and Shin, 2018).

    ``score(x) = min_c (x - m_c)^T S^+ (x - m_c)``: the squared Mahalanobis distance to
    the nearest class mean, with the class means ``m_c`` and the pooled within-class
    covariance ``S`` of the ID training features. ``S^+`` is the pseudo-inverse from
    ``numpy.linalg.eigh``: eigenvalues at most ``max(rcond, d * eps) * max eigenvalue``
    are dropped (``eps`` of ``dtype``: below it a float32 covariance holds round-off, and
    rank-deficient features gave scores 1e5 times too large).
    The paper's input preprocessing and layer ensemble are not part of this score.

    Parameters
    ----------
    rcond : float in [0, 1), default 1e-10
        Eigenvalues at most ``rcond`` times the largest are dropped (1 would drop them all).
    dtype : {"float32", "float64"}, default "float32"
        Type of the matrix products (class means and the eigendecomposition are in
        float64; scores are returned as float64).

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

    def __init__(self, rcond: float = 1e-10, dtype: str = "float32") -> None:
        self.rcond = rcond
        self.dtype = dtype

    def _after_load(self) -> None:
        W = self.whitener_
        if W.shape[1] > W.shape[0]:
            raise ValueError(f"fitted.whitener_ must have at most {W.shape[0]} columns (one "
                             f"per kept eigenvalue); got {W.shape[1]}.")
        norm = np.sqrt(np.einsum("ij,ij->j", W, W))
        if not np.all(norm > 0):
            raise ValueError("fitted.whitener_ must not hold a zero column.")
        _orthonormal("whitener_", W, norm)  # eigenvectors over the roots of eigenvalues
        _in_range(self.dtype, whitener_=W, means_=self.means_)
        evals = 1.0 / norm**2  # the kept eigenvalues: each above rcond times the largest
        if float(evals.min()) <= float(self.rcond) * float(evals.max()) * (1 - 1e-5):
            raise ValueError(f"fitted.whitener_ must keep only eigenvalues above params.rcond = "
                             f"{self.rcond!r} times the largest, as a fit does; got one "
                             f"{float(evals.min() / evals.max()):.3g} times it.")

    _parameter_constraints = {"rcond": [Interval(float, 0, 1, closed="left")],
                              "dtype": [Options(FLOAT_DTYPES)]}

    def fit(self, X: ArrayLike | None = None, y: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None) -> Mahalanobis:
        """Fit class means and the shared covariance on ID features ``X`` and labels ``y``."""
        if X is None or y is None:
            raise ValueError("Mahalanobis.fit needs the ID training features X and labels y.")
        self._validate_params()
        rcond = float(self.rcond)
        dt = check_float_dtype("dtype", self.dtype)
        F = _work(X, dt, lambda a, t: as_features(a, "features", t))
        self._fit_names(X)
        labels = as_labels(y)
        if labels.shape != (F.shape[0],):
            raise ValueError(f"y must have shape ({F.shape[0]},) to match X; got "
                             f"{labels.shape}.")
        classes, inv = label_classes(labels)
        counts = np.bincount(inv)
        order = np.argsort(inv, kind="stable")
        ends = np.cumsum(counts)
        C = F[order]  # each class's rows in one block, in row order
        blocks = [C[e - c:e] for c, e in zip(counts, ends, strict=True)]
        # float64 sums of each block (a reduction over rows: several times faster than
        # np.add.reduceat over axis 0, and the same sums)
        means = np.stack([rows.sum(axis=0, dtype=np.float64) for rows in blocks])
        means /= counts[:, None]
        for rows, mean in zip(blocks, _as_dtype(means, F.dtype), strict=True):
            rows -= mean  # centred in place: the covariance sums over rows in any order
        squares_normal(C, "Mahalanobis", dt)
        with np.errstate(over="ignore"):  # features beyond dt's range: refused just below
            C = _as_dtype(C, dt)
        cov = _finite_cov(_gram(C) / F.shape[0], F, "Mahalanobis", dt)
        evals, evecs = np.linalg.eigh(cov)
        # below rcond, or within the round-off of the covariance (a float32 covariance of
        # rank-deficient features has null eigenvalues near 1e-7 of the largest, which
        # whitening would blow up)
        keep = evals > _eigen_floor(evals, F.shape[1], dt, rcond)
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
        self._validate_params()
        dt = check_float_dtype("dtype", self.dtype)
        # centred on the mean of the class means: the expansion below cancels far less
        F = _work(X, dt, self._inputs)
        C, ref = _minus(F, self.means_.mean(axis=0), dt)
        M = (self.means_ - ref) @ self.whitener_
        with np.errstate(over="ignore", invalid="ignore"):  # refused by _finite_scores
            Z = C @ _as_dtype(self.whitener_, dt)
            d2 = Z @ _as_dtype(-2.0 * M.T, dt) + _as_dtype(np.einsum("ij,ij->i", M, M), dt)
            d2min = d2.min(axis=1).astype(np.float64)
            d2min += np.einsum("ij,ij->i", Z, Z, dtype=np.float64)
        return np.maximum(_finite_scores(d2min, F, dt, "Mahalanobis"), 0.0)
