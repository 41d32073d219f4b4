"""Parquet files for the command line: opened with the ``io`` extra's errors named, read
whole or in batches with a stored pandas index back among the columns, and written with a
column added while every other column keeps its Arrow type, nulls and the file's metadata."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sized
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from .._core.files import atomic_path
from .._core.optional import missing_extra

_T = TypeVar("_T")


def parquet_error() -> ImportError:
    return missing_extra("Parquet files", "io")


def open_parquet(p: Path, read: Callable[[Path], _T]) -> _T:
    """``read(p)``, with the two errors of a Parquet file that cannot be read.

    ``read`` imports pandas or pyarrow itself: its ``ImportError`` is the missing extra
    ``io``; any other error means that the file is not Parquet.
    """
    try:
        return read(p)
    except ImportError as exc:
        raise parquet_error() from exc
    except DuplicateColumn:
        raise
    except Exception as exc:  # pyarrow's errors for a file that is not Parquet
        raise ValueError(f"{str(p)!r} is not a Parquet file ({exc}); write it with "
                         "pandas.DataFrame.to_parquet or pyarrow.") from None


def parquet_frame(p: Path, nullable: bool = False) -> Any:
    """The whole Parquet file as a pandas DataFrame, every column of the file a column of
    the frame in the file's order (an index that pandas stored is one, under its stored
    name); ``nullable``: with pandas' nullable dtypes (integers with nulls stay integers)."""
    import pandas as pd
    import pyarrow.parquet as pq

    schema = pq.read_schema(p)
    unique_names(schema.names, p)
    # pyarrow's own conversion: pandas.read_parquet left threads that aborted the
    # interpreter's exit now and then ("terminate called without an active exception")
    frame = (pd.read_parquet(p, dtype_backend="numpy_nullable") if nullable
             else arrow_frame(pq.read_table(p)))
    return with_index_columns(frame, schema)


def arrow_frame(table: Any) -> Any:
    """A pyarrow table (or record batch) as a pandas DataFrame, as pyarrow converts it, but
    for a decimal column, whose values become the nearest float64 (pyarrow gives Python
    ``Decimal`` objects, which read as text), and an integer column with nulls holding
    values beyond 2**53: pyarrow turns such a
    column into float64 and rounds them (ids 2**53 and 2**53 + 1 would tie), so it is taken
    as Python integers and None instead, which the readers keep as written."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    frame = table.to_pandas()
    for j, field in enumerate(table.schema):
        column = table.column(j)
        if pa.types.is_decimal(field.type):  # numbers, each the nearest float64 (as in CSV)
            frame[frame.columns[j]] = pd.Series(column.to_pylist(), dtype=object).astype(float)
            continue
        if not pa.types.is_integer(field.type) or column.null_count == 0:
            continue
        low, high = pc.min_max(column).values()
        if (high.is_valid and high.as_py() > 2**53) or (low.is_valid and low.as_py() < -2**53):
            frame[frame.columns[j]] = pd.Series(column.to_pylist(), dtype=object)
    return frame


class DuplicateColumn(ValueError):
    """A Parquet file with two columns of one name."""


def unique_names(names: list[str], p: Path) -> None:
    """Refuse a Parquet file with two columns of one name, as a CSV header is refused."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DuplicateColumn(f"{str(p)!r} has two columns named {name!r}; rename one (every "
                             "column needs its own name) and try again.")
        seen.add(name)


def with_index_columns(frame: Any, schema: Any) -> Any:
    """``frame`` (read by pandas from a Parquet file of Arrow ``schema``) with the index
    columns that pandas stored in the file (``df.set_index("id").to_parquet()``) back
    among the columns, under their stored names, in the file's order of columns."""
    meta = schema.pandas_metadata or {}
    stored = [c for c in meta.get("index_columns", []) if isinstance(c, str)]
    if not stored or frame.index.nlevels != len(stored):
        return frame
    frame = frame.reset_index()
    frame.columns = [*stored, *frame.columns[len(stored):]]
    order = [n for n in schema.names if n in set(frame.columns)]
    return frame[order] if len(order) == frame.shape[1] else frame


def parquet_file(p: Path) -> Any:
    """The Parquet file opened for reading in batches (``pyarrow.parquet.ParquetFile``)."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(p)
    unique_names(parquet.schema_arrow.names, p)
    return parquet



def parquet_names(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The column names of the schema of a Parquet file (as Spark reads them), read from
    its footer only."""
    def names(p: Path) -> tuple[str, ...]:
        import pyarrow.parquet as pq

        return tuple(pq.read_schema(p).names)

    return open_parquet(Path(path), names)



def parquet_with_column(src: Path, out: Path, name: str, values: NDArray[np.float64]) -> None:
    """The Parquet ``src`` written to ``out`` with the float64 column ``name`` added (or
    replaced, in its place): every other column with its Arrow type, values and nulls, the
    schema's metadata kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = open_parquet(src, lambda p: pq.read_table(p))
    unique_names(table.schema.names, src)
    check_rows(src, table.num_rows, values)
    column = pa.array(values, type=pa.float64(), from_pandas=True)  # NaN as a null
    at = table.schema.get_field_index(name)
    table = (table.set_column(at, name, column) if at >= 0
             else table.append_column(name, column))
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)


def check_plain_columns(p: Path, fmt: str) -> None:
    """Refuse a Parquet file with a column that a CSV or NPZ output (``fmt``) cannot hold as
    written: nested (list, struct, map) or binary values would come out as their Python
    text (a long list shortened with ``...``, struct fields through float)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for field in pq.read_schema(p):
        t = field.type
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t) \
                or pa.types.is_fixed_size_binary(t):
            article = "an" if fmt == "npz" else "a"
            raise ValueError(f"{str(p)!r}: column {field.name!r} holds {t} values, which "
                             f"{article} {fmt.upper()} output cannot hold as written; write "
                             f"the output as Parquet (.parquet), which keeps them.")


def check_rows(src: Path, n: int, values: Sized) -> None:
    if n != len(values):
        raise ValueError(f"{str(src)!r} has {n} rows but {len(values)} values were given for "
                         "them (did the file change while it was read?); run again.")


def write_parquet(path: str, columns: Mapping[str, NDArray[Any]],
                  nulls: Collection[str] = ()) -> None:
    """Write ``columns`` to the Parquet ``path`` with Arrow's own types: NaN stays NaN
    (pandas writes it as a null, which Arrow, Spark and SQL count apart) but in the columns
    ``nulls``, datetime64[D] is a date, None in an object array a null; dates and times in
    units Arrow does not take (months, hours...) in seconds, which hold them exactly."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for name, arr in columns.items():
        if arr.dtype.kind in "cV":  # Parquet has no such type: refused before writing
            raise ValueError(f"array {name!r} has the dtype {arr.dtype}, which Parquet "
                             "cannot store; write the output as NPZ, which keeps it.")
        if arr.dtype.kind in "mM":  # Arrow's units: s to ns, and days for a date
            unit, count = np.datetime_data(arr.dtype)
            taken = unit in ("s", "ms", "us", "ns") or (arr.dtype.kind == "M" and unit == "D")
            if count != 1 or not taken:  # 10ms in ms, months or hours in seconds
                arr = arr.astype(f"{arr.dtype.kind}8[{unit if taken else 's'}]")
        arrays[name] = pa.array(arr, from_pandas=arr.dtype.kind == "O" or name in nulls)
    pq.write_table(pa.table(arrays), path)
