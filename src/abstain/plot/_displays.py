"""Display objects in scikit-learn's style: compute once, draw on any axes.

Each display holds the points of one curve (and, where asked, its random and oracle
references and the operating point of a fitted rule), is built with
``from_predictions`` (or ``from_estimator`` where an estimator gives the scores), and
draws with :meth:`plot`, which sets ``ax_``, ``figure_`` and ``line_`` and puts the
curve's area in the legend. Higher scores are rejected first, as everywhere in abstain.

References, drawn when ``plot(references=...)`` names them:

- ``"random"``: the rule that accepts at random (the same expected risk at every
  coverage; the chance diagonal of the ROC; precision equal to the ID fraction);
- ``"oracle"``: the rule that knows the losses (rejects the largest loss first) or
  the OOD labels (rejects every OOD row first).

The operating point of a fitted ``rule`` is computed on the display's own rows from
``rule.accept_proba(scores)``, with the same randomised acceptance of tied scores as
the rule applies: a coverage and a selective risk, or a TPR and an FPR.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import metrics as m
from .._core.arrays import class_positions, unmasked
from .._core.groups import loss_scale
from .._core.optional import axes
from .._core.validation import (
    as_is_ood,
    as_labels,
    as_losses_and_scores,
    check_choice,
    check_label_type,
    check_same_length,
)
from .._ood_search.sample import one_sample_per_rows, resolve_search
from ..tables._score import ScoreTable

__all__ = [
    "RiskCoverageDisplay",
    "GeneralizedRiskCoverageDisplay",
    "OODRocDisplay",
    "OODPrecisionRecallDisplay",
    "RiskAtFPRDisplay",
]

_REFERENCES = ("random", "oracle")
_REFERENCE_STYLE = {"random": {"color": "0.6", "ls": ":", "lw": 1.0},
                    "oracle": {"color": "0.3", "ls": "-.", "lw": 1.0}}


def _is_ood_array(is_ood: ArrayLike) -> NDArray[np.bool_]:
    """The OOD marks checked as the metrics check them (0/1 or bool, both classes)."""
    return as_is_ood(is_ood)


def _rule_accept(rule: Any, scores: ArrayLike) -> NDArray[np.float64]:
    """``rule.accept_proba(scores)``, or a clear error for anything without it."""
    if not hasattr(rule, "accept_proba"):
        raise ValueError(f"rule must be a fitted reject rule with accept_proba (a CostBased, "
                         f"BoundedAbstention, BoundedTPRFPR, ...); got {type(rule).__name__}.")
    return np.asarray(rule.accept_proba(scores), dtype=np.float64)


class _Display:
    """What every display shares: the curve, its area, references and a point."""

    _x_label = ""
    _y_label = ""
    _area_name = ""
    _steps = False

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    area: float | None
    name: str | None
    point: tuple[float, float] | None
    references: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]

    def __init__(self, x: ArrayLike, y: ArrayLike, *, area: float | None = None,
                 name: str | None = None, point: tuple[float, float] | None = None,
                 references: dict[str, tuple[Any, Any]] | None = None) -> None:
        self.x = np.asarray(x, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.area = area
        self.name = name
        self.point = point
        self.references = {k: (np.asarray(a, dtype=float), np.asarray(b, dtype=float))
                           for k, (a, b) in (references or {}).items()}

    def _label(self, name: str | None) -> str | None:
        name = self.name if name is None else name
        if self.area is None or not np.isfinite(self.area):
            return name
        area = f"{self._area_name} = {self.area:.4f}"
        return area if name is None else f"{name} ({area})"

    def _limits(self, ax: Any) -> None:
        ax.set_xlim(0.0, 1.0)

    def plot(self, ax: Any = None, *, name: str | None = None,
             references: Sequence[str] = (), legend: bool = True, **line: Any) -> Any:
        """Draw the curve on ``ax`` (a new figure when None); return the display.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        name : str, optional
            The legend name; the display's own ``name`` when None. The area follows
            it in the legend.
        references : sequence of {"random", "oracle"}, or one of them
            Reference curves to draw beside it (computed by ``from_predictions``).
        legend : bool, default True
            Draw the axes' legend of every labelled line so far; False leaves it as it
            is (several curves on one axes need it once, after the last).
        **line
            Matplotlib line properties of the curve (``ls``, ``marker``, ``color``).
        """
        if isinstance(references, str):  # one name, not its letters
            references = (references,)
        for ref in references:
            check_choice("references", ref, _REFERENCES)
            if ref not in self.references:
                raise ValueError(f"references: this display has no {ref!r} curve; build it "
                                 f"with from_predictions or from_estimator.")
        ax = axes(ax, "abstain.plot")
        if self._steps:
            line.setdefault("drawstyle", "steps-post")
        drawn = int((np.isfinite(self.x) & np.isfinite(self.y)).sum())
        if drawn < 2:  # a curve of one point is a visible dot, even on the frame; a curve
            # of none (an infeasible target everywhere) is an empty line in the legend
            line.update(marker=line.get("marker") or "o", markevery=None, clip_on=False)
        (self.line_,) = ax.plot(self.x, self.y, label=self._label(name), **line)
        self.reference_lines_ = {}
        for ref in references:
            rx, ry = self.references[ref]
            style = dict(_REFERENCE_STYLE[ref])
            if self._steps and ref == "oracle":
                style["drawstyle"] = "steps-post"
            (self.reference_lines_[ref],) = ax.plot(rx, ry, label=ref, **style)
        self.point_ = None
        if self.point is not None:
            (self.point_,) = ax.plot(*self.point, marker="o", ms=7, ls="none",
                                     color=self.line_.get_color(), markeredgecolor="black",
                                     label=f"rule: {self._point_text()}")
        ax.set_xlabel(self._x_label)
        ax.set_ylabel(self._y_label)
        self._limits(ax)
        if legend and ax.get_legend_handles_labels()[0]:  # a line without a name has none
            ax.legend(fontsize=8)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    def _point_text(self) -> str:
        assert self.point is not None
        return f"({self.point[0]:.3f}, {self.point[1]:.3f})"


def _errors(y_true: ArrayLike, y_pred: ArrayLike,
            rows: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
    """The 0/1 losses ``y_true != y_pred`` of scikit-learn's labels; with ``rows``, only
    those rows are compared (the others, OOD rows, get NaN: their labels may be anything)."""
    t_all, p_all = np.asarray(y_true), np.asarray(y_pred)
    if t_all.shape != p_all.shape or t_all.ndim != 1:
        raise ValueError(f"y_pred must have the shape of y_true, one label per row; got "
                         f"{p_all.shape} and {t_all.shape}.")
    if rows is not None and rows.shape != t_all.shape:
        raise ValueError(f"is_ood must have one mark per label of y_true; got shape "
                         f"{rows.shape} and {t_all.shape}.")
    keep = np.ones(t_all.size, bool) if rows is None else rows
    t, p = as_labels(t_all[keep], "y_true"), as_labels(p_all[keep], "y_pred")
    check_same_length(y_true=t, y_pred=p)
    check_label_type(t, p, "y_true")
    out = np.full(t_all.size, np.nan)
    out[keep] = (t != p).astype(np.float64)
    return out


class RiskCoverageDisplay(_Display):
    """Risk-coverage curve: selective risk against coverage, area AuRC.

    Parameters
    ----------
    coverage, risk : ndarray of shape (G,)
        The curve, one point per distinct uncertainty value (see
        :func:`abstain.metrics.risk_coverage_curve`; tied scores form one point).
    aurc : float, optional
        Shown in the legend.
    name : str, optional
    point : (coverage, risk), optional
        The operating point of a fitted rule.
    references : dict, optional
        ``{"random" | "oracle": (coverage, risk)}``.

    Examples
    --------
    >>> from abstain.plot import RiskCoverageDisplay
    >>> d = RiskCoverageDisplay.from_predictions([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.3],
    ...                                          name="u")
    >>> d.line_.get_label()
    'u (AuRC = 0.2083)'
    """

    _x_label = "coverage"
    _y_label = "selective risk"
    _area_name = "AuRC"
    _steps = True

    def __init__(self, coverage: ArrayLike, risk: ArrayLike, *, aurc: float | None = None,
                 name: str | None = None, point: tuple[float, float] | None = None,
                 references: dict[str, tuple[Any, Any]] | None = None) -> None:
        super().__init__(coverage, risk, area=aurc, name=name, point=point,
                         references=references)

    @property
    def coverage(self) -> NDArray[np.float64]:
        return self.x

    @property
    def risk(self) -> NDArray[np.float64]:
        return self.y

    @classmethod
    def _compute(cls, losses: NDArray[np.float64], u: NDArray[np.float64],
                 rule: Any) -> dict[str, Any]:
        curve = m.risk_coverage_curve(losses, u)
        oracle = m.risk_coverage_curve(losses, losses)
        # sums in units of a power of two where losses near the float64 maximum would
        # overflow them (1.0, the plain sums, for every realistic loss)
        scale = loss_scale(float(losses.max(initial=0.0)), losses.size)
        mean = float(np.mean(losses / scale)) * scale
        point = None
        if rule is not None:
            c = _rule_accept(rule, u)
            kept = float(c.sum())
            point = (kept / c.size,
                     float(c @ (losses / scale)) / kept * scale if kept > 0 else float("nan"))
        return {"curve": curve, "oracle": oracle, "mean": mean, "point": point,
                "aurc": m.aurc(losses, u), "augrc": m.augrc(losses, u), "n": losses.size}

    @classmethod
    def _build(cls, c: dict[str, Any], name: str | None) -> Any:
        curve, oracle, mean = c["curve"], c["oracle"], c["mean"]
        refs = {"random": ([0.0, 1.0], [mean, mean])}
        if oracle is not None:
            refs["oracle"] = (oracle.coverage, oracle.risk)
        return cls(curve.coverage, curve.risk, aurc=c["aurc"], name=name, point=c["point"],
                   references=refs)

    @classmethod
    def from_predictions(cls, losses: ArrayLike, uncertainty: ArrayLike, *,
                         y_pred: ArrayLike | None = None, name: str | None = None,
                         rule: Any = None, ax: Any = None, references: Sequence[str] = (),
                         **line: Any) -> Any:
        """Compute the curve of ``uncertainty`` (higher rejected first) and draw it.

        ``losses`` are per-row losses; or, with ``y_pred`` (scikit-learn's call,
        ``from_predictions(y_true, y_score, y_pred=y_pred)``), the true labels, and the
        loss is the 0/1 error ``y_true != y_pred``. ``rule`` is a fitted selective reject
        rule whose operating point on these rows is marked; ``references`` as in
        :meth:`plot`.
        """
        if y_pred is not None:
            losses = _errors(losses, y_pred)
        ls, u = as_losses_and_scores(losses, uncertainty)
        d = cls._build(cls._compute(ls, u, rule), name)
        return d.plot(ax, references=references, **line)

    @classmethod
    def from_table(cls, table: ScoreTable, *, name: str | None = None, rule: Any = None,
                   ax: Any = None, references: Sequence[str] = (), **line: Any) -> Any:
        """The curve of a :class:`~abstain.ScoreTable` of ID rows (no OOD marks), as
        :meth:`from_predictions` draws it on those rows.

        The rule's point is exact: ``rule.accept_proba`` of each distinct score weighted
        by its rows. The oracle reference needs the table's distinct losses (absent from a
        table built with ``oracle=False``, which then has no oracle reference).
        """
        if not isinstance(table, ScoreTable) or table.ood_counts is not None:
            raise ValueError("table must be a ScoreTable of ID rows, built without is_ood; "
                             f"got {table!r}.")
        curve = m.risk_coverage_curve(table)
        n = table.n
        point = None
        if rule is not None:
            c = _rule_accept(rule, table.values)
            kept = float(c @ table.counts)
            point = (kept / n, float(c @ table.loss_sums) / kept if kept > 0 else float("nan"))
        oracle = None
        if table.loss_values is not None and table.loss_counts is not None:
            cum = np.cumsum(table.loss_counts)
            oracle = m.RiskCoverageCurve(cum / n, np.cumsum(table.loss_values * table.loss_counts)
                                         / cum, table.loss_values)
        parts = {"curve": curve, "oracle": oracle, "mean": float(table.loss_sums.sum()) / n,
                 "point": point, "aurc": m.aurc(table), "augrc": m.augrc(table), "n": n}
        return cls._build(parts, name).plot(ax, references=references, **line)

    @classmethod
    def from_estimator(cls, estimator: Any, X: Any, y: ArrayLike, *, name: str | None = None,
                       rule: bool = True, ax: Any = None, references: Sequence[str] = (),
                       **line: Any) -> Any:
        """The curve of a fitted :class:`~abstain.SelectiveClassifier` on ``(X, y)``.

        The losses are the classifier's loss matrix at its predictions (0/1 by
        default), the score its ``uncertainty(X)``; with ``rule=True`` the operating point
        of its reject model is marked.
        """
        losses = _estimator_losses(estimator, X, y)
        u = np.asarray(estimator.uncertainty(X), dtype=np.float64)
        d = cls._build(cls._compute(losses, u, estimator.reject_model_ if rule else None),
                       type(estimator).__name__ if name is None else name)
        return d.plot(ax, references=references, **line)

    def _point_text(self) -> str:
        assert self.point is not None
        return f"coverage {self.point[0]:.3f}, risk {self.point[1]:.4f}"


def _estimator_losses(estimator: Any, X: Any, y: ArrayLike) -> NDArray[np.float64]:
    """Per-row loss of a fitted SelectiveClassifier's predictions of ``X`` against ``y``."""
    if not hasattr(estimator, "loss_matrix_"):
        raise ValueError(f"estimator must be a fitted SelectiveClassifier; got "
                         f"{type(estimator).__name__}.")
    classes = np.asarray(estimator.classes_)
    y = np.asarray(unmasked(y, "y"))
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, one label per row of X; got shape "
                         f"{y.shape}.")
    predicted = np.asarray(estimator.predict(X))
    check_same_length(X=predicted, y=y)
    if not np.all(np.isin(y, classes)):
        raise ValueError("y holds labels the estimator was not trained on.")
    # classes_ in the classifier's own order, which need not be sorted
    return np.asarray(estimator.loss_matrix_[class_positions(classes, y),
                                             class_positions(classes, predicted)],
                      dtype=np.float64)


