"""Read and write tables of per-sample columns: CSV, NPZ and Parquet.

A table is a ``dict`` from column name to a 1-D NumPy array, all of one length.
Numeric columns are float64 (an empty CSV cell is NaN); other columns are
strings. CSV and NPZ need only NumPy; Parquet needs the ``io`` extra (pandas and
pyarrow). :func:`write_table` and :func:`write_text` write through
:func:`atomic_path`: a temporary file in the target folder is renamed over the target
only once it is complete, so a failed write never leaves a half-written file; a FIFO or
a device (``/dev/stdout``) is written in place once the content is complete.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import errno
import functools
import itertools
import math
import os
import re
import stat
import unicodedata
import zipfile
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._core.files import (
    atomic_files,
    atomic_path,
    atomic_path_and_files,
    os_error,
    save_npz,
    standard_stream,
    write_text,
    writes_in_place,
)
from .csv_records import (
    Record,
    copy_with_column,
    csv_body,
    csv_header,
    csv_records,
)
from .parquet_files import (
    arrow_frame,
    check_plain_columns,
    check_rows,
    open_parquet,
    parquet_error,
    parquet_file,
    parquet_frame,
    parquet_with_column,
    with_index_columns,
    write_parquet,
)

__all__ = [
    "ColumnError", "Rows", "TableRows", "read_table", "read_table_rows", "type_columns",
    "write_table", "write_text", "atomic_path", "atomic_files", "atomic_path_and_files",
    "table_format", "get_column", "check_not_input", "os_error", "standard_stream",
    "read_chunks", "input_file",
]

_FORMATS = {".csv": "csv", ".npz": "npz", ".parquet": "parquet", ".pq": "parquet"}
_MISSING = {"", "na", "nan", "null", "none"}


class ColumnError(KeyError):
    """A column that the table does not have; the message suggests the closest name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def table_format(path: str | os.PathLike[str]) -> str:
    """The format of a table file from its extension: ``"csv"``, ``"npz"`` or ``"parquet"``."""
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        if Path(path).name.lower() in _FORMATS:  # ".csv" is a hidden file without a suffix
            raise ValueError(f"path must name a file before its extension; got "
                             f"{str(path)!r} (write e.g. 'out{Path(path).name}').")
        raise ValueError(f"path must end in one of {', '.join(sorted(_FORMATS))}; got "
                         f"{str(path)!r}.")
    return _FORMATS[suffix]


