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
    plain,
)
from .._ood_search.sample import (
    AUTO_EXACT_ROWS,
    N_DIRECTIONS,
    check_pair_search,
    one_sample_per_table,
    resolve_search,
)
from ..exceptions import InfeasibleTargetWarning
from ..tables import TableResampler
from ..tables._pair import PairTable
from ..tables._score import ScoreTable
from ._bootstrap import bootstrap_interval, check_bootstrap
from ._ood import exact_envelope_metrics
from ._registry import MetricSpec, table_metrics

__all__ = ["AUTO_EXACT_ROWS", "OODEvaluation", "evaluate_ood", "evaluate_ood_tables"]


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
        The column of each OOD metric of the table in :data:`METRICS` (its
        :attr:`MetricSpec.column`), in registry order.
    values : ndarray of shape (n_methods, n_metrics)
        NaN where a metric does not apply (``applicable`` is False) or its target is
        infeasible (the selective risk).
    applicable : ndarray of bool, shape (n_methods, n_metrics)
        False for a one-column metric of a score pair (AUPR-In, AUPR-Out) and for a metric
        of losses in [0, 1] (OSCR) when a loss on an ID row exceeds 1.
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


def _column(spec: MetricSpec) -> str:
    return spec.column or spec.name


#: A sample of one method: the rows' truth (losses and OOD marks, by argument name) and
#: its scores, or None and a table that holds both.
_Sample = tuple[dict[str, Any] | None, Any]


def _table(samples: list[_Sample], applicable: NDArray[np.bool_], tpr: float, fpr: float,
           search: str, n_directions: int) -> tuple[NDArray[np.float64], list[str | None]]:
    """The values of every metric of every sample, and how each pair was searched."""
    specs = table_metrics("ood")
    settings = {"tpr": tpr, "fpr": fpr}
    out = np.full(applicable.shape, np.nan)
    hows: list[str | None] = []
    with warnings.catch_warnings(), one_sample_per_table():  # a table's metrics share its sample
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for i, (truth, raw) in enumerate(samples):
            how, s, keyword = resolve_search(raw, search)
            hows.append(how)
            kw = {"search": keyword or "grid",
                  "n_directions": n_directions}
            shared: dict[str, float] = {}
            if how == "exact":  # the envelope metrics share one sweep of the directions
                with_oscr = any(applicable[i, j] for j, spec in enumerate(specs)
                                if _column(spec) == "oscr")
                if truth is None:
                    shared = exact_envelope_metrics(s, None, None, tpr, with_oscr)
                else:
                    shared = exact_envelope_metrics(truth["losses"], truth["is_ood"], s, tpr,
                                                    with_oscr)
            for j, spec in enumerate(specs):
                if not applicable[i, j]:
                    continue
                key = _column(spec)
                if key in shared:
                    out[i, j] = shared[key]
                    continue
                args = (s,) if truth is None else (*(truth[t] for t in spec.truth), s)
                out[i, j] = spec.function(*args, **{p: settings[p] for p in spec.params},
                                          **(kw if spec.pair else {}))
    return out, hows


def _applicable(pair: list[bool], bounded: bool) -> NDArray[np.bool_]:
    """Which metric of the table applies to each method: one a pair has, one of losses in
    [0, 1] only for bounded losses."""
    specs = table_metrics("ood")
    return np.array([[(spec.pair or not p) and (bounded or not spec.bounded) for spec in specs]
                     for p in pair], dtype=bool).reshape(len(pair), len(specs))