class GeneralizedRiskCoverageDisplay(RiskCoverageDisplay):
    """Generalized risk-coverage curve: the joint risk ``sum of accepted losses / n``
    against coverage, area AUGRC (see :func:`abstain.metrics.augrc`).

    Built and drawn as :class:`RiskCoverageDisplay`; the random reference is
    ``mean loss x coverage``, the oracle's the smallest joint risk at each coverage.

    Examples
    --------
    >>> from abstain.plot import GeneralizedRiskCoverageDisplay
    >>> d = GeneralizedRiskCoverageDisplay.from_predictions([0, 1], [0.1, 0.9])
    >>> d.line_.get_label(), d.risk.tolist()
    ('AUGRC = 0.2500', [0.0, 0.5])
    """

    _y_label = "generalized risk (accepted loss / n)"
    _area_name = "AUGRC"

    @classmethod
    def _build(cls, c: dict[str, Any], name: str | None) -> Any:
        curve, oracle, mean = c["curve"], c["oracle"], c["mean"]
        point = c["point"]
        if point is not None:
            point = (point[0], point[0] * point[1] if point[0] > 0 else 0.0)
        refs = {"random": ([0.0, 1.0], [0.0, mean])}
        if oracle is not None:
            refs["oracle"] = (oracle.coverage, oracle.coverage * oracle.risk)
        return cls(curve.coverage, curve.coverage * curve.risk, aurc=c["augrc"], name=name,
                   point=point, references=refs)

    def _point_text(self) -> str:
        assert self.point is not None
        return f"coverage {self.point[0]:.3f}, generalized risk {self.point[1]:.4f}"


