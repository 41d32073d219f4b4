"""Evaluate, fit and apply reject rules on a table of per-sample columns.

The functions behind the ``abstain`` command line, usable from Python. A table
(see :mod:`abstain.io`) holds a loss column, or a label and a prediction column
(the 0/1 loss ``label != prediction``); one or more uncertainty-score columns
(higher is rejected first); and optionally an ``is_ood`` column (1/True for
out-of-distribution rows, whose loss, label and prediction are ignored and may
be empty). One score column may be named the OOD score ``s_g`` of a double-score
method: it is then also paired with each other score column ``s_r`` as the two
columns ``(s_r, s_g)`` that the OOD metrics and models accept. :func:`prepare`
picks and checks the columns; :func:`evaluate` computes every applicable metric;
:func:`fit_rule` fits a reject model and :func:`apply_rule` applies it to new rows.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import metrics as m
from ._groups import tie_groups
from ._ood_core import grid_weights, project
from ._validation import as_losses_and_scores
from .exceptions import InfeasibleTargetWarning
from .io import ColumnError, get_column
from .models import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
    _sgr_search,
    rule_from_json,
)
from .ood import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD, selector_from_json

__all__ = [
    "TableData",
    "Evaluation",
    "MissingValuesError",
    "InfeasibleTargetError",
    "prepare",
    "evaluate",
    "fit_rule",
    "rule_to_json",
    "load_rule",
    "apply_rule",
    "rule_columns",
    "least_risk_bound",
]

Progress = Callable[[int, int], None]


class MissingValuesError(ValueError):
    """Rows with NaN or empty values in the columns used.

    Attributes
    ----------
    n_rows : int
        Number of such rows.
    columns : list of str
        The columns with missing values.
    first_row : int
        Index (from 0, data rows only) of the first such row.
    """

    def __init__(self, n_rows: int, columns: list[str], first_row: int) -> None:
        self.n_rows, self.columns, self.first_row = n_rows, columns, first_row
        cols = ", ".join(map(repr, columns))
        super().__init__(
            f"{n_rows} row(s) have NaN or empty values in column(s) {cols} (first at data row "
            f"{first_row}); drop them explicitly (dropna=True)."
        )


class InfeasibleTargetError(ValueError):
    """A reject model's target cannot be met on the data; the message says what is attainable."""


class TableData(NamedTuple):
    """The checked columns of a table.

    Attributes
    ----------
    losses : ndarray of shape (n,)
        Non-negative loss per row (0.0 on OOD rows).
    scores : dict of str to ndarray of shape (n,)
        Uncertainty scores by column name; higher is rejected first.
    is_ood : ndarray of bool, shape (n,), or None
        OOD rows, when the table has an OOD column.
    n_dropped : int
        Rows dropped for missing values (``dropna=True``).
    keep : ndarray of bool, shape (n_rows,)
        Which rows of the table were kept.
    ood_score : str or None
        The score column that is the OOD score ``s_g`` of a double-score method
        (also in ``scores``), or None.
    """

    losses: NDArray[np.float64]
    scores: dict[str, NDArray[np.float64]]
    is_ood: NDArray[np.bool_] | None
    n_dropped: int
    keep: NDArray[np.bool_]
    ood_score: str | None = None

    @property
    def pairs(self) -> dict[str, tuple[str, str]]:
        """The double-score pairs, ``{"s_r+s_g": (s_r, s_g)}``: each other score column
        with ``ood_score`` (empty without one)."""
        g = self.ood_score
        if g is None:
            return {}
        return {f"{r}+{g}": (r, g) for r in self.scores if r != g}

    def stacked(self, columns: Sequence[str]) -> NDArray[np.float64]:
        """The named score columns side by side, shape (n, len(columns))."""
        return np.stack([self.scores[c] for c in columns], axis=1)


def _missing(col: NDArray[Any]) -> NDArray[np.bool_]:
    if col.dtype.kind == "f":
        return np.isnan(col)
    return np.char.strip(col.astype(str)) == ""


def _numeric(name: str, col: NDArray[Any]) -> NDArray[np.float64]:
    if col.dtype.kind != "f":
        raise ValueError(f"column {name!r} must be numeric; got text values such as "
                         f"{str(col[0])!r}.")
    return col