def input_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path`` when it names a file to read; else ``FileNotFoundError``
    where nothing is there and an ``OSError`` that names it, the reason and what to do
    otherwise (a loop of symbolic links, a folder, a pipe or device).

    Examples
    --------
    >>> from abstain.app.io import input_file
    >>> input_file("no_such_file.csv")
    Traceback (most recent call last):
    ...
    FileNotFoundError: file not found: 'no_such_file.csv'.
    """
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"file not found: {str(p)!r}.") from None
    except OSError as exc:
        raise os_error(p, exc, "read") from None
    if stat.S_ISDIR(mode):
        raise os_error(p, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)), "read")
    if not stat.S_ISREG(mode):
        raise OSError(f"cannot read {str(p)!r}: it is not a regular file (a pipe, socket or "
                      "device), and inputs are read from files only; save it to a file first.")
    return p


# A number as a CSV cell writes it: digits with an optional point and exponent, or inf.
# Python's float() also takes "1_000", "١٢" and surrounding words such as "infinity"; a cell
# the pattern refuses is text.
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity)")
# Control characters that no text CSV holds: the file is binary (or not a table at all).


class Rows(NamedTuple):
    """Where the rows of a table lie in its file, for messages.

    Attributes
    ----------
    unit : str
        ``"line"`` for a CSV file (the header is line 1, a row's line is the line it
        starts on), ``"row index"`` for Parquet, NPZ and arrays (from 0).
    numbers : ndarray of int64, shape (n,)
        The line or index of each row, in the whole file (also when read in chunks).
    whole : bool
        False for a chunk of a file that holds other rows too.
    """

    unit: str
    numbers: NDArray[np.int64]
    whole: bool = True

    def such(self, n: int) -> str:
        """``n`` rows as a message counts them: ``"1 such row(s) in lines 2 to 9"`` in a chunk."""
        span = f" in {self.unit}s {self.numbers[0]} to {self.numbers[-1]}" if not self.whole else ""
        return f"{n} such row(s){span}"

    @classmethod
    def range(cls, n: int, start: int = 0) -> Rows:
        """Rows ``start`` to ``start + n - 1`` of an array or a Parquet/NPZ file."""
        return cls("row index", np.arange(start, start + n, dtype=np.int64))

    def name(self, i: int) -> str:
        """The ``i``-th row (from 0) as a message names it: ``"line 7"``, ``"row index 5"``."""
        return f"{self.unit} {int(self.numbers[i])}"


class TableRows(NamedTuple):
    """A table read from a file, with where each row lies in it.

    Attributes
    ----------
    columns : dict of str to ndarray of shape (n,)
        As :func:`read_table` returns them.
    rows : Rows
        The line (CSV) or row index (Parquet, NPZ) of each row.
    """

    columns: dict[str, NDArray[Any]]
    rows: Rows


def _number(s: str) -> float | None:
    """The cell as a float (missing cells NaN, true/false 1/0), or None for text."""
    low = s.strip().lower()
    if low in _MISSING:
        return np.nan
    if low in ("true", "false"):
        return 1.0 if low == "true" else 0.0
    try:
        x = float(low)
    except ValueError:
        return None
    # float() also takes "1_000", other scripts' digits and "infinity"; the pattern does not
    if ("_" in low or not low.isascii() or not low[-1:].isdigit()) and (
            _NUMBER.fullmatch(low) is None):
        return None
    return x


def text_among_numbers(col: NDArray[Any]) -> int | None:
    """For a column read as text (its first cell text): the row of that first text cell
    when another cell is a number (a number column with a stray text cell first, such as
    ``n/a``), else None."""
    if col.dtype.kind != "U":
        return None
    first, number = None, False
    for i, cell in enumerate(col.tolist()):
        x = _number(cell)
        if x is None:
            first = i if first is None else first
        elif not np.isnan(x):
            number = True
        if number and first is not None:
            return first
    return None


_NOT_PLAIN = re.compile(r"[^0-9eE.+\- \t]")


def _plain_numbers(values: list[str]) -> NDArray[np.float64] | None:
    """The cells as float64 when every one is a number written with digits, sign, point and
    exponent only (the common case, converted at once), else None."""
    if not values or _NOT_PLAIN.search("".join(values)) is not None:
        return None
    try:
        return np.array(values, dtype=np.float64)
    except ValueError:
        return None


class _Kind(NamedTuple):
    """The first non-missing cell of a column: whether it is a number, its line, its text."""

    number: bool
    line: int
    cell: str


def _column_from_strings(name: str, values: list[str], lines: NDArray[np.int64], where: str,
                         kinds: dict[str, _Kind] | None = None) -> NDArray[Any]:
    """The cells of a CSV column by the kind of its first non-missing cell: float64 when it
    is a number (missing cells NaN), str when it is text (numbers in it are text too).

    A column of numbers with a text cell is refused, naming both cells. ``kinds`` carries
    the first cell from the earlier chunks of a file, so a file read in chunks of any size
    gets the kinds, and is accepted or refused, as it is read whole.
    """
    first = None if kinds is None else kinds.get(name)
    fast = _plain_numbers(values)
    if fast is not None:  # every cell a number as written: no cell to check one by one
        if first is None and values:
            first = _Kind(True, int(lines[0]), values[0].strip())
            if kinds is not None:
                kinds[name] = first
        if first is None or first.number:
            return fast
        return np.asarray([v.strip() for v in values], dtype=str)
    nums = [_number(v) for v in values]
    if first is None:
        i = next((i for i, x in enumerate(nums) if x is None or not np.isnan(x)), None)
        if i is None:
            return np.asarray(nums, dtype=np.float64)
        first = _Kind(nums[i] is not None, int(lines[i]), values[i].strip())
        if kinds is not None:
            kinds[name] = first
    if not first.number:
        return np.asarray([v.strip() for v in values], dtype=str)
    j = next((j for j, x in enumerate(nums) if x is None), None)
    if j is not None:
        raise ValueError(f"column {name!r} of {where!r} holds numbers (line {first.line}: "
                         f"{first.cell!r}) but line {lines[j]} has the text "
                         f"{values[j].strip()!r}; correct or empty that cell.")
    return np.asarray(nums, dtype=np.float64)


def read_table(path: str | os.PathLike[str]) -> dict[str, NDArray[Any]]:
    """Read a CSV (header row, comma-separated), NPZ or Parquet file into columns.

    Parameters
    ----------
    path : str or path-like
        The file; its extension (``.csv``, ``.npz``, ``.parquet``) gives the format.

    Returns
    -------
    dict of str to ndarray of shape (n,)
        Numeric columns as float64 (``true``/``false`` read as 1/0, empty cells and
        ``NA``/``nan`` as NaN), other columns as str. A CSV column holds numbers only or
        text only (a cell of the other kind is refused, naming its line); a number is
        written with digits, an optional point and exponent (``1_000`` is text). A blank
        line between data rows is a row whose cells are all empty; blank lines after the
        last row are not rows.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        When the file is not a table of equal-length 1-D columns.
    ImportError
        For Parquet without the ``io`` extra.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from abstain.app.io import read_table, write_table
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> write_table(path, {"loss": [0.0, 1.0], "label": ["cat", "dog"]})
    >>> read_table(path)
    {'loss': array([0., 1.]), 'label': array(['cat', 'dog'], dtype='<U3')}
    """
    return read_table_rows(path).columns


def read_table_rows(path: str | os.PathLike[str],
                    columns: Collection[str] | None = None) -> TableRows:
    """:func:`read_table`, with the line (CSV) or row index of each row for messages.

    ``columns``: read only these columns of a CSV file as numbers or text (and check
    them); the others are the text of their cells as written (default: read every column).
    """
    fmt = table_format(path)
    p = input_file(path)
    if fmt == "csv":
        records = csv_records(p)
        header = csv_header(next(records, None), p)
        body = list(csv_body(records, len(header)))
        table, lines = _csv_columns(header, body, p, typed=columns)
        return TableRows(_normalise(table, str(p)), Rows("line", lines))
    if fmt == "npz":  # arrays of other shapes (embeddings) are no columns: they pass through
        arrays = _npz_arrays(p)
        table = {k: v for k, v in arrays.items() if v.ndim == 1} or arrays
    else:
        frame = open_parquet(p, parquet_frame)
        table = {str(k): frame[k].to_numpy() for k in frame.columns}
    columns = _normalise(table, str(p))
    n = len(next(iter(columns.values()))) if columns else 0
    return TableRows(columns, Rows.range(n))


def type_columns(read: TableRows, names: Collection[str], where: str,
                 kinds: dict[str, Any] | None = None) -> TableRows:
    """``read`` with its columns ``names`` that :func:`read_table_rows` left as written
    (not in its ``columns``) read as numbers or text, as ``read_table_rows`` reads a column.
    ``kinds`` (a dict kept across the chunks of one file, empty at first) carries each
    column's first non-missing cell, so that chunks get the kinds of the whole file.

    Raises
    ------
    ValueError
        A column of numbers with a text cell, naming the column, ``where`` and both lines.
    """
    columns = dict(read.columns)
    for name in names:
        col = columns.get(name)
        if col is not None and col.dtype.kind == "U":
            columns[name] = _column_from_strings(name, col.tolist(), read.rows.numbers, where,
                                                 kinds)
    return TableRows(columns, read.rows)


def _npz_arrays(p: Path) -> dict[str, NDArray[Any]]:
    """The arrays of an NPZ file as saved (no pickle)."""
    try:
        data = np.load(p, allow_pickle=False)
    except (ValueError, zipfile.BadZipFile, OSError, EOFError):
        data = None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{str(p)!r} is not an NPZ file (a zip of .npy arrays); write it "
                         "with numpy.savez.")
    table = {}
    with data:
        twice = next((k for i, k in enumerate(data.files) if k in data.files[:i]), None)
        if twice is not None:  # the zip holds two members of one name: which one is read?
            raise ValueError(f"{str(p)!r} holds two arrays named {twice!r}; write the file "
                             "again with numpy.savez (one array per name).")
        for k in data.files:
            try:
                value = data[k]
            except ValueError:
                raise ValueError(f"array {k!r} of {str(p)!r} holds Python objects, which are not "
                                 "read (no pickle); save it as numbers or strings (e.g. "
                                 "np.asarray(x, dtype=float) or dtype=str).") from None
            if isinstance(value, bytes):  # a member of the zip that is not a .npy array
                raise ValueError(f"{str(p)!r} holds {k!r}, which is not a .npy array; write "
                                 "the file with numpy.savez (arrays only).")
            table[k] = np.asarray(value)
    return table


def _csv_columns(header: list[str], body: list[Record], p: Path,
                 kinds: dict[str, _Kind] | None = None, typed: Collection[str] | None = None,
                 ) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64]]:
    bad = [r.line for r in body if len(r.cells) != len(header)]
    if bad:
        raise ValueError(f"every CSV row must have {len(header)} fields like the header; got "
                         f"a different number on line {bad[0]} of {str(p)!r}.")
    lines = np.fromiter((r.line for r in body), dtype=np.int64, count=len(body))
    columns = {h: _column_from_strings(h, [r.cells[j] for r in body], lines, str(p), kinds)
               if typed is None or h in typed else
               np.asarray([r.cells[j] for r in body], dtype=str)
               for j, h in enumerate(header)}
    return columns, lines


def _kinds_further(p: Path, header: list[str], kinds: dict[str, _Kind],
                   typed: Collection[str] | None, rows: int) -> bool:
    """Whether ``kinds`` gained the kind of a column whose cells are all missing in the first
    chunk (``NA`` as a class name among text labels), read on in ``rows`` records at a time
    only while such a column is left; that chunk is then read as the whole file is."""
    todo = [j for j, h in enumerate(header) if (typed is None or h in typed) and h not in kinds]
    found, body = False, itertools.islice(csv_body(csv_records(p), len(header)), 1, None)
    while todo and (block := list(itertools.islice(body, rows))):
        if any(len(r.cells) != len(header) for r in block):
            break  # refused as its chunk is read
        lines = np.fromiter((r.line for r in block), dtype=np.int64, count=len(block))
        for j in todo:  # an error is the chunk read's to give, in the file's order
            with contextlib.suppress(ValueError):
                _column_from_strings(header[j], [r.cells[j] for r in block], lines, str(p),
                                     kinds)
        found |= any(header[j] in kinds for j in todo)
        todo = [j for j in todo if header[j] not in kinds]
    return found


def read_chunks(path: str | os.PathLike[str], rows: int,
                columns: Collection[str] | None = None) -> Iterator[TableRows]:
    """The table of a CSV or Parquet file in chunks of at most ``rows`` rows (NPZ: whole).

    Each chunk is read and checked as :func:`read_table` reads a file, with the rows'
    places in the whole file (:class:`Rows`), so at most one chunk is in memory at a time.
    A file is accepted or refused whatever the chunk size: a CSV column's kind (numbers or
    text) is that of its first non-missing cell in the file. ``columns``: as for
    :func:`read_table_rows`.
    """
    fmt = table_format(path)
    p = input_file(path)
    if fmt == "npz":
        read = read_table_rows(p, columns)
        if not read.columns:
            raise ValueError(f"{str(p)!r} has no columns; write one column per score, loss and "
                             "label.")
        if len(next(iter(read.columns.values()))):  # no rows: no chunk, as a CSV header alone
            yield read
    elif fmt == "csv":
        records = csv_records(p)
        header = csv_header(next(records, None), p)
        kinds: dict[str, _Kind] = {}
        chunk: list[Record] = []
        body = csv_body(records, len(header))
        ahead, first = next(body, None), True  # a record ahead: is a chunk the last?
        while ahead is not None:
            chunk.append(ahead)
            ahead = next(body, None)
            if len(chunk) >= rows or ahead is None:
                table, lines = _csv_columns(header, chunk, p, kinds, columns)
                if first and ahead is not None and _kinds_further(p, header, kinds, columns, rows):
                    table, lines = _csv_columns(header, chunk, p, kinds, columns)
                whole, chunk, first = first and ahead is None, [], False
                yield TableRows(_normalise(table, str(p)), Rows("line", lines, whole))
    else:
        parquet = open_parquet(p, parquet_file)
        seen, total = 0, parquet.metadata.num_rows
        for batch in parquet.iter_batches(batch_size=rows):
            frame = with_index_columns(arrow_frame(batch), parquet.schema_arrow)
            table = _normalise({str(k): frame[k].to_numpy() for k in frame.columns}, str(p))
            yield TableRows(table, Rows.range(len(frame), seen)._replace(
                whole=len(frame) == total))
            seen += len(frame)


def _is_missing_object(v: Any) -> bool:
    """None, NaN and pandas' NA (the missing cells of an object column)."""
    if v is None or type(v).__name__ == "NAType":
        return True
    return isinstance(v, (float, np.floating)) and bool(np.isnan(v))


