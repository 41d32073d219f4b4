"""ScoreTable.from_totals: the concatenated fields of tables (as gathered from processes, or
a group-by elsewhere) give the table of all their rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from abstain import PairTable, ScoreTable
from abstain.metrics import aurc, auroc, e_aurc


def _fields(tables):
    cat = np.concatenate
    return dict(values=cat([t.values for t in tables]), counts=cat([t.counts for t in tables]),
                loss_sums=cat([t.loss_sums for t in tables]),
                sq_loss_sums=cat([t.sq_loss_sums for t in tables]),
                loss_values=cat([t.loss_values for t in tables]),
                loss_counts=cat([t.loss_counts for t in tables]))


@pytest.mark.parametrize("seed", range(6))
def test_the_fields_of_parts_give_the_table_of_all_rows(seed):
    rng = np.random.default_rng(seed)
    n = 300
    u = rng.integers(0, 20, n) / 4.0  # many ties, across parts too
    losses = rng.integers(0, 2, n) * 1.0 if seed % 2 else rng.integers(0, 5, n) / 4.0
    ood = rng.random(n) < 0.3
    cuts = np.sort(rng.choice(np.arange(1, n), 3, replace=False))
    pieces = list(zip(np.split(u, cuts), np.split(losses, cuts), np.split(ood, cuts),
                      strict=True))
    parts = [ScoreTable.from_arrays(a, b, is_ood=c) for a, b, c in pieces]
    got = ScoreTable.from_totals(**_fields(parts),
                                 ood_counts=np.concatenate([t.ood_counts for t in parts]))
    whole = ScoreTable.from_arrays(u, losses, is_ood=ood)
    assert got == whole == ScoreTable.merge(*parts)
    assert auroc(got) == auroc(whole)
    plain = [ScoreTable.from_arrays(a, b) for a, b, _ in pieces]
    got = ScoreTable.from_totals(**_fields(plain))
    whole = ScoreTable.from_arrays(u, losses)
    assert got == whole == ScoreTable.merge(*plain)
    assert aurc(got) == aurc(whole) and e_aurc(got) == e_aurc(whole)


def test_bad_totals_are_refused():
    ok = dict(values=[0.1, 0.2], counts=[1, 2], loss_sums=[0.0, 1.0], loss_values=[0.0, 1.0],
              loss_counts=[2, 1])
    ScoreTable.from_totals(**ok)
    for key, bad, message in (
            ("counts", [1, 2.5], "counts must be whole numbers; got 2.5"),
            ("counts", [1], r"counts must have shape \(2,\)"),
            ("loss_sums", [0.0, -1.0], "loss_sums must be finite and non-negative; got -1"),
            ("values", [0.1, np.nan], "values .*NaN"),
            ("loss_counts", [2, 2], r"loss_counts must add up to the ID rows of counts \(3\); "
                                    "got 4")):
        with pytest.raises(ValueError, match=message):
            ScoreTable.from_totals(**{**ok, key: bad})
    with pytest.raises(ValueError, match="ood_counts must be at most counts"):
        ScoreTable.from_totals(**ok, ood_counts=[2, 0])


@pytest.mark.parametrize("seed", range(4))
def test_pair_totals_of_parts_give_the_pair_table_of_all_rows(seed):

    rng = np.random.default_rng(seed)
    n = 300
    s = rng.integers(0, 6, (n, 2)) / 2.0
    s[rng.random(n) < 0.1, 0] = -0.0  # -0.0 and 0.0 are one value
    losses = (rng.random(n) < 0.3) * 1.0
    ood = rng.random(n) < 0.4
    cuts = [100, 180]
    parts = [PairTable.from_arrays(a, b, is_ood=c) for a, b, c in
             zip(np.split(s, cuts), np.split(losses, cuts), np.split(ood, cuts), strict=True)]
    cat = np.concatenate
    got = PairTable.from_totals(cat([t.values for t in parts]), cat([t.counts for t in parts]),
                                cat([t.ood_counts for t in parts]),
                                cat([t.loss_sums for t in parts]),
                                max_loss=max(t.max_loss for t in parts))
    assert got == PairTable.from_arrays(s, losses, is_ood=ood) == PairTable.merge(*parts)
    with pytest.raises(ValueError, match=r"values must have shape \(P, 2\)"):
        PairTable.from_totals([1.0], [1], [0], [0.0], max_loss=0.0)
    with pytest.raises(ValueError, match="ood_counts must be at most counts"):
        PairTable.from_totals([[1.0, 2.0]], [1], [2], [0.0], max_loss=0.0)
    for bad in (-1.0, "a", None, 10**400):  # float()'s own messages for the last three
        with pytest.raises(ValueError, match="max_loss must be a finite number >= 0"):
            PairTable.from_totals([[1.0, 2.0]], [1], [0], [0.0], max_loss=bad)
    for fine in (np.array(1.0), __import__("fractions").Fraction(1)):  # real numbers
        assert PairTable.from_totals([[1.0, 2.0]], [1], [0], [0.0], max_loss=fine).max_loss == 1


@pytest.mark.parametrize(("counts", "sums", "ood"), [
    ([1, 1], [5.0, 0.0], None),  # one row, a loss sum above the largest loss
    ([0, 2], [3.0, 1.0], None),  # a loss on a score of no rows
    ([1, 1], [1.0, 0.0], [1, 0]),  # a loss on a score of OOD rows only
])
def test_loss_sums_beyond_the_rows_and_the_largest_loss_are_refused(counts, sums, ood):
    # a table from_totals builds is one that load_json would read back
    with pytest.raises(ValueError, match=r"^loss_sums must be at most the ID rows of each "
                                         r"group times the largest of loss_values"):
        ScoreTable.from_totals([0.0, 1.0], counts, sums, loss_values=[0.0, 1.0],
                               loss_counts=[1, 1] if ood is None else [1, 0], ood_counts=ood)


@pytest.mark.parametrize(("counts", "ood", "sums"), [
    ([1, 1], [0, 0], [5.0, 0.0]),  # one row, a loss sum above the largest loss
    ([0, 2], [0, 0], [3.0, 1.0]),  # a loss on a pair of no rows (which is dropped)
    ([1, 1], [1, 0], [1.0, 0.0]),  # a loss on a pair of OOD rows only
])
def test_pair_loss_sums_beyond_the_rows_and_the_largest_loss_are_refused(counts, ood, sums):
    with pytest.raises(ValueError, match=r"^loss_sums must be at most the ID rows of each "
                                         r"group times max_loss \(1\.0\)"):
        PairTable.from_totals([[0.0, 1.0], [1.0, 0.0]], counts, ood, sums, max_loss=1.0)


def test_totals_that_contradict_their_loss_distribution_are_refused_as_load_json_does():
    import abstain

    ok = dict(values=[0.1, 0.5, 0.9], counts=[4, 4, 4], loss_sums=[1.0, 2.0, 3.0],
              loss_values=[0.0, 1.0], loss_counts=[6, 6], sq_loss_sums=[1.0, 2.0, 3.0])
    t = ScoreTable.from_totals(**ok)
    assert abstain.load_json(t.to_json()) == t
    for change, message in (
        ({"loss_sums": [1.0, 2.0, 4.0], "sq_loss_sums": [1.0, 2.0, 4.0]},
         r"^loss_sums must add up to the sum over loss_values times loss_counts \(6\.0\); "
         r"got 7\.0\.$"),
        ({"sq_loss_sums": [0.0, 2.0, 3.0]},
         r"^sq_loss_sums must lie between the square of each group's loss sum over its ID "
         r"rows and max_loss times its loss sum; got 0\.0 for 4 ID row\(s\) with loss sum 1\.0 "
         r"in group 0\.$"),
        ({"loss_values": [0.0, 0.5], "loss_counts": [6, 6],
          "loss_sums": [0.5, 1.0, 1.5], "sq_loss_sums": [0.5, 1.0, 1.5]},
         r"^sq_loss_sums must lie between"),
    ):
        with pytest.raises(ValueError, match=message):
            ScoreTable.from_totals(**{**ok, **change})
    # a loaded document with squares no losses give: refused as well
    bad = ScoreTable.from_arrays([0.1, 0.1, 0.5], [1.0, 0.0, 0.5])
    bad.sq_loss_sums = bad.sq_loss_sums * 0.0
    from abstain._core.serialize import _document  # the document, before to_json reads it

    with pytest.raises(ValueError, match=r"^fitted\.sq_loss_sums must lie between"):
        abstain.load_json(json.dumps(_document(bad)))
    with pytest.raises(ValueError, match=r"cannot be saved: load_json would refuse its "
                       r"document \(fitted\.sq_loss_sums must lie between"):
        bad.to_json()  # and such a table is never written


def test_a_table_without_sums_of_squares_says_so_for_a_risk_bound():
    from abstain import BoundedImprovement

    t = ScoreTable.from_totals([0.1, 0.5], [2, 2], [0.5, 0.5], loss_values=[0.0, 0.5],
                               loss_counts=[2, 2])
    with pytest.raises(ValueError, match=r"^this ScoreTable holds no sums of squared losses: "
                                         r"built by from_totals without sq_loss_sums"):
        BoundedImprovement(0.5, delta=0.1, bound="sgr").fit(t)


def test_squares_that_underflow_are_no_contradiction():
    import abstain

    t = ScoreTable.from_arrays([0.1] * 5, np.full(5, 1.0031132051443412e-162))
    assert t.sq_loss_sums.tolist() == [0.0]
    assert abstain.load_json(t.to_json()) == t


def test_zero_one_losses_with_a_loss_distribution_need_whole_sums_and_counts_below_2_53():
    import base64
    import json

    import abstain
    from abstain import PairTable

    # one row of a 0/1 loss cannot sum to 0.5, with or without the distribution of losses
    t = ScoreTable.from_arrays([0.1, 0.2, 0.2, 0.9, 0.9, 0.9], [0, 1, 0, 1, 1, 0])
    doc = json.loads(t.to_json())
    half = {"float64_le_base64": base64.b64encode(
        np.array([0.5, 0.5, 2.0], dtype="<f8").tobytes()).decode(), "shape": [3]}
    doc["fitted"]["loss_sums"] = doc["fitted"]["sq_loss_sums"] = half
    with pytest.raises(ValueError, match=r"^fitted\.binary is true, so fitted\.loss_sums must"):
        abstain.load_json(json.dumps(doc))
    with pytest.raises(ValueError, match=r"^loss_values are 0 or 1, so loss_sums must be whole"):
        ScoreTable.from_totals([0.1, 0.2, 0.9], [1, 2, 3], [0.5, 0.5, 2.0],
                               loss_values=[0.0, 1.0], loss_counts=[3, 3])
    # counts at or beyond 2**53 are not exact in float64 (1e19 wrapped to a negative count)
    with pytest.raises(ValueError, match=r"^counts must be whole numbers below 2\*\*53"):
        PairTable.from_totals([[0.1, 0.2], [0.3, 0.1]], [1e19, 1], [0, 1], [0.0, 0.0],
                              max_loss=1.0)
    with pytest.raises(ValueError, match=r"^counts must be whole numbers below 2\*\*53"):
        ScoreTable.from_totals([0.1, 0.2], [2**53 + 2, 1], [0.0, 0.0], loss_values=[0.0],
                               loss_counts=[2**53 + 3])
