"""The baseline uncertainty as an input of the learned scores, and the safe selection."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.optimize
from reference.metrics_ref import aurc_linearity_ref
from reference.scores_ref import predicted_class_design_ref, ridge_ref, sele_proxy_ref

from abstain import load_json
from abstain.metrics import aurc
from abstain.scores import (
    SELE,
    TCP,
    LossRegression,
    bootstrap_win_fraction,
    select_regularization,
)
from abstain.scores._learned import _chunks, _SeleProblem

LEARNERS = {"REG": LossRegression, "SELE": SELE, "TCP": TCP}


def problem_with_baseline(rng, n=50, d=3, k=3):
    X = rng.normal(size=(n, d))
    X[:, 0] = np.round(X[:, 0])
    y_pred = rng.integers(0, k, n)
    u0 = rng.normal(size=n) * 3.0 + 1.0
    losses = (rng.uniform(size=n) < 1 / (1 + np.exp(-u0))).astype(float)
    return X, y_pred, u0, losses


def augmented(X, y_pred, u0, classes, fitted):
    """The dense design of eq. (37) with the standardised baseline as the last column."""
    z = (u0 - fitted.baseline_mean_) / fitted.baseline_scale_
    return np.column_stack([predicted_class_design_ref(X, y_pred, classes), z])


@pytest.mark.parametrize("C", [0.0, 0.1, 3.0])
@pytest.mark.parametrize("cls", [LossRegression, TCP])
def test_ridge_with_a_baseline_matches_dense_ridge_with_a_free_coefficient(C, cls):
    rng = np.random.default_rng(int(C * 10))
    X, y_pred, u0, losses = problem_with_baseline(rng)
    target = 1.0 - 0.8 * losses if cls is TCP else losses
    model = cls(C=C).fit(X, y_pred, target, baseline=u0)
    assert model.baseline_mean_ == pytest.approx(u0.mean())
    assert model.baseline_scale_ == pytest.approx(u0.std())
    phi = augmented(X, y_pred, u0, [0, 1, 2], model)
    theta = ridge_ref(phi, target, C, free=1)
    sign = -1.0 if cls is TCP else 1.0
    np.testing.assert_allclose(model.score(X, y_pred, baseline=u0), sign * (phi @ theta),
                               rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(model._theta(), theta, rtol=1e-6, atol=1e-8)


def test_ridge_baseline_in_the_span_of_the_features_keeps_a_zero_coefficient():
    rng = np.random.default_rng(2)
    X, y_pred, _, losses = problem_with_baseline(rng)
    u0 = 2.0 * X[:, 1] - 1.0  # a linear function of X: nothing new for C = 0
    model = LossRegression(C=0, features="shared").fit(X, None, losses, baseline=u0)
    plain = LossRegression(C=0, features="shared").fit(X, None, losses)
    assert model.baseline_coef_ == 0.0
    np.testing.assert_allclose(model.score(X, baseline=u0), plain.score(X), atol=1e-10)


def test_sele_with_a_baseline_value_gradient_and_hessian():
    rng = np.random.default_rng(3)
    X, y_pred, u0, losses = problem_with_baseline(rng, n=70)
    model = SELE(C=0.4, chunk_size=20)
    design = model._design(X, y_pred, fitting=True, baseline=u0)
    chunks = _chunks(losses[design.order], 20, np.random.default_rng(0))
    problem = _SeleProblem(design, chunks, 0.4, 3)
    theta = rng.normal(size=problem.size)
    value, grad = problem.value_grad(theta)
    phi = augmented(X, y_pred, u0, [0, 1, 2], model)[design.order]
    groups = np.zeros(70, int)
    for label, chunk in enumerate(chunks):
        groups[chunk.rows] = label
    penalty = theta[:-1] @ theta[:-1]  # the baseline's coefficient is not regularised
    ref = sele_proxy_ref(phi @ theta, losses[design.order], groups) + 0.2 * penalty
    assert value == pytest.approx(ref, rel=1e-12)
    err = scipy.optimize.check_grad(
        lambda t: problem.value_grad(t)[0], lambda t: problem.value_grad(t)[1], theta
    )
    assert err <= 1e-6 * max(1.0, np.linalg.norm(grad))
    v = rng.normal(size=theta.size)
    eps = 1e-6
    fd = (problem.value_grad(theta + eps * v)[1] - problem.value_grad(theta - eps * v)[1]) / (
        2 * eps
    )
    np.testing.assert_allclose(problem.hessp(theta, v), fd, rtol=1e-5,
                               atol=1e-7 * np.linalg.norm(fd))


def test_sele_with_a_baseline_reaches_the_reference_optimum():
    rng = np.random.default_rng(5)
    X, y_pred, u0, losses = problem_with_baseline(rng, n=30, d=2, k=2)
    model = SELE(C=0.3, chunk_size=None, tol=1e-9).fit(X, y_pred, losses, baseline=u0)
    phi = augmented(X, y_pred, u0, [0, 1], model)

    def objective(theta):
        return sele_proxy_ref(phi @ theta, losses) + 0.15 * theta[:-1] @ theta[:-1]

    ref = scipy.optimize.minimize(objective, np.zeros(phi.shape[1]), method="BFGS",
                                  options={"gtol": 1e-9})
    assert model.converged_ and model.gap_bound_ == np.inf
    assert model.objective_ == pytest.approx(ref.fun, rel=1e-8)
    assert model.objective_ <= ref.fun + 1e-10


@pytest.mark.parametrize("name", LEARNERS)
def test_a_large_C_gives_back_the_baseline_ranking(name):
    rng = np.random.default_rng(7)
    X, y_pred, u0, losses = problem_with_baseline(rng, n=200)
    target = 1.0 - 0.5 * losses if name == "TCP" else losses
    model = LEARNERS[name](C=1e9).fit(X, y_pred, target, baseline=u0)
    u = model.score(X, y_pred, baseline=u0)
    assert np.all(np.diff(u[np.argsort(u0)]) > 0)  # strictly increasing in the baseline


@pytest.mark.parametrize("name", LEARNERS)
def test_features_that_carry_nothing_keep_the_baseline_aurc(name):
    """The learned score with the baseline as an input, C chosen on validation data,
    stays within a few percent of the baseline's test AuRC when X is pure noise."""
    rng = np.random.default_rng(11)
    n = 6000
    X = rng.normal(size=(n, 5))
    y_pred = rng.integers(0, 3, n)
    u0 = rng.normal(size=n)
    risk = 1 / (1 + np.exp(-(2.5 * u0 - 2.0)))  # ~20 % errors, ranked by u0 alone
    losses = (rng.uniform(size=n) < risk).astype(float)
    target = 1.0 - risk if name == "TCP" else losses
    trn, val, tst = slice(0, 2000), slice(2000, 3000), slice(3000, None)
    learner = LEARNERS[name](**({"random_state": 0} if name == "SELE" else {}))
    search = select_regularization(learner, X[trn], y_pred[trn], target[trn], X[val],
                                   y_pred[val], losses[val], baseline=u0[trn],
                                   baseline_val=u0[val])
    learned = aurc(losses[tst], search.best.score(X[tst], y_pred[tst], baseline=u0[tst]))
    plain = select_regularization(learner, X[trn], y_pred[trn], target[trn], X[val],
                                  y_pred[val], losses[val])
    without = aurc(losses[tst], plain.best.score(X[tst], y_pred[tst]))
    base = aurc(losses[tst], u0[tst])
    assert learned <= 1.03 * base
    assert without > 1.5 * base  # without the baseline the noise features know nothing


