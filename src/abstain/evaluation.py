"""The two-stage evaluation protocol of Franc et al. (2023, section 5.2) and rank statistics.

A dataset ``(X, y)`` is split into ``Trn1/Val1/Trn2/Val2/Tst``. The predictor is
trained on Trn1 with its regularisation chosen on Val1; every uncertainty score
is learned on Trn2 with its regularisation chosen by AuRC on Val2; everything is
judged by the test AuRC on Tst. :func:`compare_methods` then ranks methods over
datasets with the Friedman test and the Nemenyi critical difference (Demsar 2006).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ._core.arrays import class_positions, unmasked
from ._core.optional import figure
from ._core.validation import (
    as_features,
    as_losses,
    check_fraction,
    check_positive,
    check_random_state,
    plain,
)
from .metrics import aurc
from .scores._learned import PAPER_C_GRID, TCP, true_class_probability
from .scores._losses import sample_losses
from .scores._plugin import conditional_risk, margin, ordinal_margin
from .scores._selection import check_learner, select_regularization

__all__ = [
    "PAPER_RATIOS",
    "Split",
    "ProtocolResult",
    "MethodComparison",
    "paper_splits",
    "evaluate_scores",
    "compare_methods",
    "zero_one_losses",
    "absolute_losses",
    "plot_critical_difference",
]

#: Trn1/Val1/Trn2/Val2/Tst proportions of section 5.2.
PAPER_RATIOS: tuple[float, ...] = (0.3, 0.1, 0.3, 0.1, 0.2)
#: Regularisation grid of the predictors in section 5.2.
MODEL_C_GRID: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)


class Split(NamedTuple):
    """Row indices of the five parts of one random split."""

    trn1: NDArray[np.intp]
    val1: NDArray[np.intp]
    trn2: NDArray[np.intp]
    val2: NDArray[np.intp]
    tst: NDArray[np.intp]


def paper_splits(
    n_samples: int,
    *,
    n_splits: int = 5,
    ratios: Sequence[float] = PAPER_RATIOS,
    random_state: int | np.random.Generator | None = None,
) -> list[Split]:
    """Random partitions of ``range(n_samples)`` into Trn1/Val1/Trn2/Val2/Tst.

    Each split is a fresh random permutation; the first four parts get
    ``floor(ratio * n_samples)`` rows each and Tst takes the rest.

    Examples
    --------
    >>> from abstain.evaluation import paper_splits
    >>> split = paper_splits(100, n_splits=1, random_state=0)[0]
    >>> [len(part) for part in split]
    [30, 10, 30, 10, 20]
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)):
        raise ValueError(f"n_samples must be an integer; got {plain(n_samples)}.")
    r = np.asarray(ratios, dtype=np.float64)
    if r.shape != (5,) or np.any(r <= 0) or not math.isclose(float(r.sum()), 1.0, abs_tol=1e-9):
        raise ValueError(f"ratios must be 5 positive numbers summing to 1; "
                         f"got {plain(list(ratios))}.")
    sizes = np.floor(n_samples * r[:4])
    if n_samples < 5 or np.any(sizes < 1) or n_samples - sizes.sum() < 1:  # Tst too
        raise ValueError(f"n_samples must give every part at least one row; got {n_samples}.")
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 1:
        raise ValueError(f"n_splits must be a positive integer; got {plain(n_splits)}.")
    check_random_state("random_state", random_state)
    rng = np.random.default_rng(random_state)
    cuts = np.cumsum(np.floor(r[:4] * n_samples).astype(int))
    return [Split(*np.split(rng.permutation(n_samples), cuts)) for _ in range(n_splits)]


def zero_one_losses(y_true: ArrayLike, y_pred: ArrayLike) -> NDArray[np.float64]:
    """Per-sample 0/1 loss ``[y_true != y_pred]``: :func:`abstain.scores.sample_losses`
    with ``loss=None``, which refuses missing labels and labels of kinds that never compare
    equal (strings against numbers: every row would count as an error)."""
    return sample_losses(y_true, y_pred)


def absolute_losses(y_true: ArrayLike, y_pred: ArrayLike) -> NDArray[np.float64]:
    """Per-sample absolute error ``|y_true - y_pred|`` (ordinal labels)."""
    return np.abs(np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64))


