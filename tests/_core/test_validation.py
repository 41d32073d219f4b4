"""The shared input checks: messages with plain numbers, tables and labels named as such."""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest

from abstain import BoundedAbstention, BoundedImprovement, CostBased, PairTable, ScoreTable
from abstain._core.validation import (
    Boolean,
    InstanceOf,
    Interval,
    IsArray,
    IsCallable,
    Options,
    RandomState,
    as_class_labels,
    as_is_ood,
    as_label_indices,
    as_losses,
    as_real_array,
    check_bool,
    check_choice,
    check_fraction,
    check_int,
    check_open_unit,
    check_params,
    check_positive,
    check_probability,
    check_random_state,
    plain,
    validate_params,
)
from abstain.metrics import aurc, auroc


@pytest.mark.parametrize(("value", "shown"), [
    (np.float64(0.5), "0.5"), (np.float32(0.25), "0.25"), (np.int64(-3), "-3"),
    (np.bool_(True), "True"), (np.str_("grid"), "'grid'"), ((np.int64(2), np.int64(3)), "(2, 3)"),
    ([np.float64(1.5), 2], "[1.5, 2]"), (np.array([1.5, 2.0]), "[1.5, 2.0]"),
    (np.zeros((3, 4)), "an array of shape (3, 4) and dtype float64"), ("text", "'text'"),
    (None, "None"), (1e308, "1e+308"),
])
def test_plain_shows_numpy_values_as_python_values(value: Any, shown: str) -> None:
    assert plain(value) == shown


