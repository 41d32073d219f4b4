"""Bootstrap intervals from score tables resampled by counts, against the loop that sorts
the drawn rows of every resample.

Three sections, each against a baseline measured in the same run (interleaved calls,
``best_times``):

1. ``evaluate_ood(losses, is_ood, scores, n_bootstrap=B)`` on ``--ood-rows`` rows (30 % OOD,
   0/1 losses, 2-decimal scores) with ``--ood-scores`` one-column scores. Baseline (ratio
   1.00): the same intervals from ``bootstrap_interval`` over the drawn rows (every metric
   recomputed from ``losses[i], is_ood[i], s[i]``), the loop ``evaluate_ood`` ran before.
2. ``abstain.app.evaluate.evaluate(data, n_bootstrap=B)`` (what ``abstain evaluate`` and
   ``abstain report --bootstrap`` run) on ``--rows`` rows with ``--scores`` one-column
   scores, each column's resamples computed in blocks (``metric_replicates``); baseline:
   the same call with every resample taken as rows (the path the command line once ran,
   still used for pairs searched exactly).
3. ``abstain report --bootstrap B`` end to end on the same rows as a CSV file, run as a user
   runs it (``python -m abstain``, a process of its own, which keeps the memory it frees:
   ``keep_freed_memory``), once with ``--jobs 1`` and once with ``--jobs`` every usable
   core, without pairs and with three of the columns paired with a fourth
   (``--ood-score s3 --pair-with s0 --pair-with s1 --pair-with s2``: ``--scores`` columns
   and 3 pairs in one command); the cost per resample of a
   double-score pair (``evaluate`` at ``--pair-bootstrap`` resamples less ``B = 2``,
   interleaved, best of ``--repeats``): on its grid's kept orders (what ``"auto"`` takes
   with a bootstrap: the scaled grid, each direction sorted once) against the same scaled
   grid on the drawn rows (baseline, ratio 1.00) and the exact search on the drawn rows
   (the path of ``--search exact``); and the report with three pairs (``--ood-score``) at
   ``B = 0`` and ``B``, with ``--jobs 1`` and every core, beside the report of the same four
   columns without pairs: the difference is what the pairs add (their resamples and their
   curves). The report with three pairs runs once more with ``keep_freed_memory`` off (glibc's
   defaults): the baseline of that setting.

Run: ``python benchmarks/bench_bootstrap.py [--rows 2000] [--scores 30] [--bootstrap 200]``.
Writes benchmarks/results/bench_bootstrap.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import best_times, machine_line

from abstain._core.parallel import usable_cpus
from abstain.app import evaluate as app_evaluate
from abstain.app.data import Resampled
from abstain.app.tables import TableData
from abstain.metrics import bootstrap_interval, evaluate_ood
from abstain.metrics._ood_table import _applicable, _table

RESULTS = Path(__file__).parent / "results" / "bench_bootstrap.md"


def _data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    losses = np.where(ood, 0.0, (rng.random(n) < 0.2).astype(np.float64))
    scores = {f"s{j}": np.round(rng.normal(size=n) + ood + losses * (j % 3), 2)
              for j in range(k)}
    return losses, ood, scores


def _rows_loop(losses: np.ndarray, ood: np.ndarray, cols: dict[str, np.ndarray],
               b: int) -> object:
    n = ood.size
    app = _applicable([False] * len(cols), True)
    return bootstrap_interval(
        lambda i: _table([({"losses": losses[i], "is_ood": ood[i]}, s[i])
                          for s in cols.values()], app, 0.95, 0.05, "auto", 360)[0],
        ood, n_bootstrap=b, random_state=0,
        key=np.column_stack([losses, ood, *(s.reshape(n, -1) for s in cols.values())]))


def _app(data: TableData, b: int, rows: bool) -> object:
    """``evaluate`` with its bootstrap on score tables, or (``rows``) on the drawn rows: the
    command line's path before score tables."""
    real = Resampled.resamplers
    if rows:
        Resampled.resamplers = staticmethod(lambda src: {})  # type: ignore[method-assign]
    try:
        return app_evaluate.evaluate(data, n_bootstrap=b, random_state=0)
    finally:
        Resampled.resamplers = real  # type: ignore[method-assign]


def _pair_app(data: TableData, search: str, kept: bool, b: int) -> None:
    """``evaluate`` with ``b`` resamples, a pair's resamples on its grid's kept orders
    (``kept``) or on the drawn rows."""
    real = Resampled.pair_resamplers
    if not kept:
        Resampled.pair_resamplers = staticmethod(lambda *a, **k: {})  # type: ignore[method-assign]
    try:
        app_evaluate.evaluate(data, n_bootstrap=b, random_state=0, search=search)
    finally:
        Resampled.pair_resamplers = real  # type: ignore[method-assign]