class _OODDisplay(_Display):
    """ROC-type displays of an OOD score (one or two columns), ID positive."""

    @staticmethod
    def _rates(rule: Any, scores: Any, ood: Any) -> tuple[float, float, float]:
        """TPR, FPR and precision (ID positive) of a rule's acceptance on these rows (or
        on the rows of a marked table, ``ood`` then None)."""
        if isinstance(scores, ScoreTable):
            c = _rule_accept(rule, scores.values)
            assert scores.ood_counts is not None
            a_id, a_ood = float(c @ scores.id_counts), float(c @ scores.ood_counts)
            n_ood = int(scores.ood_counts.sum())
            return (a_id / (scores.n - n_ood), a_ood / n_ood,
                    a_id / (a_id + a_ood) if a_id + a_ood > 0 else float("nan"))
        c = _rule_accept(rule, scores)
        tpr, fpr = float(c[~ood].mean()), float(c[ood].mean())
        kept = float(c.sum())
        return tpr, fpr, (float(c[~ood].sum()) / kept if kept > 0 else float("nan"))

    @classmethod
    def from_predictions(cls, is_ood: ArrayLike, scores: ArrayLike, *,
                         name: str | None = None, rule: Any = None, ax: Any = None,
                         references: Sequence[str] = (), search: str = "auto",
                         **line: Any) -> Any:
        """Compute the curve of ``scores`` (one column, or two for a double score: the
        envelope over directions, searched as ``search`` says: ``"auto"`` (default),
        ``"exact"`` or ``"grid"``, as in :func:`abstain.metrics.evaluate_ood`) and draw it;
        ``rule`` is a fitted OOD rule whose operating point on these rows is marked."""
        d = cls._from_scores(_is_ood_array(is_ood), scores, rule, name, search)
        return d.plot(ax, references=references, **line)

    @classmethod
    def from_table(cls, table: ScoreTable, *, name: str | None = None, rule: Any = None,
                   ax: Any = None, references: Sequence[str] = (), **line: Any) -> Any:
        """The curve of a :class:`~abstain.ScoreTable` built with ``is_ood`` (one score),
        as :meth:`from_predictions` draws it on those rows; the rule's point is exact
        (``rule.accept_proba`` of each distinct score weighted by its rows)."""
        d = cls._from_scores(None, _marked_table(table), rule, name)
        return d.plot(ax, references=references, **line)

    @classmethod
    def from_estimator(cls, estimator: Any, X: Any, is_ood: ArrayLike, *,
                       name: str | None = None, rule: bool = True, ax: Any = None,
                       references: Sequence[str] = (), **line: Any) -> Any:
        """The curve of a fitted detector's ``score(X)`` (higher = more OOD).

        With ``rule=True`` and an estimator that decides (a ``DoubleScoreDetector``
        with a fitted selector, anything with ``accept_proba``), its operating point is
        marked.
        """
        score = getattr(estimator, "score", None)
        try:  # a detector's score(X), not a classifier's score(X, y)
            takes_x = callable(score) and inspect.signature(score).bind(X) is not None
        except (TypeError, ValueError):
            takes_x = False
        if not takes_x or score is None:
            raise ValueError(f"estimator must be a fitted OOD detector whose score(X) gives "
                             f"one score per row (a detector of abstain.detectors, a "
                             f"DoubleScoreDetector, ...); got {type(estimator).__name__}.")
        s = np.asarray(score(X), dtype=np.float64)
        ood = _is_ood_array(is_ood)
        point_rule = None
        if rule and hasattr(estimator, "accept_proba"):
            point_rule = _Accepting(estimator, X)
        d = cls._from_scores(ood, s, point_rule,
                             type(estimator).__name__ if name is None else name)
        return d.plot(ax, references=references, **line)

    @classmethod
    @abc.abstractmethod
    def _from_scores(cls, ood: NDArray[np.bool_] | None, scores: Any, rule: Any,
                     name: str | None, search: str = "auto") -> Any:
        """The display of ``scores`` on these rows (or of a marked table, ``ood`` then
        None), with the rule's point."""


