"""Exact evaluation and tuning beyond one array: ``abstain.distributed`` against the in-memory path.

The workload of issue 15: AuRC, AUGRC and a ``BoundedAbstention(0.8)`` fit on n rows of
scores with 0/1 losses, for three kinds of scores:

- ``fp16``: a softmax-like confidence stored in float16 (a few thousand distinct values);
- ``dec4``: scores rounded to 4 decimals (10,001 distinct values);
- ``fp32``: raw float32 scores (millions of distinct values at 1e8 rows).

The rows are generated block by block from a seed (the same blocks in both paths), so the
distributed path never holds them in one process. Baseline (ratio 1.00): the in-memory path
of the same library, ``aurc(losses, u)``, ``augrc(losses, u)``, ``BoundedAbstention.fit(u,
losses)`` on the concatenated NumPy arrays, run in its own process (its peak RSS is that
process's). Distributed: a ``LocalCluster`` of 2 worker processes with 1 thread each in a
fresh process; ``score_table`` (plan ``auto``: the tree, or the range plan beyond
``max_groups``) then the same three calls on the table. Reported: wall time, worker CPU
time, peak RSS of the driver and of each worker, groups, the plan, and whether every
number equals the in-memory one bit for bit.

Run: ``python benchmarks/bench_distributed.py [--sizes 1e6 1e7 1e8] [--kinds fp16 dec4 fp32]
[--no-memory-above 1e8]``. Writes benchmarks/results/bench_distributed.md (and a JSON of
the raw rows beside it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results" / "bench_distributed.md"
BLOCK = 2_000_000
MAX_GROUPS = 4_000_000


def block(i: int, rows: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of block ``i``: uncertainty (higher = worse) and 0/1 losses, from a fixed seed."""
    rng = np.random.default_rng([15, i])
    conf = rng.beta(8.0, 1.5, rows)  # a softmax-like confidence, mostly near 1
    loss = (rng.random(rows) > conf).astype(np.float64)
    if kind == "fp16":
        u = -conf.astype(np.float16).astype(np.float64)
    elif kind == "dec4":
        u = np.round(1.0 - conf, 4)
    else:
        u = (1.0 - conf).astype(np.float32).astype(np.float64)
    return u, loss


def _sizes(n: int) -> list[int]:
    return [min(BLOCK, n - s) for s in range(0, n, BLOCK)]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _results(table_or_rows: Any) -> dict[str, float]:
    from abstain import BoundedAbstention
    from abstain.metrics import augrc, aurc

    if isinstance(table_or_rows, tuple):
        u, loss = table_or_rows
        a, g = aurc(loss, u), augrc(loss, u)
        rule = BoundedAbstention(0.8).fit(u, loss)
    else:
        a, g = aurc(table_or_rows), augrc(table_or_rows)
        rule = BoundedAbstention(0.8).fit(table_or_rows)
    return {"aurc": a, "augrc": g, "threshold": rule.threshold_, "nu": rule.accept_prob_}


def in_memory(n: int, kind: str, out: Any) -> None:
    import abstain.metrics  # noqa: F401  (imported before the clock starts, as in the Dask path)

    start = time.perf_counter()
    cpu = time.process_time()
    parts = [block(i, r, kind) for i, r in enumerate(_sizes(n))]
    u = np.concatenate([p[0] for p in parts])
    loss = np.concatenate([p[1] for p in parts])
    del parts
    res = _results((u, loss))
    out.put({"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu,
             "peak": _peak_mib(), "groups": int(np.unique(u).size) if n <= 10**7 else None,
             **res})


def streamed(n: int, kind: str, out: Any) -> None:
    """The reference where the rows do not fit in memory: one process adds block after
    block to one table (``ScoreTable.update``), then the same three calls on it."""
    from abstain import ScoreTable

    start = time.perf_counter()
    table = ScoreTable()
    for i, r in enumerate(_sizes(n)):
        table.update(*block(i, r, kind))
    res = _results(table)
    out.put({"wall": time.perf_counter() - start, "peak": _peak_mib(),
             "groups": table.n_groups, **res})


