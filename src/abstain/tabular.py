"""Evaluate, fit and apply reject rules on a table of per-sample columns; defined in
:mod:`abstain.app` (:mod:`~abstain.app.tables`, :mod:`~abstain.app.evaluate`,
:mod:`~abstain.app.rules`) and :func:`abstain.models.least_risk_bound`.

This module path is kept for existing code; it re-exports the names of their new homes.
"""

from .app.evaluate import (
    Evaluation,
    evaluate,
)
from .app.rules import (
    InfeasibleTargetError,
    apply_rule,
    fit_rule,
    load_rule,
    rule_columns,
    rule_to_json,
)
from .app.tables import (
    MissingValuesError,
    TableData,
    prepare,
)
from .models.selective import (
    least_risk_bound,
)

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
