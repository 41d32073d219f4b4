"""SVOR: exactness against a QP reference, scikit-learn contract, errors, serialisation."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.ordinal_ref import svor_objective_ref, svor_ref

from abstain import load_json
from abstain.exceptions import NotFittedError
from abstain.ordinal import SVOR, svor_objective
from abstain.scores import margin, ordinal_margin


def ordinal_data(n, d, k, seed, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = X @ rng.standard_normal(d) / np.sqrt(d) + noise * rng.standard_normal(n)
    cuts = np.quantile(f, np.linspace(0, 1, k + 1)[1:-1])
    return X, np.searchsorted(cuts, f)


@pytest.mark.parametrize(
    ("n", "d", "k", "C", "seed"),
    [(30, 2, 3, 1.0, 0), (40, 3, 4, 10.0, 1), (25, 2, 5, 100.0, 2), (30, 1, 2, 1000.0, 3)],
)
def test_matches_qp_reference(n, d, k, C, seed):
    X, r = ordinal_data(n, d, k, seed)
    model = SVOR(C=C).fit(X, r)
    w_ref, b_ref = svor_ref(X, r, k, C)
    ours = svor_objective_ref(X, r, model.coef_, model.thresholds_, C)
    ref = svor_objective_ref(X, r, w_ref, b_ref, C)
    assert ours == pytest.approx(model.objective_, rel=1e-12)
    assert ours <= ref * (1 + 1e-6)
    assert ours == pytest.approx(ref, rel=1e-6)
    assert model.gap_ <= 1e-8 * ours
    np.testing.assert_allclose(model.coef_, w_ref, atol=1e-4)
    # Decision values far from every threshold get the reference's prediction; where the
    # objective is flat in a threshold, the reference's and ours (the middle of the flat)
    # may differ, and a row between the two is predicted either way by an optimum.
    f_ref = X @ w_ref
    lo = np.minimum(b_ref, model.thresholds_)[None, :] - 1e-3
    hi = np.maximum(b_ref, model.thresholds_)[None, :] + 1e-3
    clear = ~((f_ref[:, None] >= lo) & (f_ref[:, None] <= hi)).any(axis=1)
    pred_ref = (f_ref[:, None] > b_ref[None, :]).sum(axis=1)
    np.testing.assert_array_equal(model.predict(X)[clear], pred_ref[clear])


@pytest.mark.parametrize("seed", range(6))
def test_thresholds_are_the_middle_of_their_flat_and_do_not_depend_on_row_order(seed):
    # given w the objective is flat in a threshold where no hinge bends; the fit takes the
    # middle of the minimising interval, found here by brute force over the hinge knots
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 2))
    r = np.clip(np.round(X[:, 0] + 1), 0, 2).astype(int)
    model = SVOR(C=10).fit(X, r)
    f = X @ model.coef_
    for j, b in enumerate(model.thresholds_):
        knots = np.unique(np.concatenate([f[r > j] - 1, f[r <= j] + 1]))
        b_rest = list(model.thresholds_)

        def F(t, j=j, b_rest=b_rest):
            return svor_objective_ref(X, r, model.coef_, b_rest[:j] + [t] + b_rest[j + 1:], 10)

        values = np.array([F(t) for t in knots])
        best = knots[values <= values.min() * (1 + 1e-12)]
        assert F(b) <= values.min() * (1 + 1e-12)
        assert b == pytest.approx(0.5 * (best.min() + best.max()), abs=1e-9)
    for _ in range(3):
        p = rng.permutation(30)
        other = SVOR(C=10).fit(X[p], r[p])
        np.testing.assert_allclose(other.thresholds_, model.thresholds_, atol=1e-12)
        Xt = rng.normal(size=(500, 2))
        clear = np.abs(Xt @ model.coef_ - model.thresholds_[:, None]).min(axis=0) > 1e-9
        np.testing.assert_array_equal(other.predict(Xt)[clear], model.predict(Xt)[clear])


def test_objective_matches_double_loop(rng):
    X = rng.standard_normal((20, 3))
    r = rng.integers(0, 4, 20)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    assert svor_objective(X, r, w, b, 7.0) == pytest.approx(svor_objective_ref(X, r, w, b, 7.0))


@settings(max_examples=15)
@given(seed=st.integers(0, 10**6), k=st.integers(2, 6), C=st.sampled_from([1.0, 10.0, 100.0]))
def test_certified_gap_and_ordered_thresholds(seed, k, C):
    X, r = ordinal_data(80, 3, k, seed, noise=1.0)
    model = SVOR(C=C).fit(X, r)
    assert 0.0 <= model.gap_ + 1e-12 * model.objective_ <= 1e-8 * model.objective_
    assert model.objective_ == pytest.approx(svor_objective(X, r, model.coef_,
                                                             model.thresholds_, C), rel=1e-12)
    # Predictions equal the count of thresholds below <x, w>.
    f = model.projection(X)
    np.testing.assert_array_equal(model.predict(X), (f[:, None] > model.thresholds_).sum(1))


def test_well_separated_data_has_small_mae():
    X, r = ordinal_data(2000, 5, 6, seed=5, noise=0.02)
    labels = 10 + 3 * r  # arbitrary sorted integer labels
    model = SVOR(C=1000.0).fit(X[:1500], labels[:1500])
    np.testing.assert_array_equal(model.classes_, 10 + 3 * np.arange(6))
    mae = np.abs(np.searchsorted(model.classes_, model.predict(X[1500:])) - r[1500:]).mean()
    assert mae < 0.1


def test_uncertainty_is_negated_distance_to_nearest_threshold(rng):
    X, r = ordinal_data(100, 2, 4, seed=7)
    model = SVOR(C=10.0).fit(X, r)
    f = model.projection(X)
    expected = -np.abs(f[:, None] - model.thresholds_[None, :]).min(axis=1)
    np.testing.assert_allclose(model.uncertainty(X), expected)
    np.testing.assert_allclose(ordinal_margin(f, model.thresholds_[::-1]), expected)


def test_sklearn_clone_and_grid_search():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    X, r = ordinal_data(200, 3, 4, seed=11)
    model = SVOR(C=3.0, tol=1e-7)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    search = GridSearchCV(SVOR(), {"C": [1.0, 10.0]}, scoring="neg_mean_absolute_error", cv=3)
    search.fit(X, r)
    assert search.best_params_["C"] in (1.0, 10.0)
    assert search.predict(X).shape == (200,)


def test_json_round_trip():
    X, r = ordinal_data(100, 3, 4, seed=3)
    model = SVOR(C=10.0).fit(X, r + 1)
    loaded = load_json(model.to_json())
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.uncertainty(X), model.uncertainty(X))
    assert loaded.get_params() == model.get_params()


@pytest.mark.parametrize(
    ("X", "y", "params", "match"),
    [
        ([[np.nan], [1.0]], [0, 1], {}, "X must be finite; got 1 NaN"),
        ([[np.inf], [1.0]], [0, 1], {}, "X must be finite"),
        ([[0.0], [1.0], [2.0]], [0, 1], {}, "X and y must have the same length; got X has 3"),
        ([[0.0], [1.0]], [1, 1], {}, "y must hold at least 2 classes; got 1"),
        ([[0.0], [1.0]], [0.5, 1.0], {}, "Unknown label type: continuous"),
        ([[0.0], [1.0]], [1j, 2j], {}, "Complex data not supported in y"),
        ([[0.0], [1.0]], None, {}, "SVOR requires y to be passed"),
        ([[0.0], [1.0]], [[0, 1], [1, 0]], {}, "y must be a 1-D array of class labels"),
        ([[0.0], [1.0]], np.array(["a", 1], dtype=object), {}, "Unknown label type"),
        ([0.0, 1.0], [0, 1], {}, "X must be a 2-D array .* Reshape your data"),
        (np.zeros((2, 0)), [0, 1], {}, r"X has 0 feature\(s\) \(shape=\(2, 0\)\)"),
        ([[1j], [2j]], [0, 1], {}, "Complex data not supported in X"),
        ([[0.0], [1.0]], [0, 1], {"C": 0.0}, r"C must be a finite number in \(0, inf\); got 0.0"),
        ([[0.0], [1.0]], [0, 1], {"C": -1.0}, "C must be a finite number"),
        ([[0.0], [1.0]], [0, 1], {"max_iter": 0}, "max_iter must be a positive integer"),
    ],
)
def test_bad_input(X, y, params, match):
    with pytest.raises(ValueError, match=match):
        SVOR(**params).fit(X, y)


def test_unfitted_and_wrong_width():
    with pytest.raises(NotFittedError):
        SVOR().predict([[0.0]])
    model = SVOR().fit([[0.0], [1.0]], [0, 1])
    with pytest.raises(ValueError, match="X has 2 features, but SVOR is expecting 1 features"):
        model.predict([[0.0, 1.0]])


@pytest.mark.parametrize(
    ("decision", "thresholds", "match"),
    [([], [0.0], "decision must have shape"), ([0.0], [], "thresholds must have shape"),
     ([np.nan], [0.0], "must be finite")],
)
def test_ordinal_margin_errors(decision, thresholds, match):
    with pytest.raises(ValueError, match=match):
        ordinal_margin(decision, thresholds)


def test_string_and_float_labels_rank_in_sort_order():
    X, r = ordinal_data(300, 2, 3, seed=1, noise=0.01)
    names = np.array(["a_low", "b_mid", "c_high"])
    model = SVOR(C=100.0).fit(X, names[r])
    np.testing.assert_array_equal(model.classes_, names)
    by_rank = SVOR(C=100.0).fit(X, r.astype(np.float64))
    np.testing.assert_array_equal(model.predict(X), names[by_rank.predict(X).astype(int)])


def test_sparse_input_is_refused_by_name():
    from scipy import sparse

    with pytest.raises(ValueError, match="SVOR does not accept sparse input X"):
        SVOR().fit(sparse.csr_matrix(np.eye(3)), [0, 1, 2])


def test_column_vector_y_warns_and_is_read_as_1d():
    X, r = ordinal_data(100, 2, 3, seed=2, noise=0.01)
    with pytest.warns(UserWarning, match="A column-vector y was passed"):
        model = SVOR(C=10.0).fit(X, r[:, None])
    np.testing.assert_array_equal(model.predict(X), SVOR(C=10.0).fit(X, r).predict(X))


@given(seed=st.integers(0, 10**6), k=st.integers(2, 5))
def test_decision_function_agrees_with_predict_and_score(seed, k):
    X, r = ordinal_data(60, 2, k, seed, noise=1.0)
    model = SVOR(C=10.0).fit(X, r)
    # Include rows on a threshold exactly: the tie goes to the lower class in both.
    Xt = np.vstack([X, np.outer(model.thresholds_ / (model.coef_ @ model.coef_), model.coef_)])
    d = model.decision_function(Xt)
    pred = np.searchsorted(model.classes_, model.predict(Xt))
    if model.classes_.size == 2:
        assert d.shape == (len(Xt),)
        np.testing.assert_array_equal(d > 0, pred == 1)
    else:
        assert d.shape == (len(Xt), model.classes_.size)
        np.testing.assert_array_equal(d.argmax(axis=1), pred)
    np.testing.assert_allclose(margin(d), model.uncertainty(Xt), atol=1e-12)


def test_decision_function_is_the_signed_distance_to_each_interval():
    model = SVOR(C=100.0).fit(np.arange(6.0)[:, None], np.array([1, 1, 2, 2, 3, 3]))
    f = model.projection([[0.0], [2.5]])
    b0, b1 = model.thresholds_
    expected = [[b0 - f[0], min(f[0] - b0, b1 - f[0]), f[0] - b1],
                [b0 - f[1], min(f[1] - b0, b1 - f[1]), f[1] - b1]]
    np.testing.assert_allclose(model.decision_function([[0.0], [2.5]]), expected)


def test_score_is_the_accuracy():
    from sklearn.metrics import accuracy_score

    X, r = ordinal_data(60, 2, 3, seed=3, noise=1.0)
    labels = np.array(["a", "b", "c"])[r]
    model = SVOR().fit(X, labels)
    pred = model.predict(X)
    assert 0.0 < model.score(X, labels) < 1.0
    assert model.score(X, labels) == accuracy_score(labels, pred)
    w = np.linspace(0.0, 2.0, len(r))
    assert model.score(X, labels, sample_weight=w) == pytest.approx(
        accuracy_score(labels, pred, sample_weight=w), rel=1e-15)
    assert model.score(X, labels, sample_weight=w * 1e307) == pytest.approx(
        model.score(X, labels, sample_weight=w), rel=1e-15)  # no overflow of the sum
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'y'"):
        model.score(X)  # type: ignore[call-arg]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"y": None}, r"^y must be a 1-D array of class labels; got an array of shape \(\)\.$"),
    ({"y": [[0]] * 60}, r"^y must be a 1-D array of class labels; got an array of shape "
                        r"\(60, 1\)\.$"),
    ({"y": []}, r"^y must not be empty; got an array of length 0\.$"),
    ({"y": [0] * 59}, r"^X and y must have the same length; got X has 60, y has 59\.$"),
    ({"y": [np.nan] * 60}, r"^y must hold finite labels; got 60 NaN\.$"),
    ({"y": [1j] * 60}, r"^y must hold class labels \(numbers or strings\); got dtype "
                       r"complex128\.$"),
    ({"y": ["0"] * 60}, r"^y must hold labels of the type that the model predicts \(numbers, "
                        r"dtype int64\); got strings, dtype <U1\.$"),
    ({"sample_weight": [1.0] * 59}, r"^y and sample_weight must have the same length; got y "
                                    r"has 60, sample_weight has 59\.$"),
    ({"sample_weight": [-1.0] * 60}, r"^sample_weight must be non-negative; got minimum -1\.0\.$"),
    ({"sample_weight": [0.0] * 60}, r"^sample_weight must have a positive sum; got all "
                                    r"weights 0\.$"),
])
def test_score_refuses_bad_labels_and_weights(kwargs, message):
    X, r = ordinal_data(60, 2, 3, seed=3)
    model = SVOR().fit(X, r)
    with pytest.raises(ValueError, match=message):
        model.score(X, **{"y": r, **kwargs})


def test_degenerate_optimum_at_w_zero_is_certified():
    # Labels barely related to X: the optimum is w = 0 with every term on a margin, where
    # the active-set polish gives up; the KKT dual still certifies it, with no warning.
    X, r = ordinal_data(80, 3, 3, seed=1, noise=1.0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SVOR(C=10.0).fit(X, r)
    np.testing.assert_allclose(model.coef_, 0.0, atol=1e-12)
    assert 0.0 <= model.gap_ <= 1e-8 * model.objective_


def test_features_in_large_units_or_a_large_C_never_crash_nor_end_above_w_zero():
    # the Newton system went singular (LinAlgError), or the steps ended far above w = 0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.clip(np.round(X[:, 0] * 1.5 + 1.5 + rng.normal(size=40) * 0.5), 0, 3).astype(int)
    for scale, C in ((1e7, 10.0), (1e20, 10.0), (1.0, 1e10), (5e6, 1.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SVOR(C=C).fit(X * scale, y)
        zero = svor_objective(X * scale, y, np.zeros(3), np.zeros(3), C)
        assert model.objective_ <= zero
        assert model.objective_ == pytest.approx(
            svor_objective(X * scale, y, model.coef_, model.thresholds_, C), rel=1e-9)
        assert 0.0 <= model.gap_ <= model.objective_ + 1e-12


def test_a_small_c_is_certified_to_its_tol():
    # the threshold equations were checked to an absolute 1e-10, 1e-4 of C at C = 1e-6: the
    # fit reported gap_ 0 at a point 7.9e-12 (relative) above another fit's, with tol 1e-12
    from fractions import Fraction

    def exact(X, ranks, w, b, C):
        wf, bf, tot = [Fraction(x) for x in w], [Fraction(x) for x in b], Fraction(0)
        for i in range(len(ranks)):
            f = sum(Fraction(X[i, k]) * wf[k] for k in range(len(wf)))
            for j, bj in enumerate(bf):
                tot += max(Fraction(0), 1 - (1 if j < ranks[i] else -1) * (f - bj))
        return sum(x * x for x in wf) / 2 + Fraction(C) / len(ranks) * tot

    n, d, K, C = 60, 3, 4, 1e-6
    r = np.random.default_rng(1)
    for _ in range(5):
        X = r.integers(-2, 3, size=(n, d)).astype(float)
        y = np.clip((X @ [1, 0.5, -0.3] + r.normal(size=n)).round().astype(int) + 1, 0, K - 1)
        p = r.permutation(n)
    a = SVOR(C=C, tol=1e-12).fit(X, y)
    b = SVOR(C=C, tol=1e-12).fit(X[p], y[p])
    for one, other in ((a, b), (b, a)):
        excess = (exact(X, y, one.coef_, one.thresholds_, C)
                  - exact(X, y, other.coef_, other.thresholds_, C))
        assert excess <= Fraction(one.gap_) + Fraction(1e-12) * Fraction(one.objective_)


def test_a_separable_problem_of_many_classes_is_certified_without_running_out():
    # two points a few ulps apart, taken in turn at the smallest smoothing width, ran out
    # max_iter (500 Newton steps, 5 s), and the warning gave a relative gap above 1
    X = np.arange(180.0)[:, None]
    y = np.arange(180) // 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = SVOR(C=100.0).fit(X, y)
    assert m.n_iter_ < 100 and m.gap_ <= 1e-8 * m.objective_
    assert m.objective_ == pytest.approx(2.0, rel=1e-9)


def test_documents_no_fit_writes_and_bad_objective_inputs_are_refused():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    m = SVOR().fit(X, [0, 0, 1, 1])
    doc = json.loads(m.to_json())
    for field, value, match in (("gap_", 1e9, r"fitted\.gap_ must be at most fitted\."
                                              r"objective_"),
                                ("classes_", [0.5, 1.5], r"fitted\.classes_ must hold class "
                                                         r"labels, integers or strings"),
                                ("classes_", [False, True], r"fitted\.classes_ must hold class "
                                                            r"labels")):
        bad = json.loads(json.dumps(doc))
        bad["fitted"][field] = value
        with pytest.raises(ValueError, match=match):
            load_json(json.dumps(bad))
    w, b = m.coef_, m.thresholds_
    for args, match in (((X, [0, 0, 1, 1], w, b, -1.0), r"^C must be a finite number > 0"),
                        ((X, [0.7, 0, 1, 1], w, b, 1.0), r"^ranks must be whole class ranks"),
                        ((X, [0, 0, 1, 5], w, b, 1.0), r"^ranks must be whole class ranks"),
                        ((X[:0], [], w, b, 1.0), r"^X must be a non-empty"),
                        ((X, [0, 0, 1], w, b, 1.0), r"^X and ranks must have the same length"),
                        ((X * np.nan, [0, 0, 1, 1], w, b, 1.0), r"^X must be finite")):
        with pytest.raises(ValueError, match=match):
            svor_objective(*args)


def test_a_c_too_large_for_the_features_is_refused_at_fit():
    # C = 1e300 fitted with objective_ inf, which to_json then refused; 1.7e308 gave NaN
    # coefficients without a word
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    for C in (1e300, 1.7e308):
        m = SVOR(C=C)
        with pytest.raises(ValueError, match=r"^C=.* is too large for these features"):
            m.fit(X, [0, 0, 1, 1])
        assert not hasattr(m, "coef_")


def test_a_gap_one_ulp_above_the_objective_is_capped_and_whole_float_ranks_taken():
    # gap_ came out one ulp above objective_ and load_json refused the fit's document;
    # ranks 0.0, 1.0 were refused as not whole
    rng = np.random.default_rng(27)
    for _ in range(40):
        X = rng.normal(size=(5, 2))
        y = rng.integers(0, 3, 5)
        if np.unique(y).size < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = SVOR(C=0.1, max_iter=3).fit(X, y)
        assert m.gap_ <= m.objective_
        load_json(m.to_json())
    X = np.array([[0.0], [2.0]])
    assert svor_objective(X, np.array([0.0, 1.0]), [1.0], [1.0], C=1.0) == 0.5


def test_svor_stopped_by_max_iter_bounds_its_own_excess():
    # objective and gap were of the point before the last step: gap_ read 0.0 for a point
    # 1.8e-4 above the optimum
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(8, 30))
        X = rng.normal(size=(n, 2))
        y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=n), [-0.5, 0.5])
        if np.unique(y).size < 2:
            continue
        best = SVOR(C=0.1).fit(X, y).objective_
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for steps in (1, 2, 3):
                fit = SVOR(C=0.1, max_iter=steps).fit(X, y)
                assert fit.gap_ >= fit.objective_ - best - 1e-12 * best


def test_svor_on_duplicated_rows_is_certified_as_the_rows_once():
    # a degenerate optimum (w = 0) with every term of a class on the margin: the steps
    # ended a few ulps above the best point, which was returned uncertified (gap_ equal
    # to objective_) with a warning to scale the features
    X = np.array([-1.651362333681093, 0.0928055561256951, -1.5056622928205259,
                  1.9688434836933595, -0.5322858418646119, -0.02527216579112922,
                  -1.177174045653748, -0.5816056581649567, 1.2921345897181684,
                  0.2348102015183941, -1.1610928519890935, -0.5089251502800783,
                  -0.16748235047595011, 1.7299840187132667, -0.1269601352280696,
                  0.42365740043513694, 1.0366758446430917, 2.35761289675681,
                  0.633126631303566, -1.0713767124503, -0.9935147879659346,
                  1.6839517644284825, 0.39696321683274066, -1.9199346675850775,
                  -0.5187131989205189, -0.46581580827277813, -0.3505075146689405,
                  0.6300398927773033, 0.6581583981797338])[:, None]
    y = np.array([0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0,
                  1, 0, 1])
    once = SVOR(C=1.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        twice = SVOR(C=1.0).fit(np.tile(X, (2, 1)), np.tile(y, 2))
    assert twice.gap_ <= 1e-8 * twice.objective_
    assert twice.objective_ == pytest.approx(once.objective_, rel=1e-8)


def test_svor_score_of_whole_weights_is_the_exact_fraction():
    # weights divided by their largest summed to 0.4999999999999999 for 6 / 12
    from fractions import Fraction

    from abstain._core.base import accuracy

    X = np.arange(8.0)[:, None]
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    model = SVOR(C=10.0).fit(X, y)
    assert model.score(X, y, sample_weight=[1, 1, 1, 5, 1, 1, 1, 1]) == 0.5
    rng = np.random.default_rng(0)
    for _ in range(200):
        labels, pred = rng.integers(0, 2, 9), rng.integers(0, 2, 9)
        w = rng.integers(0, 7, 9).astype(float)
        w[0] += 1
        hits = [Fraction(a) for a, ok in zip(w, labels == pred, strict=True) if ok]
        want = sum(hits, Fraction(0)) / sum(map(Fraction, w))
        assert accuracy(labels, pred, sample_weight=w) == float(want)


def test_svor_refuses_bytes_labels_and_names_classes_in_a_corrupted_document():
    X = np.arange(6.0)[:, None]
    with pytest.raises(ValueError, match=r"^Unknown label type: y has dtype \|S1"):
        SVOR().fit(X, np.array([b"a", b"a", b"b", b"b", b"c", b"c"]))
    doc = json.loads(SVOR(C=10.0).fit(X, [0, 0, 1, 1, 2, 2]).to_json())
    doc["fitted"]["classes_"] = [0.5, 1, 2]
    with pytest.raises(ValueError, match=r"^fitted\.classes_ must hold class labels, integers "
                                         r"or strings, as a fit takes them; got \[0\.5, 1"):
        load_json(json.dumps(doc))


def test_svor_accuracy_takes_weights_near_the_float_maximum():
    # 2.0 ** 1024 (the unit of weights of 2**1023 or more) overflowed
    X = np.arange(8.0)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    model = SVOR(C=10.0).fit(X, y)
    w = np.full(8, 1e308)
    assert model.score(X, y, sample_weight=w) == model.score(X, y)


def test_column_names_of_a_data_frame_are_kept_checked_and_saved():
    # SVOR kept no feature_names_in_: columns in another order predicted silently
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60) * 0.01})
    y = (X.a > 0).astype(int) + (X.a > 1).astype(int)
    model = SVOR().fit(X, y)
    assert model.feature_names_in_.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match=r"^The feature names should match those that were "
                       r"passed during fit: \['a', 'b'\]; got \['b', 'a'\]\.$"):
        model.predict(X[["b", "a"]])
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.predict(X.to_numpy())
    loaded = load_json(model.to_json())
    assert loaded.feature_names_in_.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="The feature names should match"):
        loaded.predict(X[["b", "a"]])
    doc = json.loads(model.to_json())
    doc["fitted"]["feature_names_in_"] = ["a"]
    with pytest.raises(ValueError, match=r"^fitted\.feature_names_in_ must hold 2 strings"):
        load_json(json.dumps(doc))
    model.fit(X.to_numpy(), y)
    assert not hasattr(model, "feature_names_in_")
    assert "feature_names_in_" not in json.loads(model.to_json())["fitted"]


def test_a_step_count_beyond_max_iter_is_refused_on_load():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    doc = json.loads(SVOR(max_iter=5).fit(X, [0, 0, 1, 1]).to_json())
    for bad in (0, 6, 10**400):
        doc["fitted"]["n_iter_"] = bad
        with pytest.raises(ValueError, match=r"^fitted\.n_iter_ must be in \[1, "
                           r"params\.max_iter = 5\], as a fit counts its steps; got \d+\.$"):
            load_json(json.dumps(doc))
