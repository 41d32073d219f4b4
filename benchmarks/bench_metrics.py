"""Speed of the exact metrics against ``numpy.argsort`` of the same array, in one run.

For n = 1e5, 1e6, 1e7 it times ``aurc`` (both tie rules) and ``risk_coverage_curve``
on 0/1 losses with (a) continuous scores, no ties, and (b) scores rounded to three
decimals, about 1000 tie groups. Each time is the best of several repeats; the
ratio divides it by the best time of ``numpy.argsort`` (default kind) on the same
uncertainty array. Goal: at most 2x argsort. Writes benchmarks/results/bench_metrics.md.

Run: ``python benchmarks/bench_metrics.py [--sizes 100000 1000000]``.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script

from abstain.metrics import aurc, risk_coverage_curve

RESULTS = Path(__file__).parent / "results" / "bench_metrics.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**5, 10**6, 10**7])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for n in args.sizes:
        repeats = 7 if n <= 10**5 else (5 if n <= 10**6 else 3)
        scores = rng.random(n)
        losses = (rng.random(n) < scores).astype(np.float64)
        for data, u in (("no ties", scores), ("~1000 tie groups", np.round(scores, 3))):
            base = best_time(lambda u=u: np.argsort(u), repeats)
            cases = {
                "aurc(ties='mean')": lambda u=u, ls=losses: aurc(ls, u),
                "aurc(ties='index')": lambda u=u, ls=losses: aurc(ls, u, ties="index"),
                "risk_coverage_curve": lambda u=u, ls=losses: risk_coverage_curve(ls, u),
            }
            for name, func in cases.items():
                t = best_time(func, repeats)
                rows.append((n, data, name, t, base, t / base))
                print(f"n={n:>9,} {data:<17} {name:<20} {t * 1e3:9.2f} ms  "
                      f"argsort {base * 1e3:9.2f} ms  ratio {t / base:5.2f}", flush=True)
    lines = [
        "# Metric speed: ratio to numpy.argsort of the same array (goal <= 2)",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'unknown cpu'}, "
        f"NumPy {np.__version__}, Python {platform.python_version()}. "
        "0/1 losses; best of 7 / 5 / 3 repeats for n = 1e5 / 1e6 / 1e7.",
        "Command: `python benchmarks/bench_metrics.py`.",
        "",
        "| n | scores | function | time (ms) | argsort (ms) | ratio |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for n, data, name, t, base, ratio in rows:
        lines.append(
            f"| {n:,} | {data} | `{name}` | {t * 1e3:.2f} | {base * 1e3:.2f} | {ratio:.2f} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
