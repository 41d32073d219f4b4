"""Plots of abstain's curves (matplotlib, the ``plot`` extra).

Two styles, as in scikit-learn:

- display objects: ``RiskCoverageDisplay``,
  ``GeneralizedRiskCoverageDisplay``, ``OODRocDisplay``, ``OODPrecisionRecallDisplay``
  and ``RiskAtFPRDisplay``, built ``from_predictions`` or ``from_estimator`` and drawn
  with ``plot(ax=..., name=...)``, the area in the legend, with optional random and
  oracle references and a fitted rule's operating point;
- functions of a metric result: ``plot_risk_coverage``,
  ``plot_roc``, ``plot_pr``, ``plot_risk_at_fpr`` and ``plot_score_histograms``.
"""

from ._curves import plot_pr, plot_risk_at_fpr, plot_risk_coverage, plot_roc, plot_score_histograms
from ._displays import (
    GeneralizedRiskCoverageDisplay,
    OODPrecisionRecallDisplay,
    OODRocDisplay,
    RiskAtFPRDisplay,
    RiskCoverageDisplay,
)

__all__ = [
    "RiskCoverageDisplay",
    "GeneralizedRiskCoverageDisplay",
    "OODRocDisplay",
    "OODPrecisionRecallDisplay",
    "RiskAtFPRDisplay",
    "plot_risk_coverage",
    "plot_roc",
    "plot_pr",
    "plot_risk_at_fpr",
    "plot_score_histograms",
]
