"""abstain: selective classification and out-of-distribution rejection.

Turn any trained classifier into one that predicts or abstains: exact metrics
(:mod:`abstain.metrics`), plug-in uncertainty scores (:mod:`abstain.scores`) and the
three optimal reject models (:class:`CostBased`, :class:`BoundedImprovement`,
:class:`BoundedAbstention`). A higher uncertainty is always rejected first.
"""

from .exceptions import InfeasibleTargetWarning, NotFittedError
from .models.classifier import SelectiveClassifier
from .models.selective import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
    EquivalentModels,
    rule_from_json,
)

__all__ = [
    "BoundedAbstention",
    "BoundedImprovement",
    "CostBased",
    "EquivalentModels",
    "InfeasibleTargetWarning",
    "NotFittedError",
    "SelectiveClassifier",
    "rule_from_json",
]

__version__ = "0.1.0"
