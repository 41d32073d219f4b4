"""Speed of ``abstain.combine.combine`` against one vectorised NumPy pass, in one run.

Combines m = 24 z-values per sample (the paper's glrt-SupCSI+ size) for n = 1e6 samples
(90% N(0, 1) inliers, 10% outliers with mean 1) with every method except ``glrt_cov``.
Each time is the best of several repeats; the ratio divides it by the best time of the
named baseline measured in the same run on the same array: ``scipy.special.ndtr(-Z)``,
i.e. ``norm.sf(Z)`` of every entry, one transcendental pass (the per-column p-values that
any p-value combiner needs). ``Z.sum(axis=1)`` and SciPy's vectorised
``combine_pvalues(P, axis=1)`` (on precomputed p-values) are listed for reference.

``glrt_cov`` solves one non-negative QP per sample; it is timed per 1e5 samples for two
inlier covariances (eq. 34 on z-values of correlated base scores): equicorrelation 0.5
and a random correlation matrix. Writes benchmarks/results/bench_combine.md.

Run: ``python benchmarks/bench_combine.py [--n 1000000] [--m 24] [--n-cov 100000]``.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np
import scipy
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from scipy import special, stats

from abstain.combine import STATISTICS, EmpiricalZ, combine, inlier_covariance

RESULTS = Path(__file__).parent / "results" / "bench_combine.md"


def z_values(
    rng: np.random.Generator, n: int, m: int, corr: np.ndarray, ood_fraction: float
) -> np.ndarray:
    """Empirical z-values of correlated Gaussian base scores; outliers have mean +1."""
    chol = np.linalg.cholesky(corr)
    train = rng.normal(size=(20_000, m)) @ chol.T
    test = rng.normal(size=(n, m)) @ chol.T
    test[: int(n * ood_fraction)] += 1.0
    return EmpiricalZ().fit(train).transform(test)


def time_combiners(
    rng: np.random.Generator, n: int, m: int, repeats: int
) -> tuple[float, list[tuple[str, float]]]:
    """Best times of the baseline and of every combiner except glrt_cov on one (n, m) array."""
    Z = rng.normal(size=(n, m))
    Z[: n // 10] += 1.0
    base = best_time(lambda: special.ndtr(-Z), repeats)
    print(f"n={n:,} m={m}  baseline special.ndtr(-Z): {base * 1e3:.1f} ms", flush=True)
    P = special.ndtr(-Z)
    rows: list[tuple[str, float]] = [
        ("`Z.sum(axis=1)` (reference)", best_time(lambda: Z.sum(axis=1), repeats)),
        ("`scipy.stats.combine_pvalues(P, 'fisher', axis=1)`, P given (reference)",
         best_time(lambda: stats.combine_pvalues(P, method="fisher", axis=1), repeats)),
        ("`scipy.stats.combine_pvalues(P, 'stouffer', axis=1)`, P given (reference)",
         best_time(lambda: stats.combine_pvalues(P, method="stouffer", axis=1), repeats)),
    ]
    for method in STATISTICS:
        if method != "glrt_cov":
            rows.append((f"`combine(Z, {method!r})`",
                         best_time(lambda method=method: combine(Z, method), repeats)))
    for name, t in rows:
        print(f"{name:<80} {t * 1e3:9.1f} ms  ratio {t / base:5.2f}", flush=True)
    return base, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--m", type=int, default=24)
    parser.add_argument("--n-cov", type=int, default=10**5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, m = args.n, args.m
    base, rows = time_combiners(rng, n, m, args.repeats)

    cov_rows = []
    a = rng.normal(size=(m, m + 2))
    rand = a @ a.T / (m + 2) + 0.05 * np.eye(m)
    rand /= np.sqrt(np.outer(np.diag(rand), np.diag(rand)))
    for label, corr in (("equicorrelation 0.5", 0.5 * np.eye(m) + 0.5),
                        ("random correlation", rand)):
        Zc = z_values(rng, args.n_cov, m, corr, 0.5)
        cov = inlier_covariance(z_values(rng, 10_000, m, corr, 0.0))
        t = best_time(lambda Zc=Zc, cov=cov: combine(Zc, "glrt_cov", cov=cov), 2)
        glrt = best_time(lambda Zc=Zc: combine(Zc, "glrt"), args.repeats)
        per = t * 1e5 / args.n_cov
        cov_rows.append((label, per, t / glrt))
        print(f"glrt_cov {label:<22} {per:6.2f} s per 1e5 samples  ({t / glrt:,.0f}x glrt)",
              flush=True)

    lines = [
        f"# Score-combining speed: ratio to `scipy.special.ndtr(-Z)` on the same array "
        f"(n = {n:,}, m = {m})",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'unknown cpu'}, "
        f"NumPy {np.__version__}, SciPy {scipy.__version__}, Python "
        f"{platform.python_version()}; shared, 2 cores. Best of {args.repeats} repeats.",
        "Command: `python benchmarks/bench_combine.py`.",
        "",
        "Baseline: `scipy.special.ndtr(-Z)` = `norm.sf(Z)` of every entry, one vectorised "
        f"pass over the (n, m) float64 array: **{base * 1e3:.1f} ms**. Z: 90% N(0, 1) rows, "
        "10% with mean 1. Each combiner's time includes its own p-values (log space).",
        "",
        "| statistic | time (ms) | ratio to baseline |",
        "|---|---:|---:|",
    ]
    for name, t in rows:
        lines.append(f"| {name} | {t * 1e3:.1f} | {t / base:.2f} |")
    lines += [
        "",
        f"## Covariance GLRT (`method='glrt_cov'`, m = {m}), one exact QP per sample",
        "",
        f"z-values of correlated Gaussian base scores ({args.n_cov:,} test rows, half "
        "outliers with mean +1), covariance by `inlier_covariance` (eq. 34) on 10,000 "
        "inlier rows. Best of 2.",
        "",
        "| inlier correlation | seconds per 1e5 samples | ratio to `glrt` |",
        "|---|---:|---:|",
    ]
    for label, per, ratio in cov_rows:
        lines.append(f"| {label} | {per:.2f} | {ratio:,.0f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
