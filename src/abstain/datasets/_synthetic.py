"""The 1-D example of section 3.1 of Franc, Prusa and Paplham (2023).

ID: ``p_I(x, y) = w_y N(x; m_y, v)`` with ``w = (0.3, 0.3, 0.4)``, ``m = (-1, 1, 3)``,
``v = 1``; OOD: ``p_O(x) = N(x; 3, 0.2)``; OOD prior ``pi = 0.25``; 0/1 loss. The paper
writes ``N(x; mu, sigma)`` "with mean mu and variance sigma", so the second argument
is read as a variance by default (``ood_scale="variance"``: OOD standard deviation
sqrt(0.2)); ``ood_scale="std"`` reads it as a standard deviation (0.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from .._core.validation import check_choice, check_random_state, plain

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class SyntheticOOD1D:
    """Known densities of the 1-D ID mixture and OOD Gaussian, with a sampler.

    Attributes
    ----------
    weights, means : tuple of float
        Class priors (non-negative, summing to 1) and means of the ID classes (labels 1,
        2, 3 by default: one per weight).
    id_std, ood_mean, ood_std, ood_prior : float
        Standard deviations above 0, ``ood_prior`` in [0, 1]; each is checked when the
        example is made.
    """

    weights: tuple[float, ...] = (0.3, 0.3, 0.4)
    means: tuple[float, ...] = (-1.0, 1.0, 3.0)
    id_std: float = 1.0
    ood_mean: float = 3.0
    ood_std: float = math.sqrt(0.2)
    ood_prior: float = 0.25

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64)
        m = np.asarray(self.means, dtype=np.float64)
        if w.ndim != 1 or w.size == 0 or m.shape != w.shape:
            raise ValueError(f"weights and means must be one per ID class, of one length; got "
                             f"{plain(self.weights)} and {plain(self.means)}.")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and abs(w.sum() - 1.0) <= 1e-9):
            raise ValueError(f"weights must be class priors, non-negative and summing to 1; "
                             f"got {plain(self.weights)}.")
        for name in ("id_std", "ood_std"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.number)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite standard deviation > 0; got "
                                 f"{plain(v)}.")
        if not (np.all(np.isfinite(m)) and math.isfinite(self.ood_mean)):
            raise ValueError(f"means and ood_mean must be finite; got {plain(self.means)} and "
                             f"{plain(self.ood_mean)}.")
        if not 0.0 <= self.ood_prior <= 1.0:
            raise ValueError(f"ood_prior must be in [0, 1]; got {plain(self.ood_prior)}.")

    def _log_joint(self, x: ArrayLike) -> F64:
        """``log p_I(x, y)`` for y = 1..K, shape ``x.shape + (K,)``."""
        x = np.asarray(x, dtype=np.float64)[..., None]
        return np.log(np.asarray(self.weights)) + stats.norm.logpdf(
            x, np.asarray(self.means), self.id_std)

    def joint_id(self, x: ArrayLike) -> F64:
        """``p_I(x, y)`` for y = 1..K, shape ``x.shape + (K,)`` ((n, K) for n inputs)."""
        return np.exp(self._log_joint(x))

    def p_id(self, x: ArrayLike) -> F64:
        """ID marginal density ``p_I(x)``."""
        return self.joint_id(x).sum(axis=-1)

    def p_ood(self, x: ArrayLike) -> F64:
        """OOD density ``p_O(x)``."""
        return stats.norm.pdf(np.asarray(x, dtype=np.float64), self.ood_mean, self.ood_std)

    def h_bayes(self, x: ArrayLike) -> NDArray[np.int64]:
        """Bayes ID classifier ``h_B(x)`` under the 0/1 loss (labels 1..K)."""
        return np.argmax(self._log_joint(x), axis=-1) + 1

    def r_bayes(self, x: ArrayLike) -> F64:
        """Conditional risk of ``h_B``: ``1 - max_y p_I(y | x)``, computed as the posterior
        of the other classes in log space (finite and accurate in the tails, where the
        densities underflow)."""
        lj = self._log_joint(x)
        post = np.exp(lj - special.logsumexp(lj, axis=-1, keepdims=True))
        top = np.argmax(lj, axis=-1)[..., None]
        return np.where(np.arange(lj.shape[-1]) == top, 0.0, post).sum(axis=-1)

    def g(self, x: ArrayLike) -> F64:
        """OOD/ID likelihood ratio ``p_O(x) / p_I(x)``, computed in log space (finite where
        both densities underflow; inf only beyond the float64 range)."""
        log_ood = stats.norm.logpdf(np.asarray(x, dtype=np.float64), self.ood_mean,
                                    self.ood_std)
        with np.errstate(over="ignore"):
            return np.exp(log_ood - special.logsumexp(self._log_joint(x), axis=-1))

    def sample(self, n: int, *, random_state: Any = None) -> tuple[F64, NDArray[np.int64]]:
        """Draw ``n`` inputs of the mixture; labels 1..K for ID and 0 for OOD.

        Returns
        -------
        x : ndarray of shape (n,)
        y : ndarray of shape (n,), int; ``y == 0`` marks OOD
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be a non-negative integer; got {plain(n)}.")
        check_random_state("random_state", random_state)
        rng = np.random.default_rng(random_state)
        ood = rng.random(n) < self.ood_prior
        w = np.asarray(self.weights, dtype=np.float64)
        y = np.where(ood, 0, rng.choice(w.size, size=n, p=w / w.sum()) + 1)
        means = np.where(ood, self.ood_mean, np.asarray(self.means)[np.maximum(y - 1, 0)])
        std = np.where(ood, self.ood_std, self.id_std)
        return means + std * rng.standard_normal(n), y


def synthetic_ood_1d(*, ood_scale: str = "variance") -> SyntheticOOD1D:
    """The paper's synthetic example (section 3.1).

    Parameters
    ----------
    ood_scale : {"variance", "std"}
        How to read the 0.2 of ``N(x; 3, 0.2)``; the ID classes have 1 either way.

    Examples
    --------
    >>> from abstain.datasets import synthetic_ood_1d
    >>> data = synthetic_ood_1d()
    >>> x, y = data.sample(5, random_state=0)
    >>> x.shape, set(y.tolist()) <= {0, 1, 2, 3}
    ((5,), True)
    >>> round(float(data.r_bayes([3.0])[0]), 4), int(data.h_bayes([3.0])[0])
    (0.0924, 3)
    """
    check_choice("ood_scale", ood_scale, ("variance", "std"))
    return SyntheticOOD1D(ood_std=math.sqrt(0.2) if ood_scale == "variance" else 0.2)