@pytest.mark.parametrize(("check", "value", "match"), [
    (lambda v: check_fraction("coverage", v), np.float64(1.5),
     r"^coverage must be in \(0, 1\]; got 1\.5\.$"),
    (lambda v: check_probability("tpr", v), np.float32(2.0),
     r"^tpr must be in \[0, 1\]; got 2\.0\.$"),
    (lambda v: check_open_unit("delta", v), np.float64(1.0),
     r"^delta must be in \(0, 1\); got 1\.0\.$"),
    (lambda v: check_positive("cost", v), np.float64(-2.0),
     r"^cost must be a finite number in \(0, inf\); got -2\.0\.$"),
    (lambda v: check_int("k", v, 1), np.int64(0), r"^k must be an integer >= 1; got 0\.$"),
    (lambda v: check_int("k", v, 1), np.float64(2.0), r"^k must be an integer >= 1; got 2\.0\.$"),
    (lambda v: check_bool("exact", v), np.int64(1), r"^exact must be True or False; got 1\.$"),
    (lambda v: check_choice("search", v, ("grid", "exact")), np.str_("all"),
     r"^search must be one of 'grid', 'exact'; got 'all'\.$"),
    (lambda v: check_random_state("random_state", v), np.int64(-1),
     r"^random_state must be None, an integer >= 0 or a numpy Generator, BitGenerator or "
     r"SeedSequence; got -1\.$"),
    (lambda v: as_losses(v), np.array([0.5, -0.25]), r"^losses must be non-negative; got minimum "
                                                     r"-0\.25\.$"),
    (lambda v: as_class_labels(v, "y"), np.array([1, -2]),
     r"^y must be non-negative class indices; got min -2\.$"),
])
def test_messages_show_numpy_scalars_as_plain_numbers(check: Any, value: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        check(value)
    assert "np." not in str(info.value)


TABLE = ScoreTable.from_arrays([0.1, 0.2], [0.0, 1.0])
OOD_TABLE = ScoreTable.from_arrays([0.1, 0.2], [0.0, 1.0], is_ood=[0, 1])
PAIRS = PairTable.from_arrays([[0.1, 0.2], [0.3, 0.4]], [0.0, 1.0], is_ood=[0, 1])


@pytest.mark.parametrize(("call", "match"), [
    (lambda: aurc([0, 1], TABLE), r"^uncertainty must be an array of real numbers; got a "
                                  r"ScoreTable: pass the arrays, or pass the table alone as the "
                                  r"first argument of a metric \(aurc\(table\), auroc\(table\)\)"),
    (lambda: auroc([0, 1], OOD_TABLE), r"^scores must be an array of real numbers; got a "
                                       r"ScoreTable: pass the arrays"),
    (lambda: auroc([0, 1], PAIRS), r"^scores must be an array of real numbers; got a PairTable: "
                                   r".*of a metric of two scores \(auroc\(table\), oscr"),
    (lambda: aurc([0, 1], TABLE.binned(2)), r"^uncertainty must be an array of real numbers; "
                                            r"got a BinnedTable: .*its own methods"),
    (lambda: BoundedAbstention().fit([0.1, 0.2], TABLE), r"^losses must be an array of real "
                                                         r"numbers; got a ScoreTable"),
    (lambda: as_is_ood(TABLE), r"^is_ood must be an array of real numbers; got a ScoreTable"),
    (lambda: as_real_array(np.asarray(TABLE), "X"), r"^X must be an array of real numbers; got a "
                                                    r"ScoreTable"),
    (lambda: as_real_array(None, "X"), r"^X must be an array of real numbers; got None\.$"),
    # a PairTable alone where one score column is taken: it said to give the losses
    (lambda: CostBased(0.3).fit(PAIRS), r"^got a PairTable \(two score columns\) where one "
                                        r"score column is taken: .*BoundedTPRFPR\(\)\.fit"),
    (lambda: BoundedImprovement(0.3).fit(PAIRS), r"^got a PairTable \(two score columns\)"),
    (lambda: aurc(PAIRS), r"^got a PairTable \(two score columns\)"),
])
def test_a_table_given_for_an_array_is_named_with_where_it_goes(call: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "dtype object" not in str(info.value)


@pytest.mark.parametrize(("labels", "match"), [
    ([0.5, 1.0], r"^y must be integer labels; got float values such as 0\.5\.$"),
    ([0.0, 1.0], r"^y must be integer labels; got dtype float64 \(whole numbers: pass "
                 r"y\.astype\(int\)\)\.$"),
    ([0.0, np.nan], r"^y must be integer labels; got float values, 1 NaN\.$"),
    ([True, False], r"^y must be integer labels; got dtype bool\.$"),
    (["a", "b"], r"^y must be integer labels; got dtype <U1\.$"),
    ([0, 1, 1], r"^y must be integer labels of shape \(2,\), one per row; got shape \(3,\)\.$"),
    ([[0, 1]], r"^y must be integer labels of shape \(2,\), one per row; got shape \(1, 2\)\.$"),
    ([0, 3], r"^y must hold class indices in 0\.\.2; got values from 0 to 3\.$"),
    ([-1, 0], r"^y must hold class indices in 0\.\.2; got values from -1 to 0\.$"),
])
def test_label_indices_say_which_of_shape_dtype_and_range_is_wrong(labels: Any,
                                                                   match: str) -> None:
    with pytest.raises(ValueError, match=match):
        as_label_indices(labels, "y", 2, 3)
    assert as_label_indices(np.array([0, 2], dtype=np.uint8), "y", 2, 3).tolist() == [0, 2]


def test_float_class_labels_say_the_value_not_only_the_dtype() -> None:
    with pytest.raises(ValueError, match=r"^y must hold integer class indices; got float values "
                                         r"such as 1\.5\.$"):
        as_class_labels([0.0, 1.5], "y")
    assert as_class_labels([0.0, 2.0], "y").tolist() == [0, 2]


# --- parameter constraints ----------------------------------------------------------------


@pytest.mark.parametrize(("constraint", "condition"), [
    (Interval(float, 0, 1, closed="right"), "be in (0, 1]"),
    (Interval(float, 0, 1, closed="neither"), "be in (0, 1)"),
    (Interval(float, 0, 1, closed="both"), "be in [0, 1]"),
    (Interval(float, 0, None, closed="left"), "be a finite number in [0, inf)"),
    (Interval(float, 0, 100, closed="right"), "be in (0, 100]"),
    (Interval(int, 1, None, closed="left"), "be an integer >= 1"),
    (Interval(int, 0, 5, closed="both"), "be an integer in [0, 5]"),
    (Options(("a", "b")), "be one of 'a', 'b'"),
])
def test_a_constraint_states_its_condition(constraint: Any, condition: str) -> None:
    assert constraint.condition == condition


@pytest.mark.parametrize(("constraint", "inside", "outside"), [
    (Interval(float, 0, 1, closed="right"), [1, 1.0, 0.5, np.float32(0.25), np.int64(1)],
     [0, 0.0, 1.5, math.nan, True, "0.5", None, 10**400]),
    (Interval(float, 0, None, closed="left"), [0, 1e300], [math.inf, -0.0 - 1e-300, math.nan]),
    (Interval(int, 1, None, closed="left"), [1, np.int64(7)], [0, 1.0, True, np.bool_(True)]),
    (Options(("a", "b")), ["a", np.str_("b")], ["c", 1, None, np.array(["a", "b"])]),
    (Boolean(), [True, np.bool_(False)], [1, 0, "True", None]),
    (RandomState(), [None, 0, np.random.default_rng(0), np.random.SeedSequence(1)],
     [-1, 1.5, True, "seed"]),
    (InstanceOf(int, "an int"), [1], ["1"]),
    (IsCallable(), [len], [1]),
    (IsArray(), [[1], (1,), range(2), np.zeros(2)], [1, "ab", b"ab", None]),
])
def test_a_constraint_accepts_what_it_says(constraint: Any, inside: list[Any],
                                            outside: list[Any]) -> None:
    assert all(constraint.accepts(v) for v in inside)
    assert not any(constraint.accepts(v) for v in outside)


def test_check_params_keeps_the_messages_of_the_single_checks() -> None:
    fraction = {"coverage": [Interval(float, 0, 1, closed="right")]}
    for value in ("0.5", 2.0, True, 10**400):
        with pytest.raises(ValueError) as new:
            check_params({"coverage": value}, fraction)
        with pytest.raises(ValueError) as old:
            check_fraction("coverage", value)
        assert str(new.value) == str(old.value)
    with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\); got 2\.$"):
        check_params({"delta": 2}, {"delta": [Interval(float, 0, 1, closed="neither"), None]})
    check_params({"delta": None}, {"delta": [Interval(float, 0, 1, closed="neither"), None]})
    both = {"gamma": [Options(("scale",)), Interval(float, 0, None, closed="neither")]}
    with pytest.raises(ValueError, match=r"^gamma must be one of 'scale' or be a finite number "
                                         r"in \(0, inf\); got 'auto'\.$"):
        check_params({"gamma": "auto"}, both)


def test_validate_params_keeps_the_function_and_checks_before_the_body() -> None:
    calls = []

    def rate(x: Any, tpr: float = 0.95, *, ties: str = "mean") -> float:
        """The rate."""
        calls.append(x)
        return tpr

    checked = validate_params({"tpr": [Interval(float, 0, 1, closed="right")],
                               "ties": [Options(("mean", "index"))]})(rate)
    assert inspect.signature(checked) == inspect.signature(rate)
    assert checked.__doc__ == "The rate." and checked.__wrapped__ is rate
    assert checked(1) == 0.95 and checked(1, 0.5) == 0.5 and checked(1, tpr=0.25) == 0.25
    with pytest.raises(ValueError, match=r"^tpr must be in \(0, 1\]; got 0\.$"):
        checked(1, 0)
    with pytest.raises(ValueError, match=r"^ties must be one of 'mean', 'index'; got 'x'\.$"):
        checked(1, ties="x")
    assert calls == [1, 1, 1]
    with pytest.raises(TypeError):
        checked()  # a missing argument is the call's own TypeError
    with pytest.raises(ValueError, match="constraints must name parameters of rate; got fpr"):
        validate_params({"fpr": [Boolean()]})(rate)


@pytest.mark.parametrize("values", [np.array([2**53 + 1, 2**53], dtype=np.int64),
                                    np.array([-(2**53) - 1, 0], dtype=np.int64),
                                    np.array([2**64 - 1, 1], dtype=np.uint64),
                                    np.array([2**62 + 512, 2**62], dtype=np.int64)])
def test_integers_that_float64_cannot_hold_are_refused(values):
    """As floats they would tie (an AUROC of 0.5 for two distinct scores)."""
    with pytest.raises(ValueError, match=r"^scores holds integers that float64 cannot hold"):
        auroc([False, True], values)


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps,
                    reason="long double is float64 on this platform")
