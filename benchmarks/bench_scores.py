"""Fit time of the learned scores (SELE, REG) against a double-loop SELE gradient, in one run.

Data: n = 1e4 and 1e5 rows, d = 100 standard normal features, 10 predicted classes
(the feature map of eq. (37) has 1010 parameters), and two kinds of losses:
0/1 losses with about 20% errors (a classifier), and absolute errors in 0..3 with
about 55% non-zero (an ordinal predictor). For each it times

- ``LossRegression(C=1).fit`` (closed form),
- ``SELE(C=1).fit`` with chunks of 500 as in the paper, to ``tol=1e-6``,
- one evaluation of the SELE objective and gradient as ``SELE`` does it, and
- the baseline: the same gradient written as a straightforward per-chunk double
  loop over all ordered pairs in Python (``psi_sele`` of eq. (30) differentiated
  pair by pair), then mapped to the parameters. At n = 1e5 the double loop runs
  on the first 10 of the 200 chunks and is scaled by 20 (the chunks are
  independent and equally sized, so the cost is linear in their number).

Ratios divide the baseline gradient time by ours, and the full SELE fit time by
one baseline gradient (a first-order solver needs tens to hundreds of them).
Writes benchmarks/results/bench_scores.md.

Run: ``python benchmarks/bench_scores.py [--sizes 10000 100000]``.
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

import numpy as np

from abstain.scores import SELE, LossRegression
from abstain.scores._learned import _block_rmatvec, _chunks, _SeleProblem

RESULTS = Path(__file__).parent / "results" / "bench_scores.md"
D, K, CHUNK = 100, 10, 500


def make_data(rng: np.random.Generator, n: int, kind: str):
    X = rng.normal(size=(n, D))
    y_pred = rng.integers(0, K, n)
    logit = X[:, 0] + 0.5 * X[:, 1]
    if kind == "0/1":
        losses = (rng.uniform(size=n) < 1 / (1 + np.exp(-(logit - 1.8)))).astype(float)
    else:
        losses = rng.binomial(3, 1 / (1 + np.exp(-(logit - 0.9)))).astype(float)
    return X, y_pred, losses


def double_loop_gradient(problem: _SeleProblem, theta: np.ndarray, losses, max_chunks: int):
    """The gradient of the chunked eq. (30) by explicit loops over pairs (no ridge term)."""
    s = (problem.design.rows * theta.reshape(problem.shape)[_row_blocks(problem)]).sum(axis=1)
    g = np.zeros_like(s)
    for chunk in problem.chunks[:max_chunks]:
        rows = chunk.rows.tolist()
        m2 = float(len(rows)) ** 2
        for i in rows:
            li = losses[i]
            if li == 0.0:
                continue
            for j in rows:
                sig = 1.0 / (1.0 + math.exp(s[i] - s[j]))  # d/dz log(1 + e^z), z = s_j - s_i
                g[j] += li * sig / m2
                g[i] -= li * sig / m2
    return _block_rmatvec(problem.design, g, problem.n_blocks) / len(problem.chunks)


def _row_blocks(problem: _SeleProblem) -> np.ndarray:
    b = problem.design.bounds
    return np.repeat(np.arange(len(b) - 1), np.diff(b))


def timed(func, *args):
    start = time.perf_counter()
    out = func(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for n in args.sizes:
        for kind in ("0/1", "absolute error"):
            X, y_pred, losses = make_data(rng, n, kind)
            t_reg, _ = timed(LossRegression(C=1.0).fit, X, y_pred, losses)
            t_sele, sele = timed(SELE(C=1.0, random_state=0).fit, X, y_pred, losses)
            # One objective + gradient evaluation, as SELE.fit does it.
            design = sele._design(X, y_pred, fitting=True)
            sorted_losses = losses[design.order]
            chunks = _chunks(sorted_losses, CHUNK, np.random.default_rng(0))
            problem = _SeleProblem(design, chunks, 0.0, K)
            theta = 0.01 * rng.normal(size=problem.shape).ravel()
            t_grad = min(timed(problem.value_grad, theta)[0] for _ in range(3))
            max_chunks = min(len(chunks), 10 if n > 10**4 else len(chunks))
            t_loop, g_loop = timed(double_loop_gradient, problem, theta, sorted_losses, max_chunks)
            scale = len(chunks) / max_chunks
            t_loop *= scale
            if max_chunks == len(chunks):  # the two gradients agree where both are complete
                _, g_fast = problem.value_grad(theta)
                assert np.allclose(g_loop.ravel(), g_fast, rtol=1e-9, atol=1e-12)
            rows.append((n, kind, losses.mean(), (losses > 0).mean(), t_reg, t_sele, sele.n_iter_,
                         t_grad, t_loop, scale))
            print(f"n={n:>7,} {kind:<15} REG {t_reg:6.2f} s  SELE {t_sele:6.2f} s "
                  f"({sele.n_iter_} Newton its)  gradient {t_grad * 1e3:8.1f} ms  "
                  f"double loop {t_loop:8.1f} s (x{t_loop / t_grad:,.0f})", flush=True)
    lines = [
        "# Learned-score fit time; baseline: a per-chunk double-loop SELE gradient",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'unknown cpu'}, "
        f"NumPy {np.__version__}, Python {platform.python_version()}. "
        f"d = {D} features, {K} predicted classes, chunks of {CHUNK}, C = 1, tol = 1e-6.",
        "Command: `python benchmarks/bench_scores.py`. Times are wall-clock seconds of one run.",
        "",
        "| n | losses | mean loss | share > 0 | REG fit (s) | SELE fit (s) | Newton its "
        "| SELE gradient (ms) | double-loop gradient (s) | gradient ratio | SELE fit / one "
        "double-loop gradient |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, kind, mean, share, t_reg, t_sele, its, t_grad, t_loop, scale in rows:
        loop = f"{t_loop:.1f}" + (f" (10 chunks x {scale:.0f})" if scale > 1 else "")
        lines.append(
            f"| {n:,} | {kind} | {mean:.3f} | {share:.2f} | {t_reg:.2f} | {t_sele:.2f} | {its} "
            f"| {t_grad * 1e3:.1f} | {loop} | {t_loop / t_grad:,.0f} | {t_sele / t_loop:.2f} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
