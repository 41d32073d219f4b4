"""Every applicable metric of each score column of a table."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .. import metrics as m
from .._core.optional import require
from .._core.parallel import check_jobs
from .chunks import Summary
from .data import Resampled, Rows, Tables, as_data
from .tables import Progress, TableData


class Evaluation(NamedTuple):
    """Every applicable metric of each score column.

    Attributes
    ----------
    n_id, n_ood, n_dropped : int
        ID rows, OOD rows and rows dropped for missing values.
    labels : dict of str to str
        Display name of each metric key, in table order.
    metrics : dict of str to dict of str to float
        ``metrics[score][key]``; NaN where a metric is undefined or its target
        infeasible. A double-score pair ``"s_r+s_g"`` has only the metrics that take
        two columns.
    pairs : dict of str to (str, str)
        The double-score pairs among ``metrics``, as :attr:`TableData.pairs`.
    intervals : dict of str to dict of str to (float, float)
        ``intervals[score][key]``: the bootstrap percentile interval of each metric
        (empty unless ``evaluate`` ran with ``n_bootstrap``).
    level : float
        The confidence level of ``intervals``.
    notes : dict of str to dict of str to str
        ``notes[score][key]``: why a cell is NaN or absent ("-"), and what a pair's
        envelope cells (AUROC, FPR at TPR, OSCR) mean and how they were computed.
    """

    n_id: int
    n_ood: int
    n_dropped: int
    labels: dict[str, str]
    metrics: dict[str, dict[str, float]]
    pairs: dict[str, tuple[str, str]]
    intervals: dict[str, dict[str, tuple[float, float]]] = {}
    level: float = 0.95
    notes: dict[str, dict[str, str]] = {}

    def to_json(self) -> str:
        """The evaluation as JSON; NaN is written as null."""
        def clean(v: float) -> float | None:
            return None if not math.isfinite(v) else v
        doc: dict[str, object] = {
            "n_id": self.n_id, "n_ood": self.n_ood, "n_dropped": self.n_dropped,
            "labels": self.labels, "pairs": {k: list(v) for k, v in self.pairs.items()},
            "metrics": {s: {k: clean(v) for k, v in d.items()}
                        for s, d in self.metrics.items()},
            "notes": self.notes}
        if self.intervals:
            doc["level"] = self.level
            doc["intervals"] = {s: {k: [clean(lo), clean(hi)] for k, (lo, hi) in d.items()}
                                for s, d in self.intervals.items()}
        return json.dumps(doc, indent=2)

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame: one row per score, one column per metric.

        With bootstrap intervals, each metric ``k`` gains columns ``k_low`` and
        ``k_high``. Needs pandas (the ``io`` extra).
        """
        pd = require("pandas", "io", "Evaluation.to_frame")
        rows = {}
        for s, d in self.metrics.items():
            row: dict[str, float] = {}
            for key in self.labels:
                row[key] = d.get(key, math.nan)
                if self.intervals:
                    lo, hi = self.intervals.get(s, {}).get(key, (math.nan, math.nan))
                    row[f"{key}_low"], row[f"{key}_high"] = lo, hi
            rows[s] = row
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "score"
        return frame

    def format_table(self, digits: int = 4) -> str:
        """A plain-text table: one row per metric, one column per score.

        With bootstrap intervals each cell reads ``value [low, high]``. A NaN or absent
        (``-``) cell carries a number ``(k)``; the k-th line under the table says why.
        """
        names = list(self.metrics)

        notes: list[str] = []

        def cell(s: str, key: str) -> str:
            why = self.notes.get(s, {}).get(key)
            mark = ""
            if why is not None:
                if why not in notes:
                    notes.append(why)
                mark = f" ({notes.index(why) + 1})"
            if key not in self.metrics[s]:
                return "-" + mark
            value = self.metrics[s][key]
            text = f"{value:.{digits}f}"
            iv = self.intervals.get(s, {}).get(key)
            if iv is not None and not math.isnan(iv[0]):
                text += f" [{iv[0]:.{digits}f}, {iv[1]:.{digits}f}]"
            return text + mark

        width = max(len(label) for label in self.labels.values())
        cells = {s: [cell(s, k) for k in self.labels] for s in names}
        cols = [max(len(s), digits + 3, *(len(c) for c in cells[s])) for s in names]
        lines = ["  ".join([" " * width, *(s.rjust(w) for s, w in zip(names, cols, strict=True))])]
        for i, label in enumerate(self.labels.values()):
            row = [cells[s][i].rjust(w) for s, w in zip(names, cols, strict=True)]
            lines.append("  ".join([label.ljust(width), *row]))
        lines += [f"({k}) {why}" for k, why in enumerate(notes, start=1)]
        return "\n".join(lines)