def _object_column(name: str, arr: NDArray[Any], where: str) -> NDArray[Any]:
    """An object column (Parquet strings, nullable numbers) as float64 or str, decided by
    the kind of its values, never by whether text parses as a number: every chunk of a file
    gets the kind that the whole file gets."""
    present = [v for v in arr if not _is_missing_object(v)]
    numbers = [isinstance(v, (int, float, np.integer, np.floating)) for v in present]
    if all(numbers):
        return np.asarray([np.nan if _is_missing_object(v) else float(v) for v in arr],
                          dtype=np.float64)
    if any(numbers):
        raise ValueError(f"column {name!r} of {where!r} mixes numbers and text; write it as "
                         "one type.")
    return np.asarray(["" if _is_missing_object(v) else str(v) for v in arr], dtype=str)


def _normalise(table: Mapping[str, Any], where: str) -> dict[str, NDArray[Any]]:
    out: dict[str, NDArray[Any]] = {}
    for name, values in table.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise ValueError(f"column {name!r} must be one-dimensional; got shape {arr.shape} "
                             f"in {where!r}.")
        if beyond_float(arr).any():
            pass  # integers kept as written: prepare refuses them as a score or loss
        elif arr.dtype.kind in "biuf":
            arr = arr.astype(np.float64)
        elif arr.dtype.kind == "O":
            arr = _object_column(str(name), arr, where)
        elif arr.dtype.kind == "V":  # fields of a record, or raw bytes: no one value per row
            raise ValueError(f"array {str(name)!r} of {where!r} has the dtype {arr.dtype} "
                             "(fields or raw bytes), which is not a column; save each field as "
                             "an array of its own.")
        elif arr.dtype.kind == "S":  # bytes: text where they decode (a column not used is
            arr = _bytes_text(arr)      # read as text, never refused)
        elif arr.dtype.kind != "U":
            arr = arr.astype(str)
        out[str(name)] = arr
    lengths = {len(a) for a in out.values()}
    if len(lengths) > 1:
        raise ValueError(f"every column must have the same length; got lengths "
                         f"{sorted(lengths)} in {where!r}.")
    return out