class _Accepting:
    """An estimator's decision on fixed inputs, as a rule on any scores of those rows."""

    def __init__(self, estimator: Any, X: Any) -> None:
        self._c = np.asarray(estimator.accept_proba(X), dtype=np.float64)

    def accept_proba(self, scores: Any) -> NDArray[np.float64]:
        return self._c


class OODRocDisplay(_OODDisplay):
    """ROC curve of an OOD score: TPR (ID accepted) against FPR (OOD accepted), area AUROC.

    Examples
    --------
    >>> from abstain.plot import OODRocDisplay
    >>> d = OODRocDisplay.from_predictions([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], name="s",
    ...                                    references=["random"])
    >>> d.line_.get_label()
    's (AUROC = 0.7500)'
    """

    _x_label = "FPR (fraction of OOD accepted)"
    _y_label = "TPR (fraction of ID accepted)"
    _area_name = "AUROC"

    @classmethod
    def _from_scores(cls, ood: NDArray[np.bool_] | None, scores: Any, rule: Any,
                     name: str | None, search: str = "auto") -> OODRocDisplay:
        args, kw = _curve_args(ood, scores, search)
        with one_sample_per_rows():  # a pair's grid directions sorted once for both
            curve = m.ood_roc_curve(*args, **kw)
            area = m.auroc(*args, **kw)
        point = None
        if rule is not None:
            tpr, fpr, _ = cls._rates(rule, scores, ood)
            point = (fpr, tpr)
        return cls(curve.fpr, curve.tpr, area=area, name=name, point=point,
                   references={"random": ([0.0, 1.0], [0.0, 1.0]),
                               "oracle": ([0.0, 0.0, 1.0], [0.0, 1.0, 1.0])})

    def _limits(self, ax: Any) -> None:
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.02)

    def _point_text(self) -> str:
        assert self.point is not None
        return f"TPR {self.point[1]:.3f}, FPR {self.point[0]:.3f}"


