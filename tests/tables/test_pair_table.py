"""PairTable: distinct score pairs with their totals; the double-score fits on a table equal
the fits on the rows it summarises."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest

import abstain
from abstain import PairTable
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD


def _rows(tied_pairs, seed: int, n: int = 600, continuous: bool = False):
    return tied_pairs(seed, n, 0.3, continuous)


def _brute(s, ood, loss):
    """The pairs and their totals by a dictionary over the rows."""
    out: dict[tuple[float, float], list[float]] = {}
    for (a, b), o, ls in zip(s.tolist(), ood.tolist(), loss.tolist(), strict=True):
        t = out.setdefault((a + 0.0, b + 0.0), [0, 0, 0.0])
        t[0] += 1
        t[1] += int(o)
        t[2] += 0.0 if o else ls
    return out


@pytest.mark.parametrize("seed", range(3))
def test_totals_and_merge_against_a_dictionary(seed, tied_pairs):
    s, ood, loss = _rows(tied_pairs, seed)
    table = PairTable.from_arrays(s, loss, is_ood=ood)
    ref = _brute(s, ood, loss)
    assert [tuple(p) for p in table.values.tolist()] == sorted(ref)
    assert table.counts.tolist() == [ref[k][0] for k in sorted(ref)]
    assert table.ood_counts.tolist() == [ref[k][1] for k in sorted(ref)]
    assert table.loss_sums.tolist() == [ref[k][2] for k in sorted(ref)]
    assert table.n == s.shape[0] and table.n_pairs == len(ref) < s.shape[0] / 2
    parts = [PairTable.from_arrays(s[i::4], loss[i::4], is_ood=ood[i::4]) for i in range(4)]
    assert PairTable.merge(*parts) == table
    streamed = PairTable()
    for i in range(0, s.shape[0], 97):
        streamed.update(s[i : i + 97], loss[i : i + 97], is_ood=ood[i : i + 97])
    assert streamed == table
    assert abstain.load_json(table.to_json()) == table
    negzero = PairTable.from_arrays([[-0.0, 1.0], [0.0, 1.0]], [0, 1], is_ood=[0, 0])
    assert negzero.n_pairs == 1


FITS = [lambda search: BoundedTPRFPR(tpr=0.7, fpr=0.4, search=search),
        lambda search: BoundedPrecisionRecall(precision=0.8, recall=0.6, search=search),
        lambda search: CostBasedOOD(reject_id_cost=0.3, predict_ood_cost=1.0, search=search)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("search", ["grid", "exact"])
@pytest.mark.parametrize("make", FITS)
@pytest.mark.parametrize("continuous", [False, True])
def test_a_fit_on_the_table_is_the_fit_on_the_rows(seed, search, make, continuous,
                                                    tied_pairs):
    s, ood, loss = _rows(tied_pairs, seed, n=300 if search == "exact" else 600,
                         continuous=continuous)
    parts = [PairTable.from_arrays(s[i::3], loss[i::3], is_ood=ood[i::3]) for i in range(3)]
    rows = make(search).fit(s, ood, loss)
    table = make(search).fit(PairTable.merge(*parts))
    for name in ("weights_", "threshold_", "accept_prob_", "tpr_", "fpr_", "risk_",
                 "feasible_", "n_scores_"):
        a, b = getattr(rows, name), getattr(table, name)
        if continuous and name in ("risk_", "accept_prob_"):
            np.testing.assert_allclose(b, a, rtol=1e-12)
        else:
            np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(table.accept_proba(s), rows.accept_proba(s))


def test_refusals_name_what_is_wrong(tied_pairs):
    s, ood, loss = _rows(tied_pairs, 0)
    table = PairTable.from_arrays(s, loss, is_ood=ood)
    with pytest.raises(ValueError, match="is_ood must be omitted when a PairTable is given"):
        BoundedTPRFPR(tpr=0.5, fpr=0.5).fit(table, ood)
    with pytest.raises(ValueError, match="a PairTable keeps no rows"):
        BoundedTPRFPR(tpr=0.5, fpr=0.5, delta=0.1).fit(table)
    with pytest.raises(ValueError, match="the PairTable must not be empty"):
        BoundedTPRFPR(tpr=0.5, fpr=0.5).fit(PairTable())
    only_id = PairTable.from_arrays(s[~ood], loss[~ood], is_ood=ood[~ood])
    with pytest.raises(ValueError, match="got only ID in the PairTable"):
        CostBasedOOD(reject_id_cost=0.3, predict_ood_cost=1.0).fit(only_id)
    with pytest.raises(ValueError, match=r"scores must have shape \(n, 2\)"):
        PairTable.from_arrays(s[:, 0], loss, is_ood=ood)
    with pytest.raises(ValueError, match="losses must not be NaN on ID rows"):
        PairTable.from_arrays(s, np.full(ood.size, np.nan), is_ood=ood)
    with pytest.raises(ValueError, match="finite"):
        PairTable.from_arrays([[np.inf, 0.0]], [0.0], is_ood=[0])
    with pytest.raises(TypeError, match=r"tables\[1\] must be a PairTable"):
        PairTable.merge(table, abstain.ScoreTable())
    with pytest.raises(ValueError, match="an empty PairTable has nothing to write"):
        PairTable().to_json()
    bad = PairTable.merge(table)
    bad.ood_counts = bad.counts + 1
    with pytest.raises(ValueError, match="ood_counts must be at most fitted.counts"):
        abstain.load_json(bad.to_json())
    bad = PairTable.merge(table)
    bad.values = bad.values[::-1].copy()
    with pytest.raises(ValueError, match="distinct pairs in lexicographic order"):
        abstain.load_json(bad.to_json())


def test_2d_losses_of_the_right_length_are_refused_with_their_shape() -> None:
    s = [[0.1, 0.2], [0.3, 0.4]]
    for losses in ([[0.0, 1.0], [1.0, 0.0]], [[0.0], [1.0]]):  # were broadcast against is_ood
        with pytest.raises(ValueError, match=rf"^losses must be one-dimensional; got an array "
                                             rf"of shape \({len(losses)}, {len(losses[0])}\)\.$"):
            PairTable.from_arrays(s, losses, is_ood=[0, 1])


def _bits(table):
    return {k: np.asarray(getattr(table, k), dtype=np.float64).tobytes() for k in table._FIELDS}


@pytest.mark.parametrize("scores, losses", [
    ([[0.1, 1.0]], [1e308]),
    ([[-1e308, 1e308], [5e-324, -5e-324], [0.0, -0.0]], [1.7976931348623157e308, 5e-324, 0.0]),
    ([[2.2250738585072014e-308, 1.0], [1.0, 2.0]], [4.9e-324, 1e-300]),
])
def test_what_to_json_writes_load_json_reads_back_bit_for_bit(scores, losses):
    table = PairTable.from_arrays(scores, losses, is_ood=[0] * len(losses))
    again = abstain.load_json(table.to_json())
    assert again == table and _bits(again) == _bits(table)



def test_a_negative_zero_is_kept_as_written():
    # from_arrays adds +0.0 (-0.0 and 0.0 are one value); a table given -0.0 keeps it
    table = PairTable.from_arrays([[0.0, 0.0]], [0.0], is_ood=[0])
    table.values = np.array([[-0.0, -0.0]])
    table.max_loss = -0.0
    again = abstain.load_json(table.to_json())
    assert _bits(again) == _bits(table) and math.copysign(1.0, again.max_loss) == -1.0


def test_loss_sums_beyond_the_float64_range_are_refused_when_built_not_when_loaded():
    big = [[0.1, 1.0], [0.1, 1.0]]
    with pytest.raises(ValueError, match=r"^losses must have a sum within the float64 range; "
                       r"got a sum that overflows \(scale the losses down, and the costs with "
                       r"them\)\.$"):
        PairTable.from_arrays(big, [1e308, 1e308], is_ood=[0, 0])
    one = PairTable.from_arrays(big[:1], [1e308], is_ood=[0])
    assert abstain.load_json(one.to_json()) == one
    with pytest.raises(ValueError, match=r"^the losses of the merged tables must have a sum "
                       "within the float64 range"):
        PairTable.merge(one, one)
    two = PairTable.from_arrays([[0.1, 1.0], [0.2, 1.0]], [1.0, 1.0], is_ood=[0, 0])
    doc = json.loads(two.to_json())
    doc["fitted"]["loss_sums"]["float64_le_base64"] = base64.b64encode(
        np.array([1e308, 1e308], dtype="<f8").tobytes()).decode()
    with pytest.raises(ValueError, match=r"^fitted\.loss_sums must have a sum within the "
                       "float64 range"):
        abstain.load_json(json.dumps(doc))


def test_update_with_a_batch_without_rows_adds_nothing():
    from abstain import PairTable

    t = PairTable.from_arrays([[0.1, 0.2], [0.3, 0.1]], [0.0, 1.0], is_ood=[False, True])
    before = t.to_json()
    assert t.update(np.zeros((0, 2)), [], is_ood=[]) is t
    assert t.to_json() == before


def test_update_refuses_an_overflowing_batch_at_once_and_keeps_its_rows():
    import copy

    from abstain import PairTable

    rng = np.random.default_rng(3)
    s, ood = rng.integers(0, 9, (400, 2)) / 8.0, rng.random(400) < 0.3
    loss = (rng.random(400) < 0.2).astype(float)
    t = PairTable()
    for i in range(0, 400, 10):
        t.update(s[i : i + 10], loss[i : i + 10], is_ood=ood[i : i + 10])
    whole = PairTable.from_arrays(s, loss, is_ood=ood)
    assert copy.deepcopy(t) == whole
    assert abstain.load_json(t.to_json()) == whole
    big = PairTable.from_arrays([[0.1, 0.2]], [6e307], is_ood=[False])
    big.update([[0.3, 0.2]], [6e307], is_ood=[False])  # finite alone, not with the table
    with pytest.raises(ValueError, match="losses of the merged tables must have a sum"):
        big.update([[0.2, 0.1]], [6e307], is_ood=[False])
    assert big.n == 2 and big.loss_sums.tolist() == [6e307, 6e307]