def _standardizer(X: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    return mean, np.where(std > 0, std, 1.0)


def default_baseline(model: Any, X: NDArray[np.float64]) -> NDArray[np.float64]:
    """The baseline uncertainty of a fitted predictor, section 5.2.

    For an ordinal predictor with ``thresholds_`` and ``projection`` (an
    :class:`~abstain.ordinal.SVOR`) :func:`abstain.scores.ordinal_margin` of the
    projection, which is ``SVOR.uncertainty``; else ``uncertainty(X)`` of a predictor that
    has one; else the MCP / conditional risk of its prediction from ``predict_proba``; else
    :func:`abstain.scores.margin` of ``decision_function``. Higher = reject first.
    """
    thresholds = getattr(model, "thresholds_", None)
    if thresholds is not None and hasattr(model, "projection"):
        return ordinal_margin(model.projection(X), thresholds)
    if hasattr(model, "uncertainty"):
        return np.asarray(model.uncertainty(X), dtype=np.float64)
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X)
        pred = class_positions(model.classes_, model.predict(X))  # sorted or not
        return conditional_risk(proba, prediction=pred).risk
    return margin(model.decision_function(X))


class ProtocolResult(NamedTuple):
    """Test results of :func:`evaluate_scores`, one row per split.

    Attributes
    ----------
    methods : tuple of str
        ``"baseline"``, then the names of ``plugin_scores``, then the learners' names.
    aurc : ndarray of shape (n_splits, n_methods)
        Test AuRC of each method (ties averaged).
    risk : ndarray of shape (n_splits,)
        Test risk of the predictor (coverage 1).
    model_C : ndarray of shape (n_splits,)
        Regularisation chosen for the predictor on Val1.
    score_C : ndarray of shape (n_splits, n_methods)
        Regularisation chosen for each learned score on Val2 (NaN for the baseline and
        the plug-in scores).
    model_converged : ndarray of bool, shape (n_splits,), or None
        False where fitting the chosen predictor issued a ``ConvergenceWarning`` (its solver
        stopped at the iteration limit); None for results built by hand.
    chose_baseline : ndarray of bool, shape (n_splits, n_methods), or None
        True where the safe selection on Val2 kept the baseline instead of the learned
        score (its test AuRC is then the baseline's); False elsewhere.
    """

    methods: tuple[str, ...]
    aurc: NDArray[np.float64]
    risk: NDArray[np.float64]
    model_C: NDArray[np.float64]
    score_C: NDArray[np.float64]
    model_converged: NDArray[np.bool_] | None = None
    chose_baseline: NDArray[np.bool_] | None = None


