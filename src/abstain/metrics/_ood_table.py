"""Every OOD metric of several scores in one call, with bootstrap intervals.

Re-exported by :mod:`abstain.metrics`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.ood_sample import (
    AUTO_EXACT_ROWS,
    N_DIRECTIONS,
    check_pair_search,
    resolve_search,
)
from .._core.optional import require
from .._core.pair_table import PairTable
from .._core.table import ScoreTable
from .._core.validation import (
    as_is_ood,
    as_real_array,
    check_fraction,
    check_int,
    check_probability,
    plain,
)
from ..exceptions import InfeasibleTargetWarning
from ._bootstrap import bootstrap_interval, check_bootstrap
from ._ood import (
    aupr_in,
    aupr_out,
    auroc,
    exact_envelope_metrics,
    fpr_at_tpr,
    oscr,
    selective_risk_at_tpr_fpr,
)

__all__ = ["OOD_METRICS", "AUTO_EXACT_ROWS", "OODEvaluation", "evaluate_ood"]

#: The columns of :func:`evaluate_ood`, in order, and whether each takes a score pair.
OOD_METRICS: dict[str, bool] = {
    "auroc": True,
    "aupr_in": False,
    "aupr_out": False,
    "fpr_at_tpr": True,
    "oscr": True,
    "risk_at_tpr_fpr": True,
}
_OSCR = list(OOD_METRICS).index("oscr")


class OODEvaluation(NamedTuple):
    """The table of :func:`evaluate_ood`: one row per score, one column per metric.

    A score pair's row mixes two kinds of value. Its AUROC, OSCR and FPR at TPR are those
    of the *envelope* over directions: at each FPR (or TPR) the best combined score
    ``cos(a) s_r + sin(a) s_g`` for it, an oracle chosen on the evaluated rows that no
    single rule attains at every operating point. Its risk at TPR/FPR is that of the one
    best rule for that target (what :class:`abstain.models.BoundedTPRFPR` fitted on these rows
    reaches). A fitted double-score rule evaluated as one column (its ``score``) has an
    AUROC at most, and an FPR at TPR at least, its pair's envelope value.

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
        False for a one-column metric of a score pair (AUPR-In, AUPR-Out) and for OSCR
        when a loss on an ID row exceeds 1.
    low, high : ndarray of shape (n_methods, n_metrics)
        The percentile bootstrap interval of each value (all NaN when ``n_bootstrap = 0``).
    confidence : float
    n_bootstrap : int
    search : list of str or None
        How each method's pair metrics were computed: None for one score column;
        ``"exact"`` (every direction), ``"grid"`` (the grid on the columns as given) or
        ``"scaled grid"`` (the grid on the columns divided by their standard deviations)
        for a pair.
    """

    methods: list[str]
    metrics: list[str]
    values: NDArray[np.float64]
    applicable: NDArray[np.bool_]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    confidence: float
    n_bootstrap: int
    search: list[str | None] = []

    def row(self, method: str) -> dict[str, float]:
        """The applicable metrics of one score, by key."""
        if method not in self.methods:
            raise ValueError(f"method must be one of {self.methods}; got {plain(method)}.")
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
            raise ValueError(f"scores must have str names; got {plain(name)}.")
        if isinstance(values, (ScoreTable, PairTable)):
            raise ValueError(f"scores[{name!r}] is a {type(values).__name__}; evaluate_ood "
                             "takes the rows (every score shares one is_ood, and its bootstrap "
                             "resamples rows): pass the table to the metrics themselves "
                             "(auroc, oscr, fpr_at_tpr, ...).")
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


#: Each column of the table as a function of (losses, is_ood, scores, tpr, fpr, search).
_FUNCS: dict[str, Callable[..., float]] = {
    "auroc": lambda ls, o, s, t, f, kw: auroc(o, s, **kw),
    "aupr_in": lambda ls, o, s, t, f, kw: aupr_in(o, s),
    "aupr_out": lambda ls, o, s, t, f, kw: aupr_out(o, s),
    "fpr_at_tpr": lambda ls, o, s, t, f, kw: fpr_at_tpr(o, s, t, **kw),
    "oscr": lambda ls, o, s, t, f, kw: oscr(ls, o, s, **kw),
    "risk_at_tpr_fpr": lambda ls, o, s, t, f, kw: selective_risk_at_tpr_fpr(ls, o, s, t, f,
                                                                             **kw),
}


def _table(losses: NDArray[np.float64], ood: NDArray[np.bool_],
           cols: dict[str, NDArray[np.float64]], applicable: NDArray[np.bool_], tpr: float,
           fpr: float, search: str, n_directions: int,
           ) -> tuple[NDArray[np.float64], list[str | None]]:
    """The values of every metric of every column, and how each pair was searched."""
    out = np.full(applicable.shape, np.nan)
    hows: list[str | None] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for i, raw in enumerate(cols.values()):
            how, s, keyword = resolve_search(raw, search)
            hows.append(how)
            kw = {"search": keyword or "grid",
                  "n_directions": n_directions}
            shared: dict[str, float] = {}
            if how == "exact":  # the envelope metrics share one sweep of the directions
                shared = exact_envelope_metrics(losses, ood, s, tpr,
                                                bool(applicable[i, _OSCR]))
            for j, key in enumerate(OOD_METRICS):
                if applicable[i, j]:
                    out[i, j] = (shared[key] if key in shared
                                 else _FUNCS[key](losses, ood, s, tpr, fpr, kw))
    return out, hows


def evaluate_ood(losses: ArrayLike | None, is_ood: ArrayLike,
                 scores: Mapping[str, ArrayLike], *, tpr: float = 0.95, fpr: float = 0.05,
                 search: str = "auto", n_directions: int = N_DIRECTIONS,
                 n_bootstrap: int = 0, confidence: float = 0.95,
                 random_state: Any = None) -> OODEvaluation:
    """Every OOD metric of each score (one column) and score pair (two columns) at once.

    The columns (:data:`OOD_METRICS`) are :func:`auroc`, :func:`aupr_in`,
    :func:`aupr_out`, :func:`fpr_at_tpr` at ``tpr``, :func:`oscr` and
    :func:`selective_risk_at_tpr_fpr` at TPR >= ``tpr`` and FPR <= ``fpr``; each value is
    exactly what that function returns, with its tie rule. Without ``losses`` (None),
    OSCR and the risk are computed with zero losses.

    A score pair ``(s_r, s_g)`` gets the metrics that take two columns; AUPR-In and
    AUPR-Out are not applicable to it. Its AUROC, OSCR and FPR at TPR are those of the
    *envelope* over the directions ``cos(a) s_r + sin(a) s_g``: an oracle that may take a
    different direction at each FPR, chosen on the evaluated rows, not the curve of one
    fitted rule. Its risk at TPR/FPR is that of the one best rule for that target (the
    rule :class:`abstain.models.BoundedTPRFPR` fits on these rows). To compare a fitted
    double-score rule with single scores, evaluate its combined ``score`` as one column.

    ``search`` says how a pair's directions are searched:

    - ``"exact"``: every direction. Unit-free (a positive rescaling of either column changes
      nothing), but it costs O(m^2 log m) for m distinct pairs: the AUROC, OSCR and FPR at
      TPR are read off one sweep of the directions (the envelopes of TPR and of CCR
      against FPR, computed together), the risk comes from the branch and bound of the
      exact fits. See docs/ood.md for measured times.
    - ``"grid"``: the ``n_directions`` grid ``k pi / n_directions`` on the columns as given
      (the metric functions' default): fast, but the value depends on the units of the
      columns and is at most (for FPR at TPR at least) the exact one.
    - ``"auto"`` (default): ``"exact"`` up to :data:`AUTO_EXACT_ROWS` (2,000) rows; above,
      the grid on the columns each divided by its standard deviation over the rows
      (``"scaled grid"``): still unit-free, a lower bound of the exact envelope (an upper
      bound for FPR at TPR), within about 1e-3 of it on continuous data. So a pair's table
      is unit-free at every size and exact at the sizes where that takes seconds; pass
      ``search="exact"`` for exact values on larger samples.

    :attr:`OODEvaluation.search` records, per method, which was used. A bootstrap resample
    has the rows' number of rows, so it is computed the same way.

    With ``n_bootstrap > 0``, each value gets a percentile bootstrap interval
    (:func:`bootstrap_interval`): the rows are resampled with replacement within ID and
    within OOD (so both stay present), and every metric of every score is computed on the
    same resamples. A pair's envelope metrics search the directions per resample, so they
    are the slow part of a bootstrap. The resamples draw from the rows sorted by their
    values (``key`` of :func:`bootstrap_interval`: the loss, the OOD mark, then every score
    column in the order of ``scores``), so the intervals do not depend on the row order.

    Parameters
    ----------
    losses : array-like of shape (n,) or None
        The classifier's loss on each row (ignored, and may be NaN, on OOD rows).
    is_ood : array-like of shape (n,), bool
        Both classes must be present.
    scores : dict of str to array-like of shape (n,) or (n, 2)
        Higher = more OOD (rejected first). Arrays, not tables: the bootstrap resamples
        rows (a :class:`~abstain.ScoreTable` or :class:`~abstain.PairTable` goes to the
        metric functions themselves).
    tpr : float in [0, 1], default 0.95
    fpr : float in [0, 1], default 0.05
    search : {"auto", "exact", "grid"}, default "auto"
    n_directions : int >= 1, default 360
        The grid of ``"grid"`` and of ``"auto"`` above :data:`AUTO_EXACT_ROWS` rows.
    n_bootstrap : int >= 0, default 0
        At most :data:`~abstain.metrics.MAX_BOOTSTRAP`, and ``n_bootstrap * n`` at
        most :data:`~abstain.metrics.MAX_BOOTSTRAP_ROWS` (2**31); larger requests
        raise ``ValueError`` before any work.
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
    >>> s = np.array([[0.1, 3.0], [0.5, 1.0], [0.2, 2.0], [0.9, 2.0], [0.4, 4.0]])
    >>> table = evaluate_ood(losses, is_ood, {"a": s[:, 0], "a+b": s})
    >>> round(table.row("a")["auroc"], 4), table.row("a+b")["auroc"], table.search
    (0.8333, 1.0, [None, 'exact'])
    >>> evaluate_ood(losses, is_ood, {"a+b": s * [100, 0.01]}).row("a+b")["auroc"]
    1.0
    """
    t, f = check_fraction("tpr", tpr), check_probability("fpr", fpr)
    search = check_pair_search(search)
    d = check_int("n_directions", n_directions, 1)
    check_int("n_bootstrap", n_bootstrap, 0)
    ood = as_is_ood(is_ood)
    n = ood.size
    b = check_bootstrap(n_bootstrap, n, low=0)
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
        applicable[:, _OSCR] = False
    values, hows = _table(ls, ood, cols, applicable, t, f, search, d)
    low = np.full(values.shape, np.nan)
    high = np.full(values.shape, np.nan)
    conf = float(confidence)
    if b:
        ci = bootstrap_interval(
            lambda i: _table(ls[i], ood[i], {k: s[i] for k, s in cols.items()}, applicable,
                             t, f, search, d)[0],
            ood, n_bootstrap=b, confidence=confidence, random_state=random_state,
            key=np.column_stack([ls, ood, *(s.reshape(n, -1) for s in cols.values())]))
        low, high, conf = ci.low, ci.high, ci.confidence
    return OODEvaluation(list(cols), list(OOD_METRICS), values, applicable, low, high,
                         conf, b, hows)