class OODPrecisionRecallDisplay(_OODDisplay):
    """PR curve of an OOD score with ID positive: precision against recall (TPR),
    area AUPR-In (see :func:`abstain.metrics.aupr_in`).

    One score: a step curve, each tie group's precision over the recall it adds, whose
    area is the AUPR-In of the legend (the average precision). A double-score pair: the
    largest precision at recall ``>= r`` over the directions
    (:func:`abstain.metrics.ood_pr_curve`), an envelope without an area.

    Examples
    --------
    >>> from abstain.plot import OODPrecisionRecallDisplay
    >>> d = OODPrecisionRecallDisplay.from_predictions([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> d.line_.get_label()
    'AUPR-In = 0.8333'
    """

    _x_label = "recall (TPR)"
    _y_label = "precision (ID among accepted)"
    _area_name = "AUPR-In"

    @classmethod
    def _from_scores(cls, ood: NDArray[np.bool_] | None, scores: Any, rule: Any,
                     name: str | None, search: str = "auto") -> OODPrecisionRecallDisplay:
        args, kw = _curve_args(ood, scores, search)
        two = bool(kw)  # two score columns: a one-column (n, 1) array is one score
        base = float((~ood).mean()) if ood is not None else \
            float(scores.id_counts.sum()) / scores.n
        if two:  # the envelope over directions: no area
            curve = m.ood_pr_curve(*args, **kw)
            x, y = curve.recall, curve.precision
        else:
            x, y = _precision_steps(m.ood_roc_curve(*args), base)
        point = None
        if rule is not None:
            tpr, _, precision = cls._rates(rule, scores, ood)
            point = (tpr, precision)
        return cls(x, y, area=None if two else m.aupr_in(*args),
                   name=name, point=point,
                   references={"random": ([0.0, 1.0], [base, base]),
                               "oracle": ([0.0, 1.0], [1.0, 1.0])})

    def _limits(self, ax: Any) -> None:
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.02)

    def _point_text(self) -> str:
        assert self.point is not None
        return f"recall {self.point[0]:.3f}, precision {self.point[1]:.3f}"


