"""The two-stage protocol of section 5.2 and the rank statistics (Demsar 2006)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from abstain.evaluation import (
    absolute_losses,
    compare_methods,
    evaluate_scores,
    paper_splits,
    plot_critical_difference,
    zero_one_losses,
)
from abstain.metrics import aurc
from abstain.scores import SELE, TCP, LossRegression

sklearn_linear = pytest.importorskip("sklearn.linear_model")


def test_paper_splits_partition_the_rows():
    splits = paper_splits(1003, n_splits=3, random_state=1)
    assert len(splits) == 3
    for split in splits:
        sizes = [len(p) for p in split]
        assert sizes == [300, 100, 300, 100, 203]
        np.testing.assert_array_equal(np.sort(np.concatenate(split)), np.arange(1003))
    assert not np.array_equal(splits[0].trn1, splits[1].trn1)
    again = paper_splits(1003, n_splits=3, random_state=1)
    for a, b in zip(splits, again, strict=True):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_array_equal(pa, pb)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_samples": 3}, "every part at least one row"),
        ({"n_samples": 100, "ratios": (0.5, 0.5)}, "5 positive numbers summing to 1"),
        ({"n_samples": 100, "ratios": (0.3, 0.1, 0.3, 0.1, 0.3)}, "summing to 1"),
        ({"n_samples": 100, "n_splits": 0}, "n_splits must be a positive integer"),
        ({"n_samples": 10.5}, "n_samples must be an integer"),
        # the Tst part empty: the ratios sum to 1 within the tolerance
        ({"n_samples": 100, "ratios": (0.25, 0.25, 0.25, 0.25, 5e-10)},
         "every part at least one row"),
        ({"n_samples": 100, "random_state": -1}, "random_state must be None, an integer >= 0"),
    ],
)
def test_paper_splits_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        paper_splits(**kwargs)


def test_losses():
    np.testing.assert_array_equal(zero_one_losses([0, 1, 2], [0, 2, 2]), [0, 1, 0])
    np.testing.assert_array_equal(absolute_losses([0, 1, 5], [0, 3, 2]), [0, 2, 3])


class RecordingModel(sklearn_linear.LogisticRegression):
    """Logistic regression that records the mean of the inputs it is trained on."""

    seen: list = []

    def fit(self, X, y, sample_weight=None):
        RecordingModel.seen.append(np.asarray(X).mean(axis=0))
        return super().fit(X, y, sample_weight)


def synthetic(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(loc=5.0, scale=3.0, size=(n, 3))
    y = (X[:, 0] - 5 + rng.normal(size=n) * 3 > 0).astype(int)
    return X, y


def test_evaluate_scores_follows_the_protocol():
    X, y = synthetic()
    RecordingModel.seen = []
    learners = {"SELE": SELE(random_state=0), "REG": LossRegression(), "TCP": TCP()}
    result = evaluate_scores(X, y, RecordingModel(), learners, n_splits=2, random_state=3)
    assert result.methods == ("baseline", "SELE", "REG", "TCP")
    assert result.aurc.shape == (2, 4) and np.isfinite(result.aurc).all()
    # Four predictor fits per split, each on Trn1 standardised by Trn1 itself.
    assert len(RecordingModel.seen) == 8
    np.testing.assert_allclose(np.array(RecordingModel.seen), 0.0, atol=1e-12)
    assert set(result.model_C) <= {1.0, 10.0, 100.0, 1000.0}
    assert np.isnan(result.score_C[:, 0]).all()
    assert set(result.score_C[:, 1:].ravel()) <= {0.0, 1.0, 10.0, 100.0, 1000.0}
    # The baseline (MCP of logistic regression) and the risk, recomputed by hand.
    split = paper_splits(len(y), n_splits=2, random_state=3)[0]
    mean, std = X[split.trn1].mean(axis=0), X[split.trn1].std(axis=0)
    model = sklearn_linear.LogisticRegression(C=result.model_C[0])
    model.fit((X[split.trn1] - mean) / std, y[split.trn1])
    xt = (X[split.tst] - mean) / std
    losses = (model.predict(xt) != y[split.tst]).astype(float)
    assert result.risk[0] == pytest.approx(losses.mean())
    assert result.aurc[0, 0] == pytest.approx(aurc(losses, 1 - model.predict_proba(xt).max(1)))
    again = evaluate_scores(X, y, RecordingModel(), learners, n_splits=2, random_state=3)
    np.testing.assert_array_equal(again.aurc, result.aurc)


def test_evaluate_scores_with_a_margin_baseline_and_ordinal_losses():
    svm = pytest.importorskip("sklearn.svm")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=500), [-1.0, 0.0, 1.0])
    result = evaluate_scores(X, y, svm.LinearSVC(), {"REG": LossRegression()},
                             loss=absolute_losses, n_splits=1, random_state=0)
    assert result.aurc.shape == (1, 2) and result.risk[0] > 0


def test_evaluate_scores_with_baseline_inputs_safe_selection_and_plugin_scores():
    svm = pytest.importorskip("sklearn.svm")
    from abstain.scores import margin, select_regularization

    rng = np.random.default_rng(2)
    X = rng.normal(size=(900, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(900, 3)), axis=1)
    learners = {"REG": LossRegression(), "REG+b": LossRegression()}
    top2 = {"top2": lambda m, x: margin(m.decision_function(x), kind="top2")}
    result = evaluate_scores(X, y, svm.LinearSVC(), learners, plugin_scores=top2,
                             baseline_input=["REG+b"], safe=["REG+b"], n_splits=2,
                             random_state=4)
    assert result.methods == ("baseline", "top2", "REG", "REG+b")
    assert not result.chose_baseline[:, :3].any()
    assert np.isnan(result.score_C[:, :2]).all()
    # Split 0 by hand: the plug-in column, then the baseline-aware learner, safely chosen.
    split = paper_splits(len(y), n_splits=2, random_state=4)[0]
    mean, std = X[split.trn1].mean(axis=0), X[split.trn1].std(axis=0)
    x1 = (X - mean) / std
    model = svm.LinearSVC(C=result.model_C[0],
                          random_state=int(np.random.default_rng(4).integers(0, 2**31 - 1,
                                                                              (2, 2))[0, 0]))
    model.fit(x1[split.trn1], y[split.trn1])
    pred = model.predict(x1)
    losses = (pred != y).astype(float)
    u0 = margin(model.decision_function(x1))
    assert result.aurc[0, 1] == pytest.approx(aurc(losses[split.tst], top2["top2"](model,
                                                                                   x1[split.tst])))
    x2 = (X - X[split.trn2].mean(axis=0)) / X[split.trn2].std(axis=0)
    seed = int(np.random.default_rng(4).integers(0, 2**31 - 1, (2, 2))[0, 1]) + 2
    search = select_regularization(
        LossRegression(classes=model.classes_), x2[split.trn2], pred[split.trn2],
        losses[split.trn2], x2[split.val2], pred[split.val2], losses[split.val2],
        baseline=u0[split.trn2], baseline_val=u0[split.val2], safe=True, random_state=seed)
    assert result.chose_baseline[0, 3] == (search.chosen == "baseline")
    expected = u0[split.tst] if search.chosen == "baseline" else search.best.score(
        x2[split.tst], pred[split.tst], baseline=u0[split.tst])
    assert result.aurc[0, 3] == pytest.approx(aurc(losses[split.tst], expected))
    # A learner kept as the baseline has exactly the baseline's test AuRC.
    for s in range(2):
        if result.chose_baseline[s, 3]:
            assert result.aurc[s, 3] == result.aurc[s, 0]


def test_evaluate_scores_bad_input():
    svm = pytest.importorskip("sklearn.svm")
    X, y = synthetic(100)
    model = sklearn_linear.LogisticRegression()
    with pytest.raises(ValueError, match="y must hold at least 2 classes"):
        evaluate_scores(X, np.zeros(100), model, {"REG": LossRegression()})
    with pytest.raises(ValueError, match=r"y must have shape \(100,\)"):
        evaluate_scores(X, y[:50], model, {"REG": LossRegression()})
    with pytest.raises(ValueError, match="learners must name at least one"):
        evaluate_scores(X, y, model, {})
    with pytest.raises(ValueError, match="X must be finite"):
        evaluate_scores(np.where(X > 8, np.nan, X), y, model, {"REG": LossRegression()})
    with pytest.raises(ValueError, match="TCP needs a model with predict_proba"):
        evaluate_scores(X, y, svm.LinearSVC(), {"TCP": TCP()}, n_splits=1)
    with pytest.raises(ValueError, match=r"baseline_input must name learners; got \['SELE'\]"):
        evaluate_scores(X, y, model, {"REG": LossRegression()}, baseline_input=["SELE"])
    with pytest.raises(ValueError, match="safe must name learners"):
        evaluate_scores(X, y, model, {"REG": LossRegression()}, safe=["TCP"])
    with pytest.raises(ValueError, match="distinct names other than 'baseline'"):
        evaluate_scores(X, y, model, {"REG": LossRegression()},
                        plugin_scores={"REG": lambda m, x: x[:, 0]})
    # an empty grid ended in a bare AssertionError; "10" was read as the Cs '1' and '0'
    for grid, match in (((), "model_grid must hold at least one value of C"),
                        ("10", "model_grid must be a sequence of values of C"),
                        ((0.0,), r"model_grid value must be a finite number in \(0, inf\)")):
        with pytest.raises(ValueError, match=match):
            evaluate_scores(X, y, model, {"REG": LossRegression()}, model_grid=grid)
    with pytest.raises(ValueError, match="score_grid must hold at least one value of C"):
        evaluate_scores(X, y, model, {"REG": LossRegression()}, score_grid=[])


def ranks_ref(row):
    """Rank 1 for the smallest value; tied values share the mean of their ranks (loops)."""
    out = []
    for v in row:
        below = sum(1 for w in row if w < v)
        equal = sum(1 for w in row if w == v)
        out.append(below + (equal + 1) / 2)
    return out


def test_compare_methods_against_references():
    rng = np.random.default_rng(0)
    table = rng.integers(0, 4, size=(9, 4)).astype(float)  # many ties
    cmp = compare_methods(table, ["a", "b", "c", "d"])
    np.testing.assert_allclose(cmp.average_rank, np.mean([ranks_ref(r) for r in table], axis=0))
    continuous = rng.normal(size=(9, 4))
    cmp = compare_methods(continuous)
    ref = stats.friedmanchisquare(*continuous.T)  # equal to Demsar's formula without ties
    assert cmp.friedman_statistic == pytest.approx(ref.statistic)
    assert cmp.friedman_pvalue == pytest.approx(ref.pvalue)
    n, k = continuous.shape
    f = (n - 1) * cmp.friedman_statistic / (n * (k - 1) - cmp.friedman_statistic)
    assert cmp.iman_davenport_pvalue == pytest.approx(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))


def test_nemenyi_critical_difference_of_the_paper():
    """Section 5.3.1: K = 4 methods on N = 11 datasets give CD = 1.26 at p-value 0.10."""
    cmp = compare_methods(np.tile(np.arange(4.0), (11, 1)), alpha=0.10)
    assert round(cmp.critical_difference, 2) == 1.26
    # Demsar's table of q_alpha (alpha 0.05: 2.343 for k = 3, 2.569 for k = 4).
    for k, q in ((3, 2.343), (4, 2.569)):
        cmp = compare_methods(np.tile(np.arange(float(k)), (6, 1)), alpha=0.05)
        assert cmp.critical_difference == pytest.approx(q * np.sqrt(k * (k + 1) / 36), abs=1e-3)


def test_compare_methods_bad_input():
    with pytest.raises(ValueError, match="at least 2 methods"):
        compare_methods([[1.0], [2.0]])
    with pytest.raises(ValueError, match="methods must name the 3 columns"):
        compare_methods([[1.0, 2.0, 3.0]], ["a", "b"])
    with pytest.raises(ValueError, match="table must be finite"):
        compare_methods([[1.0, np.nan]])
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\]"):
        compare_methods([[1.0, 2.0]], alpha=0.0)


def test_critical_difference_plot(tmp_path):
    pytest.importorskip("matplotlib")
    cmp = compare_methods([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0]], ["x", "y", "z"])
    path = tmp_path / "cd.png"
    plot_critical_difference(cmp, str(path), title="test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class RareClassModel:
    """Predicts class 2 only for the last rows, which fall outside Trn2 in the split used."""

    def __init__(self, C=1.0):
        self.C = C

    def set_params(self, **params):
        self.__dict__.update(params)
        return self

    def fit(self, X, y):
        self.classes_ = np.array([0, 1, 2])
        return self

    def predict(self, X):
        return np.where(X[:, 1] > 0, 2, (X[:, 0] > 0).astype(int))

    def decision_function(self, X):
        return np.column_stack([-X[:, 0], X[:, 0], X[:, 1]])


def test_learners_know_every_label_the_predictor_can_output():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    X[:, 1] = -1.0
    split = paper_splits(200, n_splits=1, random_state=0)[0]
    X[split.tst[:3], 1] = 1.0  # class 2 is predicted on Tst only
    y = rng.integers(0, 3, 200)
    result = evaluate_scores(X, y, RareClassModel(), {"REG": LossRegression()}, n_splits=1,
                             random_state=0, model_grid=(1.0,))
    assert np.isfinite(result.aurc).all()


def test_iman_davenport_at_perfect_agreement_and_for_one_dataset():
    assert compare_methods(np.tile([1.0, 2.0, 3.0], (4, 1))).iman_davenport_pvalue == 0.0
    assert np.isnan(compare_methods([[1.0, 2.0, 3.0]]).iman_davenport_pvalue)


def test_random_state_seeds_the_predictor_and_reports_non_convergence():
    svm = pytest.importorskip("sklearn.svm")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 4))
    y = np.argmax(X[:, :3] + rng.normal(scale=1.0, size=(240, 3)), axis=1)
    model = svm.LinearSVC(multi_class="crammer_singer", max_iter=3)
    runs = [evaluate_scores(X, y, model, {"REG": LossRegression()}, n_splits=2,
                            model_grid=(1.0,), score_grid=(0.0,), random_state=0)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].aurc, runs[1].aurc)
    assert model.random_state is None  # the caller's estimator is left as it was
    assert runs[0].model_converged.tolist() == [False, False]  # 3 iterations do not converge
    done = evaluate_scores(X, y, svm.LinearSVC(max_iter=10_000), {"REG": LossRegression()},
                           n_splits=1, model_grid=(1.0,), score_grid=(0.0,), random_state=0)
    assert done.model_converged.tolist() == [True]


def test_ties_of_the_predictors_loss_go_to_the_smaller_c_in_any_grid_order():
    import warnings

    from sklearn.linear_model import LogisticRegression

    from abstain.evaluation import evaluate_scores
    from abstain.scores import LossRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)  # separable: every C has no error on Val1
    for grid in [(1.0, 10.0, 100.0), (100.0, 10.0, 1.0)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = evaluate_scores(X, y, LogisticRegression(), {"REG": LossRegression()},
                                model_grid=grid, n_splits=2, random_state=0)
        assert r.model_C.tolist() == [1.0, 1.0], grid


def test_the_friedman_statistic_is_tie_corrected_as_scipy_computes_it():
    # with ties, datasets that all rank the methods alike gave 4.5 < N (k - 1) = 6 and an
    # Iman-Davenport p-value of 0.0625 (documented 0); scipy's statistic is tie-corrected
    from scipy.stats import friedmanchisquare

    from abstain.evaluation import compare_methods

    same = compare_methods([[1.0, 1.0, 2.0]] * 3)
    assert same.friedman_statistic == pytest.approx(6.0, rel=1e-12)
    assert same.iman_davenport_pvalue == 0.0
    rng = np.random.default_rng(0)
    for _ in range(30):
        n, k = int(rng.integers(2, 12)), int(rng.integers(3, 6))  # scipy takes k >= 3
        table = rng.integers(0, 3, (n, k)).astype(float)
        if np.all(table == table[:, :1]):
            continue
        got = compare_methods(table)
        want = friedmanchisquare(*table.T)
        assert got.friedman_statistic == pytest.approx(want.statistic, rel=1e-12, abs=1e-12)
        assert got.friedman_pvalue == pytest.approx(want.pvalue, rel=1e-9, abs=1e-15)
    flat = compare_methods([[1.0, 1.0], [2.0, 2.0]])
    assert flat.friedman_statistic == 0.0 and flat.friedman_pvalue == 1.0


class _Fixed:
    """A predictor whose predictions on the rows are fixed per value of C."""

    def __init__(self, table, C=1.0):
        self.table, self.C = table, C

    def set_params(self, C):
        self.C = C
        return self

    def fit(self, x, y):
        return self

    def predict(self, x):
        return self.table[self.C][x[:, 0].astype(int)]


def test_the_predictor_of_equal_validation_losses_on_other_rows_is_the_smaller_C():
    # the same losses on other rows: float means 0.20000000000000004 and
    # 0.19999999999999998, so the larger C was chosen against "ties: the smaller C"
    from abstain.evaluation import _fit_predictor, paper_splits

    n = 60
    split = paper_splits(n, n_splits=1, random_state=0)[0]
    costs = np.array([0.1, 0.2, 0.2, 0.3, 0.3, 0.1] * 20)
    table = {1.0: np.zeros(n), 10.0: np.zeros(n)}
    v = split.val1
    table[1.0][v] = costs[: v.size]
    table[10.0][v] = costs[: v.size][::-1]
    assert sum(table[1.0][v].tolist()) != sum(table[10.0][v].tolist())  # in row order
    x = np.arange(n, dtype=float)[:, None]
    for grid in ((1.0, 10.0), (10.0, 1.0)):
        _, c, _ = _fit_predictor(_Fixed(table), x, np.zeros(n), split,
                                 lambda y, p: np.asarray(p, float), grid)
        assert c == 1.0


def test_evaluate_scores_refuses_names_as_a_string_and_learners_as_a_list():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    from sklearn.linear_model import LogisticRegression

    for key in ("safe", "baseline_input"):
        with pytest.raises(ValueError, match=rf"^{key} must be a collection of learner names; "
                                             r"got 'REG' \(write \['REG'\] for one name\)"):
            evaluate_scores(X, y, LogisticRegression(), {"REG": LossRegression()},
                            n_splits=1, **{key: "REG"})
    with pytest.raises(ValueError, match=r"^learners must map names to score learners"):
        evaluate_scores(X, y, LogisticRegression(), [LossRegression()], n_splits=1)
    with pytest.raises(ValueError, match=r"^loss must return one loss per sample, shape "):
        evaluate_scores(X, y, LogisticRegression(), {"REG": LossRegression()}, n_splits=1,
                        loss=lambda t, p: np.zeros(3))


def test_the_baseline_and_tcp_target_take_classes_in_any_order():
    """A predictor whose classes_ are not sorted: the baseline's predicted class and TCP's
    true class were looked up as if they were, so each read another class's probability."""
    from estimators import Reordered

    from abstain.evaluation import _true_class_proba, default_baseline

    r = np.random.default_rng(1)
    X = r.normal(size=(300, 2))
    y = np.array(list("abc"))[np.digitize(X[:, 0] + r.normal(size=300), [-0.5, 0.5])]
    model = Reordered(sklearn_linear.LogisticRegression().fit(X, y), [2, 0, 1])
    proba = model.predict_proba(X)
    column = {c: j for j, c in enumerate(model.classes_)}
    rows = np.arange(300)
    predicted = np.array([column[c] for c in model.predict(X)])
    np.testing.assert_allclose(default_baseline(model, X), 1.0 - proba[rows, predicted],
                               rtol=0, atol=1e-15)
    true = np.array([column[c] for c in y])
    np.testing.assert_array_equal(_true_class_proba(model, X, y), proba[rows, true])
