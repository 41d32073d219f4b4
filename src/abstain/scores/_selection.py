"""Choosing a learned score's regularisation on validation data, and whether to keep it.

Section 5.1 of Franc et al. (2023) picks the regularisation constant of a learned score
by validation AuRC. :func:`select_regularization` does that and, with ``safe=True``,
also decides between the chosen learned score and the predictor's own baseline
uncertainty by a paired bootstrap of the validation AuRC, so that a learned score is
kept only where validation data say it beats the baseline. Re-exported by
:mod:`abstain.scores`.
"""

from __future__ import annotations

import copy
import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import derived_seeds, quiet
from .._core.exact import sum_round_off
from .._core.validation import (
    Boolean,
    Interval,
    RandomState,
    as_losses,
    as_scores,
    check_positive,
    check_same_length,
    validate_params,
)
from ..exceptions import ConvergenceWarning
from ..metrics import METRICS, aurc, check_bootstrap, metric_replicates, resample_counts
from ..tables import TableResampler
from ._learned import PAPER_C_GRID, SELE, TCP, LossRegression

__all__ = ["RegularizationSearch", "select_regularization", "bootstrap_win_fraction"]


class RegularizationSearch(NamedTuple):
    """Result of :func:`select_regularization`.

    Attributes
    ----------
    best : LossRegression | SELE | TCP
        A copy of the learner fitted on the training data with the chosen ``C``.
    C : float
        The chosen regularisation constant.
    grid : tuple of float
    validation_aurc : ndarray of shape (len(grid),)
    chosen : {"learned", "baseline"}
        Which score to use: ``best`` or the baseline uncertainty. Always ``"learned"``
        unless ``safe=True``.
    baseline_validation_aurc : float
        The baseline's validation AuRC (NaN when no ``baseline_val`` was given).
    win_fraction : float
        The fraction of paired bootstrap resamples of the validation set in which
        ``best`` has a lower AuRC than the baseline (NaN unless ``safe=True``).
    """

    best: Any
    C: float
    grid: tuple[float, ...]
    validation_aurc: NDArray[np.float64]
    chosen: str = "learned"
    baseline_validation_aurc: float = math.nan
    win_fraction: float = math.nan


#: Resamples of :func:`bootstrap_win_fraction` computed at once (their tables' totals).
_WIN_BLOCK = 256
_AURC: list[tuple[Any, dict[str, Any]]] = [(METRICS["aurc"], {})]


@validate_params({"n_bootstrap": [Interval(int, 1, None, closed="left")],
                  "random_state": [RandomState()]})
def bootstrap_win_fraction(
    losses: ArrayLike,
    uncertainty: ArrayLike,
    baseline: ArrayLike,
    *,
    n_bootstrap: int = 500,
    random_state: int | np.random.Generator | None = None,
) -> float:
    """Fraction of paired bootstrap resamples where ``uncertainty`` has the lower AuRC.

    Each resample draws ``n`` rows with replacement and computes the AuRC
    (``ties='mean'``; a row drawn twice ties with itself) of both scores on the same
    rows (drawn from the rows sorted by their three values, so a seed gives the same
    fraction whatever the row order); a resample counts as a win where ``uncertainty``'s
    AuRC is below the baseline's by more than the round-off of the two sums
    (``4 (n + 2) eps`` times the largest loss, eps the float64 epsilon). Two AuRCs that
    are equal in exact arithmetic (the same order of the rows up to ties of equal losses,
    or every loss the same) are thus no win, however their last bits fall.

    Examples
    --------
    >>> from abstain.scores import bootstrap_win_fraction
    >>> losses = [0, 0, 0, 1, 1] * 20
    >>> good, bad = [0, 0, 0, 1, 1] * 20, [1, 1, 1, 0, 0] * 20
    >>> bootstrap_win_fraction(losses, good, bad, random_state=0)
    1.0
    >>> bootstrap_win_fraction(losses, good, good, random_state=0)
    0.0
    """
    ls = as_losses(losses)
    u = as_scores(uncertainty)
    u0 = as_scores(baseline, "baseline")
    check_same_length(losses=ls, uncertainty=u, baseline=u0)
    # bounded before any work, as every bootstrap request is
    n_boot = check_bootstrap(n_bootstrap, ls.size)
    rng = np.random.default_rng(random_state)
    # the draws index the rows sorted by their values, so a seed gives the same fraction
    # whatever the row order (rows of equal values are interchangeable)
    order = np.lexsort((ls, u0, u))
    ls, u, u0 = ls[order], u[order], u0[order]
    # each score grouped once; a resample is the rows' draw counts, its AuRC that of the
    # score table weighted by them (the AuRC of the resampled rows, without sorting them)
    ours, theirs = TableResampler(u, ls), TableResampler(u0, ls)
    wins = 0
    n = len(ls)
    # a difference within the round-off of the AuRCs' sums of up to n losses is a tie
    tol = sum_round_off(n) * float(ls.max(initial=0.0))
    for start in range(0, n_boot, _WIN_BLOCK):
        # the same draws as one resample at a time, computed a block at once
        block = np.stack([rng.integers(0, n, n)
                          for _ in range(min(_WIN_BLOCK, n_boot - start))])
        if ours.fits:
            counts = resample_counts(block, n)
            wins += int(np.sum(metric_replicates(ours, counts, _AURC) + tol
                               < metric_replicates(theirs, counts, _AURC)))
        else:  # loss sums that could overflow a table: the rows (scaled sums)
            wins += sum(aurc(ls[rows], u[rows]) + tol < aurc(ls[rows], u0[rows])
                        for rows in block)
    return wins / n_boot


