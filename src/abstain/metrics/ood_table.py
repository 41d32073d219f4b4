"""Every OOD metric of several scores in one call, with bootstrap intervals.

Re-exported by :mod:`abstain.metrics`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.optional import require
from .._core.validation import (
    as_is_ood,
    as_real_array,
    check_fraction,
    check_int,
    check_probability,
)
from ..exceptions import InfeasibleTargetWarning
from .bootstrap import bootstrap_interval
from .ood import aupr_in, aupr_out, auroc, fpr_at_tpr, oscr, selective_risk_at_tpr_fpr

__all__ = ["OOD_METRICS", "OODEvaluation", "evaluate_ood"]

#: The columns of :func:`evaluate_ood`, in order, and whether each takes a score pair.
OOD_METRICS: dict[str, bool] = {
    "auroc": True,
    "aupr_in": False,
    "aupr_out": False,
    "fpr_at_tpr": False,
    "oscr": True,
    "risk_at_tpr_fpr": True,
}


class OODEvaluation(NamedTuple):
    """The table of :func:`evaluate_ood`: one row per score, one column per metric.

    Attributes
    ----------
    methods : list of str
        The score names, in the order given.
    metrics : list of str
        The keys of :data:`OOD_METRICS`.
    values : ndarray of shape (n_methods, n_metrics)
        NaN where a metric does not apply (``applicable`` is False) or its target is
        infeasible (the selective risk).
    applicable : ndarray of bool, shape (n_methods, n_metrics)
        False for a one-column metric of a score pair and for OSCR when a loss on an ID row
        exceeds 1.
    low, high : ndarray of shape (n_methods, n_metrics)
        The percentile bootstrap interval of each value (all NaN when ``n_bootstrap = 0``).
    confidence : float
    n_bootstrap : int
    """

    methods: list[str]
    metrics: list[str]
    values: NDArray[np.float64]
    applicable: NDArray[np.bool_]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    confidence: float
    n_bootstrap: int

    def row(self, method: str) -> dict[str, float]:
        """The applicable metrics of one score, by key."""
        if method not in self.methods:
            raise ValueError(f"method must be one of {self.methods}; got {method!r}.")
        i = self.methods.index(method)
        return {k: float(self.values[i, j]) for j, k in enumerate(self.metrics)
                if self.applicable[i, j]}

    def to_frame(self) -> Any:
        """The table as a ``pandas.DataFrame`` (extra ``io``): one row per score, the
        metrics as columns and, with a bootstrap, ``<metric>_low`` and ``<metric>_high``."""
        pd = require("pandas", "io", "OODEvaluation.to_frame")
        data: dict[str, Any] = {}
        for j, k in enumerate(self.metrics):
            data[k] = self.values[:, j]
            if self.n_bootstrap:
                data[f"{k}_low"], data[f"{k}_high"] = self.low[:, j], self.high[:, j]
        return pd.DataFrame(data, index=pd.Index(self.methods, name="method"))


def _score_columns(scores: Mapping[str, ArrayLike], n: int) -> dict[str, NDArray[np.float64]]:
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must be a non-empty dict of name -> scores of shape (n,) or "
                         f"(n, 2); got {type(scores).__name__}"
                         f"{' (empty)' if isinstance(scores, Mapping) else ''}.")
    out = {}
    for name, values in scores.items():
        if not isinstance(name, str):
            raise ValueError(f"scores must have str names; got {name!r}.")
        s = as_real_array(values, f"scores[{name!r}]")
        if s.ndim == 2 and s.shape[1] == 1:
            s = s[:, 0]
        if s.shape[:1] != (n,) or not (s.ndim == 1 or (s.ndim == 2 and s.shape[1] == 2)):
            raise ValueError(f"scores[{name!r}] must have one or two columns and the shape of "
                             f"is_ood ({n},); got {s.shape}.")
        if not np.isfinite(s).all():
            raise ValueError(f"scores[{name!r}] must be finite; got "
                             f"{int(np.count_nonzero(~np.isfinite(s)))} non-finite value(s).")
        out[name] = s
    return out


def _table(losses: NDArray[np.float64], ood: NDArray[np.bool_],
           cols: dict[str, NDArray[np.float64]], applicable: NDArray[np.bool_], tpr: float,
           fpr: float) -> NDArray[np.float64]:
    funcs = {
        "auroc": lambda s: auroc(ood, s),
        "aupr_in": lambda s: aupr_in(ood, s),
        "aupr_out": lambda s: aupr_out(ood, s),
        "fpr_at_tpr": lambda s: fpr_at_tpr(ood, s, tpr),
        "oscr": lambda s: oscr(losses, ood, s),
        "risk_at_tpr_fpr": lambda s: selective_risk_at_tpr_fpr(losses, ood, s, tpr, fpr),
    }
    out = np.full(applicable.shape, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for i, s in enumerate(cols.values()):
            for j, key in enumerate(OOD_METRICS):
                if applicable[i, j]:
                    out[i, j] = funcs[key](s)
    return out


def evaluate_ood(losses: ArrayLike | None, is_ood: ArrayLike,
                 scores: Mapping[str, ArrayLike], *, tpr: float = 0.95, fpr: float = 0.05,
                 n_bootstrap: int = 0, confidence: float = 0.95,
                 random_state: Any = None) -> OODEvaluation:
    """Every OOD metric of each score (one column) and score pair (two columns) at once.

    The columns (:data:`OOD_METRICS`) are :func:`auroc`, :func:`aupr_in`,
    :func:`aupr_out`, :func:`fpr_at_tpr` at ``tpr``, :func:`oscr` and
    :func:`selective_risk_at_tpr_fpr` at TPR >= ``tpr`` and FPR <= ``fpr``; each value is
    exactly what that function returns, with its tie rule. A score pair ``(s_r, s_g)``
    gets the metrics that take two columns (AUROC and OSCR: the area under the envelope
    over the grid of directions, an oracle that may pick a different direction at each
    FPR; the risk: the best direction); its one-column metrics are not applicable.
    Without ``losses`` (None), OSCR and the risk are computed with zero losses.

    With ``n_bootstrap > 0``, each value gets a percentile bootstrap interval
    (:func:`bootstrap_interval`): the rows are resampled with replacement within ID and
    within OOD (so both stay present), and every metric of every score is computed on the
    same resamples. A pair's envelope metrics scan every direction per resample, so they
    are the slow part of a bootstrap.

    Parameters
    ----------
    losses : array-like of shape (n,) or None
        The classifier's loss on each row (ignored, and may be NaN, on OOD rows).
    is_ood : array-like of shape (n,), bool
        Both classes must be present.
    scores : dict of str to array-like of shape (n,) or (n, 2)
        Higher = more OOD (rejected first).
    tpr : float in [0, 1], default 0.95
    fpr : float in [0, 1], default 0.05
    n_bootstrap : int >= 0, default 0
    confidence : float in (0, 1), default 0.95
    random_state : None, int or numpy Generator
        Seeds the resamples.

    Returns
    -------
    OODEvaluation

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import evaluate_ood
    >>> is_ood = np.array([0, 0, 0, 1, 1], bool)
    >>> losses = np.array([0.0, 1.0, 0.0, np.nan, np.nan])
    >>> table = evaluate_ood(losses, is_ood, {"a": [0.1, 0.5, 0.2, 0.9, 0.4]})
    >>> round(table.row("a")["auroc"], 4), table.metrics[:2]
    (0.8333, ['auroc', 'aupr_in'])
    """
    t, f = check_fraction("tpr", tpr), check_probability("fpr", fpr)
    b = check_int("n_bootstrap", n_bootstrap, 0)
    ood = as_is_ood(is_ood)
    n = ood.size
    cols = _score_columns(scores, n)
    if losses is None:
        ls = np.zeros(n)
    else:
        ls = as_real_array(losses, "losses")
        if ls.shape != (n,):
            raise ValueError(f"losses must have the shape of is_ood ({n},); got {ls.shape}.")
    pair = np.array([s.ndim == 2 for s in cols.values()])
    takes_pair = np.array(list(OOD_METRICS.values()))
    applicable = np.where(pair[:, None], takes_pair[None, :], True)
    if np.any(np.nan_to_num(ls, nan=0.0)[~ood] > 1.0):
        applicable[:, list(OOD_METRICS).index("oscr")] = False
    values = _table(ls, ood, cols, applicable, t, f)
    low = np.full(values.shape, np.nan)
    high = np.full(values.shape, np.nan)
    conf = float(confidence)
    if b:
        ci = bootstrap_interval(
            lambda i: _table(ls[i], ood[i], {k: s[i] for k, s in cols.items()}, applicable,
                             t, f),
            ood, n_bootstrap=b, confidence=confidence, random_state=random_state)
        low, high, conf = ci.low, ci.high, ci.confidence
    return OODEvaluation(list(cols), list(OOD_METRICS), values, applicable, low, high,
                         conf, b)