@pytest.mark.parametrize("name", LEARNERS)
def test_json_round_trip_with_a_baseline(name):
    rng = np.random.default_rng(4)
    X, y_pred, u0, losses = problem_with_baseline(rng, n=60)
    target = 1.0 - 0.5 * losses if name == "TCP" else losses
    model = LEARNERS[name](C=0.5).fit(X, y_pred, target, baseline=u0)
    loaded = load_json(model.to_json())
    assert loaded.baseline_coef_ == model.baseline_coef_
    np.testing.assert_array_equal(loaded.score(X, y_pred, baseline=u0),
                                  model.score(X, y_pred, baseline=u0))
    doc = json.loads(model.to_json())
    doc["fitted"]["baseline_mean_"] = None
    with pytest.raises(ValueError, match="all be numbers or all be null"):
        load_json(json.dumps(doc))
    doc["fitted"]["baseline_mean_"] = model.baseline_mean_
    for bad in (0.0, -1.0):  # fit never stores a scale that is not positive (u0 / 0 is inf)
        doc["fitted"]["baseline_scale_"] = bad
        with pytest.raises(ValueError, match=r"^fitted\.baseline_scale_ must be a finite "
                                             r"number > 0 or null; got "):
            load_json(json.dumps(doc))
    doc["fitted"]["baseline_scale_"] = model.baseline_scale_
    del doc["fitted"]["baseline_coef_"]  # every fit writes the three (null without one)
    with pytest.raises(ValueError, match=r"^fitted\.baseline_coef_ is missing"):
        load_json(json.dumps(doc))


