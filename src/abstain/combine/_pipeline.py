"""z-values and a combiner in one fitted object, and the loader of combine files."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._core.base import ParamsMixin
from .._core.serialize import Array, Field, Nested, dumps, serializable
from .._core.validation import (
    F64,
    Boolean,
    Interval,
    Options,
    plain,
)
from ._pvalues import EmpiricalZ
from ._qp import as_covariance, inlier_covariance
from ._statistics import GLRT_METHODS, METHODS, combine

# --------------------------------------------------------------------------- pipeline
#: The largest ``epsilon`` of a :class:`ScoreCombiner`. Its z-values come from
#: :class:`EmpiricalZ`, whose p-values are at least ``1 / (n_train + 2)``: they lie within
#: +-10 for any ``n_train`` below 1e20, and with ``method="glrt"`` every ``epsilon`` above
#: them ranks the rows as Stouffer's sum does. The bound keeps the statistic, of the order
#: of ``n_scores * epsilon**2``, far from overflow.
EPSILON_MAX = 100.0


def check_epsilon_method(epsilon: object, method: object) -> None:
    """Raise when ``epsilon`` is given with a method that does not use it."""
    if epsilon is not None and method not in GLRT_METHODS:
        raise ValueError(f"epsilon is used only by methods 'glrt' and 'glrt_cov'; "
                         f"got epsilon={plain(epsilon)} with method={plain(method)}.")


def _check_positive_definite(cov: F64, what: str, fix: str = "") -> None:
    """Raise unless ``cov`` (symmetric) has a Cholesky factor, as ``glrt_cov`` needs."""
    try:
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(cov).min())
        raise ValueError(f"{what} must be symmetric positive definite (its Cholesky "
                         f"factorisation fails); got smallest eigenvalue {low:.4g}{fix}.") from None


@serializable("combine")
class ScoreCombiner(ParamsMixin):
    """Base scores -> empirical z-values -> one combined statistic (Algorithm 1, lines 2-4).

    ``fit`` learns the z-value maps (:class:`EmpiricalZ`) from inlier training scores and,
    for ``method="glrt_cov"``, the inlier covariance of eq. (34) from their in-sample
    z-values; ``score`` returns :func:`combine` of the z-values of new inputs.

    Parameters
    ----------
    method : str, default "glrt"
        One of :data:`METHODS`.
    epsilon : float in [0, 100], optional
        For ``glrt`` / ``glrt_cov``; default 0.25. Above the largest z-value (about 10)
        every ``epsilon`` ranks the rows as Stouffer's sum, hence the bound.
    sigma : float >= 0, default 1e-6
        Ridge of eq. (34), used by ``glrt_cov``.
    higher_is_inlier : bool, default False
        The base scores are inlier scores (larger = more inlier, as in the paper); they
        are negated on the way in. The statistic is higher = more OOD either way.

    Attributes
    ----------
    empirical_z_ : EmpiricalZ
    cov_ : ndarray of shape (n_scores, n_scores) or None

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.combine import ScoreCombiner
    >>> rng = np.random.default_rng(0)
    >>> comb = ScoreCombiner(method="glrt").fit(rng.normal(size=(500, 3)))
    >>> stat = comb.score([[0.0, 0.0, 0.0], [3.0, 3.0, 3.0]])
    >>> bool(stat[1] > stat[0])
    True
    """

    def __init__(self, *, method: str = "glrt", epsilon: float | None = None,
                 sigma: float = 1e-6, higher_is_inlier: bool = False) -> None:
        self.method = method
        self.epsilon = epsilon
        self.sigma = sigma
        self.higher_is_inlier = higher_is_inlier

    _parameter_constraints = {
        "method": [Options(METHODS)],
        "epsilon": [Interval(float, 0, EPSILON_MAX, closed="both", condition=(
            f"be a finite number in [0, {EPSILON_MAX:g}] (z-values lie within +-10; a larger "
            "epsilon ranks as Stouffer's sum)")), None],
        "sigma": [Interval(float, 0, None, closed="left")],
        "higher_is_inlier": [Boolean()]}

    def _validate_params(self) -> None:
        super()._validate_params()
        check_epsilon_method(self.epsilon, self.method)

    def fit(self, S_train: ArrayLike) -> ScoreCombiner:
        """Fit on inlier training base scores of shape (n_train, n_scores)."""
        self._validate_params()
        name = str(self.method)
        ez = EmpiricalZ(higher_is_inlier=self.higher_is_inlier).fit(S_train)
        self.cov_ = None
        if name == "glrt_cov":
            self.cov_ = inlier_covariance(ez.transform(S_train), self.sigma)
            _check_positive_definite(
                self.cov_, f"the inlier covariance of S_train (with sigma={self.sigma!r})",
                "; give sigma > 0, a ridge (the paper uses 1e-6)")
        self.empirical_z_ = ez
        return self

    def transform(self, S: ArrayLike) -> F64:
        """Empirical z-values of ``S``: shape (n_samples, n_scores)."""
        self._check_fitted("empirical_z_")
        return self.empirical_z_.transform(S)

    def score(self, S: ArrayLike) -> F64:
        """The combined statistic of base scores ``S`` (n_samples, n_scores): shape (n,)."""
        Z = self.transform(S)
        return combine(Z, self.method, epsilon=self.epsilon, cov=self.cov_)

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)

    _FIELDS: dict[str, Field] = {
        "empirical_z_": Nested("EmpiricalZ"),
        "cov_": Array(("m", "m"), none=True),
    }

    def _after_load(self) -> None:
        ez = self.empirical_z_
        if ez.higher_is_inlier != self.higher_is_inlier:
            raise ValueError("fitted.empirical_z_ must have the higher_is_inlier of params; got "
                             f"{plain(ez.higher_is_inlier)}.")
        if (self.cov_ is None) != (self.method != "glrt_cov"):
            raise ValueError("fitted.cov_ must be an array for method 'glrt_cov' and null for "
                             f"the others; got {'null' if self.cov_ is None else 'an array'} "
                             f"with method {self.method!r}.")
        if self.cov_ is not None:
            try:
                cov = as_covariance(self.cov_, ez.n_scores_)
            except ValueError as exc:
                raise ValueError(f"fitted.cov_: {exc}") from None
            _check_positive_definite(cov, "fitted.cov_")
