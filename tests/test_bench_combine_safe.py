"""benchmarks/combine_safe.py on a small synthetic case: every method's row, the verdicts
against the proxy's single score, the tuning table, and the page rendered from them (the
full run takes about 40 minutes, so it is not part of the suite)."""

from __future__ import annotations

import sys

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("combine_safe")


def test_split_is_stratified_and_covers_every_row(bench):
    y = np.repeat(np.arange(3), [50, 20, 10])
    parts = bench._split(y, 0)
    assert sorted(np.concatenate(parts).tolist()) == list(range(80))
    assert [np.bincount(y[p]).tolist() for p in parts] == [[30, 12, 6], [10, 4, 2], [10, 4, 2]]


def _rule(v: dict) -> str:
    return "win" if v["low"] > 0 else "loss" if v["high"] < 0 else "tie"


def test_a_vetoed_choice_names_the_combination(bench):
    sel = {"method": "single", "single": 1, "win_fraction": bench.CONFIDENCE,
           "combination_method": "glrt", "combination_columns": [0, 2]}
    assert bench._vetoed(sel)
    assert bench._chosen(sel, ["a", "b", "c"]) == "b (veto: glrt(a+c))"
    assert bench._chosen(sel | {"win_fraction": 0.5}, ["a", "b", "c"]) == "b"
    assert bench._chosen(sel | {"method": "glrt", "columns": [0, 2]}, ["a", "b", "c"]) == (
        "glrt(a+c)")


def test_a_case_end_to_end(bench, monkeypatch):
    pytest.importorskip("sklearn")
    # the verdicts are combine_ood's (one rule for every combining page)
    monkeypatch.setattr(sys.modules[bench.versus.__module__], "N_VERDICT", 20)
    monkeypatch.setattr(bench, "K_GRID", (1, 5, 50))  # 50: the default, a column
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 900)
    X = np.eye(6)[y] * 3.0 + rng.normal(size=(900, 6))
    ood = y == 4
    Xi, yi = X[~ood], y[~ood]
    tr, ca, te = bench._split(yi, 0)
    net = bench.Network(Xi[tr], yi[tr], 16, 0, 50)
    res = bench.run_case("toy", net, (net.outputs(Xi[tr]), yi[tr]), net.outputs(Xi[ca]),
                         net.outputs(Xi[te]), net.outputs(X[ood]), 0)
    assert set(res["auroc"]) == set(bench.COLUMNS)
    # without the veto: auto itself unless the veto kept the single score
    assert res["vetoed"] or res["auroc"][bench.NO_VETO] == res["auroc"]["auto"]
    assert len(res["task_loss_fractions"]) == len(res["task_win_fractions"])
    assert all(0.0 <= v <= 1.0 for v in res["auroc"].values())
    assert res["auroc"]["single (oracle)"] >= res["auroc"]["single (proxy)"]
    for k, v in res["verdict"].items():
        assert v["verdict"] == _rule(v), k
    assert {"held_out_classes", "shuffled", "test"} <= set(res["tuning"])
    page = bench.render({"machine": "m", "command": "c", "seconds": 1.0,
                         "cases": [res | {"kind": "tabular"}]})
    assert "| auto |" in page and "KNN's k chosen without OOD data" in page
    assert "auto, both kinds" not in page
    # both kinds of proxy: outliers given (here shifted rows) beside the held-out classes
    far = net.outputs(Xi[tr][:200] + 4.0)
    both = bench.run_case("toy", net, (net.outputs(Xi[tr]), yi[tr]), net.outputs(Xi[ca]),
                          net.outputs(Xi[te]), net.outputs(X[ood]), 0, ("shifted rows", far))
    q = both["both"]
    assert q["second"] == "shifted rows"
    assert 0.0 <= q["auroc"] <= 1.0 and 0.0 <= q["far"] <= 1.0
    for k in ("vs_own", "vs_auto"):
        assert q[k]["verdict"] == _rule(q[k])
    page = bench.render({"machine": "m", "command": "c", "seconds": 1.0,
                         "cases": [both | {"kind": "dataset"}]})
    assert "| auto, both kinds |" in page and "| toy | shifted rows |" in page
    assert "| shifted rows | 1 | " in page and "| all |" not in page  # one second kind
    other = both | {"case": "toy 2", "both": q | {"second": "turned"}}
    two = bench.render({"machine": "m", "command": "c", "seconds": 1.0,
                        "cases": [both | {"kind": "dataset"}, other | {"kind": "dataset"}]})
    kinds = [line.split(" | ")[0:2] for line in two.splitlines()
             if line.startswith(("| turned | ", "| shifted rows | ", "| all | "))]
    assert kinds == [["| turned", "1"], ["| shifted rows", "1"], ["| all", "2"]]
    # the per-task test: one fraction per held-out split, then one for the given outliers
    assert len(q["task_win_fractions"]) == len(res["task_win_fractions"]) + 1
    assert all(0.0 <= f <= 1.0 for f in q["task_win_fractions"])
    # per_task=True: the same choice, the test on every task apart, one verdict each
    for got in (res["per_task"], q["per_task"]):
        assert got["verdict"]["verdict"] == _rule(got["verdict"]) and 0 <= got["auroc"] <= 1
    assert len(q["per_task"]["task_win_fractions"]) == len(q["task_win_fractions"])
    assert "`per_task=True`: the paired test on every proxy task apart" in page
    assert "| toy | held-out classes |" in page and "| toy | both kinds |" in page
    rows = [line for line in page.splitlines() if line.startswith("| both kinds | ")]
    assert [r.split(" | ")[1] for r in rows] == ["auto", "per_task=True"]
    assert "`auto` on every kind of proxy" not in page
    # every kind: a third kind of outliers given (here rows shifted the other way)
    odd = net.outputs(Xi[tr][:200] - 4.0)
    every = bench.run_case("toy", net, (net.outputs(Xi[tr]), yi[tr]), net.outputs(Xi[ca]),
                           net.outputs(Xi[te]), net.outputs(X[ood]), 0, ("shifted rows", far),
                           ("other rows", odd))
    assert every["both"] == both["both"]  # the third kind leaves both kinds as they were
    e = every["every"]
    assert e["kinds"] == "held-out classes, shifted rows, other rows" and "scores" not in e
    assert len(e["task_win_fractions"]) == len(q["task_win_fractions"]) + 1
    for k in ("vs_own", "vs_auto", "vs_both"):
        assert e[k]["verdict"] == _rule(e[k])
    page = bench.render({"machine": "m", "command": "c", "seconds": 1.0,
                         "cases": [every | {"kind": "dataset"}]})
    assert "`auto` on every kind of proxy" in page
    assert page.count("| held-out classes, shifted rows, other rows | 1 | ") == 1
    assert page.count("| held-out classes, shifted rows | 1 | ") == 1
