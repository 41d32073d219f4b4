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
    with pytest.raises(ValueError, match="ties='index' needs the row order"):
        StreamingMetric("aurc", ties="index").update([0, 1], [0.1, 0.2]).compute()
