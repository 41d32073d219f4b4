"""Every applicable metric of each score column of a table."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import metrics as m
from ..exceptions import InfeasibleTargetWarning
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
    labels = {"aurc": "AuRC", "e_aurc": "E-AuRC", "augrc": "AUGRC"}
    for c in coverages:
        labels[f"risk@{c:g}"] = f"risk at coverage {_pct(c)}"
    bounded = bool(np.all(data.losses <= 1.0))
    if has_ood:
        labels.update({"auroc": "AUROC", "aupr_in": "AUPR-In", "aupr_out": "AUPR-Out",
                       f"fpr@{tpr:g}": f"FPR at TPR {_pct(tpr)}"})
        if bounded:
            labels["oscr"] = "OSCR"
        labels[f"risk@tpr{tpr:g},fpr{fpr:g}"] = f"risk at TPR>={_pct(tpr)}, FPR<={_pct(fpr)}"
    out: dict[str, dict[str, float]] = {}
    loss_id = data.losses[id_rows]
    pairs = data.pairs if has_ood else {}
    total = len(data.scores) + len(pairs)
    for i, (name, s) in enumerate(data.scores.items()):
        s_id = s[id_rows]
        r: dict[str, float] = {
            "aurc": m.aurc(loss_id, s_id),
            "e_aurc": m.e_aurc(loss_id, s_id),
            "augrc": m.augrc(loss_id, s_id),
        }
        for c in coverages:
            r[f"risk@{c:g}"] = m.selective_risk_at_coverage(loss_id, s_id, c)
        if has_ood:
            assert ood is not None
            r["auroc"] = m.auroc(ood, s)
            r["aupr_in"] = m.aupr_in(ood, s)
            r["aupr_out"] = m.aupr_out(ood, s)
            r[f"fpr@{tpr:g}"] = m.fpr_at_tpr(ood, s, tpr)
            if bounded:
                r["oscr"] = m.oscr(data.losses, ood, s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InfeasibleTargetWarning)
                r[f"risk@tpr{tpr:g},fpr{fpr:g}"] = m.selective_risk_at_tpr_fpr(
                    data.losses, ood, s, tpr, fpr)
        out[name] = {k: float(v) for k, v in r.items()}
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
