"""Reject rules: the selective models of Franc et al. (2023), the OOD models of Franc,
Prusa and Paplham (2023), double-score detectors and the scikit-learn meta-estimator.

Every rule is fitted on calibration scores first, then the truth:
``fit(uncertainty, losses)`` or ``fit(scores, is_ood, losses)``; ``score`` gives the
(combined) uncertainty, ``accept`` / ``accept_proba`` the decision (True = kept). The
double-score fits also take an :class:`abstain.tables.PairTable` in place of the rows.
:data:`REJECT_RULES` holds, for every reject rule that ``abstain fit`` offers, its targets,
the data it takes and its summary line (:class:`RuleSpec`, added with :func:`register_rule`).
"""

from ._classifier import (
    SelectiveClassifier,
    SelectivePrediction,
)
from ._double_score import (
    DoubleScoreDetector,
)
from ._equivalent import EquivalentModels
from ._least_risk import least_fpr_at_tpr, least_risk_bound, most_recall_at_precision
from ._ood import (
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBasedOOD,
)
from ._registry import (
    REJECT_RULES,
    RuleSpec,
    RuleTarget,
    register_rule,
)
from ._selective import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
)
from ._tuning import (
    DetectorTuning,
    tune_detector,
)

__all__ = [
    "DetectorTuning",
    "tune_detector",
    "BoundedAbstention",
    "BoundedImprovement",
    "CostBased",
    "EquivalentModels",
    "least_risk_bound",
    "BoundedPrecisionRecall",
    "BoundedTPRFPR",
    "CostBasedOOD",
    "least_fpr_at_tpr",
    "most_recall_at_precision",
    "DoubleScoreDetector",
    "SelectiveClassifier",
    "SelectivePrediction",
    "REJECT_RULES",
    "RuleSpec",
    "RuleTarget",
    "register_rule",
]
