"""Empirical z-values (eq. 21) and p-values from a calibration sample (eqs. 9, 22)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._core.base import NamedFeatures, ParamsMixin
from .._core.serialize import Array, Field, dumps, serializable
from .._core.validation import (
    F64,
    Boolean,
    as_matrix,
    as_real_array,
    as_scores,
    check_columns,
)


# --------------------------------------------------------------------------- z-values
@serializable("combine")
class EmpiricalZ(NamedFeatures, ParamsMixin):
    """Empirical z-values of base scores from inlier training data (eq. 21, negated).

    Column ``l`` of ``transform(S)`` is ``z_l(s) = Phi^{-1}(1 - p_hat_l(s))`` with the
    continuity-corrected upper tail ``p_hat_l(s) = (1 + #{i : S_train[i, l] >= s}) / (n + 2)``.
    This is the paper's ``-Phi^{-1}(F_hat_l(s))`` with its ECDF ``F_hat = c / n`` replaced
    by ``(c + 1) / (n + 2)``, so no z is infinite.

    Direction: inputs are higher = more OOD (set ``higher_is_inlier=True`` to negate
    inlier scores on the way in); z is N(0, 1)-like on inliers and large for OOD inputs.
    Ties: a training score equal to ``s`` counts as ``>= s``. Bounds: every z lies in
    ``[-b, b]`` with ``b = Phi^{-1}(1 - 1/(n + 2))``; on fresh inliers with continuous
    scores z is exactly symmetric about 0 (see the module docstring).

    Parameters
    ----------
    higher_is_inlier : bool, default False
        Negate ``S`` in ``fit`` and ``transform`` (for scores where larger = more inlier).

    Attributes
    ----------
    sorted_train_ : ndarray of shape (n_scores, n_train)
        The training scores of each column, sorted ascending (after any negation).
    n_train_, n_scores_ : int

    Examples
    --------
    >>> from abstain.combine import EmpiricalZ
    >>> ez = EmpiricalZ().fit([[0.0, 10.0], [1.0, 20.0], [2.0, 30.0]])
    >>> ez.transform([[1.0, 35.0], [-5.0, 20.0]]).round(3)
    array([[-0.253,  0.842],
           [-0.842, -0.253]])
    """

    def __init__(self, *, higher_is_inlier: bool = False) -> None:
        self.higher_is_inlier = higher_is_inlier

    _parameter_constraints = {"higher_is_inlier": [Boolean()]}

    def fit(self, S_train: ArrayLike) -> EmpiricalZ:
        """Store the sorted inlier training scores.

        Parameters
        ----------
        S_train : array-like of shape (n_train >= 2, n_scores)
            Base scores of inlier training inputs, one column per score.
        """
        self._validate_params()
        flip = bool(self.higher_is_inlier)
        S = as_matrix(S_train, "S_train", columns="n_scores", min_rows=2)
        self._fit_names(S_train)
        if flip:
            S = -S
        self.sorted_train_ = np.sort(S.T, axis=1)
        self.n_train_, self.n_scores_ = S.shape
        return self

    def transform(self, S: ArrayLike) -> F64:
        """Empirical z-values of ``S``: array of shape (n_samples, n_scores).

        Parameters
        ----------
        S : array-like of shape (n_samples, n_scores)
        """
        self._check_fitted("sorted_train_")
        self._check_names(S)
        arr = as_matrix(S, "S", columns="n_scores")
        check_columns("S", arr, self.n_scores_)
        if self.higher_is_inlier:
            arr = -arr
        n = self.n_train_
        z = np.empty(arr.shape)
        for j in range(self.n_scores_):
            below = np.searchsorted(self.sorted_train_[j], arr[:, j], side="left")
            # upper tail p = (1 + #{train >= s}) / (n + 2), lower q = (1 + #{train < s}) / (n + 2)
            p = (n + 1 - below) / (n + 2.0)
            q = (1 + below) / (n + 2.0)
            # ndtri is accurate for small arguments: evaluate it on the smaller tail
            z[:, j] = np.where(q <= 0.5, special.ndtri(q), -special.ndtri(p))
        return z

    def fit_transform(self, S_train: ArrayLike) -> F64:
        """``fit(S_train).transform(S_train)`` (in-sample z-values, as used by eq. 34)."""
        return self.fit(S_train).transform(S_train)

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)

    _FIELDS: dict[str, Field] = {"sorted_train_": Array(("n_scores", "n_train"))}

    def _after_load(self) -> None:
        s = self.sorted_train_
        if s.shape[1] < 2:  # as fit refuses fewer rows
            raise ValueError(f"fitted.sorted_train_ must hold at least 2 training rows; got "
                             f"{s.shape[1]}.")
        if np.any(s[:, 1:] < s[:, :-1]):  # compared, not subtracted: no overflow
            raise ValueError("fitted.sorted_train_ must be sorted ascending along each row.")
        self.n_scores_, self.n_train_ = self.sorted_train_.shape

    def _n_named(self) -> int:
        return int(self.n_scores_)


# --------------------------------------------------------------------------- p-values
def _count_ge(cal_stat: ArrayLike, stat: ArrayLike) -> tuple[NDArray[np.int64], int]:
    """``#{cal >= s}`` for every entry of ``stat`` (1-D, or column-wise for 2-D)."""
    cal = as_real_array(cal_stat, "cal_stat")
    if cal.ndim == 1:
        c = as_scores(cal, "cal_stat")
        s = as_scores(stat, "stat", allow_empty=True)
        srt = np.sort(c)
        return c.size - np.searchsorted(srt, s, side="left"), c.size
    if cal.ndim != 2:
        raise ValueError(
            f"cal_stat must be 1-D (n,) or 2-D (n, m); got an array of shape {cal.shape}."
        )
    c2 = as_matrix(cal, "cal_stat", columns="n_scores")
    s2 = as_real_array(stat, "stat")
    if s2.ndim != 2 or s2.shape[1] != c2.shape[1]:
        raise ValueError(
            f"stat must be 2-D with {c2.shape[1]} column(s) like cal_stat; "
            f"got an array of shape {s2.shape}."
        )
    if s2.size and not np.isfinite(s2).all():
        raise ValueError(f"stat must be finite; got {int((~np.isfinite(s2)).sum())} "
                         "NaN or infinite value(s).")
    out = np.empty(s2.shape, dtype=np.int64)
    for j in range(c2.shape[1]):
        srt = np.sort(c2[:, j])
        out[:, j] = c2.shape[0] - np.searchsorted(srt, s2[:, j], side="left")
    return out, c2.shape[0]


def empirical_pvalues(cal_stat: ArrayLike, stat: ArrayLike) -> F64:
    """Plug-in p-values of eq. (9) from a calibration sample: ``#{cal >= s} / n``.

    In the library direction a larger statistic is more extreme, so the paper's
    ``Pr{s(X) <= s | H0}`` becomes the upper tail. Ties count as at least as extreme.
    The value can be 0 (``s`` above every calibration value); use
    :func:`conformal_pvalues` for p-values in (0, 1] with a finite-sample guarantee.

    Parameters
    ----------
    cal_stat : array-like of shape (n,) or (n, m)
        Statistics of inlier calibration inputs (column-wise if 2-D).
    stat : array-like of shape (k,) or (k, m)

    Returns
    -------
    ndarray of the shape of ``stat``

    Examples
    --------
    >>> from abstain.combine import empirical_pvalues
    >>> empirical_pvalues([1.0, 2.0, 2.0, 3.0], [0.5, 2.0, 3.5]).tolist()
    [1.0, 0.75, 0.0]
    """
    count, n = _count_ge(cal_stat, stat)
    return np.asarray(count / float(n), dtype=np.float64)


def conformal_pvalues(cal_stat: ArrayLike, stat: ArrayLike) -> F64:
    """Conformal p-values of eq. (22): ``(1 + #{cal >= s}) / (n + 1)``.

    The paper's ``(1 + |{x_i : t(x_i) <= t}|) / (1 + v)`` in the library direction (a
    larger statistic is more extreme); ties count as at least as extreme, so the p-value
    is valid (``Pr{p <= a} <= a`` for an exchangeable inlier) for any score distribution.
    Values lie in ``[1/(n + 1), 1]``.

    Parameters
    ----------
    cal_stat : array-like of shape (n,) or (n, m)
        Statistics of inlier calibration inputs, independent of any data used to build
        the statistic (column-wise if 2-D).
    stat : array-like of shape (k,) or (k, m)

    Returns
    -------
    ndarray of the shape of ``stat``

    Examples
    --------
    >>> from abstain.combine import conformal_pvalues
    >>> conformal_pvalues([1.0, 2.0, 2.0, 3.0], [0.5, 2.0, 3.5]).tolist()
    [1.0, 0.8, 0.2]
    """
    count, n = _count_ge(cal_stat, stat)
    return np.asarray((1.0 + count) / (n + 1.0), dtype=np.float64)
