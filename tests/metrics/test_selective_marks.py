"""0/1 losses on distinct scores: AuRC, AUGRC, E-AuRC and the SELE loss read the losses as
marks in score order (no counts, no float totals) and give the floats of the table path,
bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import ScoreTable
from abstain._core.groups import loss_totals, min_rows_of_code_groups
from abstain.metrics import augrc, aurc, e_aurc, sele_loss

N = min_rows_of_code_groups() + 5


@pytest.mark.parametrize("seed", range(6))
def test_marks_give_the_floats_of_the_table(seed) -> None:
    rng = np.random.default_rng(seed)
    s = (rng.random(N) - rng.choice([0.0, 0.5])) * [1e-3, 1.0, 1e6][seed % 3]
    losses = (rng.random(N) < rng.random()).astype(float)
    if seed == 4:
        losses[:] = 0.0  # one class
    if seed == 5:
        losses[:] = 1.0
    counts, marks = loss_totals(s, losses)
    assert counts is None and marks.dtype == np.uint8  # the path under test applies
    assert np.array_equal(marks, losses[np.argsort(s)])
    table = ScoreTable.from_arrays(s, losses)
    for metric in (aurc, augrc, e_aurc, sele_loss):
        assert metric(losses, s) == metric(table)


def test_ties_and_other_losses_keep_the_counts() -> None:
    rng = np.random.default_rng(7)
    s = np.round(rng.random(N), 2)
    losses = (rng.random(N) < 0.3).astype(float)
    counts, sums = loss_totals(s, losses)
    assert counts is not None and counts.sum() == N and sums.sum() == losses.sum()
    counts, sums = loss_totals(rng.random(N), losses * 0.5)
    assert counts is not None and sums.dtype == np.float64


def test_losses_that_are_0_1_only_at_the_head_get_the_totals_of_group_totals() -> None:
    """0/1 losses in the first rows and others later (the class path is tried and gives
    up), and scores already ascending: the totals of ``group_totals``, bit for bit."""
    from abstain._core.groups import group_totals

    rng = np.random.default_rng(8)
    for s in (rng.random(N), np.round(rng.random(N), 2), np.sort(rng.random(N))):
        losses = (rng.random(N) < 0.3).astype(float)
        losses[N // 2 :] *= rng.random(N - N // 2)
        counts, sums = loss_totals(s, losses)
        _, want_counts, (want,) = group_totals(s, losses, values=False)
        assert np.array_equal(counts, want_counts) and np.array_equal(sums, want)
        for metric in (aurc, augrc):
            assert metric(losses, s) == metric(ScoreTable.from_arrays(s, losses))
