"""abstain.combine._select: method="auto" against a transcription of its protocol with
brute-force AUROCs (a double loop over ID x OOD pairs) and a plain resampling loop."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest

from abstain import load_json
from abstain.combine import STATISTICS, EmpiricalZ, ScoreCombiner, combine, inlier_covariance
from abstain.combine._select import canonical_rows, select_statistic, weighted_auroc
from abstain.metrics import auroc


def _pair_auroc(s_in, s_out):
    """P(out > in) + P(out == in) / 2 by a double loop over the pairs."""
    total = 0.0
    for a in s_in:
        for b in s_out:
            total += 1.0 if b > a else 0.5 if b == a else 0.0
    return total / (len(s_in) * len(s_out))


@pytest.mark.parametrize("seed", range(5))
def test_weighted_auroc_is_the_auroc_of_the_repeated_rows(seed):
    rng = np.random.default_rng(seed)
    n_in, n_out = 30, 20
    stat = rng.integers(0, 6, n_in + n_out).astype(float)  # many ties
    _, inv = np.unique(stat, return_inverse=True)
    w_in = rng.integers(0, 3, n_in).astype(float)
    w_out = rng.integers(0, 3, n_out).astype(float)
    w_in[0] = w_out[0] = 1.0
    got = weighted_auroc(inv[:n_in], inv[n_in:], int(inv.max()) + 1, w_in, w_out)
    rows_in = np.repeat(stat[:n_in], w_in.astype(int))
    rows_out = np.repeat(stat[n_in:], w_out.astype(int))
    assert got == pytest.approx(_pair_auroc(rows_in, rows_out), abs=1e-12)


def test_paired_wins_count_no_exact_tie_of_the_mean_auroc_as_a_win():
    """With two proxy tasks the weighted gaps were summed in floats: a resample where the
    mean AUROCs tie exactly could sum just above 0 and count as a win (0.895 for 0.88 on
    these rows: five exact ties). Against the same draws in fractions."""
    from fractions import Fraction
    from types import SimpleNamespace

    from abstain.combine._select import _Half, _paired_wins

    def exact(s_in, s_out, w_in, w_out):
        num = sum(Fraction(int(a) * int(b)) * (1 if y > x else Fraction(1, 2) if y == x else 0)
                  for x, a in zip(s_in, w_in, strict=True)
                  for y, b in zip(s_out, w_out, strict=True))
        return num / (int(w_in.sum()) * int(w_out.sum()))

    rng0 = np.random.default_rng(0)
    tasks = []
    for _ in range(2):
        raw = rng0.integers(0, 3, (6, 2)).astype(float)
        tasks.append(SimpleNamespace(test=_Half(raw, raw, 3), cov=None))
    share = np.array([0.5, 0.5])
    got, won, lost = _paired_wins(tasks, ("single", (0,)), ("single", (1,)), None, 200,
                                  np.random.default_rng(2), share)
    rng = np.random.default_rng(2)
    wins = ties = 0
    above, below = np.zeros(2), np.zeros(2)
    for _ in range(200):
        d = Fraction(0)
        for i, t in enumerate(tasks):
            raw = t.test.raw
            w_in = np.bincount(rng.integers(0, 3, 3), minlength=3)
            w_out = np.bincount(rng.integers(0, 3, 3), minlength=3)
            gap = (exact(raw[:3, 1], raw[3:, 1], w_in, w_out)
                   - exact(raw[:3, 0], raw[3:, 0], w_in, w_out))
            above[i] += gap > 0
            below[i] += gap < 0  # an exact tie on a task is neither
            d += Fraction(1, 2) * gap
        wins += d > 0
        ties += d == 0
    assert ties > 0
    assert got == wins / 200
    np.testing.assert_array_equal(won, above / 200)
    np.testing.assert_array_equal(lost, below / 200)
    assert np.all(won + lost < 1)  # the tasks tie exactly in some resamples


def _reference(S_z, S_in, S_out, seed, n_boot, confidence=0.9):
    """The protocol of the module docstring, written out with the double-loop AUROC."""
    gen = np.random.default_rng(seed)
    ez = EmpiricalZ().fit(S_z)
    cov = inlier_covariance(ez.transform(S_z))
    a = canonical_rows(S_in)[gen.permutation(len(S_in))]
    b = canonical_rows(S_out)[gen.permutation(len(S_out))]
    ha, hb = len(S_in) // 2, len(S_out) // 2
    halves = [(np.vstack([S_in[a[:ha]], S_out[b[:hb]]]), ha),
              (np.vstack([S_in[a[ha:]], S_out[b[hb:]]]), len(S_in) - ha)]
    m = S_z.shape[1]

    def stat(raw, method, cols):
        if method == "single":
            return raw[:, cols[0]]
        kw = {"cov": cov[np.ix_(cols, cols)]} if method == "glrt_cov" else {}
        return combine(ez.transform(raw)[:, list(cols)], method, **kw)

    def value(method, cols, half=0):
        raw, n = halves[half]
        s = stat(raw, method, cols)
        return _pair_auroc(s[:n], s[n:])

    singles = [value("single", (j,)) for j in range(m)]
    best = int(np.argmax(singles))
    # every subset of two or more columns, for each statistic: the greedy path must pick a
    # subset whose value is at least that of the full set's, and the full set is a candidate
    combos = {}
    for method in STATISTICS:
        combos[(method, tuple(range(m)))] = value(method, tuple(range(m)))
        for size in range(2, m):
            for cols in combinations(range(m), size):
                combos.setdefault((method, cols), value(method, cols))
    raw, n = halves[1]
    return singles, best, combos, raw, n, gen


def test_auto_follows_its_protocol_on_tied_scores():
    rng = np.random.default_rng(0)
    m = 3
    S_z = np.round(rng.normal(size=(60, m)), 1)
    S_in = np.round(rng.normal(size=(40, m)), 1)
    S_out = np.round(rng.normal(size=(30, m)) + [0.8, 0.5, 0.0], 1)
    n_boot = 60
    record = select_statistic([(S_z, S_in, S_out)], n_bootstrap=n_boot,
                              rng=np.random.default_rng(7))
    singles, best, combos, raw, n, gen = _reference(S_z, S_in, S_out, 7, n_boot)
    assert record["single"] == best
    assert record["single_auroc"] == pytest.approx(singles[best], abs=1e-12)
    for cand in record["candidates"]:
        key = (cand["method"], tuple(cand["columns"]))
        want = singles[key[1][0]] if key[0] == "single" else combos[key]
        assert cand["auroc"] == pytest.approx(want, abs=1e-12), key
    # the best combination is the best candidate tried, and no subset's full set is better
    tried = [c for c in record["candidates"] if c["method"] != "single"]
    top = max(c["auroc"] for c in tried)
    assert record["combination_auroc"] == top
    first = next(c for c in tried if c["auroc"] == top)
    assert (record["combination_method"], record["combination_columns"]) == (
        first["method"], first["columns"])
    # the test: paired resamples of the second halves, drawn from the same generator
    cols = tuple(record["combination_columns"])
    ez = EmpiricalZ().fit(S_z)
    cov = inlier_covariance(ez.transform(S_z))
    kw = {"cov": cov[np.ix_(cols, cols)]} if record["combination_method"] == "glrt_cov" else {}
    s_single = raw[:, best]
    s_combo = combine(ez.transform(raw)[:, list(cols)], record["combination_method"], **kw)
    n_out = raw.shape[0] - n
    wins = 0
    for _ in range(n_boot):
        i = gen.integers(0, n, n)
        o = n + gen.integers(0, n_out, n_out)
        wins += auroc(np.r_[np.zeros(n), np.ones(n_out)], np.r_[s_combo[i], s_combo[o]]) > \
            auroc(np.r_[np.zeros(n), np.ones(n_out)], np.r_[s_single[i], s_single[o]])
    assert record["win_fraction"] == wins / n_boot
    keep = wins / n_boot >= 0.9
    assert record["method"] == (record["combination_method"] if keep else "single")


def test_ties_go_to_the_first_column_and_the_first_statistic():
    rng = np.random.default_rng(1)
    col = rng.normal(size=(200, 1))
    S = np.hstack([col, col])  # two equal base scores: every candidate ties its twin
    out = np.hstack([c := rng.normal(size=(80, 1)) + 1.0, c])
    record = select_statistic([(S[:100], S[100:], out)], n_bootstrap=50,
                              rng=np.random.default_rng(0))
    assert record["single"] == 0
    # equal columns: a combination ranks as the single score's z-value (coarser than the
    # score itself), so it does not win with confidence
    assert record["method"] == "single" and record["win_fraction"] < 0.9
    tied = [c for c in record["candidates"] if c["method"] != "single"
            and c["auroc"] == record["combination_auroc"]]
    assert record["combination_method"] == tied[0]["method"]


def test_one_base_score_has_nothing_to_combine():
    rng = np.random.default_rng(2)
    comb = ScoreCombiner(random_state=0).fit(rng.normal(size=(40, 1)),
                                             rng.normal(size=(20, 1)) + 2)
    assert comb.method_ == "single" and comb.selection_["win_fraction"] is None
    assert "nothing to combine" in comb.summary()
    S = rng.normal(size=(5, 1))
    np.testing.assert_array_equal(comb.score(S), S[:, 0])
    flipped = ScoreCombiner(random_state=0, higher_is_inlier=True).fit(
        rng.normal(size=(40, 1)), rng.normal(size=(20, 1)) - 2)
    np.testing.assert_array_equal(flipped.score(S), -S[:, 0])


def test_auto_uses_several_tasks_and_averages_them():
    rng = np.random.default_rng(3)
    tasks = [(rng.normal(size=(50, 3)), rng.normal(size=(40, 3)),
              rng.normal(size=(20, 3)) + shift) for shift in ([1.0, 0, 0], [0, 1.0, 0])]
    record = select_statistic(tasks, n_bootstrap=20, rng=np.random.default_rng(0))
    assert record["n_tasks"] == 2
    # one task favours column 0, the other column 1: each single is 1 of 2 good
    assert record["single"] in (0, 1)


def test_task_weights_weigh_the_tasks_aurocs():
    """A candidate's value is the weighted mean of its tasks' AUROCs: linear in the
    weights (the same halves for any weights, drawn before them); equal weights are the
    plain mean."""
    rng = np.random.default_rng(3)
    tasks = [(rng.normal(size=(50, 3)), rng.normal(size=(40, 3)),
              rng.normal(size=(20, 3)) + shift) for shift in ([1.0, 0, 0], [0, 1.0, 0])]

    def values(weights):
        record = select_statistic(tasks, n_bootstrap=20, rng=np.random.default_rng(0),
                                  weights=weights)
        return {(c["method"], tuple(c["columns"])): c["auroc"] for c in record["candidates"]}

    plain, even, a, b = values(None), values([2.0, 2.0]), values([3.0, 1.0]), values([1.0, 3.0])
    singles = [("single", (j,)) for j in range(3)]
    for key in singles:
        assert even[key] == pytest.approx(plain[key], rel=1e-15)
        assert a[key] + b[key] == pytest.approx(2 * plain[key], rel=1e-12)
    # task 0's outliers stand out in column 0, task 1's in column 1
    assert a[singles[0]] > b[singles[0]] and a[singles[1]] < b[singles[1]]
    for bad in ([1.0], [1.0, 0.0], [1.0, np.nan], "ab"):
        with pytest.raises(ValueError, match="weights must be 2 positive finite numbers"):
            select_statistic(tasks, rng=np.random.default_rng(0), weights=bad)


def test_auto_round_trips_and_a_disagreeing_document_is_refused():
    rng = np.random.default_rng(4)
    S_in = rng.normal(size=(300, 3))
    comb = ScoreCombiner(random_state=0, n_bootstrap=50).fit(S_in, rng.normal(size=(100, 3)) + 0.7)
    new = rng.normal(size=(20, 3))
    loaded = load_json(comb.to_json())
    np.testing.assert_array_equal(loaded.score(new), comb.score(new))
    assert loaded.selection_ == comb.selection_ and loaded.summary() == comb.summary()
    doc = json.loads(comb.to_json())
    doc["fitted"]["columns_"] = [0]
    with pytest.raises(ValueError, match="fitted.method_ and fitted.columns_ must be"):
        load_json(json.dumps(doc))
    doc = json.loads(comb.to_json())
    doc["fitted"]["selection_"]["columns"] = [0, 7]
    with pytest.raises(ValueError, match="columns must be 1 column for method 'single' and 2 or"):
        load_json(json.dumps(doc))
    # a negative column counted from the end: another column, used twice
    doc = json.loads(comb.to_json())
    record = doc["fitted"]["selection_"]
    if record["method"] != "single":
        cols = [-1, *record["columns"][1:]]
        doc["fitted"]["columns_"] = record["columns"] = record["combination_columns"] = cols
    else:
        doc["fitted"]["columns_"] = record["columns"] = [-1]
        record["single"] = -1
    with pytest.raises(ValueError, match=r"in 0\.\.2; got \[-1"):
        load_json(json.dumps(doc))
    doc = json.loads(comb.to_json())
    assert len(doc["fitted"]["selection_"]["task_win_fractions"]) == 1
    doc["fitted"]["selection_"]["task_win_fractions"] = [1.0, 0.5]
    with pytest.raises(ValueError, match=r"task_win_fractions must hold one fraction per "
                                         r"proxy task \(n_tasks=1\); got 2\."):
        load_json(json.dumps(doc))
    doc = json.loads(comb.to_json())
    doc["params"]["method"] = "fisher"
    with pytest.raises(ValueError, match="fitted.selection_ must be a record for method 'auto'"):
        load_json(json.dumps(doc))
    # numbers of the summary that are not the candidates' or the kinds' own
    for key, value, message in (
            ("single_auroc", 1.0, r"single_auroc must be the AUROC of the candidate of method "
                                  r"'single'"),
            ("combination_auroc", 0.0, r"combination_auroc must be the AUROC of the candidate"),
            ("win_fraction", 0.0, r"win_fraction must be the least of kind_win_fractions"),
            ("candidates", [{"method": "fisher", "columns": [0, 1, 3], "auroc": 0.5}],
             r"candidates and combination_columns must name columns in 0\.\.2")):
        doc = json.loads(comb.to_json())
        if key == "candidates":
            value = doc["fitted"]["selection_"]["candidates"] + value
        doc["fitted"]["selection_"][key] = value
        with pytest.raises(ValueError, match=message):
            load_json(json.dumps(doc))


def test_bad_input():
    rng = np.random.default_rng(5)
    S = rng.normal(size=(40, 3))
    with pytest.raises(ValueError, match="S_outliers must be given with method='auto'"):
        ScoreCombiner().fit(S)
    with pytest.raises(ValueError, match="S_outliers is used only by method='auto'"):
        ScoreCombiner(method="glrt").fit(S, S)
    with pytest.raises(ValueError, match=r"S_outliers must have 3 column\(s\)"):
        ScoreCombiner().fit(S, S[:, :2])
    with pytest.raises(ValueError, match="S_outliers must hold at least 4 rows"):
        ScoreCombiner().fit(S, S[:3])
    with pytest.raises(ValueError, match="proxy outlier rows of proxy task 1 must have 3 "
                                         "columns"):
        select_statistic([(S, S, S), (S, S, S[:, :2])], rng=np.random.default_rng(0))
    # half of S_train (the smaller, >= 2) fits the z-values, the other (>= 4) are proxy inliers
    with pytest.raises(ValueError, match=r"S_train must hold at least 7 rows .* got 6\."):
        ScoreCombiner().fit(S[:6], S)
    ScoreCombiner(n_bootstrap=20, random_state=0).fit(S[:7], S)
    # auto with sigma=0 on two equal columns: the user's sigma, not an inner call's, is named
    twin = np.c_[S[:, :1], S]
    with pytest.raises(ValueError, match=r"^the inlier covariance of the z-value rows \(with "
                                         r"sigma=0.0\) must be symmetric positive definite.*"
                                         r"give sigma > 0"):
        ScoreCombiner(sigma=0.0, n_bootstrap=20, random_state=0).fit(twin, twin + 1)
    bad = S.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ScoreCombiner().fit(S, bad)
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        ScoreCombiner(confidence=1.0).fit(S, S)
    with pytest.raises(ValueError, match="method must be one of 'glrt'"):
        combine(S, "auto")


def test_without_subsets_only_the_single_scores_and_every_score_are_tried():
    rng = np.random.default_rng(6)
    S_in = rng.normal(size=(300, 4))
    S_out = rng.normal(size=(100, 4)) + [1.0, 0.8, 0.0, 0.0]
    comb = ScoreCombiner(random_state=0, n_bootstrap=50, subsets=False).fit(S_in, S_out)
    cands = comb.selection_["candidates"]
    assert [c["columns"] for c in cands if c["method"] == "single"] == [[0], [1], [2], [3]]
    assert {len(c["columns"]) for c in cands if c["method"] != "single"} == {4}
    assert [c["method"] for c in cands if c["method"] != "single"] == list(STATISTICS)
    assert comb.columns_ in ([0], [1], [2], [3], [0, 1, 2, 3])
    with_subsets = ScoreCombiner(random_state=0, n_bootstrap=50).fit(S_in, S_out)
    assert len(with_subsets.selection_["candidates"]) > len(cands)


def _kind_tasks(seed, shifts, n=400):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=(n, 2)) + s)
            for s in shifts]


def test_a_combination_must_win_on_every_kind_of_proxy():
    """Outliers of kind "a" stand out in both columns (a combination gains), those of kind
    "b" in column 0 only (it loses): the mean over both favours the combination, the test
    on kind "b" alone refuses it."""
    tasks = _kind_tasks(0, ([1.0, 1.0], [1.0, 0.2]))
    kw = {"n_bootstrap": 200, "subsets": False}
    mean = select_statistic(tasks, rng=np.random.default_rng(1), veto=False, **kw)
    apart = select_statistic(tasks, rng=np.random.default_rng(1), kinds=["a", "b"], **kw)
    assert mean["method"] != "single" and mean["kind_win_fractions"] == [mean["win_fraction"]]
    assert apart["method"] == "single" and apart["single"] == mean["single"] == 0
    won_a, won_b = apart["kind_win_fractions"]
    assert won_a >= 0.9 > won_b and apart["win_fraction"] == won_b
    # the choice itself is the same: only the test is run per kind
    assert apart["candidates"] == mean["candidates"]
    # the same resamples on each task alone: the gain on "a", the loss on "b"
    task_a, task_b = apart["task_win_fractions"]
    assert task_a >= 0.9 > 0.5 > task_b
    comb = ScoreCombiner(n_bootstrap=200, subsets=False)
    comb.fit_chosen(tasks[0][0], apart)
    assert "on the 2 kinds of proxy" in comb.summary() and "too few to keep it" in comb.summary()
    assert comb.summary().endswith("; taken alone, 1 of the 2 proxy tasks show it above in "
                                   "under half of the resamples")


def test_a_combination_that_one_task_shows_losing_is_vetoed():
    """One kind of proxy, two tasks: the combination gains on "a" and loses on "b", and the
    mean favours it. With the veto (the default) task "b" keeps the single score; without
    it the mean decides. The resamples, and so every fraction, are the same."""
    tasks = _kind_tasks(0, ([1.0, 1.0], [1.0, 0.2]))
    kw = {"n_bootstrap": 200, "subsets": False}
    vetoed = select_statistic(tasks, rng=np.random.default_rng(1), **kw)
    free = ScoreCombiner(veto=False, **kw).choose(tasks, np.random.default_rng(1))
    assert vetoed["method"] == "single" and free["method"] == vetoed["combination_method"]
    assert {k: v for k, v in vetoed.items() if k not in ("method", "columns")} == {
        k: v for k, v in free.items() if k not in ("method", "columns")}
    assert vetoed["win_fraction"] >= 0.9
    loss_a, loss_b = vetoed["task_loss_fractions"]
    assert loss_b >= 0.9 > 0.1 > loss_a
    comb = ScoreCombiner(**kw).fit_chosen(tasks[0][0], vetoed)
    assert comb.method_ == "single" and comb.summary().endswith(
        f"but proxy task 1 alone shows it below in {loss_b * 100:.10g}% of them (veto)")
    with pytest.raises(ValueError, match=r"reaches params\.confidence = 0\.9; got "
                                         r"win_fraction 0\.\d+ with method 'single'"):
        load_json(comb.to_json().replace('"veto": true', '"veto": false'))


def test_one_kind_is_the_mean_and_kinds_are_checked():
    tasks = _kind_tasks(1, ([0.5, 0.5], [0.5, 0.2], [0.5, 0.0]), n=60)
    plain = select_statistic(tasks, n_bootstrap=50, rng=np.random.default_rng(2))
    same = select_statistic(tasks, n_bootstrap=50, rng=np.random.default_rng(2),
                            kinds=np.array([3, 3, 3]))
    assert same == plain
    for bad in (["a", "b"], "abc", 3, [[0], [0], [1]]):
        with pytest.raises(ValueError, match="kinds must be 3 labels .numbers or strings., "
                                             "one per proxy task"):
            select_statistic(tasks, rng=np.random.default_rng(0), kinds=bad)


def test_each_kind_is_tested_by_its_own_paired_resamples():
    """The per-kind win fractions against a plain resampling loop with the brute-force
    AUROC, on the same generator: the tasks' halves drawn in task order, then each kind's
    resamples (its tasks weighted as in the choice)."""
    rng = np.random.default_rng(5)
    tasks = [(np.round(rng.normal(size=(30, 2)), 1), np.round(rng.normal(size=(16, 2)), 1),
              np.round(rng.normal(size=(12, 2)) + s, 1))
             for s in ([0.8, 0.8], [0.9, 0.1], [0.7, 0.6])]
    kinds, weights, n_boot = ["c", "r", "c"], [1.0, 2.0, 3.0], 25
    record = select_statistic(tasks, n_bootstrap=n_boot, rng=np.random.default_rng(9),
                              kinds=kinds, weights=weights)
    gen = np.random.default_rng(9)
    halves = []
    for S_z, S_in, S_out in tasks:
        ez = EmpiricalZ().fit(S_z)
        cov = inlier_covariance(ez.transform(S_z))
        a = canonical_rows(S_in)[gen.permutation(len(S_in))]
        b = canonical_rows(S_out)[gen.permutation(len(S_out))]
        ha, hb = len(S_in) // 2, len(S_out) // 2
        raw = np.vstack([S_in[a[ha:]], S_out[b[hb:]]])
        method, cols = record["combination_method"], list(record["combination_columns"])
        kw = {"cov": cov[np.ix_(cols, cols)]} if method == "glrt_cov" else {}
        halves.append((raw[:, record["single"]], combine(ez.transform(raw)[:, cols], method,
                                                         **kw), len(S_in) - ha))
    want, per_task, per_loss = [], [0, 0, 0], [0, 0, 0]
    for kind in ("c", "r"):
        wins = 0
        for _ in range(n_boot):
            diff = 0.0
            for t in (t for t in range(3) if kinds[t] == kind):
                single, combo, n = halves[t]
                i = gen.integers(0, n, n)
                o = n + gen.integers(0, single.size - n, single.size - n)
                gap = _pair_auroc(combo[i], combo[o]) - _pair_auroc(single[i], single[o])
                per_task[t] += gap > 0.0
                per_loss[t] += gap < 0.0
                diff += weights[t] * gap
            wins += diff > 0.0
        want.append(wins / n_boot)
    assert record["kind_win_fractions"] == want
    assert record["win_fraction"] == min(want)
    # each task alone, from the same resamples (the losses decide the veto)
    assert record["task_win_fractions"] == [w / n_boot for w in per_task]
    assert record["task_loss_fractions"] == [w / n_boot for w in per_loss]


def test_auto_chooses_the_same_on_the_same_rows_in_another_order():
    # the seeded halves and resamples indexed the rows as given: a shuffle of the same rows
    # chose single [0], glrt, fisher or single [1] at one random_state
    rng = np.random.default_rng(0)
    S = rng.normal(size=(300, 3))
    out = rng.normal(size=(120, 3)) + [0.6, 0.3, 0.5]
    ref = ScoreCombiner(random_state=0).fit(S, out)
    new = rng.normal(size=(20, 3))
    for _ in range(4):
        a, b = rng.permutation(300), rng.permutation(120)
        again = ScoreCombiner(random_state=0).fit(S[a], out[b])
        assert again.selection_ == ref.selection_
        np.testing.assert_array_equal(again.score(new), ref.score(new))


def test_exactly_tied_mean_aurocs_go_to_the_first_candidate():
    """Two tasks on which single scores 0 and 1 both average exactly 2/3: np.mean rounded
    them to 0.6666666666666666 and 0.6666666666666667, and column 1 was chosen."""
    from fractions import Fraction

    from abstain.combine._select import _Task

    r = np.random.default_rng(135)
    tasks = []
    for _ in range(2):
        n_in, n_out = int(r.integers(4, 9)), int(r.integers(4, 12))
        tasks.append((r.integers(0, 5, size=(6, 2)).astype(float),
                      r.integers(0, 5, size=(n_in, 2)).astype(float),
                      r.integers(0, 6, size=(n_out, 2)).astype(float)))
    rec = ScoreCombiner(n_bootstrap=20).choose(tasks, np.random.default_rng(0))
    rng = np.random.default_rng(0)  # the halves that choose drew
    prep = [_Task(a, b, c, 1.0, 1e-6, rng, "") for a, b, c in tasks]

    def exact(p, j):
        s_in, s_out = p.choose.raw[~p.choose.is_ood, j], p.choose.raw[p.choose.is_ood, j]
        return Fraction(round(2 * len(s_in) * len(s_out) * _pair_auroc(s_in, s_out)),
                        2 * len(s_in) * len(s_out))

    means = [sum(exact(p, j) for p in prep) / 2 for j in range(2)]
    assert means[0] == means[1] and rec["single"] == 0


def test_weighted_tasks_count_no_exact_tie_as_a_win():
    """Weights 2 and 3 gave shares 0.4 and 0.6 in floats, not in the ratio 2:3, so a
    weighted tie of the two tasks' gaps summed above 0 (0.805 for 0.785)."""
    from fractions import Fraction
    from types import SimpleNamespace

    from abstain.combine._select import _Half, _paired_wins

    rng0 = np.random.default_rng(0)
    tasks = []
    for _ in range(2):
        raw = rng0.integers(0, 3, (6, 2)).astype(float)
        tasks.append(SimpleNamespace(test=_Half(raw, raw, 3), cov=None))
    got, _, _ = _paired_wins(tasks, ("single", (0,)), ("single", (1,)), None, 200,
                             np.random.default_rng(2), [Fraction(2, 5), Fraction(3, 5)])
    rng = np.random.default_rng(2)
    wins = 0
    for _ in range(200):
        d = Fraction(0)
        for t, part in zip(tasks, (Fraction(2, 5), Fraction(3, 5)), strict=True):
            raw = t.test.raw
            w_in = np.bincount(rng.integers(0, 3, 3), minlength=3)
            w_out = np.bincount(rng.integers(0, 3, 3), minlength=3)
            for j, sign in ((1, 1), (0, -1)):
                num = sum(Fraction(int(a) * int(b)) * (1 if y > x else Fraction(1, 2)
                                                       if y == x else 0)
                          for x, a in zip(raw[:3, j], w_in, strict=True)
                          for y, b in zip(raw[3:, j], w_out, strict=True))
                d += sign * part * num / (int(w_in.sum()) * int(w_out.sum()))
        wins += d > 0
    assert got == wins / 200


