"""Rerun the deterministic, affordable benchmarks and compare their tables with benchmarks/results.

A refactoring must not change a number: this script reruns every benchmark whose table does
not depend on the machine and that takes at most about a minute on 2 cores, writes into a
temporary folder, and compares with the stored files. It prints one line per file of
``benchmarks/results``:

- ``identical``: byte for byte, or, for a table that holds timings beside its values, every
  value column (the timing columns named on the line are left out, and so are the lines of
  prose around the tables, which state the machine's load; what is compared is each
  Markdown table row ``| ... |`` in order);
- ``differs``: with the first line that differs;
- ``skipped``: not rerun, with the reason (timings only, data downloads, an hour of training).

The benchmark scripts are copied into the temporary folder and run there, against the
library in this checkout's ``src``; the stored results are never written. Exit status 1 when
a table differs. About 4 to 5 minutes on 2 shared cores (``--only`` runs some of them).

Run: ``python benchmarks/regenerate_check.py [--only table1_synthetic bench_ltt_start ...]
[--keep DIR]`` or ``make bench-check``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SRC = HERE.parent / "src"


class Run(NamedTuple):
    """One benchmark command and the files of ``results`` it writes."""

    script: str
    args: tuple[str, ...]
    files: tuple[str, ...]
    # column headers of timings (machine-dependent): compared without them, row by row
    timing_columns: tuple[str, ...] = ()
    # the rerun covers only some rows of the stored table (a cheaper subset of its sizes):
    # each rerun row must stand in the stored table under the same header
    rows_subset: bool = False
    # compare the table rows only, even without timing columns (said on the line)
    tables_only: str = ""
    out_option: bool = False  # the script takes --out (else it writes beside itself)


RUNS: tuple[Run, ...] = (
    Run("table1_synthetic.py", (), ("table1_synthetic.md", "figure1_synthetic.png")),
    Run("table1_synthetic.py", ("--ood-scale", "std", "--n", "50000", "--h", "0.01"),
        ("table1_synthetic_std.md", "figure1_synthetic_std.png"),
        tables_only="the stored table predates the section 'Why the selective risks differ' "
                    "and its line 'Produced by' omits --n 50000 --h 0.01"),
    Run("bench_ltt_start.py", (), ("bench_ltt_start.md",), out_option=True),
    Run("fingerprints.py", (), ("fingerprints.md",), out_option=True),
    Run("bench_guarantees.py", ("--crc-only", "--crc-draws", "1000"),
        ("bench_guarantees_crc.md",), timing_columns=("us per fit",), out_option=True),
    Run("bench_exact_order.py", (), ("bench_exact_order.md",),
        timing_columns=("baseline (s)", "exact (s)", "ratio exact / baseline")),
    Run("bench_ood_table.py", ("--sizes", "1000", "2000", "5000"), ("bench_ood_table.md",),
        timing_columns=("s", "/ grid", "grid s", "exact s", "exact / grid"), rows_subset=True),
)

SKIPPED = {
    "bench_combine.md": "timings only",
    "bench_table_update.md": "timings (its equality column is tests/tables)",
    "bench_detectors.md": "timings only (and peers in their own environment)",
    "bench_detectors_avx512.md": "timings only, on a 16-core CPU with AVX-512",
    "bench_detectors_avx512_2core.md": "timings only, on a 2-core CPU with AVX-512",
    "bench_metrics.md": "timings only",
    "bench_metrics_avx512.md": "timings only, on a CPU with AVX-512",
    "bench_metrics_avx512_2core.md": "timings only, on a 2-core CPU with AVX-512",
    "bench_bootstrap.md": "timings (its equality column is tests/metrics/test_bootstrap_tables.py)",
    "bench_pairs_exact.md": "timings (its unit check is tests/metrics/test_ood_unit_free.py)",
    "bench_pairs_clustered.md": "timings (its values are checked equal to the full sweep's in "
                                "the run, and by tests/_ood_search)",
    "bench_ordinal.md": "timings, and a duality gap that depends on the BLAS",
    "bench_scores.md": "timings, and fits that depend on the BLAS",
    "bench_ood.md": "timings; its value columns need fits of up to 100,000 rows (minutes)",
    "bench_ood_gauss.md": "timings; written by bench_ood.py with fits of 10,000+ rows",
    "bench_distributed.md": "timings and memory; needs dask and 1e8 rows",
    "bench_distributed.json": "timings and memory; needs dask and 1e8 rows",
    "bench_pairs_report.md": "timings and memory; needs dask and millions of rows",
    "bench_pairs_report.json": "timings and memory; needs dask and millions of rows",
    "bench_guarantees.md": "needs MAPIE (make bench-guarantees) and a timing column",
    "paper1_classification.md": "needs the datasets (make data) and hours on 2 cores",
    "paper1_ordinal.md": "needs the datasets (make data) and hours on 2 cores",
    "paper1_raw_all.json": "needs the datasets (make data) and hours on 2 cores",
    "table2_ood.md": "needs the image sets (make data-ood), PyTorch and 30 min of training",
    "table2_ood_raw.json": "needs the image sets (make data-ood), PyTorch and 30 min of training",
    "combine_ood_dataset.md": "needs the image sets (make data-ood), PyTorch and 70 min",
    "combine_ood_dataset_raw.json": "needs the image sets (make data-ood), PyTorch and 70 min",
    "combine_ood_loco.md": "needs the image sets (make data-ood), PyTorch and 70 min",
    "combine_ood_loco_raw.json": "needs the image sets (make data-ood), PyTorch and 70 min",
    "bench_spark.md": "timings; needs Java and pyspark (make test-spark)",
    "combine_safe.md": "needs the datasets (make data), the image sets (make data-ood) and "
                       "40 min",
    "combine_safe_raw.json": "needs the datasets (make data), the image sets (make data-ood) "
                             "and 40 min",
    "csi_ood.md": "needs the image sets (make data-ood), PyTorch and two contrastive "
                  "networks' training",
    "csi_ood_raw.json": "needs the image sets (make data-ood), PyTorch and two contrastive "
                        "networks' training",
    "csi_ood_loco.md": "needs the image sets (make data-ood), PyTorch and twenty contrastive "
                       "networks' training",
    "csi_ood_loco_raw.json": "needs the image sets (make data-ood), PyTorch and twenty "
                             "contrastive networks' training",
}
SKIPPED_PREFIXES = {"paper1_": "a figure of paper1_scores.py: needs the datasets (make data)"}


class Table(NamedTuple):
    """A Markdown table: its header cells and its rows (lists of cells)."""

    header: list[str]
    rows: list[list[str]]


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row ``| a | b |``, stripped."""
    return [c.strip() for c in line.strip()[1:-1].split("|")]


