"""Fit a reject rule on a table, write it with its column names, load it and apply it."""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..exceptions import InfeasibleTargetWarning
from ..models import REJECT_RULES, RuleSpec, RuleTarget
from .chunks import Summary
from .data import Rows, Tables, as_data
from .tables import TableData


class InfeasibleTargetError(ValueError):
    """A reject model's target cannot be met on the data; the message says what is attainable."""


#: A fitted reject rule of :data:`abstain.models.REJECT_RULES`.
Rule = Any


def fit_rule(
    data: TableData | Summary,
    *,
    random_state: int | None = 0,
    options: bool = False,
    **targets: Any,
) -> Rule:
    """Fit the reject model that the given targets name, on the scores of ``data``.

    The models are those of :data:`abstain.models.REJECT_RULES`, and ``targets`` their
    parameters (a value of None counts as not given): exactly one model's targets, given
    together, with any of its companions. ``target_coverage``
    (:class:`~abstain.BoundedAbstention`), ``target_risk`` with optional ``delta``
    (:class:`~abstain.BoundedImprovement`; with ``delta``, ``bound`` names the procedure that
    certifies the risk, default ``"auto"``, and ``loss_bound`` bounds losses that are not
    0/1, default 1), ``reject_cost`` (:class:`~abstain.CostBased`), ``tpr`` and ``fpr``
    (:class:`~abstain.models.BoundedTPRFPR`), ``precision`` and ``recall``
    (:class:`~abstain.models.BoundedPrecisionRecall`, with an optional ``ood_prior``) or
    ``reject_id_cost`` and ``predict_ood_cost`` with an optional ``reject_ood_cost``
    (default 0) and ``ood_prior`` (:class:`~abstain.models.CostBasedOOD` fitted on the
    data: the least empirical risk of the extended loss). A model without an OOD column
    (:attr:`~abstain.models.RuleSpec.ood` False) uses one score column and the ID rows; the
    OOD models need the OOD column and take one score column or two (a double-score
    method): with ``data.ood_score`` set, the pair of the one other score column and the
    OOD score, in that order. ``data`` may be the :class:`~abstain.app.chunks.Summary` of a
    source read in chunks: the model is then fitted on the score table of its column or on
    the :class:`~abstain.PairTable` of its pair, with the same result, after the model's
    :attr:`~abstain.models.RuleSpec.on_table` (with ``delta`` the procedure is then
    ``"sgr"``: ``"auto"`` resolves to it, and the rule's ``bound`` says so, since the
    Learn-then-Test procedures split the rows by position, which a table does not keep, a
    ``ValueError``). ``options=True`` names the arguments in every message as the options
    of ``abstain fit`` do (``--bound sgr`` for ``bound='sgr'``, ``--target-risk`` for
    ``target_risk``).

    Raises
    ------
    InfeasibleTargetError
        When the target cannot be met; the message names the failing constraint and
        what the data attains (:attr:`~abstain.models.RuleSpec.infeasible`). Every number
        it offers is attainable as it says: a least target (rounded up) is met, a highest
        rate (rounded down) is attained.

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
    if not options:
        return _fit_rule(data, str, targets, random_state)
    try:
        return _fit_rule(data, _flag, targets, random_state)
    except ValueError as exc:
        if type(exc) not in (ValueError, InfeasibleTargetError):
            raise
        raise type(exc)(_as_options(str(exc))) from None


def _choose(targets: Mapping[str, Any], o: Callable[[str], str]) -> tuple[RuleSpec, dict[str, Any]]:
    """The one registered model that ``targets`` name, and its parameters given."""
    given = {k: v for k, v in targets.items() if v is not None}
    specs = list(REJECT_RULES.values())
    known = {t.name for s in specs for t in (*s.targets, *s.companions)}
    unknown = [k for k in targets if k not in known]
    if unknown:
        raise TypeError(f"fit_rule got unknown target(s) {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(sorted(known))}.")
    chosen = [s for s in specs if any(t.name in given for t in s.targets)]
    if len(chosen) != 1:
        names = [" and ".join(o(t.name) for t in s.targets) for s in specs]
        got = ", ".join(o(t.name) for s in specs for t in s.targets if t.name in given) or "none"
        either = names[0] if len(names) == 1 else f"{', '.join(names[:-1])}, or {names[-1]}"
        raise ValueError(f"exactly one target must be given ({either}); got {got}.")
    spec = chosen[0]
    missing = [t.name for t in spec.targets if t.name not in given]
    if missing:
        raise ValueError(f"{' and '.join(o(t.name) for t in spec.targets)} must be given "
                         "together.")
    own = {t.name: t for t in spec.companions}
    for name in given:
        if name in own or any(t.name == name for t in spec.targets):
            continue
        owners = [s for s in specs if any(t.name == name for t in s.companions)]
        with_ = " or with ".join(" and ".join(
            [*(o(t.name) for t in s.targets),
             *(o(r) for t in s.companions if t.name == name for r in t.requires)])
            for s in owners)
        label = "/".join(o(t.name) for t in spec.targets)
        raise ValueError(f"{o(name)} must come with {with_}; got it with {label}.")
    for name, companion in own.items():
        for needed in companion.requires:
            if name in given and needed not in given:
                head = " and ".join([*(o(t.name) for t in spec.targets), o(needed)])
                raise ValueError(f"{o(name)} must come with {head}; got {name}="
                                 f"{given[name]!r} without {needed}.")
    return spec, given


def _fit_rule(data: TableData | Summary, o: Callable[[str], str], targets: Mapping[str, Any],
              random_state: int | None) -> Rule:
    spec, params = _choose(targets, o)
    names, fit_args = _fit_data(data, spec, o)
    if as_data(data).chunked and spec.on_table is not None:
        params = spec.on_table(params)
    rule = spec.model(**params, random_state=random_state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InfeasibleTargetWarning)
        rule.fit(*fit_args)
    attainable = None
    for w in caught:  # what the fit's own search found attainable; other warnings go on
        if isinstance(w.message, InfeasibleTargetWarning):
            attainable = w.message.attainable
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not rule.feasible_:
        why = (spec.infeasible(rule, fit_args, names, attainable)
               if spec.infeasible is not None else
               f"the targets of {type(rule).__name__} are infeasible on these data.")
        raise InfeasibleTargetError(why)
    return rule


def _fit_data(data: TableData | Summary, spec: RuleSpec,
              o: Callable[[str], str]) -> tuple[list[str], tuple[Any, ...]]:
    """The score columns of the model ``spec`` and what its fit gets, from the one view of
    the rows of a file or the tables of a chunked source (:func:`abstain.app.data.as_data`):
    the arrays of the rows (its OOD-free rows for a model without an OOD column), or the
    table of the column or of the pair."""
    view = as_data(data)
    if spec.ood:
        if not view.has_ood_column:
            raise ValueError(f"the {spec.name} model needs an OOD column; the table has none.")
        names = _ood_columns(view, spec.name)
        if len(names) not in spec.n_scores or (view.chunked and len(names) == 2
                                               and not view.ood_pairs):
            counts = " or ".join(("one", "two")[n - 1] for n in spec.n_scores)
            raise ValueError(f"the {spec.name} model takes {counts} score columns (when read "
                             "in chunks, one, or a pair with an OOD score: --ood-score); got "
                             f"{len(names)}.")
        return names, view.fit_args(names, ood=True)
    if view.ood_score is not None:
        pairs = [" and ".join(o(t.name) for t in s.targets)
                 for s in REJECT_RULES.values() if 2 in s.n_scores]
        raise ValueError(f"{spec.name} takes one score column; an OOD score "
                         f"({view.ood_score!r}) pairs columns for the OOD models only "
                         f"({', '.join(pairs)}).")
    if len(view.names) != 1:
        raise ValueError(f"the {spec.name} model takes one score column; got "
                         f"{len(view.names)}: {', '.join(map(repr, view.names))}.")
    if view.n_id == 0:
        raise ValueError(f"the {spec.name} model is fitted on the in-distribution rows; every "
                         "row is marked OOD.")
    return view.names, view.fit_args(view.names, ood=False)


def rule_options() -> list[RuleTarget]:
    """The targets and companions of every registered rule, once each: the keywords of
    :func:`fit_rule` and the options of ``abstain fit``. In registry order, and a companion
    that several rules share after the options of one rule."""
    every = [t for s in REJECT_RULES.values() for t in (*s.targets, *s.companions)]
    once = list({t.name: t for t in every}.values())
    return sorted(once, key=lambda t: sum(u.name == t.name for u in every) > 1)


def _keywords() -> list[str]:
    """The keywords of :func:`fit_rule`, each an option of ``abstain fit``."""
    return [*(t.name for t in rule_options()), "random_state"]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _as_options(text: str) -> str:
    """``text`` with the keywords of :func:`fit_rule` written as the options of ``abstain
    fit``: ``bound='sgr'`` as ``--bound sgr``, ``loss_bound=1.0`` as ``--loss-bound 1.0``, and
    ``target_risk``, ``delta``, ``tpr``, ``fpr`` (names that are never prose) as
    ``--target-risk``, ``--delta``, ``--tpr``, ``--fpr``, and a keyword that starts a
    message (``bound must be one of ...``) as its option."""
    keywords = _keywords()
    names = "|".join(sorted(keywords, key=len, reverse=True))
    # quoted names (columns such as 'delta') are the user's: set aside, put back as written
    quoted: list[str] = []

    def aside(m: re.Match[str]) -> str:
        if m[0].startswith("="):  # a keyword's value (bound='sgr'): rewritten below
            return m[0]
        quoted.append(m[0])
        return f"\x00{len(quoted) - 1}\x00"

    text = re.sub(r"='[^']*'|'[^']*'", aside, text)  # left to right: each quote pair once
    text = re.sub(rf"(?<![-\w])({names})=('?)([^'\s,;)]*)\2",
                  lambda m: f"{_flag(m[1])} {m[3]}", text)
    text = re.sub(rf"^({names}) must ", lambda m: f"{_flag(m[1])} must ", text)
    words = "|".join(n for n in keywords if "_" in n or n in ("delta", "tpr", "fpr"))
    text = re.sub(rf"(?<![-\w])({words})(?![-\w])", lambda m: _flag(m[1]), text)
    return re.sub("\x00(\\d+)\x00", lambda m: quoted[int(m[1])], text)


def _ood_columns(view: Rows | Tables, kind: str) -> list[str]:
    """The score columns of an OOD model: the one pair ``(s_r, s_g)`` with an OOD score."""
    pairs = view.ood_pairs
    if not pairs:
        return view.names
    if len(pairs) != 1:
        raise ValueError(f"the {kind} model takes one pair (s_r, OOD score); got "
                         f"{len(pairs)} other score columns besides the OOD score "
                         f"{pairs[0][1]!r}: {', '.join(repr(r) for r, _ in pairs)}.")
    return list(pairs[0])


def _spec(rule: Rule) -> RuleSpec | None:
    """The registry entry of ``rule``'s class, or None."""
    spec = REJECT_RULES.get(type(rule).__name__)
    return spec if spec is not None and spec.model is type(rule) else None


