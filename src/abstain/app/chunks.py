"""Files too large for memory: a file, a glob or a directory of parts read in chunks into
score tables (:class:`abstain.ScoreTable`), on this process or on a Dask cluster.

Each chunk is read and checked as one file is (:func:`abstain.app.io.read_chunks`), its
columns picked as for one file (:func:`abstain.app.tables.prepare`), and only the
per-score totals are kept, so memory is bounded by the chunk and the number of distinct
scores, not by the number of rows.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import glob
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._core.optional import require
from ..tables import PairTable, ScoreTable
from .io import (
    ColumnError,
    TableRows,
    input_file,
    read_chunks,
    table_format,
)
from .parquet_files import parquet_names
from .tables import MissingValuesError, TableData, columns_read, prepare, unnamed_column

__all__ = ["MAX_PAIRS", "MissingRows", "Summary", "part_files", "summarise"]

_SUFFIXES = (".csv", ".parquet", ".pq")

#: Distinct score pairs a double-score pair may hold when read in chunks (``max_pairs``).
MAX_PAIRS = 1_000_000


class Summary(NamedTuple):
    """The score tables of every row of a source.

    Attributes
    ----------
    tables : dict of str to ScoreTable
        Per score column, the table of the ID rows (every row without an OOD column).
    marked : dict of str to ScoreTable, or None
        Per score column, the table of every row with its OOD mark; None without an OOD
        column.
    n_dropped : int
        Rows dropped for missing values (``dropna``).
    wrong : dict of str to ScoreTable, or None
        Per score column, the table of the ID rows with the loss replaced by
        ``loss > 0``: its ``loss_sums`` count the rows with a loss at each score (the
        correct/wrong histograms of the report). None unless asked for (``wrong=True``).
    pairs : dict of str to PairTable, or None
        Per double-score pair ``"s_r+s_g"`` (an OOD score, ``ood_score`` of
        :func:`~abstain.app.tables.prepare`), the :class:`~abstain.PairTable` of every row;
        None without an OOD score.
    columns : dict of str to (str, str)
        The two score columns of each pair, as :attr:`~abstain.app.tables.TableData.pairs`.
    notes : tuple of str
        What was read otherwise than named (a skipped index column), as
        :attr:`~abstain.app.tables.TableData.notes` of the first chunk.
    """

    tables: dict[str, ScoreTable]
    marked: dict[str, ScoreTable] | None
    n_dropped: int
    wrong: dict[str, ScoreTable] | None = None
    pairs: dict[str, PairTable] | None = None
    columns: dict[str, tuple[str, str]] = {}
    notes: tuple[str, ...] = ()

    @property
    def n_id(self) -> int:
        return next(iter(self.tables.values())).n

    @property
    def n_ood(self) -> int:
        if self.marked is None:
            return 0
        return next(iter(self.marked.values())).n - self.n_id

    def merge(self, other: Summary) -> Summary:
        marked = None if self.marked is None or other.marked is None else {
            k: ScoreTable.merge(t, other.marked[k]) for k, t in self.marked.items()}
        wrong = None if self.wrong is None or other.wrong is None else {
            k: ScoreTable.merge(t, other.wrong[k]) for k, t in self.wrong.items()}
        pairs = None if self.pairs is None or other.pairs is None else {
            k: PairTable.merge(t, other.pairs[k]) for k, t in self.pairs.items()}
        return Summary({k: ScoreTable.merge(t, other.tables[k]) for k, t in self.tables.items()},
                       marked, self.n_dropped + other.n_dropped, wrong, pairs, self.columns)

    def check_pairs(self, max_pairs: int, where: str) -> Summary:
        """``self``, or a ``ValueError`` if a pair holds more than ``max_pairs`` distinct
        pairs (a table of pairs is then about as large as the rows)."""
        for name, t in (self.pairs or {}).items():
            if t.n_pairs > max_pairs:
                raise ValueError(
                    f"the double-score pair {name!r} has {t.n_pairs:,} distinct score pairs "
                    f"after {t.n:,} rows ({where}), more than --max-pairs {max_pairs:,}: read "
                    "in chunks, a pair is kept as a table of its distinct pairs, which is "
                    "small only for quantised scores. Round both scores to a grid (and apply "
                    "the rule to the rounded scores), raise --max-pairs if memory allows, read "
                    "one file without --chunk-rows, or leave out --ood-score for the metrics "
                    "of each score alone.")
        return self


def is_glob(source: str) -> bool:
    """Whether ``source`` is read as a glob: it holds ``*``, ``?`` or ``[`` and names no
    existing file or directory (``run[1].csv`` that exists is that file, not ``run1.csv``)."""
    return any(c in source for c in "*?[") and not os.path.lexists(source)


def check_not_a_part(output: str | None, source: str) -> None:
    """Raise ``ValueError`` when ``output`` would be read as a part of the directory or glob
    ``source`` the next time it is read: a table under the directory (not in a ``.``/``_``
    folder; links resolved, as the written file is where they lead), or a file in one of the
    folders that the glob reaches whose name it matches (as ``glob`` reads, ``**``
    recursive)."""
    if not output:
        return
    parent, name = os.path.dirname(output) or os.curdir, os.path.basename(output)
    if os.path.isdir(source):
        hit = _named_as_table(Path(name)) and _under(
            os.path.join(os.path.realpath(parent), name), os.path.realpath(source))
    else:
        hit = is_glob(source) and _glob_reaches(parent, name, source)
    if hit:
        raise ValueError(f"output {output!r} would be read as a part of the source {source!r} "
                         "the next time it is read; write it outside the source.")


def _under(path: str, root: str) -> bool:
    """Whether ``path`` lies under the folder ``root``, in no ``.`` or ``_`` folder and
    not named so itself (a directory source skips those)."""
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # another drive
        return False
    parts = Path(rel).parts
    return bool(parts) and parts[0] != os.pardir and not _skipped(parts)


def _skipped(parts: tuple[str, ...]) -> bool:
    """Whether a directory source skips the file at the path ``parts`` (relative to it):
    files and folders named ``.*`` or ``_*``."""
    return any(q.startswith((".", "_")) for q in parts)


def _named_as_table(path: Path) -> bool:
    """Whether ``path`` is named as a table (``.csv``, ``.parquet``, ``.pq`` among its
    suffixes, or ``.tsv`` last): a part of a directory source, or refused there."""
    kinds = [x.lower() for x in path.suffixes]
    return kinds[-1:] == [".tsv"] or any(k in _SUFFIXES for k in kinds)


def _glob_reaches(parent: str, name: str, pattern: str) -> bool:
    """Whether ``glob.glob(pattern, recursive=True)`` would list a file ``name`` in the
    folder ``parent``: ``parent`` is (the same folder as) one that the pattern's folder part
    lists, and ``name`` matches its last part (a trailing ``**``: any name in a folder that
    the whole pattern lists); a name starting with ``.`` only by a part starting with
    ``.``."""
    if not os.path.isdir(parent):
        return False
    head, last = os.path.split(pattern)
    # ("**" lists the folders below a folder, not the folder itself: "**/x.csv" reads ./x.csv)
    folders = glob.glob(head, recursive=True) if head else [os.curdir]
    if os.path.basename(head) == "**":
        folders.append(os.path.dirname(head) or os.curdir)
    if last == "**":
        folders, last = folders + glob.glob(pattern, recursive=True), "*"
    if not fnmatch.fnmatchcase(name, last) or (name.startswith(".") and
                                               not last.startswith(".")):
        return False
    return any(os.path.isdir(d) and os.path.samefile(d, parent) for d in folders)


def part_files(source: str) -> list[Path]:
    """The files of ``source``: one file, the files a glob matches, or the CSV and Parquet
    files under a directory (sorted; parts written by Dask or Spark included)."""
    p = Path(source)
    if p.is_dir():
        # files and folders named .* or _* are not parts (_SUCCESS, checksums, Spark's
        # _temporary/ of attempts, whose rows a finished job holds in its parts already); a
        # part that cannot be read (a broken link, a pipe) is refused, not skipped, and so is
        # a table that is not read as it is named (part-1.csv.gz, part-2.tsv)
        found = [f for f in p.rglob("*")
                 if not f.is_dir() and not _skipped(f.relative_to(p).parts)]
        for f in found:
            if f.suffix.lower() not in _SUFFIXES and _named_as_table(f):
                raise ValueError(f"{str(f)!r} in directory {source!r} is a table that is not "
                                 "read (only .csv, .parquet and .pq parts are): decompress or "
                                 "convert it, or move it out of the directory.")
        files = sorted(input_file(f) for f in found if f.suffix.lower() in _SUFFIXES)
        if not files:
            raise FileNotFoundError(f"directory {source!r} holds no .csv, .parquet or .pq file.")
        return files
    if is_glob(source):
        files = sorted(input_file(f) for f in glob.glob(source, recursive=True)
                       if not Path(f).is_dir())
        if not files:
            raise FileNotFoundError(f"no file matches {source!r}.")
        for f in files:
            table_format(f)
        return files
    table_format(p)
    return [input_file(p)]


def _index_run(table: dict[str, Any], last: float) -> float:
    """The last value of the unnamed column of a chunk, refused as the whole file would be
    unless it is an index that goes on increasing from ``last``, the previous chunk's."""
    col = table[""]
    unnamed_column({k: (np.r_[last, v] if k == "" and np.isfinite(last) else v)
                    for k, v in table.items()})
    return float(col[-1]) if col.size else last


@contextlib.contextmanager
def _naming(path: Path, part: bool) -> Iterator[None]:
    """Errors of reading ``path`` as it is: where it is one ``part`` of several, a message
    that does not name it yet names it first (line 2 of which part?)."""
    try:
        yield
    except (ValueError, ColumnError) as exc:
        if not part or str(path) in str(exc):
            raise
        message = f"{str(path)!r}: {exc}"
        try:
            named = type(exc)(message)
        except TypeError:  # an error type of other arguments
            named = ValueError(message)
        raise named from None


class MissingRows:
    """The rows with NaN or empty values of the chunks read so far: their count, columns
    (in the order of the columns checked) and the first one's place; refused after the
    last chunk, in the words of a whole-file read (its count and every column, not the
    first chunk's)."""

    def __init__(self) -> None:
        self.n_rows, self.where = 0, ""
        self.columns: list[str] = []

    def add(self, exc: MissingValuesError) -> None:
        self.n_rows += exc.n_rows
        found = {*self.columns, *exc.columns}
        self.columns = [c for c in exc.checked if c in found]  # the whole-file read's order
        self.where = self.where or exc.where

    def refuse(self) -> None:
        if self.n_rows:
            raise ValueError(f"{self.n_rows} row(s) have NaN or empty values in column(s) "
                             f"{', '.join(map(repr, self.columns))} (first at {self.where}); "
                             "pass --dropna to drop them.")


def _empty(names: list[str], ood: bool, wrong: bool = False,
           columns: dict[str, tuple[str, str]] | None = None) -> Summary:
    return Summary({k: ScoreTable() for k in names},
                   {k: ScoreTable() for k in names} if ood else None, 0,
                   {k: ScoreTable() for k in names} if wrong else None,
                   {k: PairTable() for k in columns} if columns else None, columns or {})


def _add(summary: Summary, data: TableData) -> None:
    ood = data.is_ood
    if (ood is not None) != (summary.marked is not None):
        raise ValueError("every part must have the OOD column or none must; got a mix.")
    if data.losses.size == 0:  # every row of the chunk dropped
        return
    rows = np.ones(data.losses.size, dtype=bool) if ood is None else ~ood
    for name, s in data.scores.items():
        if rows.any():
            summary.tables[name].update(s[rows], data.losses[rows])
            if summary.wrong is not None:
                summary.wrong[name].update(s[rows], (data.losses[rows] > 0).astype(np.float64))
        if summary.marked is not None:
            summary.marked[name].update(s, data.losses, is_ood=ood)
    for name, cols in summary.columns.items():
        assert summary.pairs is not None and ood is not None
        summary.pairs[name].update(data.stacked(cols), data.losses, is_ood=ood)


def _file_summary(path: Path, rows: int, options: dict[str, Any], ood: bool,
                  wrong: bool = False, columns: dict[str, tuple[str, str]] | None = None,
                  max_pairs: int = MAX_PAIRS, part: bool = False,
                  index: bool = False, header: _Header | None = None) -> Summary:
    """The summary of one file, chunk by chunk (``part``: one of several, named in errors;
    ``index``: an unnamed column is checked as the index it must be, across the chunks;
    ``header``: the first part's columns, which this one must have, no more and no fewer)."""
    summary = _empty(list(options["scores"]), ood, wrong, columns)
    dropped = 0
    last = -np.inf
    typed = columns_read(**options)
    if index and typed is not None:  # the unnamed column read as numbers, to be checked
        typed = typed | {""}
    missing = MissingRows()
    with _naming(path, part):
        for chunk in read_chunks(path, rows, typed):
            if header is not None:
                _same_columns(header, path, chunk.columns)
                header = None  # the chunks of one file share its columns
            if index and "" in chunk.columns:
                last = _index_run(chunk.columns, last)
            try:
                data = prepare(chunk.columns, rows=chunk.rows, **options)
            except MissingValuesError as exc:  # the rest is read to count them all
                missing.add(exc)
                continue
            if missing.n_rows:
                continue
            dropped += data.n_dropped
            _add(summary, data)
            summary.check_pairs(max_pairs, f"in {str(path)!r}")
        missing.refuse()
    return summary._replace(n_dropped=dropped)


class _Header(NamedTuple):
    """The columns of the first part with rows (``path``), in its order."""

    path: Path
    names: tuple[str, ...]


def _same_columns(header: _Header, path: Path, columns: dict[str, Any]) -> None:
    """Refuse a part whose columns are not those of the first part: where every numeric
    column is a score, a column that only some parts have would be left out unsaid."""
    extra = [c for c in columns if c not in header.names]
    lacks = [c for c in header.names if c not in columns]
    if extra or lacks:
        what = "; ".join(
            ([f"has {', '.join(map(repr, extra))}, which {str(header.path)!r} has not"]
             if extra else []) +
            ([f"lacks {', '.join(map(repr, lacks))}, which {str(header.path)!r} has"]
             if lacks else []))
        raise ValueError(f"{str(path)!r}: {what}; the parts of a source must have the same "
                         "columns (or name the score columns with --score).")


def _kinds_ahead(first: TableRows, chunks: Iterator[TableRows]) -> TableRows:
    """``first``, the first chunk of a Parquet file whose scores are taken by default, with each
    column that holds no value in it (read as numbers: NaN) read as text where the first
    value of the file in it is text. Such a column is text read whole, so it is no score;
    decided on the first chunk alone, it was taken as one (and its empty cells refused) by
    one chunk size and not by another. Reads on in ``chunks`` only as far as needed."""
    empty = [k for k, v in first.columns.items()
             if v.dtype.kind == "f" and v.size and bool(np.all(np.isnan(v)))]
    text: list[str] = []
    for chunk in chunks if empty else ():
        for k in list(empty):
            v = chunk.columns.get(k)
            if v is None or (v.dtype.kind == "f" and bool(np.all(np.isnan(v)))):
                continue  # still no value
            empty.remove(k)
            if v.dtype.kind != "f":
                text.append(k)
        if not empty:
            break
    if not text:
        return first
    columns = {k: (np.full(v.size, "", dtype=str) if k in text else v)
               for k, v in first.columns.items()}
    return TableRows(columns, first.rows)


def _first_chunk(files: list[Path], rows: int, options: dict[str, Any],
                 ) -> tuple[TableData, _Header]:
    """The columns of the first chunk of the first file: the score columns of every part,
    and the part's columns."""
    for path in files:
        with _naming(path, len(files) > 1):
            chunks = read_chunks(path, rows, columns_read(**options))
            for chunk in chunks:
                # a CSV reader looks ahead for the kind of a column empty in its first
                # chunk itself (io.read_chunks); a Parquet batch's nulls tell no kind
                if options.get("scores") is None and table_format(path) == "parquet":
                    chunk = _kinds_ahead(chunk, chunks)
                try:
                    first = prepare(chunk.columns, rows=chunk.rows, **options)
                except MissingValuesError:  # its columns still: the rows are counted later
                    first = prepare(chunk.columns, rows=chunk.rows,
                                    **{**options, "dropna": True})
                return first, _Header(path, tuple(chunk.columns))
    if len(files) == 1:
        raise ValueError(f"{str(files[0])!r} has no data rows (only a header); add one row per "
                         "sample.")
    raise ValueError(f"none of the {len(files)} files of the source has a data row; add one "
                     "row per sample.")


def summarise(source: str, *, rows: int, options: dict[str, Any],
              progress: Callable[[int, int], None] | None = None, engine: str = "numpy",
              scheduler: str | None = None, wrong: bool = False,
              max_pairs: int = MAX_PAIRS) -> Summary:
    """Read ``source`` in chunks of ``rows`` rows into a :class:`Summary`.

    ``options`` are those of :func:`~abstain.app.tables.prepare`; the score columns are
    those of the first chunk (or ``options["scores"]``). ``engine="dask"`` reads the files
    in parallel on a Dask cluster: the scheduler at ``scheduler``, or an in-process
    ``LocalCluster``; each file is read in chunks by one task and the tables are merged up
    a tree. ``engine="spark"`` reads Parquet parts with the active Spark session (or a new
    local one) and builds every table by Spark's own group-by (:mod:`abstain.spark`).
    ``wrong=True`` also keeps :attr:`Summary.wrong`. With an OOD score
    (``options["ood_score"]``) each double-score pair is kept as a
    :class:`~abstain.PairTable`; a ``ValueError`` stops the reading as soon as one holds
    more than ``max_pairs`` distinct pairs.
    """
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, int) or max_pairs < 1:
        raise ValueError(f"max_pairs must be an integer >= 1; got {max_pairs!r}.")
    files = part_files(source)
    first, names = _first_chunk(files, rows, options)
    index = options.get("scores") is None  # an unnamed column is then checked, not named
    # every numeric column is a score: every part must have the first one's columns
    header = names if index and len(files) > 1 else None
    options = {**options, "scores": list(first.scores)}
    ood = first.is_ood is not None
    columns = first.pairs
    if engine == "dask":
        return _checked(_on_dask(files, rows, options, ood, wrong, scheduler, progress,
                                 columns, max_pairs, index, header),
                        source)._replace(notes=tuple(first.notes))
    if engine == "spark":
        summary = _on_spark(files, options, ood, wrong, columns, max_pairs, header)
        if progress is not None:
            progress(len(files), len(files))
        return _checked(summary, source)._replace(notes=tuple(first.notes))
    summary = _empty(options["scores"], ood, wrong, columns)
    for i, path in enumerate(files):
        summary = summary.merge(_file_summary(path, rows, options, ood, wrong, columns,
                                              max_pairs, len(files) > 1, index, header))
        summary.check_pairs(max_pairs, f"up to {str(path)!r}")
        if progress is not None:
            progress(i + 1, len(files))
    return _checked(summary, source)._replace(notes=tuple(first.notes))