def evaluate_scores(
    X: ArrayLike,
    y: ArrayLike,
    model: Any,
    learners: Mapping[str, Any],
    *,
    loss: Callable[[Any, Any], NDArray[np.float64]] = zero_one_losses,
    baseline: Callable[[Any, NDArray[np.float64]], NDArray[np.float64]] = default_baseline,
    model_grid: Sequence[float] = MODEL_C_GRID,
    score_grid: Sequence[float] = PAPER_C_GRID,
    n_splits: int = 5,
    ratios: Sequence[float] = PAPER_RATIOS,
    random_state: int | None = None,
    plugin_scores: Mapping[str, Callable[[Any, NDArray[np.float64]], NDArray[np.float64]]]
    | None = None,
    baseline_input: Collection[str] = (),
    safe: bool | Collection[str] = False,
    confidence: float = 0.9,
) -> ProtocolResult:
    """Run the protocol of section 5.2 on one dataset.

    For each random split: standardise with the mean and deviation of Trn1, fit
    ``model`` (a scikit-learn-style estimator with a ``C`` parameter) on Trn1 for
    every ``C`` in ``model_grid`` and keep the lowest mean ``loss`` on Val1 (ties:
    the smaller ``C``). Then standardise with Trn2's statistics and fit each
    learner on Trn2 with the predictor's outputs and losses, choosing its ``C``
    from ``score_grid`` by Val2 AuRC (:func:`~abstain.scores.select_regularization`).
    A :class:`~abstain.scores.TCP` learner is fitted to the predicted probability of
    the true class and needs ``predict_proba``. Report every method's AuRC on Tst.

    Beyond the paper: the learners named in ``baseline_input`` get the baseline
    uncertainty as an input (``fit(..., baseline=u0)``), and those named in ``safe``
    are kept only where they beat the baseline on Val2 by the paired bootstrap rule of
    :func:`~abstain.scores.select_regularization` (``chose_baseline`` says where they
    did not; the test AuRC is then the baseline's).

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Labels; for ordinal data integers in rank order.
    model : estimator
        Unfitted; cloned with ``copy.deepcopy`` and ``set_params(C=...)``.
    learners : mapping of str to learner
        E.g. ``{"SELE": SELE(), "REG": LossRegression()}``; names label the results.
    loss : callable, default :func:`zero_one_losses`
        ``loss(y_true, y_pred)`` per sample (multiply it to report percentages).
    baseline : callable, default :func:`default_baseline`
        ``baseline(fitted_model, X)`` -> uncertainty of the predictor's own output.
    model_grid, score_grid : sequences of float
    n_splits, ratios
        As in :func:`paper_splits`.
    random_state : int or None
        Seeds the splits and, through seeds drawn from it, every estimator whose
        ``random_state`` parameter is None: the predictor (e.g. ``LinearSVC``) and the
        learners, and the bootstrap of the safe selection, so that an int gives the
        same result on every run.
    plugin_scores : mapping of str to callable, optional
        Further scores of the fitted predictor, ``f(fitted_model, X)`` like
        ``baseline``, reported beside it (e.g. the other kind of
        :func:`~abstain.scores.margin`); no learner sees them.
    baseline_input : collection of str, default ()
        Names of ``learners`` fitted with the baseline as an input.
    safe : bool or collection of str, default False
        Names of ``learners`` selected safely against the baseline; True for all.
    confidence : float, default 0.9
        The win fraction the safe selection needs to keep a learned score.

    Returns
    -------
    ProtocolResult

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from abstain.evaluation import evaluate_scores
    >>> from abstain.scores import LossRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3))
    >>> y = (X[:, 0] + rng.normal(size=500) > 0).astype(int)
    >>> result = evaluate_scores(X, y, LogisticRegression(), {"REG": LossRegression()},
    ...                          n_splits=2, random_state=0)
    >>> result.methods, result.aurc.shape
    (('baseline', 'REG'), (2, 2))
    >>> result = evaluate_scores(X, y, LogisticRegression(),
    ...                          {"REG": LossRegression(), "REG+b": LossRegression()},
    ...                          baseline_input=["REG+b"], safe=["REG+b"],
    ...                          n_splits=2, random_state=0)
    >>> result.chose_baseline.shape
    (2, 3)
    """
    x = as_features(X)
    labels = np.asarray(unmasked(y, "y"))
    if labels.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},); got {labels.shape}.")
    if len(np.unique(labels)) < 2:
        raise ValueError("y must hold at least 2 classes; got 1.")
    model_grid = _grid("model_grid", model_grid, allow_zero=False)
    score_grid = _grid("score_grid", score_grid, allow_zero=True)
    if not isinstance(learners, Mapping):
        raise ValueError(f"learners must map names to score learners, such as "
                         f"{{'REG': LossRegression()}}; got {type(learners).__name__}.")
    if not learners:
        raise ValueError("learners must name at least one score learner; got none.")
    for key, learner in learners.items():
        check_learner(learner, f"learners[{key!r}]")
    for r in ratios:
        check_fraction("ratios", r)
    plugins = dict(plugin_scores or {})
    safe_names = (set(learners) if safe is True else set() if safe is False or safe is None
                  else _names("safe", safe))
    for label, names in (("baseline_input", _names("baseline_input", baseline_input)),
                         ("safe", safe_names)):
        unknown = sorted(names - set(learners))
        if unknown:
            raise ValueError(f"{label} must name learners; got {unknown} (learners: "
                             f"{list(learners)}).")
    clash = sorted(({"baseline", *plugins} & set(learners)) | ({"baseline"} & set(plugins)))
    if clash:
        raise ValueError(f"learners and plugin_scores must have distinct names other than "
                         f"'baseline'; got {clash} twice.")
    methods = ("baseline", *plugins, *learners)
    first = 1 + len(plugins)
    splits = paper_splits(len(labels), n_splits=n_splits, ratios=ratios, random_state=random_state)
    seeds = np.random.default_rng(random_state).integers(0, 2**31 - 1, (len(splits), 2))
    converged = np.ones(len(splits), dtype=bool)
    result_aurc = np.full((len(splits), len(methods)), np.nan)
    result_risk = np.full(len(splits), np.nan)
    model_c = np.full(len(splits), np.nan)
    score_c = np.full((len(splits), len(methods)), np.nan)
    chose = np.zeros((len(splits), len(methods)), dtype=bool)
    for s, split in enumerate(splits):
        mean1, std1 = _standardizer(x[split.trn1])
        x1 = (x - mean1) / std1
        seed = None if random_state is None else int(seeds[s, 0])
        fitted, model_c[s], converged[s] = _fit_predictor(_seeded(model, seed), x1, labels,
                                                          split, loss, model_grid)
        pred = fitted.predict(x1)
        losses = _losses(loss, labels, pred)
        result_risk[s] = losses[split.tst].mean()
        u0 = baseline(fitted, x1)
        result_aurc[s, 0] = aurc(losses[split.tst], u0[split.tst])
        for m, plugin in enumerate(plugins.values(), start=1):
            result_aurc[s, m] = aurc(losses[split.tst], plugin(fitted, x1[split.tst]))
        mean2, std2 = _standardizer(x[split.trn2])
        x2 = (x - mean2) / std2
        for j, (name, learner) in enumerate(learners.items(), start=1):
            m = first + j - 1  # the column; the seed goes by the learner's own position
            seed = None if random_state is None else int(seeds[s, 1]) + j
            learner = _with_classes(_seeded(learner, seed), fitted)
            target = losses
            if isinstance(learner, TCP):
                if not hasattr(fitted, "predict_proba"):
                    raise ValueError("TCP needs a model with predict_proba.")
                target = _true_class_proba(fitted, x1, labels)
            takes = name in baseline_input
            search = select_regularization(
                learner,
                x2[split.trn2], pred[split.trn2], target[split.trn2],
                x2[split.val2], pred[split.val2], losses[split.val2],
                grid=tuple(score_grid),
                baseline=u0[split.trn2] if takes else None,
                baseline_val=u0[split.val2] if takes or name in safe_names else None,
                safe=name in safe_names, confidence=confidence,
                random_state=seed,
            )
            score_c[s, m] = search.C
            chose[s, m] = search.chosen == "baseline"
            u_test = u0[split.tst] if chose[s, m] else search.best.score(
                x2[split.tst], pred[split.tst], **({"baseline": u0[split.tst]} if takes else {}))
            result_aurc[s, m] = aurc(losses[split.tst], u_test)
    return ProtocolResult(methods, result_aurc, result_risk, model_c, score_c, converged,
                          chose)


