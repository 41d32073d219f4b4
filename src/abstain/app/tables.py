"""Evaluate, fit and apply reject rules on a table of per-sample columns.

The functions behind the ``abstain`` command line, usable from Python. A table
(see :mod:`abstain.app.io`) holds a loss column, or a label and a prediction column
(the 0/1 loss ``label != prediction``); one or more uncertainty-score columns
(higher is rejected first); and optionally an ``is_ood`` column (1/True for
out-of-distribution rows, whose loss, label and prediction are ignored and may
be empty). One score column may be named the OOD score ``s_g`` of a double-score
method: it is then also paired with each other score column ``s_r`` (or those named) as the two
columns ``(s_r, s_g)`` that the OOD metrics and models accept. :func:`prepare`
picks and checks the columns; :func:`evaluate` computes every applicable metric;
:func:`fit_rule` fits a reject model and :func:`apply_rule` applies it to new rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .io import ColumnError, Rows, beyond_float, get_column, text_among_numbers

Progress = Callable[[int, int], None]


class MissingValuesError(ValueError):
    """Rows with NaN or empty values in the columns used.

    Attributes
    ----------
    n_rows : int
        Number of such rows.
    columns : list of str
        The columns with missing values.
    first_row : int
        Index (from 0, data rows only) of the first such row.
    where : str
        Where the first such row lies in its file: ``"line 7"`` for a CSV file (the header
        is line 1), ``"row index 5"`` otherwise (see :class:`~abstain.app.io.Rows`).
    checked : list of str
        Every column checked, in the order ``columns`` follows (the chunks of a file name
        their columns together in it).
    """

    def __init__(self, n_rows: int, columns: list[str], first_row: int,
                 where: str | None = None, checked: list[str] | None = None) -> None:
        self.n_rows, self.columns, self.first_row = n_rows, columns, first_row
        self.checked = list(columns) if checked is None else checked
        self.where = f"row index {first_row}" if where is None else where
        cols = ", ".join(map(repr, columns))
        super().__init__(
            f"{n_rows} row(s) have NaN or empty values in column(s) {cols} (first at "
            f"{self.where}); drop them explicitly (dropna=True)."
        )


class TableData(NamedTuple):
    """The checked columns of a table.

    Attributes
    ----------
    losses : ndarray of shape (n,)
        Non-negative loss per row (0.0 on OOD rows).
    scores : dict of str to ndarray of shape (n,)
        Uncertainty scores by column name; higher is rejected first.
    is_ood : ndarray of bool, shape (n,), or None
        OOD rows, when the table has an OOD column.
    n_dropped : int
        Rows dropped for missing values (``dropna=True``).
    keep : ndarray of bool, shape (n_rows,)
        Which rows of the table were kept.
    ood_score : str or None
        The score column that is the OOD score ``s_g`` of a double-score method
        (also in ``scores``), or None.
    notes : tuple of str
        What was read otherwise than named (a skipped index column), one line each.
    pair_with : tuple of str
        The score columns paired with ``ood_score``; empty: every other score column.
    """

    losses: NDArray[np.float64]
    scores: dict[str, NDArray[np.float64]]
    is_ood: NDArray[np.bool_] | None
    n_dropped: int
    keep: NDArray[np.bool_]
    ood_score: str | None = None
    notes: tuple[str, ...] = ()
    pair_with: tuple[str, ...] = ()

    @property
    def pairs(self) -> dict[str, tuple[str, str]]:
        """The double-score pairs, ``{"s_r+s_g": (s_r, s_g)}``: each column of
        ``pair_with`` (by default each other score column) with ``ood_score`` (empty
        without one)."""
        g = self.ood_score
        if g is None:
            return {}
        return {f"{r}+{g}": (r, g) for r in self.pair_with or self.scores if r != g}

    def stacked(self, columns: Sequence[str]) -> NDArray[np.float64]:
        """The named score columns side by side, shape (n, len(columns))."""
        return np.stack([self.scores[c] for c in columns], axis=1)


def _missing(col: NDArray[Any]) -> NDArray[np.bool_]:
    if col.dtype.kind == "f":
        return np.isnan(col)
    return np.char.strip(col.astype(str)) == ""


def _first_value(col: NDArray[Any]) -> int:
    """The row of the first cell of ``col`` that is not empty (0 if none is)."""
    present = np.flatnonzero(~_missing(col))
    return int(present[0]) if present.size else 0


def _numeric(name: str, col: NDArray[Any], rows: Rows) -> NDArray[np.float64]:
    if col.dtype.kind != "f":
        i = _first_value(col)
        raise ValueError(f"column {name!r} must be numeric; got text values such as "
                         f"{str(col[i]).strip()!r} ({rows.name(i)}): a column whose first value "
                         "is text is read as text; correct or empty such cells.")
    inf = np.isinf(col)
    if inf.any():
        i = int(np.argmax(inf))
        raise ValueError(f"column {name!r} must hold finite numbers; got {_shown(col[i])} on "
                         f"{rows.name(i)} ({rows.such(int(inf.sum()))}); correct the value "
                         "or remove the row.")
    return col


def _exact_column(name: str, inexact: Mapping[str, NDArray[Any]], rows: Rows) -> None:
    """Refuse a score or loss column of integers that float64 cannot hold exactly: two
    distinct ids beyond 2**53 would read as one number (9007199254740993 as
    9007199254740992) and tie."""
    if name in inexact:
        v = inexact[name]
        i = int(np.argmax(beyond_float(v)))
        raise ValueError(f"column {name!r} holds integers that float64 cannot hold exactly "
                         f"(beyond 2**53, such as {int(v[i])} on {rows.name(i)}), so distinct "
                         "values would tie; subtract an offset first, or write them as floats.")


def _shown(v: Any) -> str:
    """A cell as a message quotes it: a whole float without its point, text in quotes."""
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)
    return repr(str(v))


def _ood_marks(name: str, col: NDArray[Any], rows: Rows) -> NDArray[np.float64]:
    """The OOD column, refusing any value but 0/1 or true/false (empty cells are missing)."""
    col = _numeric(name, col, rows)
    wrong = ~np.isnan(col) & (col != 0.0) & (col != 1.0)
    if wrong.any():
        i = int(np.argmax(wrong))
        raise ValueError(f"column {name!r} must hold only 0/1 or true/false (or an empty "
                         f"cell); got {_shown(col[i])} on {rows.name(i)} "
                         f"({rows.such(int(wrong.sum()))}); correct the OOD marks.")
    return col


def _same_kind(cols: dict[str, NDArray[Any]], rows_used: NDArray[np.bool_]) -> None:
    """Refuse a label and a prediction column of which one holds numbers and one text:
    no row would compare equal, and every row would count as an error."""
    (na, a), (nb, b) = cols.items()
    if (a.dtype.kind == "f") == (b.dtype.kind == "f"):
        return
    a_at = np.flatnonzero(rows_used & ~_missing(a))
    b_at = np.flatnonzero(rows_used & ~_missing(b))
    if a_at.size == 0 or b_at.size == 0:
        return

    def kind(c: NDArray[Any]) -> str:
        return "numbers" if c.dtype.kind == "f" else "text"

    raise ValueError(
        f"the label and prediction columns {na!r} and {nb!r} hold different kinds of values: "
        f"{na!r} holds {kind(a)} (such as {_shown(a[a_at[0]])}), {nb!r} {kind(b)} (such as "
        f"{_shown(b[b_at[0]])}), so no label would equal its prediction; write both with the "
        "same class names.")


def _exact_classes(cols: dict[str, NDArray[Any]], rows_used: NDArray[np.bool_],
                   rows: Rows) -> None:
    """Refuse numeric class labels of magnitude 2**53 or more: read as float64, two
    different ids there can be one number (9007199254740993 reads as 9007199254740992), and
    a wrong prediction would count as correct."""
    for name, col in cols.items():
        if col.dtype.kind != "f":
            continue
        big = rows_used & (np.abs(np.nan_to_num(col)) >= 2.0**53)
        if big.any():
            i = int(np.argmax(big))
            raise ValueError(
                f"column {name!r} holds class ids too large to compare exactly as numbers "
                f"(about {float(col[i]):.4g} on {rows.name(i)}, {rows.such(int(big.sum()))}: "
                "2**53 or more); write the labels and predictions as text (e.g. "
                "'id123') or give a loss column.")


def columns_read(*, scores: Sequence[str] | None = None, loss: str | None = None,
                 label: str | None = None, prediction: str | None = None,
                 is_ood: str | None = None, ood_score: str | None = None,
                 pair_with: Sequence[str] | None = None, **_: Any) -> set[str] | None:
    """The columns that :func:`prepare` may read with these options (the ``columns`` of
    :func:`abstain.app.io.read_table_rows`), or None when it may read every column (no
    ``scores`` given: every numeric column is a score).

    Examples
    --------
    >>> from abstain.app.tables import columns_read
    >>> sorted(columns_read(scores=["u"], label="y"))
    ['is_ood', 'label', 'loss', 'prediction', 'u', 'y']
    """
    if scores is None:
        return None
    named = (loss, label, prediction, is_ood, ood_score, *(pair_with or ()))
    return {*scores, "loss", "label", "prediction", "is_ood", *(n for n in named if n)}


def prepare(
    table: Mapping[str, NDArray[Any]],
    *,
    loss: str | None = None,
    label: str | None = None,
    prediction: str | None = None,
    scores: Sequence[str] | None = None,
    is_ood: str | None = None,
    ood_score: str | None = None,
    pair_with: Sequence[str] | None = None,
    dropna: bool = False,
    need_loss: bool = True,
    rows: Rows | None = None,
) -> TableData:
    """Pick and check the columns of a table.

    Parameters
    ----------
    table : mapping of str to ndarray of shape (n,)
        As returned by :func:`abstain.app.io.read_table`.
    loss : str, optional
        Loss column. Default: ``"loss"`` if present, else the 0/1 loss of ``label``
        and ``prediction``.
    label, prediction : str, optional
        Label and prediction columns (default ``"label"`` and ``"prediction"``),
        compared as values (numbers or text).
    scores : sequence of str, optional
        Score columns. Default: every numeric column other than the loss, OOD, label
        and prediction columns (the names given, and ``loss``, ``is_ood``, ``label``
        and ``prediction`` in any case), whether or not the loss is computed from them.
    is_ood : str, optional
        OOD column (0/1 or true/false). Default: ``"is_ood"`` if present.
    ood_score : str, optional
        The OOD score ``s_g`` of a double-score method: a score column (added to
        ``scores`` if they do not name it) that is also paired with each other score
        column ``s_r`` (see :attr:`TableData.pairs`). Needs the OOD column and at
        least one other score column.
    pair_with : sequence of str, optional
        With ``ood_score``: the score columns ``s_r`` paired with it (each added to
        ``scores`` if they do not name it), instead of every other score column; the
        other score columns are still evaluated alone.
    dropna : bool, default False
        Drop rows with NaN or empty values in the columns used (loss, label and
        prediction count on ID rows only) instead of raising
        :class:`MissingValuesError`.
    need_loss : bool, default True
        False when only scores are needed (applying a rule): the loss, label,
        prediction and OOD columns are then not read.
    rows : abstain.app.io.Rows, optional
        Where each row lies in its file, for the messages (the ``rows`` of
        :func:`abstain.app.io.read_table_rows`). Default: the row index from 0.

    Returns
    -------
    TableData

    Raises
    ------
    abstain.app.io.ColumnError
        A named column is missing (the message suggests the closest name).
    MissingValuesError
        Rows with missing values and ``dropna=False``.
    ValueError
        A score or loss column of text; an OOD value other than 0/1, true/false or empty
        (with or without ``dropna``); a label and a prediction column of which one holds
        numbers and the other text.

    Examples
    --------
    >>> from abstain.app.tables import prepare
    >>> data = prepare({"label": [1, 2, 2], "prediction": [1, 2, 1], "u": [0.1, 0.2, 0.9]})
    >>> data.losses.tolist(), list(data.scores)
    ([0.0, 0.0, 1.0], ['u'])
    """
    table = {k: np.asarray(v) for k, v in table.items()}
    shapes = {k: v.shape for k, v in table.items()}
    if any(len(s) != 1 for s in shapes.values()) or len({s for s in shapes.values()}) > 1:
        raise ValueError(f"table must hold columns of one length (1-D arrays); got shapes "
                         f"{', '.join(f'{k!r}: {s}' for k, s in shapes.items())}.")
    # integer columns that float64 cannot hold exactly (beyond 2**53): never a score or loss
    inexact: dict[str, NDArray[Any]] = {}
    for k, v in table.items():
        if v.dtype.kind in "biu" or (v.dtype.kind == "O" and beyond_float(v).any()):
            if beyond_float(v).any():
                inexact[k] = v
            table[k] = (v.astype(np.float64) if v.dtype.kind != "O" else  # integers and None
                        np.array([np.nan if x is None else float(x) for x in v.tolist()]))
    n = len(next(iter(table.values()))) if table else 0
    if rows is None:
        rows = Rows.range(n)
    used: dict[str, NDArray[Any]] = {}
    notes: list[str] = []
    ood_name = None
    if need_loss:
        ood_name = is_ood if is_ood is not None else ("is_ood" if "is_ood" in table else None)
    ood: NDArray[np.bool_] | None = None
    if ood_name is not None:
        used[ood_name] = _ood_marks(ood_name, get_column(table, ood_name, "OOD column"), rows)
    loss_cols: dict[str, NDArray[Any]] = {}
    if need_loss and loss is not None and label is not None and prediction is not None:
        raise ColumnError(f"the loss is given twice: the loss column {loss!r} and the label and "
                          "prediction columns (their disagreement is a 0/1 loss); name one.")
    if not need_loss:
        pass
    elif loss is not None:
        _exact_column(loss, inexact, rows)
        loss_cols[loss] = _numeric(loss, get_column(table, loss, "loss column"), rows)
    elif label is not None or prediction is not None:
        for name, what in ((label or "label", "label column"),
                           (prediction or "prediction", "prediction column")):
            loss_cols[name] = get_column(table, name, what)
    elif "loss" in table:
        loss_cols["loss"] = _numeric("loss", table["loss"], rows)
    elif "label" in table and "prediction" in table:
        loss_cols = {"label": table["label"], "prediction": table["prediction"]}
    else:
        raise ColumnError(
            "found no loss: the table has no 'loss' column and no 'label' and 'prediction' "
            f"columns; name them. The columns are: {', '.join(map(repr, table))}."
        )
    if scores is None:
        # The loss, OOD, label and prediction columns are never scores by default, even
        # when the loss comes from another column: a numeric label is not an uncertainty.
        taken = set(used) | set(loss_cols) | {"label", "prediction", "loss", "is_ood"}
        taken |= {name for name in (label, prediction, loss, is_ood) if name is not None}
        if "" in table:
            notes.append(unnamed_column(table))
            taken.add("")
        names = [k for k, v in table.items()
                 if k not in taken and v.dtype.kind == "f" and k not in inexact]
        skipped = [k for k in inexact if k not in taken]
        if skipped and not names:  # what the only candidate holds, rather than "no column"
            _exact_column(skipped[0], inexact, rows)
        notes += [f"column {k!r} holds integers beyond 2**53, which float64 cannot hold "
                  "exactly; it is not taken as a score." for k in skipped]
        for k, v in table.items():  # a number column whose first cell is text (n/a)
            i = None if k in taken else text_among_numbers(v)
            if i is not None:
                notes.append(f"column {k!r} holds numbers and text ({str(v[i]).strip()!r} on "
                             f"{rows.name(i)}); it is not taken as a score: correct or empty "
                             "that cell, or name the scores with --score.")
        if not names:
            # what each text column starts with: a stray "n/a" makes a number column text
            texts = [f"{k!r} ({str(v[j]).strip()!r} on {rows.name(j)})"
                     for k, v in table.items() if k not in taken and v.dtype.kind == "U"
                     for j in (_first_value(v),)][:3]
            raise ColumnError("found no score column: the table has no numeric column besides "
                              f"the loss, label, prediction and OOD columns; columns are: "
                              f"{', '.join(map(repr, table))}." + (
                                  " A column whose first value is text is read as text: "
                                  f"{', '.join(texts)}; correct or empty such a cell, or name "
                                  "the scores with --score." if texts else ""))
    else:
        names = list(scores)
    if ood_score is not None:
        get_column(table, ood_score, "OOD score column")
        if need_loss and ood_name is None:
            raise ValueError(f"the OOD score {ood_score!r} needs an OOD column; the table has "
                             "none (name it with is_ood).")
        if ood_score not in names:
            names.append(ood_score)
        if len(names) < 2:
            raise ValueError(f"the OOD score {ood_score!r} pairs with the other score "
                             "columns; got no other score column.")
    loss_role = "loss" if len(loss_cols) == 1 else "label or prediction"
    if ood_name is not None and ood_name in loss_cols:
        raise ValueError(f"the OOD column {ood_name!r} is also the {loss_role} column; mark "
                         "OOD rows in a column of their own.")
    paired = _paired(table, names, ood_score, pair_with)  # its columns join the scores
    for name in names:  # a score that is the loss (or what gives it) scores the answer
        if name in loss_cols or name == ood_name:
            role = "OOD" if name == ood_name else loss_role
            raise ValueError(f"the score column {name!r} is also the {role} column; a score "
                             "must be another column.")
    if ood_score is not None:
        clash = [f"{r}+{ood_score}" for r in paired or names if f"{r}+{ood_score}" in names]
        if clash:
            raise ValueError(f"the pair name {clash[0]!r} is also a score column; rename it.")
    for name in names:
        _exact_column(name, inexact, rows)
    score_cols = {s: _numeric(s, get_column(table, s, "score column"), rows) for s in names}
    # Missing values: OOD rows need no loss, label or prediction.
    bad = np.zeros(n, dtype=bool)
    bad_cols: list[str] = []
    ood_raw = used.get(ood_name) if ood_name is not None else None
    ood_rows = np.zeros(n, dtype=bool) if ood_raw is None else (ood_raw == 1.0)
    for name, col in {**used, **score_cols}.items():
        miss = _missing(col)
        if miss.any():
            bad |= miss
            bad_cols.append(name)
    for name, col in loss_cols.items():
        miss = _missing(col) & ~ood_rows
        if miss.any():
            bad |= miss
            bad_cols.append(name)
    if bad.any() and not dropna:
        first = int(np.argmax(bad))
        raise MissingValuesError(int(bad.sum()), bad_cols, first, rows.name(first),
                                 [*used, *score_cols, *loss_cols])
    keep = ~bad
    if len(loss_cols) == 2:
        _same_kind(loss_cols, keep & ~ood_rows)
        _exact_classes(loss_cols, keep & ~ood_rows, rows)
    if ood_raw is not None:
        ood = ood_raw[keep] == 1.0
    if len(loss_cols) == 1:
        losses = next(iter(loss_cols.values()))[keep].astype(np.float64)
    elif loss_cols:
        a, b = (c[keep] for c in loss_cols.values())
        losses = (a != b).astype(np.float64)
    else:
        losses = np.zeros(int(keep.sum()))
    if ood is not None:
        losses = np.where(ood, 0.0, losses)
    if np.any(losses < 0):
        i = int(np.flatnonzero(keep)[np.argmax(losses < 0)])
        raise ValueError(f"the loss column {next(iter(loss_cols))!r} must be non-negative; got "
                         f"{_shown(losses[np.argmax(losses < 0)])} on {rows.name(i)} "
                         f"({rows.such(int(np.sum(losses < 0)))}).")
    return TableData(losses, {k: v[keep] for k, v in score_cols.items()}, ood,
                     int(bad.sum()) if dropna else 0, keep, ood_score, tuple(notes), paired)


def _paired(table: Mapping[str, NDArray[Any]], names: list[str], ood_score: str | None,
            pair_with: Sequence[str] | None) -> tuple[str, ...]:
    """The checked columns of ``pair_with``, once each in order (appended to ``names``, the
    score columns, where missing); empty when none are given."""
    if pair_with is None:
        return ()
    if isinstance(pair_with, str):
        raise TypeError(f"pair_with must be a sequence of column names; got the string "
                        f"{pair_with!r} (write [{pair_with!r}]).")
    if ood_score is None:
        raise ValueError("pair_with names the columns paired with an OOD score; name the OOD "
                         "score too (ood_score, --ood-score).")
    paired = tuple(dict.fromkeys(pair_with))
    if not paired:
        raise ValueError("pair_with must name at least one score column; leave it out to "
                         "pair every other score column with the OOD score.")
    for r in paired:
        get_column(table, r, "score column to pair")
        if r == ood_score:
            raise ValueError(f"the OOD score {ood_score!r} cannot be paired with itself; "
                             "name the other score columns in pair_with (--pair-with).")
        if r not in names:
            names.append(r)
    return paired


#: The note of a skipped index column.
INDEX_NOTE = ("skipped the first column, which has no name and holds increasing whole "
              "numbers: the index that pandas' to_csv writes (to_csv(index=False) leaves it "
              "out).")


def unnamed_column(table: Mapping[str, NDArray[Any]]) -> str:
    """The note of an unnamed first column that holds an index (pandas' default
    ``to_csv``), which is not scored; ``ColumnError`` for any other unnamed column."""
    col = table[""]
    position = list(table).index("") + 1
    whole = col.dtype.kind == "f" and col.size > 0 and bool(np.all(np.isfinite(col))) and \
        bool(np.all(col == np.round(col)))
    if position == 1 and whole and bool(np.all(np.diff(col) > 0)):
        return INDEX_NOTE
    raise ColumnError(f"column {position} of the table has no name; name it in the header "
                      "row (pandas: to_csv(index=False) leaves out an index).")
