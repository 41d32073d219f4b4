"""The safe choice of ``method="auto"``: the best single base score unless a combination
beats it with confidence, on proxy outliers.

Each proxy *task* is three matrices of base scores (columns alike, higher = more OOD
unless ``higher_is_inlier``): inlier rows that fit the z-values, other inlier rows, and
proxy outlier rows. The inlier and outlier rows of each task are shuffled and halved: the
first halves choose, the second halves test.

1. **Choose** (first halves). A candidate's value is its AUROC (ties count one half),
   averaged over the tasks (weighted by ``weights`` where given: proxies of two kinds,
   held-out classes and rotated images, can weigh half each whatever their numbers of
   tasks). The candidates are each single base score (the score itself),
   and, with two or more columns, each combiner of :data:`STATISTICS` on every column and
   on the columns that a greedy forward search picks for it (from the best single
   score, add the column that raises the value most while it rises; ``subsets=False``
   tries every column only). Ties go to the first
   candidate in this order: single scores by column; methods in :data:`STATISTICS`
   order, the greedy subset before every column.
2. **Test** (second halves). The best combination is kept only if its (weighted) mean
   AUROC beats the best single score's in at least ``confidence`` of ``n_bootstrap`` paired
   bootstrap
   resamples (inlier and outlier rows of each task drawn apart, the same draws for
   both; an equal AUROC is no win): the rule of
   :func:`abstain.scores.select_regularization` with ``safe=True``. Otherwise the best
   single score is used. With proxies of several *kinds* (``kinds``: held-out classes and
   rotated images, say), the test is run on each kind apart (its tasks weighted as
   in the choice) and the combination must pass it on every kind: a mean over kinds can
   favour a combination that one kind of outlier shows losing, and the real outliers may
   be of that kind.
3. **Veto** (``veto=True``, the default). The same resamples give, on each task alone,
   the fraction where the combination is above the single score (``task_win_fractions``)
   and the fraction where it is below (``task_loss_fractions``; an equal AUROC is
   neither). A combination below on some task in at least ``confidence`` of the resamples
   is not kept, whatever its mean: a task is one proxy for the real outliers, and a
   combination that one of them shows losing with confidence can lose on the real ones
   (the three losses of the benchmark of docs/combining.md without the veto). Requiring
   the *win* on every task instead (each task a kind of its own:
   ``BankDetector(per_task=True)``) forgoes most wins.

The statistics of the final object are computed afresh on rows that calibrate nothing
else, so a guarantee calibrated afterwards on its own rows still holds.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._core.validation import F64, as_matrix, plain
from ._pvalues import EmpiricalZ
from ._qp import check_positive_definite, inlier_covariance
from ._statistics import GLRT_METHODS, STATISTICS, combine

#: The least inlier and outlier rows of a task: two to choose and two to test.
MIN_ROWS = 4
#: The least inlier rows that ``auto`` halves into z-value rows (the smaller half, at least
#: 2) and proxy inliers (the larger half, at least :data:`MIN_ROWS`).
MIN_HALVED = 2 * MIN_ROWS - 1


def canonical_rows(S: F64) -> NDArray[np.intp]:
    """The rows of ``S`` sorted by their values (first column first): seeded draws index
    this order, so the same rows in another order give the same choice (drawn by position,
    a shuffle of the rows changed what a fixed ``random_state`` chose)."""
    return np.lexsort(S.T[::-1]) if S.shape[0] else np.zeros(0, dtype=np.intp)


class _Half:
    """One half of one task: raw base scores, their z-values and OOD labels."""

    def __init__(self, raw: F64, Z: F64, n_in: int) -> None:
        self.raw, self.Z, self.n_in = raw, Z, n_in
        self.is_ood = np.arange(raw.shape[0]) >= n_in


class _Task:
    def __init__(self, S_z: F64, S_in: F64, S_out: F64, sign: float, sigma: float,
                 rng: np.random.Generator, task: str) -> None:
        ez = EmpiricalZ().fit(sign * S_z)
        self.cov = inlier_covariance(ez.transform(sign * S_z), sigma)
        check_positive_definite(  # glrt_cov, a candidate, needs it
            self.cov, f"the inlier covariance of the z-value rows{task} (with "
            f"sigma={sigma!r})", "; give sigma > 0, a ridge (the paper uses 1e-6)")
        a = canonical_rows(S_in)[rng.permutation(S_in.shape[0])]
        b = canonical_rows(S_out)[rng.permutation(S_out.shape[0])]
        ha, hb = S_in.shape[0] // 2, S_out.shape[0] // 2
        halves = []
        for rows_in, rows_out in ((a[:ha], b[:hb]), (a[ha:], b[hb:])):
            raw = sign * np.vstack([S_in[rows_in], S_out[rows_out]])
            halves.append(_Half(raw, ez.transform(raw), rows_in.size))
        self.choose, self.test = halves


def statistic(half: _Half, method: str, columns: tuple[int, ...], cov: F64,
              epsilon: float | None) -> F64:
    """A candidate's statistic on one half (higher = more OOD)."""
    if method == "single":
        return half.raw[:, columns[0]]
    cols = list(columns)
    kw: dict[str, Any] = {"epsilon": epsilon} if method in GLRT_METHODS else {}
    if method == "glrt_cov":
        kw["cov"] = cov[np.ix_(cols, cols)]
    return combine(half.Z[:, cols], method, **kw)


