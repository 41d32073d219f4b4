"""Speed of the feature detectors against the matrix product they are built on and the peers
installed in the same run.

Baselines, measured in the same process:

- ``GEMM f32``: one float32 matrix product ``test @ bank.T`` of the same shapes (NumPy's BLAS),
  the floor of any exact nearest-neighbour search; the goal is KNN within 2.5x of it;
- ``faiss``: ``faiss.IndexFlatL2`` (exact, float32) ``add`` + ``search`` of k neighbours, when
  faiss is installed;
- ``sklearn``: ``sklearn.neighbors.NearestNeighbors(n_neighbors=k).fit(bank).kneighbors(test)``
  (its default ``algorithm="auto"``), when scikit-learn is installed;
- ``float64``: the same detector with ``dtype="float64"`` (the computation of the earlier
  releases).

- ``pytorch-ood``: ``pytorch_ood.detector.ViM`` / ``Mahalanobis`` ``fit_features`` +
  ``predict_features`` on CPU tensors of the same float32 features (ViM with the same
  principal dimension as ours), when pytorch-ood is installed. It needs a newer PyTorch and
  torchvision than the one this library's ``torch`` extra pins, so it runs in its own
  environment: ``make bench-detectors-peers`` builds ``.venv-peers`` (torch 2.14.1 and
  torchvision 0.29.1 from this machine's disk, pytorch-ood, faiss-cpu, scikit-learn, this
  library) and runs this script there. Its KNN is scikit-learn's ``NearestNeighbors``,
  measured above as ``sklearn``. ``agree`` is the Spearman correlation of its scores
  with ours on the test rows (1.000: the same ranking up to float32 rounding).

- ``Gram X.T X``: the covariance product of ViM and Mahalanobis: NumPy's ``X.T @ X`` (what
  the detectors use; the baseline column), SciPy's ``syrk`` and a general float32 product
  (``X.T @ X.copy()``), and ``torch.matmul`` when torch imports.
- Logit detectors: ``Energy``, ``MSP``, ``MaxLogit`` and ``GEN`` (default ``gamma`` and
  ``top_m``) on (n, 10) float64 logits against ``np.exp`` of the same matrix (the floor of a
  softmax score; GEN also takes a power of every probability), interleaved, best of at
  least 50 calls up to 1e5 rows; the line under the table gives each one's time above
  ``np.exp`` at 10,000 rows (the goal: at most 0.5 ms); ``torch.logsumexp`` when torch
  imports, timed after them (its threads keep spinning after a call and would slow the call
  that follows).

KNN's ``ours auto`` is ``backend="auto"``; the line under its table says which backend it
picked and how far it was from the fastest backend measured.

Data: Gaussian features (the time does not depend on their values). Every time is the best
of ``--repeats`` calls after one warm-up; the ViM and Mahalanobis contenders are
called in turn (ours f32, ours f64, pytorch-ood, again), so the load of other jobs falls on
all of them. Run: ``python benchmarks/bench_detectors.py
[--quick]``. Writes benchmarks/results/bench_detectors.md.
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

import numpy as np
from _timing import best_time, best_times, machine_line
from scipy.linalg import blas

from abstain.detectors import GEN, KNN, MSP, Energy, Mahalanobis, MaxLogit, ViM
from abstain.detectors._features import knn_backend

RESULTS = Path(__file__).parent / "results" / "bench_detectors.md"


def _optional(name: str):
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


def knn_row(n_test, n_bank, d, k, repeats):
    faiss = _optional("faiss")
    neighbors = _optional("sklearn.neighbors")
    rng = np.random.default_rng(0)
    bank = rng.normal(size=(n_bank, d)).astype(np.float32)
    test = rng.normal(size=(n_test, d)).astype(np.float32)

    def ours(backend, dtype="float32"):
        return KNN(k=k, normalize=False, backend=backend, dtype=dtype).fit(bank).score(test)

    contenders = {"ours auto": lambda: ours("auto"), "ours f32": lambda: ours("numpy")}
    if faiss is not None:
        contenders["ours (faiss backend)"] = lambda: ours("faiss")
    row = {"shape": f"{n_test} x {n_bank} x {d}",
           "GEMM f32": best_time(lambda: test @ bank.T, repeats),
           **best_times(contenders, repeats),
           "ours f64": best_time(lambda: ours("numpy", "float64"), repeats)}
    picked = "numpy" if faiss is None else knn_backend(bank, test, k, KNN().block)
    fastest = min(row[c] for c in contenders if c != "ours auto")
    row["auto"] = (f"auto picked {picked}, within "
                   f"{100 * (row['ours auto'] / fastest - 1):+.0f} % of the fastest backend")
    if faiss is not None:
        def peer_faiss():
            index = faiss.IndexFlatL2(d)
            index.add(bank)
            return index.search(test, k)

        row["faiss"] = best_time(peer_faiss, repeats)
    if neighbors is not None:
        nn = neighbors.NearestNeighbors(n_neighbors=k)
        row["sklearn"] = best_time(lambda: nn.fit(bank).kneighbors(test), 1)
    return row


def fit_score_rows(n_train, n_test, d, n_classes, repeats):
    rng = np.random.default_rng(1)
    y = rng.integers(0, n_classes, n_train)
    train = (rng.normal(size=(n_train, d)) + y[:, None] * 0.1).astype(np.float32)
    test = rng.normal(size=(n_test, d)).astype(np.float32)
    W = rng.normal(size=(n_classes, d)).astype(np.float32)
    t_gemm = best_time(lambda: train.T @ train, repeats)  # the covariance product
    syrk = blas.ssyrk
    grams = {"SciPy syrk f32": lambda: syrk(1.0, train.T, trans=0),
             "gemm f32": lambda: train.T @ train.copy()}
    torch = _optional("torch")
    if torch is not None:
        tt = torch.from_numpy(train)
        grams["torch.matmul f32"] = lambda: tt.T @ tt
    gram_times = best_times(grams, repeats)
    rows = [{"detector": "Gram X.T X", "shape": f"{n_train} x {d}", "GEMM f32 (X.T X)": t_gemm,
             **gram_times}]
    peer = _optional("pytorch_ood.detector")
    for name, make, kw in [("ViM", ViM, {"weight": W}), ("Mahalanobis", Mahalanobis, {})]:
        def run(dtype, make=make, kw=kw):
            return make(dtype=dtype).fit(train, y, **kw).score(test)

        funcs = {"ours f32": lambda: run("float32"), "ours f64": lambda: run("float64")}
        if peer is not None:
            fitted = make(dtype="float32").fit(train, y, **kw)
            pood = _pytorch_ood(peer, name, fitted, W)
            funcs["pytorch-ood"] = lambda p=pood: p(train, y, test)
        row = {"detector": name, "shape": f"{n_train} train, {n_test} test, d = {d}",
               "GEMM f32 (X.T X)": t_gemm, **best_times(funcs, repeats)}
        if peer is not None:
            row["agree"] = _spearman(fitted.score(test), pood(train, y, test))
        rows.append(row)
    return rows


def _pytorch_ood(peer, name, fitted, W):
    """``fit_features`` + ``predict_features`` of the pytorch-ood detector, as NumPy."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)

    def run(train, y, test):
        if name == "ViM":
            det = peer.ViM(None, d=int(fitted.dim_), w=torch.from_numpy(W),
                           b=torch.zeros(W.shape[0]))
        else:
            det = peer.Mahalanobis(None)
        det.fit_features(torch.from_numpy(train), torch.from_numpy(y))
        return det.predict_features(torch.from_numpy(test)).numpy()

    return run