class RiskAtFPRDisplay(_Display):
    """The least selective risk of ID rows against the TPR target, at FPR <= ``fpr``
    (see :func:`abstain.metrics.risk_coverage_curve_at_fpr`); gaps where the target is
    infeasible. The legend carries the FPR bound (the curve has no standard area), and says
    "no TPR >= t reachable" when not even the curve's first target ``t`` (0.01 by default)
    can be met at that FPR bound (a smaller TPR may be: one ID row of 500 kept alone).

    Examples
    --------
    >>> from abstain.plot import RiskAtFPRDisplay
    >>> d = RiskAtFPRDisplay.from_predictions([0, 1, 0, 0], [0, 0, 1, 1],
    ...                                       [0.1, 0.2, 0.5, 0.6], fpr=0.5, name="s")
    >>> d.line_.get_label()
    's (FPR <= 0.5)'
    """

    _x_label = "TPR (coverage of ID)"
    _y_label = "selective risk"

    def __init__(self, tpr: ArrayLike, risk: ArrayLike, *, fpr: float,
                 name: str | None = None, point: tuple[float, float] | None = None,
                 references: dict[str, tuple[Any, Any]] | None = None) -> None:
        super().__init__(tpr, risk, name=name, point=point, references=references)
        self.fpr = float(fpr)

    def _label(self, name: str | None) -> str | None:
        name = self.name if name is None else name
        bound = f"FPR <= {self.fpr:g}"
        if not self.reachable:
            bound += f": no TPR >= {self.x[0]:g} reachable" if self.x.size else ": no TPR"
        return bound if name is None else f"{name} ({bound})"

    @property
    def reachable(self) -> bool:
        """Whether some TPR target of the curve (0.01, 0.02, ..., 1 by default) is reachable
        at FPR <= ``fpr`` (the curve has a point); a TPR below the first target may be even
        where none is."""
        return bool(np.isfinite(self.y).any())

    @classmethod
    def from_predictions(cls, losses: ArrayLike, is_ood: ArrayLike, scores: ArrayLike, *,
                         fpr: float = 0.05, y_pred: ArrayLike | None = None,
                         name: str | None = None, rule: Any = None, ax: Any = None,
                         references: Sequence[str] = (), search: str = "auto",
                         **line: Any) -> RiskAtFPRDisplay:
        """Compute the curve at FPR <= ``fpr`` and draw it (two score columns: the best
        direction at each TPR, searched as ``search`` says, as in
        :func:`abstain.metrics.evaluate_ood`); ``rule`` is a fitted OOD rule whose TPR and
        selective risk on these rows are marked. With ``y_pred``, ``losses`` are the true
        labels and the loss of an ID row is ``y_true != y_pred`` (OOD rows' labels are not
        read)."""
        ood = _is_ood_array(is_ood)
        if y_pred is not None:
            losses = _errors(losses, y_pred, ~ood)
        (_, cols), kw = _curve_args(ood, scores, search)
        curve = m.risk_coverage_curve_at_fpr(losses, ood, cols, fpr, **kw)
        loss = np.where(ood, 0.0, np.nan_to_num(np.asarray(losses, dtype=np.float64)))
        point = None
        if rule is not None:
            c = _rule_accept(rule, scores)
            kept = float(c[~ood].sum())
            point = (float(c[~ood].mean()),
                     float(c[~ood] @ loss[~ood]) / kept if kept > 0 else float("nan"))
        mean = float(loss[~ood].mean())
        d = cls(curve.tpr, curve.risk, fpr=fpr, name=name, point=point,
                references={"random": ([0.0, 1.0], [mean, mean])})
        return d.plot(ax, references=references, **line)

    @classmethod
    def from_table(cls, table: ScoreTable, *, fpr: float = 0.05, name: str | None = None,
                   rule: Any = None, ax: Any = None, references: Sequence[str] = (),
                   **line: Any) -> RiskAtFPRDisplay:
        """The curve of a :class:`~abstain.ScoreTable` built with ``is_ood`` (one score),
        as :meth:`from_predictions` draws it on those rows; the rule's point is exact."""
        table = _marked_table(table)
        assert table.ood_counts is not None
        curve = m.risk_coverage_curve_at_fpr(table, fpr=fpr)
        n_id = float(table.id_counts.sum())
        point = None
        if rule is not None:
            c = _rule_accept(rule, table.values)
            kept = float(c @ table.id_counts)
            point = (kept / n_id, float(c @ table.loss_sums) / kept if kept > 0
                     else float("nan"))
        mean = float(table.loss_sums.sum()) / n_id
        d = cls(curve.tpr, curve.risk, fpr=fpr, name=name, point=point,
                references={"random": ([0.0, 1.0], [mean, mean])})
        return d.plot(ax, references=references, **line)

    def _point_text(self) -> str:
        assert self.point is not None
        return f"TPR {self.point[0]:.3f}, risk {self.point[1]:.4f}"