def _checked(summary: Summary, source: str) -> Summary:
    if summary.n_id == 0 and summary.n_ood == 0 and summary.n_dropped:  # as a whole file
        raise ValueError(f"every row of {source} has a NaN or empty value in a column used, so "
                         "--dropna dropped them all; fill the values or name other columns.")
    if summary.n_id == 0:
        raise ValueError("the table must have in-distribution rows; got only OOD rows.")
    return summary


def _merge_all(max_pairs: int, *parts: Summary) -> Summary:
    out = parts[0]
    for p in parts[1:]:
        out = out.merge(p).check_pairs(max_pairs, "merging the parts")
    return out


def _on_dask(files: list[Path], rows: int, options: dict[str, Any], ood: bool, wrong: bool,
             scheduler: str | None, progress: Callable[[int, int], None] | None,
             columns: dict[str, tuple[str, str]], max_pairs: int,
             index: bool = False, header: _Header | None = None) -> Summary:
    dask = require("dask", "dask", "abstain --engine dask")
    distributed = require("distributed", "dask", "abstain --engine dask")
    with _client(distributed, scheduler):
        level = [dask.delayed(_file_summary)(f, rows, options, ood, wrong, columns, max_pairs,
                                             len(files) > 1, index, header) for f in files]
        while len(level) > 1:
            level = [dask.delayed(_merge_all)(max_pairs, *level[i : i + 8])
                     for i in range(0, len(level), 8)]
        (summary,) = dask.compute(level[0])
    if progress is not None:
        progress(len(files), len(files))
    return summary