def _seeded(estimator: Any, seed: int | None) -> Any:
    """A copy of ``estimator`` with ``random_state=seed`` if it has that parameter unset."""
    if seed is None or not hasattr(estimator, "get_params"):
        return estimator
    if "random_state" not in estimator.get_params() or \
            estimator.get_params()["random_state"] is not None:
        return estimator
    return copy.deepcopy(estimator).set_params(random_state=seed)


def _with_classes(learner: Any, model: Any) -> Any:
    """The learner with ``classes`` set to every label the fitted predictor can output.

    Otherwise a label the predictor never outputs on Trn2 but does on Val2 or Tst
    would have no coefficients.
    """
    if getattr(learner, "classes", 0) is None and hasattr(model, "classes_"):
        learner = copy.deepcopy(learner)
        learner.set_params(classes=np.asarray(model.classes_))
    return learner


def _true_class_proba(model: Any, x: NDArray[np.float64], y: NDArray[Any]) -> NDArray[np.float64]:
    """``p_hat(y_i | x_i)``; 0 for a label the predictor never saw in training."""
    proba = model.predict_proba(x)
    classes = np.asarray(model.classes_)
    pos = class_positions(classes, y)  # sorted or not
    seen = classes[pos] == y
    return np.where(seen, true_class_probability(proba, pos), 0.0)


def _fit_predictor(
    model: Any,
    x: NDArray[np.float64],
    y: NDArray[Any],
    split: Split,
    loss: Callable[[Any, Any], NDArray[np.float64]],
    grid: Sequence[float],
) -> tuple[Any, float, bool]:
    """The candidate of least Val1 loss, its ``C``, and whether its fit converged."""
    best: tuple[float, float, Any, bool] | None = None
    for c in grid:
        candidate = copy.deepcopy(model).set_params(C=c)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # recorded: the result says which fits stopped early
            candidate.fit(x[split.trn1], y[split.trn1])
        ok = not any(type(w.message).__name__ == "ConvergenceWarning" for w in caught)
        # the sum correctly rounded: the same losses on other rows give the same error (a
        # sum in row order made equal means differ in their last bits)
        error = math.fsum(_losses(loss, y[split.val1], candidate.predict(x[split.val1]))
                          .tolist())
        if best is None or (error, float(c)) < best[:2]:  # ties: the smaller C, as documented
            best = (error, float(c), candidate, ok)
    assert best is not None
    return best[2], best[1], best[3]


