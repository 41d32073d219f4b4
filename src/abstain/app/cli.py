"""The ``abstain`` command line: evaluate, fit, apply, report, demo.

A thin layer over :mod:`.io`, :mod:`.tables`, :mod:`.evaluate`, :mod:`.rules` and
:mod:`.report`: it parses arguments, calls the library and turns its
errors into one line on stderr and a non-zero exit code (1 for bad input, 2 for
bad usage).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import itertools
import os
import re
import shlex
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._core.progress import SHOW, ProgressBar
from .._core.version import VERSION
from ..metrics import AUTO_EXACT_ROWS
from .applying import CHUNK_ROWS as APPLY_ROWS
from .applying import apply_chunks
from .chunks import MAX_PAIRS, Summary, check_not_a_part, is_glob, part_files, summarise
from .console import (
    Interrupted,
    console,
    handle_signals,
    interrupted,
    pending,
    reraise_interrupt,
    restore_signals,
    shown_streams,
)
from .evaluate import evaluate, inverted_warnings
from .io import (
    ColumnError,
    TableRows,
    check_not_input,
    input_file,
    os_error,
    read_chunks,
    read_table_rows,
    standard_stream,
    write_text,
    write_with_column,
    writes_in_place,
)
from .rules import (
    InfeasibleTargetError,
    fit_rule,
    load_rule,
    rule_columns,
    rule_options,
    rule_summary,
    rule_to_json,
)
from .tables import MissingValuesError, TableData, columns_read, prepare

__all__ = ["main"]


class _Fail(Exception):
    """An error already phrased for the command line."""


def _data_options(p: argparse.ArgumentParser, *, columns: bool = True,
                  bar: str | None = "") -> None:
    """The options that name the input's columns; ``columns=False`` for ``apply`` (its rule
    file names them). ``bar``: what the progress bar shows, after "progress bar on stderr"
    (None: the command draws none, and takes no --progress or --quiet)."""
    p.add_argument("file", help="CSV, Parquet or NPZ file of per-sample columns")
    if columns:
        p.add_argument("--loss", help="loss column (default: 'loss', else label != prediction)")
        p.add_argument("--label", help="label column (default 'label')")
        p.add_argument("--prediction", help="prediction column (default 'prediction')")
        p.add_argument("--is-ood", dest="is_ood",
                       help="OOD column, 1/true for OOD rows (default 'is_ood' if present)")
        p.add_argument("--ood-score", dest="ood_score", metavar="COLUMN",
                       help="the OOD score s_g of a double-score method: also paired with each "
                            "other score column s_r (or those of --pair-with) as the two columns "
                            "(s_r, s_g)")
        p.add_argument("--pair-with", action="append", dest="pair_with", metavar="COLUMN",
                       help="with --ood-score: pair it with this score column only; repeat for "
                            "more (default: every other score column)")
    p.add_argument("--score", action="append", dest="scores", metavar="COLUMN",
                   help="uncertainty score column, higher rejected first; repeat for more "
                        "(default: every other numeric column)" if columns else
                        "score column of the rule, higher rejected first; repeat for a "
                        "double-score rule (default: the columns the rule file names)")
    p.add_argument("--dropna", action="store_true",
                   help="drop rows with NaN or empty values in the columns used" if columns
                   else "keep rows with a NaN or empty score and leave their accept cell empty "
                        "(without it such rows are refused); every row is written")
    if bar is None:
        return
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", choices=SHOW, default="auto",
                   help=f"progress bar on stderr{bar}: 'auto' (default) draws it only when "
                        "stderr is a terminal, 'always' draws it anyway, 'never' not at all")
    g.add_argument("--quiet", action="store_true", help="no progress bar (--progress never)")


def _bootstrap_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", type=_resamples, default=0, metavar="N",
                   help="a 95%% percentile interval of each metric from N resamples of the "
                        "rows (ID and OOD apart; default 0: none)")
    p.add_argument("--random-state", type=_seed, default=0,
                   help="seed of the bootstrap resamples (default 0)")


def _whole_number(accepts: Callable[[int], bool], what: str) -> Callable[[str], int]:
    """The ``type`` of an option that takes a whole number that ``accepts`` (``what`` says
    which, in argparse's message)."""
    def parse(text: str) -> int:
        try:
            value: int | None = int(text)
        except ValueError:
            value = None
        if value is None or not accepts(value):
            raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}")
        return value
    return parse


