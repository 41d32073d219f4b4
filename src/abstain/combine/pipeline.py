"""z-values and a combiner in one fitted object, and the loader of combine files."""

from __future__ import annotations

import json
from typing import Any

from numpy.typing import ArrayLike

from .._core.base import ParamsMixin
from .._core.serialize import COMBINE_FORMAT as _FORMAT
from .._core.validation import F64, check_choice, check_positive
from .guarantee import GuaranteedDetector
from .pvalues import EmpiricalZ
from .qp import as_covariance, inlier_covariance
from .statistics import GLRT_METHODS, METHODS, combine


# --------------------------------------------------------------------------- pipeline
class ScoreCombiner(ParamsMixin):
    """Base scores -> empirical z-values -> one combined statistic (Algorithm 1, lines 2-4).

    ``fit`` learns the z-value maps (:class:`EmpiricalZ`) from inlier training scores and,
    for ``method="glrt_cov"``, the inlier covariance of eq. (34) from their in-sample
    z-values; ``score`` returns :func:`combine` of the z-values of new inputs.

    Parameters
    ----------
    method : str, default "glrt"
        One of :data:`METHODS`.
    epsilon : float >= 0, optional
        For ``glrt`` / ``glrt_cov``; default 0.25.
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

    def fit(self, S_train: ArrayLike) -> ScoreCombiner:
        """Fit on inlier training base scores of shape (n_train, n_scores)."""
        name = check_choice("method", self.method, METHODS)
        if self.epsilon is not None:
            if name not in GLRT_METHODS:
                raise ValueError(f"epsilon is used only by methods 'glrt' and 'glrt_cov'; "
                                 f"got epsilon={self.epsilon!r} with method={name!r}.")
            check_positive("epsilon", self.epsilon, allow_zero=True)
        ez = EmpiricalZ(higher_is_inlier=self.higher_is_inlier).fit(S_train)
        self.cov_ = None
        if name == "glrt_cov":
            self.cov_ = inlier_covariance(ez.transform(S_train), self.sigma)
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
        """Serialise to plain JSON (format ``abstain.combine/1``); load with :func:`from_json`."""
        self._check_fitted("empirical_z_")
        return json.dumps(self._doc(), sort_keys=True, allow_nan=False)

    def _doc(self) -> dict[str, Any]:
        params = {"method": self.method,
                  "epsilon": None if self.epsilon is None else float(self.epsilon),
                  "sigma": float(self.sigma), "higher_is_inlier": bool(self.higher_is_inlier)}
        fitted = {"empirical_z_": self.empirical_z_._doc(),
                  "cov_": None if self.cov_ is None else self.cov_.tolist()}
        return {"format": _FORMAT, "model": "ScoreCombiner", "params": params, "fitted": fitted}

    def _load(self, fitted: dict[str, Any]) -> None:
        ez = _from_doc(fitted["empirical_z_"])
        if not isinstance(ez, EmpiricalZ):
            raise ValueError("empirical_z_ in the file must be an EmpiricalZ.")
        self.empirical_z_ = ez
        cov = fitted.get("cov_")
        self.cov_ = None if cov is None else as_covariance(cov, ez.n_scores_)


_MODELS: dict[str, type[EmpiricalZ] | type[GuaranteedDetector] | type[ScoreCombiner]] = {
    "EmpiricalZ": EmpiricalZ, "GuaranteedDetector": GuaranteedDetector,
    "ScoreCombiner": ScoreCombiner,
}


def _from_doc(doc: Any) -> EmpiricalZ | GuaranteedDetector | ScoreCombiner:
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(f"text must be a JSON object written by to_json (format {_FORMAT!r}).")
    name = doc.get("model")
    if name not in _MODELS:
        raise ValueError(f"model must be one of {sorted(_MODELS)}; got {name!r}.")
    obj = _MODELS[name](**doc.get("params", {}))
    obj._load(doc.get("fitted", {}))
    return obj


def from_json(text: str) -> EmpiricalZ | GuaranteedDetector | ScoreCombiner:
    """Load an object of this module written by its ``to_json``; only plain JSON is parsed.

    Examples
    --------
    >>> from abstain.combine import EmpiricalZ, from_json
    >>> ez = EmpiricalZ().fit([[1.0], [2.0], [3.0]])
    >>> from_json(ez.to_json()).transform([[2.5]]).round(4).tolist()
    [[0.2533]]
    """
    return _from_doc(json.loads(text))