def test_a_record_whose_choice_is_not_its_candidates_best_is_refused():
    # a document naming column 2 (AUROC 0.53 among its own candidates) the best single
    # score, where column 0 has 0.94, loaded and scored with column 2
    rng = np.random.default_rng(0)
    S_in = rng.normal(size=(600, 3))
    S_out = rng.normal(size=(300, 3)) + [2.0, 0.0, 0.0]
    comb = ScoreCombiner(random_state=0, n_bootstrap=50).fit(S_in, S_out)
    doc = json.loads(comb.to_json())
    sel = doc["fitted"]["selection_"]
    assert sel["method"] == "single" and sel["single"] == 0
    two = next(c for c in sel["candidates"] if c["method"] == "single" and c["columns"] == [2])
    sel["single"], sel["columns"], sel["single_auroc"] = 2, [2], two["auroc"]
    doc["fitted"]["columns_"] = [2]
    with pytest.raises(ValueError, match=r"fitted\.selection_\.single_auroc must be the largest "
                                         r"AUROC of the single candidates"):
        load_json(json.dumps(doc))
    doc = json.loads(comb.to_json())
    sel = doc["fitted"]["selection_"]
    worst = min((c for c in sel["candidates"] if c["method"] != "single"),
                key=lambda c: c["auroc"])
    sel["combination_method"], sel["combination_columns"] = worst["method"], worst["columns"]
    sel["combination_auroc"] = worst["auroc"]
    with pytest.raises(ValueError, match=r"combination_auroc must be the largest AUROC of the "
                                         r"combination candidates"):
        load_json(json.dumps(doc))


