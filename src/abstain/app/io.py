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

import csv
import difflib
import os
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._core.files import atomic_files, atomic_path, os_error, write_text
from .._core.optional import missing_extra

__all__ = [
    "ColumnError",
    "read_table",
    "write_table",
    "write_text",
    "atomic_path",
    "atomic_files",
    "table_format",
    "get_column",
    "check_not_input",
    "os_error",
    "read_chunks",
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
        raise ValueError(
            f"path must end in one of {', '.join(sorted(_FORMATS))}; got {str(path)!r}."
        )
    return _FORMATS[suffix]


def _parquet_error() -> ImportError:
    return missing_extra("Parquet files", "io")


def _number(s: str) -> float | None:
    """The cell as a float (missing cells NaN, true/false 1/0), or None for text."""
    low = s.strip().lower()
    if low in _MISSING:
        return np.nan
    if low in ("true", "false"):
        return 1.0 if low == "true" else 0.0
    try:
        return float(low)
    except ValueError:
        return None


def _column_from_strings(name: str, values: list[str], lines: list[int],
                         where: str) -> NDArray[Any]:
    """Float64 if the non-missing cells are numbers (missing cells become NaN), else str.

    A column whose cells are mostly numbers but not all is refused, naming the first
    text cell, rather than read as text (or its numbers lost).
    """
    nums = [_number(v) for v in values]
    text = [i for i, x in enumerate(nums) if x is None]
    if not text:
        return np.asarray(nums, dtype=np.float64)
    n_num = sum(1 for x in nums if x is not None and not np.isnan(x))
    if n_num >= len(text):
        i = text[0]
        raise ValueError(
            f"column {name!r} of {where!r} holds numbers but data row {i + 1} (line "
            f"{lines[i]}) has the text {values[i].strip()!r}; correct or empty that cell."
        )
    return np.asarray([v.strip() for v in values], dtype=str)


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
        ``NA``/``nan`` as NaN), other columns as str.

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
    p = Path(path)
    fmt = table_format(p)
    if not p.is_file():
        raise FileNotFoundError(f"file not found: {str(p)!r}.")
    if fmt == "csv":
        rows = _csv_rows(p)
        header = _csv_header(next(rows, None), p)
        table = _csv_columns(header, list(rows), p)
    elif fmt == "npz":
        try:
            data = np.load(p, allow_pickle=False)
        except (ValueError, zipfile.BadZipFile, OSError, EOFError):
            data = None
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError(f"{str(p)!r} is not an NPZ file (a zip of .npy arrays); write it "
                             "with numpy.savez.")
        table = {}
        with data:
            for k in data.files:
                try:
                    table[k] = np.asarray(data[k])
                except ValueError:
                    raise ValueError(
                        f"array {k!r} of {str(p)!r} holds Python objects, which are not "
                        "read (no pickle); save it as numbers or strings (e.g. "
                        "np.asarray(x, dtype=float) or dtype=str)."
                    ) from None
    else:
        try:
            import pandas as pd
        except ImportError as exc:
            raise _parquet_error() from exc
        try:
            frame = pd.read_parquet(p)
        except ImportError as exc:
            raise _parquet_error() from exc
        table = {str(k): frame[k].to_numpy() for k in frame.columns}
    return _normalise(table, str(p))


