"""Every applicable metric of each score column of a table."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import metrics as m
from ..exceptions import InfeasibleTargetWarning
from .chunks import Summary
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
    """

    n_id: int
    n_ood: int
    n_dropped: int
    labels: dict[str, str]
    metrics: dict[str, dict[str, float]]
    pairs: dict[str, tuple[str, str]]

    def to_json(self) -> str:
        """The evaluation as JSON; NaN is written as null."""
        def clean(v: float) -> float | None:
            return None if not math.isfinite(v) else v
        doc = {"n_id": self.n_id, "n_ood": self.n_ood, "n_dropped": self.n_dropped,
               "labels": self.labels,
               "pairs": {k: list(v) for k, v in self.pairs.items()},
               "metrics": {s: {k: clean(v) for k, v in d.items()} for s, d in self.metrics.items()}}
        return json.dumps(doc, indent=2)

    def format_table(self, digits: int = 4) -> str:
        """A plain-text table: one row per metric, one column per score."""
        names = list(self.metrics)
        width = max(len(label) for label in self.labels.values())
        cols = [max(len(s), digits + 3) for s in names]
        lines = ["  ".join([" " * width, *(s.rjust(w) for s, w in zip(names, cols, strict=True))])]
        for key, label in self.labels.items():
            cells = [
                (f"{self.metrics[s][key]:.{digits}f}" if key in self.metrics[s] else "-").rjust(w)
                for s, w in zip(names, cols, strict=True)
            ]
            lines.append("  ".join([label.ljust(width), *cells]))
        return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{100 * x:g}%"


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
) -> Evaluation:
    """:func:`evaluate` on the score tables of a source read in chunks (one column each).

    The same metrics, equal to those of :func:`evaluate` on all rows at once (bit for bit
    for 0/1 and whole-number losses; to float64 rounding of the summed losses otherwise).
    """
    has_ood = summary.marked is not None and summary.n_ood > 0
    bounded = all(t.max_loss <= 1.0 for t in summary.tables.values())
    labels = _labels(coverages, tpr, fpr, has_ood, bounded)
    out = {}
    for name, t in summary.tables.items():
        marked = (summary.marked[name],) if has_ood and summary.marked is not None else None
        out[name] = _metrics((t,), marked, marked or (), bounded, coverages, tpr, fpr)
    return Evaluation(summary.n_id, summary.n_ood, summary.n_dropped, labels, out, {})


def evaluate(
    data: TableData,
    *,
    coverages: Sequence[float] = (0.8, 0.9, 0.95),
    tpr: float = 0.95,
    fpr: float = 0.05,
    progress: Progress | None = None,
) -> Evaluation:
    """Every applicable metric of each score column of ``data``.

    Selective-classification metrics (AuRC, E-AuRC, AUGRC, selective risk at each
    of ``coverages``) use the ID rows. With an OOD column holding both classes,
    the OOD metrics follow: AUROC, AUPR-In, AUPR-Out, FPR at TPR ``tpr`` (FPR@95),
    OSCR (for losses in [0, 1]) and the least selective risk at TPR >= ``tpr`` and
    FPR <= ``fpr``. Each metric's tie rule is that of its function in
    :mod:`abstain.metrics`.

    Each double-score pair of :attr:`TableData.pairs` gets the metrics that take two
    columns: AUROC and OSCR (the area under the envelope over directions) and the
    least selective risk at the TPR and FPR bounds (the best direction); the
    one-column metrics are left out for it.

    Parameters
    ----------
    data : TableData
    coverages : sequence of float in (0, 1]
    tpr : float in (0, 1]
    fpr : float in [0, 1]
    progress : callable(done, total), optional
        Called after each score column and each pair.

    Returns
    -------
    Evaluation
    """
    ood = data.is_ood
    has_ood = ood is not None and 0 < int(ood.sum()) < ood.size
    id_rows = ~ood if ood is not None else np.ones(data.losses.size, dtype=bool)
    if not id_rows.any():
        raise ValueError("the table must have in-distribution rows; got only OOD rows.")
    bounded = bool(np.all(data.losses <= 1.0))
    labels = _labels(coverages, tpr, fpr, has_ood, bounded)
    out: dict[str, dict[str, float]] = {}
    loss_id = data.losses[id_rows]
    pairs = data.pairs if has_ood else {}
    total = len(data.scores) + len(pairs)
    for i, (name, s) in enumerate(data.scores.items()):
        marks = (ood, s) if has_ood else None
        out[name] = _metrics((loss_id, s[id_rows]), marks, (data.losses, ood, s), bounded,
                             coverages, tpr, fpr)
        if progress is not None:
            progress(i + 1, total)
    for j, (name, cols) in enumerate(pairs.items()):
        assert ood is not None
        s2 = data.stacked(cols)
        r = {"auroc": m.auroc(ood, s2)}
        if bounded:
            r["oscr"] = m.oscr(data.losses, ood, s2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            r[f"risk@tpr{tpr:g},fpr{fpr:g}"] = m.selective_risk_at_tpr_fpr(
                data.losses, ood, s2, tpr, fpr)
        out[name] = {k: float(v) for k, v in r.items()}
        if progress is not None:
            progress(len(data.scores) + j + 1, total)
    n_ood = int(ood.sum()) if ood is not None else 0
    return Evaluation(int(id_rows.sum()), n_ood, data.n_dropped, labels, out, pairs)
