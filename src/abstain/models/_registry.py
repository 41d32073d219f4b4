"""Every reject rule that ``abstain fit`` offers: its targets, its data and its summary line."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from .._core.base import quiet
from ..exceptions import InfeasibleTargetWarning
from ..metrics import ood_pr_curve, ood_roc_curve
from ..tables._binned import BinnedTable
from ..tables._pair import PairTable
from ..tables._score import ScoreTable
from ._least_risk import least_fpr_at_tpr, least_risk_bound, most_recall_at_precision
from ._ood import (
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBasedOOD,
)
from ._selective import BoundedAbstention, BoundedImprovement, CostBased

__all__ = ["REJECT_RULES", "RuleSpec", "RuleTarget", "register_rule"]


@dataclass(frozen=True)
class RuleTarget:
    """One target or companion of a reject rule: a parameter of its class and an option.

    Parameters
    ----------
    name : str
        The constructor parameter; ``abstain fit`` offers it as ``--name-with-dashes``.
    help : str
        The help text of the option.
    metavar : str or None, default None
        The placeholder of its value in ``abstain fit --help``.
    type : callable, default float
        Reads the option's text (``str`` for a name such as ``bound``).
    requires : tuple of str, default ()
        Companions that must be given with this one (``bound`` needs ``delta``).

    Examples
    --------
    >>> from abstain.models import RuleTarget
    >>> RuleTarget("target_coverage", "least risk at this coverage").type("0.9")
    0.9
    """

    name: str
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] = float
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleSpec:
    """What ``abstain fit`` needs to know of a reject rule class, as data.

    Parameters
    ----------
    model : type
        The rule's class; it takes the targets, the companions and ``random_state`` as
        keywords and is serialisable (``to_json``, :func:`abstain.load_json`).
    targets : tuple of RuleTarget
        The targets that name the rule, given together (``tpr`` and ``fpr``).
    companions : tuple of RuleTarget, default ()
        Optional parameters that come with the targets (``delta``, ``ood_prior``); one
        left out keeps the class's default.
    ood : bool, default False
        Whether the rule needs the OOD column: it is fitted on ``(scores, is_ood, losses)``
        of every row (or on the table of its column or pair); otherwise on
        ``(uncertainty, losses)`` of the in-distribution rows (or on their table).
    n_scores : tuple of int, default (1,)
        How many score columns it takes: ``(1,)``, or ``(1, 2)`` for a double-score pair.
    summary : callable
        ``summary(rule, columns) -> list of str``: the parts of the one-line summary of a
        fitted rule on its score columns (what ``abstain fit`` prints after the class name).
    on_table : callable or None, default None
        ``on_table(params) -> params``: the parameters fitted on a score table (a source
        read in chunks) rather than on rows; a ``ValueError`` refuses those a table cannot
        serve.
    infeasible : callable or None, default None
        ``infeasible(rule, fit_args, columns, attainable) -> str``: why the fitted ``rule``
        (``feasible_`` False) misses its targets and what the data it was fitted on
        (``fit_args``, of the score ``columns``) attain, where ``attainable`` is what the
        fit's own search found (:attr:`~abstain.InfeasibleTargetWarning.attainable`, or
        None); None for a rule that is always feasible.

    Examples
    --------
    >>> from abstain.models import REJECT_RULES
    >>> spec = REJECT_RULES["BoundedTPRFPR"]
    >>> [t.name for t in spec.targets], spec.ood, spec.n_scores
    (['tpr', 'fpr'], True, (1, 2))
    """

    model: type
    targets: tuple[RuleTarget, ...]
    summary: Callable[[Any, Sequence[str]], list[str]]
    companions: tuple[RuleTarget, ...] = ()
    ood: bool = False
    n_scores: tuple[int, ...] = (1,)
    on_table: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    infeasible: Callable[[Any, tuple[Any, ...], Sequence[str], float | None], str] | None = None

    @property
    def name(self) -> str:
        """The rule's name in messages: its targets joined by ``/`` (``"tpr/fpr"``)."""
        return "/".join(t.name for t in self.targets)


