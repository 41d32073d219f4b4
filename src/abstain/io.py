"""Tables of per-sample columns (CSV, NPZ, Parquet); defined in :mod:`abstain.app.io`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .app.io import (
    ColumnError,
    atomic_path,
    get_column,
    read_table,
    table_format,
    write_table,
    write_text,
)

__all__ = [
    "ColumnError",
    "read_table",
    "write_table",
    "write_text",
    "atomic_path",
    "table_format",
    "get_column",
]