#: A score is called inverted when its AUROC against the rows it should rank high (the
#: misclassified ID rows, the OOD rows) is below this and ``INVERTED_SIGMAS`` standard
#: deviations of a chance ranking below 0.5.
INVERTED_AUROC = 0.3
INVERTED_SIGMAS = 3.0

_RANKS = {"errors": "the misclassified ID rows (a loss above 0) below the correct ones",
          "ood": "the OOD rows below the ID rows"}


def _group_auroc(pos: NDArray[np.float64], neg: NDArray[np.float64]) -> float:
    """AUROC of the positive rows above the negative ones (a tie counts one half), from
    their counts per distinct score in ascending order."""
    below = np.cumsum(neg) - neg
    return float(np.dot(pos, below + 0.5 * neg) / (pos.sum() * neg.sum()))


def inverted_warnings(data: TableData | Summary, ev: Evaluation | None = None,
                      names: Sequence[str] | None = None) -> list[str]:
    """One line per score column (of ``names``, default all) that ranks the misclassified
    ID rows, or the OOD rows, below the others far beyond chance: a confidence passed
    where an uncertainty is expected. The rule: AUROC (ties one half) below
    ``INVERTED_AUROC`` (0.3) and more than ``INVERTED_SIGMAS`` (3) standard deviations of
    a chance ranking below 0.5 (the Mann-Whitney standard deviation
    ``sqrt((n1 + n0 + 1) / (12 n1 n0))``), so a few rows never trigger it. ``ev`` is not
    needed; it is taken for the same data."""
    src = as_data(data)
    out = []
    for name in names if names is not None else src.names:
        for kind, pos, neg in src.rank_counts(name):
            n1, n0 = float(np.sum(pos)), float(np.sum(neg))
            if n1 == 0 or n0 == 0:
                continue
            auc = _group_auroc(np.asarray(pos, np.float64), np.asarray(neg, np.float64))
            sigmas = (0.5 - auc) / math.sqrt((n1 + n0 + 1) / (12.0 * n1 * n0))
            if auc < INVERTED_AUROC and sigmas > INVERTED_SIGMAS:
                out.append(f"score {name!r} looks inverted: it ranks {_RANKS[kind]} (AUROC "
                           f"{auc:.2f}, {sigmas:.0f} standard deviations below chance); a "
                           "higher score must mean more uncertain, rejected first: if it is a "
                           "confidence, flip it (negate the column).")
    return out


def _specs(kind: str) -> list[m.MetricSpec]:
    """The metrics of the table of this kind (``"selective"`` or ``"ood"``), in registry
    order."""
    return [spec for spec in m.METRICS.values() if spec.table and spec.kind == kind]


def metric_of(key: str) -> m.MetricSpec | None:
    """The registered metric of a table key (``"risk@0.8"`` is
    ``selective_risk_at_coverage``), or None."""
    return next((spec for spec in m.METRICS.values() if spec.matches(key)), None)


def glossary_of(key: str) -> str:
    """The glossary line of a metric key ("" for a key of no registered metric)."""
    spec = metric_of(key)
    return "" if spec is None else spec.glossary


def _settings(coverages: Sequence[float], tpr: float,
              fpr: float) -> dict[str, Sequence[float]]:
    """The table settings that the metrics' parameters take their values from."""
    if isinstance(coverages, (str, bytes)) or not isinstance(coverages, Iterable):
        raise ValueError(f"coverages must be a sequence of coverages in (0, 1]; got "
                         f"{coverages!r}.")
    coverages = tuple(coverages)  # once: an iterator is used up by the check
    for c in coverages:
        if isinstance(c, bool) or not (isinstance(c, numbers.Real) and 0.0 < c <= 1.0):
            raise ValueError(f"coverages must hold coverages in (0, 1]; got {c!r}.")
    return {"coverage": tuple(float(c) for c in coverages), "tpr": (tpr,), "fpr": (fpr,)}