def _validation_score(model: Any, X_val: ArrayLike, y_pred_val: ArrayLike | None,
                      kw: dict[str, Any]) -> NDArray[np.float64]:
    """``model.score`` of the validation rows; a refusal names them as given here
    (``X_val``, not the ``X`` of the learner's own method)."""
    try:
        return model.score(X_val, y_pred_val, **kw)  # type: ignore[no-any-return]
    except ValueError as exc:
        msg = str(exc)
        for own, given in (("X ", "X_val "), ("y_pred ", "y_pred_val "),
                           ("baseline ", "baseline_val ")):
            if msg.startswith(own):
                raise ValueError(given + msg[len(own):]) from None
        raise


def check_learner(learner: Any, name: str) -> None:
    """Refuse anything but a score learner: an instance of ``LossRegression``, ``SELE`` or
    ``TCP`` (the class itself, a name or None gave Python's own AttributeError)."""
    if not isinstance(learner, (LossRegression, SELE, TCP)):
        what = (f"the class {learner.__name__}" if isinstance(learner, type)
                else repr(learner) if isinstance(learner, (str, type(None)))
                else type(learner).__name__)
        raise ValueError(f"{name} must be a score learner, an instance such as "
                         f"LossRegression(), SELE() or TCP(); got {what}.")


@validate_params({"safe": [Boolean()],
                  "confidence": [Interval(float, 0, 1, closed="neither")],
                  "random_state": [RandomState()]})