def rule_columns(rule: Rule, data: TableData | Summary) -> list[str]:
    """The score columns, in order, that :func:`fit_rule` fitted ``rule`` on."""
    spec, view = _spec(rule), as_data(data)
    if spec is not None and spec.ood:
        return _ood_columns(view, spec.name)
    return view.names


def rule_summary(rule: Rule, columns: Sequence[str]) -> str:
    """The one-line summary of a fitted rule on its score ``columns``: its class name and
    the parts that its :attr:`~abstain.models.RuleSpec.summary` gives.

    Examples
    --------
    >>> from abstain import BoundedAbstention
    >>> from abstain.app.rules import rule_summary
    >>> rule = BoundedAbstention(0.5).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    >>> rule_summary(rule, ["u"])
    'BoundedAbstention: threshold 0.2, accept probability at it 1, coverage 0.5000, \
selective risk 0.0000'
    """
    spec = _spec(rule)
    assert spec is not None, type(rule)
    return f"{type(rule).__name__}: " + ", ".join(spec.summary(rule, columns))


def rule_to_json(rule: Rule, scores: Sequence[str]) -> str:
    """The rule's own ``to_json`` with the score column names added under ``"columns"``.

    The result still loads with :func:`abstain.load_json`; :func:`load_rule` returns
    both parts.
    """
    doc = json.loads(rule.to_json())
    doc["columns"] = {"scores": list(scores)}
    return json.dumps(doc, sort_keys=True, indent=1)


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
    # a byte-order mark and white space before the document, as load_json reads it
    bare = (text_or_path.lstrip().removeprefix("\ufeff").lstrip()
            if isinstance(text_or_path, str) else "")
    if bare.startswith("{"):
        text, where = bare, "the rule file"
    else:  # a path: load_json has read and validated the file
        # utf-8-sig: a byte-order mark (as load_json reads it), not part of the document
        text, where = Path(text_or_path).read_text(encoding="utf-8-sig"), str(text_or_path)
    spec = _spec(rule)
    if spec is None:
        names = list(REJECT_RULES)
        raise ValueError(
            f"{where} holds a {type(rule).__name__}, not a reject rule on score columns; "
            f"abstain apply needs one of {', '.join(names[:-1])} or {names[-1]} (written by "
            "abstain fit).")
    # load_json has checked its form: {"scores": [strings]}, or none
    held = json.loads(text).get("columns")
    cols = None if held is None else held.get("scores")
    k = rule.n_scores_ if spec.ood else 1
    if cols is not None and not (len(cols) == len(set(cols)) == k and all(cols)):
        raise ValueError(f"{where}: columns.scores must name the rule's {k} score column(s), "
                         f"each once; got {json.dumps(held)[:200]}. Write the rule again with "
                         "abstain fit.")
    return rule, cols


def apply_rule(rule: Rule, data: TableData) -> NDArray[np.bool_]:
    """Accept decisions (randomised on ties with the rule's ``random_state``) for ``data``.

    The score columns of ``data``, in order, are the rule's columns (for a
    double-score rule ``s_r`` then ``s_g``).
    """
    names = list(data.scores)
    spec = _spec(rule)
    if spec is not None and spec.ood:
        if len(names) != rule.n_scores_:
            raise ValueError(f"the rule takes {rule.n_scores_} score column(s); got "
                             f"{len(names)}: {', '.join(map(repr, names))}.")
        return rule.accept(data.stacked(names))
    if len(names) != 1:
        raise ValueError(f"the rule takes one score column; got {len(names)}.")
    return rule.accept(data.scores[names[0]])
