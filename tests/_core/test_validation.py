"""The shared input checks: messages with plain numbers, tables and labels named as such."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from abstain import BoundedAbstention, PairTable, ScoreTable
from abstain._core.validation import (
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
    check_positive,
    check_probability,
    check_random_state,
    plain,
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
     r"^random_state must be None, an integer >= 0 or a numpy Generator; got -1\.$"),
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
