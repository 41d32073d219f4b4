"""The registry of metrics: what each metric of :mod:`abstain.metrics` is, for everything that
lists them all (re-exported by :mod:`abstain.metrics`).

:class:`StreamingMetric` looks its metric up here, :func:`evaluate_ood` takes its columns from
here, and the command line's ``evaluate`` and ``report`` build their table, labels, glossary
and "best score" lines from here. Adding a metric to all of them is its function plus one
:func:`register_metric` call.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._core.base import quiet
from .._core.validation import plain
from ..tables._score import ScoreTable
from ._ood import (
    aupr_in,
    aupr_out,
    auroc,
    ccr_at_fpr,
    detection_rate_at_false_alarm,
    fpr_at_tpr,
    oscr,
    selective_risk_at_precision_recall,
    selective_risk_at_tpr_fpr,
    tnr_at_tpr,
)
from ._selective import (
    augrc,
    aurc,
    coverage_at_risk,
    e_aurc,
    risk_coverage_curve,
    sele_loss,
    selective_risk_at_coverage,
)

__all__ = ["MetricSpec", "METRICS", "register_metric"]

#: The settings of a metric table that a metric may take, by kind: the selective risk's
#: coverages, the OOD metrics' TPR and FPR targets.
PARAMETERS = {"selective": ("coverage",), "ood": ("tpr", "fpr")}

#: A number as ``format(x, "g")`` writes it (a field of a key).
_NUMBER = r"(?:-?(?:\d+(?:\.\d*)?(?:e[-+]\d+)?|inf|nan))"

#: The arguments that hold the rows (a table replaces them all): never a setting.
DATA_ARGUMENTS = ("losses", "uncertainty", "is_ood", "scores")


@dataclass(frozen=True)
class MetricSpec:
    """What one metric is, for the tables that list every metric.

    Parameters
    ----------
    function : callable
        The metric: ``function(losses, uncertainty, **options)`` for a selective metric,
        ``function(is_ood, scores, **options)`` or ``function(losses, is_ood, scores,
        **options)`` for an OOD metric, each also taking a :class:`~abstain.ScoreTable` in
        place of its arrays. Its ``__name__`` is the metric's name
        (``StreamingMetric(name)``).
    kind : {"selective", "ood"}
        ``"selective"``: one score and the losses of the ID rows. ``"ood"``: also needs the
        OOD marks (the OOD column of a table).
    label : str, default ""
        Display name in the table; ``{parameter}`` fields are written as percentages
        (``"risk at coverage {coverage}"`` reads ``risk at coverage 80%``).
    glossary : str, default ""
        One line on what the metric means (the report's glossary).
    key : str or None, default None
        Key of the metric in the table and its JSON; ``{parameter}`` fields are written with
        ``:g`` (``"risk@{coverage}"`` reads ``risk@0.8``). None: the function's name.
    higher_is_better : bool or None, default False
        The direction of the metric (which score is best); None for a curve.
    params : tuple of str, default ()
        The table settings the metric takes, as keyword arguments of the function:
        ``"coverage"`` for a selective metric (one entry per coverage of the table), ``"tpr"``
        and ``"fpr"`` for an OOD metric.
    pair : {None, "envelope", "rule"}, default None
        Whether the metric also takes a score pair (two columns, ``search=`` and
        ``n_directions=``), and what its value of a pair is: ``"envelope"``, the envelope
        over directions (an oracle taking the best direction at each operating point), or
        ``"rule"``, that of the one best rule of the pair for the metric's target.
    bounded : bool, default False
        Whether the metric is defined only for losses in [0, 1] (OSCR).
    table : bool, default True
        Whether the metric is a column of the metric tables (False for a curve, or a metric
        whose target is no table setting).
    headline : bool, default False
        Whether the report's summary names the best score on it.
    column : str or None, default None
        Its column in :func:`evaluate_ood`; None: the function's name.
    short : str, default ""
        How a sentence names it (``"FPR at TPR"``); empty: the label.
    infeasible : str, default ""
        Why a NaN value is so when the metric's target may be infeasible, with
        ``{parameter}`` fields as in ``label``; empty: NaN means undefined on the rows.
    oracle : bool, default False
        Whether its :class:`StreamingMetric` keeps the distinct losses (E-AuRC's oracle).

    Examples
    --------
    >>> from abstain.metrics import METRICS
    >>> spec = METRICS["selective_risk_at_coverage"]
    >>> spec.kind, spec.higher_is_better
    ('selective', False)
    >>> spec.instances({"coverage": [0.8, 0.9]})
    [('risk@0.8', 'risk at coverage 80%', {'coverage': 0.8}), \
('risk@0.9', 'risk at coverage 90%', {'coverage': 0.9})]
    """

    function: Callable[..., Any]
    kind: str
    label: str = ""
    glossary: str = ""
    key: str | None = None
    higher_is_better: bool | None = False
    params: tuple[str, ...] = ()
    pair: str | None = None
    bounded: bool = False
    table: bool = True
    headline: bool = False
    column: str | None = None
    oracle: bool = False
    short: str = ""
    infeasible: str = ""

    @property
    def name(self) -> str:
        """The function's name: the metric's name in :data:`METRICS`."""
        return str(self.function.__name__)

    @property
    def truth(self) -> tuple[str, ...]:
        """The truth arguments of the function on rows, in order (before the scores):
        ``("losses",)``, ``("is_ood",)`` or ``("losses", "is_ood")``."""
        names = list(inspect.signature(self.function).parameters)
        return tuple(itertools.takewhile(lambda p: p in ("losses", "is_ood"), names))

    def instances(self, settings: Mapping[str, Sequence[float]]
                  ) -> list[tuple[str, str, dict[str, float]]]:
        """``(key, label, options)`` of each entry of the metric in a table with these
        settings (one per combination of the values of its :attr:`params`, in order)."""
        out = []
        for values in itertools.product(*(settings[p] for p in self.params)):
            options = dict(zip(self.params, values, strict=True))
            key = (self.key or self.name).format(**{p: _shortest(v) for p, v in options.items()})
            out.append((key, self._percent(self.label, options), options))
        return out

    def infeasible_note(self, options: Mapping[str, float]) -> str:
        """Why its NaN value with these options is so, if its target may be infeasible
        (:attr:`infeasible` with the options filled in), else ""."""
        return self._percent(self.infeasible, options)

    @staticmethod
    def _percent(template: str, options: Mapping[str, float]) -> str:
        return template.format(**{p: f"{_shortest(v, 100)}%" for p, v in options.items()})

    def matches(self, key: str) -> bool:
        """Whether ``key`` is an entry of this metric in a table (its key pattern with a
        number in each field)."""
        parts = [re.escape(text) + (_NUMBER if field is not None else "")
                 for text, field, _, _ in string.Formatter().parse(self.key or self.name)]
        return self.table and re.fullmatch("".join(parts), key) is not None


def _shortest(v: float, scale: int = 1) -> str:
    """``scale * v`` in the fewest significant digits, from 6 (as ``:g`` writes it), that
    give ``v`` back: 0.8 and 0.8000001 never share a key or a label."""
    for digits in range(6, 18):
        text = f"{scale * v:.{digits}g}"
        if float(text) / scale == v:
            return text
    return f"{scale * v:.17g}"


#: Every metric by name, in table order: the selective metrics of one score, then the OOD
#: metrics. Add entries with :func:`register_metric` (which checks them), not by item.
METRICS: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add a metric to :data:`METRICS`, after checking its entry; return it.

    From then on :class:`StreamingMetric` computes it by name and, when ``spec.table``, it
    is a column of the command line's ``evaluate`` and ``report`` tables (an OOD metric
    also of :func:`evaluate_ood`). Remove it with ``METRICS.pop(name)``.

    Raises
    ------
    ValueError
        For a name already registered, an unknown ``kind``, a parameter that is not a
        setting of its kind or not an argument of the function, a key without a field of
        each parameter, or a metric of the table without a label.

    Examples
    --------
    >>> from abstain.metrics import METRICS, MetricSpec, aurc, register_metric
    >>> def half_aurc(losses, uncertainty):
    ...     return aurc(losses, uncertainty) / 2
    >>> spec = register_metric(MetricSpec(half_aurc, "selective", label="AuRC / 2",
    ...                                   glossary="AuRC / 2: half of AuRC"))
    >>> list(METRICS).index("half_aurc") == len(METRICS) - 1
    True
    >>> METRICS.pop("half_aurc").label
    'AuRC / 2'
    """
    if not isinstance(spec, MetricSpec):
        raise ValueError(f"spec must be a MetricSpec; got {plain(spec)}.")
    if not callable(spec.function):
        raise ValueError(f"spec.function must be callable; got {plain(spec.function)}.")
    if spec.name in METRICS:
        raise ValueError(f"spec.function must have a new name; got {spec.name!r}, which is "
                         "registered already.")
    if spec.kind not in PARAMETERS:
        raise ValueError(f"spec.kind must be one of {', '.join(map(repr, PARAMETERS))}; got "
                         f"{plain(spec.kind)}.")
    arguments = inspect.signature(spec.function).parameters
    for p in spec.params:
        if p not in PARAMETERS[spec.kind] or p not in arguments:
            raise ValueError(f"spec.params must be among {PARAMETERS[spec.kind]} and arguments "
                             f"of {spec.name}; got {p!r}.")
    fields = {f for _, f, _, _ in string.Formatter().parse(spec.key or spec.name) if f}
    if fields != set(spec.params):
        raise ValueError(f"spec.key must have one field of each parameter {spec.params}; got "
                         f"{spec.key or spec.name!r}.")
    if spec.table and not spec.label:
        raise ValueError(f"spec.label must be given for a metric of the table; got "
                         f"{spec.label!r}.")
    if spec.pair not in (None, "envelope", "rule") or (spec.pair and spec.kind != "ood"):
        raise ValueError("spec.pair must be None, 'envelope' or 'rule' (None for a selective "
                         f"metric); got {spec.pair!r} for a {spec.kind} metric.")
    for what, mine, theirs in (("key", spec.key or spec.name,
                                {m.key or m.name for m in METRICS.values()}),
                               ("column", spec.column or spec.name,
                                {m.column or m.name for m in METRICS.values()})):
        if mine in theirs:  # the registered metric's value would be replaced in its place
            raise ValueError(f"spec.{what} must be new; got {mine!r}, which a registered "
                             "metric uses.")
    METRICS[spec.name] = spec
    return spec


@functools.cache
def _probe(needs_ood: bool) -> ScoreTable:
    """Two ID rows (and two OOD rows for the OOD metrics) on which every metric is defined."""
    if needs_ood:
        return ScoreTable.from_arrays([0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0],
                                      is_ood=[0, 1, 0, 1])
    return ScoreTable.from_arrays([0.0, 1.0], [0.0, 1.0])


def check_options(metric: str, function: Callable[..., Any], needs_ood: bool,
                  options: Mapping[str, Any]) -> None:
    """Raise at construction what ``compute`` would raise for ``options``: an unknown name,
    or a value the metric refuses (its own message, from the metric run on a probe table;
    a metric of the user's is not run there, as its own warnings could not be silenced
    without changing the process's filters: its values are checked when it computes)."""
    known = [p for p in inspect.signature(function).parameters if p not in DATA_ARGUMENTS]
    unknown = [name for name in options if name not in known]
    if unknown:
        allowed = f"be among {', '.join(known)}" if known else "be omitted (it takes none)"
        raise TypeError(f"options of {metric} must {allowed}; got "
                        f"{', '.join(map(repr, unknown))}.")
    if not str(getattr(function, "__module__", "")).startswith("abstain."):
        return
    with quiet(Warning):  # a target the probe cannot meet warns: not an error
        function(_probe(needs_ood), **options)


def table_metrics(kind: str) -> list[MetricSpec]:
    """The metrics of the table of this kind, in table order."""
    return [s for s in METRICS.values() if s.table and s.kind == kind]


def _builtin() -> None:
    sel, ood = "selective", "ood"
    for spec in (
        MetricSpec(aurc, sel, "AuRC", "AuRC: mean selective risk over all coverages (lower is "
                   "better)", headline=True),
        MetricSpec(e_aurc, sel, "E-AuRC", "E-AuRC: AuRC minus that of the oracle ordering (0 "
                   "is a perfect ranking)", oracle=True),
        MetricSpec(augrc, sel, "AUGRC", "AUGRC: area under the joint risk (accepted loss / n) "
                   "over coverage"),
        MetricSpec(selective_risk_at_coverage, sel, "risk at coverage {coverage}",
                   "risk at coverage c: mean loss of the c least uncertain ID rows",
                   key="risk@{coverage}", params=("coverage",)),
        MetricSpec(risk_coverage_curve, sel, higher_is_better=None, table=False),
        MetricSpec(coverage_at_risk, sel, higher_is_better=True, table=False),
        MetricSpec(sele_loss, sel, table=False),
        MetricSpec(auroc, ood, "AUROC", "AUROC: chance that an ID row scores below an OOD row "
                   "(1 is perfect, 0.5 chance)", higher_is_better=True,
                   pair="envelope", headline=True),
        MetricSpec(aupr_in, ood, "AUPR-In", "AUPR-In: area under precision-recall with ID "
                   "rows positive", higher_is_better=True),
        MetricSpec(aupr_out, ood, "AUPR-Out", "AUPR-Out: area under precision-recall with OOD "
                   "rows positive", higher_is_better=True),
        MetricSpec(fpr_at_tpr, ood, "FPR at TPR {tpr}", "FPR at TPR t: fraction of OOD rows "
                   "accepted when t of the ID rows are", key="fpr@{tpr}", params=("tpr",),
                   pair="envelope", short="FPR at TPR"),
        MetricSpec(oscr, ood, "OSCR", "OSCR: area under correct-and-accepted ID rate against "
                   "accepted OOD rate", higher_is_better=True, pair="envelope", bounded=True),
        MetricSpec(selective_risk_at_tpr_fpr, ood, "risk at TPR>={tpr}, FPR<={fpr}",
                   "risk at TPR/FPR: least selective risk of a rule keeping TPR >= t, FPR <= f",
                   key="risk@tpr{tpr},fpr{fpr}", params=("tpr", "fpr"), pair="rule",
                   headline=True, column="risk_at_tpr_fpr", short="the risk at TPR/FPR",
                   infeasible="infeasible: no rule on these rows keeps TPR >= {tpr} with FPR "
                   "<= {fpr}"),
        MetricSpec(tnr_at_tpr, ood, higher_is_better=True, table=False, pair="envelope"),
        MetricSpec(detection_rate_at_false_alarm, ood, higher_is_better=True, table=False,
                   pair="envelope"),
        MetricSpec(ccr_at_fpr, ood, higher_is_better=True, table=False),
        MetricSpec(selective_risk_at_precision_recall, ood, table=False, pair="rule"),
    ):
        register_metric(spec)


_builtin()