def _losses(loss: Callable[[Any, Any], NDArray[np.float64]], y_true: NDArray[Any],
            y_pred: NDArray[Any]) -> NDArray[np.float64]:
    """``loss(y_true, y_pred)``, checked: one finite loss >= 0 per sample."""
    out = as_losses(loss(y_true, y_pred), "loss(y_true, y_pred)")
    if out.shape != y_true.shape:
        raise ValueError(f"loss must return one loss per sample, shape {y_true.shape}; got "
                         f"shape {out.shape}.")
    return out


def _names(label: str, value: Any) -> set[str]:
    """The learner names of ``baseline_input`` or ``safe`` (a collection, not a string)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"{label} must be a collection of learner names; got {plain(value)} "
                         f"(write [{value!r}] for one name).")
    return set(value)


def _grid(name: str, values: Any, *, allow_zero: bool) -> tuple[float, ...]:
    """A non-empty sequence of values of C (``> 0``, or ``>= 0`` with ``allow_zero``)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a sequence of values of C; got {values!r}.")
    out = tuple(float(check_positive(f"{name} value", c, allow_zero=allow_zero))
                for c in values)
    if not out:
        raise ValueError(f"{name} must hold at least one value of C; got an empty sequence.")
    return out


class MethodComparison(NamedTuple):
    """Rank statistics of several methods over several datasets (Demsar 2006).

    Attributes
    ----------
    methods : tuple of str
    average_rank : ndarray of shape (k,)
        Mean rank over datasets; rank 1 is the lowest value, ties get their mean rank.
    friedman_statistic : float
        ``chi2_F = 12 N / (k (k + 1)) * (sum_j R_j^2 - k (k + 1)^2 / 4)`` (Demsar's form)
        divided by the tie correction ``1 - sum (t^3 - t) / (N (k^3 - k))`` over the groups
        of ``t`` tied values in each dataset, as ``scipy.stats.friedmanchisquare``: without
        ties the two are one; with them, datasets that all rank the methods alike give the
        largest value ``N (k - 1)``. 0 when every dataset ties every method.
    friedman_pvalue : float
        From the chi-square distribution with ``k - 1`` degrees of freedom.
    iman_davenport_pvalue : float
        The less conservative F form, ``(N - 1) chi2_F / (N (k - 1) - chi2_F)`` with
        ``(k - 1, (k - 1)(N - 1))`` degrees of freedom; 0 when every dataset ranks
        the methods alike, ties included (F is infinite), NaN for a single dataset.
    critical_difference : float
        Nemenyi ``q_alpha * sqrt(k (k + 1) / (6 N))`` with ``q_alpha`` the studentised
        range quantile divided by ``sqrt(2)``.
    alpha : float
    """

    methods: tuple[str, ...]
    average_rank: NDArray[np.float64]
    friedman_statistic: float
    friedman_pvalue: float
    iman_davenport_pvalue: float
    critical_difference: float
    alpha: float


