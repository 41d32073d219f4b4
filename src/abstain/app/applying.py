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
from .io import ColumnError, TableRows, type_columns
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
    """The totals of the summary, chunk by chunk, as a read of the whole file gives them,
    or the reason there is none:

    * each chunk's columns get the kinds of the whole file (``type_columns`` with the first
      non-missing cell of each column carried across the chunks); chunks whose text column
      holds only missing cells, some of them such as ``NA`` (a class name among text
      labels, missing among numbers), wait with the summary's columns alone until a later
      chunk tells the column's kind;
    * a column that a chunk refuses to type (numbers, then text) is the reason, before a
      reason of ``prepare`` from an earlier chunk, as a whole file is typed before it is
      prepared; still, a reason is the first the chunks meet, and may name another column,
      check or line than the whole file's;
    * the losses of the accepted ID rows are kept (8 bytes a row) for one mean over the
      file.
    """

    def __init__(self, scores: list[str], where: str) -> None:
        self.scores, self.where = scores, where
        self.n_id = self.n_ood = self.k_ood = 0
        self.losses: list[NDArray[np.float64]] = []
        self.ood_seen = False
        self.reason: str | None = None  # from prepare: a typing error later still wins
        self.typing: str | None = None
        self.kinds: dict[str, Any] = {}  # of every chunk added, in the file's order
        self.unknown: set[str] = set()  # columns whose NA cells wait for their kind
        self.waiting: list[tuple[TableRows, NDArray[np.float64]]] = []

    def add(self, chunk: TableRows, cells: NDArray[np.float64]) -> None:
        if self.typing is not None:
            return
        # only the columns the summary reads wait (a few bytes a row)
        keep = {*self.scores, *SUMMARY_COLUMNS}
        chunk = TableRows({k: v for k, v in chunk.columns.items() if k in keep}, chunk.rows)
        try:
            read = type_columns(chunk, SUMMARY_COLUMNS, self.where, self.kinds)
        except ValueError as exc:
            self.typing = f"(no coverage or risk to report: {exc})"
            return
        for k in SUMMARY_COLUMNS:  # cells such as NA: text or missing, by the kind
            col = chunk.columns.get(k)
            if (col is not None and col.dtype.kind == "U" and k not in self.kinds
                    and bool(np.any(np.char.strip(col) != ""))):
                self.unknown.add(k)
        if self.unknown - self.kinds.keys():
            self.waiting.append((chunk, cells))
            return
        self.finish()
        if self.reason is None:
            self._prepared(read, cells)

    def finish(self) -> None:
        """Type again and add up the chunks waiting (all of them after the last chunk),
        with the kinds that the chunks since have told: their other columns were typed as
        they came, and the cells that waited are missing or text, which no kind refuses."""
        waiting, self.waiting = self.waiting, []
        self.unknown.clear()
        for chunk, cells in waiting:
            if self.reason is None:
                self._prepared(type_columns(chunk, SUMMARY_COLUMNS, self.where, self.kinds),
                               cells)

    def _prepared(self, read: TableRows, cells: NDArray[np.float64]) -> None:
        try:
            data = prepare(read.columns, scores=self.scores, dropna=True, rows=read.rows)
        except ColumnError:
            self.reason = ("(no loss, or label and prediction, columns: no coverage or risk "
                           "to report)")
            return
        except ValueError as exc:
            self.reason = f"(no coverage or risk to report: {exc})"
            return
        kept = cells[data.keep] == 1.0
        ood = data.is_ood
        id_rows = ~ood if ood is not None else np.ones(kept.size, dtype=bool)
        self.n_id += int(id_rows.sum())
        self.losses.append(data.losses[id_rows][kept[id_rows]])
        if ood is not None:
            self.ood_seen = True
            self.n_ood += int(ood.sum())
            self.k_ood += int(kept[ood].sum())

    def lines(self) -> list[str]:
        self.finish()
        if self.typing is not None or self.reason is not None:
            return [self.typing or self.reason or ""]
        out = []
        if self.n_id:
            losses = np.concatenate(self.losses)
            k = losses.size
            risk = float(losses.mean()) if k else float("nan")
            out.append(f"ID rows: coverage {k / self.n_id:.4f} ({k} of {self.n_id} labelled "
                       f"rows), selective risk {risk:.4f}")
        if self.ood_seen and self.n_ood:
            out.append(f"OOD rows: {self.k_ood} of {self.n_ood} accepted "
                       f"({self.k_ood / self.n_ood:.2%})")
        return out


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
    labelled = _Labelled(scores, where)
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
        labelled.add(chunk, c)
    missing.refuse()
    out = np.concatenate(cells) if cells else np.zeros(0)
    return Applied(out, dropped, notes or (), labelled.lines())
