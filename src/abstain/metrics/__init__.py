"""Exact metrics of selective classifiers and of OOD rejection.

Selective metrics (risk-coverage curve, AuRC, E-AuRC, AUGRC, risk at a coverage, ...)
and OOD metrics (AUROC, AUPR, FPR@TPR, OSCR, the selective risk at TPR/FPR and at
precision/recall, ...) are all imported from here; each docstring states its tie rule.
A metric is a pure function of the truth (``losses`` or ``is_ood``) then the scores, and a
higher score is rejected first; a metric never fits a model. Every ``ties="mean"`` metric
also takes an :class:`abstain.tables.ScoreTable` (the mergeable summary of the rows) in
place of its arrays. :class:`StreamingMetric` (a metric accumulated batch by batch) and
:data:`METRICS`, the registry of every metric (what each is, for the tables that list them
all; :func:`register_metric` adds one), are here too,
and the scorers (``scorer(estimator, X, y) -> float``, greater is better) that
scikit-learn's model selection takes as ``scoring=``.
"""

from ._bootstrap import (
    MAX_BOOTSTRAP,
    MAX_BOOTSTRAP_ROWS,
    BootstrapInterval,
    bootstrap_indices,
    bootstrap_interval,
    check_bootstrap,
)
from ._ood import (
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
from ._ood_table import (
    AUTO_EXACT_ROWS,
    OODEvaluation,
    PairResampler,
    check_pair_search,
    evaluate_ood,
    evaluate_ood_tables,
    resolve_search,
)
from ._registry import METRICS, MetricSpec, register_metric
from ._replicates import metric_replicates, resample_counts
from ._scorers import coverage_at_risk_scorer, neg_aurc_scorer, neg_selective_risk_scorer
from ._selective import (
    RiskCoverageCurve,
    augrc,
    aurc,
    coverage_at_risk,
    e_aurc,
    risk_coverage_curve,
    sele_loss,
    selective_risk_at_coverage,
)
from ._streaming import StreamingMetric

__all__ = [
    "StreamingMetric",
    "RiskCoverageCurve",
    "risk_coverage_curve",
    "aurc",
    "e_aurc",
    "augrc",
    "selective_risk_at_coverage",
    "coverage_at_risk",
    "sele_loss",
    "neg_aurc_scorer",
    "neg_selective_risk_scorer",
    "coverage_at_risk_scorer",
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
    "METRICS",
    "MetricSpec",
    "register_metric",
    "AUTO_EXACT_ROWS",
    "PairResampler",
    "OODEvaluation",
    "evaluate_ood",
    "evaluate_ood_tables",
    "check_pair_search",
    "resolve_search",
    "BootstrapInterval",
    "bootstrap_indices",
    "bootstrap_interval",
    "check_bootstrap",
    "metric_replicates",
    "resample_counts",
    "MAX_BOOTSTRAP",
    "MAX_BOOTSTRAP_ROWS",
]
