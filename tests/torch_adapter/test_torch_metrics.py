"""abstain.torch.metrics: each torchmetrics Metric equals abstain's NumPy metric on the same
rows, ties included, however the rows are cut into batches and processes; the distributed
reduction is torchmetrics' own (merge_state, and two gloo processes)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from abstain import ScoreTable  # noqa: E402
from abstain import metrics as m  # noqa: E402
from abstain.torch import metrics as tm  # noqa: E402

SELECTIVE = {tm.AURC: m.aurc, tm.EAURC: m.e_aurc, tm.AUGRC: m.augrc,
             tm.SelectiveRiskAtCoverage: lambda ls, u: m.selective_risk_at_coverage(ls, u, 0.9)}
OOD = {tm.AUROC: m.auroc, tm.FPRAtTPR: lambda o, s: m.fpr_at_tpr(o, s, 0.95),
       tm.AUPRIn: m.aupr_in, tm.AUPROut: m.aupr_out}


def _rows(seed, n=500):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 30, n) / 10.0  # many ties
    losses = (rng.random(n) < 0.3) * 1.0 if seed % 2 else rng.integers(0, 4, n) / 3.0
    ood = (rng.random(n) < 0.4).astype(np.float64)
    return u, losses, ood


def _batches(rng, n, k=4):
    return np.split(rng.permutation(n), np.sort(rng.choice(np.arange(1, n), k - 1, replace=False)))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cls", list(SELECTIVE) + list(OOD))
def test_equal_to_the_numpy_metric_over_batches(cls, seed):
    u, losses, ood = _rows(seed)
    metric = cls()
    target = ood if cls in OOD else losses
    for rows in _batches(np.random.default_rng(seed), u.size):
        metric.update(torch.tensor(u[rows]), torch.tensor(target[rows]))
    want = OOD[cls](ood, u) if cls in OOD else SELECTIVE[cls](losses, u)
    got = metric.compute()
    assert got.dtype == torch.float64
    if cls in OOD or seed % 2:  # 0/1 losses (or none): bit for bit
        assert float(got) == want
    else:  # losses k/3: the group sums are added in another order
        assert float(got) == pytest.approx(want, rel=1e-12)


def test_class_probabilities_and_labels_give_the_msp_uncertainty_and_errors():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(300, 4))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = rng.integers(0, 4, 300)
    metric = tm.AURC()
    metric.update(torch.tensor(probs[:100]), torch.tensor(y[:100]))
    metric.update(torch.tensor(probs[100:]), torch.tensor(y[100:]))
    errors = (probs.argmax(1) != y) * 1.0
    assert float(metric.compute()) == m.aurc(errors, 1.0 - probs.max(1))


@pytest.mark.parametrize("cls", [tm.AURC, tm.AUROC, tm.SelectiveRiskAtCoverage])
def test_two_processes_merged_by_torchmetrics_equal_all_rows(cls):
    u, losses, ood = _rows(7)
    target = ood if cls is tm.AUROC else losses
    a, b = cls(), cls()
    a.update(torch.tensor(u[:200]), torch.tensor(target[:200]))
    b.update(torch.tensor(u[200:]), torch.tensor(target[200:]))
    a.merge_state(b)  # torchmetrics' reduction of the states (dist_reduce_fx="cat")
    whole = cls()
    whole.update(torch.tensor(u), torch.tensor(target))
    assert float(a.compute()) == float(whole.compute())


def test_the_state_is_the_tie_group_table():
    metric = tm.AURC()
    u = torch.tensor([0.5, 0.5, 0.1, 0.5, 0.1], dtype=torch.float64)
    metric.update(u, torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0]))
    metric.update(u, torch.tensor([0.0, 0.0, 0.0, 1.0, 0.0]))
    (values,), (counts,), (sums,) = metric.values, metric.counts, metric.loss_sums
    assert values.tolist() == [0.1, 0.5] and counts.tolist() == [4, 6]
    assert sums.tolist() == [0.0, 3.0]


def test_forward_gives_the_batch_value_and_keeps_every_row():
    u, losses, _ = _rows(2)
    metric = tm.AUGRC()
    batch = metric(torch.tensor(u[:100]), torch.tensor(losses[:100]))
    assert float(batch) == m.augrc(losses[:100], u[:100])
    metric(torch.tensor(u[100:]), torch.tensor(losses[100:]))
    assert float(metric.compute()) == m.augrc(losses, u)
    metric.reset()
    with pytest.raises(ValueError, match="AUGRC has seen no rows: call update first"), \
            pytest.warns(UserWarning, match="called before the ``update``"):
        metric.compute()


def test_bad_input():
    with pytest.raises(ValueError, match=r"coverage must be in \(0, 1\]"):
        tm.SelectiveRiskAtCoverage(coverage=0.0)
    with pytest.raises(ValueError, match=r"tpr must be in \(0, 1\]"):
        tm.FPRAtTPR(tpr=1.5)
    with pytest.raises(ValueError, match=r"preds must be OOD scores of shape \(N,\)"):
        tm.AUROC().update(torch.zeros(3, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="uncertainty.*NaN"):
        tm.AURC().update(torch.tensor([0.1, float("nan")]), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"target must be class labels of shape \(2,\)"):
        tm.AURC().update(torch.ones(2, 3) / 3, torch.zeros(3))
    with pytest.raises(ValueError, match="losses must be non-negative"):
        tm.AURC().update(torch.tensor([0.1, 0.2]), torch.tensor([0.0, -1.0]))


def _worker(rank, world, path, u, target, name):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{path}/store", rank=rank,
                            world_size=world)
    try:
        metric = getattr(tm, name)()
        rows = np.array_split(np.arange(u.size), world)[rank]
        metric.update(torch.tensor(u[rows]), torch.tensor(target[rows]))
        value = float(metric.compute())  # synchronised through torch.distributed
        with open(os.path.join(path, f"rank{rank}.json"), "w") as f:
            json.dump(value, f)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("name", ["AURC", "AUROC"])
def test_two_gloo_processes_synchronise_to_the_value_of_all_rows(tmp_path, name):
    import torch.multiprocessing as mp

    u, losses, ood = _rows(9, n=301)
    target = ood if name == "AUROC" else losses
    mp.spawn(_worker, args=(2, str(tmp_path), u, target, name), nprocs=2, join=True)
    want = m.auroc(ood, u) if name == "AUROC" else m.aurc(losses, u)
    for rank in range(2):
        assert json.loads((tmp_path / f"rank{rank}.json").read_text()) == want


@pytest.mark.parametrize("cls", [tm.AURC, tm.AUGRC, tm.AUROC])
def test_the_binned_state_is_fixed_and_gives_the_binned_tables_bound(cls):
    from abstain import ScoreTable
    from abstain.tables import BinnedTable

    rng = np.random.default_rng(11)
    u = rng.random(3000)
    losses = (rng.random(3000) < u).astype(np.float64)
    ood = (rng.random(3000) < 0.3 + 0.4 * u).astype(np.float64)
    edges = np.linspace(0.0, 1.0, 65)
    target = ood if cls is tm.AUROC else losses
    a, b = cls(edges=edges), cls(edges=edges)
    a.update(torch.tensor(u[:1000]), torch.tensor(target[:1000]))
    b.update(torch.tensor(u[1000:]), torch.tensor(target[1000:]))
    assert a.bin_counts.shape == (64,)  # the state does not grow with the rows
    a.merge_state(b)  # torchmetrics' sum / min / max reductions
    if cls is tm.AUROC:
        table = ScoreTable.from_arrays(u, np.zeros(3000), is_ood=ood)
        exact = m.auroc(ood, u)
    else:
        table = ScoreTable.from_arrays(u, losses)
        exact = (m.aurc if cls is tm.AURC else m.augrc)(losses, u)
    want = getattr(BinnedTable(edges).add(table), cls.__name__.lower())()
    got = a.bounded()
    assert got == pytest.approx(want, abs=1e-12)
    assert float(a.compute()) == got.value
    assert abs(exact - got.value) <= got.error
    with pytest.raises(ValueError, match="edges is taken by AURC, AUGRC and AUROC"):
        tm.EAURC(edges=edges)
    # plain lists and tuples of numbers are edges too (a list was read as a list state)
    for given in (edges.tolist(), tuple(edges.tolist())):
        c = cls(edges=given)
        np.testing.assert_array_equal(c.edges, edges)
    with pytest.raises(ValueError, match="bounded\\(\\) needs the binned state"):
        cls().bounded()


def _probability_batch():  # type: ignore[no-untyped-def]
    """Eight rows of class probabilities over three classes and their labels, seeded."""
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(8, 3, generator=g), dim=1)
    return probs, torch.randint(0, 3, (8,), generator=g)


@pytest.mark.parametrize("edges", [None, torch.linspace(0, 1, 11)])
def test_a_batch_without_rows_adds_nothing(edges):
    # docs/torch.md's pattern: update(probs[ind], y[ind]) with ind the ID rows of a batch,
    # which is empty for a batch of OOD rows only
    probs, y = _probability_batch()
    whole, parts = tm.AURC(edges=edges), tm.AURC(edges=edges)
    whole.update(probs, y)
    parts.update(probs[:8][:0], y[:0])
    parts.update(probs, y)
    parts.update(probs[:0], y[:0])
    assert float(parts.compute()) == float(whole.compute())


def test_ood_metrics_take_a_first_batch_of_ood_rows_only():
    scores = torch.tensor([0.9, 0.8, 0.1, 0.3])
    is_ood = torch.tensor([1, 1, 0, 0])
    for cls in (tm.AUROC, tm.FPRAtTPR):
        metric = cls()
        metric.update(scores[:2], is_ood[:2])
        with pytest.raises(ValueError, match="must contain both ID .* and OOD"):
            metric.compute()
        metric.update(scores[2:], is_ood[2:])
        whole = cls()
        whole.update(scores, is_ood)
        assert float(metric.compute()) == float(whole.compute())
    assert float(tm.AUROC()._value(ScoreTable.from_arrays(
        scores.numpy(), np.zeros(4), is_ood=is_ood.numpy()))) == 1.0


@pytest.mark.parametrize("labels", [[0, 7, 1, 1], [0, -1, 1, 1], [0.0, 0.5, 1.0, 1.0],
                                    [0.0, float("nan"), 1.0, 1.0]])
def test_labels_that_are_no_class_of_the_probabilities_are_refused(labels):
    probs = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    with pytest.raises(ValueError, match=r"^target must hold class indices in 0\.\.1 \(one "
                                         r"per column of preds\); got "):
        tm.AURC().update(probs, torch.tensor(labels))


@pytest.mark.parametrize("edges", [None, torch.linspace(0, 1, 11)])
def test_forward_on_a_batch_it_cannot_evaluate_keeps_every_row(edges):
    # torchmetrics' forward set the rows seen aside for the batch and lost them when the
    # batch raised (no rows; OOD rows only): the Lightning step pattern metric(p[ind], y[ind])
    probs, y = _probability_batch()
    whole, steps = tm.AURC(edges=edges), tm.AURC(edges=edges)
    whole.update(probs, y)
    steps(probs[:5], y[:5])
    assert torch.isnan(steps(probs[:0], y[:0]))
    steps(probs[5:], y[5:])
    assert float(steps.compute()) == float(whole.compute())
    scores, is_ood = torch.tensor([0.9, 0.2, 0.8, 0.1, 0.3]), torch.tensor([1, 0, 1, 0, 0])
    auroc, every = tm.AUROC(), tm.AUROC()
    every.update(scores, is_ood)
    auroc(scores[:2], is_ood[:2])
    assert torch.isnan(auroc(scores[2:3], is_ood[2:3]))  # one class: no batch value
    auroc(scores[3:], is_ood[3:])
    assert float(auroc.compute()) == float(every.compute())


def test_integer_scores_beyond_float64_and_probabilities_outside_0_1_are_refused():
    with pytest.raises(ValueError, match="integers that float64 cannot hold exactly"):
        tm.AUROC().update(torch.tensor([2**53, 2**53 + 1]), torch.tensor([0, 1]))
    for bad in (-float("inf"), -0.1, 3.0):
        with pytest.raises(ValueError, match=r"^preds of shape \(N, C\) must be class "
                                             r"probabilities in \[0, 1\]"):
            tm.AURC().update(torch.tensor([[0.7, bad], [0.4, 0.6]]), torch.tensor([0, 1]))
    assert all(getattr(tm.AURC(), name) == [] for name in ("values", "counts"))
    assert tm.AURC().dtype == torch.float64  # what an empty process sends in a sync


def test_a_dtype_conversion_moves_no_state_off_float64_and_merge_state_recomputes():
    # Module.to(dtype), as a precision setting converts a parent module, rounded the exact
    # state (torchmetrics guards .half() and .float() only); merge_state kept a stale value
    rng = np.random.default_rng(0)
    u, loss = torch.tensor(rng.random(200)), torch.tensor((rng.random(200) < 0.3) * 1.0)
    metric = tm.AURC()
    metric.update(u, loss)
    metric.to(torch.bfloat16)
    parent = torch.nn.Module()
    parent.metric = tm.AUROC()
    parent.metric.update(u, loss)
    parent.to(torch.float16)
    assert metric.dtype == torch.float64 and parent.metric.dtype == torch.float64
    assert float(metric.compute()) == m.aurc(loss.numpy(), u.numpy())
    assert float(parent.metric.compute()) == m.auroc(loss.numpy(), u.numpy())
    first, second = tm.AURC(), tm.AURC()
    first.update(u[:100], loss[:100])
    first.compute()
    second.update(u[100:], loss[100:])
    first.merge_state(second)
    assert float(first.compute()) == m.aurc(loss.numpy(), u.numpy())


def test_inputs_given_as_lists_of_numbers():
    metric = tm.AURC()
    metric.update([0.1, 0.4, 0.9], [0.0, 1.0, 1.0])
    metric.update(torch.tensor([0.2]), [0.0])
    assert float(metric.compute()) == m.aurc([0, 1, 1, 0], [0.1, 0.4, 0.9, 0.2])


def test_binned_states_of_other_edges_are_refused():
    # a state restored or merged from other edges gave a wrong value with a "certified"
    # error of 0 (AUROC 0.0 where the rows give 0.5), or a raw torch RuntimeError
    def seen(edges):
        a = tm.AUROC(edges=edges)
        a.persistent(True)
        a.update(torch.tensor([0.4, 0.9]), torch.tensor([1, 0]))
        return a

    b = tm.AUROC(edges=[0.0, 0.1, 1.0])
    b.persistent(True)
    b.load_state_dict(seen([0.0, 0.5, 1.0]).state_dict())
    b.update(torch.tensor([0.3]), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"^AUROC's binned state does not fit its edges \(bin "
                                         r"0: 1\.0 rows, 1\.0 OOD, scores from 0\.4"):
        b.bounded()
    c = tm.AUROC(edges=np.linspace(0, 1, 5))
    c.persistent(True)
    c.load_state_dict(seen([0.0, 0.5, 1.0]).state_dict())
    with pytest.raises(ValueError, match=r"^AUROC's state bin_counts must have shape \(4,\)"):
        c.update(torch.tensor([0.3]), torch.tensor([0]))
    with pytest.raises(ValueError, match="merges only a metric on the same bin edges"):
        seen([0.0, 0.5, 1.0]).merge_state(seen([0.0, 0.1, 1.0]))
    with pytest.raises(ValueError, match="merges only a metric on the same bin edges"):
        seen([0.0, 0.5, 1.0]).merge_state(tm.AUROC())
    with pytest.raises(ValueError, match=r"^AUROC's state bin_counts must have shape \(2,\)"):
        seen([0.0, 0.5, 1.0]).merge_state(dict(seen(np.linspace(0, 1, 5)).state_dict()))
    for name, value in (("bin_counts", [-1.0, 1.0]), ("bin_counts", [1.5, 1.0]),
                        ("bin_ood_counts", [2.0, 0.0])):
        state = seen([0.0, 0.5, 1.0]).state_dict()
        state[name] = torch.tensor(value, dtype=torch.float64)
        d = tm.AUROC(edges=[0.0, 0.5, 1.0])
        d.persistent(True)
        d.load_state_dict(state)
        with pytest.raises(ValueError, match="binned state does not fit its edges"):
            d.compute()
    # the same edges still merge, and a state restored on them holds
    a = seen([0.0, 0.5, 1.0])
    a.merge_state(seen([0.0, 0.5, 1.0]))
    assert a.bounded().value == m.auroc([1, 0, 1, 0], [0.4, 0.9, 0.4, 0.9])


def test_numpy_entry_points_take_bfloat16_and_grad_tensors():
    # np.asarray refuses both: "not a rectangular array" for bfloat16 (which widens to
    # float32 exactly), torch's RuntimeError for a tensor that requires grad
    from abstain.detectors import MSP

    logits = torch.tensor([[0.5, 1.5], [2.0, -1.0], [0.25, 0.0]])
    want = MSP().score(logits.numpy())
    np.testing.assert_array_equal(MSP().score(logits.clone().requires_grad_()), want)
    half = logits.to(torch.bfloat16)
    np.testing.assert_array_equal(MSP().score(half), MSP().score(half.float().numpy()))
    assert m.auroc(torch.tensor([0, 1, 1]), half[:, 0]) == m.auroc([0, 1, 1],
                                                                    half[:, 0].float().numpy())


def test_a_bank_chosen_on_held_out_classes_takes_grad_and_bfloat16_tensors():
    # split_outputs and restrict_outputs read the outputs with np.asarray: torch's error
    from abstain.combine import BankDetector
    from abstain.detectors import KNN, MSP, DetectorBank

    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 300)
    F = np.eye(4)[y] * 2 + rng.normal(size=(300, 4))
    want = None
    for make in (lambda a: a, lambda a: torch.tensor(a).requires_grad_(),
                 lambda a: torch.tensor(a).to(torch.bfloat16).double().numpy()):
        out = {"features": make(F[:200]), "logits": make(F[:200])}
        det = BankDetector(DetectorBank([MSP(), KNN(k=5, normalize=False)]), alpha=0.2,
                           n_bootstrap=20, random_state=0).fit(
            out, y[:200], {"features": F[200:], "logits": F[200:]})
        if want is None:
            want = det.combiner_.selection_
        assert det.combiner_.selection_["method"] in ("single", want["method"])
    assert m.auroc(torch.tensor([0.0, 1.0, 1.0]).requires_grad_(),
                   torch.tensor([0.1, 0.9, 0.8])) == 1.0


def test_targets_are_checked_as_given_not_as_float64():
    # the target went through float64 first: losses 2**53 + 1 were rounded (EAURC 0.0 for
    # 0.5), complex losses lost their imaginary part; text gave NumPy's own error
    u = torch.tensor([0.1, 0.2], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^losses holds integers that float64 cannot hold"):
        tm.EAURC().update(u, torch.tensor([2**53 + 1, 2**53]))
    with pytest.raises(ValueError, match=r"^target must be an array of real numbers .* got "
                       r"dtype complex64\.$"):
        tm.AURC().update(u, torch.tensor([1j, 0.0]))
    with pytest.raises(ValueError, match=r"^preds must be an array of real numbers .* got "
                       r"dtype <U1\.$"):
        tm.AURC().update(["a", "b"], [0.0, 1.0])
    with pytest.raises(ValueError, match=r"^target must be an array of real numbers"):
        tm.AUROC().update([0.1, 0.2], ["x", "y"])