def test_baseline_errors():
    rng = np.random.default_rng(6)
    X, y_pred, u0, losses = problem_with_baseline(rng, n=40)
    with_b = LossRegression().fit(X, y_pred, losses, baseline=u0)
    without = LossRegression().fit(X, y_pred, losses)
    with pytest.raises(ValueError, match="baseline must be given: this score was fitted"):
        with_b.score(X, y_pred)
    with pytest.raises(ValueError, match="baseline must be None: this score was fitted without"):
        without.score(X, y_pred, baseline=u0)
    with pytest.raises(ValueError, match="baseline"):
        LossRegression().fit(X, y_pred, losses, baseline=u0[:-1])
    with pytest.raises(ValueError, match="baseline"):
        SELE().fit(X, y_pred, losses, baseline=np.where(u0 > 0, np.nan, u0))
    with pytest.raises(ValueError, match="baseline_val must be given with baseline"):
        select_regularization(LossRegression(), X, y_pred, losses, X, y_pred, losses,
                              baseline=u0)
    with pytest.raises(ValueError, match="baseline_val must be given with safe=True"):
        select_regularization(LossRegression(), X, y_pred, losses, X, y_pred, losses,
                              safe=True)
    with pytest.raises(ValueError, match="confidence must be in"):
        select_regularization(LossRegression(), X, y_pred, losses, X, y_pred, losses,
                              baseline_val=u0, safe=True, confidence=1.0)
    with pytest.raises(ValueError, match="n_bootstrap must be an integer >= 1"):
        bootstrap_win_fraction(losses, u0, u0, n_bootstrap=0)
    # bounded before any work, as bootstrap_interval bounds it
    huge = r"n_bootstrap must be at most \d+ for \d+ rows"
    with pytest.raises(ValueError, match=huge):
        bootstrap_win_fraction(losses, u0, u0, n_bootstrap=10**9)
    fits = []
    learner = LossRegression()
    learner.fit = lambda *a, **k: fits.append(1)  # type: ignore[method-assign]
    with pytest.raises(ValueError, match=huge):
        select_regularization(learner, X, y_pred, losses, X, y_pred, losses,
                              baseline_val=u0, safe=True, n_bootstrap=10**9)
    assert fits == []


# ---------------------------------------------------------------- safe selection


def win_fraction_ref(losses, u, u0, n_bootstrap, seed):
    """The paired bootstrap written out: the same rows for both scores (drawn from the rows
    sorted by their values), strict wins."""
    order = np.lexsort((losses, u0, u))
    losses, u, u0 = losses[order], u[order], u0[order]
    rng = np.random.default_rng(seed)
    wins = 0
    for _ in range(n_bootstrap):
        rows = rng.integers(0, len(losses), len(losses))
        a = aurc(losses[rows], u[rows])
        b = aurc(losses[rows], u0[rows])
        if a < b:
            wins += 1
    return wins / n_bootstrap


def test_bootstrap_win_fraction_matches_reference():
    rng = np.random.default_rng(8)
    losses = rng.integers(0, 2, 80).astype(float)
    u = np.round(losses + rng.normal(size=80), 1)  # ties
    u0 = np.round(rng.normal(size=80), 1)
    got = bootstrap_win_fraction(losses, u, u0, n_bootstrap=60, random_state=3)
    assert got == win_fraction_ref(losses, u, u0, 60, 3)
    assert 0.5 < got <= 1.0


def test_bootstrap_win_fraction_does_not_depend_on_the_row_order():
    # two close scores: the fraction moved between 0.88 and 0.91 with the row order
    rng = np.random.default_rng(1)
    risk = rng.random(400)
    losses = (rng.random(400) < risk).astype(float)
    u0, u = risk + rng.normal(0, 0.35, 400), risk + rng.normal(0, 0.30, 400)
    first = bootstrap_win_fraction(losses, u, u0, n_bootstrap=200, random_state=0)
    for _ in range(4):
        p = rng.permutation(400)
        assert bootstrap_win_fraction(losses[p], u[p], u0[p], n_bootstrap=200,
                                      random_state=0) == first


def _exact_win_fraction(losses, u, u0, n_bootstrap, seed, tol):
    """The paired bootstrap in exact arithmetic (the AuRC of ties="mean" by linearity):
    wins where the exact AuRCs differ by more than ``tol``; None where a difference is
    within twice ``tol`` of it (the float path may fall either way there)."""
    order = np.lexsort((losses, u0, u))
    losses, u, u0 = losses[order], u[order], u0[order]
    rng = np.random.default_rng(seed)
    wins = 0
    for _ in range(n_bootstrap):
        rows = rng.integers(0, len(losses), len(losses))
        d = (aurc_linearity_ref(losses[rows], u0[rows], exact=True)
             - aurc_linearity_ref(losses[rows], u[rows], exact=True))
        if d != 0 and abs(d - tol) <= tol:
            return None
        wins += d > tol
    return wins / n_bootstrap


