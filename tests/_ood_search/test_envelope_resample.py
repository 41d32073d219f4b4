"""``EnvelopeResampler``: the envelope of a resample, from the orders of the swaps shared
across resamples, equals ``envelopes`` of the resampled rows (values, area, first reaches
to 1e-12), on data with many ties, signed zeros, a single distinct pair, huge and tiny
scores, resamples with 0 or 1 OOD rows, continuous gains, one and two gain columns, and
above ``sweep_below`` (each resample's own search)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abstain._ood_search import envelope as E

#: rerun by ``make test`` under another BLAS kernel and NumPy CPU features
pytestmark = pytest.mark.cpu_exact


def _same(a: E.Lines, b: E.Lines) -> None:
    """The two envelopes agree at every OOD mass of a grid, in area and in first reach."""
    tot = max(abs(a.total), 1.0)
    assert a.n_ood == b.n_ood
    assert a.total == pytest.approx(b.total, abs=1e-12 * tot)
    x = np.unique(np.concatenate((np.arange(a.n_ood + 1), np.arange(a.n_ood) + 0.37)))
    np.testing.assert_allclose(E.value_at(a, x), E.value_at(b, x), rtol=0, atol=1e-12 * tot)
    assert E.area(a) == pytest.approx(E.area(b), abs=1e-12 * tot * max(a.n_ood, 1))
    for t in np.linspace(0, 1, 9) * a.total:
        assert E.first_reach(a, t) == pytest.approx(E.first_reach(b, t), abs=1e-9)


def _check(s: np.ndarray, ood: np.ndarray, gains: np.ndarray, counts: np.ndarray,
           **kw: int) -> None:
    got = E.EnvelopeResampler(s, ood, gains, **kw).envelopes(counts)
    idx = np.repeat(np.arange(s.shape[0]), counts)
    want = E.envelopes(s[idx], ood[idx], gains[idx])
    assert len(got) == len(want) == gains.shape[1]
    for a, b in zip(got, want, strict=True):
        _same(a, b)


def _data(seed: int, n: int, levels: int, g: int, dyadic: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    s = rng.integers(-levels, levels + 1, size=(n, 2)).astype(np.float64)
    ood = (rng.random(n) < 0.4).astype(np.float64)
    gain = rng.random((n, g)) if not dyadic else rng.integers(0, 3, (n, g)) / 2.0
    gains = np.where(ood[:, None] > 0, 0.0, gain)
    return s, ood, gains


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), levels=st.integers(0, 4),
       g=st.integers(1, 2), dyadic=st.booleans())
def test_resample_equals_the_resampled_rows(seed: int, n: int, levels: int, g: int,
                                            dyadic: bool) -> None:
    s, ood, gains = _data(seed, n, levels, g, dyadic)
    rng = np.random.default_rng(seed + 1)
    for _ in range(3):
        counts = np.bincount(rng.integers(0, n, n), minlength=n)
        _check(s, ood, gains, counts)


@pytest.mark.parametrize("seed", range(3))
def test_above_sweep_below_each_resample_searches_its_pairs(seed: int) -> None:
    s, ood, gains = _data(seed, 60, 6, 2, False)
    counts = np.bincount(np.random.default_rng(seed).integers(0, 60, 60), minlength=60)
    _check(s, ood, gains, counts, sweep_below=0)


def test_signed_zeros_huge_and_tiny_scores() -> None:
    rng = np.random.default_rng(5)
    n = 30
    s = rng.choice([-0.0, 0.0, 1e-300, -1e-300, 1e300, 3.0], size=(n, 2))
    ood = (np.arange(n) % 3 == 0).astype(np.float64)
    gains = (1.0 - ood)[:, None]
    for _ in range(5):
        _check(s, ood, gains, np.bincount(rng.integers(0, n, n), minlength=n))


def test_one_distinct_pair_and_one_or_no_ood_row_drawn() -> None:
    s = np.zeros((6, 2))
    ood = np.array([1.0, 0, 0, 1, 0, 0])
    gains = (1.0 - ood)[:, None]
    for counts in ([1, 1, 1, 1, 1, 1], [2, 0, 3, 0, 1, 0], [0, 2, 2, 0, 2, 0], [6, 0, 0, 0, 0, 0]):
        _check(s, ood, gains, np.array(counts))
    rng = np.random.default_rng(7)
    s = rng.integers(0, 3, size=(8, 2)).astype(np.float64)
    ood = np.array([1.0, 0, 0, 0, 0, 0, 0, 1])
    gains = (1.0 - ood)[:, None]
    for counts in ([0, 1, 2, 1, 1, 1, 1, 1], [1, 0, 0, 3, 0, 2, 1, 0], [0, 3, 0, 1, 1, 1, 2, 0]):
        _check(s, ood, gains, np.array(counts))


def test_the_sample_itself() -> None:
    s, ood, gains = _data(11, 50, 3, 2, False)
    _check(s, ood, gains, np.ones(50, dtype=np.int64))
