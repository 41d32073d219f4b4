"""Uncertainty scores (Franc et al. 2023). Higher = reject first.

Plug-in scores from a model's own outputs (section 3.2: conditional risk, MCP,
margin) and scores learned from examples for any black-box predictor (sections
3.3-3.4 and 5.1: :class:`LossRegression`, :class:`SELE`, :class:`TCP`).

Loss matrices and per-sample losses (:func:`zero_one_loss`, :func:`absolute_error_loss`,
:func:`check_loss_matrix`, :func:`sample_losses`) are here too.
"""

from ._learned import (
    PAPER_C_GRID,
    SELE,
    TCP,
    LossRegression,
    true_class_probability,
)
from ._losses import (
    absolute_error_loss,
    check_loss_matrix,
    sample_losses,
    sele_objective,
    zero_one_loss,
)
from ._plugin import (
    ConditionalRisk,
    conditional_risk,
    margin,
    mcp,
    ordinal_margin,
)
from ._selection import RegularizationSearch, bootstrap_win_fraction, select_regularization

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
    "sele_objective",
    "true_class_probability",
    "zero_one_loss",
    "absolute_error_loss",
    "check_loss_matrix",
    "sample_losses",
]
