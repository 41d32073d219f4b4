"""abstain.scores._plugin against explicit loops (section 3.2, Example 1), and its bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference.scores_ref import conditional_risk_ref, mcp_ref, top2_margin_ref

from abstain.scores import (
    absolute_error_loss,
    conditional_risk,
    margin,
    mcp,
    ordinal_margin,
    true_class_probability,
    zero_one_loss,
)


def random_proba(rng, n, k):
    alpha = rng.choice([0.2, 1.0, 5.0])
    return rng.dirichlet(np.full(k, alpha), size=n)


def loss_matrices(rng, k):
    integer = rng.integers(0, 5, (k, k)).astype(float)
    np.fill_diagonal(integer, 0.0)
    return {
        "default": None,
        "zero_one": zero_one_loss(k),
        "absolute": absolute_error_loss(k),
        "integer": integer,
        "uniform": rng.uniform(0, 3, (k, k)),
    }


def test_conditional_risk_matches_loops():
    rng = np.random.default_rng(11)
    for k in range(2, 7):
        for _ in range(4):
            proba = random_proba(rng, 40, k)
            for name, loss in loss_matrices(rng, k).items():
                got = conditional_risk(proba, loss)
                ref_pred, ref_risk = conditional_risk_ref(proba, loss)
                np.testing.assert_array_equal(got.prediction, ref_pred, err_msg=name)
                np.testing.assert_allclose(got.risk, ref_risk, rtol=1e-12, atol=1e-15,
                                           err_msg=name)
                given_pred = rng.integers(0, k, 40)
                got = conditional_risk(proba, loss, prediction=given_pred)
                _, ref_risk = conditional_risk_ref(proba, loss, prediction=given_pred)
                np.testing.assert_array_equal(got.prediction, given_pred)
                np.testing.assert_allclose(got.risk, ref_risk, rtol=1e-12, atol=1e-15)


def test_conditional_risk_is_a_named_tuple():
    result = conditional_risk([[0.25, 0.75]])
    assert result._fields == ("prediction", "risk")
    pred, risk = result
    assert pred.tolist() == [1] and risk.tolist() == [0.25]


def test_conditional_risk_ties_take_the_lowest_index():
    # dyadic probabilities: every expected loss is exact, ties are exact ties
    proba = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.0, 0.5, 0.5],
                      [0.5, 0.0, 0.5], [0.25, 0.5, 0.25], [0.375, 0.125, 0.5]])
    for loss in (None, absolute_error_loss(3)):
        pred, risk = conditional_risk(proba, loss)
        ref_pred, ref_risk = conditional_risk_ref(proba, loss, exact=True)
        np.testing.assert_array_equal(pred, ref_pred)
        np.testing.assert_array_equal(risk, ref_risk)
    np.testing.assert_array_equal(conditional_risk(proba).prediction, [0, 2, 1, 0, 1, 2])
    # absolute error: the lower median wins a tie of two medians
    np.testing.assert_array_equal(conditional_risk(proba, absolute_error_loss(3)).prediction,
                                  [0, 1, 1, 0, 1, 1])


def test_conditional_risk_decimal_median_ties_take_the_lowest_index():
    """Half of the mass at or below class 1: classes 1 and 2 are both medians."""
    proba = np.array([[0.1, 0.4, 0.5], [0.2, 0.3, 0.5], [0.3, 0.2, 0.5], [0.05, 0.45, 0.5],
                      [0.35, 0.15, 0.5], [0.45, 0.05, 0.5], [0.5, 0.3, 0.2], [0.5, 0.1, 0.4]])
    pred = conditional_risk(proba, absolute_error_loss(3)).prediction
    np.testing.assert_array_equal(pred, [1, 1, 1, 1, 1, 1, 0, 0])


def test_conditional_risk_near_ties_take_the_lowest_index_whatever_the_loss_form():
    # one ulp apart: the 0/1 sums round to one value in one form and not in the other
    rng = np.random.default_rng(13)
    for k in (2, 3, 5):
        top = rng.integers(0, k, 200)
        other = (top + 1 + rng.integers(0, k - 1, 200)) % k
        a = rng.uniform(0.4, 0.5, 200) if k > 2 else np.full(200, 0.5)
        proba = np.zeros((200, k))
        proba += ((1 - 2 * a) / max(k - 2, 1))[:, None]
        proba[np.arange(200), top] = a
        proba[np.arange(200), other] = np.nextafter(a, rng.choice([-1.0, 2.0], 200))
        first = np.minimum(top, other)
        for loss in (None, zero_one_loss(k)):
            np.testing.assert_array_equal(conditional_risk(proba, loss).prediction, first)
    p = np.array([[0.45, np.nextafter(0.45, 1.0), 0.1]])
    assert conditional_risk(p).prediction.tolist() == [0]
    assert conditional_risk(p, zero_one_loss(3)).prediction.tolist() == [0]
    assert conditional_risk(p[:, [1, 0, 2]]).prediction.tolist() == [0]


def test_mcp_is_the_zero_one_conditional_risk():
    rng = np.random.default_rng(12)
    for k in range(2, 7):
        proba = random_proba(rng, 50, k)
        got = mcp(proba)
        np.testing.assert_allclose(got, mcp_ref(proba), rtol=0, atol=1e-15)
        np.testing.assert_allclose(got, conditional_risk(proba).risk, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got, conditional_risk(proba, zero_one_loss(k)).risk,
                                   rtol=0, atol=1e-12)
        # the 0/1 plug-in Bayes prediction is the (first) arg max
        np.testing.assert_array_equal(conditional_risk(proba).prediction, proba.argmax(axis=1))
    np.testing.assert_allclose(mcp([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2]]), [0.3, 0.6], atol=1e-15)


def test_margin_is_the_negated_decision_value():
    """Not defined in the brief: the paper's margin score (section 5.2.1, |<w,x> + b| for a
    binary SVM, the winning class score for multi-class), negated so that a higher value is
    rejected first (STYLE 3)."""
    rng = np.random.default_rng(13)
    d1 = rng.normal(size=30)
    np.testing.assert_array_equal(margin(d1), [-abs(v) for v in d1])
    d2 = rng.normal(size=(30, 4))
    np.testing.assert_array_equal(margin(d2), [-max(row) for row in d2])
    np.testing.assert_array_equal(margin(d2, kind="max"), margin(d2))


@pytest.mark.parametrize("seed", range(4))
def test_top2_margin_matches_two_pass_reference(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    d = rng.integers(-2, 3, size=(40, k)) * rng.choice([0.5, 3.0])  # many tied class scores
    np.testing.assert_array_equal(margin(d, kind="top2"), top2_margin_ref(d))
    assert np.all(margin(d, kind="top2") <= 0.0)
    d1 = rng.normal(size=12)  # binary decision values: both kinds are -|f|
    np.testing.assert_array_equal(margin(d1, kind="top2"), margin(d1))
    g = rng.normal(size=12)  # columns (-g, g): the gap is twice the binary margin
    np.testing.assert_allclose(margin(np.column_stack([-g, g]), kind="top2"), 2 * margin(g))


proba_rows = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 6), st.integers(2, 5)),
    elements=st.one_of(st.integers(0, 4).map(float), st.floats(0.0, 1.0, allow_subnormal=False)),
).filter(lambda a: np.all(a.sum(axis=1) > 0)).map(lambda a: a / a.sum(axis=1, keepdims=True))


@given(proba_rows)
def test_conditional_risk_properties(proba):
    k = proba.shape[1]
    for loss in (None, absolute_error_loss(k)):
        pred, risk = conditional_risk(proba, loss)
        ref_pred, ref_risk = conditional_risk_ref(proba, loss)
        np.testing.assert_allclose(risk, ref_risk, rtol=1e-12, atol=1e-15)
        # the prediction is optimal: no other class has a lower expected loss
        for y in range(k):
            _, other = conditional_risk(proba, loss, prediction=np.full(len(proba), y))
            assert np.all(risk <= other + 1e-12)
    np.testing.assert_allclose(mcp(proba), conditional_risk(proba).risk, rtol=0, atol=1e-12)
    assert np.all((mcp(proba) >= 0) & (mcp(proba) <= 1 - 1 / k + 1e-12))
    # a larger top probability is never more uncertain under mcp
    order = np.argsort(-proba.max(axis=1), kind="stable")
    assert np.all(np.diff(mcp(proba)[order]) >= -1e-15)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "proba, match",
    [
        ([0.2, 0.8], "2-D"),
        ([[1.0]], "n_classes >= 2"),
        (np.empty((0, 3)), "2-D"),
        ([[0.5, np.nan]], "finite"),
        ([[0.5, 0.6]], "summing to 1"),
        ([[1.2, -0.2]], "non-negative"),
    ],
)
def test_bad_proba(proba, match):
    # true_class_probability took any matrix: [[5, 3]] gave 5.0
    for func in (mcp, lambda p: conditional_risk(p),
                 lambda p: true_class_probability(p, [0] * len(p))):
        with pytest.raises(ValueError, match=match):
            func(proba)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: true_class_probability([[0.5, 0.5], [0.2, 0.8]], [0.5, 1]),
     r"^y must be integer labels; got float values such as 0\.5\.$"),
    (lambda: true_class_probability([[0.5, 0.5], [0.2, 0.8]], [1.0, 0.0]),
     r"^y must be integer labels; got dtype float64 \(whole numbers: pass y\.astype\(int\)\)"),
    (lambda: true_class_probability([[0.5, 0.5], [0.2, 0.8]], [0, 1, 1]),
     r"^y must be integer labels of shape \(2,\), one per row; got shape \(3,\)\.$"),
    (lambda: true_class_probability([[0.5, 0.5], [0.2, 0.8]], [0, 2]),
     r"^y must hold class indices in 0\.\.1; got values from 0 to 2\.$"),
    (lambda: conditional_risk([[0.5, 0.5], [0.2, 0.8]], prediction=[0.5, 1.0]),
     r"^prediction must be integer labels; got float values such as 0\.5\.$"),
    (lambda: conditional_risk([[0.5, 0.5], [0.2, 0.8]], prediction=[[0, 1]]),
     r"^prediction must be integer labels of shape \(2,\), one per row; got shape \(1, 2\)"),
    (lambda: conditional_risk([[0.5, 0.5], [0.2, 0.8]], prediction=[-1, 1]),
     r"^prediction must hold class indices in 0\.\.1; got values from -1 to 1\.$"),
])
def test_labels_say_what_is_wrong_not_the_shape_they_have(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_prediction_and_decision():
    with pytest.raises(ValueError, match="prediction"):
        conditional_risk([[0.5, 0.5]], prediction=[2])
    with pytest.raises(ValueError, match="prediction"):
        conditional_risk([[0.5, 0.5]], prediction=[0.0])
    with pytest.raises(ValueError, match="loss must be 2 x 2"):
        conditional_risk([[0.5, 0.5]], absolute_error_loss(3))
    with pytest.raises(ValueError, match="decision"):
        margin([[1.0]])
    with pytest.raises(ValueError, match="finite"):
        margin([np.inf])
    with pytest.raises(ValueError, match="kind must be one of 'max', 'top2'; got 'gap'"):
        margin([[1.0, 2.0]], kind="gap")


@pytest.mark.parametrize("labels", [np.array([1, 2, 3]), np.array(["b", "a", "c"])])
def test_conditional_risk_speaks_the_model_labels(labels):
    # labels that are not 0..K-1 (integers 1..3, unsorted strings): pred != y is the 0/1 loss
    proba = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.6, 0.1]])
    y = labels[[0, 2, 0]]
    pred, risk = conditional_risk(proba, classes=labels)
    assert pred.tolist() == labels[[0, 2, 1]].tolist()
    assert (pred != y).tolist() == [False, False, True]
    np.testing.assert_allclose(risk, [0.3, 0.2, 0.4])
    given = conditional_risk(proba, prediction=labels[[1, 1, 1]], classes=labels)
    assert given.prediction.tolist() == labels[[1, 1, 1]].tolist()
    np.testing.assert_allclose(given.risk, [0.8, 0.9, 0.4])


def test_conditional_risk_refuses_bad_classes():
    proba = [[0.5, 0.5], [0.2, 0.8]]
    with pytest.raises(ValueError, match=r"classes must hold one label per column of proba \(2\)"):
        conditional_risk(proba, classes=["a"])
    with pytest.raises(ValueError, match="classes must hold distinct labels"):
        conditional_risk(proba, classes=["a", "a"])
    with pytest.raises(ValueError, match="prediction must hold labels of classes; got 'z'"):
        conditional_risk(proba, prediction=["a", "z"], classes=["a", "b"])
    # numbers beside strings have no order: NumPy's TypeError before
    with pytest.raises(ValueError, match="classes must hold labels of one kind"):
        conditional_risk(proba, classes=np.array(["a", 1], dtype=object))
    with pytest.raises(ValueError, match="prediction must hold labels of classes; got 1"):
        conditional_risk(proba, prediction=np.array([1, "a"], dtype=object),
                         classes=["a", "b"])


@pytest.mark.parametrize("k", [3, 10, 100])
def test_conditional_risk_of_a_row_does_not_depend_on_its_batch(k):
    """Each row's expected losses are summed in a fixed order (no BLAS product, whose order
    depends on the batch shape and the CPU): the same row gives the same risk bit for bit
    in any batch, so equal rows tie, whatever the loss matrix."""
    from abstain.scores import conditional_risk

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), 500)
    p[250:] = p[0]  # many equal rows
    for loss in (None, np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / k,
                 rng.random((k, k))):
        pred, risk = conditional_risk(p, loss)
        assert np.all(risk[250:] == risk[0]) and np.all(pred[250:] == pred[0])
        for i in (0, 3, 499):
            one = conditional_risk(p[i : i + 1], loss)
            assert one.risk[0] == risk[i] and one.prediction[0] == pred[i]
        half = conditional_risk(p[::2], loss)
        assert np.array_equal(half.risk, risk[::2])


def test_margins_beyond_the_float64_range_are_refused_not_infinite():
    # an infinite score, which the metrics then refuse: the gap is refused by name
    with pytest.raises(ValueError, match=r"^the gap between the two largest decision values "
                                         r"of row 0 exceeds the float64 range; divide"):
        margin([[1e308, -1e308], [1.0, 0.0]], kind="top2")
    with pytest.raises(ValueError, match=r"^the distance of the decision value to its nearest "
                                         r"threshold of row 1 exceeds the float64 range"):
        ordinal_margin([0.5, -1e308], [1e308])
    assert margin([[1e308, -1e307]], kind="top2").tolist() == [-1.1e308]
    assert ordinal_margin([1e308, 0.5], [-1e308, 0.0]).tolist() == [-1e308, -0.5]


@pytest.mark.parametrize("k", [3, 4, 10])
def test_conditional_risk_does_not_depend_on_the_order_of_the_classes(k):
    """Rows whose terms are the same numbers in another order get the same risks, so they
    tie: ``[0.1, 0.2, 0.7]`` and ``[0.7, 0.2, 0.1]`` under the 0/1 loss (loss=None or as a
    matrix) had risks 0.30000000000000004 and 0.29999999999999993, and the classes of a
    matrix relabelled with the rows and columns of the loss give the same risks."""
    from abstain.metrics import aurc
    from abstain.scores import conditional_risk

    rng = np.random.default_rng(k)
    base = np.round(rng.dirichlet(np.ones(k)), 1)
    base[-1] = 1.0 - base[:-1].sum()
    rows = np.array([rng.permutation(base) for _ in range(40)])
    for loss in (None, 1.0 - np.eye(k)):
        risk = conditional_risk(rows, loss).risk
        assert np.all(risk == risk[0])
        assert aurc(np.arange(40) % 2, risk) == 0.5
    mat = rng.random((k, k))
    p = rng.dirichlet(np.ones(k), 30)
    ref = conditional_risk(p, mat)
    for _ in range(5):
        perm = rng.permutation(k)
        got = conditional_risk(p[:, perm], mat[np.ix_(perm, perm)])
        assert np.array_equal(got.risk, ref.risk)
        assert np.array_equal(perm[got.prediction], ref.prediction)


def test_a_confident_row_keeps_its_risk_under_the_zero_one_loss():
    """The 0/1 risk was the row total less ``p[yhat]``: ``[1e-17, 1.0]`` and
    ``[3e-17, 1.0]`` both got 0 (one tie group with ``[0, 1]``: AuRC 0.375 for 0.2083),
    and ``[1e-10, 1 - 1e-10]`` 1.0000000827e-10. It is the sum of the other classes'
    probabilities, as a scaled 0/1 matrix gives it (eq. 3), and equal for given
    predictions."""
    from fractions import Fraction

    from abstain.metrics import aurc

    p = np.array([[1e-17, 1.0], [3e-17, 1.0], [0.0, 1.0], [1e-10, 1 - 1e-10],
                  [0.2, 1e-18, 0.8]], dtype=object)
    exact = [float(sum(map(Fraction, r)) - Fraction(max(r))) for r in p]
    for k, rows in ((2, slice(0, 4)), (3, slice(4, 5))):
        q = np.array(p[rows].tolist(), dtype=np.float64)
        for loss in (None, zero_one_loss(k)):
            got = conditional_risk(q, loss)
            assert got.risk.tolist() == exact[rows]
            again = conditional_risk(q, loss, prediction=got.prediction).risk
            assert again.tolist() == exact[rows]
    q = np.array(p[:4].tolist(), dtype=np.float64)
    assert aurc([0.0, 1.0, 0.0, 1.0], conditional_risk(q).risk) == pytest.approx(5 / 24)


def test_near_tied_classes_get_the_least_risk_in_any_class_order():
    """The plug-in prediction takes the lowest index among classes tied up to round-off,
    and its risk was that class's: ``[a, b]`` and ``[b, a]`` (a, b = 0.5 -+ 1 ulp) got
    0.5000000000000001 and 0.4999999999999999, mirror rows under the absolute error 0.95
    and 0.9500000000000001, so they did not tie. The risk is now the least expected
    loss."""
    from abstain.metrics import aurc

    a, b = 0.4999999999999999, 0.5000000000000001
    risk = conditional_risk(np.array([[a, b], [b, a]])).risk
    assert risk.tolist() == [a, a]
    assert risk.tolist() == mcp(np.array([[a, b], [b, a]])).tolist()
    rows = np.array([[0.5, 0.05, 0.45], [0.45, 0.05, 0.5]] * 2)
    got = conditional_risk(rows, absolute_error_loss(3))
    assert np.all(got.risk == 0.95)
    assert aurc([0.0, 1.0, 0.0, 1.0], got.risk) == 0.5


def test_mcp_keeps_the_risk_of_confident_rows_as_conditional_risk_does():
    # 1 - max p rounded [1e-17, 1.0] to 0, tying it with [0, 1] (AuRC 0.667 for 0.389)
    p = np.array([[1e-17, 1.0], [3e-17, 1.0], [0.0, 1.0]])
    assert mcp(p).tolist() == [1e-17, 3e-17, 0.0]
    rng = np.random.default_rng(3)
    proba = random_proba(rng, 200, 4)
    np.testing.assert_array_equal(mcp(proba), conditional_risk(proba).risk)