def _one_score(src: Rows | Tables, name: str, *, settings: dict[str, Sequence[float]],
               bounded: bool, search: str) -> tuple[dict[str, float], str | None]:
    """Every metric of one score column (or a pair's two columns) of these rows or tables,
    and how a pair's directions were searched: the selective metrics of its ID rows, then
    the OOD metrics by :func:`abstain.metrics.evaluate_ood` (or
    :func:`~abstain.metrics.evaluate_ood_tables`), the library's one table of them."""
    r: dict[str, float] = {}
    if name not in src.pairs:
        args = src.selective_args(name)
        for spec in _specs("selective"):
            if bounded or not spec.bounded:
                for key, _, options in spec.instances(settings):
                    r[key] = spec.function(*args, **options)
    how = None
    if src.has_ood:
        (tpr,), (fpr,) = settings["tpr"], settings["fpr"]
        row, how = src.ood_metrics(name, tpr=tpr, fpr=fpr, search=search)
        for spec in _specs("ood"):
            column = spec.column or spec.name
            if column in row and (bounded or not spec.bounded):
                for key, _, _ in spec.instances(settings):
                    r[key] = row[column]
    return {k: float(v) for k, v in r.items()}, how


#: Why a pair's envelope cells (its metrics with ``pair="envelope"`` in the registry: AUROC,
#: FPR at TPR, OSCR) differ from one ranking's, by how its directions were searched.
ENVELOPE_NOTE = ("a pair's envelope: at each FPR (or TPR) the best direction for it, chosen on "
                 "these rows (an oracle over directions, not one fitted rule); ")
_SEARCH_NOTE = {
    "exact": "exact, every direction",
    "scaled grid": ("the paper's grid of directions on the columns divided by "
                    f"their standard deviations (more than {m.AUTO_EXACT_ROWS} rows, or a "
                    "bootstrap; --search exact for the exact value)"),
    "grid": "the paper's grid of directions on the columns as given (it depends on their units)",
}


def _pair_note() -> str:
    """Why a pair has no one-column metric, naming the metrics it has."""
    names = [spec.short or spec.label for spec in _specs("ood") if spec.pair]
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)
    return f"takes one score column; a double-score pair has only {listed}"


def _notes(labels: dict[str, str], metrics: dict[str, dict[str, float]], *,
           pairs: dict[str, tuple[str, str]], settings: dict[str, Sequence[float]],
           searches: dict[str, str | None] | None = None) -> dict[str, dict[str, str]]:
    """Why each NaN or absent cell is so, and what a pair's envelope cells mean, in a few
    words."""
    out: dict[str, dict[str, str]] = {}
    entries = {key: (spec, options) for spec in m.METRICS.values() if spec.table
               for key, _, options in spec.instances(settings)}
    for name, values in metrics.items():
        why: dict[str, str] = {}
        how = (searches or {}).get(name)
        for key in labels:
            spec, options = entries[key]
            if key not in values:
                why[key] = _pair_note() if name in pairs else "not applicable"
            elif how is not None and spec.pair == "envelope" and not math.isnan(values[key]):
                why[key] = ENVELOPE_NOTE + _SEARCH_NOTE[how]
            elif math.isnan(values[key]):
                why[key] = spec.infeasible_note(options) or "undefined on these rows"
        if why:
            out[name] = why
    return out


def _bootstrap(src: Rows, by_value: _ByValue, *, n_bootstrap: int, level: float,
               random_state: Any, progress: Progress | None, done: int, total: int,
               point: dict[str, dict[str, float]], grids: dict[str, Any], n_jobs: int | None,
               **options: Any) -> dict[str, dict[str, tuple[float, float]]]:
    """Percentile intervals of every metric of every score over the same ``n_bootstrap``
    resamples of the rows (:func:`abstain.metrics.bootstrap_interval`, on ``n_jobs``
    workers), ID and OOD rows resampled apart so that every resample has both, drawn from
    the rows sorted by their values (loss, OOD mark, every score column in table order), so
    that the intervals do not depend on the row order. ``grids``: the pairs resampled on
    their grid's kept orders; any other pair is computed on the drawn rows. ``by_value``:
    the rows in the order of their values (:func:`_by_value`), which ``grids`` were built
    on too."""
    names = [*src.names, *src.pairs]
    cells = [(name, key) for name in names for key in point[name]]
    n = src.data.losses.size
    strata, values, order, _ = by_value
    resamplers = Resampled.resamplers(by_value.rows)
    entries = {key: (spec, opts) for spec in m.METRICS.values() if spec.table
               for key, _, opts in spec.instances(options["settings"])}
    wanted = {name: [entries[key] for key in point[name]] for name in resamplers}

    def statistic(block: NDArray[np.intp]) -> NDArray[np.float64]:
        counts = m.resample_counts(block, n)
        sorted_counts = counts[:, order]
        out = np.full((block.shape[0], len(cells)), np.nan)
        col = 0
        for name in names:
            width = len(point[name])
            if name in resamplers:  # every resample of the block at once
                out[:, col : col + width] = m.metric_replicates(resamplers[name],
                                                                sorted_counts, wanted[name])
            else:  # a pair: on its grid's kept orders, or on the drawn rows
                for r, idx in enumerate(block):
                    got, _ = _one_score(
                        Resampled(sorted_counts[r], src.has_ood, grids) if name in grids  # type: ignore[arg-type]
                        else src.take(idx), name, **options)
                    out[r, col : col + width] = [got[key] for key in point[name]]
            col += width
        return out

    ci = m.bootstrap_interval(
        statistic, strata, n_bootstrap=n_bootstrap, confidence=level,
        random_state=random_state, key=values, n_jobs=n_jobs, vectorized=True,
        progress=None if progress is None else lambda k, _: progress(done + k, total))
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for (name, key), lo, hi in zip(cells, ci.low, ci.high, strict=True):
        out.setdefault(name, {})[key] = (float(lo), float(hi))
    return out


