"""Uncertainty scores learned from examples for a black-box predictor.

Franc, Prusa and Voracek (2023), sections 3.3-3.4 and 5.1: a linear score ``s(x) = <theta,
psi(x)>`` is fitted to the observed losses of a fixed predictor, by ridge regression of the
loss (REG), by minimising the smooth SELE proxy of the AuRC, or by ridge regression of the
true-class probability (TCP). Re-exported by :mod:`abstain.scores`.
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.base import NamedFeatures, ParamsMixin, warn
from .._core.serialize import (
    Array,
    Field,
    Flag,
    Int,
    Labels,
    Number,
    dumps,
    serializable,
)
from .._core.validation import (
    Boolean,
    Interval,
    IsArray,
    Options,
    RandomState,
    as_features,
    as_losses,
    as_scores,
    check_same_length,
    plain,
)
from ..exceptions import ConvergenceWarning
from ._losses import (
    ScaledProblem,
    check_class_labels,
    check_classes_param,
    check_one_kind,
    newton_polish,
)
from ._plugin import true_class_probability  # the target of TCP; its home is plugin

__all__ = [
    "PAPER_C_GRID",
    "LossRegression",
    "SELE",
    "TCP",
    "true_class_probability",
]

#: The regularisation grid of section 5.1, chosen from by validation AuRC.
PAPER_C_GRID: tuple[float, ...] = (0.0, 1.0, 10.0, 100.0, 1000.0)

_FEATURES = ("predicted_class", "shared")


class _Design(NamedTuple):
    """Rows ``[x, 1]`` sorted by block, the block bounds, the sorting order and the
    standardised baseline in the same order (None without a baseline)."""

    rows: NDArray[np.float64]
    bounds: NDArray[np.intp]
    order: NDArray[np.intp]
    extra: NDArray[np.float64] | None = None


class _LinearScore(NamedFeatures, ParamsMixin):
    """A linear score ``s(x) = <w_b, x> + c_b`` with one block ``b`` per predicted class."""

    C: float
    features: str
    classes: ArrayLike | None
    baseline_coef_: float | None
    baseline_mean_: float | None
    baseline_scale_: float | None

    _parameter_constraints = {
        "C": [Interval(float, 0, None, closed="left")],
        "features": [Options(_FEATURES)],
        "classes": [IsArray("be a non-empty 1-D array of labels or None"), None]}

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.classes is not None:
            check_classes_param(self.classes)

    def _blocks(self, y_pred: ArrayLike | None, n: int, fitting: bool) -> NDArray[np.intp]:
        """Block index of every row (all zeros for the shared feature map)."""
        if self.features == "shared":
            if fitting:
                self.classes_ = np.zeros(0)
            return np.zeros(n, dtype=np.intp)
        if y_pred is None:
            raise ValueError("y_pred must be given with features='predicted_class'; got None "
                             "(use features='shared' for a score of X alone).")
        labels = np.asarray(unmasked(y_pred, "y_pred"))
        if labels.ndim != 1:
            raise ValueError(f"y_pred must be one-dimensional; got shape {labels.shape}.")
        check_same_length(X=np.empty(n), y_pred=labels)
        nan = labels != labels  # NaN (of any kind: float, object, NaT) is no class
        if np.any(nan):
            raise ValueError(f"y_pred must hold class labels, not NaN; got NaN in "
                             f"{int(np.sum(nan))} row(s).")
        check_one_kind(labels, "y_pred")
        if fitting:
            self.classes_ = np.unique(labels if self.classes is None else self.classes)
            check_class_labels(self.classes_, "y_pred" if self.classes is None else "classes")
        pos = np.minimum(np.searchsorted(self.classes_, labels), len(self.classes_) - 1)
        unknown = self.classes_[pos] != labels
        if np.any(unknown):
            bad = np.unique(labels[unknown])[:5].tolist()
            raise ValueError(f"y_pred must hold labels in classes_ {self.classes_.tolist()}; got "
                             f"{bad} (pass classes=... to list every label the predictor can "
                             "output).")
        return pos.astype(np.intp)

    def _baseline_column(
        self, baseline: ArrayLike | None, n: int, fitting: bool
    ) -> NDArray[np.float64] | None:
        """``(u0 - baseline_mean_) / baseline_scale_``, the statistics taken in ``fit``."""
        if fitting:
            self.baseline_coef_ = self.baseline_mean_ = self.baseline_scale_ = None
        if baseline is None:
            if not fitting and self.baseline_mean_ is not None:
                raise ValueError("baseline must be given: this score was fitted with "
                                 "baseline=...; got None.")
            return None
        if not fitting and self.baseline_mean_ is None:
            raise ValueError("baseline must be None: this score was fitted without a "
                             "baseline; got an array.")
        u = as_scores(baseline, "baseline")
        check_same_length(X=np.empty(n), baseline=u)
        if fitting:  # in units of a power of two at most the largest |u0| (2**1024 is not
            # a float): no square of a baseline of 1e-200 underflows, nor of 1e308 overflows
            unit = math.ldexp(1.0, math.frexp(float(np.max(np.abs(u), initial=0.0)) or 1.0)[1]
                              - 1)
            scale = float((u / unit).std()) * unit
            self.baseline_mean_ = float((u / unit).mean()) * unit
            self.baseline_scale_ = scale if scale > 0 and np.isfinite(scale) else 1.0
        mean, sd = float(self.baseline_mean_), float(self.baseline_scale_)  # type: ignore[arg-type]
        unit = math.ldexp(1.0, math.frexp(sd)[1] - 1)  # u0 - mean may overflow unscaled
        return (u / unit - mean / unit) / (sd / unit)

    def _design(self, X: ArrayLike, y_pred: ArrayLike | None, fitting: bool,
                baseline: ArrayLike | None = None) -> _Design:
        x = as_features(X)
        if fitting:
            self._fit_names(X)
        else:
            self._check_fitted("coef_")
            self._check_names(X)
            if x.shape[1] != self.n_features_in_:
                raise ValueError(f"X must have {self.n_features_in_} features, as in fit; got "
                                 f"{x.shape[1]}.")
        blocks = self._blocks(y_pred, x.shape[0], fitting)
        extra = self._baseline_column(baseline, x.shape[0], fitting)
        n_blocks = 1 if self.features == "shared" else len(self.classes_)
        order = np.argsort(blocks, kind="stable")
        rows = np.empty((x.shape[0], x.shape[1] + 1))
        rows[:, :-1] = x[order]
        rows[:, -1] = 1.0
        bounds = np.searchsorted(blocks[order], np.arange(n_blocks + 1))
        return _Design(rows, bounds.astype(np.intp), order, None if extra is None else extra[order])

    def _theta(self) -> NDArray[np.float64]:
        """All coefficients as one vector: the blocks ``[w_b, c_b]``, then the baseline's."""
        flat = np.column_stack([self.coef_, self.intercept_]).ravel()
        return flat if self.baseline_coef_ is None else np.append(flat, self.baseline_coef_)

    def _set_theta(self, flat: NDArray[np.float64], design: _Design) -> None:
        d = design.rows.shape[1]
        n_blocks = len(design.bounds) - 1
        theta = flat[: n_blocks * d].reshape(n_blocks, d)
        self.coef_ = theta[:, :-1].copy()
        self.intercept_ = theta[:, -1].copy()
        self.n_features_in_ = d - 1
        if design.extra is not None:
            self.baseline_coef_ = float(flat[n_blocks * d])

    def decision_function(
        self, X: ArrayLike, y_pred: ArrayLike | None = None, *, baseline: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """The fitted linear function ``<w_{h(x)}, x> + b_{h(x)}``, eq. (37), plus
        ``baseline_coef_ * (u0 - baseline_mean_) / baseline_scale_`` when fitted with a
        baseline."""
        design = self._design(X, y_pred, fitting=False, baseline=baseline)
        s = _matvec(design, self._theta(), len(design.bounds) - 1)
        out = np.empty_like(s)
        out[design.order] = s
        return out

    def score(
        self, X: ArrayLike, y_pred: ArrayLike | None = None, *, baseline: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Uncertainty of each prediction; higher means reject first.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y_pred : array-like of shape (n,)
            The predictor's outputs on ``X`` (ignored with ``features='shared'``).
        baseline : array-like of shape (n,), optional
            The baseline uncertainty of the same predictions; required exactly when
            ``fit`` was given one.

        Returns
        -------
        ndarray of shape (n,)
        """
        return self.decision_function(X, y_pred, baseline=baseline)

    def to_json(self) -> str:
        """Serialise parameters and coefficients to JSON; load with :func:`abstain.load_json`."""
        return dumps(self)

    _FIELDS: dict[str, Field] = {
        "classes_": Labels(),
        "coef_": Array(("blocks", "d")),
        "intercept_": Array(("blocks",)),
        "n_features_in_": Int(1, dim="d"),
        "baseline_coef_": Number(none=True),
        "baseline_mean_": Number(none=True),
        "baseline_scale_": Number(0.0, low_open=True, none=True),
    }

    def _after_load(self) -> None:
        if len({getattr(self, name) is None for name in
                ("baseline_coef_", "baseline_mean_", "baseline_scale_")}) > 1:
            raise ValueError("fitted.baseline_coef_, baseline_mean_ and baseline_scale_ must "
                             "all be numbers or all be null; got a mix.")
        if self.classes is not None and self.features != "shared" and (
                np.unique(self.classes).tolist() != np.asarray(self.classes_).tolist()):
            raise ValueError(f"fitted.classes_ must be the sorted distinct params.classes "
                             f"{plain(np.unique(self.classes).tolist())}; got "
                             f"{plain(np.asarray(self.classes_).tolist())}.")
        if self.features == "shared" and len(self.classes_):
            raise ValueError(f"fitted.classes_ must be [] with features='shared', as a fit "
                             f"writes it; got {plain(np.asarray(self.classes_).tolist())}.")
        blocks = 1 if self.features == "shared" else len(self.classes_)
        if self.coef_.shape[0] != blocks:
            raise ValueError(f"fitted.coef_ must have {blocks} row(s): one per class of "
                             f"fitted.classes_, or one with features='shared'; got "
                             f"{self.coef_.shape[0]}.")


def _block_matvec(design: _Design, theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """``s = Phi theta`` in the sorted row order: each block times its own coefficients."""
    s = np.empty(design.rows.shape[0])
    b = design.bounds
    for k in range(len(b) - 1):
        if b[k + 1] > b[k]:
            s[b[k] : b[k + 1]] = design.rows[b[k] : b[k + 1]] @ theta[k]
    return s


def _block_rmatvec(design: _Design, g: NDArray[np.float64], n_blocks: int) -> NDArray[np.float64]:
    """``Phi^T g`` as an array of shape (n_blocks, d + 1)."""
    out = np.zeros((n_blocks, design.rows.shape[1]))
    b = design.bounds
    for k in range(len(b) - 1):
        if b[k + 1] > b[k]:
            out[k] = g[b[k] : b[k + 1]] @ design.rows[b[k] : b[k + 1]]
    return out


def _matvec(design: _Design, flat: NDArray[np.float64], n_blocks: int) -> NDArray[np.float64]:
    """The scores of all coefficients ``flat`` (see ``_theta``), baseline column included."""
    size = n_blocks * design.rows.shape[1]
    s = _block_matvec(design, flat[:size].reshape(n_blocks, -1))
    if design.extra is not None:
        s += flat[size] * design.extra
    return s


def _rmatvec(design: _Design, g: NDArray[np.float64], n_blocks: int) -> NDArray[np.float64]:
    """The transpose of :func:`_matvec`, as one flat vector."""
    out = _block_rmatvec(design, g, n_blocks).ravel()
    return out if design.extra is None else np.append(out, g @ design.extra)


def _penalised(design: _Design, n_blocks: int) -> NDArray[np.float64]:
    """1 for each regularised coefficient, 0 for the baseline's (never shrunk)."""
    mask = np.ones(n_blocks * design.rows.shape[1] + (design.extra is not None))
    if design.extra is not None:
        mask[-1] = 0.0
    return mask


def _ridge(
    design: _Design, target: NDArray[np.float64], C: float, n_blocks: int
) -> NDArray[np.float64]:
    """Minimise ``C/2 ||theta||^2 + (1/n) sum_i (t_i - s_theta(x_i))^2`` in closed form.

    The feature map is block-diagonal, so each block is its own ridge problem
    ``(A_k + n C / 2 I) theta_k = Phi_k^T t_k``; ``C = 0`` gives the least-squares
    solution of minimum norm in units where every column has a norm near 1 (powers of
    two, so the fit does not depend on the units of a feature). A block with no rows
    keeps ``theta_k = 0``.

    With a baseline column ``z`` (coefficient ``a``, not regularised) every block's
    solution is affine in ``a``, ``theta_k = P_k - a Q_k`` (right-hand sides ``t_k`` and
    ``z_k``), so the objective is a quadratic in ``a`` alone, minimised at
    ``a = (2/n r_z.r_t + C Q.P) / (2/n r_z.r_z + C Q.Q)`` with the residuals
    ``r_t = t - Phi P`` and ``r_z = z - Phi Q``. When ``z`` lies in the span of the
    features and ``C = 0`` the denominator vanishes, every ``a`` fits equally and
    ``a = 0`` is taken.
    """
    import scipy.linalg  # on first use, as the other SciPy modules here: commands start faster

    n, dim = design.rows.shape
    rhs = target[:, None] if design.extra is None else np.column_stack([target, design.extra])
    sol = np.zeros((n_blocks, dim, rhs.shape[1]))
    b = design.bounds
    for k in range(n_blocks):
        rows, t = design.rows[b[k] : b[k + 1]], rhs[b[k] : b[k + 1]]
        if rows.shape[0] == 0:
            continue
        if C == 0.0:
            # columns near 1 by powers of two of their largest magnitude (by ldexp: 2.0**1024
            # is inf): the singular-value cut-off is relative, so units of 1e15 lost the
            # intercept (1e-200: a norm of 0)
            exps = np.frexp(np.max(np.abs(rows), axis=0))[1]
            with np.errstate(over="ignore"):
                sol[k] = np.ldexp(scipy.linalg.lstsq(np.ldexp(rows, -exps), t, cond=None)[0],
                                  -exps[:, None])
            if not np.isfinite(sol[k]).all():  # features near 1e-310: coefficients beyond
                raise ValueError("X holds features so small that the least-squares "
                                 "coefficients go beyond float64; scale the features up.")
            continue
        gram = rows.T @ rows
        if not np.isfinite(gram).all():
            raise ValueError(f"X holds features of magnitude up to "
                             f"{float(np.max(np.abs(rows))):.4g}, whose products overflow "
                             f"float64 in the ridge's Gram matrix; scale the features (C=0 "
                             f"scales them itself).")
        if not math.isfinite(n * C / 2.0):
            raise ValueError(f"C must be below the float64 range divided by the rows ({n} "
                             f"rows: C below {sys.float_info.max / n * 2:.3g}); got {C!r}.")
        gram[np.diag_indices(dim)] += n * C / 2.0
        sol[k] = scipy.linalg.solve(gram, rows.T @ t, assume_a="pos")
    if design.extra is None:
        return sol[:, :, 0].ravel()
    P, Q = sol[:, :, 0], sol[:, :, 1]
    r_t = target - _block_matvec(design, P)
    r_z = design.extra - _block_matvec(design, Q)
    num = 2.0 / n * float(r_z @ r_t) + C * float(np.sum(Q * P))
    den = 2.0 / n * float(r_z @ r_z) + C * float(np.sum(Q * Q))
    # the baseline's part outside the features' span, kept unless it is round-off (a
    # relative 1e-12 of the squares dropped a baseline 1e-7 outside the span)
    a = num / den if den > 1e-24 * (2.0 / n * float(design.extra @ design.extra)) else 0.0
    return np.append((P - a * Q).ravel(), a)


class _RidgeScore(_LinearScore):
    """A linear score fitted in closed form by ridge regression of a per-sample target."""

    def __init__(
        self, C: float = 1.0, *, features: str = "predicted_class", classes: ArrayLike | None = None
    ) -> None:
        self.C = C
        self.features = features
        self.classes = classes

    def _fit_ridge(
        self,
        X: ArrayLike,
        y_pred: ArrayLike | None,
        raw_target: ArrayLike,
        name: str,
        baseline: ArrayLike | None,
        upper: float = math.inf,
    ) -> None:
        self._validate_params()
        design = self._design(X, y_pred, fitting=True, baseline=baseline)
        target = as_losses(raw_target, name)
        if target.max() > upper:
            raise ValueError(f"{name} must lie in [0, {upper:g}]; got maximum "
                             f"{plain(target.max())}.")
        check_same_length(X=design.rows, **{name: target})
        n_blocks = len(design.bounds) - 1
        theta = _ridge(design, target[design.order], float(self.C), n_blocks)
        self._set_theta(theta, design)


@serializable("score")
class LossRegression(_RidgeScore):
    """Loss regression (REG) score, section 3.3 and 5.1.1 of Franc et al. (2023).

    Minimises ``F(theta) = C/2 ||theta||^2 + (1/n) sum_i (loss_i - s_theta(x_i))^2``
    in closed form (one ridge regression per predicted class). Its population
    minimiser is the conditional risk (Theorem 7), a proper uncertainty score, so
    the score is Fisher consistent. The intercepts are part of ``theta`` and are
    regularised, as in the paper.

    Parameters
    ----------
    C : float, default 1.0
        Regularisation constant, >= 0; :func:`select_regularization` picks it from
        :data:`PAPER_C_GRID` by validation AuRC.
    features : {'predicted_class', 'shared'}, default 'predicted_class'
        ``'predicted_class'`` is eq. (37): ``s(x) = <w_{h(x)}, x> + b_{h(x)}``, one
        linear function per predicted label. ``'shared'`` is ``<w, x> + b`` on ``X``
        alone, for predictors (structured output, regression) whose prediction is
        already encoded in the features.
    classes : array-like, optional
        Every label the predictor can output; by default the labels seen in ``fit``.
        A class never predicted in ``fit`` keeps zero coefficients.

    Notes
    -----
    **Baseline as an input.** ``fit(X, y_pred, losses, baseline=u0)`` adds the
    predictor's own uncertainty ``u0`` (MCP, a margin score) as one feature shared by
    all blocks: ``s(x) = <w_{h(x)}, x> + b_{h(x)} + a (u0(x) - m) / sd`` with ``m, sd``
    the mean and deviation of ``u0`` in ``fit`` (an increasing affine map, so the
    baseline's ranking is one point of the model, ``w = b = 0``, ``a > 0``). The
    coefficient ``a`` is not regularised: a large ``C`` shrinks the score towards the
    baseline rather than towards a constant, and :func:`select_regularization` can
    always pick a ``C`` that keeps what the baseline knows. Not in the paper.

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (n_blocks, d)
    intercept_ : ndarray of shape (n_blocks,)
    n_features_in_ : int
    baseline_coef_, baseline_mean_, baseline_scale_ : float or None
        ``a``, ``m`` and ``sd`` above; None when fitted without a baseline.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.scores import LossRegression
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> reg = LossRegression(C=0).fit(X, [0, 0, 0, 0], [0.0, 0.0, 1.0, 1.0])
    >>> reg.score([[0.5], [2.5]], [0, 0]).round(2).tolist()
    [0.1, 0.9]
    """

    def fit(
        self, X: ArrayLike, y_pred: ArrayLike | None, losses: ArrayLike, *,
        baseline: ArrayLike | None = None,
    ) -> LossRegression:
        """Fit to the predictor's labels ``y_pred`` and observed ``losses`` on ``X``.

        ``baseline`` (shape (n,)), the predictor's own uncertainty of the same
        predictions (MCP, a margin), becomes one more feature (see *Baseline as an
        input* above); :meth:`score` then needs it too.
        """
        self._fit_ridge(X, y_pred, losses, "losses", baseline)
        return self


@serializable("score")
class TCP(_RidgeScore):
    """True-class-probability (TCP) score, section 5.1.3 of Franc et al. (2023).

    Ridge regression of the classifier's probability of the true class,
    ``F(theta) = C/2 ||theta||^2 + (1/n) sum_i (p_hat(y_i | x_i) - s_theta(x_i))^2``,
    with the feature map of eq. (37). A high true-class probability means a
    confident prediction, so :meth:`score` returns ``-s_theta(x)`` (higher =
    reject first). Parameters and attributes are those of :class:`LossRegression`.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.scores import TCP
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> tcp = TCP(C=0).fit(X, [1, 1, 1, 1], [0.9, 0.8, 0.6, 0.5])
    >>> tcp.score([[0.0], [3.0]], [1, 1]).round(2).tolist()
    [-0.91, -0.49]
    """

    def fit(
        self, X: ArrayLike, y_pred: ArrayLike | None, true_class_proba: ArrayLike, *,
        baseline: ArrayLike | None = None,
    ) -> TCP:
        """Fit to ``p_hat(y_i | x_i)``, see :func:`true_class_probability`; ``baseline``
        as in :meth:`LossRegression.fit` (its coefficient comes out negative when the
        baseline uncertainty is informative, since ``s_theta`` is a confidence)."""
        self._fit_ridge(X, y_pred, true_class_proba, "true_class_proba", baseline, upper=1.0)
        return self

    def score(
        self, X: ArrayLike, y_pred: ArrayLike | None = None, *, baseline: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Uncertainty ``-s_theta(x)``: the negated predicted true-class probability."""
        return -self.decision_function(X, y_pred, baseline=baseline)


class _Chunk(NamedTuple):
    """One chunk of the SELE sum: its rows, the positions of rows with a loss, weights."""

    rows: NDArray[np.intp]
    lossy: NDArray[np.intp]
    weights: NDArray[np.float64]  # loss_l / m^2 for the lossy rows


def _chunks(
    losses: NDArray[np.float64], chunk_size: int | None, rng: np.random.Generator,
    canonical: NDArray[np.intp] | None = None,
) -> list[_Chunk]:
    """The random partition of the rows into chunks; ``canonical``: the rows in an order
    of their values, which the random permutation indexes (so the partition, and the fit,
    do not depend on the order the rows were given in)."""
    n = len(losses)
    if chunk_size is None:
        parts = [np.arange(n)]
    else:
        n_parts = max(1, round(n / chunk_size))
        drawn = rng.permutation(n)
        parts = np.array_split(drawn if canonical is None else canonical[drawn], n_parts)
    out = []
    for rows in parts:
        rows = np.sort(rows)
        lossy = np.flatnonzero(losses[rows] > 0)
        out.append(_Chunk(rows, lossy, losses[rows[lossy]] / float(len(rows)) ** 2))
    return out


class _SeleProblem:
    """``F(theta) = C/2 ||theta||^2 + (1/P) sum_k psi_sele(s_theta, T_k)``, eq. (30).

    ``psi_sele(s, T) = (1/m^2) sum_{i, j in T} loss_i * log(1 + exp(s_j - s_i))``.
    Only rows with a positive loss contribute a row of pairs, so one evaluation
    costs ``O(#{loss > 0} * m)`` exponentials. Value, gradient and Hessian-vector
    products are exact; the pair curvatures of the last evaluation are kept for
    the Newton steps.
    """

    def __init__(self, design: _Design, chunks: list[_Chunk], C: float, n_blocks: int) -> None:
        self.design = design
        self.chunks = chunks
        self.C = C
        self.n_blocks = n_blocks
        self.penalised = _penalised(design, n_blocks)
        self.size = self.penalised.size
        self._key: bytes | None = None
        self._curv: list[tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]] = []

    def value_grad(self, flat: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        s = _matvec(self.design, flat, self.n_blocks)
        g = np.zeros_like(s)
        total = 0.0
        curv = []
        for ch in self.chunks:
            s_rows = s[ch.rows]
            z = s_rows[None, :] - s_rows[ch.lossy][:, None]
            e = np.exp(-np.abs(z))
            softplus = np.maximum(z, 0.0) + np.log1p(e)
            inv = 1.0 / (1.0 + e)
            sigmoid = np.where(z >= 0.0, inv, e * inv)
            total += float(ch.weights @ softplus.sum(axis=1))
            w = sigmoid * ch.weights[:, None]
            g_rows = w.sum(axis=0)
            g_rows[ch.lossy] -= w.sum(axis=1)
            g[ch.rows] = g_rows
            h = (e * inv * inv * ch.weights[:, None]).astype(np.float32)
            curv.append((h, h.sum(axis=0), h.sum(axis=1)))
        self._key = flat.tobytes()
        self._curv = curv
        n_chunks = len(self.chunks)
        shrunk = self.penalised * flat
        grad = _rmatvec(self.design, g, self.n_blocks) / n_chunks + self.C * shrunk
        value = total / n_chunks + 0.5 * self.C * float(shrunk @ flat)
        return value, grad

    def hessp(self, flat: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._key != flat.tobytes():
            self.value_grad(flat)
        vs = _matvec(self.design, v, self.n_blocks)
        out = np.zeros_like(vs)
        for ch, (h, col, row) in zip(self.chunks, self._curv, strict=True):
            v_rows = vs[ch.rows]
            v_lossy = v_rows[ch.lossy]
            r = v_rows * col - v_lossy @ h
            r[ch.lossy] += v_lossy * row - h @ v_rows
            out[ch.rows] = r
        hv = _rmatvec(self.design, out, self.n_blocks) / len(self.chunks)
        return hv + self.C * self.penalised * v


@serializable("score")
class SELE(_LinearScore):
    """SELE score: minimise the smooth AuRC proxy of eq. (30), section 3.4 and 5.1.2.

    ``F(theta) = C/2 ||theta||^2 + (1/P) sum_k psi_sele(s_theta, T_k)`` where
    ``T_1..T_P`` is a random partition of the data into ``P = round(n / chunk_size)``
    chunks, as in the paper, drawn from ``random_state`` over the rows sorted by their
    values (so the same seed gives the same fit whatever the row order) (``chunk_size=None``:
    one chunk, the exact O(n^2)
    objective). ``psi_sele`` replaces the step function of the SELE loss (eq. 29,
    :func:`abstain.metrics.sele_loss`) by ``log(1 + exp(.))``; its minimiser ranks
    like the conditional risk (Fisher consistency, Theorem 9).

    The objective is smooth and convex; it is minimised by a trust-region Newton
    method with exact gradients and Hessian-vector products (``scipy.optimize``
    ``trust-ncg``), stopped when ``||grad F|| <= tol * ||grad F(theta_0)||`` (for
    ``C = 0`` in units where each feature's largest magnitude is near 1, as the objective
    itself is then unit-free). With
    ``C > 0`` the objective is ``C``-strongly convex and ``gap_bound_ =
    ||grad F||^2 / (2 C)`` bounds ``F(theta) - min F`` (not with a baseline, whose
    coefficient is not regularised: then ``inf``). With ``C = 0`` the minimum
    may not be attained (when a linear score puts every row with a loss above every
    row without one); the gradient then shrinks as the coefficients grow, so the
    relative stopping rule usually stops with ``converged_ = True`` at coefficients
    that grow with a smaller ``tol`` (only a very small ``tol`` reaches ``max_iter``,
    with a :class:`~abstain.exceptions.ConvergenceWarning`): use ``C > 0``.

    Cost per evaluation is ``O(#{loss > 0} * chunk_size)`` exponentials: zero-loss
    rows add no pair row. Memory holds those pair curvatures in float32.

    Parameters
    ----------
    C : float, default 1.0
        Regularisation constant, >= 0.
    chunk_size : int or None, default 500
        Expected chunk size; None for the exact unchunked objective.
    features, classes
        As in :class:`LossRegression`.
    tol : float, default 1e-6
        Relative gradient-norm tolerance.
    max_iter : int, default 200
        Newton iterations.
    warm_start : bool, default False
        Start from the current coefficients when refitting with the same shapes.
    random_state : int, Generator or None
        Seeds the random partition into chunks.

    Attributes
    ----------
    classes_, coef_, intercept_, n_features_in_
        As in :class:`LossRegression`.
    objective_ : float
        ``F`` at the solution.
    gap_bound_ : float
        Upper bound on ``F - min F`` (``inf`` when ``C = 0`` or with a baseline, and where
        the bound exceeds float64: losses near 1e170 and more).
    baseline_coef_, baseline_mean_, baseline_scale_ : float or None
        As in :class:`LossRegression` (the baseline as an input, its *Notes*).
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.scores import SELE
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(400, 2))
    >>> losses = (rng.uniform(size=400) < X[:, 0]).astype(float)  # risk grows with x0
    >>> sele = SELE(C=0.01, chunk_size=None).fit(X, np.zeros(400, int), losses)
    >>> bool(sele.coef_[0, 0] > 5 * abs(sele.coef_[0, 1])), sele.converged_
    (True, True)
    """

    _FIELDS: dict[str, Field] = {
        "objective_": Number(0.0),  # a mean of non-negative terms
        "gap_bound_": Number(0.0, special=("inf",)),
        "n_iter_": Int(0),
        "converged_": Flag(),
    }

    def __init__(
        self,
        C: float = 1.0,
        *,
        chunk_size: int | None = 500,
        features: str = "predicted_class",
        classes: ArrayLike | None = None,
        tol: float = 1e-6,
        max_iter: int = 200,
        warm_start: bool = False,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.C = C
        self.chunk_size = chunk_size
        self.features = features
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.random_state = random_state

    _parameter_constraints = {
        **_LinearScore._parameter_constraints,
        "chunk_size": [Interval(int, 2, None, closed="left",
                                condition="be an integer >= 2 or None"), None],
        "tol": [Interval(float, 0, None, closed="neither")],
        "max_iter": [Interval(int, 1, None, closed="left", condition="be a positive integer")],
        "warm_start": [Boolean()],
        "random_state": [RandomState()]}

    def _after_load(self) -> None:
        super()._after_load()
        # fit bounds the gap where the objective is strongly convex, and only there; the
        # bound grad_norm**2 / (2 C) of a C below 1e-290 may overflow to inf (no bound)
        # (losses near 1e170, an objective far above sqrt(C), square it beyond float64 too)
        bounded = float(self.C) > 0 and self.baseline_coef_ is None
        C = float(self.C)
        overflows = math.isinf(self.gap_bound_) and (
            0 < C < 1e-290 or self.objective_ >= 1e20 * math.sqrt(C))
        if bounded != math.isfinite(self.gap_bound_) and not overflows:
            raise ValueError(
                f"fitted.gap_bound_ must be {'finite' if bounded else 'inf'} for params.C = "
                f"{plain(self.C)} {'without' if self.baseline_coef_ is None else 'with'} a "
                f"baseline, as a fit computes it; got {plain(self.gap_bound_)}.")
        if self.n_iter_ > self.max_iter:
            raise ValueError(f"fitted.n_iter_ must be at most params.max_iter = "
                             f"{self.max_iter}, as a fit counts it; got {self.n_iter_}.")

    def fit(
        self, X: ArrayLike, y_pred: ArrayLike | None, losses: ArrayLike, *,
        baseline: ArrayLike | None = None,
    ) -> SELE:
        """Fit to the predictor's labels ``y_pred`` and observed ``losses`` on ``X``;
        ``baseline`` as in :meth:`LossRegression.fit`."""
        import scipy.optimize  # on first use: commands start faster

        self._validate_params()
        previous = self._theta() if self.warm_start and hasattr(self, "coef_") else None
        design = self._design(X, y_pred, fitting=True, baseline=baseline)
        target = as_losses(losses)
        check_same_length(X=design.rows, losses=target)
        if len(target) < 2:
            raise ValueError(f"X must have at least 2 samples for SELE; got {len(target)}.")
        n_blocks = len(design.bounds) - 1
        # the design's rows in the order of their values (block, features, baseline, loss)
        keys = [target[design.order], *([] if design.extra is None else [design.extra]),
                *design.rows[:, ::-1].T]
        # F / unit with the losses and C in units of a power of two near the largest loss
        # (exact): far from 1, gradients and curvatures under- or overflow
        unit = 2.0 ** (math.frexp(float(np.max(target)))[1] - 1) if np.any(target) else 1.0
        if math.isinf(float(self.C) / unit):
            raise ValueError(f"C = {plain(self.C)} is too large for losses of magnitude "
                             f"{unit:.3g} (C / losses beyond float64); scale the losses up.")
        chunks = _chunks(target[design.order] / unit, self.chunk_size,
                         np.random.default_rng(self.random_state),
                         None if self.chunk_size is None else np.lexsort(keys))
        raw = _SeleProblem(design, chunks, float(self.C) / unit, n_blocks)
        # in units where each feature is near 1 (powers of two): all for C = 0 (unit-free),
        # those above 1 for C > 0 (a ridge's C / unit**2 at 1e-30 is ill-conditioned)
        mags = np.concatenate((np.tile(np.max(np.abs(design.rows), axis=0), n_blocks),
                               [] if design.extra is None else [np.max(np.abs(design.extra))]))
        unit_of = np.where(mags > 0, np.ldexp(1.0, np.frexp(mags)[1] - 1), 1.0)
        problem = ScaledProblem(raw, unit_of if self.C == 0 else np.maximum(unit_of, 1.0))
        theta0 = np.zeros(problem.size)
        if previous is not None and previous.shape == theta0.shape:
            theta0 = previous * problem.scale
        _, g0 = problem.value_grad(np.zeros(theta0.size))
        top = float(np.max(np.abs(design.rows), initial=0.0))
        # the Hessian products hold squares of the features times steps: beyond 2**400 they
        # overflow (inside SciPy's solver, or as an infinite gradient norm: a constant score)
        if not (top <= 2.0**400 and np.isfinite(np.linalg.norm(g0))):
            raise ValueError(f"X holds features of magnitude up to {top:.4g}, which overflow "
                             f"float64 in the SELE objective's derivatives (beyond 2**400, "
                             f"about 2.6e120); scale the features.")
        # relative to the first gradient, but not below its round-off: with every loss
        # equal, 0 is the optimum and the first gradient is round-off itself
        eps = float(np.finfo(float).eps)
        floor = 128 * eps * max(float(np.mean(target / unit)), 1e-300)
        gtol = max(float(self.tol) * float(np.linalg.norm(g0)), floor)
        result = scipy.optimize.minimize(
            problem.value_grad,
            theta0.ravel(),
            jac=True,
            hessp=problem.hessp,
            method="trust-ncg",
            options={"gtol": gtol, "maxiter": int(self.max_iter)},
        )
        theta, grad_norm, polish = newton_polish(
            problem, result.x, gtol, max(0, int(self.max_iter) - int(result.nit))
        )
        theta = theta / problem.scale
        value, grad = raw.value_grad(theta)
        self._set_theta(theta, design)
        self.objective_ = value * unit
        strongly_convex = self.C > 0 and design.extra is None
        with np.errstate(over="ignore", under="ignore"):  # a tiny C: beyond float64 is none
            self.gap_bound_ = (float(np.float64(np.linalg.norm(grad)) ** 2 / (2.0 * raw.C)
                                     * unit) if strongly_convex else math.inf)
        self.n_iter_ = int(result.nit) + polish
        self.converged_ = bool(grad_norm <= gtol)
        if not self.converged_:
            warn(
                f"SELE stopped after {self.n_iter_} iterations with gradient norm "
                f"{grad_norm * unit:.3g} > tolerance {gtol * unit:.3g}; raise max_iter or C.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self
