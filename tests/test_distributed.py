"""abstain.distributed on a LocalCluster(processes=False): both plans give the table of the
rows, and the metrics and fits on it equal those on the rows (1e6 rows)."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import BoundedAbstention, BoundedImprovement, ScoreTable
from abstain.metrics import augrc, aurc, auroc, e_aurc, fpr_at_tpr

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from abstain.distributed import score_table  # noqa: E402

N = 1_000_000
# the test's rows are NumPy arrays sent with the graph; real data is read by the workers
pytestmark = pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    quantised = np.round(rng.random(N), 4)  # 10,001 groups
    fp32 = rng.random(N).astype(np.float32).astype(np.float64)  # about 970,000 groups
    losses = (rng.random(N) < 0.1 + 0.3 * quantised).astype(float)
    is_ood = rng.random(N) < 0.2
    return quantised, fp32, losses, is_ood


@pytest.mark.parametrize("scores", ["quantised", "fp32"])
@pytest.mark.parametrize("plan", ["tree", "range"])
def test_both_plans_give_the_table_of_the_rows(client, rows, scores, plan) -> None:
    quantised, fp32, losses, _ = rows
    u = quantised if scores == "quantised" else fp32
    table = score_table(da.from_array(u, chunks=N // 8), da.from_array(losses, chunks=N // 5),
                        plan=plan, n_ranges=3, oracle=True)
    whole = ScoreTable.from_arrays(u, losses)
    assert table == whole
    assert aurc(table) == aurc(losses, u) and augrc(table) == augrc(losses, u)
    assert e_aurc(table) == e_aurc(losses, u)
    for model in (BoundedAbstention(0.7), BoundedImprovement(0.3, delta=0.05, bound="sgr")):
        on_rows, on_table = model.fit(u, losses), type(model)(**model.get_params()).fit(table)
        assert (on_table.threshold_, on_table.accept_prob_) == (on_rows.threshold_,
                                                                on_rows.accept_prob_)


def test_dataframe_columns_ood_marks_and_the_auto_plan(client, rows) -> None:
    quantised, fp32, losses, is_ood = rows
    frame = dd.from_dict({"u": quantised[:200_000], "loss": losses[:200_000],
                          "ood": is_ood[:200_000]}, npartitions=6)
    table = score_table(frame["u"], frame["loss"], is_ood=frame["ood"])
    whole = ScoreTable.from_arrays(quantised[:200_000], losses[:200_000],
                                   is_ood=is_ood[:200_000], oracle=False)
    assert table == whole
    assert auroc(table) == auroc(is_ood[:200_000], quantised[:200_000])
    assert fpr_at_tpr(table) == fpr_at_tpr(is_ood[:200_000], quantised[:200_000])
    # auto: few groups take the tree, many groups beyond max_groups the range plan
    small = score_table(da.from_array(fp32[:50_000], chunks=10_000),
                        da.from_array(losses[:50_000], chunks=10_000), max_groups=10_000)
    assert small == ScoreTable.from_arrays(fp32[:50_000], losses[:50_000], oracle=False)


def test_bad_collections_are_refused(client, rows) -> None:
    quantised, _, losses, _ = rows
    frame = dd.from_dict({"u": quantised[:100], "loss": losses[:100]}, npartitions=2)
    with pytest.raises(ValueError, match="must be one column"):
        score_table(frame, frame["loss"])
    with pytest.raises(ValueError, match="must have the same length"):
        score_table(da.from_array(quantised[:100], chunks=50), da.from_array(losses[:90]))
    with pytest.raises(ValueError, match="plan must be one of"):
        score_table(da.from_array(quantised[:100]), da.from_array(losses[:100]), plan="star")
    with pytest.raises(ValueError, match="losses must be non-negative"):
        score_table(da.from_array(quantised[:100]), da.from_array(-losses[:100] - 1))
    with pytest.raises(ValueError, match="one-dimensional"):
        score_table(da.zeros((3, 3)), da.zeros((3, 3)))
