"""The row counts of the score tables and the parts that ``update`` has not merged yet.

A table's counts are whole numbers, each below 2**53 (exact in float64 and in a document)
and fewer than :data:`MAX_ROWS` in all (int64 sums that never wrap); ``update`` adds each
batch as a part of :class:`PendingParts` and merges them when a field is read
(:class:`LazyUpdates`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._core.schema import Field

I64 = NDArray[np.int64]


#: A table's rows in all stay below this many: the int64 sums of its counts, and of two
#: such tables, never wrap (2**63 rows came out as -2**63 and an AURC of the wrong sign).
MAX_ROWS = 2.0**62


def check_total_rows(parts: Iterable[NDArray[Any]], what: str, hint: str = "") -> None:
    """Refuse counts (whole numbers below 2**53) whose ``parts`` add up to
    :data:`MAX_ROWS` rows or more, counted exactly (a float64 total rounds 2**62 - 1 up to
    2**62, and many small parts beside a large one away)."""
    arrays = [np.asarray(p) for p in parts]
    total: float | int = sum(float(np.sum(a, dtype=np.float64)) for a in arrays)
    if total < 1.5 * MAX_ROWS:  # else far beyond, where an int64 sum could wrap
        total = sum(int(np.sum(a.astype(np.int64, copy=False))) for a in arrays)
    refuse_rows(total, what, hint)


def refuse_rows(total: float | int, what: str, hint: str = "") -> None:
    """Refuse ``total`` rows (exact, or far beyond the bound) of :data:`MAX_ROWS` or more."""
    if total >= MAX_ROWS:
        raise ValueError(f"{what} must add up to fewer than 2**62 rows; got about "
                         f"{float(total):.6g}{hint}.")


def check_grouped_counts(grouped: NDArray[Any], name: str) -> None:
    """Refuse the counts of equal values, added up, at 2**53 or more at one value (their
    float64 sums are exact below it and at least 2**53 beyond)."""
    if grouped.size and float(np.max(grouped)) >= 2.0**53:
        raise ValueError(f"{name} of equal values must add up to fewer than 2**53 rows at "
                         f"one value, as a table's totals hold them exactly; got about "
                         f"{float(np.max(grouped)):.6g}.")


def whole_counts(arr: NDArray[Any], where: str, low: int) -> I64:
    """Whole numbers >= ``low`` of a loaded array as int64: each below 2**53, and fewer
    than :data:`MAX_ROWS` in all."""
    if not (np.all(arr == np.floor(arr)) and np.all(arr >= low) and np.all(arr < 2.0**53)):
        raise ValueError(f"{where} must hold whole numbers >= {low} and below 2**53; got "
                         f"other values.")
    check_total_rows([arr], where)
    return arr.astype(np.int64)


def check_row_counts(parts: Iterable[NDArray[Any]], merged: NDArray[Any], what: str,
                     at: str = "at one score") -> None:
    """Refuse tables whose rows add up to :data:`MAX_ROWS` or more, or whose rows at one
    score (or bin, or ``at`` one loss value of the oracle's loss distribution) add up to
    2**53 or more, beyond what their float64 totals (and a document) hold exactly:
    ``parts`` the counts added up (each below 2**53), ``merged`` their sums per score
    (int64, exact below :data:`MAX_ROWS`)."""
    counts = [p for p in parts if p.size]
    check_total_rows(counts, f"the rows of {what}", "; merge fewer rows (a sample of them)")
    top = sum(float(p.max()) for p in counts)
    if top >= 2.0**53:
        top = float(np.max(merged)) if merged.size else 0.0
    if top >= 2.0**53:
        raise ValueError(f"{what} count {top:.6g} rows {at}, beyond the 2**53 that a table's "
                         f"totals hold exactly; merge fewer rows (a sample of them).")


class PendingParts:
    """The parts of a table that its ``update`` has not merged yet: a binary counter, whose
    top two parts merge while the lower one has at most twice the groups of the upper, so
    ``k`` batches of ``n`` rows in all cost O(n log k), not a merge of the whole table per
    batch (O(n^2 / batch)). ``total``: the loss total of the parts, for the overflow check."""

    def __init__(self, first: Any) -> None:
        self.parts = [first]
        self.total = float(first.loss_sums.sum())
        self.rows = int(first.counts.sum())  # exact: below MAX_ROWS

    def add(self, batch: Any) -> None:
        parts = self.parts
        parts.append(batch)
        self.total += float(batch.loss_sums.sum())
        self.rows += int(batch.counts.sum())
        while len(parts) > 1 and parts[-2].loss_sums.size <= 2 * parts[-1].loss_sums.size:
            parts[-2:] = [type(batch).merge(parts[-2], parts[-1])]

    def overflows(self, batch: Any) -> bool:
        """Whether the loss total with ``batch`` may overflow float64 when the parts merge:
        the merge adds the same losses in another order (grouped by score), whose round-off
        this running total does not share, so a total within a relative 2**-20 of the
        largest float is refused as well (it overflowed at the merge, after the batch had
        joined, and then no field of the table could be read)."""
        with np.errstate(over="ignore"):
            total = self.total + float(np.sum(batch.loss_sums))
        return not abs(total) <= np.finfo(np.float64).max * (1 - 2.0**-20)

    def check_rows(self, batch: Any) -> None:
        """Raise what :meth:`merged` would raise with ``batch`` for :data:`MAX_ROWS` rows
        or more in all, or for 2**53 rows or more at one score (or of one loss): merged to
        see only where the largest counts of the parts, added up, reach it (tables of some
        4.5e15 rows)."""
        refuse_rows(self.rows + int(batch.counts.sum()), "the rows of the table with this batch",
                    "; add fewer rows (a sample of them)")
        for field in ("counts", "loss_counts"):
            parts = [getattr(t, field, None) for t in (*self.parts, batch)]
            if sum(float(p.max()) for p in parts if p is not None and p.size) >= 2.0**53:
                type(batch).merge(*self.parts, batch)
                return

    def merged(self) -> Any:
        return self.parts[0] if len(self.parts) == 1 else type(self.parts[0]).merge(*self.parts)


class LazyUpdates:
    """``update`` of a mergeable table that adds each batch as a part of
    :class:`PendingParts` and merges the parts when a field (``_FIELDS``) is read: the
    fields leave the instance's ``__dict__`` while parts are pending, and
    :meth:`__getattr__` puts the merged fields back. A class defines ``_refuse_join(pending,
    batch)``, which raises at once what its ``merge`` would raise later."""

    _FIELDS: dict[str, Field]

    def _add_part(self, make_batch: Any) -> None:
        """Add the table ``make_batch()`` (built, and so checked, before it joins)."""
        pending = self.__dict__.pop("_pending", None)
        if pending is None:  # the table as it is becomes the first part
            first = type(self).__new__(type(self))
            first.__dict__.update({k: self.__dict__.pop(k) for k in self._FIELDS})
            pending = PendingParts(first)
        try:
            batch = make_batch()
            self._refuse_join(pending, batch)  # type: ignore[attr-defined]
            pending.add(batch)
        finally:
            self.__dict__["_pending"] = pending

    def _settle(self) -> None:
        """Merge the pending parts into the fields (nothing where none are pending)."""
        pending = self.__dict__.pop("_pending", None)
        if pending is not None:
            merged = pending.merged()
            self.__dict__.update({k: merged.__dict__[k] for k in self._FIELDS})

    def __getattr__(self, name: str) -> Any:
        # reached only for an attribute not set: a field while parts are pending
        if "_pending" not in self.__dict__ or name not in type(self)._FIELDS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._settle()
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self)._FIELDS:  # a field set while parts are pending: merged first,
            self._settle()              # so that the merge does not overwrite it later
        object.__setattr__(self, name, value)

    def __copy__(self) -> Any:
        # a shallow copy shares no pending parts, which either table's update would change
        self._settle()
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out
