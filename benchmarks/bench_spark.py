"""abstain.spark beside abstain.distributed (Dask) and one NumPy process, on the same rows.

Rows ``i = 0 .. n-1`` are generated inside each engine from their index, so no engine
reads a file and every engine sees the same rows: score ``((i * 2654435761) mod 4096) /
4096`` (4,096 distinct values, as a quantised score), 0/1 loss ``(i * 40503) mod 5 == 0``.
Work: ``score_table`` then AuRC and AUGRC on the table. Spark: ``local[2]`` (one driver,
two task threads), ``spark.range(n)``; Dask: a ``LocalCluster`` of 2 worker processes x 1
thread, ``da.arange`` in blocks of 2,000,000; NumPy: one process adding blocks of 2,000,000
rows to one ``ScoreTable`` (the baseline, ratio 1.00). ``exact``: the table and the
metrics equal the baseline's bit for bit. The Spark session's start (about 10 s) is not
timed. Run: ``python benchmarks/bench_spark.py [--sizes 1e6 1e7 1e8]`` (``make
test-spark`` installs Java and pyspark); writes ``benchmarks/results/bench_spark.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from abstain import ScoreTable
from abstain.metrics import augrc, aurc

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine_line  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "bench_spark.md"
BLOCK = 2_000_000
A, B, LEVELS = 2654435761, 40503, 4096


def _numpy(n: int) -> ScoreTable:
    table = ScoreTable()
    for start in range(0, n, BLOCK):
        i = np.arange(start, min(n, start + BLOCK), dtype=np.int64)
        table.update((i * A % LEVELS) / LEVELS, (i * B % 5 == 0).astype(np.float64))
    return table


def _spark(spark, n: int) -> ScoreTable:
    from pyspark.sql import functions as F

    from abstain.spark import score_table

    df = spark.range(n, numPartitions=max(2, n // BLOCK)).select(
        ((F.col("id") * A % LEVELS) / LEVELS).alias("u"),
        ((F.col("id") * B % 5) == 0).cast("double").alias("loss"))
    return score_table(df, "u", loss="loss")


def _dask(client, n: int) -> ScoreTable:
    import dask.array as da

    from abstain.distributed import score_table

    i = da.arange(n, chunks=BLOCK, dtype=np.int64)
    return score_table((i * A % LEVELS) / LEVELS, (i * B % 5 == 0).astype(np.float64),
                       oracle=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster
    from pyspark.sql import SparkSession

    machine = machine_line()
    print(machine)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
    client = Client(cluster)
    lines = ["# abstain.spark beside abstain.distributed and one NumPy process", "", machine,
             "", "Protocol in `benchmarks/bench_spark.py`'s docstring; seconds of "
             "`score_table` + AuRC + AUGRC (Spark's session start not timed).", "",
             "| rows | groups | NumPy s | Spark s | ratio | Dask s | ratio | exact (Spark / "
             "Dask) |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    try:
        for size in args.sizes:
            n = int(size)
            out, took = {}, {}
            for name, run, arg in (("numpy", _numpy, None), ("spark", _spark, spark),
                                   ("dask", _dask, client)):
                start = time.perf_counter()
                table = run(n) if arg is None else run(arg, n)
                values = (aurc(table), augrc(table))
                took[name] = time.perf_counter() - start
                out[name] = (table, values)
            base = out["numpy"]
            exact = {k: out[k][0] == base[0] and out[k][1] == base[1] for k in ("spark", "dask")}
            row = (f"| {n:.0e} | {base[0].n_groups:,} | {took['numpy']:.1f} | "
                   f"{took['spark']:.1f} | {took['spark'] / took['numpy']:.2f} | "
                   f"{took['dask']:.1f} | {took['dask'] / took['numpy']:.2f} | "
                   f"{exact['spark']} / {exact['dask']} |")
            print(row, flush=True)
            lines.append(row)
    finally:
        client.close()
        cluster.close()
        spark.stop()
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
