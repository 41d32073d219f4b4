"""Tables built batch by batch: ``ScoreTable.update`` and ``PairTable.update`` on a stream.

A stream of n rows in batches of ``--batch`` rows (continuous scores, so about one group per
row, and 0/1 losses) is added to one table with ``update``. Baselines measured in the same
run: ``from_arrays`` on the concatenated rows (one sort; ratio 1.00), and a merge of the whole
table with each batch (``ScoreTable.merge(table, batch)``, what ``update`` did before it kept
pending parts: O(n^2 / batch)), timed up to ``--merge-max`` rows. Each table built is checked
equal to the one of the concatenated rows (0/1 losses: exact sums).

Run: ``python benchmarks/bench_table_update.py [--sizes 100000 300000 1000000] [--batch 1000]
[--merge-max 300000]``. Writes benchmarks/results/bench_table_update.md.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _timing import machine_line

from abstain import PairTable, ScoreTable

RESULTS = Path(__file__).parent / "results" / "bench_table_update.md"


def _rows(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    s = rng.random((n, 2))
    return s, (rng.random(n) < 0.2).astype(np.float64), rng.random(n) < 0.3


def _timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def run(n: int, batch: int, merge_max: int) -> dict[str, Any]:
    s, loss, ood = _rows(n)
    u = s[:, 0]
    cuts = range(0, n, batch)

    def score_update() -> ScoreTable:
        t = ScoreTable()
        for i in cuts:
            t.update(u[i : i + batch], loss[i : i + batch])
        t.counts  # noqa: B018 - reading a field merges the pending parts
        return t

    def score_merge() -> ScoreTable:
        t = ScoreTable()
        for i in cuts:
            t = ScoreTable.merge(t, ScoreTable.from_arrays(u[i : i + batch], loss[i : i + batch]))
        return t

    def pair_update() -> PairTable:
        t = PairTable()
        for i in cuts:
            t.update(s[i : i + batch], loss[i : i + batch], is_ood=ood[i : i + batch])
        t.counts  # noqa: B018
        return t

    def pair_merge() -> PairTable:
        t = PairTable()
        for i in cuts:
            t = PairTable.merge(t, PairTable.from_arrays(s[i : i + batch], loss[i : i + batch],
                                                        is_ood=ood[i : i + batch]))
        return t

    row: dict[str, Any] = {"n": n}
    for kind, whole, update, merge in (
            ("ScoreTable", lambda: ScoreTable.from_arrays(u, loss), score_update, score_merge),
            ("PairTable", lambda: PairTable.from_arrays(s, loss, is_ood=ood), pair_update,
             pair_merge)):
        t_whole, ref = _timed(whole)
        t_update, got = _timed(update)
        t_merge = _timed(merge)[0] if n <= merge_max else None
        row[kind] = {"whole": t_whole, "update": t_update, "merge": t_merge,
                     "equal": bool(got == ref)}
        merged = "-" if t_merge is None else f"{t_merge:.2f} s"
        print(f"{kind:10s} n={n:>9,}  from_arrays {t_whole:.3f} s  update {t_update:.2f} s  "
              f"merge per batch {merged}  equal {got == ref}", flush=True)
    return row


def write(rows: list[dict[str, Any]], args: argparse.Namespace, machine: str) -> None:
    lines = ["# Tables built batch by batch: `update` against one build and a merge per batch",
             "", f"{machine}; Python {platform.python_version()}", "",
             f"`python benchmarks/bench_table_update.py --sizes "
             f"{' '.join(str(r['n']) for r in rows)} --batch {args.batch} --merge-max "
             f"{args.merge_max}`. Continuous scores (about one group per row), 0/1 losses, "
             f"batches of {args.batch:,} rows; one run each. Ratios against `from_arrays` on "
             "the concatenated rows in the same run. `merge per batch`: the whole table merged "
             "with each batch, what `update` did before it kept pending parts (`-`: not timed, "
             "above `--merge-max`). `equal`: the table built by `update` equals the one of the "
             "rows.", "",
             "| table | rows | from_arrays | update | merge per batch | equal |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        for kind in ("ScoreTable", "PairTable"):
            d = r[kind]
            merged = "-" if d["merge"] is None else (
                f"{d['merge']:.2f} s ({d['merge'] / d['whole']:.1f}x)")
            lines.append(f"| {kind} | {r['n']:,} | {d['whole']:.3f} s (1.00x) | "
                         f"{d['update']:.2f} s ({d['update'] / d['whole']:.1f}x) | {merged} | "
                         f"{d['equal']} |")
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--merge-max", type=int, default=300_000)
    args = ap.parse_args()
    machine = machine_line()
    print(machine)
    rows = [run(n, args.batch, args.merge_max) for n in args.sizes]
    write(rows, args, machine)


if __name__ == "__main__":
    main()
