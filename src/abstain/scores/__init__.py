"""Uncertainty scores (Franc et al. 2023). Higher = reject first.

Plug-in scores from a model's own outputs (section 3.2: conditional risk, MCP,
margin) and scores learned from examples for any black-box predictor (sections
3.3-3.4 and 5.1: :class:`LossRegression`, :class:`SELE`, :class:`TCP`).

Loss matrices and per-sample losses are in :mod:`abstain.scores.losses` (also
:mod:`abstain.losses`).
"""

from .learned import (
    PAPER_C_GRID,
    SELE,
    TCP,
    LossRegression,
    score_from_json,
    sele_objective,
    true_class_probability,
)
from .plugin import (
    ConditionalRisk,
    conditional_risk,
    margin,
    mcp,
    ordinal_margin,
)
from .selection import RegularizationSearch, bootstrap_win_fraction, select_regularization

__all__ = [
    "ConditionalRisk",
    "conditional_risk",
    "mcp",
    "margin",
    "ordinal_margin",
    "PAPER_C_GRID",
    "LossRegression",
    "SELE",
    "TCP",
    "RegularizationSearch",
    "select_regularization",
    "bootstrap_win_fraction",
    "score_from_json",
    "sele_objective",
    "true_class_probability",
]