#: The loss column that ``--engine spark`` adds to the DataFrame (never a score).
SPARK_LOSS = "__abstain_loss"


def _on_spark(files: list[Path], options: dict[str, Any], ood: bool, wrong: bool,
              columns: dict[str, tuple[str, str]], max_pairs: int,
              header: _Header | None = None) -> Summary:
    """The summary of Parquet parts by Spark's own group-by (:mod:`abstain.spark`), on the
    active Spark session (or a new local one). ``header``: every part must have the
    columns of the Parquet schema of ``header.path`` (checked before Spark starts)."""
    other = [f for f in files if table_format(f) != "parquet"]
    if other:
        raise ValueError(f"--engine spark reads Parquet parts; got {str(other[0])!r} (read CSV "
                         "with --engine numpy or dask).")
    if header is not None:
        first = _Header(header.path, parquet_names(header.path))
        for f in files:
            _same_columns(first, f, dict.fromkeys(parquet_names(f)))
    require("pyspark", "spark", "abstain --engine spark")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from ..spark import pair_table, score_table

    spark = SparkSession.builder.appName("abstain").getOrCreate()
    df = spark.read.parquet(*(str(f) for f in files))
    names = set(df.columns)
    if options.get("loss") is not None or "loss" in names:
        loss = F.col(options.get("loss") or "loss").cast("double")
    else:
        loss = (F.col(options.get("label") or "label")
                != F.col(options.get("prediction") or "prediction")).cast("double")
    df = df.withColumn(SPARK_LOSS, loss)
    mark = (options.get("is_ood") or "is_ood") if ood else None
    scores = list(options["scores"])
    dropped = 0
    if options.get("dropna"):
        def missing(c: Any) -> Any:
            return c.isNull() | F.isnan(c)

        bad = F.lit(False)
        for s in scores:
            bad = bad | missing(F.col(s).cast("double"))
        is_id = F.lit(True) if mark is None else (F.col(mark).cast("double") == 0.0)
        if mark is not None:
            bad = bad | F.col(mark).isNull()
        bad = bad | (is_id & missing(F.col(SPARK_LOSS)))
        dropped = df.where(bad).count()
        df = df.where(~bad)
    ids = df if mark is None else df.where(F.col(mark).cast("double") == 0.0)
    tables = {s: score_table(ids, s, loss=SPARK_LOSS) for s in scores}
    marked = None if mark is None else {
        s: score_table(df, s, loss=SPARK_LOSS, is_ood=mark) for s in scores}
    wrongs = None
    if wrong:
        flagged = ids.withColumn(SPARK_LOSS, (F.col(SPARK_LOSS) > 0.0).cast("double"))
        wrongs = {s: score_table(flagged, s, loss=SPARK_LOSS) for s in scores}
    pairs = None
    if columns:
        assert mark is not None
        pairs = {name: pair_table(df, cols, loss=SPARK_LOSS, is_ood=mark)
                 for name, cols in columns.items()}
    summary = Summary(tables, marked, int(dropped), wrongs, pairs, columns)
    return summary.check_pairs(max_pairs, "read by Spark")