#: The ``abstain`` command with ``keep_freed_memory`` turned off (its process and its
#: workers then run on glibc's defaults): the baseline of that setting.
_PLAIN = ("from abstain._core import parallel; parallel.keep_freed_memory = lambda: False; "
          "from abstain.app.console import console; console()")


def _command(argv: list[str], keep: bool = True) -> float:
    """Seconds that ``python -m abstain *argv`` takes, start to exit (it must succeed); with
    ``keep=False`` the command on glibc's defaults."""
    start = time.perf_counter()
    head = ["-m", "abstain"] if keep else ["-c", _PLAIN]
    subprocess.run([sys.executable, *head, *argv], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL,
                   env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ood-rows", type=int, default=538)
    parser.add_argument("--ood-scores", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--scores", type=int, default=30)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--old-bootstrap", type=int, default=20,
                        help="resamples of the baseline in section 2 (scaled to --bootstrap)")
    parser.add_argument("--pair-bootstrap", type=int, default=12, help="at least 3")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    machine = machine_line()
    print(machine)
    b = args.bootstrap
    lines = ["# Bootstrap intervals: resampled score tables vs the drawn rows", "", machine, "",
             "| work | baseline (rows) s | score tables s | speed-up | same intervals |",
             "|---|---|---|---|---|"]

    losses, ood, cols = _data(args.ood_rows, args.ood_scores)
    got: dict[str, object] = {}
    t = best_times({"rows": lambda: got.__setitem__("rows", _rows_loop(losses, ood, cols, b)),
                    "tables": lambda: got.__setitem__("tables", evaluate_ood(
                        losses, ood, cols, n_bootstrap=b, random_state=0))},
                   args.repeats)
    old, new = got["rows"], got["tables"]
    same = bool(np.allclose(old.low.reshape(new.low.shape), new.low, rtol=1e-12,  # type: ignore[attr-defined]
                            atol=0, equal_nan=True))
    row = (f"| evaluate_ood, {args.ood_rows} rows x {args.ood_scores} scores, B = {b} | "
           f"{t['rows']:.2f} | {t['tables']:.2f} | {t['rows'] / t['tables']:.1f}x | {same} |")
    print(row)
    lines.append(row)

    losses, ood, cols = _data(args.rows, args.scores)
    data = TableData(losses, cols, ood, 0, np.ones(args.rows, dtype=bool))
    ob = min(args.old_bootstrap, b)
    t = best_times({"point": lambda: _app(data, 0, False),
                    "rows": lambda: _app(data, ob, True),
                    "tables": lambda: _app(data, ob, False)}, args.repeats)
    per_rows = (t["rows"] - t["point"]) / ob
    per_tables = (t["tables"] - t["point"]) / ob
    a, c = _app(data, ob, True), _app(data, ob, False)
    same = all(np.allclose(a.intervals[k][m], c.intervals[k][m], rtol=1e-12, atol=0,  # type: ignore[attr-defined]
                           equal_nan=True) for k in a.intervals for m in a.intervals[k])  # type: ignore[attr-defined]
    row = (f"| app evaluate, {args.rows} rows x {args.scores} scores, per resample (B = {ob}, "
           f"less the {t['point']:.2f} s of B = 0) | {per_rows:.3f} | {per_tables:.3f} | "
           f"{per_rows / per_tables:.1f}x | {same} |")
    print(row)
    lines.append(row)
    start = time.perf_counter()
    _app(data, b, False)
    full = time.perf_counter() - start
    lines.append(f"| app evaluate, same, B = {b} (rows: B = 0 plus {b} resamples at the cost "
                 f"above) | {t['point'] + b * per_rows:.1f} (scaled) | {full:.1f} | "
                 f"{(t['point'] + b * per_rows) / full:.1f}x | |")
    print(lines[-1])

    cores = usable_cpus()
    jobs = sorted({1, cores})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        header = ["loss", "is_ood", *cols]
        table = np.column_stack([losses, ood, *cols.values()])
        np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.6g")
        report, paired = {}, {}
        # the same columns, three of them paired with a fourth (--pair-with): the goal's
        # command, 30 one-column scores and 3 pairs
        pairs = ["--ood-score", "s3", *(a for j in range(3) for a in ("--pair-with", f"s{j}"))]
        for boot in (0, b):
            for j in jobs:
                for what, extra, into in (("one-column scores", [], report),
                                          ("one-column scores and 3 pairs (--ood-score s3 "
                                           "--pair-with s0, s1, s2)", pairs, paired)):
                    into[boot, j] = _command(["report", str(path), "--is-ood", "is_ood",
                                              *extra, "--bootstrap", str(boot), "--jobs",
                                              str(j), "--quiet", "-o",
                                              str(Path(tmp) / "r.html")])
                    row = (f"| abstain report --bootstrap {boot} --jobs {j}, {args.rows} rows "
                           f"x {args.scores} {what} | | {into[boot, j]:.1f} | | |")
                    print(row)
                    lines.append(row)
        pair = {"a": cols["s0"], "g": cols["s1"]}
        pdata = TableData(losses, pair, ood, 0, np.ones(args.rows, dtype=bool), ood_score="g")
        sd = np.column_stack([pair["a"], pair["g"]]).std(axis=0)
        scaled = TableData(losses, {"a": pair["a"] / sd[0], "g": pair["g"] / sd[1]}, ood, 0,
                           np.ones(args.rows, dtype=bool), ood_score="g")
        pb = args.pair_bootstrap
        ways = {"exact": (pdata, "exact", False), "grid rows": (scaled, "grid", False),
                "grid kept": (pdata, "auto", True)}
        # less B = 2, not B = 0: with a bootstrap "auto" takes the scaled grid for the pair's
        # value too; every call interleaved with the others, the best of --repeats
        t = best_times({f"{name} {k}": (lambda w=w, k=k: _pair_app(*w, k))
                        for name, w in ways.items() for k in (2, pb)}, args.repeats)
        per = {name: (t[f"{name} {pb}"] - t[f"{name} 2"]) / (pb - 2) for name in ways}
        row = (f"| one double-score pair (+ its 2 columns), {args.rows} rows, per resample "
               f"(B = {pb}): exact search on the drawn rows (the path of --search exact) "
               f"{per['exact']:.3f} s; scaled grid on the drawn rows {per['grid rows']:.3f} s "
               f"| {per['grid rows']:.3f} | {per['grid kept']:.3f} (kept orders) | "
               f"{per['grid rows'] / per['grid kept']:.1f}x | |")
        print(row)
        lines.append(row)
        three = {f"s{j}": cols[f"s{j}"] for j in range(3)} | {"g": cols["s3"]}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "pairs.csv"
            np.savetxt(path, np.column_stack([losses, ood, *three.values()]), delimiter=",",
                       header=",".join(["loss", "is_ood", *three]), comments="", fmt="%.6g")
            out = ["--quiet", "-o", str(Path(tmp) / "r.html")]
            argv = ["report", str(path), "--is-ood", "is_ood", "--ood-score", "g",
                    *(a for j in range(3) for a in ("--score", f"s{j}")), *out]
            # the same four columns without pairs: what the pairs add is the difference
            alone = ["report", str(path), "--is-ood", "is_ood",
                     *(a for c in three for a in ("--score", c)), *out]
            took: dict[tuple[int, int], float] = {}
            single: dict[tuple[int, int], float] = {}
            for boot in (0, b):
                for j in jobs:
                    for what, cmd, into in (("4 one-column scores and 3 pairs (--ood-score)",
                                             argv, took),
                                            ("the same 4 one-column scores, no pair", alone,
                                             single)):
                        into[boot, j] = _command([*cmd, "--bootstrap", str(boot), "--jobs",
                                                  str(j)])
                        row = (f"| abstain report --bootstrap {boot} --jobs {j}, {args.rows} "
                               f"rows, {what} | | {into[boot, j]:.1f} | | |")
                        print(row)
                        lines.append(row)
            # the baseline of keep_freed_memory: the same command on glibc's defaults
            for j in jobs:
                plain = _command([*argv, "--bootstrap", str(b), "--jobs", str(j)], keep=False)
                row = (f"| abstain report --bootstrap {b} --jobs {j}, {args.rows} rows, 4 "
                       f"one-column scores and 3 pairs, on glibc's defaults (the command with "
                       f"`keep_freed_memory` off) | {plain:.1f} | {took[b, j]:.1f} | "
                       f"{plain / took[b, j]:.1f}x | |")
                print(row)
                lines.append(row)
        lines.append("")
        for j in jobs:
            lines.append(f"{args.scores} one-column scores and 3 pairs at B = {b}, --jobs {j}: "
                         f"{paired[b, j]:.1f} s, one command (goal: under 20 s); the pairs add "
                         f"{paired[b, j] - report[b, j]:.1f} s to the report of the same "
                         "columns without pairs.")
        lines.append(f"A pair's resample with `--search exact` costs {per['exact']:.2f} s (the "
                     f"exact search runs on the drawn rows): {3 * b * per['exact']:.0f} s for "
                     f"three pairs at B = {b} on one core. This machine has {cores} usable "
                     "cores.")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