def evaluate_ood(losses: ArrayLike | None, is_ood: ArrayLike,
                 scores: Mapping[str, ArrayLike], *, tpr: float = 0.95, fpr: float = 0.05,
                 search: str = "auto", n_directions: int = N_DIRECTIONS,
                 n_bootstrap: int = 0, confidence: float = 0.95,
                 random_state: Any = None) -> OODEvaluation:
    """Every OOD metric of each score (one column) and score pair (two columns) at once.

    The columns are the OOD metrics of the table in :data:`METRICS`, in registry order:
    :func:`auroc`, :func:`aupr_in`, :func:`aupr_out`, :func:`fpr_at_tpr` at ``tpr``,
    :func:`oscr` and :func:`selective_risk_at_tpr_fpr` at TPR >= ``tpr`` and FPR <=
    ``fpr`` (then any added with :func:`register_metric`); each value is exactly what that
    function returns, with its tie rule. Without ``losses`` (None),
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
    applicable = _applicable([s.ndim == 2 for s in cols.values()],
                             not np.any(np.nan_to_num(ls, nan=0.0)[~ood] > 1.0))
    values, hows = _table([({"losses": ls, "is_ood": ood}, s) for s in cols.values()],
                          applicable, t, f, search, d)
    low = np.full(values.shape, np.nan)
    high = np.full(values.shape, np.nan)
    conf = float(confidence)
    if b:
        # one column: grouped once, each resample's table weighted by the rows' draws (the
        # metrics of the resampled rows, a pass instead of sorts); a pair: its rows
        marked = np.where(ood, np.nan, np.nan_to_num(ls, nan=0.0))
        # {} for sums that could overflow: the rows (scaled sums) instead
        resamplers = TableResampler.of_columns(
            {name: s for name, s in cols.items() if s.ndim == 1}, marked, ood)

        def statistic(i: NDArray[np.intp]) -> NDArray[np.float64]:
            counts = np.bincount(i, minlength=n)
            return _table([(None, resamplers[name].table(counts)) if name in resamplers
                           else ({"losses": ls[i], "is_ood": ood[i]}, s[i])
                           for name, s in cols.items()], applicable, t, f, search, d)[0]

        ci = bootstrap_interval(
            statistic,
            ood, n_bootstrap=b, confidence=confidence, random_state=random_state,
            key=np.column_stack([ls, ood, *(s.reshape(n, -1) for s in cols.values())]))
        low, high, conf = ci.low, ci.high, ci.confidence
    return OODEvaluation(list(cols), [_column(s) for s in table_metrics("ood")], values,
                         applicable, low, high, conf, b, hows)


def evaluate_ood_tables(tables: Mapping[str, ScoreTable | PairTable], *, tpr: float = 0.95,
                        fpr: float = 0.05, search: str = "auto",
                        n_directions: int = N_DIRECTIONS) -> OODEvaluation:
    """:func:`evaluate_ood` on tables: every OOD metric of each score's
    :class:`~abstain.ScoreTable` (with OOD marks) and each score pair's
    :class:`~abstain.PairTable`.

    The same columns, values and ``search`` rule as :func:`evaluate_ood` on the tables'
    rows (for ``"auto"`` above :data:`AUTO_EXACT_ROWS` rows, a pair's standard deviations
    come from its table's counts, so they may differ from the rows' in the last bits). OSCR
    applies when no table holds an ID loss above 1. Tables keep no rows to resample, so
    there is no bootstrap: ``low`` and ``high`` are NaN.

    Parameters
    ----------
    tables : dict of str to ScoreTable or PairTable
        Each with OOD marks (``is_ood`` given when it was built); every metric checks its
        table as it does alone.
    tpr : float in [0, 1], default 0.95
    fpr : float in [0, 1], default 0.05
    search : {"auto", "exact", "grid"}, default "auto"
    n_directions : int >= 1, default 360

    Returns
    -------
    OODEvaluation

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import evaluate_ood, evaluate_ood_tables
    >>> from abstain.tables import ScoreTable
    >>> is_ood = np.array([0, 0, 0, 1, 1], bool)
    >>> losses = np.array([0.0, 1.0, 0.0, 0.0, 0.0])
    >>> s = np.array([0.1, 0.5, 0.2, 0.9, 0.4])
    >>> tables = {"a": ScoreTable.from_arrays(s, losses, is_ood=is_ood)}
    >>> table = evaluate_ood_tables(tables, fpr=0.5)
    >>> table.row("a") == evaluate_ood(losses, is_ood, {"a": s}, fpr=0.5).row("a")
    True
    >>> round(table.row("a")["auroc"], 4)
    0.8333
    """
    t, f = check_fraction("tpr", tpr), check_probability("fpr", fpr)
    search = check_pair_search(search)
    d = check_int("n_directions", n_directions, 1)
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must be a non-empty dict of name -> ScoreTable or PairTable; "
                         f"got {type(tables).__name__}"
                         f"{' (empty)' if isinstance(tables, Mapping) else ''}.")
    for name, table in tables.items():
        if not isinstance(table, (ScoreTable, PairTable)):
            raise ValueError(f"tables[{name!r}] must be a ScoreTable or a PairTable; got "
                             f"{type(table).__name__}.")
    applicable = _applicable([isinstance(x, PairTable) for x in tables.values()],
                             all(x.max_loss <= 1.0 for x in tables.values()))
    values, hows = _table([(None, x) for x in tables.values()], applicable, t, f, search, d)
    nan = np.full(values.shape, np.nan)
    return OODEvaluation(list(tables), [_column(s) for s in table_metrics("ood")], values,
                         applicable, nan, nan.copy(), 0.95, 0, hows)
