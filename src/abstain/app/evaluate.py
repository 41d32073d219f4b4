"""Every applicable metric of each score column of a table."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import metrics as m
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
    FPR <= ``fpr``, computed by :func:`abstain.metrics.evaluate_ood`. Each metric's tie
    rule is that of its function in :mod:`abstain.metrics`.

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
    # the keys of abstain.metrics.evaluate_ood's columns in this table
    ood_keys = {"auroc": "auroc", "aupr_in": "aupr_in", "aupr_out": "aupr_out",
                "fpr_at_tpr": f"fpr@{tpr:g}", "oscr": "oscr",
                "risk_at_tpr_fpr": f"risk@tpr{tpr:g},fpr{fpr:g}"}
    out: dict[str, dict[str, float]] = {}
    loss_id = data.losses[id_rows]
    pairs = data.pairs if has_ood else {}
    total = len(data.scores) + len(pairs)
    columns: dict[str, np.ndarray] = dict(data.scores)
    columns.update({name: data.stacked(cols) for name, cols in pairs.items()})
    for i, (name, s) in enumerate(columns.items()):
        r: dict[str, float] = {}
        if name in data.scores:
            s_id = s[id_rows]
            r = {"aurc": m.aurc(loss_id, s_id), "e_aurc": m.e_aurc(loss_id, s_id),
                 "augrc": m.augrc(loss_id, s_id)}
            for c in coverages:
                r[f"risk@{c:g}"] = m.selective_risk_at_coverage(loss_id, s_id, c)
        if has_ood:
            assert ood is not None
            # every OOD metric of this score (or pair) by the library's one table of them
            table = m.evaluate_ood(data.losses, ood, {name: s}, tpr=tpr, fpr=fpr)
            for key, value in table.row(name).items():
                if key != "oscr" or bounded:
                    r[ood_keys[key]] = value
        out[name] = {k: float(v) for k, v in r.items()}
        if progress is not None:
            progress(i + 1, total)
    n_ood = int(ood.sum()) if ood is not None else 0
    return Evaluation(int(id_rows.sum()), n_ood, data.n_dropped, labels, out, pairs)