class _ByValue(NamedTuple):
    """The rows of a bootstrap in the order of their values (:func:`_by_value`)."""

    strata: NDArray[np.bool_]
    values: NDArray[np.float64]
    order: NDArray[np.intp]
    rows: Rows


def _by_value(src: Rows) -> _ByValue:
    """The strata of a bootstrap of ``src`` (the OOD marks; one stratum without them), the
    values of each row that its metrics read (the loss, the mark, every score column), the
    order that sorts them and the rows in that order. The resamplers are built on these
    rows: a group's sums then add the same numbers in the same order whatever the rows'
    order (continuous losses summed in row order differed in their last bits)."""
    n = src.data.losses.size
    strata = src.ood if src.has_ood and src.ood is not None else np.zeros(n, dtype=bool)
    names = [*src.names, *src.pairs]
    values = np.column_stack([src.data.losses, strata,
                              *(src.columns(name).reshape(n, -1) for name in names)])
    order = np.lexsort(values.T[::-1])
    return _ByValue(strata, values, order, src.take(order))


def _labels(settings: dict[str, Sequence[float]], has_ood: bool,
            bounded: bool) -> dict[str, str]:
    labels: dict[str, str] = {}
    for kind in ("selective", "ood") if has_ood else ("selective",):
        for spec in _specs(kind):
            if bounded or not spec.bounded:
                labels.update((key, label) for key, label, _ in spec.instances(settings))
    return labels




