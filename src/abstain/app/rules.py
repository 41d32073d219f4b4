"""Fit a reject rule on a table, write it with its column names, load it and apply it."""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import metrics as m
from ..exceptions import InfeasibleTargetWarning
from ..models import (
    BoundedAbstention,
    BoundedImprovement,
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBased,
    CostBasedOOD,
    least_fpr_at_tpr,
    least_risk_bound,
    most_recall_at_precision,
)
from .chunks import Summary
from .tables import TableData


class InfeasibleTargetError(ValueError):
    """A reject model's target cannot be met on the data; the message says what is attainable."""


Rule = (CostBased | BoundedImprovement | BoundedAbstention | BoundedTPRFPR
        | BoundedPrecisionRecall | CostBasedOOD)


def fit_rule(
    data: TableData | Summary,
    *,
    target_coverage: float | None = None,
    target_risk: float | None = None,
    delta: float | None = None,
    bound: str | None = None,
    loss_bound: float | None = None,
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
    options: bool = False,
) -> Rule:
    """Fit the reject model that the given targets name, on the scores of ``data``.

    Exactly one model: ``target_coverage`` (:class:`~abstain.BoundedAbstention`),
    ``target_risk`` with optional ``delta`` (:class:`~abstain.BoundedImprovement`; with
    ``delta``, ``bound`` names the procedure that certifies the risk, default ``"auto"``, and
    ``loss_bound`` bounds losses that are not 0/1, default 1),
    ``reject_cost`` (:class:`~abstain.CostBased`), ``tpr`` and ``fpr``
    (:class:`~abstain.models.BoundedTPRFPR`), ``precision`` and ``recall``
    (:class:`~abstain.models.BoundedPrecisionRecall`, with an optional ``ood_prior``) or
    ``reject_id_cost`` and ``predict_ood_cost`` with an optional ``reject_ood_cost``
    (default 0) and ``ood_prior`` (:class:`~abstain.models.CostBasedOOD` fitted on the
    data: the least empirical risk of the extended loss). The first three use one
    score column and the ID rows; the OOD models need the OOD column and take one
    score column or two (a double-score method): with ``data.ood_score`` set, the
    pair of the one other score column and the OOD score, in that order. ``data`` may
    be the :class:`~abstain.app.chunks.Summary` of a source read in chunks: the model is
    then fitted on the score table of its column or on the :class:`~abstain.PairTable`
    of its pair, with the same result; with ``delta`` the procedure is then ``"sgr"``
    (``"auto"`` resolves to it, and the rule's ``bound`` says so), since the Learn-then-Test
    procedures split the rows by position, which a table does not keep (a ``ValueError``).
    ``options=True`` names the arguments in every message as the options of ``abstain fit``
    do (``--bound sgr`` for ``bound='sgr'``, ``--target-risk`` for ``target_risk``).

    Raises
    ------
    InfeasibleTargetError
        When the target cannot be met; the message names the failing constraint and
        what the data attains. Every number it offers is attainable as it says: a least
        target (rounded up) is met, a highest rate (rounded down) is attained.

    Examples
    --------
    >>> from abstain.app.rules import fit_rule
    >>> from abstain.app.tables import prepare
    >>> data = prepare({"loss": [0, 0, 1, 1], "u": [0.1, 0.2, 0.3, 0.4]})
    >>> fit_rule(data, target_coverage=0.5).threshold_
    0.2
    >>> fit_rule(data, target_risk=0.0001, delta=0.1)
    Traceback (most recent call last):
    ...
    abstain.app.rules.InfeasibleTargetError: target risk 0.0001 with delta 0.1 is infeasible ...
    """
    given: dict[str, Any] = dict(
        target_coverage=target_coverage, target_risk=target_risk, delta=delta, bound=bound,
        loss_bound=loss_bound, reject_cost=reject_cost, tpr=tpr, fpr=fpr, precision=precision,
        recall=recall, reject_id_cost=reject_id_cost, predict_ood_cost=predict_ood_cost,
        reject_ood_cost=reject_ood_cost, ood_prior=ood_prior, random_state=random_state)
    if not options:
        return _fit_rule(data, str, **given)
    try:
        return _fit_rule(data, _flag, **given)
    except ValueError as exc:
        if type(exc) not in (ValueError, InfeasibleTargetError):
            raise
        raise type(exc)(_as_options(str(exc))) from None