def _bytes_text(arr: NDArray[Any]) -> NDArray[Any]:
    """An array of bytes as text: UTF-8 where every entry decodes so, else Latin-1 (every
    byte a character: nothing refused, nothing lost)."""
    try:
        return np.char.decode(arr, "utf-8")
    except UnicodeDecodeError:
        return np.char.decode(arr, "latin-1")


def beyond_float(arr: NDArray[Any]) -> NDArray[np.bool_]:
    """Where an integer column holds values that float64 cannot hold exactly (all False for
    other dtypes; for an object column, its Python integers: a Parquet integer column with
    nulls). Such a column is kept as written by the readers: ``prepare`` refuses it as a
    score or loss, and it passes through. As the library's own check (``_core.validation``,
    which the command line does not import), a float is cast back only where it fits the
    dtype: that cast differs between CPUs."""
    out = np.zeros(arr.shape, dtype=bool)
    if arr.dtype.kind == "O":
        return np.fromiter((isinstance(v, int) and not isinstance(v, bool)
                            and abs(v) > 2**53 and int(float(v)) != v for v in arr.tolist()),
                           dtype=bool, count=arr.size)
    if arr.dtype.kind not in "iu":
        return out
    big = (arr > 2**53) | (arr < -(2**53)) if arr.dtype.kind == "i" else arr > 2**53
    f = arr[big].astype(np.float64)
    fits = f < (2.0**63 if arr.dtype.kind == "i" else 2.0**64)  # else it rounded past
    same = np.zeros(f.shape, dtype=bool)
    same[fits] = f[fits].astype(arr.dtype) == arr[big][fits]
    out[big] = ~same
    return out