def distributed(n: int, kind: str, out: Any) -> None:
    import dask
    import dask.array as da
    from dask.utils import key_split
    from distributed import Client, LocalCluster, get_task_stream

    from abstain.distributed import score_table

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", memory_limit="8GiB") as cluster, \
            Client(cluster) as client, get_task_stream(client) as stream:
        cpu0 = sum(client.run(time.process_time).values())
        start = time.perf_counter()
        sizes = _sizes(n)
        blocks = [dask.delayed(block, nout=2)(i, r, kind) for i, r in enumerate(sizes)]
        u = da.concatenate([da.from_delayed(b[0], (r,), np.float64)
                            for b, r in zip(blocks, sizes, strict=True)])
        loss = da.concatenate([da.from_delayed(b[1], (r,), np.float64)
                               for b, r in zip(blocks, sizes, strict=True)])
        table = score_table(u, loss, max_groups=MAX_GROUPS)
        built = time.perf_counter() - start
        res = _results(table)
        wall = time.perf_counter() - start
        cpu = sum(client.run(time.process_time).values()) - cpu0
        workers = client.run(_peak_mib)
    tasks: dict[str, float] = {}  # seconds of worker compute per kind of task
    for t in stream.data:
        for part in t["startstops"]:
            if part["action"] == "compute":
                name = key_split(t["key"])
                tasks[name] = tasks.get(name, 0.0) + part["stop"] - part["start"]
    out.put({"wall": wall, "build": built, "cpu": cpu, "peak": _peak_mib(),
             "worker_peak": max(workers.values()), "groups": table.n_groups,
             "tasks": tasks, "n_tasks": len(stream.data), **res})