def prepare(
    table: Mapping[str, NDArray[Any]],
    *,
    loss: str | None = None,
    label: str | None = None,
    prediction: str | None = None,
    scores: Sequence[str] | None = None,
    is_ood: str | None = None,
    ood_score: str | None = None,
    dropna: bool = False,
    need_loss: bool = True,
) -> TableData:
    """Pick and check the columns of a table.

    Parameters
    ----------
    table : mapping of str to ndarray of shape (n,)
        As returned by :func:`abstain.io.read_table`.
    loss : str, optional
        Loss column. Default: ``"loss"`` if present, else the 0/1 loss of ``label``
        and ``prediction``.
    label, prediction : str, optional
        Label and prediction columns (default ``"label"`` and ``"prediction"``),
        compared as values (numbers or text).
    scores : sequence of str, optional
        Score columns. Default: every numeric column not used otherwise.
    is_ood : str, optional
        OOD column (0/1 or true/false). Default: ``"is_ood"`` if present.
    ood_score : str, optional
        The OOD score ``s_g`` of a double-score method: a score column (added to
        ``scores`` if they do not name it) that is also paired with each other score
        column ``s_r`` (see :attr:`TableData.pairs`). Needs the OOD column and at
        least one other score column.
    dropna : bool, default False
        Drop rows with NaN or empty values in the columns used (loss, label and
        prediction count on ID rows only) instead of raising
        :class:`MissingValuesError`.
    need_loss : bool, default True
        False when only scores are needed (applying a rule): the loss, label,
        prediction and OOD columns are then not read.

    Returns
    -------
    TableData

    Raises
    ------
    abstain.io.ColumnError
        A named column is missing (the message suggests the closest name).
    MissingValuesError
        Rows with missing values and ``dropna=False``.

    Examples
    --------
    >>> from abstain.tabular import prepare
    >>> data = prepare({"label": [1, 2, 2], "prediction": [1, 2, 1], "u": [0.1, 0.2, 0.9]})
    >>> data.losses.tolist(), list(data.scores)
    ([0.0, 0.0, 1.0], ['u'])
    """
    table = {k: np.asarray(v) for k, v in table.items()}
    if table:
        for k, v in table.items():
            if v.dtype.kind in "biu":
                table[k] = v.astype(np.float64)
    n = len(next(iter(table.values()))) if table else 0
    used: dict[str, NDArray[Any]] = {}
    ood_name = None
    if need_loss:
        ood_name = is_ood if is_ood is not None else ("is_ood" if "is_ood" in table else None)
    ood: NDArray[np.bool_] | None = None
    if ood_name is not None:
        col = _numeric(ood_name, get_column(table, ood_name, "OOD column"))
        used[ood_name] = col
    loss_cols: dict[str, NDArray[Any]] = {}
    if not need_loss:
        pass
    elif loss is not None:
        loss_cols[loss] = _numeric(loss, get_column(table, loss, "loss column"))
    elif label is not None or prediction is not None:
        for name, what in ((label or "label", "label column"),
                           (prediction or "prediction", "prediction column")):
            loss_cols[name] = get_column(table, name, what)
    elif "loss" in table:
        loss_cols["loss"] = _numeric("loss", table["loss"])
    elif "label" in table and "prediction" in table:
        loss_cols = {"label": table["label"], "prediction": table["prediction"]}
    else:
        raise ColumnError(
            "found no loss: the table has no 'loss' column and no 'label' and 'prediction' "
            f"columns; name them. The columns are: {', '.join(map(repr, table))}."
        )
    if scores is None:
        taken = set(used) | set(loss_cols)
        names = [k for k, v in table.items() if k not in taken and v.dtype.kind == "f"]
        if not names:
            raise ColumnError("found no score column: the table has no numeric column besides "
                              f"the loss, label, prediction and OOD columns; columns are: "
                              f"{', '.join(map(repr, table))}.")
    else:
        names = list(scores)
    if ood_score is not None:
        get_column(table, ood_score, "OOD score column")
        if need_loss and ood_name is None:
            raise ValueError(f"the OOD score {ood_score!r} needs an OOD column; the table has "
                             "none (name it with is_ood).")
        if ood_score not in names:
            names.append(ood_score)
        if len(names) < 2:
            raise ValueError(f"the OOD score {ood_score!r} pairs with the other score "
                             "columns; got no other score column.")
        clash = [f"{r}+{ood_score}" for r in names if f"{r}+{ood_score}" in names]
        if clash:
            raise ValueError(f"the pair name {clash[0]!r} is also a score column; rename it.")
    score_cols = {s: _numeric(s, get_column(table, s, "score column")) for s in names}
    # Missing values: OOD rows need no loss, label or prediction.
    bad = np.zeros(n, dtype=bool)
    bad_cols: list[str] = []
    ood_raw = used.get(ood_name) if ood_name is not None else None
    ood_rows = np.zeros(n, dtype=bool) if ood_raw is None else (ood_raw == 1.0)
    for name, col in {**used, **score_cols}.items():
        miss = _missing(col)
        if miss.any():
            bad |= miss
            bad_cols.append(name)
    for name, col in loss_cols.items():
        miss = _missing(col) & ~ood_rows
        if miss.any():
            bad |= miss
            bad_cols.append(name)
    if bad.any() and not dropna:
        raise MissingValuesError(int(bad.sum()), bad_cols, int(np.argmax(bad)))
    keep = ~bad
    if ood_raw is not None:
        vals = ood_raw[keep]
        if not np.all((vals == 0.0) | (vals == 1.0)):
            raise ValueError(f"column {ood_name!r} must hold only 0/1 or true/false; "
                             "got other values.")
        ood = vals == 1.0
    if len(loss_cols) == 1:
        losses = next(iter(loss_cols.values()))[keep].astype(np.float64)
    elif loss_cols:
        a, b = (c[keep] for c in loss_cols.values())
        losses = (a != b).astype(np.float64)
    else:
        losses = np.zeros(int(keep.sum()))
    if ood is not None:
        losses = np.where(ood, 0.0, losses)
    if np.any(losses < 0):
        raise ValueError(f"the loss must be non-negative; got minimum {losses.min()!r}.")
    return TableData(losses, {k: v[keep] for k, v in score_cols.items()}, ood,
                     int(bad.sum()) if dropna else 0, keep, ood_score)


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