def compare_methods(
    table: ArrayLike, methods: Sequence[str] | None = None, *, alpha: float = 0.10
) -> MethodComparison:
    """Average ranks, Friedman test and Nemenyi critical difference.

    Parameters
    ----------
    table : array-like of shape (N datasets, k methods)
        Lower is better (e.g. mean test AuRC). Equal values share their mean rank.
    methods : sequence of str, optional
        Names of the columns.
    alpha : float, default 0.10
        Level of the Nemenyi test (the paper reports CD at 0.10).

    Examples
    --------
    >>> from abstain.evaluation import compare_methods
    >>> table = [[1.0, 2.0, 3.0, 4.0]] * 11
    >>> cmp = compare_methods(table, ["a", "b", "c", "d"])
    >>> cmp.average_rank.tolist(), round(cmp.critical_difference, 2)
    ([1.0, 2.0, 3.0, 4.0], 1.26)
    """
    t = as_features(table, "table")
    n, k = t.shape
    if k < 2:
        raise ValueError(f"table must have at least 2 methods (columns); got {k}.")
    names = tuple(methods) if methods is not None else tuple(f"method {j}" for j in range(k))
    if len(names) != k:
        raise ValueError(f"methods must name the {k} columns of table; got {len(names)} names.")
    check_fraction("alpha", alpha)
    ranks = stats.rankdata(t, axis=1)
    avg = ranks.mean(axis=0)
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(avg**2)) - k * (k + 1) ** 2 / 4.0)
    # tie correction: the groups of equal values in each dataset (integers, exact)
    tied = 0
    for row in np.sort(t, axis=1):
        _, sizes = np.unique(row, return_counts=True)
        tied += int(np.sum(sizes.astype(np.int64) ** 3 - sizes))
    correction = 1.0 - tied / (n * (k**3 - k))
    chi2 = chi2 / correction if correction > 0 else 0.0  # every method tied everywhere: 0
    p_chi2 = float(stats.chi2.sf(chi2, k - 1))
    denom = n * (k - 1) - chi2
    if n < 2:
        p_f = math.nan  # no residual degrees of freedom
    elif denom > 0:
        f_stat = (n - 1) * chi2 / denom
        p_f = float(stats.f.sf(f_stat, k - 1, (k - 1) * (n - 1)))
    else:
        p_f = 0.0  # every dataset ranks the methods alike: F is infinite
    q = float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf)) / math.sqrt(2.0)
    cd = q * math.sqrt(k * (k + 1) / (6.0 * n))
    return MethodComparison(names, avg, chi2, p_chi2, p_f, cd, float(alpha))


def plot_critical_difference(comparison: MethodComparison, path: str, *, title: str = "") -> None:
    """Draw the average ranks on an axis with the critical difference (Demsar's diagram).

    Methods whose average ranks differ by less than the CD are joined by a bar.
    Needs matplotlib (``pip install 'abstain[plot]'``).
    """
    k = len(comparison.methods)
    order = np.argsort(comparison.average_rank, kind="stable")
    ranks = comparison.average_rank[order]
    names = [comparison.methods[i] for i in order]
    fig = figure("plot_critical_difference", figsize=(6.0, 1.2 + 0.3 * k))
    ax = fig.add_subplot()
    ax.set_xlim(0.8, k + 0.2)
    ax.set_ylim(-(k + 2), 2.5)
    ax.hlines(0, 1, k, color="black")
    for r in range(1, k + 1):
        ax.vlines(r, -0.1, 0.1, color="black")
        ax.text(r, 0.25, str(r), ha="center", va="bottom", fontsize=8)
    cd = comparison.critical_difference
    ax.hlines(1.6, 1, 1 + cd, color="black", linewidth=2)
    ax.text(1 + cd / 2, 1.8, f"CD = {cd:.2f} (alpha {comparison.alpha:g})", ha="center",
            va="bottom", fontsize=8)
    for i, (name, rank) in enumerate(zip(names, ranks, strict=True)):
        y = -(i + 1)
        ax.vlines(rank, y, 0, color="gray", linewidth=0.8)
        ax.hlines(y, rank, k + 0.1 if i >= k / 2 else 0.9, color="gray", linewidth=0.8)
        x_text = k + 0.15 if i >= k / 2 else 0.85
        ax.text(x_text, y, f"{name} ({rank:.2f})", ha="left" if i >= k / 2 else "right",
                va="center", fontsize=8)
    level = 0
    for i in range(k):  # maximal groups not significantly different
        j = max(j for j in range(i, k) if ranks[j] - ranks[i] < cd)
        if j > i and not any(a <= i and j <= b for a, b in _groups_seen(ranks, cd, i)):
            ax.hlines(-0.4 - 0.25 * level, ranks[i] - 0.03, ranks[j] + 0.03, color="black",
                      linewidth=3)
            level += 1
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=9)
    fig.savefig(path, bbox_inches="tight", dpi=150)


def _groups_seen(ranks: NDArray[np.float64], cd: float, upto: int) -> list[tuple[int, int]]:
    """Groups ``[a, b]`` started before ``upto`` (so a contained group is not drawn twice)."""
    out = []
    for a in range(upto):
        b = max(j for j in range(a, len(ranks)) if ranks[j] - ranks[a] < cd)
        out.append((a, b))
    return out
