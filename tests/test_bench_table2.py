"""The evaluation step of benchmarks/table2_ood.py on synthetic scores (the full run needs
the image sets, PyTorch and minutes of training, so it is not part of the suite)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from abstain import metrics as M


@pytest.fixture(scope="module")
def table2(load_benchmark):
    return load_benchmark("table2_ood")


def fake(rng, n_test=300, n_ood=200):
    y_test = rng.integers(0, 3, n_test)
    logits = rng.normal(size=(n_test, 3))
    logits[np.arange(n_test), y_test] += 2.0
    bench = SimpleNamespace(y_test=y_test, ood={"a": None, "b": None})
    outs = {"id_test": SimpleNamespace(logits=logits)}
    scores = {}
    for j, m in enumerate([*__import__("table2_ood").SINGLE]):
        scores[m] = {"id_train": rng.normal(size=50),
                     "id_test": rng.normal(size=n_test) + 0.1 * j,
                     "a": rng.normal(size=n_ood) + 1.0, "b": rng.normal(size=n_ood) + 2.0}
    return bench, outs, scores


def test_evaluate_follows_the_protocol(table2, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "table2_ood", table2)
    rng = np.random.default_rng(0)
    bench, outs, scores = fake(rng)
    res = table2.evaluate(bench, outs, scores, random_state=0)
    loss = (outs["id_test"].logits.argmax(1) != bench.y_test).astype(float)
    assert res["id_error"] == pytest.approx(loss.mean())
    for name in ("a", "b"):
        r = res["sets"][name]
        is_ood = np.r_[np.zeros(300, bool), np.ones(200, bool)]
        fprs = {m: r["methods"][m]["fpr_at_tpr"] for m in table2.SINGLE}
        # the FPR bound is the largest FPR at TPR 0.8 among the single scores
        assert r["fpr_bound"] == max(fprs.values())
        for m in table2.SINGLE:  # every method is feasible at that bound
            assert np.isfinite(r["methods"][m]["risk"])
        s = np.r_[scores["MSP"]["id_test"], scores["MSP"][name]] / np.std(
            scores["MSP"]["id_train"])
        assert r["methods"]["MSP"]["auroc"] == pytest.approx(M.auroc(is_ood, s))
        for m, (a, b) in table2.DOUBLE.items():
            assert r["methods"][m]["auroc"] >= max(r["methods"][a]["auroc"],
                                                   r["methods"][b]["auroc"]) - 1e-3
            assert r["methods"][m]["risk"] <= min(r["methods"][a]["risk"],
                                                  r["methods"][b]["risk"]) + 1e-12
            assert 0 <= r["held_out"][m]["tpr"] <= 1
    lines = table2.table(res) + table2.claims(res) + table2.held_out_table(res)
    assert any(line.startswith("| KNN+MSP |") for line in lines)