def get_column(table: Mapping[str, NDArray[Any]], name: str, what: str = "column") -> NDArray[Any]:
    """``table[name]``, or a :class:`ColumnError` that names the closest existing column.

    Examples
    --------
    >>> from abstain.app.io import get_column
    >>> get_column({"uncertainty": [0.1]}, "uncertainity")
    Traceback (most recent call last):
    ...
    abstain.app.io.ColumnError: column 'uncertainity' not found; did you mean 'uncertainty'? ...
    """
    if name in table:
        return table[name]
    names, nfc = list(table), functools.partial(unicodedata.normalize, "NFC")
    same = [n for n in names if nfc(n) == nfc(name)]  # other code points (a header from macOS)
    close = same or difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close:  # also match case-insensitively
        lower = {n.lower(): n for n in names}
        close = [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n=1)]
    hint = (f"; the file has {ascii(same[0])}, the same letters in other Unicode code points "
            f"than {ascii(name)}: write the name as the file does." if same else
            f"; did you mean {close[0]!r}?" if close else ".")
    raise ColumnError(f"{what} {name!r} not found{hint} The columns are: "
                      f"{', '.join(map(repr, names))}.")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same path, a symlink to it or a hard link.
    A path that is a loop of symbolic links names no file (reading or writing it then
    fails with its own message)."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except (OSError, RuntimeError):  # Python 3.11's resolve() raises RuntimeError on a loop
        return False