def test_long_doubles_that_float64_cannot_hold_are_refused():
    # 1 + 2**-60 rounded to 1 silently: two distinct scores tied (AuRC 0.5, not 0.75)
    from abstain.metrics import aurc

    u = np.array([1.0, 1.0], dtype=np.longdouble)
    u[1] += np.longdouble(2.0) ** -60
    with pytest.raises(ValueError, match=r"^uncertainty holds float\d+ values that float64 "
                                         r"cannot hold exactly"):
        aurc([1.0, 0.0], u)
    assert aurc([1.0, 0.0], np.array([0.25, 0.5], dtype=np.longdouble)) == 0.75


@pytest.mark.parametrize("values", [np.array([2**53, -(2**53)], dtype=np.int64),
                                    np.array([2**60, 2**61], dtype=np.int64),
                                    np.array([-(2**63), 0], dtype=np.int64),
                                    np.array([2**63, 0], dtype=np.uint64)])
def test_large_integers_that_float64_holds_exactly_convert(values):
    assert auroc([False, True], values) == float(values[1] > values[0])


def test_a_long_double_beyond_float64_is_named_with_its_own_digits():
    # "float128 values that float64 cannot hold exactly (e.g. 1.0)": float64 holds 1.0
    from abstain.metrics import aurc

    x = np.array([1, 1 + np.longdouble(2.0**-62)], dtype=np.longdouble)
    if x[1] == x[0]:
        pytest.skip("this platform's long double is float64")
    with pytest.raises(ValueError, match=r"cannot hold exactly \(e\.g\. 1\.000000000000000000"):
        aurc([1, 0], x)


