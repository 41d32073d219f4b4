"""Loss matrices and per-sample losses; defined in :mod:`abstain.scores.losses`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .scores.losses import (
    absolute_error_loss,
    check_loss_matrix,
    sample_losses,
    zero_one_loss,
)

__all__ = [
    "zero_one_loss",
    "absolute_error_loss",
    "check_loss_matrix",
    "sample_losses",
]
