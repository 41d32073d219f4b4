"""SelectiveClassifier: any scikit-learn classifier with a fitted reject model."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from abstain import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
    NotFittedError,
    SelectiveClassifier,
)
from abstain.metrics import selective_risk_at_coverage
from abstain.scores import absolute_error_loss, conditional_risk


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:900] / 16.0, y[:900], X[900:1400] / 16.0, y[900:1400]


def test_bounded_abstention_coverage_and_mask(digits):
    X, y, X_new, y_new = digits
    clf = SelectiveClassifier(
        LogisticRegression(max_iter=2000), BoundedAbstention(0.8), random_state=0
    ).fit(X, y)
    assert clf.reject_model_.coverage_ == 0.8
    pred, accept = clf.predict_with_reject(X_new)
    assert pred.shape == accept.shape == y_new.shape and accept.dtype == bool
    assert abs(accept.mean() - 0.8) < 0.08
    # Accepted predictions are more accurate than all predictions.
    assert (pred[accept] == y_new[accept]).mean() >= (pred == y_new).mean()
    np.testing.assert_array_equal(pred, clf.predict(X_new))
    np.testing.assert_array_equal(accept, clf.accept(X_new))  # the same seeded draw
    np.testing.assert_array_equal(accept, clf.reject_model_.accept(clf.uncertainty(X_new)))


def test_prefit_uses_all_data_for_calibration(digits):
    X, y, X_new, y_new = digits
    model = LogisticRegression(max_iter=2000).fit(X, y)
    clf = SelectiveClassifier(model, BoundedAbstention(0.7), prefit=True).fit(X_new, y_new)
    assert clf.estimator_ is model and clf.reject_model_.n_samples_ == len(y_new)
    # The fitted rule equals the reject model fitted by hand on the same scores.
    pred, risk = conditional_risk(model.predict_proba(X_new))
    losses = (model.classes_[pred] != y_new).astype(float)
    assert clf.reject_model_.risk_ == pytest.approx(selective_risk_at_coverage(losses, risk, 0.7))


def test_margin_uncertainty_for_svm(digits):
    X, y, X_new, _ = digits
    clf = SelectiveClassifier(LinearSVC(), CostBased(0.2), random_state=1).fit(X, y)
    u = clf.uncertainty(X_new)
    np.testing.assert_allclose(u, -clf.estimator_.decision_function(X_new).max(axis=1))
    assert set(np.unique(clf.accept_proba(X_new))) <= {0.0, 1.0}


def test_loss_matrix_changes_the_prediction(digits):
    X, y, X_new, _ = digits
    clf = SelectiveClassifier(
        LogisticRegression(max_iter=2000),
        BoundedImprovement(0.5),
        loss=absolute_error_loss(10),
        random_state=0,
    ).fit(X, y)
    proba = clf.estimator_.predict_proba(X_new)
    expected = conditional_risk(proba, absolute_error_loss(10)).prediction
    np.testing.assert_array_equal(clf.predict(X_new), clf.classes_[expected])


def test_callable_score_and_clone(digits):
    X, y, X_new, _ = digits
    clf = SelectiveClassifier(
        LogisticRegression(max_iter=2000),
        score_func=lambda est, X: -est.predict_proba(X).max(axis=1),
        random_state=0,
    )
    assert clone(clf).get_params()["random_state"] == 0
    clf.fit(X, y)
    assert clf.uncertainty(X_new).max() <= 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"calibration_size": 1.5}, "calibration_size"),
        ({"score_func": "entropy"}, "score_func must be"),
        ({"loss": np.ones((3, 3))}, "loss must be 10 x 10"),
        ({"loss": "zero-one"}, "^loss must be an array-like; got 'zero-one'"),
        ({"prefit": "yes"}, "^prefit must be True or False; got 'yes'"),
        ({"random_state": -1}, "^random_state must be None, an integer >= 0 or a numpy "
                               "Generator, BitGenerator, SeedSequence or RandomState; got -1"),
    ],
)
def test_bad_parameters(digits, kwargs, match):
    X, y, _, _ = digits
    with pytest.raises(ValueError, match=match):
        SelectiveClassifier(LogisticRegression(max_iter=200), **kwargs).fit(X, y)


def test_a_score_func_set_after_fit_is_checked_when_used(digits):
    X, y, X_new, _ = digits
    clf = SelectiveClassifier(LogisticRegression(max_iter=200), random_state=0).fit(X, y)
    clf.set_params(score_func="entropy")
    with pytest.raises(ValueError, match="^score_func must be one of 'auto'"):
        clf.uncertainty(X_new)


def test_unfitted(digits):
    with pytest.raises(NotFittedError):
        SelectiveClassifier(LogisticRegression()).predict(digits[2])


def test_unknown_calibration_labels(digits):
    X, y, _, _ = digits
    model = LogisticRegression(max_iter=2000).fit(X[y < 5], y[y < 5])
    with pytest.raises(ValueError, match="labels"):
        SelectiveClassifier(model, prefit=True).fit(X, y)


def test_a_class_of_one_row_is_refused_whatever_the_seed():
    # the split would put its row in the fitting or the calibration part by chance
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.r_[(X[:-1, 0] > 0).astype(int), 2]
    for seed in range(6):
        with pytest.raises(ValueError, match=r"^y holds 1 sample of class 2: the split into "
                                             r"fitting and calibration rows .* prefit=True\.$"):
            SelectiveClassifier(LogisticRegression(), random_state=seed).fit(X, y)
    # two rows: stratified, one in each part
    y[-2] = 2
    SelectiveClassifier(LogisticRegression(), random_state=0).fit(X, y)


def test_prefit_refuses_an_unfitted_estimator(digits):
    X, y, _, _ = digits
    with pytest.raises(NotFittedError, match=r"prefit=True needs a fitted estimator; this "
                                             r"LogisticRegression is not fitted"):
        SelectiveClassifier(LogisticRegression(), prefit=True).fit(X, y)


@pytest.mark.parametrize("reject_model", ["bounded_abstention", "BoundedTPRFPR", "ood", 0.9])
def test_refuses_other_reject_models(digits, reject_model):
    from abstain.models import BoundedTPRFPR

    X, y, _, _ = digits
    if reject_model == "ood":
        reject_model = BoundedTPRFPR(0.95, 0.05)
    with pytest.raises(ValueError, match=r"reject_model must be a BoundedAbstention, "
                                         r"BoundedImprovement or CostBased instance, or None; "
                                         r"got "):
        SelectiveClassifier(LogisticRegression(max_iter=200), reject_model).fit(X, y)


def test_sklearn_tags_without_module_level_import():
    # The tags are built when scikit-learn asks; the module itself never imports it.
    import abstain.models._classifier as module

    assert "sklearn" not in vars(module)
    tags = SelectiveClassifier(LogisticRegression()).__sklearn_tags__()
    assert tags.estimator_type == "classifier" and tags.target_tags.required


def test_target_checks(digits):
    X, y, _, _ = digits
    clf = SelectiveClassifier(LogisticRegression(max_iter=2000), random_state=0)
    with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
        clf.fit(X, None)
    with pytest.warns(UserWarning, match="column-vector y"):  # DataConversionWarning
        clf.fit(X, y[:, None])
    assert clf.n_features_in_ == X.shape[1]


def test_score_is_the_accuracy_and_uncertainty_the_score_of_the_rule(digits):
    from sklearn.metrics import accuracy_score

    X, y, X_new, y_new = digits
    clf = SelectiveClassifier(LogisticRegression(max_iter=2000), BoundedAbstention(0.8),
                              random_state=0).fit(X, y)
    pred = clf.predict(X_new)
    acc = clf.score(X_new, y_new)
    assert isinstance(acc, float) and 0.8 < acc < 1.0
    assert acc == accuracy_score(y_new, pred)
    w = np.arange(len(y_new)) % 3
    assert clf.score(X_new, y_new, sample_weight=w) == pytest.approx(
        accuracy_score(y_new, pred, sample_weight=w), rel=1e-15)
    u = clf.uncertainty(X_new)
    proba = clf.estimator_.predict_proba(X_new)
    np.testing.assert_array_equal(u, conditional_risk(proba, clf.loss_matrix_).risk)
    np.testing.assert_array_equal(clf.accept_proba(X_new), clf.reject_model_.accept_proba(u))
    with pytest.raises(ValueError, match=r"^X and y must have the same length; got X has 500, "
                                         r"y has 499\.$"):
        clf.score(X_new, y_new[:-1])
    with pytest.raises(ValueError, match=r"^y must not be empty; got an array of length 0\.$"):
        clf.score(X_new, [])
    with pytest.raises(NotFittedError):
        SelectiveClassifier(LogisticRegression()).uncertainty(X_new)
    with pytest.raises(NotFittedError):
        SelectiveClassifier(LogisticRegression()).score(X_new, y_new)


def test_set_output_pandas_keeps_the_index_of_the_input():
    pd = pytest.importorskip("pandas")
    from sklearn.linear_model import LogisticRegression

    from abstain import SelectiveClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)},
                     index=pd.Index([f"id{i}" for i in range(200)], name="key"))
    y = (X["a"] + 0.5 * rng.normal(size=200) > 0).astype(int)
    clf = SelectiveClassifier(LogisticRegression(), random_state=0).fit(X, y)
    plain = {m: getattr(clf, m)(X.iloc[50:]) for m in
             ("uncertainty", "predict", "accept_proba", "accept")}
    assert clf.set_output(transform="pandas") is clf
    for method, want in plain.items():
        got = getattr(clf, method)(X.iloc[50:])
        assert isinstance(got, pd.Series) and got.index.equals(X.index[50:])
        assert got.name == ("prediction" if method == "predict" else method)
        np.testing.assert_array_equal(got.to_numpy(), want)
    pr = clf.predict_with_reject(X.iloc[:5])
    assert pr.prediction.index.equals(X.index[:5]) and pr.accept.name == "accept"
    assert isinstance(clf.score(X, y), float)
    with pytest.warns(UserWarning, match="valid feature names"):  # scikit-learn's own
        got = clf.predict(X.to_numpy())
    assert isinstance(got, pd.Series) and isinstance(got.index, pd.RangeIndex)
    assert isinstance(clf.set_output(transform="default").predict(X), np.ndarray)
    assert isinstance(clf.set_output().predict(X), np.ndarray)  # None: unchanged
    with pytest.raises(ValueError, match="transform must be one of 'default', 'pandas'"):
        clf.set_output(transform="polars")


@pytest.mark.parametrize("prefit", [False, True])
@pytest.mark.parametrize("seed", [lambda: np.random.default_rng(3),
                                  lambda: np.random.RandomState(3), lambda: 3])
def test_every_random_state_the_check_accepts_fits_and_repeats(seed, prefit):
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    fitted = []
    for _ in range(2):
        est = LogisticRegression().fit(X, y) if prefit else LogisticRegression()
        clf = SelectiveClassifier(est, BoundedAbstention(0.75), random_state=seed(),
                                  prefit=prefit).fit(X, y)
        fitted.append((clf.reject_model_.threshold_, clf.predict(X).tolist(),
                       clf.accept(X).tolist()))
    assert fitted[0] == fitted[1]


def test_random_state_seeds_the_estimator_where_it_has_none():
    # a random forest without its own seed fitted differently on every call
    ensemble = pytest.importorskip("sklearn.ensemble")
    X, y = make_classification(n_samples=300, random_state=0)
    fits = [SelectiveClassifier(ensemble.RandomForestClassifier(n_estimators=5),
                                BoundedAbstention(0.7), random_state=0).fit(X, y)
            for _ in range(2)]
    assert fits[0].score(X, y) == fits[1].score(X, y)
    np.testing.assert_array_equal(fits[0].uncertainty(X), fits[1].uncertainty(X))
    assert fits[0].estimator_.random_state == 0
    own = SelectiveClassifier(ensemble.RandomForestClassifier(n_estimators=5, random_state=7),
                              random_state=0).fit(X, y)
    assert own.estimator_.random_state == 7  # its own seed is kept


def test_clone_keeps_the_output_container():
    # the choice lived in a private attribute that clone does not copy, so model selection
    # (GridSearchCV, cross_validate) silently went back to arrays
    pd = pytest.importorskip("pandas")
    X, y = make_classification(n_samples=120, random_state=0)
    X = pd.DataFrame(X)
    clf = SelectiveClassifier(LogisticRegression(), random_state=0).set_output(transform="pandas")
    again = clone(clf).fit(X, y)
    assert isinstance(again.accept(X), pd.Series)
    assert isinstance(clone(again).set_output(transform="default").fit(X, y).accept(X),
                      np.ndarray)


def test_a_refit_on_an_array_forgets_the_column_names_of_a_data_frame():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = SelectiveClassifier(LogisticRegression(), random_state=0)
    clf.fit(pd.DataFrame(X, columns=list("abc")), y)
    assert clf.feature_names_in_.tolist() == ["a", "b", "c"]
    clf.fit(X, y)  # the names of the earlier fit stayed
    assert not hasattr(clf, "feature_names_in_") and clf.n_features_in_ == 3


def test_classes_in_another_order_than_sorted_give_the_losses_of_their_labels():
    # labels were found by a binary search of classes_, as if sorted: risk_ 0.716 where the
    # rule's risk is 0 (and an IndexError with 2 classes)
    from estimators import Reordered
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    y = np.array(["setosa", "versicolor", "virginica"])[y]
    model = LogisticRegression(max_iter=2000).fit(X, y)
    wrapped = Reordered(model, np.array([1, 0, 2]))
    got = SelectiveClassifier(wrapped, CostBased(0.5), prefit=True).fit(X, y)
    plain = SelectiveClassifier(model, CostBased(0.5), prefit=True).fit(X, y)
    assert got.reject_model_.risk_ == plain.reject_model_.risk_
    np.testing.assert_array_equal(got.predict(X), plain.predict(X))


def test_misused_estimators_and_labels_get_one_line():
    from sklearn.linear_model import LinearRegression
    from sklearn.svm import SVC

    X = np.random.default_rng(0).normal(size=(150, 4))
    y = np.repeat([0, 1, 2], 50)
    with pytest.raises(ValueError, match=r"^score_func='margin' needs one decision column per "
                       r"class \(3\); this SVC gives pairwise \(one-vs-one\) columns"):
        SelectiveClassifier(SVC(decision_function_shape="ovo"), random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"^estimator must be a classifier \(with classes_\); "
                       r"this LinearRegression is fitted but has none\.$"):
        SelectiveClassifier(LinearRegression().fit(X, y), prefit=True).fit(X, y)
    with pytest.raises(ValueError, match=r"^estimator must be a classifier \(with classes_\); "
                       r"this LinearRegression has none after its fit\.$"):
        SelectiveClassifier(LinearRegression(), random_state=0).fit(X, y)
    fitted = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"^X and y must have the same length; got X has 100, "
                       r"y has 150\.$"):
        SelectiveClassifier(fitted, prefit=True).fit(X[:100], y)
    mixed = np.array([1, "a", 2.0] * 50, dtype=object)
    with pytest.raises(ValueError, match=r"^y must hold class labels of one kind"):
        SelectiveClassifier(LogisticRegression(), random_state=0).fit(X, mixed)


def test_one_vs_one_decisions_are_refused_only_where_they_are_pairwise():
    # a binary "ovo" SVC decides with one column, as "ovr" does: it was refused; a 3-class
    # "ovo" SVC inside a pipeline gave 3 pairwise columns and was taken as per class
    from sklearn.datasets import make_classification
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = make_classification(300, 5, n_informative=3, n_classes=2, random_state=0)
    ovr = SelectiveClassifier(SVC(), score_func="margin", random_state=0).fit(X, y)
    ovo = SelectiveClassifier(SVC(decision_function_shape="ovo"), score_func="margin",
                              random_state=0).fit(X, y)
    np.testing.assert_array_equal(ovo.uncertainty(X), ovr.uncertainty(X))
    X3, y3 = make_classification(300, 5, n_informative=3, n_classes=3, random_state=0)
    piped = make_pipeline(StandardScaler(), SVC(decision_function_shape="ovo"))
    with pytest.raises(ValueError, match=r"^score_func='margin' needs one decision column per "
                       r"class \(3\); this SVC gives pairwise"):
        SelectiveClassifier(piped, score_func="margin", random_state=0).fit(X3, y3)