def test_the_summary_gives_win_fractions_unrounded():
    # 179 of 200 resamples read "won 90% ..., too few to keep it" at a confidence of 0.9
    from abstain.combine._select import describe

    record = {"single": 0, "single_auroc": 0.586, "combination_method": "fisher",
              "combination_columns": [0, 1, 2], "combination_auroc": 0.624,
              "win_fraction": 179 / 200, "method": "single"}
    assert "won 89.5% of paired resamples, too few to keep it" in describe(record)
    record["kind_win_fractions"] = [179 / 200, 0.5]
    assert "won 89.5% and 50% of paired resamples on the 2 kinds" in describe(record)


def test_the_summary_names_a_veto_only_where_a_task_loss_reaches_confidence():
    from abstain.combine._select import describe

    record = {"single": 0, "single_auroc": 0.586, "combination_method": "fisher",
              "combination_columns": [0, 1, 2], "combination_auroc": 0.624,
              "win_fraction": 0.95, "method": "single", "task_loss_fractions": [0.0, 0.92]}
    assert describe(record, 0.9).endswith("but proxy task 1 alone shows it below in 92% of "
                                          "them (veto)")
    # a confidence or veto set after the fit: no loss at it, or no veto, names none, and
    # a win fraction at the confidence is not "too few"
    for confidence, veto in ((0.95, True), (0.9, False)):
        text = describe(record, confidence, veto)
        assert text.endswith("not kept at the fit") and "below in" not in text
    # a confidence lowered after the fit, no task below: neither "too few" nor a 0 % loss
    record |= {"win_fraction": 0.85, "task_loss_fractions": [0.0, 0.01]}
    assert describe(record, 0.9).endswith("won 85% of paired resamples, too few to keep it")
    assert describe(record, 0.8).endswith("won 85% of paired resamples, not kept at the fit")