#: ``--bootstrap``, ``--random-state`` and ``--jobs``.
_resamples = _whole_number(lambda v: v == 0 or v >= 2, "0 (no interval) or a whole number >= 2")
_seed = _whole_number(lambda v: v >= 0, "a whole number >= 0")
_jobs = _whole_number(lambda v: v >= 1 or v == -1, "-1 (every core) or a whole number >= 1")


def _jobs_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help=f"worker processes for {what} (default 1; -1: every core); the "
                        "output is the same for any N")


def _search_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--search", choices=("auto", "exact", "grid"), default="auto",
                   help="directions of a double-score pair's metrics: 'exact' every direction "
                        "(unit-free; slow past a few thousand rows), 'grid' the paper's grid on "
                        "the columns as given (depends on their units), 'auto' (default) exact "
                        f"up to {AUTO_EXACT_ROWS} rows and the grid of the standardised columns "
                        "above or with --bootstrap")


#: Rows per chunk when a source is read in chunks and --chunk-rows is not given.
CHUNK_ROWS = 1_000_000


def _chunk_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "large inputs", "FILE may also be a directory of parts or a glob ('parts/*.parquet'): "
        "CSV and Parquet are then read in chunks into score tables, with bounded memory, and "
        "every metric, rule and report figure of one score column is computed on the tables; "
        "a double-score pair (--ood-score) is kept as a table of its distinct score pairs, "
        "for its envelope metrics, the OOD rules and the risk at TPR/FPR (no bootstrap).")
    g.add_argument("--chunk-rows", type=int, metavar="N", help="read in chunks of N rows "
                   f"(default {CHUNK_ROWS:,} for a directory, a glob or --engine dask)")
    g.add_argument("--engine", choices=("numpy", "dask", "spark"), default="numpy",
                   help="'dask': read the parts in parallel on a Dask cluster (extra dask); "
                        "'spark': Parquet parts, every table by Spark's group-by on the active "
                        "Spark session or a local one (extra spark, Java)")
    g.add_argument("--scheduler", metavar="ADDRESS", help="with --engine dask: the scheduler "
                   "of an existing cluster (default: an in-process LocalCluster)")
    g.add_argument("--max-pairs", type=int, default=MAX_PAIRS, metavar="N",
                   help="with --ood-score: stop with an error once a double-score pair holds "
                        f"more than N distinct score pairs (default {MAX_PAIRS:,})")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="abstain", description="Selective classification and OOD rejection on a file of "
        "predictions: metrics, reject rules and reports.")
    parser.add_argument("--version", action="version", version=f"abstain {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("evaluate", help="print every applicable metric of each score")
    _data_options(p)
    p.add_argument("--coverage", type=float, nargs="+", default=[0.8, 0.9, 0.95],
                   help="coverages for the selective risk (default 0.8 0.9 0.95)")
    p.add_argument("--tpr", type=float, default=0.95, help="TPR of FPR@TPR and the risk "
                   "at TPR/FPR (default 0.95)")
    p.add_argument("--fpr", type=float, default=0.05, help="FPR bound (default 0.05)")
    p.add_argument("--json", metavar="PATH", help="also write the metrics as JSON")
    _search_option(p)
    _bootstrap_options(p)
    _jobs_option(p, "the bootstrap's resamples")
    _chunk_options(p)

    p = sub.add_parser("fit", help="fit a reject model and write it as a JSON rule file")
    _data_options(p, bar=" while a source is read in chunks (--chunk-rows, a directory of "
                         "parts, --engine)")
    g = p.add_argument_group("reject model (exactly one)")
    for target in rule_options():
        g.add_argument("--" + target.name.replace("_", "-"), dest=target.name,
                       type=target.type, metavar=target.metavar, help=target.help)
    p.add_argument("--random-state", type=_seed, default=0,
                   help="seed of the randomised decisions on ties (default 0)")
    p.add_argument("-o", "--output", required=True, help="rule file to write (JSON)")
    _chunk_options(p)

    p = sub.add_parser("apply", help="add an accept column to new data")
    p.add_argument("rule", help="rule file written by 'abstain fit'")
    _data_options(p, columns=False, bar=None)
    p.add_argument("-o", "--output", required=True,
                   help="output table (CSV, Parquet or NPZ; never the input file)")
    p.add_argument("--column", default="accept", help="name of the new column (default "
                   "'accept': 1 accept, 0 abstain)")
    p.add_argument("--overwrite-column", action="store_true",
                   help="replace the input's column of that name (refused without it)")
    p.add_argument("--chunk-rows", type=int, default=APPLY_ROWS, metavar="N",
                   help=f"rows of the input read at a time (default {APPLY_ROWS:,}): memory "
                   "holds one chunk and the accept column; the output does not depend on it")

    p = sub.add_parser("report", help="write a self-contained HTML report with plots")
    _data_options(p)
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.add_argument("--png", metavar="DIR", help="also write each figure as a PNG into DIR")
    p.add_argument("--fpr", type=float, default=0.05, help="FPR bound of the risk-coverage "
                   "curve at an FPR bound and of the table (default 0.05)")
    p.add_argument("--tpr", type=float, default=0.95, help="TPR of the table (default 0.95)")
    p.add_argument("--title", default=None, help="page title (default: the file name)")
    p.add_argument("--rule", metavar="RULE", help="a rule file written by 'abstain fit': its "
                   "operating point on these rows goes in the summary and on its curves")
    _search_option(p)
    _bootstrap_options(p)
    _jobs_option(p, "the bootstrap's resamples and the figures")
    _chunk_options(p)

    p = sub.add_parser("demo", help="run the end-to-end demo that 'make demo' runs")
    p.add_argument("--out", type=Path, default=Path("out"), help="folder for the PNG")
    p.add_argument("--random-state", type=_seed, default=0)
    return parser


def _read(path: str, columns: Collection[str] | None = None) -> TableRows:
    """``read_table_rows``, refusing a file without data rows."""
    read = read_table_rows(path, columns)
    if not read.columns:
        raise _Fail(f"{path!r} has no columns; write one column per score, loss and label.")
    if len(next(iter(read.columns.values()))) == 0:
        raise _Fail(f"{path!r} has no data rows (only a header); add one row per sample.")
    return read


def _load(args: argparse.Namespace) -> TableData:
    options = {"loss": args.loss, "label": args.label, "prediction": args.prediction,
               "scores": args.scores, "is_ood": args.is_ood, "ood_score": args.ood_score,
               "pair_with": args.pair_with}
    # the columns not used are not read as numbers: never refused
    read = _read(args.file, columns_read(**options))
    return _prepare(read, dropna=args.dropna, where=args.file, **options)


def _prepare(read: TableRows, *, dropped: str = "dropped {n} row(s) with NaN or empty values.",
             where: str | None = None, **options: Any) -> TableData:
    """``prepare`` with its NaN error as one CLI line naming the file's line, and a note of
    the rows not used (``dropped``, formatted with their number ``n``). With ``where`` (the
    file), a table that --dropna left without rows is refused."""
    try:
        data = prepare(read.columns, rows=read.rows, **options)
    except MissingValuesError as exc:
        raise _Fail(f"{exc.n_rows} row(s) have NaN or empty values in column(s) "
                    f"{', '.join(map(repr, exc.columns))} (first at {exc.where}); "
                    "pass --dropna to drop them.") from exc
    if where is not None and data.keep.size and not data.keep.any():
        raise _Fail(f"every row of {where} has a NaN or empty value in a column used, so "
                    "--dropna dropped them all; fill the values or name other columns.")
    if data.n_dropped:
        print(dropped.format(n=data.n_dropped), file=sys.stderr)
    for note in data.notes:
        print(note, file=sys.stderr)
    return data


def _check_chunk_rows(rows: int | None) -> None:
    if rows is not None and rows < 1:
        raise _Fail(f"--chunk-rows must be at least 1; got {rows}.")


def _chunked(args: argparse.Namespace) -> bool:
    """Whether the source is read in chunks: a directory, a glob, --chunk-rows or Dask."""
    if args.scheduler is not None and args.engine != "dask":
        raise _Fail("--scheduler needs --engine dask.")
    _check_chunk_rows(args.chunk_rows)
    if args.max_pairs < 1:
        raise _Fail(f"--max-pairs must be at least 1; got {args.max_pairs}.")
    return (args.engine in ("dask", "spark") or args.chunk_rows is not None
            or Path(args.file).is_dir() or is_glob(args.file))


def _summary(args: argparse.Namespace, *, wrong: bool = False) -> Summary:
    """The score tables of a source read in chunks (``wrong``: as summarise's)."""
    options = {"loss": args.loss, "label": args.label, "prediction": args.prediction,
               "scores": args.scores, "is_ood": args.is_ood, "ood_score": args.ood_score,
               "pair_with": args.pair_with, "dropna": args.dropna}
    bar = _bar("read", args)
    summary = summarise(args.file, rows=args.chunk_rows or CHUNK_ROWS, options=options,
                        progress=bar, engine=args.engine, scheduler=args.scheduler,
                        wrong=wrong, max_pairs=args.max_pairs)
    bar.close()
    if summary.n_dropped:
        print(f"dropped {summary.n_dropped} row(s) with NaN or empty values.", file=sys.stderr)
    for note in summary.notes:  # as a whole file's
        print(note, file=sys.stderr)
    return summary


def _bar(label: str, args: argparse.Namespace) -> ProgressBar:
    return ProgressBar(label, show="never" if args.quiet else args.progress)


def _evaluate(args: argparse.Namespace) -> int:
    if _chunked(args):
        if args.bootstrap:
            raise _Fail("--bootstrap resamples the rows of one file; a source read in chunks "
                        "keeps only score tables.")
        if args.json:
            check_not_input(args.json, part_files(args.file))
            check_not_a_part(args.json, args.file)
        data: TableData | Summary = _summary(args)
        ev = evaluate(data, coverages=args.coverage, tpr=args.tpr, fpr=args.fpr,
                      search=args.search)
    else:
        if args.json:
            check_not_input(args.json, [args.file])
        data = _load(args)
        bar = _bar("evaluate", args)
        ev = evaluate(data, coverages=args.coverage, tpr=args.tpr, fpr=args.fpr,
                      n_bootstrap=args.bootstrap, random_state=args.random_state, progress=bar,
                      search=args.search, n_jobs=args.jobs)
        bar.close()
    print(f"{args.file}: {ev.n_id} ID rows, {ev.n_ood} OOD rows")
    print(ev.format_table())
    for line in inverted_warnings(data, ev):
        print(f"abstain evaluate: warning: {line}", file=sys.stderr)
    if args.json:
        write_text(args.json, ev.to_json() + "\n")
        print(f"wrote {args.json}")
    return 0


def _fit(args: argparse.Namespace) -> int:
    chunked = _chunked(args)
    check_not_input(args.output, part_files(args.file) if chunked else [args.file])
    if chunked:
        check_not_a_part(args.output, args.file)
    data: TableData | Summary = _summary(args) if chunked else _load(args)
    targets = {t.name: getattr(args, t.name) for t in rule_options()}
    rule = fit_rule(data, random_state=args.random_state, options=True, **targets)
    columns = rule_columns(rule, data)
    write_text(args.output, rule_to_json(rule, columns) + "\n")
    print(rule_summary(rule, columns))
    print(f"wrote {args.output}")
    for line in inverted_warnings(data, names=columns):
        print(f"abstain fit: warning: {line}", file=sys.stderr)
    return 0


def _apply(args: argparse.Namespace) -> int:
    if not args.column.strip():  # a column without a name no reader of the output takes
        raise _Fail(f"--column must name the new column; got {args.column!r}.")
    if args.column != args.column.strip():  # a header cell is read without its spaces
        raise _Fail(f"--column must not begin or end with spaces (a header is read without "
                    f"them); got {args.column!r}.")
    path = input_file(args.rule)
    check_not_input(args.output, [args.file, args.rule])
    rule, cols = load_rule(path)
    scores = args.scores or cols
    if not scores:
        raise _Fail("the rule file names no score column; give it with --score.")
    _check_chunk_rows(args.chunk_rows)
    # Only the columns that apply uses are read as numbers (and those of its summary where
    # a chunk has them); the others are copied as written and never refused.
    chunks = read_chunks(args.file, args.chunk_rows, scores)
    first = next(chunks, None)
    if first is None:  # a header alone
        _read(args.file, scores)  # refused with the whole file's words
    assert first is not None
    if args.column in first.columns and not args.overwrite_column:
        raise _Fail(f"{args.file} already has a column {args.column!r}; name the new column "
                    "with --column, or pass --overwrite-column to replace it.")
    applied = apply_chunks(rule, itertools.chain([first], chunks), scores, dropna=args.dropna,
                           where=args.file)
    if applied.n_dropped:
        print(f"left the accept cell empty on {applied.n_dropped} row(s) with NaN or empty "
              "scores.", file=sys.stderr)
    for note in applied.notes:
        print(note, file=sys.stderr)
    write_with_column(args.file, args.output, args.column, applied.cells, protect=[args.rule])
    scored = applied.cells[~np.isnan(applied.cells)]
    share = f" ({scored.mean():.2%})" if scored.size else ""
    print(f"accepted {int(scored.sum())} of {scored.size} rows{share}; wrote {args.output}")
    for line in applied.summary:
        print(line)
    return 0


def _report(args: argparse.Namespace) -> int:
    from .report import sample_warnings, write_report

    chunked = _chunked(args)
    if chunked and args.bootstrap:
        raise _Fail("--bootstrap resamples the rows of one file; a source read in chunks "
                    "keeps only score tables.")
    inputs = part_files(args.file) if chunked else [args.file]
    # every file read: the page and the PNGs must overwrite none of them
    protected = [*inputs, *([args.rule] if args.rule else [])]
    check_not_input(args.output, protected)
    if chunked:
        check_not_a_part(args.output, args.file)
    if Path(args.output).name.lower() in (".html", ".htm"):  # Path(".html").suffix is ""
        raise _Fail(f"-o must name a file before its extension; got {args.output!r} (write "
                    f"e.g. 'report.html').")
    if Path(args.output).suffix.lower() not in (".html", ".htm") and not writes_in_place(
            args.output):  # standard output, a FIFO or a device takes the page as it is
        raise _Fail(f"the report is an HTML page: -o must end in .html or .htm; got "
                    f"{args.output!r}.")
    if args.png:
        check_not_input(args.png, protected)
    rule, rule_cols = None, None
    if args.rule:
        rule, rule_cols = load_rule(input_file(args.rule))
    data: TableData | Summary
    if chunked:
        data = _summary(args, wrong=True)
        ev = evaluate(data, tpr=args.tpr, fpr=args.fpr, search=args.search)
    else:
        data = _load(args)
        bar = _bar("evaluate", args)
        ev = evaluate(data, tpr=args.tpr, fpr=args.fpr, n_bootstrap=args.bootstrap,
                      random_state=args.random_state, progress=bar, search=args.search,
                      n_jobs=args.jobs)
        bar.close()
    bar = _bar("report", args)
    command = "abstain " + shlex.join(args.argv)
    write_report(args.output, data, ev, fpr=args.fpr, title=args.title or f"abstain: {args.file}",
                 png_dir=args.png, progress=bar, protect=protected, rule=rule,
                 rule_columns=rule_cols, provenance={"command": command, "input": args.file,
                                                     "parts": inputs}, search=args.search,
                 n_jobs=args.jobs)
    bar.close()
    for warning in sample_warnings(data, ev):  # once the page is written
        print(f"abstain report: warning: {warning}", file=sys.stderr)
    print(f"wrote {args.output}" + (f" and PNGs in {args.png}" if args.png else ""))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    run(args.out, args.random_state)
    return 0


_COMMANDS: dict[str, Any] = {"evaluate": _evaluate, "fit": _fit, "apply": _apply,
                             "report": _report, "demo": _demo}


#: The options that name a file or folder to write, by their argparse destination.
_OUTPUTS = {"json": ("--json", "a file"), "output": ("-o", "a file"), "png": ("--png", "a folder")}


def _os_message(exc: OSError) -> str:
    """An ``OSError`` as one line that names the path and says what to do."""
    if exc.strerror is None:  # already phrased by the library
        return str(exc)
    if exc.filename is None:
        return f"{exc.strerror.lower()}; check the files named on the command line."
    return str(os_error(exc.filename, exc, "use"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 bad input, 2 bad usage,
    130 or 143 when interrupted by SIGINT or SIGTERM).

    SIGINT and SIGTERM are turned into :class:`~abstain.app.console.Interrupted` while
    the command runs (the previous handlers are put back when it returns): the command
    removes its temporary files, prints ``abstain <command>: interrupted`` and returns
    128 + the signal number.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    previous = handle_signals()
    try:
        with shown_streams():
            return _main(argv)
    except (Interrupted, KeyboardInterrupt) as exc:
        return interrupted(exc, argv)
    except Exception:  # an error that a signal caused, whatever its type, is the interrupt
        if (intr := pending()) is None:
            raise
        return interrupted(intr, argv)
    finally:
        restore_signals(previous)


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    args.argv = argv
    try:
        for dest, (flag, what) in _OUTPUTS.items():
            if getattr(args, dest, None) == "":
                raise _Fail(f"{flag} must name {what} to write; got an empty path ''.")
        # an output on standard output (--json /dev/stdout) gets it to itself: the command's
        # messages go to standard error, so that the output can be piped as it is; and an
        # output on standard error sends them to standard output
        streams = {standard_stream(p) for dest in _OUTPUTS if (p := getattr(args, dest, None))}
        with (contextlib.redirect_stdout(sys.stderr) if 1 in streams else
              contextlib.redirect_stderr(sys.stdout) if 2 in streams
              else contextlib.nullcontext()):
            return int(_COMMANDS[args.command](args))
    except BrokenPipeError:  # standard output closed by its reader: no message to give
        raise
    except OSError as exc:
        reraise_interrupt(exc)
        if exc.errno == errno.EPIPE and any(
                p and standard_stream(p) == 1 for p in (getattr(args, d, None) for d in _OUTPUTS)):
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)) from exc
        print(f"abstain {args.command}: error: {_os_message(exc)}", file=sys.stderr)
        return 1
    except (_Fail, ColumnError, InfeasibleTargetError, ValueError, ImportError) as exc:
        reraise_interrupt(exc)
        message = str(exc)
        if hasattr(args, "search"):  # the library's keyword, as this command's option
            message = re.sub(r"(?<![-\w])search='(\w+)'", r"--search \1", message)
        print(f"abstain {args.command}: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    console()
