"""``one_sample_per_table``: inside the block the OOD metrics of one table share its sample;
outside it every call builds its own, and the values are the same either way."""

from __future__ import annotations

import numpy as np

from abstain._ood_search.sample import Sample, one_sample_per_table
from abstain.metrics import evaluate_ood_tables
from abstain.tables import ScoreTable


def _table(seed: int) -> ScoreTable:
    rng = np.random.default_rng(seed)
    ood = rng.random(300) < 0.3
    losses = np.where(ood, 0.0, (rng.random(300) < 0.2).astype(float))
    return ScoreTable.from_arrays(np.round(rng.random(300), 2), losses, is_ood=ood)


def test_one_sample_per_table_object_inside_the_block_only() -> None:
    a, b = _table(0), _table(1)
    assert Sample.from_table(a) is not Sample.from_table(a)
    with one_sample_per_table():
        first = Sample.from_table(a)
        assert Sample.from_table(a) is first
        assert Sample.from_table(b) is not first
        with one_sample_per_table():  # nested: the same memo
            assert Sample.from_table(a) is first
    assert Sample.from_table(a) is not first


def test_metrics_of_tables_are_the_same_with_the_shared_sample(monkeypatch) -> None:
    import contextlib

    import abstain.metrics._ood_table as T

    tables = {"a": _table(2), "b": _table(3)}
    shared = evaluate_ood_tables(tables, fpr=0.3)
    monkeypatch.setattr(T, "one_sample_per_table", contextlib.nullcontext)
    alone = evaluate_ood_tables(tables, fpr=0.3)
    for name in tables:
        got, want = shared.row(name), alone.row(name)
        assert got.keys() == want.keys()
        np.testing.assert_array_equal(list(got.values()), list(want.values()))  # NaN == NaN