def _groups(stat: F64, n_in: int) -> tuple[NDArray[np.intp], NDArray[np.intp], int]:
    """Tie-group ids of the inlier and the outlier rows of one statistic."""
    _, inverse = np.unique(stat, return_inverse=True)
    return inverse[:n_in], inverse[n_in:], int(inverse.max()) + 1


def _exact_auroc(half: _Half, stat: F64) -> Fraction:
    """The AUROC of ``stat`` on ``half`` (inlier rows first), OOD positive and ties one
    half, as a fraction of pair counts."""
    g_in, g_out, n_groups = _groups(stat, half.n_in)
    n_out = stat.size - half.n_in
    pairs = weighted_pairs(g_in, g_out, n_groups, np.ones(half.n_in), np.ones(n_out))
    return Fraction(pairs) / (half.n_in * n_out)


def weighted_auroc(g_in: NDArray[np.intp], g_out: NDArray[np.intp], n_groups: int,
                   w_in: NDArray[np.float64], w_out: NDArray[np.float64]) -> float:
    """AUROC of rows weighted by draw counts: ``P(out > in) + P(out == in) / 2`` over the
    weighted pairs, from the tie groups of the statistic (group ids ascending in value).
    Equal to :func:`abstain.metrics.auroc` on the rows repeated by their counts."""
    return weighted_pairs(g_in, g_out, n_groups, w_in, w_out) / float(w_in.sum() * w_out.sum())


def weighted_pairs(g_in: NDArray[np.intp], g_out: NDArray[np.intp], n_groups: int,
                   w_in: NDArray[np.float64], w_out: NDArray[np.float64]) -> float:
    """The numerator of :func:`weighted_auroc`: the weighted (inlier, outlier) pairs with the
    outlier above, ties counted one half. Exact for whole draw counts (every term and
    partial sum is a multiple of 1/2 below ``2**52`` while the draws' pairs are)."""
    a = np.bincount(g_in, weights=w_in, minlength=n_groups)
    b = np.bincount(g_out, weights=w_out, minlength=n_groups)
    below = np.cumsum(a) - a
    return float(np.dot(b, below + 0.5 * a))


def _as_tasks(tasks: list[tuple[Any, Any, Any]]) -> tuple[list[tuple[F64, F64, F64]], int]:
    if not tasks:
        raise ValueError("tasks must hold at least one proxy task; got none.")
    out, m = [], None
    for t, (S_z, S_in, S_out) in enumerate(tasks):
        mats = []
        for what, S, least in (("inlier rows for the z-values", S_z, 2),
                               ("proxy inlier rows", S_in, MIN_ROWS),
                               ("proxy outlier rows", S_out, MIN_ROWS)):
            arr = as_matrix(S, f"the {what} of proxy task {t}", columns="n_scores")
            if arr.shape[0] < least:
                raise ValueError(f"the {what} of proxy task {t} must hold at least {least} "
                                 f"rows (half to choose, half to test); got {arr.shape[0]}.")
            if m is None:
                m = arr.shape[1]
            elif arr.shape[1] != m:
                raise ValueError(f"the {what} of proxy task {t} must have {m} columns, one "
                                 f"per base score; got {arr.shape[1]}.")
            mats.append(arr)
        out.append((mats[0], mats[1], mats[2]))
    assert m is not None
    return out, m


