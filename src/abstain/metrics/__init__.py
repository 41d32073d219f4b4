"""Exact metrics of selective classifiers and of OOD rejection.

Selective metrics live in :mod:`abstain.metrics.selective`, OOD metrics in
:mod:`abstain.metrics.ood`; both are re-exported here. A metric is a pure function of
the truth (``losses`` or ``is_ood``) then the scores: it never fits a model.


Every function takes per-sample ``losses`` (any non-negative numbers: 0/1 errors,
absolute errors of an ordinal model, losses of a structured predictor) and an
``uncertainty`` score. **A higher uncertainty is rejected first**: a selective
classifier accepts the samples with the lowest uncertainty.

Tie rule (the same in every function): samples are sorted by uncertainty, the
curve has one point per distinct uncertainty value, sums are accumulated in
float64. Where a metric depends on the order *inside* a group of tied scores
(AuRC, AUGRC), ``ties="mean"`` returns its exact expectation over a uniformly
random order of the tied samples, which does not depend on the row order, and
``ties="index"`` applies the rule of Franc et al. (2023), footnote 7: a stable
sort, the lower row index accepted first.
"""

from .ood import (
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
from .selective import (
    RiskCoverageCurve,
    augrc,
    aurc,
    coverage_at_risk,
    e_aurc,
    risk_coverage_curve,
    sele_loss,
    selective_risk_at_coverage,
)

__all__ = [
    "RiskCoverageCurve",
    "risk_coverage_curve",
    "aurc",
    "e_aurc",
    "augrc",
    "selective_risk_at_coverage",
    "coverage_at_risk",
    "sele_loss",
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