def tables(text: str) -> list[Table]:
    """The Markdown tables of ``text`` in order (a header row, a ``|---|`` row, rows)."""
    out: list[Table] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            table = Table(cells(lines[i]), [])
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                table.rows.append(cells(lines[i]))
                i += 1
            out.append(table)
        else:
            i += 1
    return out


def values(table: Table, timing_columns: Sequence[str]) -> Table:
    """``table`` without its timing columns."""
    keep = [j for j, h in enumerate(table.header) if h not in timing_columns]
    return Table([table.header[j] for j in keep],
                 [[row[j] for j in keep if j < len(row)] for row in table.rows])


def compare_tables(new: str, old: str, timing_columns: Sequence[str],
                   rows_subset: bool) -> str | None:
    """None when the value columns of every table agree, else the first difference."""
    got, want = tables(new), tables(old)
    if not want:
        return "the stored file holds no table"
    if len(got) != len(want):
        return f"{len(got)} table(s) against {len(want)} stored"
    for k, (g, w) in enumerate(zip(got, want, strict=True), 1):
        g, w = values(g, timing_columns), values(w, timing_columns)
        if g.header != w.header:
            return f"table {k}: header {g.header} against {w.header}"
        if rows_subset:
            for row in g.rows:
                if row not in w.rows:
                    return f"table {k}: row {' | '.join(row)} is not in the stored table"
        elif g.rows != w.rows:
            for row_g, row_w in zip(g.rows, w.rows, strict=False):
                if row_g != row_w:
                    return (f"table {k}: row {' | '.join(row_g)} against stored "
                            f"{' | '.join(row_w)}")
            return f"table {k}: {len(g.rows)} row(s) against {len(w.rows)} stored"
    return None


