"""The scikit-learn meta-estimator; defined in :mod:`abstain.models.classifier`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .models.classifier import (
    SelectiveClassifier,
    SelectivePrediction,
)

__all__ = [
    "SelectiveClassifier",
    "SelectivePrediction",
]
