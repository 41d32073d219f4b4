"""Base scores of a class x rotation network; defined in :mod:`abstain.detectors.base_scores`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .detectors.base_scores import (
    KINDS,
    ShiftedBaseScores,
    from_json,
    joint_labels,
    rotation_training_set,
    rotations,
)

__all__ = [
    "KINDS",
    "ShiftedBaseScores",
    "from_json",
    "joint_labels",
    "rotation_training_set",
    "rotations",
]
