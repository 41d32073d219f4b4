"""The records of a CSV file as written: lines, line endings, quoting and cells.

The reader behind :mod:`abstain.app.io`. It follows the rules of Python's ``csv`` module
(the Excel dialect) but keeps each record's text and line ending, so that a command can
copy the records it does not change byte for byte, and it names the file's line (the
header is line 1) in every error. A cell may be of any length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .._core.files import atomic_path
from .parquet_files import check_rows

__all__ = [
    "BOM",
    "Record",
    "copy_with_column",
    "csv_body",
    "csv_header",
    "csv_records",
    "is_blank",
    "split_record",
]

BOM = b"\xef\xbb\xbf"
BINARY = re.compile(r"[\x00-\x08\x0e-\x1f]")
class Record(NamedTuple):
    """One CSV record as written: its first line, its text without the line ending, the
    line ending (``""`` at the end of a file without one) and its cells."""

    line: int
    text: str
    end: str
    cells: list[str]


def split_record(text: str) -> tuple[list[str], list[str], bool]:
    """The cells and the raw fields (as written, quotes included) of a CSV record, and
    whether a quoted cell is still open at the end of ``text`` (it goes on on the next line).

    The rules of Python's ``csv`` module (the Excel dialect): a cell that starts with a
    double quote is quoted, ``""`` in it is one quote, text after its closing quote is
    appended; a quote inside an unquoted cell is a character like any other.
    """
    if '"' not in text:
        fields = text.split(",")
        return fields, fields, False
    cells: list[str] = []
    raw: list[str] = []
    i, n = 0, len(text)
    while True:
        start = i
        if i < n and text[i] == '"':
            parts = []
            i += 1
            while True:
                j = text.find('"', i)
                if j < 0:
                    return cells, raw, True
                parts.append(text[i:j])
                if j + 1 < n and text[j + 1] == '"':
                    parts.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
            k = text.find(",", i)
            k = n if k < 0 else k
            parts.append(text[i:k])
            cells.append("".join(parts))
        else:
            k = text.find(",", i)
            k = n if k < 0 else k
            cells.append(text[i:k])
        raw.append(text[start:k])
        if k == n:
            return cells, raw, False
        i = k + 1


BREAK = re.compile(rb"\r\n|\r|\n")


def text_lines(fh: Any, where: str) -> Iterator[tuple[str, str]]:
    """``(text, line ending)`` of each line of a binary file: ``\n``, ``\r\n``, a lone
    ``\r``, or ``""`` for a last line without one. Decoded and checked a block at a time:
    a byte that is not UTF-8 and a control character that no text holds are refused with
    their line."""
    done, offset = 0, 0  # lines and bytes before the block
    for batch in iter(lambda: fh.readlines(1 << 16), []):
        blob = b"".join(batch)
        skip = 3 if offset == 0 and blob.startswith(BOM) else 0
        try:
            text = blob[skip:].decode("utf-8")
        except UnicodeDecodeError as exc:
            at = skip + exc.start
            line = done + len(BREAK.findall(blob, 0, at)) + 1
            raise ValueError(
                f"{where!r} is not UTF-8 text (line {line}: byte {blob[at]:#04x} at offset "
                f"{offset + at}); save it as UTF-8 (in Excel: CSV UTF-8) and try again."
            ) from None
        bad = BINARY.search(text)
        if bad is not None:
            line = done + len(BREAK.findall(text[: bad.start()].encode())) + 1
            raise ValueError(
                f"{where!r} is not a text CSV file (control character {ord(bad.group()):#04x} "
                f"on line {line}); give a CSV file of text (a header row, comma-separated), or "
                "a .parquet or .npz file.")
        offset += len(blob)
        pieces = text.split("\n")
        last = pieces.pop()  # "" when the block ends with a line ending
        for piece in pieces:
            lines = lone_returns(piece, "\n")
            done += len(lines)
            yield from lines
        if last:
            lines = lone_returns(last, "")
            done += len(lines)
            yield from lines


def lone_returns(piece: str, end: str) -> list[tuple[str, str]]:
    """The lines of ``piece`` (one line ending in ``end``) split at carriage returns:
    ``"a\\rb"`` is two lines; a last ``"\\r"`` makes ``end`` ``"\\r\\n"``."""
    if "\r" not in piece:
        return [(piece, end)]
    *lines, rest = piece.split("\r")
    out = [(x, "\r") for x in lines]
    if rest:
        out.append((rest, end))
    elif end:
        out[-1] = (out[-1][0], "\r" + end)
    return out


def csv_records(p: Path) -> Iterator[Record]:
    """The records of a CSV file, read lazily; the header is line 1.

    A UTF-8 byte-order mark (Excel's "CSV UTF-8") is not part of the first column name.
    A line that is not UTF-8, a control character that no text holds and a quoted cell
    never closed are refused, naming the file and the line.
    """
    where = str(p)
    with open(p, "rb") as fh:
        pending, start, line = "", 0, 0
        for body, end in text_lines(fh, where):
            line += 1
            if not pending and '"' not in body:  # the common case, without a call
                yield Record(line, body, end, body.split(","))
                continue
            if pending:
                text = pending + body
            else:
                text, start = body, line
            cells, _, open_ = split_record(text)
            if open_:
                pending = text + end
                continue
            pending = ""
            yield Record(start, text, end, cells)
        if pending:
            raise ValueError(f"a quoted cell of {where!r} opened on line {start} is never "
                             "closed; close its double quote (a quote inside a quoted cell is "
                             "written twice).")


def is_blank(record: Record) -> bool:
    return not record.text or record.text.isspace()


def csv_header(first: Record | None, p: Path) -> list[str]:
    if first is None:
        raise ValueError(f"path must be a CSV file with a header row; got an empty file "
                         f"{str(p)!r}.")
    if is_blank(first):
        raise ValueError(f"line 1 of {str(p)!r} is blank; the header row (the column names) "
                         "must be line 1.")
    header = [h.strip() for h in first.cells]
    for j, h in enumerate(header):
        if h not in header[:j]:
            continue
        if not h:  # each column is read by its name: two without one
            raise ValueError(f"{str(p)!r} has more than one column without a name (columns "
                             f"{header.index(h) + 1} and {j + 1}; trailing commas make them): "
                             "name them, or remove the empty ones, even where they are not "
                             "read.")
        raise ValueError(f"column {h!r} appears twice in the header of {str(p)!r} (columns "
                         f"{header.index(h) + 1} and {j + 1}); rename one of them.")
    return header


def csv_body(records: Iterator[Record], width: int) -> Iterator[Record]:
    """The data records: a blank line between rows is a row of ``width`` empty cells;
    blank lines after the last row are not rows."""
    blanks: list[Record] = []
    for r in records:
        if not r.text or r.text.isspace():  # is_blank, inline: once per row
            blanks.append(r._replace(cells=[""] * width))
            continue
        yield from blanks
        blanks = []
        yield r


def copy_with_column(src: Path, out: Path, name: str, cells: Sequence[str]) -> None:
    """The CSV ``src`` copied record by record to ``out`` (written atomically) with the cell
    of ``name`` added, or replaced, by ``cells`` (one per data row); every other byte as
    written."""
    with open(src, "rb") as raw:
        bom = raw.read(3) == BOM
    records = csv_records(src)
    first = next(records, None)
    header = csv_header(first, src)
    assert first is not None
    at = header.index(name) if name in header else None
    quoted = '"' + name.replace('"', '""') + '"'
    name_cell = quoted if any(c in name for c in ',"\r\n') or name != name.strip() else name

    def line(text: str, cell: str, width: int) -> str:
        if at is None:
            return f"{text},{cell}"
        raw = split_record(text)[1] if text.strip() else [""] * width
        raw[at] = cell
        return ",".join(raw)

    n = 0
    with atomic_path(out) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            fh.write(("\ufeff" if bom else "") + line(first.text, name_cell, len(header))
                     + (first.end or "\n"))
            tail: list[Record] = []
            for r in records:
                if is_blank(r):
                    tail.append(r)
                    continue
                for b in [*tail, r]:
                    if n >= len(cells):
                        check_rows(src, n + 1, cells)
                    text = "," * (len(header) - 1) if is_blank(b) else b.text
                    end = b.end or ("\n" if b is not r else "")
                    fh.write(line(text, cells[n], len(header)) + end)
                    n += 1
                tail = []
            for b in tail:  # blank lines after the last row: not rows, kept as written
                fh.write(b.text + b.end)
        check_rows(src, n, cells)