Rule = (CostBased | BoundedImprovement | BoundedAbstention | BoundedTPRFPR
        | BoundedPrecisionRecall | CostBasedOOD)


def fit_rule(
    data: TableData,
    *,
    target_coverage: float | None = None,
    target_risk: float | None = None,
    delta: float | None = None,
    reject_cost: float | None = None,
    tpr: float | None = None,
    fpr: float | None = None,
    precision: float | None = None,
    recall: float | None = None,
    reject_id_cost: float | None = None,
    predict_ood_cost: float | None = None,
    reject_ood_cost: float | None = None,
    ood_prior: float | None = None,
    random_state: int | None = 0,
) -> Rule:
    """Fit the reject model that the given targets name, on the scores of ``data``.

    Exactly one model: ``target_coverage`` (:class:`~abstain.BoundedAbstention`),
    ``target_risk`` with optional ``delta`` (:class:`~abstain.BoundedImprovement`),
    ``reject_cost`` (:class:`~abstain.CostBased`), ``tpr`` and ``fpr``
    (:class:`~abstain.ood.BoundedTPRFPR`), ``precision`` and ``recall``
    (:class:`~abstain.ood.BoundedPrecisionRecall`, with an optional ``ood_prior``) or
    ``reject_id_cost`` and ``predict_ood_cost`` with an optional ``reject_ood_cost``
    (default 0) and ``ood_prior`` (:class:`~abstain.ood.CostBasedOOD` fitted on the
    data: the least empirical risk of the extended loss). The first three use one
    score column and the ID rows; the OOD models need the OOD column and take one
    score column or two (a double-score method): with ``data.ood_score`` set, the
    pair of the one other score column and the OOD score, in that order.

    Raises
    ------
    InfeasibleTargetError
        When the target cannot be met; the message names the failing constraint and
        what the data attains.

    Examples
    --------
    >>> from abstain.tabular import fit_rule, prepare
    >>> data = prepare({"loss": [0, 0, 1, 1], "u": [0.1, 0.2, 0.3, 0.4]})
    >>> fit_rule(data, target_coverage=0.5).threshold_
    0.2
    >>> fit_rule(data, target_risk=0.0001, delta=0.1)
    Traceback (most recent call last):
    ...
    abstain.tabular.InfeasibleTargetError: target risk 0.0001 with delta 0.1 is infeasible: ...
    """
    chosen = [name for name, given in (
        ("target_coverage", target_coverage is not None),
        ("target_risk", target_risk is not None),
        ("reject_cost", reject_cost is not None),
        ("tpr/fpr", tpr is not None or fpr is not None),
        ("precision/recall", precision is not None or recall is not None),
        ("cost-based OOD", reject_id_cost is not None or predict_ood_cost is not None),
    ) if given]
    if len(chosen) != 1:
        got = ", ".join(chosen) if chosen else "none"
        raise ValueError("exactly one target must be given (target_coverage, target_risk, "
                         "reject_cost, tpr and fpr, precision and recall, or reject_id_cost "
                         f"and predict_ood_cost); got {got}.")
    kind = chosen[0]
    if delta is not None and target_risk is None:
        raise ValueError("delta must come with target_risk; got delta alone.")
    if reject_ood_cost is not None and kind != "cost-based OOD":
        raise ValueError("reject_ood_cost must come with reject_id_cost and predict_ood_cost.")
    if ood_prior is not None and kind not in ("cost-based OOD", "precision/recall"):
        raise ValueError("ood_prior must come with precision and recall or with the "
                         f"cost-based OOD model; got it with {kind}.")
    names = list(data.scores)
    if kind in ("tpr/fpr", "precision/recall", "cost-based OOD"):
        if kind == "tpr/fpr" and (tpr is None or fpr is None):
            raise ValueError("tpr and fpr must be given together.")
        if kind == "precision/recall" and (precision is None or recall is None):
            raise ValueError("precision and recall must be given together.")
        if kind == "cost-based OOD" and (reject_id_cost is None or predict_ood_cost is None):
            raise ValueError("reject_id_cost and predict_ood_cost must be given together.")
        if data.is_ood is None:
            raise ValueError(f"the {kind} model needs an OOD column; the table has none.")
        names = _ood_columns(data, kind)
        if len(names) not in (1, 2):
            raise ValueError(f"the {kind} model takes one or two score columns; got {len(names)}.")
        s = data.stacked(names)
        sel: BoundedTPRFPR | BoundedPrecisionRecall | CostBasedOOD
        if kind == "tpr/fpr":
            assert tpr is not None and fpr is not None
            sel = BoundedTPRFPR(tpr=tpr, fpr=fpr, random_state=random_state)
        elif kind == "precision/recall":
            assert precision is not None and recall is not None
            sel = BoundedPrecisionRecall(precision=precision, recall=recall, ood_prior=ood_prior,
                                         random_state=random_state)
        else:
            assert reject_id_cost is not None and predict_ood_cost is not None
            sel = CostBasedOOD(reject_id_cost, predict_ood_cost,
                               0.0 if reject_ood_cost is None else reject_ood_cost,
                               ood_prior=ood_prior, random_state=random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            sel.fit(s, data.is_ood, data.losses)
        if not sel.feasible_:
            if isinstance(sel, BoundedTPRFPR):
                assert tpr is not None and fpr is not None
                best = float(m.ood_roc_curve(data.is_ood, s, fpr=[fpr]).tpr[0])
                least = _least_fpr_at_tpr(data.is_ood, s, tpr)
                raise InfeasibleTargetError(
                    f"TPR >= {tpr:g} with FPR <= {fpr:g} is infeasible: at FPR <= {fpr:g} "
                    f"the highest attainable TPR is {_round(best, down=True)}; at TPR >= "
                    f"{tpr:g} the lowest attainable FPR is {_round(least, down=False)}.")
            assert precision is not None and recall is not None
            best = float(m.ood_pr_curve(data.is_ood, s, recall=[recall],
                                        ood_prior=ood_prior).precision[0])
            most = _most_recall_at_precision(data.is_ood, s, precision, ood_prior)
            raise InfeasibleTargetError(
                f"precision >= {precision:g} with recall >= {recall:g} is infeasible: at "
                f"recall >= {recall:g} the highest attainable precision is "
                f"{_round(best, down=True)}; at precision >= {precision:g} the highest "
                f"attainable recall is {_round(most, down=True)}.")
        return sel
    if data.ood_score is not None:
        raise ValueError(f"{kind} takes one score column; an OOD score ({data.ood_score!r}) "
                         "pairs columns for the OOD models only (tpr and fpr, precision and "
                         "recall, reject_id_cost and predict_ood_cost).")
    if len(names) != 1:
        raise ValueError(f"the {kind} model takes one score column; got {len(names)}: "
                         f"{', '.join(map(repr, names))}.")
    rows = ~data.is_ood if data.is_ood is not None else np.ones(data.losses.size, bool)
    u, loss = data.scores[names[0]][rows], data.losses[rows]
    rule: CostBased | BoundedImprovement | BoundedAbstention
    if target_coverage is not None:
        rule = BoundedAbstention(target_coverage=target_coverage, random_state=random_state)
    elif reject_cost is not None:
        rule = CostBased(reject_cost=reject_cost, random_state=random_state)
    else:
        assert target_risk is not None
        rule = BoundedImprovement(target_risk=target_risk, delta=delta,
                                  random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        rule.fit(u, loss)
    if not rule.feasible_:
        assert isinstance(rule, BoundedImprovement)
        if delta is None:
            raise InfeasibleTargetError(
                f"target risk {target_risk:g} is infeasible: no threshold rule's selective risk "
                f"is at or below it; the lowest selective risk attainable on these {loss.size} "
                f"rows is {_round(rule.min_risk_, down=False)}.")
        least = least_risk_bound(u, loss, delta, loss_bound=rule.loss_bound)
        raise InfeasibleTargetError(
            f"target risk {target_risk:g} with delta {delta:g} is infeasible: no rule's upper "
            f"confidence bound on the selective risk is at or below it; the least bound "
            f"attainable with delta {delta:g} on these {loss.size} rows is "
            f"{_round(least, down=False)} (the lowest empirical selective risk is "
            f"{_round(rule.min_risk_, down=False)}; a bound nearer to it needs more rows or a "
            "larger delta).")
    return rule


def _round(x: float, *, down: bool, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, rounded towards the feasible side.

    A least attainable bound is rounded up and a highest attainable rate down, so the
    printed value, read back as a float, is itself a feasible target.
    """
    if not math.isfinite(x) or x == 0.0:
        return f"{x:g}"
    k = digits - 1 - math.floor(math.log10(abs(x)))

    def val(q: int) -> float:
        return q / 10.0**k if k >= 0 else q * 10.0**-k

    q = math.floor(x * 10.0**k) if down else math.ceil(x * 10.0**k)
    if down:
        while val(q) > x:
            q -= 1
        while val(q + 1) <= x:
            q += 1
    else:
        while val(q) < x:
            q += 1
        while val(q - 1) >= x:
            q -= 1
    return f"{val(q):.{digits + 1}g}"


def least_risk_bound(uncertainty: Any, losses: Any, delta: float, *,
                     loss_bound: float = 1.0) -> float:
    """The least ``target_risk`` that ``BoundedImprovement(delta=delta)`` meets on the data.

    The guaranteed fit (selection with guaranteed risk) binary-searches the ``G`` tie
    groups with ``K = ceil(log2(G + 1))`` tests at level ``delta / K``. It fails only
    when every test fails, and then it has tested the fixed chain of prefixes
    ``g_1 = (G - 1) // 2``, ``g_{i+1} = (g_i - 1) // 2``, ..., ``0``; a larger target
    only turns tests into passes. So the fit is feasible exactly when the target is at
    least the smallest upper confidence bound on that chain, which is returned.

    Parameters
    ----------
    uncertainty : array-like of shape (n,)
    losses : array-like of shape (n,), in ``[0, loss_bound]``
    delta : float in (0, 1)
    loss_bound : float > 0, default 1.0

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain import BoundedImprovement
    >>> from abstain.tabular import least_risk_bound
    >>> u, loss = list(range(40)), [0] * 30 + [1] * 10
    >>> least = least_risk_bound(u, loss, delta=0.1)
    >>> round(least, 4)
    0.1851
    >>> BoundedImprovement(least, delta=0.1).fit(u, loss).feasible_
    True
    """
    ls, u = as_losses_and_scores(losses, uncertainty)
    binary = bool(np.all((ls == 0.0) | (ls == 1.0)))
    squares = None if binary else tie_groups(np.square(ls), u)
    # a target no bound meets makes the search walk exactly that chain
    return _sgr_search(tie_groups(ls, u), -math.inf, delta, loss_bound, binary, squares)[2]


def _directions(s: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """The combined scores of each direction the OOD selectors search (one for one column)."""
    if s.shape[1] == 1:
        return [s[:, 0]]
    return [project(s, w) for w in grid_weights(360)]


def _least_fpr_at_tpr(is_ood: NDArray[np.bool_], s: NDArray[np.float64], tpr: float) -> float:
    """The lowest FPR of a threshold rule with TPR >= ``tpr`` over the searched directions."""
    return min(float(m.fpr_at_tpr(is_ood, d, tpr)) for d in _directions(s))


def _most_recall_at_precision(is_ood: NDArray[np.bool_], s: NDArray[np.float64],
                              precision: float, ood_prior: float | None) -> float:
    """The highest recall (TPR) of a rule with precision >= ``precision``.

    The precision uses ``ood_prior``, or the sample's OOD fraction when None.

    Precision >= p is ``p pi FPR <= (1 - p)(1 - pi) TPR``, linear along each ROC
    segment, so the answer is at the last ROC knot meeting it or where the next
    segment crosses it.
    """
    pi = float(is_ood.mean()) if ood_prior is None else ood_prior
    best = 0.0
    for d in _directions(s):
        fpr, tpr = m.ood_roc_curve(is_ood, d)
        g = precision * pi * fpr - (1 - precision) * (1 - pi) * tpr
        ok = np.flatnonzero(g <= 1e-12)
        j = int(ok[-1])
        if j == tpr.size - 1:
            r = float(tpr[j])
        else:
            f = g[j] / (g[j] - g[j + 1]) if g[j] < 0 else 0.0
            r = float(tpr[j] + f * (tpr[j + 1] - tpr[j]))
        best = max(best, r)
    return best


def _ood_columns(data: TableData, kind: str) -> list[str]:
    """The score columns of an OOD model: the one pair ``(s_r, s_g)`` with an OOD score."""
    if data.ood_score is None:
        return list(data.scores)
    pairs = list(data.pairs.values())
    if len(pairs) != 1:
        raise ValueError(f"the {kind} model takes one pair (s_r, OOD score); got "
                         f"{len(pairs)} other score columns besides the OOD score "
                         f"{data.ood_score!r}: {', '.join(repr(r) for r, _ in pairs)}.")
    return list(pairs[0])


def rule_columns(rule: Rule, data: TableData) -> list[str]:
    """The score columns, in order, that :func:`fit_rule` fitted ``rule`` on."""
    if isinstance(rule, (BoundedTPRFPR, BoundedPrecisionRecall, CostBasedOOD)):
        return _ood_columns(data, type(rule).__name__)
    return list(data.scores)


def rule_to_json(rule: Rule, scores: Sequence[str]) -> str:
    """The rule's own ``to_json`` with the score column names added under ``"columns"``.

    The result still loads with :func:`abstain.rule_from_json` or
    :func:`abstain.ood.selector_from_json`; :func:`load_rule` returns both parts.
    """
    doc = json.loads(rule.to_json())
    doc["columns"] = {"scores": list(scores)}
    return json.dumps(doc, sort_keys=True, indent=1)


def load_rule(text: str) -> tuple[Rule, list[str] | None]:
    """Load a rule file: ``(rule, score column names or None)``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the rule file must be JSON; got a parse error: {exc}.") from exc
    fmt = doc.get("format") if isinstance(doc, dict) else None
    rule: Rule
    if fmt == "abstain.ood/1":
        rule = selector_from_json(text)
    else:
        rule = rule_from_json(text)
    cols = doc.get("columns", {}).get("scores")
    return rule, None if cols is None else [str(c) for c in cols]


def apply_rule(rule: Rule, data: TableData) -> NDArray[np.bool_]:
    """Accept decisions (randomised on ties with the rule's ``random_state``) for ``data``.

    The score columns of ``data``, in order, are the rule's columns (for a
    double-score rule ``s_r`` then ``s_g``).
    """
    names = list(data.scores)
    if isinstance(rule, (BoundedTPRFPR, BoundedPrecisionRecall, CostBasedOOD)):
        if len(names) != rule.n_scores_:
            raise ValueError(f"the rule takes {rule.n_scores_} score column(s); got "
                             f"{len(names)}: {', '.join(map(repr, names))}.")
        return rule.accept(data.stacked(names))
    if len(names) != 1:
        raise ValueError(f"the rule takes one score column; got {len(names)}.")
    return rule.accept(data.scores[names[0]])