def run(target: Any, n: int, kind: str) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(n, kind, q))
    p.start()
    res = q.get()
    p.join()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 1e8])
    ap.add_argument("--kinds", nargs="+", default=["fp16", "dec4", "fp32"])
    ap.add_argument("--no-memory-above", type=float, default=1e8,
                    help="skip the in-memory baseline above this many rows")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run both paths this many times, alternately, and keep the best wall "
                         "time of each (the cores are shared)")
    ap.add_argument("--stream", action="store_true",
                    help="above --no-memory-above, check the Dask result against one process "
                         "that streams the blocks into one table")
    ap.add_argument("--rewrite", action="store_true",
                    help="only rewrite the table from the JSON of the last run")
    args = ap.parse_args()
    raw = RESULTS.with_suffix(".json")
    # rows of earlier runs are kept unless this run measures the same size and kind again
    rows: list[dict[str, Any]] = json.loads(raw.read_text()) if raw.exists() else []
    if args.rewrite:
        write(rows)
        return
    for n in (int(s) for s in args.sizes):
        for kind in args.kinds:
            load = os.getloadavg()[0]
            mem, dis = None, None
            for _ in range(args.repeat):  # alternately; the best wall time of each path
                if n <= args.no_memory_above:
                    m = run(in_memory, n, kind)
                    mem = m if mem is None or m["wall"] < mem["wall"] else mem
                d = run(distributed, n, kind)
                dis = d if dis is None or d["wall"] < dis["wall"] else dis
            assert dis is not None
            ref = mem if mem is not None else (run(streamed, n, kind) if args.stream else None)
            same = None if ref is None else all(
                ref[k] == dis[k] for k in ("aurc", "augrc", "threshold", "nu"))
            row = {"n": n, "kind": kind, "memory": mem, "dask": dis, "exact": same,
                   "reference": None if ref is None else ("memory" if mem else "streamed"),
                   "repeat": args.repeat, "load": round(load, 1),
                   "streamed": None if mem is not None else ref,
                   "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            rows = [r for r in rows if (r["n"], r["kind"]) != (n, kind)] + [row]
            rows.sort(key=lambda r: (r["n"], ["fp16", "dec4", "fp32"].index(r["kind"])))
            raw.write_text(json.dumps(rows, indent=1))
            ratio = "" if mem is None else f" ratio {dis['wall'] / mem['wall']:.2f}"
            print(f"n={n:.0e} {kind}: dask {dis['wall']:.1f}s{ratio} exact={same} "
                  f"groups={dis['groups']}", flush=True)
    write(rows)


def _tasks(d: dict[str, Any]) -> str:
    """Worker compute seconds: generating the rows / per-partition tables / the rest."""
    if "tasks" not in d:
        return "-"
    t = d["tasks"]
    gen, reduce = t.get("block", 0.0), t.get("partition_table", 0.0)
    return f"{gen:.1f} / {reduce:.1f} / {sum(t.values()) - gen - reduce:.1f}"


def _when(r: dict[str, Any]) -> str:
    if "when" not in r:
        return "before the float16 path"
    best = f", best of {r['repeat']}" if r.get("repeat", 1) > 1 else ""
    load = f", load {r['load']}" if "load" in r else ""
    return f"{r['when']}{load}{best}"


def _exact(r: dict[str, Any]) -> str:
    if r["exact"] is None:
        return "-"
    return f"{r['exact']}" + (" (streamed)" if r.get("reference") == "streamed" else "")


def write(rows: list[dict[str, Any]]) -> None:
    import dask

    lines = [
        "# Exact evaluation beyond one array: abstain.distributed",
        "",
        "Workload: AuRC + AUGRC + `BoundedAbstention(0.8).fit` on n rows with 0/1 losses.",
        "Baseline (ratio 1.00): the in-memory path of this library on NumPy arrays, in its own",
        "process. Dask: `score_table` on a LocalCluster of 2 worker processes x 1 thread",
        f"(plan auto, max_groups={MAX_GROUPS:,}), then the same calls on the table. Rows are",
        f"generated in blocks of {BLOCK:,} from a seed, so no process of the Dask path holds",
        "them all. Peak = peak resident memory (MiB) of the process; `exact` = every number",
        "(AuRC, AUGRC, threshold, acceptance probability) equal to the in-memory one bit for bit",
        "(`streamed`: where the rows do not fit in memory, equal to one process that adds the",
        "blocks one after another to one `ScoreTable`). Worker tasks = seconds of worker compute",
        "(Dask's task stream) generating the rows / building the per-partition tables / the",
        "rest (merges, slices, summaries). Measured: when, the load average of the machine",
        "(1 minute) when the row started, and with `--repeat`, the best of that many runs.",
        "",
        f"Machine: {platform.machine()}, 2 cores **shared with other jobs** (timings are noisy;",
        f"compare ratios), Python {platform.python_version()}, NumPy {np.__version__}, "
        f"Dask {dask.__version__}.",
        "",
        "| rows | scores | groups | in-memory s | in-memory CPU s | in-memory peak | dask s "
        "| ratio | dask worker CPU s | worker tasks s | driver peak | worker peak | exact "
        "| measured |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for r in rows:
        m, d = r["memory"], r["dask"]
        lines.append(
            f"| {r['n']:.0e} | {r['kind']} | {d['groups']:,} | "
            + ("not run | - | not run | " if m is None
               else f"{m['wall']:.1f} | {m['cpu']:.1f} | {m['peak']:,.0f} | ")
            + f"{d['wall']:.1f} | "
            + ("- | " if m is None else f"{d['wall'] / m['wall']:.2f} | ")
            + f"{d['cpu']:.1f} | {_tasks(d)} | {d['peak']:,.0f} | {d['worker_peak']:,.0f} | "
            + f"{_exact(r)} | {_when(r)} |")
    streamed = [r for r in rows if r.get("streamed")]
    if streamed:
        lines += ["", "Streamed reference (one process, `ScoreTable.update` block by block):", "",
                  "| rows | scores | s | peak MiB |", "|---:|---|---:|---:|"]
        lines += [f"| {r['n']:.0e} | {r['kind']} | {r['streamed']['wall']:.1f} | "
                  f"{r['streamed']['peak']:,.0f} |" for r in streamed]
    lines += ["", "Notes:", ""] + NOTES
    RESULTS.write_text("\n".join(lines) + "\n")


# Written from the measured rows above (kept by hand with the table).
NOTES = [
    "- In-memory s and dask s both include generating the rows (the same seeded blocks); the",
    "  in-memory path generates them on one core, the Dask path on two workers.",
    "- **Scores that are all float16 numbers** (fp16) are grouped in O(n) by counting their",
    "  bit patterns, in the arrays and in the tables alike (`_core/groups.group_totals`). This",
    "  made the in-memory baseline itself much faster at 1e8 fp16 rows (156.9 s in the earlier",
    "  run, under an unrecorded load; 13.1 s of 13.1 s CPU now): its AuRC, AUGRC and fit no",
    "  longer sort 1e8 scores three times (about 23 s of CPU each, from 4.2 s per 2e7 here).",
    "- **Profile of the Dask fp16 path before the change** (1e8 rows, 160.5 s, 49 s of worker",
    "  CPU): every block of rows was generated twice, once for the scores' partition and once",
    "  for the losses' (`to_delayed()` optimised each column's graph apart, inlining the shared",
    "  block into both), and each partition table sorted its 2e6 scores. Both are gone: the",
    "  partitions are read unoptimised (one task per block serves both columns) and the",
    "  partition tables use the float16 grouping. Worker tasks at 1e8 fp16 now: generating the",
    "  rows 7.3 s, the partition tables 2.6 s, merges 0.02 s.",
    "- **At 1e8 rows the Dask path was faster than the in-memory one for all three kinds**",
    "  when the machine's other jobs left the two cores mostly free (load average 1.0 to 2.0",
    "  when the rows started): fp16 0.52 and dec4 0.20 (best of 2 alternate runs each), fp32",
    "  0.92 (one run; the range plan's merges and the 3.8 GiB table on the driver dominate).",
    "  Under heavier sharing it is not: earlier in this session, at load averages 3.5 to 9,",
    "  fp16 measured 2.21 (one run) and 1.06 (best of 3; 13.8 s of worker CPU against 14.4 s of",
    "  in-memory CPU, the workers getting about one core between them). The Dask path does no",
    "  more work than the in-memory one (worker CPU / in-memory CPU at 1e8: 0.89 fp16, 0.34",
    "  dec4, 0.68 fp32), so it wins exactly when it gets its second core.",
    "- **1e9 rows**, generated lazily per partition (500 blocks): the table equals the one",
    "  streamed through a single process bit for bit (`exact` = True (streamed)). Both rows ran",
    "  while other jobs loaded the machine (load average 5.5 at the start of fp16, about 7",
    "  during dec4), and there the Dask path took longer than one process streaming the",
    "  blocks into one table: fp16 133 s against 88.5 s (its workers used 109 s of CPU, about",
    "  1.2 times the single process, and got about 0.8 of a core between them), dec4 537 s",
    "  against 268 s. fp32 at 1e9 was not run: its table (hundreds of millions of groups)",
    "  would not fit the driver; use `ScoreTable.binned` for it.",
    "- Driver memory does not follow the rows: about 130 MiB for quantised scores from 1e6 to",
    "  1e8 rows; at 1e9 it was 266 MiB, the task graph and scheduler state of 10 times more",
    "  partitions (4,572 tasks; it follows the number of partitions, not of rows). For raw fp32",
    "  scores the table itself is large (37 million groups at 1e8 rows, about 3.8 GiB).",
    "- Below 1e7 rows the cluster's task overhead makes it slower than the arrays.",
    "- A Spark DataFrame adapter is not provided (pyspark is not installed here), so no Spark",
    "  timing.",
    "- Commands: `python benchmarks/bench_distributed.py --sizes 1e6 1e7`, `--sizes 1e8 --kinds",
    "  fp16 dec4 --repeat 2`, `--sizes 1e8 --kinds fp32`, `--sizes 1e9 --kinds fp16 dec4",
    "  --stream` (dec4 at 1e9 from an earlier run of the same code, fp16 re-run); each run",
    "  keeps the rows of the others in the JSON beside this file.",
]


if __name__ == "__main__":
    main()