def first_line_difference(new: bytes, old: bytes) -> str:
    """Where two files first differ, for the report line."""
    a, b = new.decode(errors="replace").splitlines(), old.decode(errors="replace").splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            return f"line {i}: {x[:80]!r} against stored {y[:80]!r}"
    return f"{len(a)} line(s) against {len(b)} stored"


def check(run: Run, name: str, new_path: Path) -> tuple[str, str]:
    """``(status, detail)`` of one regenerated file against the stored one."""
    old_path = RESULTS / name
    if not new_path.is_file():
        return "differs", "the benchmark did not write it"
    new, old = new_path.read_bytes(), old_path.read_bytes()
    if not name.endswith(".md") or not (run.timing_columns or run.tables_only):
        if new == old:
            return "identical", "byte for byte"
        return "differs", first_line_difference(new, old)
    diff = compare_tables(new.decode(), old.decode(), run.timing_columns, run.rows_subset)
    how = ["value columns of every table row"]
    if run.timing_columns:
        how.append("timing columns left out: " + ", ".join(repr(c) for c in run.timing_columns))
    if run.rows_subset:
        how.append("the rows of the sizes " + " ".join(run.args[1:]) + " only")
    if run.tables_only:
        how.append(run.tables_only)
    if diff is None:
        return "identical", "; ".join(how)
    return "differs", diff + " (" + "; ".join(how) + ")"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    choices=sorted({r.script[:-3] for r in RUNS}),
                    help="run only these benchmarks (script names without .py)")
    ap.add_argument("--keep", type=Path, help="write the regenerated files here and keep them")
    args = ap.parse_args(argv)
    runs = [r for r in RUNS if not args.only or r.script[:-3] in args.only]
    covered = {name for r in RUNS for name in r.files}
    work = args.keep if args.keep is not None else Path(tempfile.mkdtemp(prefix="abstain-bench-"))
    bench = work / "benchmarks"
    bench.mkdir(parents=True, exist_ok=True)
    for script in HERE.glob("*.py"):
        shutil.copy2(script, bench / script.name)
    out = bench / "results"  # where the copied scripts write (beside themselves)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    status = 0
    start = time.perf_counter()
    try:
        for run in runs:
            cmd = [sys.executable, str(bench / run.script), *run.args]
            if run.out_option:
                cmd += ["--out", str(out)]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
            sec = time.perf_counter() - t0
            if proc.returncode != 0:
                status = 1
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
                for name in run.files:
                    print(f"differs    {name}: {run.script} failed ({'; '.join(tail)})")
                continue
            for name in run.files:
                verdict, detail = check(run, name, out / name)
                status |= verdict == "differs"
                print(f"{verdict:<10} {name}: {detail} ({run.script}, {sec:.0f} s)", flush=True)
        for path in sorted(RESULTS.iterdir()):
            name = path.name
            if name in covered:
                if not any(name in r.files for r in runs):
                    print(f"{'skipped':<10} {name}: not in --only")
                continue
            reason = SKIPPED.get(name) or next(
                (why for p, why in SKIPPED_PREFIXES.items() if name.startswith(p)),
                "not a table of a deterministic, affordable benchmark")
            print(f"{'skipped':<10} {name}: {reason}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.perf_counter() - start:.0f} s")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
