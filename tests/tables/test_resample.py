"""Score tables of bootstrap resamples from rows grouped once: equal to the tables of the
resampled rows (bit for bit with 0/1 and whole-number losses)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abstain.metrics import aurc, auroc, e_aurc
from abstain.tables import ScoreTable, TableResampler


def resample_counts(idx, n):
    return np.bincount(idx, minlength=n)


def _rows(rng, n, losses="binary"):
    u = rng.choice([-0.0, 0.0, 0.1, 0.5, 0.5, 2.0, -1.0], size=n) + (
        rng.random(n) < 0.5) * rng.integers(0, 3, n)
    ood = rng.random(n) < 0.3
    if losses == "binary":
        ls = (rng.random(n) < 0.4).astype(float)
    elif losses == "whole":
        ls = rng.integers(0, 4, n).astype(float)
    else:
        ls = rng.random(n)
    return u, ls, ood


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 80), st.sampled_from(["binary", "whole"]), st.integers(0, 2**32 - 1))
def test_resampled_table_is_the_table_of_the_resampled_rows(n, kind, seed) -> None:
    rng = np.random.default_rng(seed)
    u, ls, ood = _rows(rng, n, kind)
    idx = rng.integers(0, n, n)
    counts = resample_counts(idx, n)
    marked_ls = np.where(ood, np.nan, ls)
    r = TableResampler(u, marked_ls, ood)
    assert r.table(counts) == ScoreTable.from_arrays(u[idx], marked_ls[idx], is_ood=ood[idx])
    id_rows = idx[~ood[idx]]
    if id_rows.size:
        assert r.table(counts, marked=False) == ScoreTable.from_arrays(u[id_rows], ls[id_rows])
    plain = TableResampler(u, ls)
    assert plain.table(counts) == ScoreTable.from_arrays(u[idx], ls[idx])


def test_continuous_losses_agree_to_rounding() -> None:
    rng = np.random.default_rng(1)
    u, ls, ood = _rows(rng, 500, "continuous")
    idx = rng.integers(0, 500, 500)
    t = TableResampler(u, ls).table(resample_counts(idx, 500))
    assert aurc(t) == pytest.approx(aurc(ls[idx], u[idx]), rel=1e-12)
    assert e_aurc(t) == pytest.approx(e_aurc(ls[idx], u[idx]), rel=1e-12)
    m = TableResampler(u, ls, ood).table(resample_counts(idx, 500))
    assert auroc(m) == auroc(ood[idx], u[idx])


def test_counts_must_be_one_whole_number_per_row() -> None:
    r = TableResampler([0.1, 0.2], [0, 1])
    with pytest.raises(ValueError, match=r"counts must be whole numbers, one per row \(2\)"):
        r.table(np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="counts must be"):
        r.table(np.array([1, 1, 0]))
    for bad in (r.table, lambda c: r.totals(c[None, :])):  # a row drawn -1 times: AuRC -0.5
        with pytest.raises(ValueError, match=r"^counts must be at least 0 \(how many times "
                                             r"each row is drawn\); got -1\."):
            bad(np.array([-1, 2]))
    # 2**53 rows or more: int64 counts wrapped to a negative row count, or lost a row
    for bad, counts in ((r.table, np.array([2**62, 2**62])), (r.totals, np.array([[2**53, 1]]))):
        with pytest.raises(ValueError, match=r"^counts must draw fewer than 2\*\*53 rows per "
                                             r"resample"):
            bad(counts)
