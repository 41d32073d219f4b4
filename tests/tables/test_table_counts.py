"""Tables: row totals beyond 2**53 and resamples of rows whose squares overflow."""

from __future__ import annotations

import base64
import json

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


def test_merges_of_2_53_rows_or_more_at_one_score_are_refused():
    # a merge counted 2**53 + 2 rows at one score: its own document was refused by
    # load_json, and 1,025 such parts wrapped int64 counts to negative numbers
    from abstain import BinnedTable, PairTable
    from abstain.metrics import StreamingMetric

    big = 2**52 + 1
    a = ScoreTable.from_totals([0.5], [big], [0.0], loss_values=[0.0], loss_counts=[big])
    b = ScoreTable.from_totals([0.25], [big], [float(big)], loss_values=[1.0],
                               loss_counts=[big])
    c = ScoreTable.from_totals([0.25], [big], [0.0], loss_values=[0.0], loss_counts=[big])
    message = r"^the merged tables count 9\.0072e\+15 rows at one score, beyond the 2\*\*53"
    with pytest.raises(ValueError, match=message):
        ScoreTable.merge(a, a)
    assert load_json(ScoreTable.merge(a, b).to_json()).counts.tolist() == [big, big]
    with pytest.raises(ValueError, match=r"^the merged tables count 9\.0072e\+15 rows of one "
                       r"loss, beyond the 2\*\*53"):  # the oracle's loss distribution
        ScoreTable.merge(a, c)
    with pytest.raises(ValueError, match=message):
        StreamingMetric("aurc").merge(a, a)
    top = 2**53 - 1
    stream = ScoreTable.from_totals([0.5], [top], [0.0], loss_values=[0.0], loss_counts=[top])
    stream.update([0.75], [1.0])  # another score and loss: it joins
    with pytest.raises(ValueError, match=r"^the merged tables count 9\.0072e\+15 rows at "
                       r"one score"):
        stream.update([0.5], [0.0])  # joined lazily, the merge failed when a field was read
    assert stream.counts.tolist() == [top, 1]
    p = PairTable.from_totals([[0.5, 1.0]], [big], [0], [0.0], max_loss=1.0)
    with pytest.raises(ValueError, match=message):
        PairTable.merge(p, p)
    many = BinnedTable([0.0, 1.0]).add(ScoreTable.from_totals(
        [0.5], [2**53 - 1], [0.0], loss_values=[0.0], loss_counts=[2**53 - 1]))
    with pytest.raises(ValueError, match=r"^the rows of the merged tables must add up to fewer "
                       r"than 2\*\*62 rows"):
        BinnedTable.merge(*[many] * 1025)
    with pytest.raises(ValueError, match=r"^the table with these rows count"):
        BinnedTable([0.0, 1.0]).add(a).add(a)


def test_a_loss_sum_below_its_rows_times_the_least_loss_is_refused():
    # every loss 1 or 2, yet one row of loss sum 0.5: AuRC 0.986 from totals no rows give
    kw = {"loss_values": [1.0, 2.0], "loss_counts": [2, 1]}
    with pytest.raises(ValueError, match=r"^loss_sums must be at least the ID rows of each "
                       r"group times the least loss \(1\.0\); got 0\.5 for 1 ID row\(s\) in "
                       r"group 0\.$"):
        ScoreTable.from_totals([0.1, 0.9], [1, 2], [0.5, 3.5], **kw)
    good = ScoreTable.from_totals([0.1, 0.9], [1, 2], [1.0, 3.0], **kw)
    doc = json.loads(good.to_json())
    doc["fitted"]["loss_sums"]["float64_le_base64"] = base64.b64encode(
        np.array([0.5, 3.5]).tobytes()).decode()
    with pytest.raises(ValueError, match=r"^fitted\.loss_sums must be at least the ID rows"):
        load_json(json.dumps(doc))