def _spearman(a, b) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def small_rows(sizes, repeats):
    """Energy, MSP and MaxLogit on (n, 10) float64 logits against ``np.exp`` of the same
    matrix (the floor of any softmax score) and torch's ``logsumexp`` when torch imports."""
    torch = _optional("torch")
    rows = []
    for n in sizes:
        z = np.random.default_rng(2).normal(size=(n, 10)) * 3
        funcs = {"np.exp": lambda z=z: np.exp(z), "Energy": lambda z=z: Energy().score(z),
                 "MSP": lambda z=z: MSP().score(z), "MaxLogit": lambda z=z: MaxLogit().score(z),
                 "GEN": lambda z=z: GEN().score(z)}
        calls = max(repeats, 50) if n <= 100_000 else repeats  # millisecond calls: many
        row = {"shape": f"{n} x 10", **best_times(funcs, calls)}
        if torch is not None:  # apart: torch's threads spin after a call and slow the next one
            t = torch.from_numpy(z)
            row["torch.logsumexp"] = best_time(lambda t=t: torch.logsumexp(t, dim=1), calls)
        rows.append(row)
    return rows


def table(rows, base, first, unit="s"):
    keys = list(dict.fromkeys(k for r in rows for k in r if k not in first and k != "auto"))
    ratios = [k for k in keys if k not in (base, "agree")]
    scale = {"s": 1.0, "ms": 1e3}[unit]
    head = "| " + " | ".join(first + [k if k == "agree" else f"{k} ({unit})" for k in keys]
                             + [f"{k} / {base}" for k in ratios]) + " |"
    lines = [head, "|" + "---|" * (len(first) + len(keys) + len(ratios))]
    for r in rows:
        cells = [str(r[f]) for f in first]
        cells += [("-" if k not in r else f"{r[k]:.3f}" if k == "agree"
                   else f"{r[k] * scale:.3f}") for k in keys]
        cells += [f"{r[k] / r[base]:.2f}" if k in r else "-" for k in keys
                  if k not in (base, "agree")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _overhead_lines(small) -> list[str]:
    """Each logit detector's time above ``np.exp`` at 10,000 rows (the goal: 0.5 ms)."""
    row = next((r for r in small if r["shape"] == "10000 x 10"), None)
    if row is None:
        return []
    cells = ", ".join(f"{k} {(row[k] - row['np.exp']) * 1e3:+.3f} ms"
                      for k in ("Energy", "MSP", "MaxLogit", "GEN"))
    return [f"Above np.exp at 10000 x 10 (goal: at most +0.5 ms; GEN also takes a power of "
            f"every probability): {cells}.", ""]


def _peer_lines(rows) -> list[str]:
    """The goal's ratio, ours (float32) / pytorch-ood, or why it is absent."""
    peer = _optional("pytorch_ood")
    if peer is None:
        return ["pytorch-ood is not installed in this environment, so it was not run "
                "(`make bench-detectors-peers` runs it beside this library).", ""]
    import torch

    cells = ", ".join(f"{r['detector']} {r['ours f32'] / r['pytorch-ood']:.2f}" for r in rows
                      if "ours f32" in r and "pytorch-ood" in r)  # not the Gram row
    return [f"Goal, ours f32 at or below pytorch-ood {peer.__version__} (torch "
            f"{torch.__version__}, {torch.get_num_threads()} threads, CPU): ours f32 / "
            f"pytorch-ood = {cells}.", ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small shapes, one repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("-k", type=int, default=50)
    ap.add_argument("--out", type=Path, default=RESULTS, help="where to write the table")
    args = ap.parse_args()
    if args.quick:
        shapes, fs = [(500, 2000, 64)], (5000, 1000, 128, 10)
    else:
        shapes, fs = [(5000, 20000, 256)], (50000, 10000, 512, 10)
    repeats = 1 if args.quick else args.repeats
    machine = machine_line()
    print(machine)
    load_before = os.getloadavg()[0]
    small = small_rows([10_000, 1_000_000], max(repeats, 3) if args.quick else 10 * repeats)
    knn = [knn_row(*shape, args.k, repeats) for shape in shapes]
    other = fit_score_rows(*fs, repeats)
    load_after = os.getloadavg()[0]
    text = "\n".join([
        "# Feature detectors: time against a float32 GEMM and the peers",
        "",
        machine,
        "",
        f"`python benchmarks/bench_detectors.py{' --quick' if args.quick else ''}`; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, NumPy "
        f"{np.__version__}. The machine was shared with other jobs while this ran: absolute "
        "times are noisy, the ratios (all measured in this one run) less so. Best of "
        f"{repeats} after a warm-up (scikit-learn: one call). Load average (1 min) "
        f"{load_before:.1f} before and {load_after:.1f} after the run, on "
        f"{os.cpu_count()} cores: above the core count, other processes took part of the "
        "time of every measurement.",
        "",
        f"## KNN (k = {args.k}, normalize=False): fit + score, n_test x n_bank x d",
        "",
        table(knn, "GEMM f32", ["shape"]),
        "",
        *[f"{r['shape']}: {r['auto']}." for r in knn],
        "",
        "## ViM and Mahalanobis: fit + score",
        "",
        "The detectors' Gram matrix is NumPy's `X.T @ X` in the features' type: the baseline "
        "column `GEMM f32 (X.T X)`, timed apart (an interleaved call right after SciPy's BLAS "
        "waits for the other library's spinning threads).",
        "",
        table(other, "GEMM f32 (X.T X)", ["detector", "shape"]),
        "",
        "## Logit detectors: one call on float64 logits (n x 10), against np.exp of the logits",
        "",
        table(small, "np.exp", ["shape"], unit="ms"),
        "",
        *_overhead_lines(small),
        *_peer_lines(other),
    ])
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
