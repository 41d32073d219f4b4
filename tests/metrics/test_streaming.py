"""StreamingMetric: batches and merged trackers give the metric of all rows at once."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import ScoreTable
from abstain.metrics import StreamingMetric, aurc, auroc, e_aurc, selective_risk_at_coverage


def test_batches_and_merged_workers_equal_the_metric_on_all_rows() -> None:
    rng = np.random.default_rng(0)
    u = rng.integers(0, 30, 1000) / 3.0
    ls = (rng.random(1000) < 0.2).astype(float)
    ood = rng.random(1000) < 0.3
    workers = [StreamingMetric("aurc") for _ in range(3)]
    for i, batch in enumerate(np.array_split(np.arange(1000), 12)):
        workers[i % 3].update(ls[batch], u[batch])
    assert workers[0].merge(*workers[1:]).compute() == aurc(ls, u)
    tracker = StreamingMetric("selective_risk_at_coverage", coverage=0.4)
    for batch in np.array_split(np.arange(1000), 7):
        tracker.update(ls[batch], u[batch])
    assert tracker.compute() == selective_risk_at_coverage(ls, u, 0.4)
    excess = StreamingMetric("e_aurc").update(ls[:500], u[:500]).update(ls[500:], u[500:])
    assert excess.compute() == e_aurc(ls, u)
    ood_tracker = StreamingMetric("auroc")
    for batch in np.array_split(np.arange(1000), 5):
        ood_tracker.update(ls[batch], u[batch], is_ood=ood[batch])
    assert ood_tracker.compute() == auroc(ood, u)
    table = ScoreTable.from_arrays(u, ls)
    assert StreamingMetric("aurc").merge(table).compute() == aurc(ls, u)
    assert StreamingMetric("aurc").update([0, 1], [0.1, 0.2]).reset().table.n == 0


def test_streaming_metric_refuses_misuse() -> None:
    with pytest.raises(ValueError, match="metric must be one of"):
        StreamingMetric("accuracy")
    with pytest.raises(ValueError, match="is_ood must be given to every update of auroc"):
        StreamingMetric("auroc").update([0, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="is_ood must be omitted for aurc"):
        StreamingMetric("aurc").update([0, 1], [0.1, 0.2], is_ood=[0, 1])
    with pytest.raises(ValueError, match="aurc has no rows yet"):
        StreamingMetric("aurc").compute()
    with pytest.raises(ValueError, match="tracks augrc, not aurc"):
        StreamingMetric("aurc").merge(StreamingMetric("augrc"))
    with pytest.raises(TypeError, match=r"others\[0\] must be a StreamingMetric"):
        StreamingMetric("aurc").merge([1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^ties='index' needs the row order"):
        StreamingMetric("aurc", ties="index")  # refused at construction, not at compute


def test_a_batch_without_rows_adds_nothing() -> None:
    whole = StreamingMetric("aurc").update([0.0, 1.0], [0.1, 0.9])
    parts = StreamingMetric("aurc").update([], []).update([0.0, 1.0], [0.1, 0.9]).update([], [])
    assert parts.compute() == whole.compute() == 0.25
    ood = StreamingMetric("auroc").update([], [], is_ood=[]).update(
        [0, 0], [0.1, 0.9], is_ood=[0, 1])
    assert ood.compute() == 1.0
    table = ScoreTable.from_arrays([0.1, 0.9], [0.0, 1.0])
    assert table.update([], []) == ScoreTable.from_arrays([0.1, 0.9], [0.0, 1.0])
    with pytest.raises(ValueError, match="must not be empty"):  # one empty, one not
        StreamingMetric("aurc").update([], [0.1])


def test_a_table_of_ood_rows_only_is_rebuilt_from_its_totals() -> None:
    t = ScoreTable.from_arrays([0.9, 0.8], [np.nan, np.nan], is_ood=[1, 1])
    again = ScoreTable.from_totals(t.values, t.counts, t.loss_sums, ood_counts=t.ood_counts,
                                   loss_values=t.loss_values, loss_counts=t.loss_counts,
                                   sq_loss_sums=t.sq_loss_sums)
    assert again == t and again.loss_values.size == 0


@pytest.mark.parametrize(("metric", "options", "error", "match"), [
    ("aurc", {"ties": "first"}, ValueError,
     r"^ties must be one of 'mean', 'index'; got 'first'\.$"),
    ("aurc", {"coverage": 0.5}, TypeError,
     r"^options of aurc must be among ties; got 'coverage'\.$"),
    ("sele_loss", {"ties": "mean"}, TypeError,
     r"^options of sele_loss must be omitted \(it takes none\); got 'ties'\.$"),
    ("aurc", {"uncertainty": [0.1]}, TypeError, r"^options of aurc must be among ties; got "
                                                r"'uncertainty'\.$"),
    ("selective_risk_at_coverage", {"coverage": np.float64(1.5)}, ValueError,
     r"^coverage must be in \(0, 1\]; got 1\.5\.$"),
    ("selective_risk_at_coverage", {}, ValueError, r"^coverage must be given; got None\.$"),
    ("coverage_at_risk", {"target_risk": -1}, ValueError,
     r"^target_risk must be a finite number in \(0, inf\); got -1\.$"),
    ("fpr_at_tpr", {"tpr": 0}, ValueError, r"^tpr must be in \(0, 1\]; got 0\.$"),
    ("auroc", {"search": "all"}, ValueError,
     r"^search must be one of 'auto', 'exact', 'grid'; got 'all'"),
    ("auroc", {"n_points": 1}, ValueError, r"^n_points must be an integer >= 2; got 1\.$"),
    ("oscr", {"n_directions": np.int64(0)}, ValueError,
     r"^n_directions must be an integer >= 1; got 0\.$"),
    ("selective_risk_at_tpr_fpr", {"tpr": 0.5, "fpr": 2.0}, ValueError,
     r"^fpr must be in \[0, 1\]; got 2\.0\.$"),
    ("selective_risk_at_precision_recall", {"precision": 0.5, "recall": 0.5, "ood_prior": 1},
     ValueError, r"^ood_prior must be in \(0, 1\); got 1\.$"),
])
def test_options_are_checked_at_construction_with_the_metrics_messages(
        metric: str, options: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        StreamingMetric(metric, **options)


def test_every_metric_constructs_with_its_valid_options_and_a_bad_name_is_plain() -> None:
    for metric, options in [("selective_risk_at_coverage", {"coverage": 0.5}),
                            ("coverage_at_risk", {"target_risk": 0.1}),
                            ("ccr_at_fpr", {"fpr": 0.1}),
                            ("selective_risk_at_tpr_fpr", {"tpr": 0.9, "fpr": 0.1}),
                            ("selective_risk_at_precision_recall",
                             {"precision": 0.99, "recall": 0.99}),  # infeasible on the probe
                            ("auroc", {"search": "exact"})]:
        assert StreamingMetric(metric, **options).options == options
    with pytest.raises(ValueError, match=r"; got \['aurc'\]\.$"):
        StreamingMetric(["aurc"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"; got 'x'\.$"):
        StreamingMetric(np.str_("x"))


def test_many_small_batches_give_the_table_of_the_rows_merged_as_a_binary_counter() -> None:
    # the state is merged as a binary counter (O(n log n) in all), not once per batch: the
    # same table and metric as the rows, for 0/1 losses bit for bit
    rng = np.random.default_rng(7)
    u = rng.random(3000).astype(np.float32).astype(float)
    losses = (rng.random(3000) < 0.3).astype(float)
    tracker = StreamingMetric("aurc")
    for start in range(0, 3000, 10):
        tracker.update(losses[start:start + 10], u[start:start + 10])
        assert tracker.n == start + 10
    pending = vars(tracker.table)["_pending"].parts  # read without merging them
    assert len(pending) <= 12  # about log2(300) tables pending, not 300
    assert tracker.compute() == aurc(losses, u)
    assert tracker.table == ScoreTable.from_arrays(u, losses, oracle=False)
    assert repr(tracker) == "StreamingMetric('aurc', n=3000)"


def test_merge_refuses_tables_the_metric_cannot_take_and_keeps_its_rows():
    # an OOD-marked table merged into an empty aurc tracker (or an unmarked one into auroc)
    # stuck the tracker; a table with oracle=False dropped the distinct losses of e_aurc
    rng = np.random.default_rng(0)
    u, losses = rng.random(30), (rng.random(30) < 0.3) * 1.0
    ood = rng.random(30) < 0.4
    with pytest.raises(ValueError, match=r"^others\[0\] must be a table without OOD marks for "
                                         r"aurc"):
        StreamingMetric("aurc").merge(ScoreTable.from_arrays(u, losses, is_ood=ood))
    with pytest.raises(ValueError, match=r"^others\[0\] must be a table with OOD marks for "
                                         r"auroc"):
        StreamingMetric("auroc").merge(ScoreTable.from_arrays(u, losses))
    tracker = StreamingMetric("e_aurc").update(losses[:20], u[:20])
    before = tracker.compute()
    with pytest.raises(ValueError, match=r"must keep its distinct losses for e_aurc"):
        tracker.merge(ScoreTable.from_arrays(u[20:], losses[20:], oracle=False))
    assert tracker.n == 20 and tracker.compute() == before
    tracker.merge(ScoreTable.from_arrays(u[20:], losses[20:]))
    assert tracker.compute() == e_aurc(losses, u)


def test_an_update_whose_merged_total_may_overflow_is_refused_before_it_joins():
    # the running total in batch order passed, the merge grouped by score overflowed:
    # the batch had joined and no field of the table could be read again
    l1 = [float.fromhex(h) for h in ("0x1.0dff83f8f8e1bp+1022", "0x1.d4eb8ec634a67p+1021",
                                     "0x1.1ebbbd179c2d0p+1022", "0x1.c2b859af72becp+1020")]
    t = ScoreTable.from_arrays([0.8, 0.1, 0.2, 0.0], l1)
    with pytest.raises(ValueError, match=r"^losses must have a sum within the float64 range"):
        t.update([0.6], [float.fromhex("0x1.e0838481cfb95p+1020")])
    assert t.n == 4 and t.values.tolist() == [0.0, 0.1, 0.2, 0.8]


def test_merging_an_empty_table_keeps_the_oracle_part():
    # an empty table without distinct losses (any selective tracker's) passed the check,
    # and the merge dropped the e_aurc tracker's distinct losses
    rng = np.random.default_rng(0)
    u, losses = rng.random(30), (rng.random(30) < 0.3) * 1.0
    tracker = StreamingMetric("e_aurc").update(losses, u)
    tracker.merge(StreamingMetric("aurc").table)
    assert tracker.compute() == e_aurc(losses, u)
