"""Two-score tables and reports of sources read in chunks, against the rows in memory.

Two sections, each against a baseline measured in the same run:

1. **PairTable** (``abstain.PairTable``, ``abstain.distributed.pair_table``): a
   ``BoundedTPRFPR(tpr=0.8, fpr=0.4)`` double-score fit (grid search, 360 directions) on n
   rows with 20 % OOD rows and 0/1 losses, for three kinds of score pairs: 2 x 1 decimals,
   3 x 2 decimals and raw float64. Baseline (ratio 1.00): the fit on the rows. Measured:
   building the table from 8 parts merged in this process, building it on a 2-worker
   ``LocalCluster`` with ``pair_table`` (8 partitions), the fit on the table, and whether the
   fitted rule (weights, threshold, acceptance probability, TPR, FPR, risk) is identical.
2. **report** (``abstain report``): the HTML page of a file of 4-decimal risk and 2-decimal
   distance scores with 20 % OOD rows read in memory (baseline), and of the same rows as 8
   Parquet parts read in chunks of 250,000 rows, plus 4 times the rows as parts. Each command
   runs in its own process (its peak resident memory, VmHWM); the metrics
   tables of the page of the whole file and of its parts are compared as text.

Run: ``python benchmarks/bench_pairs_report.py [--rows 1e6] [--report-rows 2e6]
[--skip-pairs] [--skip-report]``. Writes benchmarks/results/bench_pairs_report.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results" / "bench_pairs_report.md"
KINDS: dict[str, tuple[int | None, int | None]] = {
    "2 x 1 decimals": (2, 1), "3 x 2 decimals": (3, 2), "raw float64": (None, None)}


def pair_rows(n: int, kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two scores (higher = more OOD / more uncertain), OOD marks and 0/1 losses."""
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.2
    risk = rng.beta(2.0, 5.0, n)
    dist = rng.normal(1.5 * ood, 1.0)
    losses = np.where(ood, np.nan, (rng.random(n) < risk).astype(float))
    a, b = KINDS[kind]
    if a is not None and b is not None:
        risk, dist = np.round(risk, a), np.round(dist, b)
    return np.stack([risk, dist], axis=1), ood, losses


def _rule(rule: Any) -> tuple[Any, ...]:
    return (tuple(rule.weights_), rule.threshold_, rule.accept_prob_, rule.tpr_, rule.fpr_,
            rule.risk_)


def pairs(n: int, kind: str) -> dict[str, Any]:
    import dask.array as da
    from distributed import Client, LocalCluster

    from abstain import PairTable
    from abstain.distributed import pair_table
    from abstain.models import BoundedTPRFPR

    s, ood, losses = pair_rows(n, kind)
    t = time.perf_counter()
    on_rows = BoundedTPRFPR(tpr=0.8, fpr=0.4).fit(s, ood, losses)
    rows_s = time.perf_counter() - t
    t = time.perf_counter()
    parts = np.array_split(np.arange(n), 8)
    table = PairTable.merge(*(PairTable.from_arrays(s[i], losses[i], is_ood=ood[i])
                              for i in parts))
    build_s = time.perf_counter() - t
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        chunks = n // 8 + 1
        t = time.perf_counter()
        on_dask = pair_table(da.from_array(s, chunks=(chunks, 2)),
                             da.from_array(losses, chunks=chunks),
                             is_ood=da.from_array(ood, chunks=chunks), max_pairs=2 * n)
        dask_s = time.perf_counter() - t
    t = time.perf_counter()
    on_table = BoundedTPRFPR(tpr=0.8, fpr=0.4).fit(table)
    fit_s = time.perf_counter() - t
    return {"n": n, "kind": kind, "pairs": table.n_pairs, "rows_s": rows_s, "build_s": build_s,
            "dask_s": dask_s, "fit_s": fit_s, "same_table": on_dask == table,
            "identical": _rule(on_rows) == _rule(on_table)}


def _write_report_data(folder: Path, n: int, parts: int, whole: bool) -> None:
    from abstain.app.io import write_table

    rng = np.random.default_rng(15)
    ood = rng.random(n) < 0.2
    risk = np.round(rng.beta(2.0, 5.0, n), 4)
    cols = {"risk": risk, "distance": np.round(rng.normal(1.5 * ood, 1.0), 2),
            "loss": np.where(ood, np.nan, (rng.random(n) < risk).astype(float)),
            "is_ood": ood.astype(float)}
    if whole:
        write_table(folder / "all.parquet", cols)
    (folder / "parts").mkdir()
    for i, idx in enumerate(np.array_split(np.arange(n), parts)):
        write_table(folder / "parts" / f"part-{i}.parquet", {k: v[idx] for k, v in cols.items()})


def _cli(args: list[str], out: Any) -> None:
    from abstain.app.cli import main

    start = time.perf_counter()
    code = main(args)
    out.put({"code": code, "wall": time.perf_counter() - start, "peak": _peak_mib()})