def test_a_masked_array_with_masked_entries_is_refused_naming_the_argument() -> None:
    from abstain.combine import conformal_threshold
    from abstain.metrics import aurc, auroc

    losses = np.ma.array([0.0, 1.0, 0.0, 1.0], mask=[0, 0, 1, 0])
    scores = np.ma.array([0.1, 0.9, np.nan, 0.8], mask=[0, 0, 1, 0])
    with pytest.raises(ValueError, match="^losses must not be a masked array with masked "):
        aurc(losses, np.arange(4.0))
    with pytest.raises(ValueError, match="^scores must not be a masked array"):
        auroc(np.array([0, 1, 0, 1]), scores)  # not "1 NaN", a value the user masked
    with pytest.raises(ValueError, match="^is_ood must not be a masked array"):
        auroc(np.ma.array([0, 1, 0, 1], mask=[1, 0, 0, 0]), np.arange(4.0))
    with pytest.raises(ValueError, match="must not be a masked array"):
        conformal_threshold(np.ma.array([1.0, 2.0, 8.0], mask=[0, 0, 1]), alpha=0.5)
    # the label, index and count arguments too (they read through np.asarray)
    from abstain.metrics import bootstrap_indices, resample_counts
    from abstain.scores import LossRegression, sample_losses

    masked = np.ma.array([0, 1, 1], mask=[0, 0, 1])
    for call, name in ((lambda: sample_losses(masked, [0, 1, 0]), "y_true"),
                       (lambda: resample_counts(np.ma.array([[0, 1]], mask=[[0, 1]]), 2),
                        "rows"),
                       (lambda: bootstrap_indices(masked, 2), "strata"),
                       (lambda: LossRegression(features="predicted_class").fit(
                           np.eye(3), masked, [0.0, 1.0, 0.0]), "y_pred")):
        with pytest.raises(ValueError, match=f"^{name} must not be a masked array"):
            call()
    # a masked array with nothing masked is its values
    assert aurc(np.ma.array([0.0, 1.0, 0.0]), np.ma.array([0.2, 0.9, 0.1])) == aurc(
        np.array([0.0, 1.0, 0.0]), np.array([0.2, 0.9, 0.1]))


def test_a_dataframe_of_nullable_columns_reads_as_its_numbers() -> None:
    pd = pytest.importorskip("pandas")
    from abstain.combine import EmpiricalZ, combine
    from abstain.metrics import auroc

    frame = pd.DataFrame({"a": [0.1, 0.5, 0.9, 0.3], "b": [1, 2, 4, 3]})
    nullable = frame.convert_dtypes()  # Float64 and Int64: as object to np.asarray
    is_ood = np.array([0, 0, 1, 1])
    assert auroc(is_ood, nullable) == auroc(is_ood, frame.to_numpy(dtype=float))
    np.testing.assert_array_equal(combine(nullable), combine(frame.to_numpy(dtype=float)))
    # an integer column beyond 2**53 beside a float one: read as float64, 2**53 + 1 became
    # 2**53 (two distinct rows tied) without a word; refused as the column alone is
    for wide in (pd.DataFrame({"n": [2**53 + 1, 2**53], "x": [0.5, 0.25]}),
                 pd.DataFrame({"n": [2**53 + 1, 2**53], "x": [0.5, 0.25]}).convert_dtypes(),
                 pd.DataFrame({"n": pd.Categorical([2**53 + 1, 2**53]), "x": [0.5, 0.25]})):
        with pytest.raises(ValueError, match=r"^S_train\[:, 0\] holds integers that float64 "
                                             r"cannot hold exactly"):
            EmpiricalZ().fit(wide)
    missing = nullable.copy()
    missing.loc[1, "a"] = pd.NA
    with pytest.raises(ValueError, match="must be finite; got 1 NaN"):
        auroc(is_ood, missing)


def test_a_dataframe_of_bool_columns_beside_numbers_reads_as_its_numbers() -> None:
    # pandas reads such a frame as objects: refused as "dtype object", although a bool
    # array, a bool column alone and a nullable "boolean" column were taken
    pd = pytest.importorskip("pandas")
    from abstain.detectors import KNN, MSP

    for frame in (pd.DataFrame({"a": [1.0, 2.0, 0.5], "b": [True, False, True]}),
                  pd.DataFrame({"a": [1, 2, 5], "b": [True, False, True]})):
        as_float = frame.to_numpy(dtype=float)
        np.testing.assert_array_equal(MSP().score(frame), MSP().score(as_float))
        np.testing.assert_array_equal(KNN(k=1).fit(frame).score(frame),
                                      KNN(k=1).fit(as_float).score(as_float))
    # beside dates: objects, refused as such (not as a ragged array)
    dates = pd.DataFrame({"t": pd.to_datetime(["2020-01-01", "2020-01-02"]), "b": [True, False]})
    with pytest.raises(ValueError, match=r"got dtype object\.$"):
        MSP().score(dates)
