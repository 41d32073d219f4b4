"""abstain.app.tables: picking and checking the columns of a table (prepare, TableData)."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.app.io import ColumnError
from abstain.app.tables import MissingValuesError, prepare

nan = np.nan


def test_losses_from_a_loss_column():
    data = prepare({"loss": [0.5, 0.0, 2.0], "u": [0.3, 0.1, 0.2], "name": np.array(["a", "b",
                                                                                      "c"])})
    assert data.losses.tolist() == [0.5, 0.0, 2.0]
    assert list(data.scores) == ["u"]  # text columns are never scores
    assert data.scores["u"].tolist() == [0.3, 0.1, 0.2]
    assert data.is_ood is None and data.ood_score is None and data.n_dropped == 0
    assert data.keep.tolist() == [True, True, True]
    named = prepare({"err": [1, 0], "loss": [0, 0], "u": [0.1, 0.2]}, loss="err", scores=["u"])
    assert named.losses.tolist() == [1.0, 0.0]


def test_losses_from_label_and_prediction():
    text = prepare({"label": np.array(["cat", "dog", "dog", "cat"]),
                    "prediction": np.array(["cat", "cat", "dog", "dog"]), "u": [1, 2, 3, 4]})
    assert text.losses.tolist() == [0.0, 1.0, 0.0, 1.0]
    assert list(text.scores) == ["u"]  # the label and prediction columns are not scores
    numbers = prepare({"y": [1, 2, 2], "yhat": [1, 2, 1], "u": [0.1, 0.2, 0.9]},
                      label="y", prediction="yhat")
    assert numbers.losses.tolist() == [0.0, 0.0, 1.0]
    assert list(numbers.scores) == ["u"]


def test_a_loss_column_wins_over_label_and_prediction():
    table = {"loss": [0.25, 0.0], "label": [1, 2], "prediction": [1, 1], "u": [0.1, 0.2]}
    assert prepare(table, scores=["u"]).losses.tolist() == [0.25, 0.0]
    assert prepare(table, scores=["u"], label="label").losses.tolist() == [0.0, 1.0]


def test_label_prediction_and_loss_columns_are_never_default_scores():
    # A loss column beside numeric labels: the labels are not uncertainty scores.
    table = {"loss": [0.25, 0.0, 1.0], "label": [1, 2, 3], "prediction": [1, 1, 3],
             "is_ood": [0, 0, 0], "u": [0.1, 0.2, 0.3]}
    assert list(prepare(table).scores) == ["u"]
    named = {"err": [1, 0, 0], "loss": [0, 0, 0], "y": [1, 2, 3], "u": [0.1, 0.2, 0.3]}
    assert list(prepare(named, loss="err", label="y").scores) == ["u"]
    # a loss column and a label and prediction pair are two losses: the labels were ignored
    with pytest.raises(ColumnError, match=r"^the loss is given twice: the loss column 'err' and "
                                         r"the label and prediction columns"):
        prepare({**named, "p": [1, 1, 3]}, loss="err", label="y", prediction="p")


def test_ood_rows_have_loss_zero_whatever_their_loss_cells_hold():
    data = prepare({"loss": [1.0, nan, 3.0, 1.0], "u": [0.1, 0.2, 0.3, 0.4],
                    "is_ood": [0, 1, 1, 0]})
    assert data.losses.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert data.is_ood.tolist() == [False, True, True, False]
    data = prepare({"label": np.array(["a", "", "b"]), "prediction": np.array(["b", "", "c"]),
                    "u": [0.1, 0.2, 0.3], "flag": np.array([False, True, True])}, is_ood="flag")
    assert data.losses.tolist() == [1.0, 0.0, 0.0]
    assert data.is_ood.tolist() == [False, True, True]
    assert list(data.scores) == ["u"]


def test_missing_values_are_named():
    table = {"loss": [0.5, nan, 2.0, 0.0, nan], "u": [0.1, 0.2, nan, 0.4, 0.5],
             "v": [1, 2, 3, nan, 5], "is_ood": [0, 0, 0, 1, 1]}
    with pytest.raises(MissingValuesError) as exc:
        prepare(table)
    err = exc.value
    # row 4's NaN loss is on an OOD row: not missing
    assert (err.n_rows, err.columns, err.first_row) == (3, ["u", "v", "loss"], 1)
    assert str(err) == ("3 row(s) have NaN or empty values in column(s) 'u', 'v', 'loss' (first "
                        "at row index 1); drop them explicitly (dropna=True).")
    assert isinstance(err, ValueError)
    with pytest.raises(MissingValuesError) as exc:  # an empty text cell is missing too
        prepare({"label": np.array(["a", " ", "b"]), "prediction": np.array(["a", "b", "b"]),
                 "u": [0.1, 0.2, 0.3]})
    assert (exc.value.n_rows, exc.value.columns, exc.value.first_row) == (1, ["label"], 1)


def test_dropna_drops_exactly_the_rows_with_missing_values():
    table = {"loss": [0.5, nan, 2.0, 0.0, nan, 1.0], "u": [0.1, 0.2, nan, 0.4, 0.5, 0.6],
             "v": [1, 2, 3, nan, 5, 6], "is_ood": [0, 0, 0, 1, 1, 0]}
    data = prepare(table, dropna=True)
    assert data.keep.tolist() == [True, False, False, False, True, True]
    assert data.n_dropped == 3
    assert data.losses.tolist() == [0.5, 0.0, 1.0]
    assert data.scores["u"].tolist() == [0.1, 0.5, 0.6]
    assert data.scores["v"].tolist() == [1.0, 5.0, 6.0]
    assert data.is_ood.tolist() == [False, True, False]
    # only the columns used count: scores=["u"] leaves row 3 (v is NaN) in
    assert prepare(table, scores=["u"], dropna=True).keep.tolist() == [
        True, False, False, True, True, True]
    assert prepare(table, scores=["u"], dropna=True).n_dropped == 2


def test_need_loss_false_reads_only_the_scores():
    data = prepare({"loss": [nan, -1.0], "is_ood": [7, 7], "u": [0.2, 0.1]}, scores=["u"],
                   need_loss=False)
    assert data.losses.tolist() == [0.0, 0.0] and data.is_ood is None
    assert data.scores["u"].tolist() == [0.2, 0.1]


def test_ood_score_pairs_with_every_other_score_column():
    table = {"loss": [0.0, 1.0, 1.0, 0.0], "u": [0.1, 0.2, 0.3, 0.4], "h": [4, 3, 2, 1],
             "g": [1, 5, 2, 6], "is_ood": [0, 1, 0, 1]}
    data = prepare(table, ood_score="g")
    assert data.ood_score == "g"
    assert list(data.scores) == ["u", "h", "g"]
    assert data.pairs == {"u+g": ("u", "g"), "h+g": ("h", "g")}
    np.testing.assert_array_equal(data.stacked(["h", "g"]), [[4, 1], [3, 5], [2, 2], [1, 6]])
    np.testing.assert_array_equal(data.stacked(["g"]), [[1], [5], [2], [6]])
    one = prepare(table, scores=["u"], ood_score="g")  # the OOD score is added to the scores
    assert list(one.scores) == ["u", "g"]
    assert one.pairs == {"u+g": ("u", "g")}
    assert prepare(table).pairs == {}


@pytest.mark.parametrize("table, kwargs, error, message", [
    ({"u": [1.0]}, {}, ColumnError,
     "found no loss: the table has no 'loss' column and no 'label' and 'prediction' columns; "
     "name them. The columns are: 'u'."),
    ({"loss": [1.0], "t": np.array(["x"])}, {}, ColumnError,
     "found no score column: the table has no numeric column besides the loss, label, "
     "prediction and OOD columns; columns are: 'loss', 't'. A column whose first value is "
     "text is read as text: 't' ('x' on row index 0); correct or empty such a cell, or name "
     "the scores with --score."),
    ({"loss": [1.0, 0.0], "u": [1, 2]}, {"loss": "los"}, ColumnError,
     "loss column 'los' not found; did you mean 'loss'? The columns are: 'loss', 'u'."),
    ({"loss": [1.0], "u": np.array(["x"])}, {"scores": ["u"]}, ValueError,
     "column 'u' must be numeric; got text values such as 'x' (row index 0): a column whose "
     "first value is text is read as text; correct or empty such cells."),
    ({"loss": [1.0, -0.5], "u": [1, 2]}, {}, ValueError,
     "the loss column 'loss' must be non-negative; got -0.5 on row index 1 (1 such row(s))."),
    ({"loss": [1.0, 0.0], "u": [1, 2], "is_ood": [0, 2]}, {}, ValueError,
     "column 'is_ood' must hold only 0/1 or true/false (or an empty cell); got 2 on row index "
     "1 (1 such row(s)); correct the OOD marks."),
    ({"loss": [1.0, 0.0], "u": [1, 2], "g": [1, 2]}, {"ood_score": "g"}, ValueError,
     "the OOD score 'g' needs an OOD column; the table has none (name it with is_ood)."),
    ({"loss": [1.0, 0.0], "g": [1, 2], "is_ood": [0, 1]}, {"ood_score": "g"}, ValueError,
     "the OOD score 'g' pairs with the other score columns; got no other score column."),
    ({"loss": [1.0, 0.0], "u": [1, 2], "g": [1, 2], "u+g": [1, 2], "is_ood": [0, 1]},
     {"ood_score": "g"}, ValueError, "the pair name 'u+g' is also a score column; rename it."),
])
def test_bad_tables_are_refused_with_one_message(table, kwargs, error, message):
    with pytest.raises(error) as exc:
        prepare(table, **kwargs)
    assert str(exc.value).startswith(message)



def test_a_pandas_dataframe_is_a_table():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"loss": [0.0, 1.0, 0.0], "u": [0.1, 0.9, 0.2], "name": ["a", "b", "c"]})
    data = prepare(frame)
    assert list(data.scores) == ["u"] and data.losses.tolist() == [0.0, 1.0, 0.0]


def test_ood_marks_other_than_0_1_are_refused_with_or_without_dropna():
    from abstain.app.io import Rows

    table = {"loss": [0.0, np.nan, 1.0], "u": [0.1, 0.2, 0.3], "is_ood": [0.0, 2.0, np.nan]}
    rows = Rows("line", np.array([2, 3, 5]))
    for dropna in (False, True):  # the OOD column is named, not the empty loss it excuses
        with pytest.raises(ValueError, match=r"^column 'is_ood' must hold only 0/1 or "
                                             r"true/false \(or an empty cell\); got 2 on line 3 "
                                             r"\(1 such row\(s\)\); correct the OOD marks\.$"):
            prepare(table, dropna=dropna, rows=rows)
    with pytest.raises(ValueError, match=r"^column 'is_ood' must be numeric; got text values "
                                         r"such as 'yes' \(line 3\): a column whose first "
                                         r"value is text is read as text; correct or empty "
                                         r"such cells\.$"):
        prepare({**table, "is_ood": np.array(["", "yes", "no"])}, dropna=True, rows=rows)
    with pytest.raises(MissingValuesError, match=r"\(first at line 5\)") as exc:
        prepare({**table, "is_ood": [0.0, 1.0, np.nan]}, rows=rows)
    assert exc.value.columns == ["is_ood"] and exc.value.where == "line 5"


def test_label_and_prediction_of_different_kinds_are_refused():
    table = {"label": [1.0, 0.0, np.nan], "prediction": np.array(["class_1", "class_0", "x"]),
             "u": [0.1, 0.2, 0.3], "is_ood": [0, 0, 1]}
    with pytest.raises(ValueError, match=r"^the label and prediction columns 'label' and "
                                         r"'prediction' hold different kinds of values: 'label' "
                                         r"holds numbers \(such as 1\), 'prediction' text \(such "
                                         r"as 'class_1'\), so no label would equal its "
                                         r"prediction; write both with the same class names\.$"):
        prepare(table)
    # the same kinds compare as values; a column empty on every ID row has no kind to clash
    same = prepare({**table, "prediction": np.array(["1", "0", "x"]), "label":
                    np.array(["1", "1", ""])})
    assert same.losses.tolist() == [0.0, 1.0, 0.0]
    empty = prepare({**table, "label": [np.nan, np.nan, np.nan], "is_ood": [1, 1, 1]})
    assert empty.losses.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("column", ["u", "loss"])
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_an_infinite_cell_is_refused_naming_its_column_and_row(column, value):
    table = {"loss": np.array([0.0, 1.0, 0.0]), "u": np.array([0.1, 0.2, 0.3])}
    table[column] = table[column].copy()
    table[column][1] = value
    with pytest.raises(ValueError, match=rf"^column '{column}' must hold finite numbers; got "
                                         rf"-?inf on row index 1 \(1 such row\(s\)\)"):
        prepare(table)


def test_class_ids_past_two_to_the_53_are_refused_not_read_as_equal():
    # 9007199254740993 reads as 9007199254740992.0: the wrong prediction would count right
    big = float(2**53)
    table = {"label": np.array([big, 1.0, 2.0]), "prediction": np.array([big, 1.0, 3.0]),
             "u": np.array([0.1, 0.2, 0.3])}
    with pytest.raises(ValueError, match=r"^column 'label' holds class ids too large to "
                                         r"compare exactly as numbers \(about 9\.007e\+15 on "
                                         r"row index 0, 1 such row\(s\)"):
        prepare(table)
    table["label"][0] = table["prediction"][0] = big - 1  # the largest exact id: read
    assert prepare(table).losses.tolist() == [0.0, 0.0, 1.0]
    # text ids compare as written; an OOD row's label is not read
    text = {"label": np.array(["9007199254740993", "a"]),
            "prediction": np.array(["9007199254740992", "a"]), "u": np.array([0.1, 0.2])}
    assert prepare(text).losses.tolist() == [1.0, 0.0]
    ood = {**table, "is_ood": np.array([1.0, 0.0, 0.0])}
    ood["label"] = ood["label"].copy()
    ood["label"][0] = 2.0**60
    assert prepare(ood).losses.tolist() == [0.0, 0.0, 1.0]


def test_integer_scores_past_two_to_the_53_are_refused_not_tied(tmp_path, capsys):
    from abstain.app.cli import main

    big = np.array([2**53, 2**53 + 1, 2**53 - 2, 2**53 + 3], dtype=np.int64)
    loss = np.array([0.0, 1.0, 0.0, 1.0])
    message = (r"^column 'risk' holds integers that float64 cannot hold exactly \(beyond "
               r"2\*\*53, such as 9007199254740993 on row index 1\), so distinct values would "
               r"tie; subtract an offset first, or write them as floats\.$")
    for kwargs in ({}, {"scores": ["risk"]}):
        with pytest.raises(ValueError, match=message):
            prepare({"loss": loss, "risk": big}, **kwargs)
    with pytest.raises(ValueError, match=message.replace("'risk'", "'loss'")):
        prepare({"loss": big, "risk": loss}, loss="loss", scores=["risk"])
    # an id column of such integers is not taken as a score, and says so
    data = prepare({"loss": loss, "id": big, "u": np.arange(4.0)})
    assert list(data.scores) == ["u"]
    assert data.notes == ("column 'id' holds integers beyond 2**53, which float64 cannot hold "
                          "exactly; it is not taken as a score.",)
    # a number column whose first cell is text was read as text and dropped without a word
    data = prepare({"loss": loss, "u": np.arange(4.0),
                    "dist": np.array(["n/a", "0.2", "0.5", "1"])})
    assert list(data.scores) == ["u"]
    assert data.notes == ("column 'dist' holds numbers and text ('n/a' on row index 0); it is "
                          "not taken as a score: correct or empty that cell, or name the "
                          "scores with --score.",)
    data = prepare({"loss": loss, "u": np.arange(4.0), "id": np.array(["a", "b", "", "c"])})
    assert data.notes == ()  # text alone: no note
    # up to 2**53 every integer is exact: read; 2**63 - 1 rounds past the int64 range,
    # where casting the float back differs between CPUs: refused without that cast
    assert list(prepare({"loss": loss, "risk": big - 3}).scores) == ["risk"]
    with pytest.raises(ValueError, match="such as 9223372036854775807 on row index 0"):
        prepare({"loss": loss[:2], "risk": np.array([2**63 - 1, 0], dtype=np.int64)})
    np.savez(tmp_path / "s.npz", loss=loss, risk=big)
    assert main(["evaluate", str(tmp_path / "s.npz"), "--quiet"]) == 1
    assert capsys.readouterr().err.startswith("abstain evaluate: error: column 'risk' holds "
                                              "integers that float64 cannot hold exactly")


@pytest.mark.parametrize(("kw", "role"), [
    ({"loss": "u", "scores": ["u"]}, "loss"),
    ({"scores": ["loss", "u"]}, "loss"),
    ({"scores": ["u", "is_ood"]}, "OOD"),
    ({"label": "u", "prediction": "p", "scores": ["u"]}, "label or prediction"),
])
def test_a_score_that_is_the_loss_or_the_ood_column_is_refused(kw, role):
    table = {"loss": np.array([0.0, 1.0]), "u": np.array([0.0, 1.0]),
             "p": np.array([1.0, 1.0]), "is_ood": np.array([0.0, 0.0])}
    name = kw["scores"][-1] if role == "OOD" else kw["scores"][0]
    with pytest.raises(ValueError, match=rf"^the score column '{name}' is also the {role} "
                                         r"column; a score must be another column\.$"):
        prepare(table, **kw)


def test_an_ood_column_that_is_the_loss_column_is_refused():
    table = {"loss": np.array([0.0, 1.0]), "u": np.array([0.1, 0.9])}
    with pytest.raises(ValueError, match=r"^the OOD column 'loss' is also the loss column; "
                                         r"mark OOD rows in a column of their own\.$"):
        prepare(table, is_ood="loss")


def test_a_rule_auroc_past_2_53_rows_at_one_rule_score_names_the_rule():
    from types import SimpleNamespace

    import abstain
    from abstain.app.data import Tables

    b = 2**52  # two pairs of under 2**53 rows each, one score of the rule
    p = abstain.PairTable.from_totals([[0.5, 0.0], [0.5, 1.0], [0.1, 0.0]], [b + 1, b + 2, 10],
                                      [b, 1, 0], [0.0, 0.0, 0.0], max_loss=1.0)
    rule = SimpleNamespace(score=lambda v: v[:, 0])
    tables = SimpleNamespace(has_ood=True, summary=SimpleNamespace(pairs={"t": p}))
    with pytest.raises(ValueError, match=r"^the rule's AUROC on the pairs of 't' cannot be "
                                         r"counted exactly: counts of equal values"):
        Tables.rule_auroc(tables, rule, "t", ["a", "b"])
