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
   scores; baseline: the same call with every resample taken as rows (the path the command
   line ran before, still used for pairs).
3. ``abstain report --bootstrap B`` end to end on the same rows as a CSV file, once; and
   the cost per resample of a double-score pair (the rows, the exact envelope), measured at
   ``--pair-bootstrap`` resamples and scaled to ``B`` (the pairs' envelope search is the
   slow part; it is not changed here).

Run: ``python benchmarks/bench_bootstrap.py [--rows 2000] [--scores 30] [--bootstrap 200]``.
Writes benchmarks/results/bench_bootstrap.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import best_times, machine_line

from abstain.app import cli
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ood-rows", type=int, default=538)
    parser.add_argument("--ood-scores", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--scores", type=int, default=30)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--old-bootstrap", type=int, default=20,
                        help="resamples of the baseline in section 2 (scaled to --bootstrap)")
    parser.add_argument("--pair-bootstrap", type=int, default=2, help="at least 2")
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

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        header = ["loss", "is_ood", *cols]
        table = np.column_stack([losses, ood, *cols.values()])
        np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.6g")
        for boot in (0, b):
            start = time.perf_counter()
            rc = cli.main(["report", str(path), "--is-ood", "is_ood", "--bootstrap", str(boot),
                           "--quiet", "-o", str(Path(tmp) / "r.html")])
            report = time.perf_counter() - start
            assert rc == 0
            row = (f"| abstain report --bootstrap {boot}, {args.rows} rows x {args.scores} "
                   f"one-column scores | | {report:.1f} | | |")
            print(row)
            lines.append(row)
        pair = {"a": cols["s0"], "g": cols["s1"]}
        pdata = TableData(losses, pair, ood, 0, np.ones(args.rows, dtype=bool), ood_score="g")
        pb = args.pair_bootstrap
        start = time.perf_counter()
        app_evaluate.evaluate(pdata, n_bootstrap=pb, random_state=0)
        per = (time.perf_counter() - start) / pb
        row = (f"| one double-score pair (+ its 2 columns), {args.rows} rows, per resample "
               f"(B = {pb}) | {per:.2f} | {per:.2f} (rows: unchanged) | 1.0x | |")
        print(row)
        lines += [row, "",
                  f"Three pairs at B = {b} would add about {3 * per * b:.0f} s (scaled from "
                  f"B = {pb}): a pair's resample runs the exact envelope search on the drawn "
                  "rows, which these tables do not replace."]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
