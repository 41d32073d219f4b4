"""Tables: row totals beyond 2**53 and resamples of rows whose squares overflow."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import ScoreTable, load_json


def test_from_totals_counts_rows_beyond_2_53_exactly():
    # float64 sums of the counts rounded: 2**53 + 1 ID rows with 2**53 losses passed (and
    # load_json refused the table), and a consistent table of 2**53 ID rows was refused
    B = 2**52
    with pytest.raises(ValueError, match=r"^loss_counts must add up to the ID rows of counts "
                                         r"\(9007199254740993\); got 9007199254740992\."):
        ScoreTable.from_totals([0.1, 0.2], [B, B + 1], [0.0, B], loss_values=[0.0, 1.0],
                               loss_counts=[B, B])
    t = ScoreTable.from_totals([0.1, 0.2], [B, B + 1], [0.0, B], loss_values=[0.0, 1.0],
                               loss_counts=[B, B], ood_counts=[0, 1])
    assert load_json(t.to_json()) == t


def test_a_resample_leaves_out_the_squares_of_rows_it_did_not_draw():
    # 0 * inf (the square of 1e200, a row not drawn beside drawn rows of its score) was NaN:
    # the squared-loss sums were dropped and a fit with delta refused the table
    from abstain.tables import TableResampler

    u = np.array([0.1, 0.1, 0.2, 0.2])
    losses = np.array([0.0, 1e200, 0.5, 0.5])
    counts = np.array([[1, 0, 1, 1]])
    table = TableResampler(u, losses).table(counts[0])
    want = ScoreTable.from_arrays(np.repeat(u, counts[0]), np.repeat(losses, counts[0]))
    assert table == want and table.sq_loss_sums is not None