#: The options of ``abstain fit`` besides the rules' targets (as parameter names): no target
#: or companion may take one (``tests/app/test_rules.py`` checks them against the parser).
FIT_OPTIONS = frozenset({
    "file", "loss", "label", "prediction", "is_ood", "ood_score", "pair_with", "score",
    "scores", "dropna", "progress", "quiet", "output", "chunk_rows", "engine", "scheduler",
    "max_pairs", "help", "random_state"})

#: Every reject rule that ``abstain fit`` offers, by class name, in the order of its options.
REJECT_RULES: dict[str, RuleSpec] = {}


def register_rule(spec: RuleSpec) -> RuleSpec:
    """Add ``spec`` to :data:`REJECT_RULES` under its class's name and return it.

    A target or companion shared with a registered rule must be the same
    :class:`RuleTarget` (one option of ``abstain fit``, one help text). A spec that
    ``abstain fit`` could not offer is refused in one line: not a :class:`RuleSpec`, no
    target, a target, companion or ``random_state`` that is no keyword of the class, or a
    target named as another option of ``abstain fit`` (:data:`FIT_OPTIONS`: ``score``,
    ``loss``, ``output``...).

    Examples
    --------
    >>> from abstain.models import REJECT_RULES, register_rule
    >>> register_rule(REJECT_RULES["CostBased"]) is REJECT_RULES["CostBased"]
    True
    """
    if not isinstance(spec, RuleSpec):
        raise TypeError(f"register_rule takes a RuleSpec; got {type(spec).__name__}.")
    if not spec.targets:
        raise ValueError(f"the spec of {spec.model.__name__} must name at least one target.")
    params = set(inspect.signature(spec.model).parameters)
    mine = {t.name: t for t in (*spec.targets, *spec.companions)}
    for name in [*mine, "random_state"]:
        if name not in params:
            raise ValueError(f"{name!r} is no parameter of {spec.model.__name__}; a target, a "
                             "companion and random_state must be keywords of its class.")
        if name in FIT_OPTIONS and name in mine:
            raise ValueError(f"the target {name!r} of {spec.model.__name__} would be the option "
                             f"--{name.replace('_', '-')}, which abstain fit already has; "
                             "rename it.")
    for other in REJECT_RULES.values():
        if other.model is spec.model:
            continue
        for t in (*other.targets, *other.companions):
            if t.name in mine and mine[t.name] != t:
                raise ValueError(f"spec declares the option {t.name!r} otherwise than "
                                 f"{other.model.__name__}; share one RuleTarget.")
    REJECT_RULES[spec.model.__name__] = spec
    return spec


# -- the numbers that an infeasibility message offers ---------------------------------


def _g(x: float) -> str:
    """A number as given: the shortest text that reads back as the same float."""
    return repr(float(x))


def _refit(rule: Any, fit_args: tuple[Any, ...]) -> Callable[..., bool]:
    """Whether ``rule`` refitted on ``fit_args`` with other targets is feasible."""
    def meets(**targets: float) -> bool:
        try:
            trial = type(rule)(**{**rule.get_params(), **targets})
            with quiet(InfeasibleTargetWarning):
                return bool(trial.fit(*fit_args).feasible_)
        except ValueError:  # beyond the range of the parameter
            return False
    return meets


def _attained(value: float, meets: Callable[[float], bool], *, down: bool) -> str:
    """``value``, a highest (``down``) or least attainable one, as the message prints it.

    Rounded towards the feasible side to four significant digits, or to more where the fit
    does not ``meet`` the number printed (a fit whose feasibility is not monotone in the
    target may fail just above its least one); then one unit of the last digit towards the
    infeasible side where the fit still meets that number (``value``, computed in floating
    point, may lie a hair inside the edge). So the fit meets the number printed and not
    the next one beyond it.
    """
    if not math.isfinite(value) or value == 0.0:
        return _round(value, down=down)
    for digits in range(4, 18):
        text = _round(value, down=down, digits=digits)
        if meets(float(text)):
            break
    else:
        return repr(value)
    exact = Decimal(text)
    unit = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    beyond = float(exact + unit if down else exact - unit)
    return _round(beyond, down=down, digits=digits) if beyond > 0 and meets(beyond) else text