def _peak_mib() -> float:
    """Peak resident memory of this process since it started (VmHWM). Not ru_maxrss: that
    keeps the parent's peak through fork and exec, and the parent held the data."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _run_cli(args: list[str]) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_cli, args=(args, q))
    p.start()
    res = q.get()
    p.join()
    return res


def _metrics(page: str) -> str:
    return page[page.index("<h2>Metrics"):page.index("<h2>Curves")]


def reports(sizes: list[int]) -> list[dict[str, Any]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, n in enumerate(sizes):
            folder = Path(tmp) / str(n)
            folder.mkdir()
            _write_report_data(folder, n, 8, whole=k == 0)
            runs = [("8 parts, chunks of 250,000", folder / "parts", ["--chunk-rows", "250000"])]
            if k == 0:
                runs.insert(0, ("one file (rows in memory)", folder / "all.parquet", []))
            pages: dict[str, str] = {}
            for what, source, extra in runs:
                html = folder / f"{len(pages)}.html"
                res = _run_cli(["report", str(source), "-o", str(html), "--quiet", *extra])
                assert res["code"] == 0, (what, res)
                pages[what] = html.read_text()
                out.append({"n": n, "source": what, **res})
            if k == 0:
                same = len({_metrics(p) for p in pages.values()}) == 1
                for r in out:
                    r["same_metrics"] = same
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=1e6)
    ap.add_argument("--report-rows", type=float, default=2e6)
    ap.add_argument("--skip-pairs", action="store_true")
    ap.add_argument("--skip-report", action="store_true")
    args = ap.parse_args()
    raw = RESULTS.with_suffix(".json")
    done: dict[str, Any] = json.loads(raw.read_text()) if raw.exists() else {}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = [round(x, 1) for x in os.getloadavg()]
    if not args.skip_pairs:
        done["pairs"] = []
        for kind in KINDS:
            r = pairs(int(args.rows), kind)
            done["pairs"].append(r)
            print(f"{kind}: {r['pairs']:,} pairs, rows {r['rows_s']:.1f}s, table fit "
                  f"{r['fit_s']:.1f}s, identical={r['identical']}", flush=True)
        done["pairs_when"] = f"{when}, load average at start {load}"
    if not args.skip_report:
        n = int(args.report_rows)
        done["report"] = reports([n, 4 * n])
        for r in done["report"]:
            print(f"{r['n']:.0e} {r['source']}: {r['wall']:.1f}s {r['peak']:.0f} MiB", flush=True)
        done["report_when"] = f"{when}, load average at start {load}"
    raw.write_text(json.dumps(done, indent=1))
    write(done)


def write(done: dict[str, Any]) -> None:
    lines = [
        "# Two-score tables and reports read in chunks",
        "",
        f"Machine: {platform.machine()}, 2 cores **shared with other jobs** (timings are noisy;",
        f"compare ratios), Python {platform.python_version()}, NumPy {np.__version__}.",
        "Command: `python benchmarks/bench_pairs_report.py` (see its docstring).",
    ]
    if "pairs" in done:
        lines += [
            "",
            "## PairTable: a double-score fit on the table of distinct pairs",
            "",
            "`BoundedTPRFPR(tpr=0.8, fpr=0.4)` (grid, 360 directions) on "
            f"{done['pairs'][0]['n']:,} rows, 20 % OOD, 0/1 losses. Baseline (ratio 1.00): "
            "the fit on the rows. Table: 8 parts merged in this process; Dask: "
            "`pair_table` on a LocalCluster of 2 processes (8 partitions; the same table: "
            "`dask = table`). Ratio = (build + fit on the table) / fit on the rows. "
            f"Measured {done['pairs_when']}.",
            "",
            "| scores | pairs | fit on rows s | build table s | Dask pair_table s | fit on table s "
            "| ratio | dask = table | rule identical |",
            "|---|---:|---:|---:|---:|---:|---:|---|---|",
        ]
        for r in done["pairs"]:
            ratio = (r["build_s"] + r["fit_s"]) / r["rows_s"]
            lines.append(f"| {r['kind']} | {r['pairs']:,} | {r['rows_s']:.1f} | "
                         f"{r['build_s']:.2f} | {r['dask_s']:.2f} | {r['fit_s']:.2f} | "
                         f"{ratio:.3f} | {r['same_table']} | {r['identical']} |")
    if "report" in done:
        lines += [
            "",
            "## `abstain report` on a source read in chunks",
            "",
            "4-decimal risk and 2-decimal distance scores, 20 % OOD rows, 0/1 losses, Parquet. "
            "Baseline: the page of one file with its rows in memory. Each command in its own "
            "process; peak = its peak resident memory. `same metrics` = the metrics table of "
            f"the page of the parts equals the one of the whole file. Measured "
            f"{done['report_when']}.",
            "",
            "| rows | source | wall s | ratio | peak MiB | same metrics |",
            "|---:|---|---:|---:|---:|---|",
        ]
        base = done["report"][0]["wall"]
        for r in done["report"]:
            lines.append(f"| {r['n']:.0e} | {r['source']} | {r['wall']:.1f} | "
                         f"{r['wall'] / base:.2f} | {r['peak']:,.0f} | "
                         f"{r.get('same_metrics', '-')} |")
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