@pytest.mark.parametrize("case", ["equal losses in ties", "one loss", "continuous", "binary"])
def test_bootstrap_win_fraction_counts_exact_wins_only(case):
    """A resample where the two AuRCs are equal in exact arithmetic is no win, however
    their last bits fall (the learned score breaking ties of equal losses, one loss value)."""
    rng = np.random.default_rng(2)
    n = 24
    u0 = np.repeat(np.arange(6.0), 4)
    if case == "equal losses in ties":
        losses = np.repeat(rng.choice([0.1, 0.3, 0.7], 6), 4)
        u = u0 + rng.random(n) * 0.5  # breaks the ties inside groups only
    elif case == "one loss":
        losses, u = np.full(n, 0.1), np.arange(float(n))[::-1]
    else:
        losses = rng.random(n) if case == "continuous" else rng.integers(0, 2, n) * 1.0
        u = np.round(losses + rng.normal(size=n) * 0.3, 1)
    got = bootstrap_win_fraction(losses, u, u0, n_bootstrap=40, random_state=1)
    tol = 4.0 * (n + 2) * np.finfo(float).eps * losses.max()
    want = _exact_win_fraction(losses, u, u0, 40, 1, tol)
    assert want is not None  # no resample near the tolerance: one answer
    assert got == want
    if case in ("equal losses in ties", "one loss"):
        assert got == 0.0
    # the same draws in one go, when the rows could overflow a table (the rows' path)
    big = bootstrap_win_fraction(losses * 1e306, u, u0, n_bootstrap=40, random_state=1)
    assert big == want


def test_safe_selection_keeps_the_baseline_when_the_features_know_nothing():
    rng = np.random.default_rng(12)
    n = 3000
    X = rng.normal(size=(n, 4))
    u0 = rng.normal(size=n)
    losses = (rng.uniform(size=n) < 1 / (1 + np.exp(-(2.5 * u0 - 2.0)))).astype(float)
    trn, val = slice(0, 2000), slice(2000, None)
    search = select_regularization(LossRegression(features="shared"), X[trn], None,
                                   losses[trn], X[val], None, losses[val],
                                   baseline_val=u0[val], safe=True, random_state=0)
    assert search.chosen == "baseline" and search.win_fraction < 0.9
    assert search.baseline_validation_aurc == pytest.approx(aurc(losses[val], u0[val]))
    # informative features, an uninformative baseline: the learned score is kept
    losses = (rng.uniform(size=n) < 1 / (1 + np.exp(-(2.5 * X[:, 0] - 2.0)))).astype(float)
    search = select_regularization(LossRegression(features="shared"), X[trn], None,
                                   losses[trn], X[val], None, losses[val],
                                   baseline_val=u0[val], safe=True, random_state=0)
    assert search.chosen == "learned" and search.win_fraction >= 0.9


@pytest.mark.parametrize("unit", [1e-200, 1e-100, 1e100, 1e200])
def test_the_baseline_is_standardised_in_any_unit(unit):
    # its spread under- or overflowed in the squares: replaced by 1, the column then dropped
    rng = np.random.default_rng(4)
    X, y_pred, u0, losses = problem_with_baseline(rng, n=80)
    base = LossRegression(C=1000.0).fit(X, y_pred, losses, baseline=u0)
    scaled = LossRegression(C=1000.0).fit(X, y_pred, losses, baseline=u0 * unit)
    assert scaled.baseline_coef_ == pytest.approx(base.baseline_coef_, rel=1e-12)
    np.testing.assert_allclose(scaled.score(X, y_pred, baseline=u0 * unit),
                               base.score(X, y_pred, baseline=u0), rtol=1e-10, atol=1e-12)


def test_ridge_keeps_a_baseline_a_little_outside_the_span_of_the_features():
    # a baseline 1e-7 (relative) outside the span was taken as inside it and dropped: the
    # fit's squared error was 2.5 times the least-squares minimum
    from abstain.scores import LossRegression

    rng = np.random.default_rng(7)
    x0, e = rng.normal(size=200), rng.normal(size=200)
    losses, u0 = (e > 0).astype(float), x0 + 1e-7 * e
    model = LossRegression(C=0, features="shared").fit(x0[:, None], None, losses, baseline=u0)
    free = LossRegression(C=0, features="shared").fit(np.column_stack([x0, u0]), None, losses)
    got = np.mean((losses - model.score(x0[:, None], baseline=u0)) ** 2)
    want = np.mean((losses - free.score(np.column_stack([x0, u0]))) ** 2)
    assert model.baseline_coef_ != 0.0 and got == pytest.approx(want, rel=1e-6)
