"""``abstain apply``: a rule's accept decisions for a table read in chunks, and its summary.

The source is read chunk by chunk (:func:`~abstain.app.io.read_chunks`, which accepts or
refuses a file whatever the chunk size), so memory holds one chunk and one accept value per
row, not the table's cells. The decisions are those of one call of the rule on every row:
the ties are drawn from one generator seeded with the rule's ``random_state``, in the
order of the rows, as :func:`~abstain.app.rules.apply_rule` draws them on the whole table.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .chunks import MissingRows
from .io import ColumnError, Rows, TableRows, type_columns
from .rules import Rule, apply_rule
from .tables import MissingValuesError, prepare

__all__ = ["Applied", "apply_chunks"]

#: Rows read at a time by default: memory for one chunk of cells as text (about 30 MB of a
#: CSV of a few columns); a larger chunk is no faster.
CHUNK_ROWS = 100_000
#: The columns of the summary under the count, read as numbers where the file has them.
SUMMARY_COLUMNS = ("loss", "label", "prediction", "is_ood")


class Applied(NamedTuple):
    """What :func:`apply_chunks` found.

    Attributes
    ----------
    cells : ndarray of float64, shape (n,)
        One per row of the source: 1.0 accepted, 0.0 abstained, NaN not scored (a NaN or
        empty score under ``dropna``).
    n_dropped : int
        Rows not scored.
    notes : tuple of str
        The notes of the first chunk's columns (as a whole file's).
    summary : list of str
        The lines under the count: coverage and selective risk of the labelled ID rows,
        the OOD rows accepted, or why there are none.
    """

    cells: NDArray[np.float64]
    n_dropped: int
    notes: tuple[str, ...]
    summary: list[str]


class _Labelled:
    """The columns of the summary, chunk by chunk, as the chunks read them (the score
    columns as numbers, the others as the text of their cells: a few bytes per row), typed
    and summarised once on the whole columns, as a read of the whole file is."""

    def __init__(self, scores: list[str]) -> None:
        self.names = [*scores, *SUMMARY_COLUMNS]
        self.parts: dict[str, list[NDArray[Any]]] = {}
        self.rows: list[Rows] = []

    def add(self, chunk: TableRows) -> None:
        for name in self.names:
            if name in chunk.columns:
                self.parts.setdefault(name, []).append(chunk.columns[name])
        self.rows.append(chunk.rows)

    def lines(self, scores: list[str], cells: NDArray[np.float64], where: str) -> list[str]:
        """Coverage and selective risk on labelled ID rows, and the OOD acceptance rate
        (``cells``: 1 accepted, 0 abstained, NaN not scored)."""
        columns = {k: np.concatenate(v) for k, v in self.parts.items()}
        rows = Rows(self.rows[0].unit, np.concatenate([r.numbers for r in self.rows]))
        try:
            read = type_columns(TableRows(columns, rows), SUMMARY_COLUMNS, where)
            data = prepare(read.columns, scores=scores, dropna=True, rows=read.rows)
        except ColumnError:
            return ["(no loss, or label and prediction, columns: no coverage or risk to "
                    "report)"]
        except ValueError as exc:
            return [f"(no coverage or risk to report: {exc})"]
        kept = cells[data.keep] == 1.0
        ood = data.is_ood
        id_rows = ~ood if ood is not None else np.ones(kept.size, dtype=bool)
        lines = []
        n_id = int(id_rows.sum())
        if n_id:
            k = int(kept[id_rows].sum())
            risk = float(data.losses[id_rows][kept[id_rows]].mean()) if k else float("nan")
            lines.append(f"ID rows: coverage {k / n_id:.4f} ({k} of {n_id} labelled rows), "
                         f"selective risk {risk:.4f}")
        if ood is not None and ood.any():
            k = int(kept[ood].sum())
            lines.append(f"OOD rows: {k} of {int(ood.sum())} accepted ({k / ood.sum():.2%})")
        return lines


def apply_chunks(rule: Rule, chunks: Iterable[TableRows], scores: list[str], *,
                 dropna: bool, where: str | Path) -> Applied:
    """The accept cells of ``rule`` on the rows of ``chunks`` (the chunks of one file,
    ``where``, in order) and the summary of its labelled rows.

    ``scores`` are the rule's columns, in its order. A row with a NaN or empty score is
    refused (``ValueError`` naming the first and counting them all, after the last chunk)
    unless ``dropna``, which leaves its cell NaN. The ties are drawn as one call of the rule
    on all rows draws them, so the cells do not depend on the chunk size.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain import BoundedAbstention
    >>> from abstain.app.io import Rows, TableRows
    >>> rule = BoundedAbstention(target_coverage=0.5).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    >>> chunk = TableRows({"u": np.array([0.15, 0.35])}, Rows.range(2))
    >>> apply_chunks(rule, [chunk], ["u"], dropna=False, where="new.csv").cells
    array([1., 0.])
    """
    where = str(where)
    # one stream for every chunk's ties: a generator as random_state is drawn on, not reseeded
    rule = copy.copy(rule)
    rule.random_state = np.random.default_rng(rule.random_state)
    cells: list[NDArray[np.float64]] = []
    missing = MissingRows()
    labelled = _Labelled(scores)
    dropped = 0
    notes: tuple[str, ...] | None = None
    for chunk in chunks:
        try:
            data = prepare(chunk.columns, scores=scores, dropna=dropna, need_loss=False,
                           rows=chunk.rows)
        except MissingValuesError as exc:  # the rest is read to count them all
            missing.add(exc)
            continue
        notes = data.notes if notes is None else notes
        if missing.n_rows:
            continue
        c = np.full(data.keep.size, np.nan)
        if data.keep.any():  # a chunk that --dropna emptied scores nothing
            c[data.keep] = apply_rule(rule, data)
        cells.append(c)
        dropped += data.n_dropped
        labelled.add(chunk)
    missing.refuse()
    out = np.concatenate(cells) if cells else np.zeros(0)
    return Applied(out, dropped, notes or (), labelled.lines(scores, out, where) if cells else [])