def _fit_rule(
    data: TableData | Summary,
    o: Callable[[str], str],
    *,
    target_coverage: float | None,
    target_risk: float | None,
    delta: float | None,
    bound: str | None,
    loss_bound: float | None,
    reject_cost: float | None,
    tpr: float | None,
    fpr: float | None,
    precision: float | None,
    recall: float | None,
    reject_id_cost: float | None,
    predict_ood_cost: float | None,
    reject_ood_cost: float | None,
    ood_prior: float | None,
    random_state: int | None,
) -> Rule:
    chosen = [name for name, given in (
        ("target_coverage", target_coverage is not None),
        ("target_risk", target_risk is not None),
        ("reject_cost", reject_cost is not None),
        ("tpr/fpr", tpr is not None or fpr is not None),
        ("precision/recall", precision is not None or recall is not None),
        ("cost-based OOD", reject_id_cost is not None or predict_ood_cost is not None),
    ) if given]
    if len(chosen) != 1:
        targets = {"target_coverage": target_coverage, "target_risk": target_risk,
                   "reject_cost": reject_cost, "tpr": tpr, "fpr": fpr, "precision": precision,
                   "recall": recall, "reject_id_cost": reject_id_cost,
                   "predict_ood_cost": predict_ood_cost}
        got = ", ".join(o(k) for k, v in targets.items() if v is not None) or "none"
        raise ValueError("exactly one target must be given (target_coverage, target_risk, "
                         f"reject_cost, tpr and fpr, {o('precision')} and {o('recall')}, or "
                         f"reject_id_cost and predict_ood_cost); got {got}.")
    kind = chosen[0]
    if delta is not None and target_risk is None:
        raise ValueError("delta must come with target_risk; got delta alone.")
    for name, value in (("bound", bound), ("loss_bound", loss_bound)):
        if value is not None and delta is None:
            raise ValueError(f"{o(name)} must come with target_risk and delta; got {name}="
                             f"{value!r} without delta.")
    if reject_ood_cost is not None and kind != "cost-based OOD":
        raise ValueError("reject_ood_cost must come with reject_id_cost and predict_ood_cost.")
    if ood_prior is not None and kind not in ("cost-based OOD", "precision/recall"):
        raise ValueError(f"ood_prior must come with {o('precision')} and {o('recall')} or "
                         f"with the cost-based OOD model; got it with {kind}.")
    chunked = isinstance(data, Summary)
    names = list(data.tables if isinstance(data, Summary) else data.scores)
    if kind in ("tpr/fpr", "precision/recall", "cost-based OOD"):
        if kind == "tpr/fpr" and (tpr is None or fpr is None):
            raise ValueError("tpr and fpr must be given together.")
        if kind == "precision/recall" and (precision is None or recall is None):
            raise ValueError(f"{o('precision')} and {o('recall')} must be given together.")
        if kind == "cost-based OOD" and (reject_id_cost is None or predict_ood_cost is None):
            raise ValueError("reject_id_cost and predict_ood_cost must be given together.")
        if (data.marked if isinstance(data, Summary) else data.is_ood) is None:
            raise ValueError(f"the {kind} model needs an OOD column; the table has none.")
        names = _ood_columns(data, kind)
        if len(names) not in (1, 2) or (chunked and len(names) == 2 and not data.columns):  # type: ignore[union-attr]
            raise ValueError(f"the {kind} model takes one or two score columns (when read in "
                             "chunks, one, or a pair with an OOD score: --ood-score); got "
                             f"{len(names)}.")
        # the arguments of the fit and of the curves: arrays, or the table of the one column
        # (the pair's table, read in chunks, serves the fit only)
        pair_table = chunked and len(names) == 2
        if isinstance(data, Summary):
            assert data.marked is not None
            table = (data.pairs[f"{names[0]}+{names[1]}"] if pair_table  # type: ignore[index]
                     else data.marked[names[0]])
            fit_args: tuple[Any, ...] = (table,)
            curve_args: tuple[Any, ...] = (table,)
            search_args: tuple[Any, ...] = (table,)
        else:
            s = data.stacked(names)
            fit_args = (s, data.is_ood, data.losses)
            curve_args, search_args = (data.is_ood, s), (s, data.is_ood)
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
            sel.fit(*fit_args)
        if not sel.feasible_ and pair_table:
            raise InfeasibleTargetError(
                f"the targets of {type(sel).__name__} are infeasible on the pair "
                f"{', '.join(names)}: no rule in any direction meets them. What the pair "
                "attains is computed from every row: fit on one file without --chunk-rows "
                "or --engine to see it.")
        if not sel.feasible_:
            def refit(**targets: float) -> bool:
                try:
                    sel.set_params(**targets)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", InfeasibleTargetWarning)
                        return bool(sel.fit(*fit_args).feasible_)
                except ValueError:  # beyond the range of the parameter
                    return False

            if isinstance(sel, BoundedTPRFPR):
                assert tpr is not None and fpr is not None
                best = float(m.ood_roc_curve(*curve_args, fpr=[fpr]).tpr[0])
                least = least_fpr_at_tpr(*search_args, tpr=tpr)  # type: ignore[misc]
                at_fpr = (f"no rule with FPR <= {_g(fpr)} accepts any in-distribution row"
                          if best <= 0.0 else f"at FPR <= {_g(fpr)} the highest attainable TPR "
                          f"is {_attained(best, lambda x: refit(tpr=x, fpr=fpr), down=True)}")
                least_text = _attained(least, lambda x: refit(tpr=tpr, fpr=x), down=False)
                raise InfeasibleTargetError(
                    f"TPR >= {_g(tpr)} with FPR <= {_g(fpr)} is infeasible: {at_fpr}; at TPR >= "
                    f"{_g(tpr)} the lowest attainable FPR is {least_text}.")
            assert precision is not None and recall is not None
            best = float(m.ood_pr_curve(*curve_args, recall=[recall],
                                        ood_prior=ood_prior).precision[0])
            most = most_recall_at_precision(*search_args, precision=precision,  # type: ignore[misc]
                                            ood_prior=ood_prior)
            at_precision = (f"no rule reaches precision >= {_g(precision)} at any recall"
                            if most <= 0.0 else f"at precision >= {_g(precision)} the highest "
                            "attainable recall is " + _attained(
                                most, lambda x: refit(precision=precision, recall=x), down=True))
            best_text = _attained(best, lambda x: refit(precision=x, recall=recall), down=True)
            raise InfeasibleTargetError(
                f"precision >= {_g(precision)} with recall >= {_g(recall)} is infeasible: at "
                f"recall >= {_g(recall)} the highest attainable precision is {best_text}; "
                f"{at_precision}.")
        return sel
    ood_score = (next(iter(data.columns.values()))[1] if data.columns else None) \
        if isinstance(data, Summary) else data.ood_score
    if ood_score is not None:
        raise ValueError(f"{kind} takes one score column; an OOD score ({ood_score!r}) "
                         f"pairs columns for the OOD models only (tpr and fpr, {o('precision')} "
                         f"and {o('recall')}, reject_id_cost and predict_ood_cost).")
    if len(names) != 1:
        raise ValueError(f"the {kind} model takes one score column; got {len(names)}: "
                         f"{', '.join(map(repr, names))}.")
    if isinstance(data, Summary):
        if delta is not None and bound not in (None, "auto", "sgr"):
            raise ValueError(
                f"bound={bound!r} runs Learn-then-Test, which splits the rows by position "
                "(every tenth row picks the thresholds, the others test them); a source read "
                "in chunks keeps only the score table of its rows. Give bound='sgr' (the same "
                "rule as on the whole file), or fit one file without --chunk-rows and --engine.")
        if delta is not None:  # "auto" on a table is SGR: the rule file says so
            bound = "sgr"
        args: tuple[Any, ...] = (data.tables[names[0]],)
        n_rows = data.tables[names[0]].n
    else:
        rows = ~data.is_ood if data.is_ood is not None else np.ones(data.losses.size, bool)
        args = (data.scores[names[0]][rows], data.losses[rows])
        n_rows = int(rows.sum())
    rule: CostBased | BoundedImprovement | BoundedAbstention
    if target_coverage is not None:
        rule = BoundedAbstention(target_coverage=target_coverage, random_state=random_state)
    elif reject_cost is not None:
        rule = CostBased(reject_cost=reject_cost, random_state=random_state)
    else:
        assert target_risk is not None
        rule = BoundedImprovement(target_risk=target_risk, delta=delta,
                                  bound="auto" if bound is None else bound,
                                  loss_bound=1.0 if loss_bound is None else loss_bound,
                                  random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        rule.fit(*args)
    if not rule.feasible_:
        assert isinstance(rule, BoundedImprovement) and target_risk is not None
        if delta is None:
            raise InfeasibleTargetError(
                f"target risk {float(target_risk)!r} is infeasible: no threshold rule's "
                "selective risk "
                f"is at or below it; the lowest selective risk attainable on these {n_rows} "
                f"rows is {_attained(rule.min_risk_, _refit(rule, args), down=False)}.")
        procedure = rule.bound_
        target, level = float(target_risk), float(delta)

        meets = _refit(rule, args)

        def least_target(above: float = 0.0) -> float:
            return least_risk_bound(*args, delta=delta,  # type: ignore[misc]
                                    loss_bound=rule.loss_bound, bound=rule.bound, above=above)

        why = ("every prefix that its binary search tests has an upper confidence bound above it"
               if procedure == "sgr" else "the threshold where the learning rows start its "
               "sequence for this target fails its test")
        first = least_target()
        text = (f"target risk {target!r} with delta {level!r} is infeasible for "
                f"bound={procedure!r}: {why}; the least target that it meets with delta "
                f"{level!r} on these {n_rows} rows is {_attained(first, meets, down=False)}")
        if first < target:  # Learn-then-Test: feasibility is not monotone in the target
            text += (f"; a larger target can start the sequence lower, where its test fails: "
                     f"the least target at or above {target!r} that it meets is "
                     f"{_attained(least_target(target), meets, down=False)}")
        raise InfeasibleTargetError(
            f"{text}; the lowest empirical selective risk is "
            f"{_round(rule.min_risk_, down=False)}, and a bound nearer to it needs more rows "
            "or a larger delta.")
    return rule


#: The keywords of :func:`fit_rule`, each an option of ``abstain fit``.
_KEYWORDS = ("target_coverage", "target_risk", "delta", "bound", "loss_bound", "reject_cost",
            "tpr", "fpr", "precision", "recall", "reject_id_cost", "predict_ood_cost",
            "reject_ood_cost", "ood_prior", "random_state")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _as_options(text: str) -> str:
    """``text`` with the keywords of :func:`fit_rule` written as the options of ``abstain
    fit``: ``bound='sgr'`` as ``--bound sgr``, ``loss_bound=1.0`` as ``--loss-bound 1.0``, and
    ``target_risk``, ``delta``, ``tpr``, ``fpr`` (names that are never prose) as
    ``--target-risk``, ``--delta``, ``--tpr``, ``--fpr``, and a keyword that starts a
    message (``bound must be one of ...``) as its option."""
    names = "|".join(sorted(_KEYWORDS, key=len, reverse=True))
    text = re.sub(rf"(?<![-\w])({names})=('?)([^'\s,;)]*)\2",
                  lambda m: f"{_flag(m[1])} {m[3]}", text)
    text = re.sub(rf"^({names}) must ", lambda m: f"{_flag(m[1])} must ", text)
    words = "|".join(n for n in _KEYWORDS if "_" in n or n in ("delta", "tpr", "fpr"))
    return re.sub(rf"(?<![-\w])({words})(?![-\w])", lambda m: _flag(m[1]), text)


def _g(x: float) -> str:
    """A number as given: the shortest text that reads back as the same float."""
    return repr(float(x))


def _refit(rule: BoundedImprovement, args: tuple[Any, ...]) -> Callable[[float], bool]:
    """Whether ``rule`` refitted on ``args`` at another target risk is feasible."""
    def meets(target: float) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            return bool(BoundedImprovement(target, delta=rule.delta, bound=rule.bound,
                                           loss_bound=rule.loss_bound).fit(*args).feasible_)
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


def _ood_columns(data: TableData | Summary, kind: str) -> list[str]:
    """The score columns of an OOD model: the one pair ``(s_r, s_g)`` with an OOD score."""
    if isinstance(data, Summary):
        pairs, names = list(data.columns.values()), list(data.tables)
    else:
        pairs, names = list(data.pairs.values()), list(data.scores)
    if not pairs:
        return names
    if len(pairs) != 1:
        raise ValueError(f"the {kind} model takes one pair (s_r, OOD score); got "
                         f"{len(pairs)} other score columns besides the OOD score "
                         f"{pairs[0][1]!r}: {', '.join(repr(r) for r, _ in pairs)}.")
    return list(pairs[0])


def rule_columns(rule: Rule, data: TableData | Summary) -> list[str]:
    """The score columns, in order, that :func:`fit_rule` fitted ``rule`` on."""
    if isinstance(rule, (BoundedTPRFPR, BoundedPrecisionRecall, CostBasedOOD)):
        return _ood_columns(data, type(rule).__name__)
    return list(data.tables if isinstance(data, Summary) else data.scores)


def rule_to_json(rule: Rule, scores: Sequence[str]) -> str:
    """The rule's own ``to_json`` with the score column names added under ``"columns"``.

    The result still loads with :func:`abstain.load_json`; :func:`load_rule` returns
    both parts.
    """
    doc = json.loads(rule.to_json())
    doc["columns"] = {"scores": list(scores)}
    return json.dumps(doc, sort_keys=True, indent=1)


_RULES = (CostBased, BoundedImprovement, BoundedAbstention, BoundedTPRFPR,
          BoundedPrecisionRecall, CostBasedOOD)


def load_rule(text_or_path: str | os.PathLike[str]) -> tuple[Rule, list[str] | None]:
    """Load a rule file (its text or its path): ``(rule, score column names or None)``.

    The document is read and validated by :func:`abstain.load_json`; a document that holds
    anything but a reject rule on score columns (a detector, a learned score, ...) is a
    ``ValueError`` that names what it holds.
    """
    # imported when a rule is loaded: load_json imports every registering subpackage, which
    # the other commands do not need at start-up
    from .. import load_json

    rule = load_json(text_or_path)
    if isinstance(text_or_path, str) and text_or_path.lstrip().startswith("{"):
        text, where = text_or_path, "the rule file"
    else:  # a path: load_json has read and validated the file
        text, where = Path(text_or_path).read_text(encoding="utf-8"), str(text_or_path)
    if not isinstance(rule, _RULES):
        names = [c.__name__ for c in _RULES]
        raise ValueError(
            f"{where} holds a {type(rule).__name__}, not a reject rule on score columns; "
            f"abstain apply needs one of {', '.join(names[:-1])} or {names[-1]} (written by "
            "abstain fit).")
    cols = json.loads(text).get("columns", {}).get("scores")
    return rule, cols


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
