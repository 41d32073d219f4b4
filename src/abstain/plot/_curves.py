"""Functions that draw a metric result of :mod:`abstain.metrics` (matplotlib, extra ``plot``).

Each function takes a metric result as returned by its function (a
:class:`~abstain.metrics.RiskCoverageCurve`, :class:`~abstain.metrics.ROCCurve`,
:class:`~abstain.metrics.PRCurve`, :class:`~abstain.metrics.RiskTPRCurve`) or raw
scores for the histograms, draws on ``ax`` (a new figure when None) and returns
the axes; further keyword arguments of the curve functions are matplotlib line
properties (``ls="--"``, ``color=...``). Curves are drawn exactly as the metrics define them: the
risk-coverage curve as its per-tie-group points joined by steps, the ROC, PR
and risk-at-FPR curves as lines between their points (the randomised rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.optional import axes
from .._core.validation import check_int, plain
from ..metrics import PRCurve, RiskCoverageCurve, RiskTPRCurve, ROCCurve

__all__ = [
    "plot_risk_coverage",
    "plot_roc",
    "plot_pr",
    "plot_risk_at_fpr",
    "plot_score_histograms",
]


def _axes(ax: Any) -> Any:
    return axes(ax, "abstain.plot")


def plot_risk_coverage(curve: RiskCoverageCurve, *, label: str | None = None,
                       ax: Any = None, **line: Any) -> Any:
    """Draw a risk-coverage curve: selective risk against coverage.

    Parameters
    ----------
    curve : RiskCoverageCurve
        From :func:`abstain.metrics.risk_coverage_curve`.
    label : str, optional
        Legend entry.
    ax : matplotlib Axes, optional
    **line
        Matplotlib line properties.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> from abstain.metrics import risk_coverage_curve
    >>> from abstain.plot import plot_risk_coverage
    >>> ax = plot_risk_coverage(risk_coverage_curve([0, 1, 0], [0.1, 0.9, 0.2]), label="u")
    >>> ax.get_xlabel()
    'coverage'
    """
    ax = _axes(ax)
    ax.step(curve.coverage, curve.risk, where="post", label=label, **line)
    ax.set_xlabel("coverage")
    ax.set_ylabel("selective risk")
    ax.set_xlim(0.0, 1.0)
    return ax


def plot_roc(curve: ROCCurve, *, label: str | None = None, ax: Any = None,
             **line: Any) -> Any:
    """Draw an ROC curve of :func:`abstain.metrics.ood_roc_curve`: TPR (ID accepted)
    against FPR (OOD accepted), with the chance diagonal. A double-score curve (two
    score columns) is drawn the same way."""
    ax = _axes(ax)
    ax.plot(curve.fpr, curve.tpr, label=label, **line)
    ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
    ax.set_xlabel("FPR (fraction of OOD accepted)")
    ax.set_ylabel("TPR (fraction of ID accepted)")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    return ax


def plot_pr(curve: PRCurve, *, label: str | None = None, ax: Any = None,
            **line: Any) -> Any:
    """Draw a PR curve of :func:`abstain.metrics.ood_pr_curve` (ID positive)."""
    ax = _axes(ax)
    ax.plot(curve.recall, curve.precision, label=label, **line)
    ax.set_xlabel("recall (TPR)")
    ax.set_ylabel("precision")
    ax.set_xlim(0.0, 1.0)
    return ax


def plot_risk_at_fpr(curve: RiskTPRCurve, *, label: str | None = None, ax: Any = None,
                     fpr: float | None = None, **line: Any) -> Any:
    """Draw a curve of :func:`abstain.metrics.risk_coverage_curve_at_fpr`: the least
    selective risk against the TPR target (gaps where the target is infeasible)."""
    ax = _axes(ax)
    ax.plot(curve.tpr, curve.risk, label=label, **line)
    ax.set_xlabel("TPR (coverage of ID)")
    ax.set_ylabel("selective risk")
    ax.set_xlim(0.0, 1.0)
    if fpr is not None:
        ax.set_title(f"at FPR <= {fpr:g}")
    return ax


def _rows_of(w: NDArray[Any]) -> int:
    """The sum of the whole counts ``w``, exact beyond the int64 range."""
    if float(np.sum(w, dtype=np.float64)) < 2.0**62:
        return int(np.sum(w))
    return sum(int(v) for v in w.tolist())


def plot_score_histograms(scores: ArrayLike, groups: ArrayLike, *,
                          labels: Sequence[str] = ("ID", "OOD"), bins: int = 40,
                          ax: Any = None, small: int = 0,
                          weights: ArrayLike | None = None) -> Any:
    """Overlaid histograms of a score for two groups of rows: densities, or counts with
    a rug of the values when a group is small.

    Parameters
    ----------
    scores : array-like of shape (n,)
    groups : array-like of bool, shape (n,)
        False rows are drawn as ``labels[0]``, True rows as ``labels[1]``: ``is_ood``
        for ID/OOD, or ``losses > 0`` for correct/wrong.
    labels : pair of str
    bins : int >= 1
        Number of common bins over the range of ``scores``, each at least four float
        steps wide (a range of one value or of a few steps is widened). Scores beyond
        ``2**1000`` in magnitude (about 1e301), or all below ``2**-900`` (about 1e-271),
        are drawn in units of a power of two, which the x-axis label names, so that the
        range, the densities, the margins and the ticks stay finite. NaN or infinite
        scores are refused.
    ax : matplotlib Axes, optional
    small : int, default 0
        When a non-empty group has fewer rows than this, both groups are drawn in
        counts instead of densities (a density of a few rows shows misleading spikes)
        and the small groups' values as a rug under the axis.
    weights : array-like of int, shape (n,), optional
        Rows per entry: each entry of ``scores`` then stands for that many rows, so a
        table of distinct scores and their counts (:class:`~abstain.ScoreTable`) draws
        the histogram of its rows. Entries of weight 0 are left out.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from abstain.plot import plot_score_histograms
    >>> ax = plot_score_histograms([0.1, 0.2, 0.9], [False, False, True], ax=Figure().subplots(),
    ...                            small=30)
    >>> ax.get_ylabel()
    'count'
    """
    bins = check_int("bins", bins, 1)
    small = check_int("small", small, 0)
    if isinstance(labels, str) or len(labels) != 2:
        raise ValueError(f"labels must be a pair of names (the first group's, the second's); "
                         f"got {plain(labels)}.")
    s = np.asarray(scores, dtype=np.float64)
    raw = np.asarray(unmasked(groups, "groups"))
    if raw.dtype.kind not in "biuf" or (raw.dtype.kind != "b" and not np.all(
            (raw == 0) | (raw == 1))):
        raise ValueError("groups must hold 0/1 or False/True (the second group's rows); got "
                         "other values.")
    g = raw.astype(bool)
    if s.shape != g.shape or s.ndim != 1:
        raise ValueError(f"scores and groups must be 1-D of one length; got shapes {s.shape} "
                         f"and {g.shape}.")
    w = np.ones(s.size, dtype=np.int64) if weights is None else np.asarray(weights)
    if w.shape != s.shape or (w.size and (not np.issubdtype(w.dtype, np.integer)
                                          or w.min() < 0)):
        raise ValueError(f"weights must be non-negative whole counts of the shape of scores "
                         f"{s.shape}; got {w.dtype} of shape {w.shape}.")
    bad = int(np.count_nonzero(~np.isfinite(s)))
    if bad:
        raise ValueError(f"scores must be finite numbers; got {bad} NaN or infinite "
                         "value(s).")
    s, g, w = s[w > 0], g[w > 0], w[w > 0]
    ax = _axes(ax)
    lo, hi = (float(s.min()), float(s.max())) if s.size else (0.0, 1.0)
    # scores near the float64 maximum (1e308) or all below 2**-900 (1e-271): drawn in units
    # of a power of two in which the edges, the densities, matplotlib's margins and its
    # tick steps stay finite
    top = max(abs(lo), abs(hi))
    exponent = int(np.frexp(top)[1])
    shift = exponent - 1000 if exponent > 1000 else exponent if 0 < top < 2.0**-900 else 0
    if shift:
        s, lo, hi = np.ldexp(s, -shift), float(np.ldexp(lo, -shift)), float(np.ldexp(hi, -shift))
    # bins at least four float steps wide: a range of a few steps (saturated scores such as
    # 1 - 2**-53 and 1) or one value (1e17, where lo + 1 is lo) would repeat edges
    least = 4 * bins * float(np.spacing(max(abs(lo), abs(hi))))
    if hi - lo < least:
        hi = lo + (max(1.0, least) if hi == lo else least)
    edges = np.linspace(lo, hi, bins + 1)
    drawn = [(mask, name) for mask, name in ((~g, labels[0]), (g, labels[1])) if mask.any()]
    rows = [_rows_of(w[mask]) for mask, _ in drawn]
    few = [0 < r < small for r in rows]
    density = not any(few)
    for (mask, name), is_few, r in zip(drawn, few, rows, strict=True):
        # one filled step patch per group (what ax.hist draws as one bar patch per bin)
        heights, _ = np.histogram(s[mask], bins=edges, weights=w[mask].astype(np.float64),
                                  density=density)
        patch = ax.stairs(heights, edges, fill=True, alpha=0.5, label=f"{name} ({r})")
        if is_few:
            color = patch.get_facecolor()
            ax.plot(s[mask], np.zeros(int(mask.sum())), "|", ms=12, mew=1.5, color=color,
                    alpha=1.0, transform=ax.get_xaxis_transform(), clip_on=False)
    unit = "" if not shift else f" / 2**{shift}" if shift > 0 else f" x 2**{-shift}"
    ax.set_xlabel(f"score{unit} (higher is rejected first)")
    ax.set_ylabel("density" if density else "count")
    if ax.get_legend_handles_labels()[0]:  # none for empty groups
        ax.legend(fontsize=8)
    return ax
