"""Score combining by hypothesis testing: empirical z-values, p-values, the GLRT and the
classical combiners, and an OOD detector whose false-alarm rate (FAR) is guaranteed.

Implements sections 3.1-3.3 and Appendix A of Reehorst and Schniter, "Score combining
for contrastive OOD detection" (the paper): m base scores of a test input are mapped to
z-values with the inlier training data (eq. 21), combined into one statistic by a
generalised likelihood-ratio test (GLRT, eq. 20; with a general covariance, eqs. 31-34)
or by a classical p-value combiner, and thresholded with conformal p-values (eq. 22) at a
level that bounds the FAR with high probability (eq. 24, Algorithms 2 and 3).

What to combine
---------------
Combining every base score can lose to the best one of them (docs/combining.md). The
default ``method="auto"`` of :class:`ScoreCombiner` and :class:`BankDetector` chooses on
proxy outliers (held-out classes, :class:`abstain.detectors.LeaveClassesOut`; rotated
images; any outliers the test data do not hold): the best single base score, unless a
statistic of :data:`STATISTICS` over all or some of the scores beats it in at least
``confidence`` of paired bootstrap resamples of held-out rows. The guarantee is
calibrated afterwards on rows the choice never saw.

Direction rule (one for the whole module)
-----------------------------------------
The paper's base scores are *inlier* scores (higher = more inlier) and its tests reject
for small statistics. Here everything follows the library's rule, **a higher value means
more OOD**:

* base scores ``S`` of shape (n, m), one column per score, are higher = more OOD;
* z-values are the paper's z-values negated: under H0 (inlier) each is (up to the ECDF's
  discreteness) N(0, 1), and OOD inputs have *positive* means, so the paper's
  negative-means problem (15), ``mu_l <= -epsilon``, is solved here as the equivalent
  positive-means problem ``mu_l >= epsilon``;
* where a combiner works on p-values, the per-column p-value of a z-value is its upper
  tail ``p = Phi(-z) = norm.sf(z)`` (one-sided; more OOD = smaller p), computed in log
  space (``log_ndtr``) so that z = 40 still gives a finite ``log p``;
* every combined statistic is higher = more OOD (a monotone increasing function of the
  negated paper statistic; each method below says which);
* a detector flags ``statistic > threshold`` (strictly) as OOD.

Scores whose larger values mean "more inlier" (CSI's cosine, norm and shift scores, a
softmax probability, ...) are negated at the edge: pass ``higher_is_inlier=True`` to
:class:`EmpiricalZ`, :class:`ScoreCombiner` or :class:`GuaranteedDetector`, which then
negate their inputs; the functions take the library direction only.

Tie rules
---------
* :class:`EmpiricalZ`: ``p_hat(s) = (1 + #{train >= s}) / (n + 2)`` and
  ``z = Phi^{-1}(1 - p_hat(s))``; a training score equal to ``s`` counts as at least as
  extreme as ``s`` (the paper's ``s_l(x_i) <= s`` of eq. 21 after the sign flip). The
  ``+1 / +2`` is the continuity correction that keeps every z finite:
  ``|z| <= Phi^{-1}(1 - 1/(n + 2))``. For a fresh inlier and continuous scores the count
  ``#{train >= s}`` is uniform on ``0..n``, so ``p_hat`` is uniform on
  ``{1, ..., n + 1} / (n + 2)`` and z is exactly symmetric about 0.
* p-values from a calibration sample count ties as at least as extreme:
  ``#{cal >= s} / n`` (eq. 9) and ``(1 + #{cal >= s}) / (n + 1)`` (conformal, eq. 22).
* Sorting combiners (Simes, HC, BJ, ALR) sort each row's p-values; tied p-values are
  interchangeable, so the statistic does not depend on how ties are ordered.
* Thresholds are order statistics of the calibration statistics; an input tied with the
  threshold is an inlier. ``statistic > l-th largest calibration value`` is exactly the
  paper's ``q_hat(x) <= (l + 0.99) / (n + 1)`` of Algorithm 3, ties included.
"""

from ._bank import (
    BankDetector,
)
from ._guarantee import (
    FARGuarantee,
    GuaranteedDetector,
    conformal_threshold,
    far_guarantee,
)
from ._pipeline import (
    ScoreCombiner,
)
from ._pvalues import (
    EmpiricalZ,
    conformal_pvalues,
    empirical_pvalues,
)
from ._qp import (
    inlier_covariance,
)
from ._statistics import (
    METHODS,
    STATISTICS,
    combine,
    csi_statistic,
)

__all__ = [
    "METHODS",
    "STATISTICS",
    "BankDetector",
    "EmpiricalZ",
    "FARGuarantee",
    "GuaranteedDetector",
    "ScoreCombiner",
    "combine",
    "conformal_pvalues",
    "conformal_threshold",
    "csi_statistic",
    "empirical_pvalues",
    "far_guarantee",
    "inlier_covariance",
]
