"""The OOD reject models; defined in :mod:`abstain.models.ood`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .models.ood import (
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBasedOOD,
    selector_from_json,
)

__all__ = [
    "BoundedTPRFPR",
    "BoundedPrecisionRecall",
    "CostBasedOOD",
    "selector_from_json",
]