class _client:
    """A client of the cluster at ``scheduler``, or of an in-process LocalCluster."""

    def __init__(self, distributed: Any, scheduler: str | None) -> None:
        self.distributed, self.scheduler = distributed, scheduler
        self.cluster: Any = None

    def __enter__(self) -> Any:
        d = self.distributed
        if self.scheduler is None:
            # the workers' logs stay quiet: an error in a part is the command's one line,
            # not also Dask's "Compute Failed" block with its traceback
            self.cluster = d.LocalCluster(processes=False, dashboard_address=":0",
                                          silence_logs=logging.CRITICAL)
            self.client = d.Client(self.cluster)
        else:
            try:
                self.client = d.Client(self.scheduler, timeout="10s")
            except OSError as exc:
                raise OSError(f"no Dask scheduler answers at {self.scheduler!r} ({exc}); "
                              "start one or leave out --scheduler for a local cluster.") from None
        return self.client

    def __exit__(self, *exc: Any) -> None:
        # a close that times out on a loaded machine leaves a future whose TimeoutError
        # asyncio logs when it is collected ("Future exception was never retrieved"), under
        # the command's one line; the results are in by then, so such futures are collected
        # here with asyncio's log left to critical errors, and its level is put back
        log = logging.getLogger("asyncio")
        level = log.level
        log.setLevel(logging.CRITICAL)
        try:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
            gc.collect()
        finally:
            log.setLevel(level)