def _round(x: float, *, down: bool, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, rounded towards the feasible side.

    A least attainable bound is rounded up and a highest attainable rate down, so the
    printed value, read back as a float, is itself a feasible target.
    """
    if not math.isfinite(x) or x == 0.0:
        return f"{x:g}"
    exp = Decimal(x).adjusted() - (digits - 1)  # in decimals: no power of ten overflows

    def val(q: int) -> float:
        return float(Decimal(q).scaleb(exp))

    q = int(Decimal(x).scaleb(-exp).to_integral_value(ROUND_FLOOR if down else ROUND_CEILING))
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


# -- the summary lines ---------------------------------------------------------------


def _selective_summary(rule: Any, columns: Sequence[str]) -> list[str]:
    return [f"threshold {rule.threshold_:.6g}", f"accept probability at it "
            f"{rule.accept_prob_:.4g}", f"coverage {rule.coverage_:.4f}",
            f"selective risk {rule.risk_:.4f}"]


def _certified_summary(rule: BoundedImprovement, columns: Sequence[str]) -> list[str]:
    parts = _selective_summary(rule, columns)
    if rule.delta is not None:
        parts.append(f"certified risk bound {rule.risk_bound_:.4f} with probability "
                     f">= {1 - rule.delta:g} (procedure {rule.bound_})")
    return parts


def _ood_summary(rule: Any, columns: Sequence[str], rates: list[str]) -> list[str]:
    parts = [f"threshold {rule.threshold_:.6g}", f"accept probability at it "
             f"{rule.accept_prob_:.4g}"]
    if rule.n_scores_ == 2:
        parts.insert(0, f"score {rule.weights_[0]:.4g} * {columns[0]} + "
                        f"{rule.weights_[1]:.4g} * {columns[1]}")
    return [*parts, *rates, f"selective risk {rule.risk_:.4f}"]


def _tpr_fpr_summary(rule: BoundedTPRFPR, columns: Sequence[str]) -> list[str]:
    return _ood_summary(rule, columns, [f"TPR {rule.tpr_:.4f}", f"FPR {rule.fpr_:.4f}"])


def _precision_recall_summary(rule: BoundedPrecisionRecall, columns: Sequence[str]) -> list[str]:
    return _ood_summary(rule, columns, [f"precision {rule.precision_:.4f}",
                                        f"recall (TPR) {rule.tpr_:.4f}", f"FPR {rule.fpr_:.4f}"])


def _cost_ood_summary(rule: CostBasedOOD, columns: Sequence[str]) -> list[str]:
    return [*_ood_summary(rule, columns, [f"TPR {rule.tpr_:.4f}", f"FPR {rule.fpr_:.4f}"]),
            f"empirical cost {rule.cost_:.4f}"]


# -- what an infeasible rule attains ---------------------------------------------------


def _risk_infeasible(rule: BoundedImprovement, fit_args: tuple[Any, ...],
                     columns: Sequence[str], attainable: float | None) -> str:
    """The least target that the fit meets: from its own search (the lowest selective
    risk, or SGR's least bound on the chain of prefixes it walked), or for Learn-then-Test,
    whose sequence starts where the learning rows point for the one target it tried, from
    :func:`least_risk_bound`."""
    refit = _refit(rule, fit_args)

    def meets(target: float) -> bool:
        return refit(target_risk=target)

    table = fit_args[0]
    n_rows = table.n if isinstance(table, (ScoreTable, BinnedTable)) else len(table)
    target = float(rule.target_risk)
    if rule.delta is None:
        lowest = rule.min_risk_ if attainable is None else attainable
        return (f"target risk {target!r} is infeasible: no threshold rule's selective risk "
                f"is at or below it; the lowest selective risk attainable on these {n_rows} "
                f"rows is {_attained(lowest, meets, down=False)}.")
    procedure, level = rule.bound_, float(rule.delta)

    def least_target(above: float = 0.0) -> float:
        uncertainty, losses = (*fit_args, None)[:2]
        return least_risk_bound(uncertainty, losses, delta=rule.delta, loss_bound=rule.loss_bound,
                                bound=rule.bound, above=above)

    why = ("every prefix that its binary search tests has an upper confidence bound above it"
           if procedure == "sgr" else "the threshold where the learning rows start its "
           "sequence for this target fails its test")
    first = least_target() if attainable is None else attainable
    text = (f"target risk {target!r} with delta {level!r} is infeasible for "
            f"bound={procedure!r}: {why}; the least target that it meets with delta "
            f"{level!r} on these {n_rows} rows is {_attained(first, meets, down=False)}")
    if first < target:  # Learn-then-Test: feasibility is not monotone in the target
        text += (f"; a larger target can start the sequence lower, where its test fails: "
                 f"the least target at or above {target!r} that it meets is "
                 f"{_attained(least_target(target), meets, down=False)}")
    return (f"{text}; the lowest empirical selective risk is "
            f"{_round(rule.min_risk_, down=False)}, and a bound nearer to it needs more rows "
            "or a larger delta.")


def _curve_args(fit_args: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The arguments of the ROC/PR curves and of the searches: a table, or the arrays."""
    if len(fit_args) == 1:
        return fit_args, fit_args
    s, is_ood = fit_args[0], fit_args[1]
    return (is_ood, s), (s, is_ood)


def _on_pair_table(rule: Any, fit_args: tuple[Any, ...], columns: Sequence[str]) -> str | None:
    if isinstance(fit_args[0], PairTable):
        return (f"the targets of {type(rule).__name__} are infeasible on the pair "
                f"{', '.join(columns)}: no rule in any direction meets them. What "
                "the pair attains is computed from every row: fit on one file without "
                "--chunk-rows or --engine to see it.")
    return None


def _tpr_fpr_infeasible(rule: BoundedTPRFPR, fit_args: tuple[Any, ...],
                        columns: Sequence[str], attainable: float | None) -> str:
    """The highest TPR at the FPR bound, on the same data
    (:func:`abstain.metrics.ood_roc_curve`), and the least FPR at the TPR target, which
    the fit's own sweep records (``attainable``; the exact search of two scores visits no
    grid, so there :func:`least_fpr_at_tpr` gives it)."""
    pair = _on_pair_table(rule, fit_args, columns)
    if pair is not None:
        return pair
    curve_args, search_args = _curve_args(fit_args)
    refit = _refit(rule, fit_args)
    tpr, fpr = float(rule.tpr), float(rule.fpr)
    best = float(ood_roc_curve(*curve_args, fpr=[fpr], search="grid").tpr[0])
    scores, is_ood = (*search_args, None)[:2]
    least = least_fpr_at_tpr(scores, is_ood, tpr=tpr) if attainable is None else attainable
    at_fpr = (f"no rule with FPR <= {_g(fpr)} accepts any in-distribution row"
              if best <= 0.0 else f"at FPR <= {_g(fpr)} the highest attainable TPR "
              f"is {_attained(best, lambda x: refit(tpr=x, fpr=fpr), down=True)}")
    least_text = _attained(least, lambda x: refit(tpr=tpr, fpr=x), down=False)
    return (f"TPR >= {_g(tpr)} with FPR <= {_g(fpr)} is infeasible: {at_fpr}; at TPR >= "
            f"{_g(tpr)} the lowest attainable FPR is {least_text}.")


def _precision_recall_infeasible(rule: BoundedPrecisionRecall, fit_args: tuple[Any, ...],
                                 columns: Sequence[str], attainable: float | None) -> str:
    """The highest precision at the recall target, on the same data, and the highest recall
    at the precision target, which the fit's own sweep records, as in
    :func:`_tpr_fpr_infeasible`."""
    pair = _on_pair_table(rule, fit_args, columns)
    if pair is not None:
        return pair
    curve_args, search_args = _curve_args(fit_args)
    refit = _refit(rule, fit_args)
    precision, recall, prior = float(rule.precision), float(rule.recall), rule.ood_prior
    best = float(ood_pr_curve(*curve_args, recall=[recall], ood_prior=prior).precision[0])
    scores, is_ood = (*search_args, None)[:2]
    most = (most_recall_at_precision(scores, is_ood, precision=precision, ood_prior=prior)
            if attainable is None else attainable)
    at_precision = (f"no rule reaches precision >= {_g(precision)} at any recall"
                    if most <= 0.0 else f"at precision >= {_g(precision)} the highest "
                    "attainable recall is " + _attained(
                        most, lambda x: refit(precision=precision, recall=x), down=True))
    best_text = _attained(best, lambda x: refit(precision=x, recall=recall), down=True)
    return (f"precision >= {_g(precision)} with recall >= {_g(recall)} is infeasible: at "
            f"recall >= {_g(recall)} the highest attainable precision is {best_text}; "
            f"{at_precision}.")


def _certify_table(params: dict[str, Any]) -> dict[str, Any]:
    """On a table, a risk bound is certified with SGR: Learn-then-Test needs the rows."""
    if params.get("delta") is None:
        return params
    bound = params.get("bound")
    if bound not in (None, "auto", "sgr"):
        raise ValueError(
            f"bound={bound!r} runs Learn-then-Test, which splits the rows by position "
            "(every tenth row picks the thresholds, the others test them); a source read "
            "in chunks keeps only the score table of its rows. Give bound='sgr' (the same "
            "rule as on the whole file), or fit one file without --chunk-rows and --engine.")
    return {**params, "bound": "sgr"}  # "auto" on a table is SGR: the rule file says so


_OOD_PRIOR = RuleTarget("ood_prior", "CostBasedOOD and BoundedPrecisionRecall: the OOD "
                        "fraction expected in use (default: the file's)", metavar="PI")

register_rule(RuleSpec(
    BoundedAbstention,
    (RuleTarget("target_coverage", "BoundedAbstention: least risk at this coverage"),),
    _selective_summary))
register_rule(RuleSpec(
    BoundedImprovement,
    (RuleTarget("target_risk", "BoundedImprovement: most coverage at selective risk <= this"),),
    _certified_summary,
    companions=(
        RuleTarget("delta", "with --target-risk: the risk bound holds with probability "
                   ">= 1 - delta"),
        RuleTarget("bound", "with --delta: the procedure that certifies the risk (default "
                   "auto: binomial for 0/1 losses, wsr otherwise). A source read in chunks "
                   "keeps score tables, not rows: it is certified with sgr (auto means sgr "
                   "there, and the rule file says bound sgr), which gives the rule of the "
                   "whole file with --bound sgr; binomial, hb and wsr (Learn-then-Test, which "
                   "splits the rows by position) are refused there",
                   metavar="{auto,sgr,binomial,hb,wsr}", type=str, requires=("delta",)),
        RuleTarget("loss_bound", "with --delta: every loss lies in [0, B] (default 1; 0/1 "
                   "losses need none)", metavar="B", requires=("delta",)),
    ),
    on_table=_certify_table, infeasible=_risk_infeasible))
register_rule(RuleSpec(
    CostBased, (RuleTarget("reject_cost", "CostBased: cost of one abstention"),),
    _selective_summary))
register_rule(RuleSpec(
    BoundedTPRFPR,
    (RuleTarget("tpr", "BoundedTPRFPR: least TPR (needs --fpr)"),
     RuleTarget("fpr", "BoundedTPRFPR: most FPR (needs --tpr)")),
    _tpr_fpr_summary, ood=True, n_scores=(1, 2), infeasible=_tpr_fpr_infeasible))
register_rule(RuleSpec(
    BoundedPrecisionRecall,
    (RuleTarget("precision", "BoundedPrecisionRecall (needs --recall)"),
     RuleTarget("recall", "BoundedPrecisionRecall (needs --precision)")),
    _precision_recall_summary, companions=(_OOD_PRIOR,), ood=True, n_scores=(1, 2),
    infeasible=_precision_recall_infeasible))
register_rule(RuleSpec(
    CostBasedOOD,
    (RuleTarget("reject_id_cost", "CostBasedOOD: cost of rejecting an ID input (needs "
                "--predict-ood-cost)", metavar="COST"),
     RuleTarget("predict_ood_cost", "CostBasedOOD: cost of predicting on an OOD input (needs "
                "--reject-id-cost)", metavar="COST")),
    _cost_ood_summary,
    companions=(RuleTarget("reject_ood_cost", "CostBasedOOD: cost of rejecting an OOD input "
                           "(default 0; below --predict-ood-cost)", metavar="COST"),
                _OOD_PRIOR),
    ood=True, n_scores=(1, 2)))