def _csv_rows(p: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each row of a CSV file, read lazily."""
    try:  # utf-8-sig: the byte-order mark of Excel's "CSV UTF-8" is not a column name
        with open(p, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            for r in reader:
                yield reader.line_num, r
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{str(p)!r} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}); save it as UTF-8 (in Excel: CSV UTF-8) and try again."
        ) from None


def _csv_header(first: tuple[int, list[str]] | None, p: Path) -> list[str]:
    if first is None or not first[1]:
        raise ValueError(f"path must be a CSV file with a header row; got an empty file "
                         f"{str(p)!r}.")
    header = [h.strip() for h in first[1]]
    for j, h in enumerate(header):
        if h in header[:j]:
            raise ValueError(
                f"column {h!r} appears twice in the header of {str(p)!r} (columns "
                f"{header.index(h) + 1} and {j + 1}); rename one of them."
            )
    return header


def _csv_columns(header: list[str], rows: list[tuple[int, list[str]]],
                 p: Path) -> dict[str, NDArray[Any]]:
    body = [(line, r) for line, r in rows if r]
    bad = [line for line, r in body if len(r) != len(header)]
    if bad:
        raise ValueError(
            f"every CSV row must have {len(header)} fields like the header; "
            f"got a different number on line {bad[0]} of {str(p)!r}."
        )
    lines = [line for line, _ in body]
    return {h: _column_from_strings(h, [r[j] for _, r in body], lines, str(p))
            for j, h in enumerate(header)}


def read_chunks(path: str | os.PathLike[str], rows: int) -> Iterator[dict[str, NDArray[Any]]]:
    """The table of a CSV or Parquet file in chunks of at most ``rows`` rows (NPZ: whole).

    Each chunk is read and checked as :func:`read_table` reads a file, with the file's own
    line numbers in the messages, so at most one chunk is in memory at a time. A column
    must be numeric in every chunk or text in every chunk.
    """
    p = Path(path)
    fmt = table_format(p)
    if not p.is_file():
        raise FileNotFoundError(f"file not found: {str(p)!r}.")
    if fmt == "npz":
        yield read_table(p)
    elif fmt == "csv":
        lines = _csv_rows(p)
        header = _csv_header(next(lines, None), p)
        chunk: list[tuple[int, list[str]]] = []
        for line, r in lines:
            if r:
                chunk.append((line, r))
            if len(chunk) >= rows:
                yield _normalise(_csv_columns(header, chunk, p), str(p))
                chunk = []
        if chunk:
            yield _normalise(_csv_columns(header, chunk, p), str(p))
    else:
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise _parquet_error() from exc
        try:
            parquet = pq.ParquetFile(p)
        except Exception as exc:  # pyarrow's errors for a file that is not Parquet
            raise ValueError(f"{str(p)!r} is not a Parquet file ({exc}); write it with "
                             "pandas.DataFrame.to_parquet or pyarrow.") from None
        for batch in parquet.iter_batches(batch_size=rows):
            frame = batch.to_pandas()
            yield _normalise({str(k): frame[k].to_numpy() for k in frame.columns}, str(p))


def _normalise(table: Mapping[str, Any], where: str) -> dict[str, NDArray[Any]]:
    out: dict[str, NDArray[Any]] = {}
    for name, values in table.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise ValueError(
                f"column {name!r} must be one-dimensional; got shape {arr.shape} in {where!r}."
            )
        if arr.dtype.kind in "biuf":
            arr = arr.astype(np.float64)
        elif arr.dtype.kind == "O":
            try:
                arr = arr.astype(np.float64)  # None -> NaN for numeric object columns
            except (TypeError, ValueError):
                arr = np.asarray(["" if v is None else str(v) for v in arr], dtype=str)
        elif arr.dtype.kind != "U":
            arr = arr.astype(str)
        out[str(name)] = arr
    lengths = {len(a) for a in out.values()}
    if len(lengths) > 1:
        raise ValueError(f"every column must have the same length; got lengths "
                         f"{sorted(lengths)} in {where!r}.")
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
    names = list(table)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close:  # also match case-insensitively
        lower = {n.lower(): n for n in names}
        close = [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n=1)]
    hint = f"; did you mean {close[0]!r}?" if close else "."
    raise ColumnError(
        f"{what} {name!r} not found{hint} The columns are: {', '.join(map(repr, names))}."
    )


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same path, a symlink to it or a hard link."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_not_input(
    output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]
) -> None:
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


def write_table(
    path: str | os.PathLike[str],
    columns: Mapping[str, Iterable[Any]],
    *,
    protect: Iterable[str | os.PathLike[str]] = (),
) -> None:
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
            import pandas as pd
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise _parquet_error() from exc
    with atomic_path(p) as tmp:
        if fmt == "csv":
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(list(table))
                cols = [[_cell(v) for v in a] for a in table.values()]
                writer.writerows(zip(*cols, strict=True))
        elif fmt == "npz":
            with open(tmp, "wb") as fh:
                np.savez(fh, **table)  # type: ignore[arg-type]
        else:
            pd.DataFrame(table).to_parquet(tmp, index=False)


def _cell(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f.is_integer() and abs(f) < 1e15:
            return str(int(f))
        return repr(f)
    return str(v)
