"""Every OOD metric of several scores in one call, with bootstrap intervals.

Re-exported by :mod:`abstain.metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import quiet
from .._core.optional import require
from .._core.parallel import check_jobs
from .._core.validation import (
    Interval,
    RandomState,
    as_is_ood,
    as_real_array,
    check_fraction,
    check_int,
    check_probability,
    plain,
    validate_params,
)
from .._ood_search.sample import (
    AUTO_EXACT_ROWS,
    N_DIRECTIONS,
    Sample,
    check_directions,
    check_loss_mass,
    check_pair_search,
    check_resampled_losses,
    one_sample_per_table,
    resolve_search,
)
from ..exceptions import InfeasibleTargetWarning
from ..tables import TableResampler
from ..tables._pair import PairTable
from ..tables._resample import row_counts
from ..tables._score import ScoreTable
from ._bootstrap import bootstrap_interval, check_bootstrap
from ._ood import exact_envelope_metrics, grid_pair_metrics, pair_sample
from ._registry import MetricSpec, table_metrics
from ._replicates import metric_replicates, resample_counts

__all__ = ["AUTO_EXACT_ROWS", "OODEvaluation", "PairResampler", "evaluate_ood",
           "evaluate_ood_tables"]


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
    oracle : ndarray of bool, shape (n_methods, n_metrics)
        Which values are a pair's envelope (above), as a property.
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

    @property
    def oracle(self) -> NDArray[np.bool_]:
        """True (shape of ``values``) for a pair's envelope values: its metrics registered
        with ``pair="envelope"`` (AUROC, FPR at TPR, OSCR), an oracle over directions chosen
        on the evaluated rows, not the value of one detector. Compare a single score with
        single scores, or with a fitted double-score rule evaluated as one column.

        Examples
        --------
        >>> import numpy as np
        >>> from abstain.metrics import evaluate_ood
        >>> s = np.array([[0.1, 3.0], [0.5, 1.0], [0.2, 2.0], [0.9, 2.0], [0.4, 4.0]])
        >>> ev = evaluate_ood(None, [0, 0, 0, 1, 1], {"a": s[:, 0], "a+b": s})
        >>> dict(zip(ev.metrics, ev.oracle[1].tolist()))["auroc"], bool(ev.oracle[0].any())
        (True, False)
        """
        kinds = {_column(spec): spec.pair for spec in table_metrics("ood")}
        pairs = [how is not None for how in self.search] if self.search else \
            [False] * len(self.methods)
        envelope = np.array([kinds.get(k) == "envelope" for k in self.metrics], dtype=bool)
        return np.array(pairs, dtype=bool)[:, None] & envelope[None, :] & self.applicable

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
#: its scores, or None and a table that holds both, or None and the sample of a pair (or of
#: its resample) on the grid's kept orders (:class:`PairResampler`).
_Sample = tuple[dict[str, Any] | None, Any]

#: The columns a pair's shared searches give (:func:`exact_envelope_metrics`,
#: :func:`grid_pair_metrics`); a pair metric added to the registry is computed on its own.
_SHARED = ("auroc", "fpr_at_tpr", "oscr", "risk_at_tpr_fpr")


def _table(samples: list[_Sample], applicable: NDArray[np.bool_], tpr: float, fpr: float,
           search: str, n_directions: int, resampled: bool = False,
           ) -> tuple[NDArray[np.float64], list[str | None]]:
    """The values of every metric of every sample, and how each pair was searched
    (``resampled``: ``"auto"`` as for a bootstrap, :func:`resolve_search`)."""
    specs = table_metrics("ood")
    settings = {"tpr": tpr, "fpr": fpr}
    out = np.full(applicable.shape, np.nan)
    hows: list[str | None] = []
    # a table's metrics share its sample
    with quiet(InfeasibleTargetWarning), one_sample_per_table():
        for i, (truth, raw) in enumerate(samples):
            with_oscr = any(applicable[i, j] for j, spec in enumerate(specs)
                            if _column(spec) == "oscr")
            if isinstance(raw, Sample):  # a pair (or a resample) on its grid's kept orders
                hows.append("grid")
                shared = grid_pair_metrics(raw, tpr, fpr, with_oscr, n_directions)
                s, kw = None, {}
            else:
                how, s, keyword = resolve_search(raw, search, resampled=resampled)
                hows.append(how)
                kw = {"search": keyword or "grid", "n_directions": n_directions}
                shared = {}
                if how is not None:  # a pair: its metrics share one search of the directions
                    # (losses, is_ood, scores), or the table in the place of the losses
                    args: tuple[Any, Any, Any] = ((s, None, None) if truth is None else
                                                  (truth["losses"], truth["is_ood"], s))
                    if how == "exact":
                        shared = exact_envelope_metrics(*args, tpr, with_oscr)
                    else:
                        shared = grid_pair_metrics(pair_sample(*args), tpr, fpr, with_oscr,
                                                   n_directions)
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


class PairResampler:
    """A score pair's rows with each grid direction's order sorted once, and its OOD metrics
    (:func:`evaluate_ood`'s row) on any bootstrap resample of them.

    Only the grid is resampled so: with ``search`` resolved as for a bootstrap
    (:func:`resolve_search` with ``resampled=True``: ``"auto"`` and ``"grid"``), a
    resample's metrics are those of the drawn rows on the same directions (the scaled grid
    keeps the rows' deviations), a pass over each direction's kept order instead of a sort.
    :attr:`usable` is False for ``"exact"`` (the exact search runs on the drawn rows) and
    where a pair metric added to the registry applies (it takes the rows). ID losses that a
    resample could sum past what a pair's sample takes (the ``n_id`` ID rows times the
    largest above 2.74e303: the bootstrap draws ID and OOD rows apart) are refused here,
    before any resample, and :meth:`row` refuses counts whose losses sum past it.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import PairResampler
    >>> rng = np.random.default_rng(0)
    >>> s, ood = rng.normal(size=(50, 2)), np.arange(50) % 3 == 0
    >>> losses = np.where(ood, np.nan, (rng.random(50) < 0.2) * 1.0)
    >>> pr = PairResampler(losses, ood, s, tpr=0.9, fpr=0.5, search="auto")
    >>> pr.how, pr.usable
    ('scaled grid', True)
    >>> 0 <= pr.row(np.bincount(rng.integers(0, 50, 50), minlength=50))["auroc"] <= 1
    True
    """

    def __init__(self, losses: ArrayLike, is_ood: ArrayLike, scores: ArrayLike, *,
                 tpr: float, fpr: float, search: str = "auto",
                 n_directions: int = N_DIRECTIONS, bounded: bool = True) -> None:
        self.tpr, self.fpr = check_fraction("tpr", tpr), check_probability("fpr", fpr)
        self.n_directions = check_directions(n_directions)
        pair = as_real_array(scores, "scores")
        if pair.ndim != 2 or pair.shape[1] != 2:
            raise ValueError(f"scores must be two columns, shape (n, 2); got shape {pair.shape}.")
        self.how, s, _ = resolve_search(pair, search, resampled=True)
        self.applicable = _applicable([True], bounded)
        extra = [spec for j, spec in enumerate(table_metrics("ood"))
                 if self.applicable[0, j] and _column(spec) not in _SHARED]
        self.usable = self.how in ("grid", "scaled grid") and not extra
        if losses is not None:  # every resample's sums within what a pair's sample takes
            check_resampled_losses(as_real_array(losses, "losses"), as_is_ood(is_ood))
        self.sample = pair_sample(losses, is_ood, s) if self.usable else None
        if self.sample is not None:
            self.sample.keep_orders(n_directions)  # sorted once, for every resample

    def row(self, counts: NDArray[np.integer]) -> dict[str, float]:
        """The row of :func:`evaluate_ood` (by column) of the resample that draws row ``i``
        ``counts[i]`` times: whole numbers at least 0, one per row, drawing at least one ID
        and one OOD row."""
        if self.sample is None:
            raise ValueError(f"a pair searched by {self.how!r} is not resampled on kept "
                             "orders; compute its metrics on the drawn rows.")
        draws = row_counts(counts, self.sample.s.shape[0])
        for what, w in (("ID", self.sample.w_id), ("OOD", self.sample.w_ood)):
            if not np.any((draws > 0) & (w > 0)):
                raise ValueError(f"counts must draw at least one {what} row (a resample's OOD "
                                 f"metrics need ID and OOD rows); got no {what} row drawn.")
        with np.errstate(over="ignore"):  # as the drawn rows' own sample refuses them
            check_loss_mass(float(np.sum(draws * self.sample.w_loss)), "the resample's is")
        values, _ = _table([(None, self.sample.resampled(draws))], self.applicable, self.tpr,
                           self.fpr, "grid", self.n_directions)
        cols = [_column(spec) for spec in table_metrics("ood")]
        return {c: float(v) for c, v, ok in zip(cols, values[0], self.applicable[0],
                                                strict=True) if ok}


def _applicable(pair: list[bool], bounded: bool) -> NDArray[np.bool_]:
    """Which metric of the table applies to each method: one a pair has, one of losses in
    [0, 1] only for bounded losses."""
    specs = table_metrics("ood")
    return np.array([[(spec.pair or not p) and (bounded or not spec.bounded) for spec in specs]
                     for p in pair], dtype=bool).reshape(len(pair), len(specs))


@validate_params({"confidence": [Interval(float, 0, 1, closed="neither")],
                  "random_state": [RandomState()]})
def evaluate_ood(losses: ArrayLike | None, is_ood: ArrayLike,
                 scores: Mapping[str, ArrayLike], *, tpr: float = 0.95, fpr: float = 0.05,
                 search: str = "auto", n_directions: int = N_DIRECTIONS,
                 n_bootstrap: int = 0, confidence: float = 0.95,
                 random_state: Any = None, n_jobs: int | None = None) -> OODEvaluation:
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

    - ``"exact"``: every direction. Unit-free (a positive rescaling of either column that
      rounds no score changes nothing), but it costs O(m^2 log m) for m distinct pairs:
      the AUROC, OSCR and FPR at TPR are read off one sweep of the directions (the
      envelopes of TPR and of CCR against FPR, computed together), the risk comes from
      the branch and bound of the exact fits. See docs/ood.md for measured times.
    - ``"grid"``: the ``n_directions`` grid ``k pi / n_directions`` on the columns as given
      (the metric functions' default): fast, but the value depends on the units of the
      columns; its envelopes are at most the exact ones at every FPR (FPR at TPR at least
      the exact one), but the AUROC and OSCR, trapezoids on 2,001 FPR points, may exceed
      the exact areas by up to 2.5e-4 where the envelope jumps between two points.
    - ``"auto"`` (default): ``"exact"`` up to :data:`AUTO_EXACT_ROWS` (2,000) rows; above,
      the grid on the columns each divided by its standard deviation over the rows
      (``"scaled grid"``): still unit-free, as the grid at most the exact envelope at
      every FPR (at least for FPR at TPR), within about 1e-3 of it on continuous data. So
      a pair's table is unit-free at every size and exact at the sizes where that takes
      seconds; pass ``search="exact"`` for exact values on larger samples.

    :attr:`OODEvaluation.search` records, per method, which was used. With ``n_bootstrap >
    0``, ``"auto"`` takes the scaled grid at every size, for the value and every resample
    alike (the exact search on every resample would cost ``n_bootstrap`` times the exact
    one): each direction is sorted once (:class:`PairResampler`, the deviations those of all
    the rows) and a resample costs passes over those orders. ``"grid"`` is resampled the
    same way; ``"exact"`` runs the exact search on each resample's rows.

    With ``n_bootstrap > 0``, each value gets a percentile bootstrap interval
    (:func:`bootstrap_interval`): the rows are resampled with replacement within ID and
    within OOD (so both stay present), and every metric of every score is computed on the
    same resamples (a pair's on its grid's kept orders, see ``search``). The rows are first
    sorted by what the metrics read (``key`` of :func:`bootstrap_interval`: an ID row's
    loss, the OOD mark, then every score column in the order of ``scores``), and the
    resamples draw from them in that order, so the intervals depend neither on the row
    order nor on the ignored losses of OOD rows, bit for bit.

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
    tpr : float in (0, 1], default 0.95
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
    n_jobs : None, -1 or int >= 1, default None
        Worker processes of the resamples (:func:`bootstrap_interval`; None: this process,
        -1: every usable core); the intervals are the same for any value.

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
    d = check_directions(n_directions)
    check_int("n_bootstrap", n_bootstrap, 0)
    jobs = check_jobs(n_jobs)
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
    bounded = not np.any(np.nan_to_num(ls, nan=0.0)[~ood] > 1.0)
    applicable = _applicable([s.ndim == 2 for s in cols.values()], bounded)
    if b:
        # with a bootstrap, the rows in the order of what the metrics read (an OOD row's
        # loss is not read), so every total adds them in one order whatever the row order
        key = np.column_stack([np.where(ood, 0.0, ls), ood,
                               *(s.reshape(n, -1) for s in cols.values())])
        perm = np.lexsort(key.T[::-1])
        ls, ood, key = ls[perm], ood[perm], key[perm]
        cols = {name: s[perm] for name, s in cols.items()}
    # with a bootstrap, a pair on the grid: each direction's order sorted once, for its value
    # and every resample (the exact search: its rows)
    pairs = {name: PairResampler(ls, ood, s, tpr=t, fpr=f, search=search, n_directions=d,
                                 bounded=bounded)
             for name, s in cols.items() if b and s.ndim == 2}
    kept = {name: r.sample for name, r in pairs.items() if r.sample is not None}
    values, hows = _table([(None, kept[name]) if name in kept
                           else ({"losses": ls, "is_ood": ood}, s) for name, s in cols.items()],
                          applicable, t, f, search, d, resampled=b > 0)
    hows = [pairs[name].how if name in kept else how for name, how in zip(cols, hows, strict=True)]
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

        specs = table_metrics("ood")
        settings = {"tpr": t, "fpr": f}

        def statistic(block: NDArray[np.intp]) -> NDArray[np.float64]:
            counts = resample_counts(block, n)
            out = np.full((block.shape[0], *applicable.shape), np.nan)
            for k, (name, s) in enumerate(cols.items()):
                if name in resamplers:  # every resample of the block at once
                    js = np.flatnonzero(applicable[k])
                    out[:, k, js] = metric_replicates(
                        resamplers[name], counts,
                        [(specs[j], {p: settings[p] for p in specs[j].params}) for j in js])
                    continue
                for r, i in enumerate(block):
                    sample = ((None, kept[name].resampled(counts[r])) if name in kept
                              else ({"losses": ls[i], "is_ood": ood[i]}, s[i]))
                    out[r, k] = _table([sample], applicable[k : k + 1], t, f, search, d,
                                       resampled=True)[0][0]
            return out

        ci = bootstrap_interval(
            statistic,
            ood, n_bootstrap=b, confidence=confidence, random_state=random_state,
            key=key, n_jobs=jobs, vectorized=True)
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
    tpr : float in (0, 1], default 0.95
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
    d = check_directions(n_directions)
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
