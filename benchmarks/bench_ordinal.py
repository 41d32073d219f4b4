"""Fit time of ``SVOR`` against scikit-learn's ``LogisticRegression`` on the same data.

For n = 1e4 and 1e5 rows, d = 20 and 100 features and K = 10 classes (uniform class
prior, labels from a noisy linear score), it times one ``SVOR(C=...)`` fit to a
relative duality gap 1e-8 and one multinomial ``LogisticRegression`` fit (lbfgs, its
default tolerance) measured in the same run, and prints their ratio. Writes
benchmarks/results/bench_ordinal.md.

Run: ``python benchmarks/bench_ordinal.py [--sizes 10000 100000] [--dims 20 100] [--C 10]``.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from abstain.ordinal import SVOR

RESULTS = Path(__file__).parent / "results" / "bench_ordinal.md"


def make_data(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = X @ rng.standard_normal(d) / np.sqrt(d) + 0.5 * rng.standard_normal(n)
    cuts = np.quantile(f, np.linspace(0, 1, k + 1)[1:-1])
    return X, np.searchsorted(cuts, f)


def timed(func) -> tuple[float, object]:
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5])
    parser.add_argument("--dims", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        for d in args.dims:
            X, y = make_data(n, d, args.classes)
            t_svor, model = timed(lambda X=X, y=y: SVOR(C=args.C).fit(X, y))
            t_base, _ = timed(lambda X=X, y=y: LogisticRegression(max_iter=1000).fit(X, y))
            rel_gap = model.gap_ / model.objective_
            rows.append((n, d, t_svor, model.n_iter_, rel_gap, t_base, t_svor / t_base))
            print(f"n={n:>7,} d={d:>4} SVOR {t_svor:8.2f} s ({model.n_iter_} it, gap "
                  f"{rel_gap:.1e})  LogisticRegression {t_base:8.2f} s  "
                  f"ratio {t_svor / t_base:6.2f}", flush=True)
    lines = [
        f"# SVOR fit time: ratio to LogisticRegression on the same data (K = {args.classes}, "
        f"C = {args.C:g})",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'unknown cpu'}, "
        f"NumPy {np.__version__}, Python {platform.python_version()}. One fit each.",
        "Command: `python benchmarks/bench_ordinal.py "
        f"--sizes {' '.join(map(str, args.sizes))} --dims {' '.join(map(str, args.dims))} "
        f"--C {args.C:g}`.",
        "",
        "| n | d | SVOR (s) | Newton iterations | relative gap | LogisticRegression (s) | ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, d, t, it, gap, base, ratio in rows:
        lines.append(f"| {n:,} | {d} | {t:.2f} | {it} | {gap:.1e} | {base:.2f} | {ratio:.2f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