def select_regularization(
    learner: LossRegression | SELE | TCP,
    X: ArrayLike,
    y_pred: ArrayLike | None,
    target: ArrayLike,
    X_val: ArrayLike,
    y_pred_val: ArrayLike | None,
    losses_val: ArrayLike,
    *,
    grid: tuple[float, ...] = PAPER_C_GRID,
    baseline: ArrayLike | None = None,
    baseline_val: ArrayLike | None = None,
    safe: bool = False,
    confidence: float = 0.9,
    n_bootstrap: int = 500,
    random_state: int | np.random.Generator | None = None,
) -> RegularizationSearch:
    """Fit ``learner`` for every ``C`` in ``grid``; keep the lowest validation AuRC.

    Section 5.1: the regularisation constant is chosen from ``{0, 1, 10, 100, 1000}``
    by the AuRC (ties within score groups averaged, ``ties='mean'``) of the
    validation losses ranked by the learned score. Ties between grid values go to
    the larger ``C``. ``target`` is what the learner's ``fit`` takes (losses, or
    true-class probabilities for :class:`TCP`); validation is always by losses.
    :class:`SELE` fits the grid from the largest ``C`` down, each warm-started from
    the previous solution. ``random_state`` also seeds a learner whose own
    ``random_state`` is None (SELE's random chunks), with a seed derived from it, so
    two calls with the same ``random_state`` give the same search.

    **Baseline.** With ``baseline`` (the predictor's own uncertainty on the training
    rows) the learner is fitted with it as an input (``fit(..., baseline=...)``, see
    :class:`LossRegression`) and scored with ``baseline_val``.

    **Safe selection** (``safe=True``, needs ``baseline_val``). The learned score with
    the chosen ``C`` is kept only if it has a lower validation AuRC than the baseline
    in at least ``confidence`` of ``n_bootstrap`` paired bootstrap resamples of the
    validation rows (:func:`bootstrap_win_fraction`, seeded by ``random_state``): a
    one-sided paired test at level ``1 - confidence`` that the learned score is
    better. Otherwise ``chosen`` is ``"baseline"``: use the baseline. The same
    validation data choose ``C``, so the test is, if anything, optimistic for the
    learned score; a high ``confidence`` offsets that. Not in the paper.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.scores import LossRegression, select_regularization
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 3))
    >>> losses = (rng.uniform(size=600) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
    >>> reg = LossRegression(features="shared")
    >>> train, val = slice(0, 400), slice(400, None)
    >>> search = select_regularization(reg, X[train], None, losses[train],
    ...                                X[val], None, losses[val])
    >>> search.validation_aurc.shape, search.best.C == search.C
    ((5,), True)

    A baseline that knows nothing (random) is beaten; the learned score is kept:

    >>> u0 = rng.normal(size=600)
    >>> safe = select_regularization(reg, X[train], None, losses[train], X[val], None,
    ...                              losses[val], baseline_val=u0[val], safe=True,
    ...                              random_state=0)
    >>> safe.chosen, safe.win_fraction
    ('learned', 1.0)
    """
    check_learner(learner, "learner")
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__"):
        raise ValueError(f"grid must be a sequence of values of C; got {grid!r}.")
    values = tuple(float(check_positive("grid value", c, allow_zero=True)) for c in grid)
    if not values:
        raise ValueError("grid must hold at least one value; got an empty grid.")
    losses_v = as_losses(losses_val, "losses_val")
    for name, arr in (("X_val", X_val), ("y_pred_val", y_pred_val)):  # named as given here
        if arr is not None and np.ndim(arr) >= 1 and np.shape(arr)[0] != losses_v.size:
            raise ValueError(f"{name} and losses_val must have the same length (one row per "
                             f"validation sample); got {name} has {np.shape(arr)[0]}, "
                             f"losses_val has {losses_v.size}.")
    u0_val = None
    if baseline_val is not None:
        u0_val = as_scores(baseline_val, "baseline_val")
        check_same_length(losses_val=losses_v, baseline_val=u0_val)
    if baseline is not None and u0_val is None:
        raise ValueError("baseline_val must be given with baseline (the learned score takes "
                         "the baseline as an input); got None.")
    if safe and u0_val is None:
        raise ValueError("baseline_val must be given with safe=True; got None.")
    if safe:  # before any fit
        check_bootstrap(n_bootstrap, losses_v.size)
    fit_kw = {} if baseline is None else {"baseline": baseline}
    score_kw = {} if baseline is None else {"baseline": u0_val}
    order = sorted(range(len(values)), key=lambda i: -values[i])
    fitted: list[Any] = [None] * len(values)
    scores = np.full(len(values), np.nan)
    current = copy.deepcopy(learner)
    own = current.get_params(deep=False)
    seeds = derived_seeds(random_state, 1)
    if seeds is not None and own.get("random_state", 0) is None:  # SELE's chunks
        current.set_params(random_state=seeds[0])
    if isinstance(current, SELE):
        current.set_params(warm_start=True)
    for i in order:
        current.set_params(C=values[i])
        with quiet(ConvergenceWarning):
            current.fit(X, y_pred, target, **fit_kw)
        fitted[i] = copy.deepcopy(current)
        u = _validation_score(current, X_val, y_pred_val, score_kw)
        check_same_length(losses_val=losses_v, uncertainty=u)
        scores[i] = aurc(losses_v, u)
    best_i = min(order, key=lambda i: scores[i])  # first in order: the larger C wins ties
    best = fitted[best_i]
    if isinstance(best, SELE):
        best.set_params(warm_start=getattr(learner, "warm_start", False))
    base_aurc, wins, chosen = math.nan, math.nan, "learned"
    if u0_val is not None:
        base_aurc = aurc(losses_v, u0_val)
    if safe:
        assert u0_val is not None  # checked above
        u_best = _validation_score(best, X_val, y_pred_val, score_kw)
        wins = bootstrap_win_fraction(losses_v, u_best, u0_val, n_bootstrap=n_bootstrap,
                                      random_state=random_state)
        chosen = "learned" if wins >= confidence else "baseline"
    return RegularizationSearch(best, values[best_i], values, scores, chosen, base_aurc, wins)
