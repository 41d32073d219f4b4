"""Learned scores (LossRegression, SELE, TCP) against references (sections 3.3-3.4, 5.1)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import scipy.optimize
from reference.scores_ref import predicted_class_design_ref, ridge_ref, sele_proxy_ref
from reference.strategies import random_losses

from abstain import load_json
from abstain.exceptions import ConvergenceWarning, NotFittedError
from abstain.metrics import aurc
from abstain.scores import (
    PAPER_C_GRID,
    SELE,
    TCP,
    LossRegression,
    sele_objective,
    select_regularization,
    true_class_probability,
)
from abstain.scores._learned import _chunks, _SeleProblem

LEARNERS = (LossRegression, SELE, TCP)


def random_problem(rng, n=60, d=3, k=3, kind="quarters"):
    X = rng.normal(size=(n, d))
    X[:, 0] = np.round(X[:, 0])  # ties in a feature give ties in the score
    y_pred = rng.integers(0, k, n)
    return X, y_pred, random_losses(rng, n, kind)


def synthetic_known_risk(rng, n):
    """Two predicted classes; the conditional risk is linear in x0 within each class."""
    X = rng.uniform(size=(n, 2))
    y_pred = (X[:, 1] > 0.5).astype(int)
    risk = np.where(y_pred == 0, 0.05 + 0.5 * X[:, 0], 0.3 - 0.25 * X[:, 0])
    losses = (rng.uniform(size=n) < risk).astype(float)
    return X, y_pred, risk, losses


# ---------------------------------------------------------------- the SELE objective


@pytest.mark.parametrize("seed", range(6))
def test_sele_objective_matches_double_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    losses = random_losses(rng, n, ["zero_one", "quarters", "exponential"][seed % 3])
    scores = rng.integers(-2, 3, n) * rng.choice([0.5, 3.0])  # heavy ties, large gaps
    groups = rng.integers(0, 3, n)
    assert sele_objective(scores, losses) == pytest.approx(
        sele_proxy_ref(scores, losses), rel=1e-12
    )
    assert sele_objective(scores, losses, groups=groups) == pytest.approx(
        sele_proxy_ref(scores, losses, groups), rel=1e-12
    )


def _problem(seed, C, chunk_size):
    rng = np.random.default_rng(seed)
    X, y_pred, losses = random_problem(rng, n=90)
    model = SELE(C=C, chunk_size=chunk_size)
    design = model._design(X, y_pred, fitting=True)
    chunks = _chunks(losses[design.order], chunk_size, np.random.default_rng(seed))
    return _SeleProblem(design, chunks, C, 3), design, chunks, losses, rng


@pytest.mark.parametrize(("C", "chunk_size"), [(0.0, None), (0.7, None), (0.3, 20), (2.0, 7)])
def test_sele_value_gradient_and_hessian(C, chunk_size):
    problem, design, chunks, losses, rng = _problem(3, C, chunk_size)
    shape = (problem.n_blocks, design.rows.shape[1])
    theta = rng.normal(size=problem.size)
    value, grad = problem.value_grad(theta)
    # Value: the double loop on the sorted rows, chunk by chunk, plus the ridge term.
    scores = design.rows @ np.zeros(design.rows.shape[1])  # shape only
    scores = np.array(
        [
            design.rows[i] @ theta.reshape(shape)[_block_of(design, i)]
            for i in range(len(scores))
        ]
    )
    groups = np.zeros(len(scores), int)
    for label, chunk in enumerate(chunks):
        groups[chunk.rows] = label
    ref = sele_proxy_ref(scores, losses[design.order], groups) + 0.5 * C * theta @ theta
    assert value == pytest.approx(ref, rel=1e-12)
    # Gradient against central finite differences.
    err = scipy.optimize.check_grad(
        lambda t: problem.value_grad(t)[0], lambda t: problem.value_grad(t)[1], theta
    )
    assert err <= 1e-6 * max(1.0, np.linalg.norm(grad))
    # Hessian-vector products against differences of the gradient.
    v = rng.normal(size=theta.size)
    eps = 1e-6
    fd = (problem.value_grad(theta + eps * v)[1] - problem.value_grad(theta - eps * v)[1]) / (
        2 * eps
    )
    hv = problem.hessp(theta, v)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7 * np.linalg.norm(fd))


def _block_of(design, i):
    return int(np.searchsorted(design.bounds, i, side="right") - 1)


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_sele_reaches_the_optimum_of_the_reference_objective(C):
    rng = np.random.default_rng(5)
    X, y_pred, losses = random_problem(rng, n=24, d=2, k=2)
    model = SELE(C=C, chunk_size=None, tol=1e-9).fit(X, y_pred, losses)
    phi = predicted_class_design_ref(X, y_pred, [0, 1])

    def objective(theta):
        return sele_proxy_ref(phi @ theta, losses) + 0.5 * C * theta @ theta

    ref = scipy.optimize.minimize(
        objective, np.zeros(phi.shape[1]), method="BFGS", options={"gtol": 1e-9}
    )
    assert model.converged_
    assert model.objective_ == pytest.approx(objective(model._theta().ravel()), rel=1e-12)
    assert model.objective_ <= ref.fun + 1e-10
    assert model.objective_ == pytest.approx(ref.fun, rel=1e-8)
    assert model.gap_bound_ < 1e-12


def test_sele_objective_attribute_is_the_exact_objective():
    rng = np.random.default_rng(8)
    X, y_pred, losses = random_problem(rng, n=50)
    model = SELE(C=0.5, chunk_size=None).fit(X, y_pred, losses)
    theta = model._theta().ravel()
    expected = sele_objective(model.decision_function(X, y_pred), losses) + 0.25 * theta @ theta
    assert model.objective_ == pytest.approx(expected, rel=1e-10)


def test_sele_chunks_follow_random_state():
    rng = np.random.default_rng(2)
    X, y_pred, losses = random_problem(rng, n=200)
    a = SELE(C=1, chunk_size=30, random_state=4).fit(X, y_pred, losses)
    b = SELE(C=1, chunk_size=30, random_state=4).fit(X, y_pred, losses)
    c = SELE(C=1, chunk_size=30, random_state=5).fit(X, y_pred, losses)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_sele_warm_start_reaches_the_same_optimum():
    rng = np.random.default_rng(6)
    X, y_pred, losses = random_problem(rng, n=300)
    cold = SELE(C=0.1, random_state=0, tol=1e-9).fit(X, y_pred, losses)
    warm = SELE(C=10, random_state=0, warm_start=True, tol=1e-9).fit(X, y_pred, losses)
    warm.set_params(C=0.1).fit(X, y_pred, losses)
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=1e-5, atol=1e-7)


def test_sele_warns_when_it_stops_early():
    X = np.arange(20.0)[:, None]
    losses = (X[:, 0] >= 10).astype(float)  # perfectly rankable: no minimum with C = 0
    with pytest.warns(ConvergenceWarning, match="raise max_iter or C"):
        model = SELE(C=0, chunk_size=None, max_iter=3, features="shared").fit(X, None, losses)
    assert not model.converged_
    assert model.gap_bound_ == np.inf


# ---------------------------------------------------------------- ridge scores


@pytest.mark.parametrize("C", [0.0, 0.1, 3.0])
@pytest.mark.parametrize("features", ["predicted_class", "shared"])
def test_loss_regression_matches_dense_ridge(C, features):
    rng = np.random.default_rng(int(C * 10) + len(features))
    X, y_pred, losses = random_problem(rng, n=40, k=4)
    y_pred[y_pred == 3] = 0  # class 3 is declared but never predicted
    model = LossRegression(C=C, features=features, classes=[0, 1, 2, 3]).fit(X, y_pred, losses)
    if features == "shared":
        phi = predicted_class_design_ref(X, np.zeros(40, int), [0])
    else:
        phi = predicted_class_design_ref(X, y_pred, [0, 1, 2, 3])
    theta = ridge_ref(phi, losses, C)
    np.testing.assert_allclose(model.score(X, y_pred), phi @ theta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model._theta().ravel(), theta, rtol=1e-7, atol=1e-9)
    if features == "predicted_class":
        np.testing.assert_array_equal(model.coef_[3], 0.0)


def test_tcp_is_the_negated_ridge_of_the_true_class_probability():
    rng = np.random.default_rng(9)
    X, y_pred, _ = random_problem(rng, n=50)
    proba = rng.dirichlet(np.ones(3), size=50)
    y_true = rng.integers(0, 3, 50)
    p_true = true_class_probability(proba, y_true)
    np.testing.assert_array_equal(p_true, proba[np.arange(50), y_true])
    model = TCP(C=0.2).fit(X, y_pred, p_true)
    phi = predicted_class_design_ref(X, y_pred, [0, 1, 2])
    np.testing.assert_allclose(
        model.score(X, y_pred), -(phi @ ridge_ref(phi, p_true, 0.2)), rtol=1e-9, atol=1e-12
    )


# ---------------------------------------------------------------- proper scores


@pytest.mark.parametrize(
    "learner", [LossRegression(C=0), SELE(C=0, random_state=0)], ids=["REG", "SELE"]
)
def test_learned_scores_recover_a_proper_score(learner):
    """Definition 1: the learned score ranks like the known conditional risk."""
    rng = np.random.default_rng(0)
    X, y_pred, _, losses = synthetic_known_risk(rng, 10000)
    X_test, y_test, risk_test, _ = synthetic_known_risk(rng, 10000)
    score = learner.fit(X, y_pred, losses).score(X_test, y_test)
    # AuRC with the true conditional risks as losses: the expected test AuRC.
    assert aurc(risk_test, score) <= 1.02 * aurc(risk_test, risk_test)
    # Within each predicted class the risk depends on x0 alone, with known signs.
    assert learner.coef_[0, 0] > 5 * abs(learner.coef_[0, 1])
    assert learner.coef_[1, 0] < -5 * abs(learner.coef_[1, 1])


def test_loss_regression_recovers_the_conditional_risk():
    rng = np.random.default_rng(1)
    X, y_pred, _, losses = synthetic_known_risk(rng, 40000)
    model = LossRegression(C=0).fit(X, y_pred, losses)
    np.testing.assert_allclose(model.coef_[:, 0], [0.5, -0.25], atol=0.03)
    np.testing.assert_allclose(model.coef_[:, 1], [0.0, 0.0], atol=0.03)


# ---------------------------------------------------------------- regularisation search


@pytest.mark.parametrize(
    "learner", [LossRegression(), SELE(random_state=0), TCP()], ids=["REG", "SELE", "TCP"]
)
def test_select_regularization_takes_the_best_validation_aurc(learner):
    rng = np.random.default_rng(3)
    X, y_pred, _, losses = synthetic_known_risk(rng, 1200)
    target = 1.0 - losses if isinstance(learner, TCP) else losses
    search = select_regularization(
        learner, X[:800], y_pred[:800], target[:800], X[800:], y_pred[800:], losses[800:]
    )
    assert search.grid == PAPER_C_GRID
    for c, value in zip(search.grid, search.validation_aurc, strict=True):
        refit = type(learner)(**{**learner.get_params(), "C": c}).fit(
            X[:800], y_pred[:800], target[:800]
        )
        assert value == pytest.approx(
            aurc(losses[800:], refit.score(X[800:], y_pred[800:])), rel=1e-6
        )
    best = int(np.argmin(search.validation_aurc))
    assert search.validation_aurc[best] == search.validation_aurc.min()
    assert search.best.C == search.C
    assert search.validation_aurc[search.grid.index(search.C)] == search.validation_aurc.min()


def test_select_regularization_prefers_the_larger_C_on_ties():
    X = np.arange(6.0)[:, None]
    losses = np.array([0, 0, 0, 1, 1, 1.0])
    search = select_regularization(
        LossRegression(features="shared"), X, None, losses, X, None, losses, grid=(0.0, 1.0, 10.0)
    )
    assert len(set(search.validation_aurc.tolist())) == 1
    assert search.C == 10.0


def test_select_regularization_seeds_an_unseeded_sele_from_its_random_state():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y_pred = rng.integers(0, 2, 400)
    losses = (rng.uniform(size=400) < 1 / (1 + np.exp(-X[:, 0]))).astype(float)
    tr, va = slice(0, 250), slice(250, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        runs = [select_regularization(SELE(chunk_size=50), X[tr], y_pred[tr], losses[tr],
                                      X[va], y_pred[va], losses[va], grid=(1.0, 100.0),
                                      random_state=0) for _ in range(2)]
    assert np.array_equal(runs[0].validation_aurc, runs[1].validation_aurc)
    assert runs[0].best.random_state == runs[1].best.random_state is not None


# ---------------------------------------------------------------- serialisation and API


@pytest.mark.parametrize("cls", LEARNERS)
def test_json_round_trip(cls):
    rng = np.random.default_rng(4)
    X, _, losses = random_problem(rng, n=80)
    y_pred = np.array(["cat", "dog", "eel"])[rng.integers(0, 3, 80)]
    target = np.clip(losses / 2, 0, 1) if cls is TCP else losses
    model = (
        cls(C=0.0 if cls is SELE else 1.0).fit(X, y_pred, target)
        if cls is not SELE
        else (cls(C=0.5, random_state=1).fit(X, y_pred, target))
    )
    text = model.to_json()
    json.loads(text)  # plain JSON
    loaded = load_json(text)
    assert type(loaded) is cls and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.score(X, y_pred), model.score(X, y_pred))


def test_json_of_unregularised_sele_keeps_the_infinite_gap_bound():
    X = np.arange(8.0)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SELE(C=0, chunk_size=None, max_iter=2, features="shared").fit(
            X, None, (X[:, 0] > 3).astype(float)
        )
    assert json.loads(model.to_json())["fitted"]["gap_bound_"] == "inf"
    assert load_json(model.to_json()).gap_bound_ == np.inf
    # a finite bound where no minimum need exist claims an optimality that no fit shows
    doc = json.loads(model.to_json())
    doc["fitted"]["gap_bound_"] = 1e-20
    with pytest.raises(ValueError, match=r"^fitted\.gap_bound_ must be inf for params\.C = 0"):
        load_json(json.dumps(doc))
    rng = np.random.default_rng(5)
    X, y_pred, losses = random_problem(rng)
    doc = json.loads(SELE(C=1.0, random_state=0).fit(X, y_pred, losses).to_json())
    doc["fitted"]["gap_bound_"] = "inf"
    with pytest.raises(ValueError, match=r"^fitted\.gap_bound_ must be finite for params\.C = "
                                         r"1\.0 without a baseline"):
        load_json(json.dumps(doc))


def test_json_refuses_other_documents():
    text = LossRegression().fit([[0.0], [1.0]], [0, 0], [0, 1]).to_json()
    with pytest.raises(ValueError, match="^format must be 'abstain/1'"):
        load_json('{"format": "abstain.score/1", "model": "Evil", "params": {}, "fitted": {}}')
    doc = json.loads(text)
    doc["fitted"]["evil_"] = 1
    with pytest.raises(ValueError, match="fitted.evil_ is not a fitted attribute"):
        load_json(json.dumps(doc))
    del doc["fitted"]["evil_"], doc["fitted"]["coef_"]
    with pytest.raises(ValueError, match="fitted.coef_ is missing"):
        load_json(json.dumps(doc))


@pytest.mark.parametrize("cls", LEARNERS)
def test_sklearn_clone(cls):
    sklearn_base = pytest.importorskip("sklearn.base")
    model = cls(C=10.0)
    clone = sklearn_base.clone(model)
    assert clone.get_params() == model.get_params() and clone is not model


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", LEARNERS)
def test_bad_input(cls):
    X = np.arange(8.0).reshape(4, 2)
    y_pred = np.array([0, 1, 0, 1])
    target = np.array([0.0, 1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="X must be finite"):
        cls().fit(np.where(X == 2, np.nan, X), y_pred, target)
    with pytest.raises(ValueError, match="X must be a non-empty 2-D array"):
        cls().fit(X[:, 0], y_pred, target)
    with pytest.raises(ValueError, match="X must be a non-empty 2-D array"):
        cls().fit(np.empty((0, 2)), y_pred[:0], target[:0])
    with pytest.raises(ValueError, match="must have the same length"):
        cls().fit(X, y_pred[:3], target)
    with pytest.raises(ValueError, match="must have the same length"):
        cls().fit(X, y_pred, target[:3])
    with pytest.raises(ValueError, match="must be non-negative"):
        cls().fit(X, y_pred, -target)
    with pytest.raises(ValueError, match="must be finite"):
        cls().fit(X, y_pred, np.where(target == 1, np.inf, target))
    with pytest.raises(ValueError, match=r"C must be a finite number in \[0, inf\)"):
        cls(C=-1).fit(X, y_pred, target)
    with pytest.raises(ValueError, match="features must be one of"):
        cls(features="pixels").fit(X, y_pred, target)
    with pytest.raises(ValueError, match="y_pred must be given"):
        cls().fit(X, None, target)
    with pytest.raises(NotFittedError):
        cls().score(X, y_pred)
    model = cls().fit(X, y_pred, target)
    with pytest.raises(ValueError, match="y_pred must hold labels in classes_"):
        model.score(X, [0, 1, 2, 0])
    with pytest.raises(ValueError, match="X must have 2 features"):
        model.score(X[:, :1], y_pred)


def test_bad_input_specific_to_one_learner():
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ValueError, match=r"true_class_proba must lie in \[0, 1\]"):
        TCP(features="shared").fit(X, None, [0.2, 1.5, 0.3, 0.1])
    for bad in (1, 2.5, True, 0):
        with pytest.raises(ValueError, match="chunk_size must be an integer >= 2"):
            SELE(chunk_size=bad).fit(X, [0] * 4, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        SELE(max_iter=0).fit(X, [0] * 4, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="at least 2 samples"):
        SELE().fit(X[:1], [0], [1.0])
    with pytest.raises(ValueError, match="proba must be finite"):
        true_class_probability([[np.nan, 1.0]], [0])
    with pytest.raises(ValueError, match=r"y must hold class indices in 0..1"):
        true_class_probability([[0.5, 0.5]], [2])
    with pytest.raises(ValueError, match="grid must hold at least one value"):
        select_regularization(
            LossRegression(), X, None, [0, 1, 0, 1], X, None, [0, 1, 0, 1], grid=()
        )
    # NaN is no class (the message listed NaN among classes_ and then said it was not one),
    # and labels of mixed kinds ended in NumPy's TypeError
    with pytest.raises(ValueError, match=r"^y_pred must hold class labels, not NaN"):
        LossRegression().fit(X, [0.0, 1.0, np.nan, 1.0], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^y_pred must hold class labels of one kind"):
        LossRegression().fit(X, np.array([0, "a", 0, "a"], dtype=object), [0, 1, 0, 1])
    # validation rows that disagree are named as given (the message named X and y_pred)
    with pytest.raises(ValueError, match=r"^X_val and losses_val must have the same length "
                                         r"\(one row per validation sample\); got X_val has 2, "
                                         r"losses_val has 4\.$"):
        select_regularization(LossRegression(), X, None, [0, 1, 0, 1], X[:2], None,
                              [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^grid must be a sequence of values of C; got 1\.0"):
        select_regularization(
            LossRegression(), X, None, [0, 1, 0, 1], X, None, [0, 1, 0, 1], grid=1.0
        )
    with pytest.raises(ValueError, match="grid value must be a finite number"):
        select_regularization(
            LossRegression(), X, None, [0, 1, 0, 1], X, None, [0, 1, 0, 1], grid=(1.0, -1.0)
        )


def test_least_squares_scores_do_not_depend_on_the_units_of_a_feature():
    # C = 0: the cut-off of small singular values dropped the intercept beside features in
    # units of 1e15 (30 rows), or of 1e14 (20,000 rows in one block)
    from abstain.scores import TCP, LossRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    yp = rng.integers(0, 3, 30)
    losses = rng.uniform(size=30)
    ref = LossRegression(C=0).fit(X, yp, losses).score(X, yp)
    for scale in (1e15, 1e16, 1e150, np.array([1.0, 1e16])):
        got = LossRegression(C=0).fit(X * scale, yp, losses).score(X * scale, yp)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    Z = rng.normal(size=(20000, 2))
    target = (rng.uniform(size=20000) < 0.6).astype(float)
    one = LossRegression(C=0, features="shared").fit(Z, None, target)
    big = LossRegression(C=0, features="shared").fit(Z * 1e14, None, target)
    assert big.intercept_[0] == pytest.approx(one.intercept_[0], rel=1e-12)
    p = rng.uniform(size=30)
    tcp = TCP(C=0).fit(X * 1e15, yp, p).score(X * 1e15, yp)
    np.testing.assert_allclose(tcp, TCP(C=0).fit(X, yp, p).score(X, yp), rtol=0, atol=1e-12)


def test_a_document_that_no_fit_writes_is_refused():
    from abstain.ordinal import SVOR
    from abstain.scores import SELE, LossRegression

    rng = np.random.default_rng(0)
    X, yp = rng.normal(size=(40, 2)), rng.integers(0, 3, 40)
    losses = rng.uniform(size=40)
    reg = LossRegression(C=0.1, classes=[0, 1, 2, 3]).fit(X, yp, losses)
    doc = json.loads(reg.to_json())
    doc["fitted"]["classes_"] = [0, 1, 2, 5]  # scored label 5, refused label 3
    with pytest.raises(ValueError, match=r"^fitted\.classes_ must be the sorted distinct "
                                         r"params\.classes \[0, 1, 2, 3\]; got \[0, 1, 2, 5\]"):
        load_json(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sele = SELE(C=0.1, random_state=0).fit(X, yp, (losses > 0.5) * 1.0)
    doc = json.loads(sele.to_json())
    doc["fitted"]["objective_"] = -5.0
    with pytest.raises(ValueError, match=r"^fitted\.objective_ must be a finite number >= 0"):
        load_json(json.dumps(doc))
    svor = SVOR(C=1.0).fit(X, rng.integers(0, 3, 40))
    for name in ("objective_", "gap_"):
        doc = json.loads(svor.to_json())
        doc["fitted"][name] = -1.0
        with pytest.raises(ValueError, match=rf"^fitted\.{name} must be a finite number >= 0"):
            load_json(json.dumps(doc))


def test_sele_objective_sums_the_pairs_of_rows_with_a_loss_in_blocks():
    # every m^2 pair of a chunk was built at once, although the rows without a loss add
    # nothing (6.1 s and 1.6 GB at 1e4 rows with 5% errors; about 38 GB at 4e4): 3,000 rows,
    # a third with a loss, take two blocks of 2**21 pairs
    rng = np.random.default_rng(3)
    n = 3000
    scores = rng.normal(size=n).round(1)
    losses = (rng.random(n) < 1 / 3) * rng.random(n)
    full = float(losses @ np.logaddexp(0.0, scores[None, :] - scores[:, None]).sum(axis=1))
    assert sele_objective(scores, losses) == pytest.approx(full / n**2, rel=1e-12)
    groups = np.ma.masked_array(np.zeros(n), mask=np.arange(n) == 5)
    with pytest.raises(ValueError, match="^groups must not be a masked array with masked"):
        sele_objective(scores, losses, groups=groups)


def test_sele_objective_refuses_nan_chunk_labels():
    # np.unique keeps each NaN apart and labels == nan selects no row: a ZeroDivisionError
    with pytest.raises(ValueError, match="^groups must hold finite chunk labels"):
        sele_objective([0.1, 0.2, 0.3], [0.0, 1.0, 0.0], groups=[np.nan, np.nan, 0.0])
    # None beside a number has no order: NumPy's TypeError from sorting the labels
    with pytest.raises(ValueError, match=r"^groups must hold chunk labels of one kind"):
        sele_objective([0.0, 1.0], [1.0, 1.0], groups=[None, 1])


def test_features_and_scores_beyond_the_float64_range_are_refused_in_one_line():
    # SciPy's "array must not contain infs or NaNs", or a constant SELE score whose own
    # document load_json refused (an infinite gap bound with C > 0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y_pred = rng.integers(0, 3, 60)
    losses = (rng.uniform(size=60) < 0.3).astype(float)
    for scale in (1e150, 1e160):
        with pytest.raises(ValueError, match=r"^X holds features of magnitude up to .* overflow "
                                             r"float64 in the SELE objective's derivatives"):
            SELE(C=1.0, chunk_size=None).fit(X * scale, y_pred, losses)
    with pytest.raises(ValueError, match=r"^X holds features of magnitude up to .* Gram "
                                         r"matrix; scale the features \(C=0 scales them"):
        LossRegression(C=1.0).fit(X * 1e160, y_pred, losses)
    LossRegression(C=0.0).fit(X * 1e160, y_pred, losses)  # scales the columns itself
    for losses_ in ([0.0, 1e-10], [0.0, 0.0]):  # whether or not the pair adds a term
        with pytest.raises(ValueError, match=r"^scores must differ by less than the float64 "
                                             r"range"):
            sele_objective([1.5e308, -1.5e308], losses_)
    with pytest.raises(ValueError, match=r"^groups must be a 1-D array of chunk labels, one per "
                                         r"score; got shape \(2, 2\)\.$"):
        sele_objective([0.1, 0.2], [0.0, 1.0], groups=[[0, 1], [1, 0]])


def test_chunked_sele_does_not_depend_on_the_row_order():
    # the seeded permutation indexed the rows as given: other chunks for another row order
    rng = np.random.default_rng(3)
    X, y_pred, losses = random_problem(rng, n=400)
    model = SELE(C=1.0, chunk_size=50, random_state=0).fit(X, y_pred, losses)
    for _ in range(3):
        p = rng.permutation(400)
        other = SELE(C=1.0, chunk_size=50, random_state=0).fit(X[p], y_pred[p], losses[p])
        np.testing.assert_allclose(other.coef_, model.coef_, rtol=0, atol=1e-9)
        np.testing.assert_allclose(other.objective_, model.objective_, rtol=1e-12)


@pytest.mark.parametrize("C", [0.0, 1.0])
def test_sele_on_equal_losses_converges_at_its_start(C):
    # the tolerance came from the first gradient, which is round-off there: a warning and
    # converged_ False at the optimum
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = SELE(C=C, chunk_size=None).fit(X, rng.integers(0, 3, 300), np.ones(300))
    assert model.converged_ and np.abs(model.coef_).max() < 1e-12


def test_a_tiny_c_whose_gap_bound_overflows_writes_a_document_that_loads():
    # grad_norm**2 / (2 C) overflowed to inf, and load_json refused the fit's own document
    from estimators import TRAIN

    X, y_pred, losses = TRAIN["F"], TRAIN["pred"], TRAIN["losses"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SELE(C=1e-315, max_iter=1, random_state=0).fit(X, y_pred, losses)
    assert model.gap_bound_ == np.inf
    again = load_json(model.to_json())
    assert again.decision_function(X, y_pred).tolist() == \
        model.decision_function(X, y_pred).tolist()


def test_least_squares_in_small_units_is_the_least_squares_fit():
    # columns in units of 1e-200 had a norm that underflowed to 0: left tiny, cut off by
    # the solver (squared error 13.55 against 10.728); C = 1e308 ended in SciPy's message
    rng = np.random.default_rng(3)
    X, y_pred, losses = random_problem(rng, n=90)
    want = LossRegression(C=0.0).fit(X, y_pred, losses).decision_function(X, y_pred)
    for scale in (1e-200, 1e-300):
        got = LossRegression(C=0.0).fit(X * scale, y_pred, losses).decision_function(
            X * scale, y_pred)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match=r"^C must be below the float64 range divided by the "
                                         r"rows"):
        LossRegression(C=1e308).fit(X, y_pred, losses)


def test_features_too_small_for_float64_coefficients_are_refused():
    # the least-squares coefficient of features near 1e-310 is beyond float64: every score
    # came out inf with only a RuntimeWarning
    X = np.array([[1.0], [2.0], [3.0], [4.0]]) * 1e-310
    with pytest.raises(ValueError, match=r"^X holds features so small that the least-squares "
                                         r"coefficients go beyond float64"):
        LossRegression(C=0.0).fit(X, [0, 0, 0, 0], [0.0, 1.0, 0.0, 2.0])


@pytest.mark.parametrize("unit", [2.0**-700, 1e-300, 1e-200, 1e-170, 1e-100, 1e60, 1e200, 1e300])
@pytest.mark.parametrize("C", [0.0, 0.5])
def test_sele_fits_the_same_coefficients_in_any_unit_of_the_losses(unit, C):
    # multiplying the losses by a constant scales F; with C scaled alike the minimiser is
    # the same. Far from 1, gradient norms underflowed (a zero score marked converged) or
    # float32 curvatures overflowed (SciPy's "array must not contain infs")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    losses = (rng.uniform(size=120) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
    ref = SELE(C=C, chunk_size=None).fit(X, np.zeros(120, int), losses)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no ConvergenceWarning
        fit = SELE(C=C * unit, chunk_size=None).fit(X, np.zeros(120, int), losses * unit)
    assert fit.converged_
    np.testing.assert_allclose(fit.coef_, ref.coef_, rtol=1e-6)
    assert fit.objective_ == pytest.approx(ref.objective_ * unit, rel=1e-9, abs=0.0)


def test_sele_refuses_a_C_beyond_float64_against_tiny_losses():
    X = np.random.default_rng(0).normal(size=(20, 2))
    losses = np.r_[np.ones(10), np.zeros(10)] * 1e-300
    with pytest.raises(ValueError, match=r"^C = 10000000000\.0 is too large for losses"):
        SELE(C=1e10, chunk_size=None).fit(X, np.zeros(20, int), losses)


def test_nan_labels_of_every_kind_get_one_line():
    # only float NaN was refused: NaT, complex or object NaN never equal themselves, so a
    # chunk held no row (ZeroDivisionError) or a label was "unknown" beside itself
    for groups in (np.array(["2020-01-01", "NaT", "2020-01-01"], dtype="datetime64[D]"),
                   np.array([1 + 0j, complex(np.nan, 0), 1 + 0j]),
                   np.array([1, np.nan, 1], dtype=object)):
        with pytest.raises(ValueError, match="^groups must hold finite chunk labels"):
            sele_objective([0.1, 0.2, 0.3], [0.0, 1.0, 0.0], groups=groups)
    X = np.random.default_rng(0).normal(size=(3, 2))
    for y_pred in (np.array([0, np.nan, 1], dtype=object),
                   np.array(["2020-01-01", "NaT", "2020-01-02"], dtype="datetime64[D]")):
        with pytest.raises(ValueError, match=r"^y_pred must hold class labels, not NaN; got "
                                             r"NaN in 1 row\(s\)\.$"):
            LossRegression().fit(X, y_pred, [0.0, 1.0, 0.0])


def test_select_regularization_refuses_a_bad_seed_before_any_fit():
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(30, 2)), rng.normal(size=(20, 2))
    losses, losses_val = rng.integers(0, 2, 30) * 1.0, rng.integers(0, 2, 20) * 1.0
    for seed in ("a", 1.5, -1):
        with pytest.raises(ValueError, match=r"^random_state must be None, an integer >= 0"):
            select_regularization(SELE(chunk_size=5), X, None, losses, Xv, None, losses_val,
                                  random_state=seed)


def test_load_json_refuses_learned_scores_no_fit_writes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    losses = (rng.uniform(size=40) < 0.4).astype(float)
    doc = json.loads(SELE(C=1.0, chunk_size=None, features="shared").fit(X, None, losses)
                     .to_json())
    doc["fitted"]["n_iter_"] = 10**6
    with pytest.raises(ValueError, match=r"fitted\.n_iter_ must be at most params\.max_iter"):
        load_json(json.dumps(doc))
    doc = json.loads(LossRegression(features="shared").fit(X, None, losses).to_json())
    doc["fitted"]["classes_"] = ["x", "y"]
    with pytest.raises(ValueError, match=r"fitted\.classes_ must be \[\] with features="):
        load_json(json.dumps(doc))


@pytest.mark.parametrize("unit", [2.0**-600, 1e-200, 2.0**600, 1e250])
def test_sele_gap_bound_is_in_the_units_of_the_losses(unit):
    # (grad_norm * unit) ** 2 under- or overflowed: a bound of 0.0 (claiming an exact
    # optimum), or inf, which load_json then refused for C > 0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    losses = (rng.uniform(size=120) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
    ref = SELE(C=0.5, chunk_size=None).fit(X, np.zeros(120, int), losses)
    fit = SELE(C=0.5 * unit, chunk_size=None).fit(X, np.zeros(120, int), losses * unit)
    # a bound on the residual of the last step: the same order of magnitude in any unit
    assert ref.gap_bound_ * unit / 10 <= fit.gap_bound_ <= ref.gap_bound_ * unit * 10
    load_json(fit.to_json())


def test_sele_on_losses_near_1e200_saves_and_loads_its_infinite_gap_bound():
    # the bound grad**2 / (2 C) in units of such losses overflows: the fit wrote inf, which
    # load_json refused as "must be finite for params.C = 1.0"
    rng = np.random.default_rng(5)
    X, y_pred, losses = random_problem(rng)
    model = SELE(C=1.0, random_state=0).fit(X, y_pred, losses * 1e200)
    assert model.gap_bound_ == np.inf
    loaded = load_json(model.to_json())
    np.testing.assert_array_equal(loaded.score(X, y_pred), model.score(X, y_pred))


@pytest.mark.parametrize("cls", [LossRegression, SELE])
def test_a_baseline_near_the_float_maximum_is_fitted(cls):
    # the baseline's unit was 2**1024 (math.ldexp overflowed: OverflowError)
    rng = np.random.default_rng(0)
    X, y_pred, losses = random_problem(rng)
    u0 = rng.uniform(0.5, 1.0, losses.size) * 1.7e308
    model = cls(C=1.0).fit(X, y_pred, losses, baseline=u0)
    assert np.isfinite(model.score(X, y_pred, baseline=u0)).all()
    small = cls(C=1.0).fit(X, y_pred, losses, baseline=u0 * 2.0**-1000)
    np.testing.assert_array_equal(small.score(X, y_pred, baseline=u0 * 2.0**-1000),
                                  model.score(X, y_pred, baseline=u0))


def test_labels_a_saved_score_cannot_keep_are_refused_at_fit():
    # bytes, dates and NaN classes were fitted, then to_json refused classes_
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    losses = [0.0, 1.0, 0.0, 1.0]
    for y_pred in (np.array([b"a", b"a", b"b", b"b"]),
                   np.array(["2020-01-01"] * 2 + ["2020-01-02"] * 2, dtype="datetime64[D]")):
        with pytest.raises(ValueError, match=r"^y_pred must hold class labels that a saved "
                           r"score keeps: strings, integers or finite numbers; got "):
            LossRegression(C=0).fit(X, y_pred, losses)
    with pytest.raises(ValueError, match=r"^classes must hold class labels that a saved score "
                       r"keeps"):
        LossRegression(classes=[np.nan, 1.0]).fit(X, [1, 1, 1, 1], losses)


@pytest.mark.parametrize("learner", [LossRegression, SELE, TCP])
def test_classes_of_a_model_fitted_on_strings_are_taken(learner):
    # a scikit-learn model fitted on a pandas Series of strings has classes_ of dtype object,
    # which classes= refused as "not a non-empty 1-D array of labels"
    pd = pytest.importorskip("pandas")
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    y_pred = np.array(["dog", "cat", "dog", "cat", "dog", "cat"], dtype=object)
    target = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0] if learner is not TCP else [0.9, 0.2, 0.8, 0.4,
                                                                         0.3, 0.7]
    for classes in (np.array(["cat", "dog", "cow"], dtype=object),
                    pd.Index(["cat", "dog", "cow"]), pd.CategoricalIndex(["cat", "dog", "cow"]),
                    pd.Series(["cat", "dog", "cow"])):
        model = learner(C=0.1, classes=classes).fit(X, y_pred, target)
        assert model.classes_.tolist() == ["cat", "cow", "dog"]
        again = load_json(model.to_json())
        np.testing.assert_array_equal(again.score(X, y_pred), model.score(X, y_pred))
    for bad, match in ((np.array(["a", 1], dtype=object), "of one kind, all numbers or all "
                        "strings; got values such as \\['a', 1\\]"),
                       (np.array([np.nan, 1.0], dtype=object), "that a saved score keeps")):
        with pytest.raises(ValueError, match=rf"^classes must hold class labels {match}"):
            learner(classes=bad).fit(X, y_pred, target)


def test_an_unregularised_fit_keeps_a_column_reaching_2_to_the_1023():
    # C=0 divided each column by the power of two above its largest magnitude: 2.0**1024 is
    # inf for a column reaching 2**1023, which it zeroed (its coefficient 0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y_pred = np.zeros(200, int)
    losses = np.maximum(3.0 * X[:, 0] + 10.0 + 0.1 * rng.normal(size=200), 0.0)
    small = LossRegression(C=0.0, features="shared").fit(X * [2.0**-40, 1.0], y_pred, losses)
    scale = 2.0 ** (1024 - np.frexp(np.abs(X[:, 0]).max())[1])
    with np.errstate(over="raise"):
        big = LossRegression(C=0.0, features="shared").fit(X * [scale, 1.0], y_pred, losses)
    assert big.coef_.ravel()[0] * scale == small.coef_.ravel()[0] * 2.0**-40 != 0.0
    assert big.intercept_[0] == small.intercept_[0]


def test_select_regularization_names_what_it_was_given():
    # a name or a class as the learner gave AttributeError / TypeError; bad validation rows
    # were named X and y_pred, the learner's own arguments
    from abstain.evaluation import evaluate_scores

    rng = np.random.default_rng(0)
    X, yp, loss = rng.normal(size=(40, 2)), rng.integers(0, 2, 40), rng.integers(0, 2, 40) * 1.0
    Xv, ypv, lv = rng.normal(size=(20, 2)), rng.integers(0, 2, 20), rng.integers(0, 2, 20) * 1.0
    for bad, shown in (("REG", "'REG'"), (LossRegression, "the class LossRegression"),
                       (None, "None")):
        with pytest.raises(ValueError, match=rf"^learner must be a score learner, an instance "
                           rf"such as LossRegression\(\), SELE\(\) or TCP\(\); got {shown}\.$"):
            select_regularization(bad, X, yp, loss, Xv, ypv, lv)
    with pytest.raises(ValueError, match=r"^learners\['REG'\] must be a score learner"):
        evaluate_scores(X, yp, None, {"REG": "LossRegression"}, n_splits=1, random_state=0)
    for args, message in (((Xv[:, 0], ypv), r"^X_val must be a non-empty 2-D array"),
                          ((Xv[:, :1], ypv), r"^X_val must have 2 features, as in fit; got 1"),
                          ((Xv, ypv + 5), r"^y_pred_val must hold labels in classes_")):
        with pytest.raises(ValueError, match=message):
            select_regularization(LossRegression(), X, yp, loss, *args, lv)


@pytest.mark.parametrize("unit", [1.0, 1e-13, 1e-100])
def test_sele_fits_features_in_any_units(unit):
    # a first gradient of features in units of 1e-13 fell within the intercept's round-off:
    # all-zero coefficients marked converged_ (AuRC 0.5025 for the optimal 0.2515)
    rng = np.random.default_rng(2)
    r = rng.uniform(0, 1, 400)
    losses = (rng.uniform(size=400) < r).astype(float)
    noise = rng.normal(size=400)
    for X in (r[:, None] * unit, np.column_stack([r * unit, noise])):
        m = SELE(C=0, features="shared", chunk_size=None).fit(X, None, losses)
        assert m.converged_ and m.coef_[0, 0] * unit == pytest.approx(2.27, abs=0.02)


def test_sele_with_a_ridge_ignores_a_column_in_tiny_units_as_before():
    # solving every C in units of each feature gave the ridge a curvature C / 1e-60 on a
    # column of 1e-30: a stalled fit (coef 1.04 for 1.3165), or SciPy's "must not contain
    # infs or NaNs"; with C > 0 the problem is solved in the features' own units
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    losses = (rng.uniform(size=60) < 1 / (1 + np.exp(-2 * x))).astype(float)
    alone = SELE(C=1e-3, features="shared", chunk_size=None).fit(x[:, None], None, losses)
    for e in (30, 100, 200):
        X = np.column_stack([x, rng.normal(size=60) * 10.0**-e])
        m = SELE(C=1e-3, features="shared", chunk_size=None).fit(X, None, losses)
        assert m.converged_
        assert m.coef_[0, 0] == pytest.approx(alone.coef_[0, 0], rel=1e-6)


def test_complex_and_long_double_labels_are_refused_at_fit():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    kinds = [complex] + ([np.longdouble] if np.dtype(np.longdouble).itemsize > 8 else [])
    for y_pred in (np.array([0, 1, 0, 1], dtype=kind) for kind in kinds):
        with pytest.raises(ValueError, match=r"^y_pred must hold class labels that a saved "
                           r"score keeps"):
            LossRegression(C=0).fit(X, y_pred, [0.0, 1.0, 0.0, 1.0])


def test_sele_with_a_ridge_fits_beside_a_column_in_huge_units():
    # with C > 0 in raw units, a noise column of 1e8 made the first gradient so large that
    # the signal's was under the tolerance: coefficient 0, AuRC 0.45, "converged"
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    losses = (rng.uniform(size=300) < 1 / (1 + np.exp(-2 * x))).astype(float)
    X = np.column_stack([x, rng.normal(size=300) * 1e8])
    m = SELE(C=0.01, features="shared", chunk_size=None).fit(X, None, losses)
    alone = SELE(C=0.01, features="shared", chunk_size=None).fit(x[:, None], None, losses)
    assert m.converged_ and m.coef_[0, 0] == pytest.approx(alone.coef_[0, 0], rel=0.05)