def evaluate(
    data: TableData | Summary,
    *,
    coverages: Sequence[float] = (0.8, 0.9, 0.95),
    tpr: float = 0.95,
    fpr: float = 0.05,
    n_bootstrap: int = 0,
    level: float = 0.95,
    random_state: Any = None,
    progress: Progress | None = None,
    search: str = "auto",
    n_jobs: int | None = None,
) -> Evaluation:
    """Every applicable metric of each score column of ``data``.

    The metrics are those of the table in :data:`abstain.metrics.METRICS`, in registry
    order, with their keys and labels. Selective-classification metrics (AuRC, E-AuRC,
    AUGRC, selective risk at each of ``coverages``) use the ID rows. With an OOD column
    holding both classes, the OOD metrics follow: AUROC, AUPR-In, AUPR-Out, FPR at TPR
    ``tpr`` (FPR@95), OSCR (for losses in [0, 1]) and the least selective risk at TPR >=
    ``tpr`` and FPR <= ``fpr``, computed by :func:`abstain.metrics.evaluate_ood`. Each
    metric's tie rule is that of its function in :mod:`abstain.metrics`.

    ``data`` may also be the :class:`~abstain.app.chunks.Summary` of a source read in
    chunks (one score table per column): the same metrics, equal to those of the rows at
    once (bit for bit for 0/1 and whole-number losses; to float64 rounding of the summed
    losses otherwise), by :func:`abstain.metrics.evaluate_ood_tables` for the OOD ones. A
    double-score pair then comes from its :class:`~abstain.PairTable` (above
    :data:`abstain.metrics.AUTO_EXACT_ROWS` rows, ``"auto"`` divides each column by its
    standard deviation taken from the table, so it may differ from the rows' in the last
    bits), and there is no bootstrap.

    Each double-score pair of :attr:`TableData.pairs` gets the metrics that take two
    columns: AUROC, FPR at TPR and OSCR of the envelope over directions (an oracle that
    takes the best direction at each operating point, explained in the cells' notes) and
    the least selective risk at the TPR and FPR bounds (the best direction for them); the
    one-column metrics are left out for it. ``search`` is that of
    :func:`abstain.metrics.evaluate_ood`: ``"auto"`` (exact up to
    :data:`abstain.metrics.AUTO_EXACT_ROWS` rows, the grid of the standardised columns
    above), ``"exact"`` or ``"grid"``; the AUROC of a pair is then the library's for the
    same columns, in any units.

    Parameters
    ----------
    data : TableData or Summary
    coverages : sequence of float in (0, 1]
    tpr : float in (0, 1]
    fpr : float in [0, 1]
    n_bootstrap : int, default 0
        With ``n_bootstrap >= 2``, a percentile interval of each metric from that many
        resamples of the rows (ID and OOD rows resampled apart), by
        :func:`abstain.metrics.bootstrap_interval` (whose NaN rule it keeps: a resample
        where a target is infeasible is left out, and a metric infeasible on every
        resample has no interval). The resamples draw from the rows sorted by their
        values, so the same rows in any order give the same intervals. At most
        :data:`abstain.metrics.MAX_BOOTSTRAP` (10**6) resamples and
        ``n_bootstrap * rows`` at most 2**31: larger requests raise ``ValueError``
        before any work.
    level : float in (0, 1), default 0.95
        The confidence level of the intervals.
    random_state : None, int or numpy Generator
        Seed of the resamples.
    progress : callable(done, total), optional
        Called after each score column, each pair and each resample.
    search : {"auto", "exact", "grid"}, default "auto"
        How a pair's directions are searched.
    n_jobs : None, -1 or int >= 1, default None
        Worker processes of the bootstrap's resamples (None: this process, -1: every
        usable core; :func:`abstain.metrics.bootstrap_interval`). The intervals are the
        same for any value.

    Returns
    -------
    Evaluation
    """
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) \
            or n_bootstrap < 0 or n_bootstrap == 1:
        raise ValueError(f"n_bootstrap must be 0 or an integer >= 2; got {n_bootstrap!r}.")
    n_jobs = check_jobs(n_jobs)
    src = as_data(data)
    if n_bootstrap and not isinstance(src, Rows):
        raise ValueError(f"n_bootstrap must be 0 for the score tables of a source read in "
                         f"chunks (they keep no rows to resample); got {n_bootstrap!r}.")
    if n_bootstrap:  # before any work; the command line's option is --bootstrap
        assert isinstance(src, Rows)
        m.check_bootstrap(n_bootstrap, src.data.losses.size, "n_bootstrap (--bootstrap)")
    if isinstance(level, bool) or not (isinstance(level, numbers.Real) and 0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1); got {level!r}.")
    if src.n_id + src.n_ood == 0:
        raise ValueError("the table must have rows; got none.")
    if src.n_id == 0:
        raise ValueError("the table must have in-distribution rows; got only OOD rows.")
    bounded = src.bounded
    settings = _settings(coverages, tpr, fpr)
    labels = _labels(settings, src.has_ood, bounded)
    out: dict[str, dict[str, float]] = {}
    pairs = src.pairs
    total = len(src.names) + len(pairs) + n_bootstrap
    m.check_pair_search(search)
    options: dict[str, Any] = {"settings": settings, "bounded": bounded, "search": search}
    searches: dict[str, str | None] = {}
    # with a bootstrap, a pair on the grid (search "auto" or "grid") keeps its directions'
    # orders for every resample; its value is that of the same statistic on all rows
    grids: dict[str, Any] = {}
    whole = None
    if n_bootstrap:
        assert isinstance(src, Rows)
        (t,), (f,) = settings["tpr"], settings["fpr"]
        by_value = _by_value(src)  # the pairs' grids and the columns' tables built on it
        grids = Resampled.pair_resamplers(by_value.rows, tpr=t, fpr=f, search=search,
                                          bounded=bounded)
        whole = Resampled(np.ones(src.data.losses.size, dtype=np.int64), src.has_ood,
                          grids)
    for i, name in enumerate([*src.names, *pairs]):
        out[name], how = _one_score(whole if name in grids else src, name,  # type: ignore[arg-type]
                                    **options)
        if name in pairs:
            searches[name] = how
        if progress is not None:
            progress(i + 1, total)
    intervals = {}
    if n_bootstrap:
        assert isinstance(src, Rows)
        intervals = _bootstrap(src, by_value, n_bootstrap=n_bootstrap, level=float(level),
                               random_state=random_state, progress=progress,
                               done=len(src.names) + len(pairs), total=total, point=out,
                               grids=grids, n_jobs=n_jobs, **options)
    notes = _notes(labels, out, pairs=pairs, settings=settings, searches=searches)
    return Evaluation(src.n_id, src.n_ood, src.n_dropped, labels, out, pairs, intervals,
                      float(level), notes)