def check_weights(weights: Any, n_tasks: int) -> NDArray[np.float64] | None:
    """``weights`` of ``n_tasks`` proxy tasks as positive finite floats (None: equal)."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64) if np.ndim(weights) == 1 else None
    if w is None or w.size != n_tasks or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be {n_tasks} positive finite numbers, one per proxy "
                         f"task; got {plain(weights)}.")
    return w


def check_kinds(kinds: Any, n_tasks: int) -> list[NDArray[np.intp]]:
    """The tasks of each kind (in order of first appearance) from ``kinds``, one hashable
    label per task (None: one kind)."""
    if kinds is None:
        return [np.arange(n_tasks)]
    labels = list(kinds) if isinstance(kinds, (list, tuple, np.ndarray)) else None
    first: dict[Any, list[int]] = {}
    try:
        for t, label in enumerate(labels or ()):
            first.setdefault(label.item() if isinstance(label, np.generic) else label,
                             []).append(t)
    except TypeError:  # an unhashable label
        labels = None
    if labels is None or len(labels) != n_tasks:
        raise ValueError(f"kinds must be {n_tasks} labels (numbers or strings), one per "
                         f"proxy task; got {plain(kinds)}.")
    return [np.array(ts, dtype=np.intp) for ts in first.values()]


def select_statistic(tasks: list[tuple[Any, Any, Any]], *, higher_is_inlier: bool = False,
                     epsilon: float | None = None, sigma: float = 1e-6,
                     confidence: float = 0.9, n_bootstrap: int = 500, subsets: bool = True,
                     veto: bool = True, rng: np.random.Generator, weights: Any = None,
                     kinds: Any = None) -> dict[str, Any]:
    """The choice of ``method="auto"`` on proxy ``tasks`` (see the module docstring).

    ``kinds`` (one label per task, default one kind) groups the tasks by kind of proxy:
    a combination must pass the paired test on each kind.

    Returns the selection record that :class:`ScoreCombiner` keeps as ``selection_``:
    ``method`` (``"single"`` or a combiner) and ``columns`` (what is used), the best
    single score (``single``, ``single_auroc``), the best combination
    (``combination_method``, ``combination_columns``, ``combination_auroc``; None with
    one column), ``win_fraction`` (the least over the kinds; None with one column),
    ``kind_win_fractions`` (one per kind, in order of first appearance; None with one
    column), ``task_win_fractions`` and ``task_loss_fractions`` (one per task, in task
    order: the fractions of the same resamples where the combination is above, and below,
    the single score on that task alone; with ``veto``, a loss fraction at ``confidence``
    or more keeps the single score; None with one column) and ``candidates`` (every
    candidate tried with its AUROC on the choosing halves).
    """
    checked, m = _as_tasks(tasks)
    w = check_weights(weights, len(checked))
    groups = check_kinds(kinds, len(checked))
    # each task's share of the mean, exact: equal weights give the plain mean (and unscaled
    # differences in the test); float shares w / w.sum() of weights 2 and 3 are not in the
    # ratio 2:3, and a weighted tie would not sum to 0
    if w is None:
        share, norm = [Fraction(1)] * len(checked), len(checked)
    else:
        total = sum(Fraction(float(x)) for x in w)
        share, norm = [Fraction(float(x)) / total for x in w], 1
    sign = -1.0 if higher_is_inlier else 1.0
    prepared = [_Task(S_z, S_in, S_out, sign, sigma, rng,
                      f" of proxy task {t}" if len(checked) > 1 else "")
                for t, (S_z, S_in, S_out) in enumerate(checked)]
    # the mean AUROC of each candidate on the choosing halves, exact (a fraction of pair
    # counts), so that equal means tie and ties go to the first candidate: rounded means of
    # 2/3 came out 0.6666666666666666 and 0.6666666666666667
    exact: dict[tuple[str, tuple[int, ...]], Fraction] = {}
    order: list[tuple[str, tuple[int, ...]]] = []

    def value(method: str, columns: tuple[int, ...]) -> Fraction:
        key = (method, tuple(sorted(columns)))
        if key not in exact:
            exact[key] = sum((part * _exact_auroc(t.choose, statistic(t.choose, *key, t.cov,
                                                                       epsilon))
                              for t, part in zip(prepared, share, strict=True)),
                             Fraction(0)) / norm
        return exact[key]

    singles = [value("single", (j,)) for j in range(m)]
    best_j = max(range(m), key=lambda j: (singles[j], -j))  # the first of equal values
    order += [("single", (j,)) for j in range(m)]
    combos: list[tuple[str, tuple[int, ...]]] = []
    if m >= 2:
        for method in STATISTICS:
            cols: tuple[int, ...] = (best_j,)
            current = Fraction(-1)
            # glrt_cov: a QP per row, every column only
            while subsets and len(cols) < m and method != "glrt_cov":
                rest = [c for c in range(m) if c not in cols]
                gains = [value(method, (*cols, c)) for c in rest]
                k = max(range(len(rest)), key=lambda i: (gains[i], -i))
                if gains[k] <= current:
                    break
                cols, current = tuple(sorted((*cols, rest[k]))), gains[k]
            if 2 <= len(cols) < m:
                combos.append((method, cols))
            combos.append((method, tuple(range(m))))
            value(method, tuple(range(m)))
    order += combos
    values = {key: float(v) for key, v in exact.items()}
    record: dict[str, Any] = {
        "criterion": "auroc", "n_tasks": len(prepared), "method": "single",
        "columns": [best_j], "single": best_j, "single_auroc": values[("single", (best_j,))],
        "combination_method": None, "combination_columns": None, "combination_auroc": None,
        "win_fraction": None, "kind_win_fractions": None, "task_win_fractions": None,
        "task_loss_fractions": None,
        "candidates": [{"method": meth, "columns": list(cols), "auroc": values[(meth, cols)]}
                       for meth, cols in order]}
    if not combos:
        return record
    best_c = max(combos, key=lambda c: (exact[c], -combos.index(c)))
    record.update(combination_method=best_c[0], combination_columns=list(best_c[1]),
                  combination_auroc=values[best_c])
    single = ("single", (best_j,))
    each, won, lost = [], np.zeros(len(prepared)), np.zeros(len(prepared))
    for ts in groups:
        kind, won[ts], lost[ts] = _paired_wins([prepared[t] for t in ts], single, best_c,
                                               epsilon, int(n_bootstrap), rng,
                                               [share[t] for t in ts])
        each.append(kind)
    wins = min(each)
    record.update(win_fraction=wins, kind_win_fractions=each,
                  task_win_fractions=[float(v) for v in won],
                  task_loss_fractions=[float(v) for v in lost])
    if keeps(wins, record["task_loss_fractions"], float(confidence), veto):
        record.update(method=best_c[0], columns=list(best_c[1]))
    return record


def keeps(win_fraction: float, task_loss_fractions: list[float], confidence: float,
          veto: bool) -> bool:
    """The rule of ``auto``: whether the best combination is kept (its least win fraction
    over the kinds reaches ``confidence`` and, with ``veto``, no task shows it below the
    single score in ``confidence`` of the resamples or more)."""
    return win_fraction >= confidence and not (
        veto and max(task_loss_fractions, default=0.0) >= confidence)


def _paired_wins(prepared: list[_Task], single: tuple[str, tuple[int, ...]],
                 combo: tuple[str, tuple[int, ...]], epsilon: float | None, n_boot: int,
                 rng: np.random.Generator, share: list[Fraction],
                 ) -> tuple[float, F64, F64]:
    """Fraction of paired resamples of the test halves where ``combo``'s mean AUROC
    (weighted by ``share``) is above ``single``'s, and the fractions of the same resamples
    where it is above, and below, on each task alone. An equal AUROC is neither a win nor
    a loss: the tasks' gaps are exact (differences of whole pair counts) and their weighted
    sum is compared in fractions, where a sum of rounded gaps could leave an exact tie a
    little above 0."""
    groups = []
    for t in prepared:
        h = t.test
        groups.append([_groups(statistic(h, *cand, t.cov, epsilon), h.n_in)
                       for cand in (single, combo)])
    wins, task_wins, task_losses = 0, np.zeros(len(prepared)), np.zeros(len(prepared))
    for _ in range(n_boot):
        diff = Fraction(0)
        for i, (t, g, part) in enumerate(zip(prepared, groups, share, strict=True)):
            n_in, n_out = t.test.n_in, t.test.raw.shape[0] - t.test.n_in
            w_in = np.bincount(rng.integers(0, n_in, n_in), minlength=n_in).astype(np.float64)
            w_out = np.bincount(rng.integers(0, n_out, n_out),
                                minlength=n_out).astype(np.float64)
            gap = weighted_pairs(*g[1], w_in, w_out) - weighted_pairs(*g[0], w_in, w_out)
            task_wins[i] += gap > 0.0
            task_losses[i] += gap < 0.0
            if gap:
                diff += part * Fraction(gap) / (n_in * n_out)
        wins += diff > 0
    return wins / n_boot, task_wins / n_boot, task_losses / n_boot


def describe(record: dict[str, Any], confidence: float | None = None,
             veto: bool = True) -> str:
    """One line on what ``method="auto"`` chose and why (``confidence`` and ``veto``: the
    rule's, to name a veto)."""
    single = f"single score {record['single']} (AUROC {record['single_auroc']:.4f})"
    if record["combination_method"] is None:
        return f"{single}: one base score, nothing to combine"
    combo = (f"{record['combination_method']} of columns {record['combination_columns']} "
             f"(AUROC {record['combination_auroc']:.4f})")
    each = record.get("kind_win_fractions") or []
    # shares of resamples as they are, not rounded to whole percents: 0.895 read "90%",
    # "too few to keep it" at a confidence of 0.9
    won = (f"won {' and '.join(f'{v * 100:.10g}%' for v in each)} of paired resamples on the "
           f"{len(each)} kinds of proxy" if len(each) > 1 else
           f"won {record['win_fraction'] * 100:.10g}% of paired resamples")
    tasks = record.get("task_win_fractions") or []
    lost = sum(v < 0.5 for v in tasks)
    apart = (f"; taken alone, {lost} of the {len(tasks)} proxy tasks show it above in "
             f"under half of the resamples" if lost and len(tasks) > 1 else "")
    if record["method"] == "single":
        losses = record.get("task_loss_fractions") or []
        if confidence is None or record["win_fraction"] < confidence:
            return f"{single}; the best combination, {combo}, {won}, too few to keep it{apart}"
        # kept the single score although the mean won: the veto of a task alone, or
        # settings changed after the fit
        t = max(range(len(losses)), key=lambda i: (losses[i], -i)) if losses else None
        if t is None or not veto or losses[t] < confidence:
            return f"{single}; the best combination, {combo}, {won}, not kept at the fit"
        return (f"{single}; the best combination, {combo}, {won}, but proxy task {t} alone "
                f"shows it below in {losses[t] * 100:.10g}% of them (veto)")
    return f"{combo}, which {won} against the {single}{apart}"


def check_record(record: Any, n_scores: int, confidence: float | None = None,
                 veto: bool = True) -> None:
    """Raise unless a loaded selection record is consistent with itself (and, given the
    ``confidence`` and ``veto`` of its combiner, with the rule that chose: :func:`keeps`)."""
    cols = record["columns"]
    if any(not 0 <= c < n_scores for c in cols) or (
            record["method"] == "single") != (len(cols) == 1):
        raise ValueError(f"fitted.selection_.columns must be 1 column for method 'single' and "
                         f"2 or more otherwise, each in 0..{n_scores - 1}; got {plain(cols)} with "
                         f"method {record['method']!r}.")
    combo = record["combination_method"], record["combination_columns"]
    won = record["win_fraction"]
    if (combo[0] is None) != (combo[1] is None) or (combo[0] is None) != (won is None):
        raise ValueError("fitted.selection_.combination_method, combination_columns and "
                         "win_fraction must all be null (no combination tried) or all be given.")
    if not 0 <= record["single"] < n_scores:
        raise ValueError(f"fitted.selection_.single must be a column in 0..{n_scores - 1}; got "
                         f"{record['single']}.")
    chose_single = record["method"] == "single"
    if chose_single and cols != [record["single"]]:
        raise ValueError(f"fitted.selection_.columns must be [single] = [{record['single']}] "
                         f"for method 'single'; got {plain(cols)}.")
    if not chose_single and (record["method"], cols) != (combo[0], combo[1]):
        raise ValueError(f"fitted.selection_.method and columns must be the combination tried "
                         f"({combo[0]!r}, {plain(combo[1])}); got {record['method']!r}, "
                         f"{plain(cols)}.")
    kinds = record.get("kind_win_fractions")
    if won is not None and kinds is not None and won != min(kinds):
        raise ValueError(f"fitted.selection_.win_fraction must be the least of "
                         f"kind_win_fractions ({plain(min(kinds))}); got {plain(won)}.")
    losses = record.get("task_loss_fractions")
    if (won is None) != (losses is None):
        raise ValueError("fitted.selection_.task_loss_fractions must be null exactly when "
                         "win_fraction is.")
    for field in ("task_win_fractions", "task_loss_fractions"):
        tasks = record.get(field)
        if tasks is not None and len(tasks) != record["n_tasks"]:
            raise ValueError(f"fitted.selection_.{field} must hold one fraction per proxy "
                             f"task (n_tasks={record['n_tasks']}); got {len(tasks)}.")
    won_each, lost_each = record.get("task_win_fractions"), record.get("task_loss_fractions")
    if won_each is not None and lost_each is not None and any(
            a + b > 1.0 + 1e-12 for a, b in zip(won_each, lost_each, strict=True)):
        raise ValueError("fitted.selection_.task_win_fractions and task_loss_fractions must "
                         "not sum to more than 1 on a task (shares of the same resamples).")
    if confidence is not None and won is not None and keeps(
            won, losses, confidence, veto) == chose_single:
        rule = (" and no task_loss_fractions entry reaches it" if veto else "")
        raise ValueError(f"fitted.selection_ must keep the combination exactly when its "
                         f"win_fraction reaches params.confidence = {plain(confidence)}"
                         f"{rule}; got win_fraction {plain(won)} with method "
                         f"{record['method']!r}.")
    tried = {(c["method"], tuple(sorted(c["columns"]))): c["auroc"]
             for c in record["candidates"]}
    named = [j for _, c in tried for j in c] + list(combo[1] or [])
    if any(not 0 <= j < n_scores for j in named):
        raise ValueError(f"fitted.selection_ candidates and combination_columns must name "
                         f"columns in 0..{n_scores - 1}; got one outside.")
    # the numbers summarised are the candidates' own, as select_statistic copies them
    if tried.get(("single", (record["single"],))) != record["single_auroc"]:
        raise ValueError(f"fitted.selection_.single_auroc must be the AUROC of the candidate "
                         f"of method 'single' and columns [{record['single']}] in "
                         f"fitted.selection_.candidates; got {plain(record['single_auroc'])}.")
    if combo[0] is not None and tried.get((combo[0], tuple(sorted(combo[1])))) != record[
            "combination_auroc"]:
        raise ValueError(f"fitted.selection_.combination_auroc must be the AUROC of the "
                         f"candidate of method {combo[0]!r} and columns {plain(combo[1])} in "
                         f"fitted.selection_.candidates; got another value.")
    # the choice is the candidates' best (their AUROCs are the exact means correctly
    # rounded, so the best's is the largest float among them)
    for what, field, pick in (("single", "single_auroc", True),
                              ("combination", "combination_auroc", False)):
        pool = [v for (meth, _), v in tried.items() if (meth == "single") == pick]
        if record[field] is not None and pool and record[field] != max(pool):
            raise ValueError(f"fitted.selection_.{field} must be the largest AUROC of the "
                             f"{what} candidates ({plain(max(pool))}); got "
                             f"{plain(record[field])}.")