def _precision_steps(roc: Any, id_fraction: float) -> tuple[NDArray[np.float64],
                                                             NDArray[np.float64]]:
    """The average precision's step curve from the ROC knots (ID positive, the tie groups
    in acceptance order) and the sample's ID fraction: precision
    ``f TPR_t / (f TPR_t + (1 - f) FPR_t)`` on recall ``(TPR_{t-1}, TPR_t]``, so the area
    under the drawn line is ``sum_t (R_t - R_{t-1}) P_t``."""
    fpr, tpr = np.asarray(roc.fpr, dtype=float), np.asarray(roc.tpr, dtype=float)
    tp, fp = id_fraction * tpr[1:], (1.0 - id_fraction) * fpr[1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp > 0, tp / np.where(tp > 0, tp + fp, 1.0), 0.0)
    x = np.repeat(tpr, 2)[1:-1]  # R_0, R_1, R_1, R_2, ..., R_T
    y = np.repeat(precision, 2)  # P_1, P_1, P_2, P_2, ..., P_T
    return x, y


def _curve_args(ood: NDArray[np.bool_] | None, scores: Any,
                search: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of an OOD curve's metric (a marked table alone, or the OOD marks and
    the columns that ``search`` computes a pair on) and a pair's ``search`` keyword."""
    if ood is None:
        return (scores,), {}
    _, cols, keyword = resolve_search(scores, search)
    return (ood, cols), ({} if keyword is None else {"search": keyword})


def _marked_table(table: Any) -> ScoreTable:
    """``table`` if it is a ScoreTable with OOD marks and rows of both kinds."""
    if not isinstance(table, ScoreTable) or table.ood_counts is None:
        raise ValueError(f"table must be a ScoreTable built with is_ood; got {table!r}.")
    n_ood = int(table.ood_counts.sum())
    if not 0 < n_ood < table.n:
        raise ValueError(f"table must hold ID and OOD rows; got {table.n - n_ood} ID and "
                         f"{n_ood} OOD.")
    return table
