"""Every applicable metric of each score column of a table."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .. import metrics as m
from .._core.optional import require
from ..exceptions import InfeasibleTargetWarning
from ..metrics._bootstrap import check_bootstrap
from ..metrics._ood import exact_envelope_metrics
from ..metrics._ood_table import check_pair_search, resolve_search
from .chunks import Summary
from .tables import Progress, TableData

#: One line on what each metric means, by key prefix (the report's glossary).
GLOSSARY = {
    "aurc": "AuRC: mean selective risk over all coverages (lower is better)",
    "e_aurc": "E-AuRC: AuRC minus that of the oracle ordering (0 is a perfect ranking)",
    "augrc": "AUGRC: area under the joint risk (accepted loss / n) over coverage",
    "risk@": "risk at coverage c: mean loss of the c least uncertain ID rows",
    "auroc": "AUROC: chance that an ID row scores below an OOD row (1 is perfect, 0.5 chance)",
    "aupr_in": "AUPR-In: area under precision-recall with ID rows positive",
    "aupr_out": "AUPR-Out: area under precision-recall with OOD rows positive",
    "fpr@": "FPR at TPR t: fraction of OOD rows accepted when t of the ID rows are",
    "oscr": "OSCR: area under correct-and-accepted ID rate against accepted OOD rate",
    "risk@tpr": "risk at TPR/FPR: least selective risk of a rule keeping TPR >= t, FPR <= f",
}


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


def glossary_of(key: str) -> str:
    """The glossary line of a metric key (longest matching prefix)."""
    best = max((k for k in GLOSSARY if key.startswith(k)), key=len, default=None)
    return "" if best is None else GLOSSARY[best]


def _pct(x: float) -> str:
    return f"{100 * x:g}%"


#: The table's key of each column of :func:`abstain.metrics.evaluate_ood`.
def _ood_keys(tpr: float, fpr: float) -> dict[str, str]:
    return {"auroc": "auroc", "aupr_in": "aupr_in", "aupr_out": "aupr_out",
            "fpr_at_tpr": f"fpr@{tpr:g}", "oscr": "oscr",
            "risk_at_tpr_fpr": f"risk@tpr{tpr:g},fpr{fpr:g}"}


def _one_score(losses: NDArray[np.float64], ood: NDArray[np.bool_] | None, s: Any, *,
               coverages: Sequence[float], tpr: float, fpr: float, bounded: bool,
               pair: bool, search: str) -> tuple[dict[str, float], str | None]:
    """Every metric of one score column (or a pair's two columns) on these rows, and how a
    pair's directions were searched; the OOD metrics by
    :func:`abstain.metrics.evaluate_ood`, the library's one table of them."""
    r: dict[str, float] = {}
    id_rows = ~ood if ood is not None else np.ones(losses.size, dtype=bool)
    if not pair:  # the selective metrics of the ID rows, as for a table
        r.update(_metrics((losses[id_rows], s[id_rows]), None, (), bounded, coverages, tpr,
                          fpr))
    how = None
    if ood is not None:
        keys = _ood_keys(tpr, fpr)
        table = m.evaluate_ood(losses, ood, {"s": s}, tpr=tpr, fpr=fpr, search=search)
        how = table.search[0]
        for key, value in table.row("s").items():
            if key != "oscr" or bounded:
                r[keys[key]] = value
    return {k: float(v) for k, v in r.items()}, how


#: Why a pair's AUROC, FPR at TPR and OSCR differ from one ranking's, by how its
#: directions were searched.
ENVELOPE_NOTE = ("a pair's envelope: at each FPR (or TPR) the best direction for it, chosen on "
                 "these rows (an oracle over directions, not one fitted rule); ")
_SEARCH_NOTE = {
    "exact": "exact, every direction",
    "scaled grid": ("the paper's grid of directions on the columns divided by "
                    f"their standard deviations (more than {m.AUTO_EXACT_ROWS} rows; "
                    "--search exact for the exact value)"),
    "grid": "the paper's grid of directions on the columns as given (it depends on their units)",
}


def _notes(labels: dict[str, str], metrics: dict[str, dict[str, float]], *,
           pairs: dict[str, tuple[str, str]], tpr: float, fpr: float,
           searches: dict[str, str | None] | None = None) -> dict[str, dict[str, str]]:
    """Why each NaN or absent cell is so, and what a pair's envelope cells mean, in a few
    words."""
    out: dict[str, dict[str, str]] = {}
    envelope = ("auroc", f"fpr@{tpr:g}", "oscr")
    for name, values in metrics.items():
        why: dict[str, str] = {}
        how = (searches or {}).get(name)
        for key in labels:
            if key not in values:
                why[key] = ("takes one score column; a double-score pair has only AUROC, FPR "
                            "at TPR, OSCR and the risk at TPR/FPR" if name in pairs
                            else "not applicable")
            elif how is not None and key in envelope and not math.isnan(values[key]):
                why[key] = ENVELOPE_NOTE + _SEARCH_NOTE[how]
            elif math.isnan(values[key]):
                if key.startswith("risk@tpr"):
                    why[key] = (f"infeasible: no rule on these rows keeps TPR >= {_pct(tpr)} "
                                f"with FPR <= {_pct(fpr)}")
                else:
                    why[key] = "undefined on these rows"
        if why:
            out[name] = why
    return out


def _bootstrap(data: TableData, ood: NDArray[np.bool_] | None, *, n_bootstrap: int,
               level: float, random_state: Any, progress: Progress | None, done: int,
               total: int, point: dict[str, dict[str, float]],
               **options: Any) -> dict[str, dict[str, tuple[float, float]]]:
    """Percentile intervals of every metric of every score over the same ``n_bootstrap``
    resamples of the rows (:func:`abstain.metrics.bootstrap_interval`), ID and OOD rows
    resampled apart so that every resample has both, drawn from the rows sorted by their
    values (loss, OOD mark, every score column in table order), so that the intervals do
    not depend on the row order."""
    columns = [(name, data.scores[name], False) for name in data.scores]
    if ood is not None:
        columns += [(name, data.stacked(cols), True) for name, cols in data.pairs.items()]
    cells = [(name, key) for name, _, _ in columns for key in point[name]]
    calls = 0

    def statistic(idx: NDArray[np.intp]) -> list[float]:
        nonlocal calls
        sub_ood = None if ood is None else ood[idx]
        vals: list[float] = []
        for name, s, pair in columns:
            got, _ = _one_score(data.losses[idx], sub_ood, s[idx], pair=pair, **options)
            vals.extend(got[key] for key in point[name])
        calls += 1
        if progress is not None:
            progress(done + calls, total)
        return vals

    n = data.losses.size
    strata = ood if ood is not None else np.zeros(n, dtype=bool)
    values = np.column_stack([data.losses, strata, *(s.reshape(n, -1) for _, s, _ in columns)])
    ci = m.bootstrap_interval(statistic, strata, n_bootstrap=n_bootstrap, confidence=level,
                              random_state=random_state, key=values)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for (name, key), lo, hi in zip(cells, ci.low, ci.high, strict=True):
        out.setdefault(name, {})[key] = (float(lo), float(hi))
    return out


def _labels(coverages: Sequence[float], tpr: float, fpr: float, has_ood: bool,
            bounded: bool) -> dict[str, str]:
    labels = {"aurc": "AuRC", "e_aurc": "E-AuRC", "augrc": "AUGRC"}
    for c in coverages:
        labels[f"risk@{c:g}"] = f"risk at coverage {_pct(c)}"
    if has_ood:
        labels.update({"auroc": "AUROC", "aupr_in": "AUPR-In", "aupr_out": "AUPR-Out",
                       f"fpr@{tpr:g}": f"FPR at TPR {_pct(tpr)}"})
        if bounded:
            labels["oscr"] = "OSCR"
        labels[f"risk@tpr{tpr:g},fpr{fpr:g}"] = f"risk at TPR>={_pct(tpr)}, FPR<={_pct(fpr)}"
    return labels


def _metrics(selective: tuple[Any, ...], marks: tuple[Any, ...] | None,
             full: tuple[Any, ...], bounded: bool, coverages: Sequence[float], tpr: float,
             fpr: float) -> dict[str, float]:
    """The metrics of one score: ``selective`` are the arguments of the selective metrics
    (ID losses and scores, or a table), ``marks`` those of the OOD metrics (marks and
    scores, or a table; None without OOD rows), ``full`` those that take the losses, the
    marks and the scores (or a table)."""
    r: dict[str, float] = {
        "aurc": m.aurc(*selective),
        "e_aurc": m.e_aurc(*selective),
        "augrc": m.augrc(*selective),
    }
    for c in coverages:
        r[f"risk@{c:g}"] = m.selective_risk_at_coverage(*selective, coverage=c)  # type: ignore[misc]
    if marks is not None:
        r["auroc"] = m.auroc(*marks)
        r["aupr_in"] = m.aupr_in(*marks)
        r["aupr_out"] = m.aupr_out(*marks)
        r[f"fpr@{tpr:g}"] = m.fpr_at_tpr(*marks, tpr=tpr)  # type: ignore[misc]
        if bounded:
            r["oscr"] = m.oscr(*full)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            r[f"risk@tpr{tpr:g},fpr{fpr:g}"] = m.selective_risk_at_tpr_fpr(  # type: ignore[misc]
                *full, tpr=tpr, fpr=fpr)
    return {k: float(v) for k, v in r.items()}


def evaluate_summary(
    summary: Summary,
    *,
    coverages: Sequence[float] = (0.8, 0.9, 0.95),
    tpr: float = 0.95,
    fpr: float = 0.05,
    search: str = "auto",
) -> Evaluation:
    """:func:`evaluate` on the score tables of a source read in chunks (one column each).

    The same metrics, equal to those of :func:`evaluate` on all rows at once (bit for bit
    for 0/1 and whole-number losses; to float64 rounding of the summed losses otherwise).
    A double-score pair comes from its :class:`~abstain.PairTable`: AUROC, FPR at TPR and
    OSCR of the envelope and the least risk at the TPR/FPR bounds, searched as ``search``
    says (as in :func:`evaluate`; above :data:`abstain.metrics.AUTO_EXACT_ROWS` rows,
    ``"auto"`` divides each column by its standard deviation over the rows, taken from the
    table, so it may differ from the rows' in the last bits).
    """
    check_pair_search(search)
    has_ood = summary.marked is not None and summary.n_ood > 0
    bounded = all(t.max_loss <= 1.0 for t in summary.tables.values())
    labels = _labels(coverages, tpr, fpr, has_ood, bounded)
    out = {}
    for name, t in summary.tables.items():
        marked = (summary.marked[name],) if has_ood and summary.marked is not None else None
        out[name] = _metrics((t,), marked, marked or (), bounded, coverages, tpr, fpr)
    pairs = summary.columns if has_ood and summary.pairs is not None else {}
    searches: dict[str, str | None] = {}
    for name in pairs:
        assert summary.pairs is not None
        out[name], searches[name] = _pair_of_table(summary.pairs[name], tpr, fpr, bounded,
                                                   search)
    notes = _notes(labels, out, pairs=pairs, tpr=tpr, fpr=fpr, searches=searches)
    return Evaluation(summary.n_id, summary.n_ood, summary.n_dropped, labels, out, pairs,
                      notes=notes)


def _pair_of_table(table: Any, tpr: float, fpr: float, bounded: bool,
                   search: str) -> tuple[dict[str, float], str | None]:
    """A pair's metrics from its :class:`~abstain.PairTable`, as
    :func:`abstain.metrics.evaluate_ood` computes them on the rows, and how its directions
    were searched."""
    how, table, keyword = resolve_search(table, search)
    kw: dict[str, Any] = {"search": keyword}
    keys = _ood_keys(tpr, fpr)
    if how == "exact":  # the three envelope metrics from one sweep, as evaluate_ood does
        shared = exact_envelope_metrics(table, None, None, tpr, bounded)
        r = {keys[k]: v for k, v in shared.items()}
    else:
        r = {keys["auroc"]: m.auroc(table, **kw),
             keys["fpr_at_tpr"]: m.fpr_at_tpr(table, tpr=tpr, **kw)}
        if bounded:
            r[keys["oscr"]] = m.oscr(table, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        r[keys["risk_at_tpr_fpr"]] = m.selective_risk_at_tpr_fpr(table, tpr=tpr, fpr=fpr,
                                                                 **kw)
    return {k: float(v) for k, v in r.items()}, how


def evaluate(
    data: TableData,
    *,
    coverages: Sequence[float] = (0.8, 0.9, 0.95),
    tpr: float = 0.95,
    fpr: float = 0.05,
    n_bootstrap: int = 0,
    level: float = 0.95,
    random_state: Any = None,
    progress: Progress | None = None,
    search: str = "auto",
) -> Evaluation:
    """Every applicable metric of each score column of ``data``.

    Selective-classification metrics (AuRC, E-AuRC, AUGRC, selective risk at each
    of ``coverages``) use the ID rows. With an OOD column holding both classes,
    the OOD metrics follow: AUROC, AUPR-In, AUPR-Out, FPR at TPR ``tpr`` (FPR@95),
    OSCR (for losses in [0, 1]) and the least selective risk at TPR >= ``tpr`` and
    FPR <= ``fpr``, computed by :func:`abstain.metrics.evaluate_ood`. Each metric's tie
    rule is that of its function in :mod:`abstain.metrics`.

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
    data : TableData
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

    Returns
    -------
    Evaluation
    """
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) \
            or n_bootstrap < 0 or n_bootstrap == 1:
        raise ValueError(f"n_bootstrap must be 0 or an integer >= 2; got {n_bootstrap!r}.")
    if n_bootstrap:  # before any work; the command line's option is --bootstrap
        check_bootstrap(n_bootstrap, data.losses.size, "n_bootstrap (--bootstrap)")
    if not (isinstance(level, float | int) and 0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1); got {level!r}.")
    ood = data.is_ood
    has_ood = ood is not None and 0 < int(ood.sum()) < ood.size
    id_rows = ~ood if ood is not None else np.ones(data.losses.size, dtype=bool)
    if not id_rows.any():
        raise ValueError("the table must have in-distribution rows; got only OOD rows.")
    bounded = bool(np.all(data.losses <= 1.0))
    labels = _labels(coverages, tpr, fpr, has_ood, bounded)
    out: dict[str, dict[str, float]] = {}
    pairs = data.pairs if has_ood else {}
    total = len(data.scores) + len(pairs) + n_bootstrap
    check_pair_search(search)
    options: dict[str, Any] = {"coverages": coverages, "tpr": tpr, "fpr": fpr,
                               "bounded": bounded, "search": search}
    metric_ood = ood if has_ood else None
    for i, (name, s) in enumerate(data.scores.items()):
        out[name], _ = _one_score(data.losses, metric_ood, s, pair=False, **options)
        if progress is not None:
            progress(i + 1, total)
    searches: dict[str, str | None] = {}
    for j, (name, cols) in enumerate(pairs.items()):
        out[name], searches[name] = _one_score(data.losses, metric_ood, data.stacked(cols),
                                               pair=True, **options)
        if progress is not None:
            progress(len(data.scores) + j + 1, total)
    intervals = {}
    if n_bootstrap:
        intervals = _bootstrap(data, metric_ood, n_bootstrap=n_bootstrap, level=float(level),
                               random_state=random_state, progress=progress,
                               done=len(data.scores) + len(pairs), total=total, point=out,
                               **options)
    n_ood = int(ood.sum()) if ood is not None else 0
    notes = _notes(labels, out, pairs=pairs, tpr=tpr, fpr=fpr, searches=searches)
    return Evaluation(int(id_rows.sum()), n_ood, data.n_dropped, labels, out, pairs,
                      intervals, float(level), notes)
