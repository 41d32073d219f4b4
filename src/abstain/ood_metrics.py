"""The OOD metrics; defined in :mod:`abstain.metrics.ood`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .metrics.ood import (
    PRCurve,
    RiskTPRCurve,
    ROCCurve,
    aupr_in,
    aupr_out,
    auroc,
    ccr_at_fpr,
    detection_rate_at_false_alarm,
    fpr_at_tpr,
    ood_pr_curve,
    ood_roc_curve,
    oscr,
    risk_coverage_curve_at_fpr,
    selective_risk_at_precision_recall,
    selective_risk_at_tpr_fpr,
    tnr_at_tpr,
)

__all__ = [
    "ROCCurve",
    "PRCurve",
    "RiskTPRCurve",
    "selective_risk_at_tpr_fpr",
    "selective_risk_at_precision_recall",
    "risk_coverage_curve_at_fpr",
    "ood_roc_curve",
    "ood_pr_curve",
    "auroc",
    "aupr_in",
    "aupr_out",
    "fpr_at_tpr",
    "tnr_at_tpr",
    "oscr",
    "ccr_at_fpr",
    "detection_rate_at_false_alarm",
]
