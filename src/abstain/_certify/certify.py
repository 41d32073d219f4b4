"""The certified-risk search of ``BoundedImprovement(delta=...)``: the procedure that ``bound``
names, run on the rows (Learn-then-Test) or on the tie groups of the rows or a table (SGR).

:func:`fit_groups` reduces the arrays or a :class:`~abstain.ScoreTable` to their tie groups,
:func:`certified_search` runs the procedure and returns the certified threshold with its
bound, and :func:`least_target` the least target the procedure meets on the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.exact import sums_exact
from .._core.groups import TieGroups, tie_groups
from .._core.validation import as_losses_and_scores, plain
from ..tables._score import selective_table, table_or_none
from .ltt import LTT_BOUNDS, in_units, ltt_least, ltt_search
from .risk_bounds import sgr_search

__all__ = ["BOUNDS", "certified_search", "check_crc_losses", "fit_groups", "least_target",
           "refuse_delta_with_guarantee", "refuse_expected", "resolve_bound"]

#: The values of ``bound``: ``"auto"``, SGR and the Learn-then-Test procedures.
BOUNDS = ("auto", "sgr", *LTT_BOUNDS)


def resolve_bound(bound: str, binary: bool) -> str:
    """The procedure ``bound`` names; ``"auto"``: ``"binomial"`` for 0/1 losses, else ``"wsr"``."""
    if bound == "auto":
        return "binomial" if binary else "wsr"
    if bound == "binomial" and not binary:
        raise ValueError("bound='binomial' needs 0/1 losses; got other values (use 'hb', "
                         "'wsr' or 'auto' for losses in [0, loss_bound]).")
    return bound


def fit_groups(
    uncertainty: Any, losses: Any
) -> tuple[TieGroups, float, bool, Callable[[], TieGroups | None]]:
    """Tie groups, largest loss, whether the losses are 0/1, and (on demand) the groups of
    the squared losses (None for 0/1 losses), of the arrays or of a table."""
    table = table_or_none(uncertainty, {"losses": losses})
    if table is not None:
        t = selective_table(table)
        return (t.groups(), t.max_loss, t.binary,
                lambda: None if t.binary else t.square_groups())
    ls, u = as_losses_and_scores(losses, uncertainty)
    binary = bool(np.all((ls == 0.0) | (ls == 1.0)))
    return (tie_groups(ls, u), float(ls.max()), binary,
            lambda: None if binary else tie_groups(np.square(ls), u))


def crc_sums_exact(uncertainty: Any, losses: Any) -> bool:
    """Whether the sums of the losses are exact in float64 (:func:`sums_exact`); a table's
    sums are its data, so exact."""
    if table_or_none(uncertainty, {"losses": losses}) is not None:
        return True
    return sums_exact(as_losses_and_scores(losses, uncertainty)[0])


def certified_search(uncertainty: Any, losses: Any, groups: TieGroups, top: float,
                     binary: bool, squares: Callable[[], TieGroups | None], target: float,
                     delta: float, loss_bound: float,
                     bound: str) -> tuple[str, int, float, float, float]:
    """Run the procedure ``bound`` on the rows (or, for ``"sgr"``, on a table's groups).

    Returns ``(procedure, group index or -1, threshold, certified bound, least target)``;
    the threshold and the bound are ``nan`` when nothing passed. The least target is what
    :func:`least_target` returns, known from this search when ``"sgr"`` passed nothing (it
    then walked the fixed chain of prefixes, and the least of their bounds is that target);
    ``nan`` otherwise.
    """
    procedure, table = _procedure(uncertainty, losses, top, binary, loss_bound, bound)
    if procedure == "sgr":
        g, b, least = sgr_search(groups, target, delta, loss_bound, binary, squares())
        theta = float(groups.values[g]) if g >= 0 else math.nan
        return procedure, g, theta, b, least if g < 0 else math.nan
    ls, u = as_losses_and_scores(losses, uncertainty)
    scale = 1.0 if procedure == "binomial" else loss_bound
    found = ltt_search(u, ls / scale, in_units(target, scale), delta, procedure)
    if math.isnan(found.threshold):
        return procedure, -1, math.nan, math.nan, math.nan
    g = int(np.searchsorted(groups.values, found.threshold, side="right")) - 1
    return procedure, g, found.threshold, found.bound * scale, math.nan


def least_target(uncertainty: Any, losses: Any, groups: TieGroups, top: float, binary: bool,
                 squares: Callable[[], TieGroups | None], delta: float, loss_bound: float,
                 bound: str, above: float = 0.0) -> float:
    """The least target ``>= above`` at which :func:`certified_search` finds a rule.

    SGR is monotone in the target (its least target is the least bound on the chain of
    prefixes that a failing search walks, :func:`~.risk_bounds.sgr_search`); the
    Learn-then-Test searches are not (:func:`~.ltt.ltt_least`).
    """
    procedure, _ = _procedure(uncertainty, losses, top, binary, loss_bound, bound)
    if procedure == "sgr":
        least = sgr_search(groups, -math.inf, delta, loss_bound, binary, squares())[2]
        return max(least, above)
    ls, u = as_losses_and_scores(losses, uncertainty)
    scale = 1.0 if procedure == "binomial" else loss_bound
    return ltt_least(u, ls / scale, delta, procedure, scale=scale, above=above)


#: The largest ``loss_bound`` of ``bound="sgr"`` on losses other than 0/1: squares of
#: losses up to it, summed over up to 2**53 rows, stay within the float64 range.
SGR_MAX_LOSS_BOUND = 2.0**485
#: The least: below it the squares of losses near it lose their bits among the subnormals.
SGR_MIN_LOSS_BOUND = 2.0**-485


def _procedure(uncertainty: Any, losses: Any, top: float, binary: bool, loss_bound: float,
               bound: str) -> tuple[str, bool]:
    """The procedure that ``bound`` names for these data, and whether they are a table."""
    if top > loss_bound:
        raise ValueError(
            f"losses must be at most loss_bound={plain(loss_bound)} for the risk bound; "
            f"got maximum {plain(top)}."
        )
    procedure = resolve_bound(bound, binary)
    table = table_or_none(uncertainty, {"losses": losses}) is not None
    if table and bound == "auto":  # the tightest procedure a table allows
        procedure = "sgr"
    if table and procedure != "sgr":
        raise ValueError(
            f"bound={plain(bound)} runs Learn-then-Test ({plain(procedure)}), which splits the "
            "rows into a part that picks the thresholds and a part that tests them; a "
            "ScoreTable keeps no rows. Give bound='sgr' to fit a table with delta."
        )
    if procedure == "sgr" and not binary and not (
            SGR_MIN_LOSS_BOUND <= loss_bound <= SGR_MAX_LOSS_BOUND):
        # its empirical Bernstein term sums squared losses, which overflow float64 above
        # and underflow below
        raise ValueError(
            f"loss_bound must be in [2**-485, 2**485] = [{SGR_MIN_LOSS_BOUND:.4g}, "
            f"{SGR_MAX_LOSS_BOUND:.4g}] for bound='sgr' with losses other than 0/1 (its "
            f"variance term squares the losses); got {plain(loss_bound)}. Multiply the "
            f"losses, the target and loss_bound by one factor."
        )
    return procedure, table


def refuse_expected(guarantee: Any) -> None:
    """Explain why ``guarantee="expected"`` is not offered."""
    if isinstance(guarantee, str) and guarantee == "expected":
        raise ValueError(
            "guarantee='expected' is not offered: the selective risk E[loss | accepted] "
            "is not monotone in the threshold, so conformal risk control does not bound "
            "it in expectation. guarantee='expected_joint' bounds the joint risk "
            "E[loss * 1{accepted}]; delta bounds the selective risk with high probability.")


def refuse_delta_with_guarantee(guarantee: Any, delta: Any) -> None:
    """A guarantee in expectation takes no ``delta``."""
    if guarantee is not None and delta is not None:
        raise ValueError(f"guarantee={plain(guarantee)} is a statement in expectation "
                         f"and takes no delta; got delta={plain(delta)}.")


def check_crc_losses(top: float, loss_bound: float) -> None:
    """Refuse losses above ``loss_bound`` for conformal risk control."""
    if top > loss_bound:
        raise ValueError(f"losses must be at most loss_bound={plain(loss_bound)} for conformal "
                         f"risk control; got maximum {plain(top)}.")
