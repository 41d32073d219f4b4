"""Shared pytest configuration for the abstain test layer."""

from __future__ import annotations

import io
import os
import sys
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# ``tests/reference`` is imported as the package ``reference``.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
# HYPOTHESIS_PROFILE=ci: five times the examples, a fresh random seed on every run.
settings.register_profile("ci", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20230714)


@pytest.fixture
def call_limit(monkeypatch):
    """``call_limit(owner, name, limit)``: count the calls of the method ``owner.name`` in a
    list it returns, and stop the test with "the halving does not stop" after ``limit``."""
    def wrap(owner, name, limit):
        calls = []
        real = getattr(owner, name)

        def counted(self, *args, **kwargs):
            calls.append(1)
            if len(calls) > limit:
                raise RuntimeError("the halving does not stop")
            return real(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
        return calls

    return wrap


@pytest.fixture(scope="session")
def load_benchmark():
    """``load_benchmark("table2_ood")`` imports ``benchmarks/table2_ood.py`` as a module."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        path = Path(__file__).parent.parent / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="session")
def tty_stream() -> type[io.StringIO]:
    """A ``StringIO`` class whose instances say they are a terminal (``isatty()`` is True)."""
    return _Terminal


def _random_cov(rng, m, kind):
    if kind == "identity":
        return np.eye(m)
    if kind == "equi":
        rho = rng.uniform(-0.9 / max(m - 1, 1), 0.95)
        return (1 - rho) * np.eye(m) + rho * np.ones((m, m))
    a = rng.normal(size=(m, m + 2))
    c = a @ a.T / (m + 2) + 0.05 * np.eye(m)
    d = np.sqrt(np.diag(c))
    return c / d[:, None] / d[None, :]


@pytest.fixture(scope="session")
def random_cov():
    """``random_cov(rng, m, kind)``: an m x m correlation matrix, ``kind`` "identity",
    "equi" (equicorrelated) or "random", for the tests of abstain.combine (tests/combine/)."""
    return _random_cov


def _toy(rng, n_id=300, n_ood=300, K=4, d=8):
    """ID: one bright coordinate per class; OOD: flat logits and energy off the class space."""
    y = rng.integers(0, K, n_id)
    f_id = np.zeros((n_id, d))
    f_id[np.arange(n_id), y] = 4.0
    f_id[:, :K] += rng.normal(0, 0.5, (n_id, K))
    f_id[:, K:] = rng.normal(0, 0.1, (n_id, d - K))
    f_ood = np.hstack([rng.normal(0.5, 0.5, (n_ood, K)), rng.normal(1.0, 0.5, (n_ood, d - K))])
    W = np.hstack([2.0 * np.eye(K), np.zeros((K, d - K))])
    b = rng.normal(0, 0.1, K)
    F = np.maximum(np.vstack([f_id, f_ood]), 0.0)
    return F, y, W, b, np.repeat([False, True], [n_id, n_ood])


@pytest.fixture(scope="session")
def toy():
    """``toy(rng, n_id=300, n_ood=300, K=4, d=8) -> (F, y, W, b, is_ood)``: penultimate
    features F of ID rows then OOD rows, the ID labels y, the last layer (W, b) and the OOD
    mask, for the detector tests (tests/detectors/) and DoubleScoreDetector's (tests/models/)."""
    return _toy


def _random_sample(rng, n_max=9, levels=3):
    n = int(rng.integers(3, n_max + 1))
    is_ood = rng.random(n) < 0.4
    is_ood[0], is_ood[1] = True, False
    losses = rng.integers(0, 3, n) / 2.0
    scores = rng.integers(0, levels, (n, 2)).astype(float)  # heavy ties, exact projections
    return scores, is_ood, losses


def _tied_pairs(seed, n, ood_share, continuous=False, continuous_divisor=1.0):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < ood_share
    s_r = np.round(rng.random(n) + 0.3 * ood, 1)        # few distinct values: many tied pairs
    s_g = np.round(2 * rng.normal(ood * 1.0, 1.0)) / 2
    if continuous:
        loss = rng.random(n) * s_r / continuous_divisor
    else:
        loss = (rng.random(n) < s_r / 1.3).astype(float)
    loss[ood] = np.nan
    return np.stack([s_r, s_g], axis=1), ood, loss


def _quiet_fit(model, *args):
    from abstain import InfeasibleTargetWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return model.fit(*args)


@pytest.fixture(scope="session")
def random_sample():
    """``random_sample(rng, n_max=9, levels=3) -> (scores, is_ood, losses)``: 3 to n_max rows
    with both ID and OOD, losses in {0, 0.5, 1} and two score columns of ``levels`` values
    (heavy ties), for the OOD models (tests/models/) and metrics (tests/metrics/)."""
    return _random_sample


@pytest.fixture(scope="session")
def tied_pairs():
    """``tied_pairs(seed, n, ood_share, continuous=False, continuous_divisor=1.0) -> (scores,
    is_ood, losses)``: two score columns with few distinct values (many rows share a pair),
    0/1 losses or, with ``continuous``, real losses ``u * s_r / continuous_divisor``; NaN
    on OOD rows (the PairTable tests of tests/tables/ and tests/metrics/)."""
    return _tied_pairs


@pytest.fixture(scope="session")
def quiet_fit():
    """``quiet_fit(model, *args)``: ``model.fit(*args)`` without the InfeasibleTargetWarning."""
    return _quiet_fit


def _write_parts(cols, folder, k=3, formats=("parquet",)):
    """Write the rows of ``cols`` as ``k`` parts in ``folder``, the formats taken in turn."""
    from abstain.app.io import write_table

    folder.mkdir()
    n = len(next(iter(cols.values())))
    for i, idx in enumerate(np.array_split(np.arange(n), k)):
        write_table(folder / f"part-{i}.{formats[i % len(formats)]}",
                    {c: v[idx] for c, v in cols.items()})
    return folder


@pytest.fixture(scope="session")
def write_parts():
    """``write_parts(cols, folder, k=3, formats=("parquet",))``: a dict of columns written as
    a directory of parts, a source read in chunks (tests/app/)."""
    return _write_parts


@pytest.fixture
def fifo(tmp_path):
    """``fifo(name)`` makes a FIFO in ``tmp_path`` read by a thread; returns its path and a
    function that waits for the reader and returns the bytes it read."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")

    def make(name: str):
        path = tmp_path / name
        os.mkfifo(path)
        got: list[bytes] = []

        def read() -> None:
            with open(path, "rb") as fh:
                got.append(fh.read())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()

        def content(timeout: float = 30.0) -> bytes:
            reader.join(timeout)
            return got[0]

        return path, content

    return make