def check_not_input(output: str | os.PathLike[str],
                    inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise ``ValueError`` when ``output`` is one of ``inputs``.

    The same path, a symbolic link to an input (or from one) and a hard link of an
    input all count as the input: writing there would destroy it.

    Examples
    --------
    >>> from abstain.app.io import check_not_input
    >>> check_not_input("p.csv", ["./p.csv"])
    Traceback (most recent call last):
    ...
    ValueError: output 'p.csv' is the input file './p.csv' (the same file or a link to it); ...
    """
    out = Path(output)
    for q in inputs:
        if _same_file(out, Path(q)):
            raise ValueError(f"output {str(out)!r} is the input file {str(q)!r} (the same file "
                             "or a link to it); write the output to another path.")


def _to_frame_dict(columns: Mapping[str, Any]) -> dict[str, NDArray[Any]]:
    return _normalise({k: np.asarray(v) for k, v in columns.items()}, "columns")


def write_table(path: str | os.PathLike[str], columns: Mapping[str, Iterable[Any]], *,
                protect: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Write columns to a CSV, NPZ or Parquet file, through :func:`atomic_path`.

    The table goes to a temporary file in the target's folder, which is renamed
    to ``path`` only when complete: an error leaves any existing ``path`` as it was
    and no partial file behind. A FIFO or a device (``/dev/stdout``) gets the table
    written in place once it is complete.

    Parameters
    ----------
    path : str or path-like
        Target; the extension gives the format.
    columns : mapping of str to array-like of shape (n,)
    protect : iterable of paths
        Files that must not be overwritten (the input of a command): writing to
        one of them raises ``ValueError``.
    """
    if os.fspath(path) == "":  # Path("") would be the current folder
        raise ValueError("path must name a file to write; got ''.")
    p = Path(path)
    fmt = table_format(p)
    check_not_input(p, protect)
    table = _to_frame_dict(columns)
    if fmt == "parquet":
        try:
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise parquet_error() from exc
    with atomic_path(p) as tmp:
        _write_columns(tmp, fmt, table)


def _write_columns(path: str, fmt: str, columns: Mapping[str, NDArray[Any]],
                   nulls: Collection[str] = ()) -> None:
    """Write ``columns`` to ``path`` (a temporary of :func:`atomic_path`) in ``fmt``
    (Parquet: NaN of the columns ``nulls`` as nulls)."""
    if fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(list(columns))
            cols = [[_cell(v) for v in a] for a in columns.values()]
            writer.writerows(zip(*cols, strict=True))
    elif fmt == "npz":
        save_npz(path, columns)
    else:
        write_parquet(path, columns, nulls)


def _cell(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f.is_integer() and abs(f) < 1e15 and not (f == 0.0 and math.copysign(1.0, f) < 0):
            return str(int(f))  # -0.0 keeps its sign below
        # float32 and float16 in their own shortest digits (0.1, not 0.10000000149011612)
        return str(v) if isinstance(v, np.floating) and v.dtype.itemsize < 8 else repr(f)
    if isinstance(v, bytes):  # an NPZ array of bytes: its text, not Python's b'...'
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"a bytes cell ({v!r}) is not UTF-8 text, so it has no CSV cell; "
                             "save the array as strings (dtype=str) or write NPZ.") from None
    return str(v)


def write_with_column(
    source: str | os.PathLike[str],
    path: str | os.PathLike[str],
    name: str,
    values: NDArray[np.float64],
    *,
    protect: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write the table of ``source`` to ``path`` with the column ``name`` added (or
    replaced, in its place), atomically; every other column as the source holds it.

    A CSV source is copied record by record as written: its cells, quoting, line endings,
    byte-order mark and blank lines after the last row are kept byte for byte and the new
    cell is appended to each record (a blank line between rows gets empty cells). To
    Parquet or NPZ, the CSV's columns go as the text written in the cells. A Parquet
    source written to Parquet keeps every column's Arrow type and nulls and the file's
    metadata (to CSV, integers with nulls stay integers); an NPZ source keeps its arrays.

    Parameters
    ----------
    source : str or path-like
        The table read (CSV, Parquet or NPZ), read again here.
    path : str or path-like
        Target; the extension gives the format (standard output, a FIFO or a device
        without one gets the format of ``source``).
    name : str
        The new column.
    values : ndarray of shape (n,)
        Its values, one per row of ``source``: numbers, NaN for an empty cell (written
        ``1``, ``0`` and an empty cell in CSV).
    protect : iterable of paths
        Files that must not be overwritten: ``source`` and the other inputs.
    """
    src, out = Path(source), Path(path)
    check_not_input(out, [src, *protect])
    values = np.asarray(values, dtype=np.float64)
    src_fmt = table_format(src)
    # standard output, a FIFO or a device without a table extension gets the input's format
    streamed = out.suffix.lower() not in _FORMATS and writes_in_place(out)
    fmt = src_fmt if streamed else table_format(out)
    if src_fmt == "csv" and fmt == "csv":
        copy_with_column(src, out, name, [_accept_cell(v) for v in values])
        return
    if src_fmt == "csv":
        records = csv_records(src)
        header = csv_header(next(records, None), src)
        body = list(csv_body(records, len(header)))
        check_rows(src, len(body), values)
        columns: dict[str, Any] = {h: np.asarray([r.cells[j] for r in body], dtype=str)
                                   for j, h in enumerate(header)}
    elif src_fmt == "npz":
        columns = _npz_arrays(src)
        flat = [a for a in columns.values() if a.ndim == 1]
        check_rows(src, len(flat[0]) if flat else 0, values)
        other = next((k for k, a in columns.items() if a.ndim != 1), None)
        if other is not None and fmt != "npz":
            raise ValueError(f"{str(src)!r}: array {other!r} has shape {columns[other].shape}, "
                             f"which a {fmt.upper()} output cannot hold as a column; write the "
                             f"output as NPZ (.npz), which keeps it.")
    elif fmt == "parquet":
        parquet_with_column(src, out, name, values)
        return
    else:
        # nullable dtypes: an integer column with empty cells stays integers in CSV, and
        # is refused in NPZ rather than written as floats
        frame = open_parquet(src, lambda p: parquet_frame(p, nullable=True))
        check_plain_columns(src, fmt)  # a file pyarrow has read
        check_rows(src, len(frame), values)
        # in CSV the new column's cells are written as from a CSV source (1, 0, empty)
        frame[name] = [_accept_cell(v) for v in values] if fmt == "csv" else values
        arrays = None if fmt == "csv" else {str(k): _npz_column(frame[k], str(k), src)
                                            for k in frame.columns}
        with atomic_path(out) as tmp:
            if arrays is None:
                frame.to_csv(tmp, index=False, lineterminator="\n")
            else:
                save_npz(tmp, arrays)
        return
    columns[name] = values
    with atomic_path(out) as tmp:  # a row left out: an empty accept cell, null in Parquet
        _write_columns(tmp, fmt, columns, nulls=(name,))


def _npz_column(col: Any, name: str, src: Path) -> NDArray[Any]:
    """A column of a Parquet frame (pandas' nullable dtypes) as an NPZ array: integers and
    booleans as such, refused where they hold nulls (a float or a text cell would change
    them); floats with NaN for nulls; text as text."""
    kind = getattr(col.dtype, "numpy_dtype", None)
    if kind is not None and kind.kind in "iub":
        nulls = int(col.isna().sum())
        if nulls:
            raise ValueError(f"{str(src)!r}: column {name!r} holds {nulls} null(s) among its "
                             f"{col.dtype} values, which an NPZ array cannot hold without "
                             f"changing them; write the output as CSV or Parquet.")
        return col.to_numpy(dtype=kind)
    if kind is not None and kind.kind == "f":
        return col.to_numpy(dtype=kind, na_value=np.nan)
    return _plain(col.to_numpy())


def _plain(arr: NDArray[Any]) -> NDArray[Any]:
    """An array that ``np.savez`` writes without pickle (an object column as text)."""
    if arr.dtype.kind != "O":
        return arr
    return np.asarray(["" if _is_missing_object(v) else str(v) for v in arr], dtype=str)


def _accept_cell(v: float) -> str:
    return "" if np.isnan(v) else _cell(v)
