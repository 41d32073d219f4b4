"""The evaluation steps of benchmarks/combine_ood.py on synthetic base scores, and its
``--quick`` run end to end when PyTorch and FashionMNIST are installed (the full run
trains eleven networks, so it is not part of the suite)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from abstain import metrics as M
from abstain.combine import STATISTICS, ScoreCombiner


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("combine_ood")


def test_split_holdout_is_stratified_and_disjoint(bench):
    y = np.repeat(np.arange(3), [50, 20, 7])
    fit, hold = bench.split_holdout(y, 0.1, seed=0)
    assert np.intersect1d(fit, hold).size == 0
    assert np.array_equal(np.sort(np.r_[fit, hold]), np.arange(y.size))
    assert np.bincount(y[hold]).tolist() == [5, 2, 1]  # at least one per class
    again, _ = bench.split_holdout(y, 0.1, seed=0)
    assert np.array_equal(fit, again)


NAMES = [f"{k}_{a}" for k in ("cos", "norm", "shift") for a in (0, 90, 180, 270)]


def fake_scores(rng, n, shift):
    """Base scores, higher = more OOD; the CSI raw quantities stay in range."""
    S = rng.normal(size=(n, len(NAMES))) + shift
    S[:, 4:8] = -np.abs(S[:, 4:8]) - 0.5  # -norm < 0
    S[:, 8:] = np.abs(S[:, 8:])           # -log p >= 0
    return S


def test_evaluate_scores_every_method_and_the_oracle(bench):
    rng = np.random.default_rng(0)
    bs = SimpleNamespace(names_=NAMES)
    S_hold, S_id = fake_scores(rng, 200, 0.0), fake_scores(rng, 150, 0.0)
    oods = {"near": fake_scores(rng, 100, 0.5), "far": fake_scores(rng, 80, 2.0)}
    proxy = [(fake_scores(rng, 60, 0.0), fake_scores(rng, 60, 0.0), fake_scores(rng, 60, 1.0))]
    auto = ScoreCombiner(random_state=0)
    auto.fit_chosen(S_hold, auto.choose(proxy, np.random.default_rng(0)))
    assert set(bench.evaluate(bs, S_hold, S_id, oods, far=0.05)["near"]) == (
        set(bench.ROWS) - {"auto", "single (proxy)"}) | {"base_auroc"}  # without auto
    res = bench.evaluate(bs, S_hold, S_id, oods, far=0.05, auto=auto)
    assert set(res) == set(oods)
    for name, S_ood in oods.items():
        r = res[name]
        assert set(bench.ROWS) <= set(r)
        S_all = np.r_[S_id, S_ood]
        is_ood = np.r_[np.zeros(len(S_id), bool), np.ones(len(S_ood), bool)]
        assert r["auto"]["auroc"] == M.auroc(is_ood, auto.score(S_all))
        j = auto.selection_["single"]
        assert r["single (proxy)"]["auroc"] == M.auroc(is_ood, S_all[:, j])
        v = r["auto_vs_single"]
        assert v["low"] <= v["high"] and v["verdict"] in ("win", "tie", "loss")
        assert (v["verdict"] == "win") == (v["low"] > 0) and (v["verdict"] == "loss") == (
            v["high"] < 0)
        for m in ("glrt", "fisher", "simes"):
            s = ScoreCombiner(method=m).fit(S_hold).score(S_all)
            assert r[m]["auroc"] == pytest.approx(M.auroc(is_ood, s))
            assert r[m]["dr"] == pytest.approx(M.detection_rate_at_false_alarm(is_ood, s, 0.05))
        base = r["base_auroc"]
        assert r["best_single"]["auroc"] == max(base.values())
        assert base[r["best_single"]["column"]] == r["best_single"]["auroc"]
    # a far OOD set is easier than a near one for the combined tests
    assert res["far"]["glrt"]["auroc"] > res["near"]["glrt"]["auroc"] > 0.5


def test_proxy_tasks_refit_the_base_scores_on_the_kept_classes(bench):
    """Each task: base scores refitted on kept classes (relabelled 0..K'-1, the joint head's
    logits restricted to their columns), z-value rows from the holdout's kept classes, proxy
    outliers from the held-out classes; every part capped at --proxy-rows."""
    pytest.importorskip("sklearn", reason="the supocsvm base score")
    rng = np.random.default_rng(3)
    K, T, d = 5, bench.T, 6
    y_fit, y_hold = np.repeat(np.arange(K), 40), np.repeat(np.arange(K), 8)
    out = {part: (rng.normal(size=(T, y.size, d)) + y[None, :, None],
                  rng.normal(size=(T, y.size, K * T)))
           for part, y in (("fit", y_fit), ("hold", y_hold))}
    args = SimpleNamespace(seed=0, proxy_splits=2, proxy_rows=50, svm_max_samples=30)
    tasks = bench.proxy_tasks(out, y_fit, y_hold, args)
    assert len(tasks) == 2
    for S_z, S_in, S_out in tasks:
        assert S_z.shape == (24, 24)  # the holdout rows of the 3 kept classes
        assert S_in.shape[1] == S_out.shape[1] == 24
        assert S_in.shape[0] <= 50 and S_out.shape[0] == 50  # two held-out classes: 80 rows
        assert np.all(np.isfinite(S_z)) and np.all(np.isfinite(S_out))
    auto = ScoreCombiner(random_state=0)
    record = auto.choose(tasks, np.random.default_rng(0))
    assert record["method"] in ("single", *STATISTICS)


def test_claims_report_both_verdicts(bench):
    def res(values):
        return {"s": {m: {"auroc": v, "dr": v} for m, v in values.items()}}

    good = dict.fromkeys(STATISTICS, 0.5) | {"glrt": 0.9, "fisher": 0.9}
    lines = bench.claims(res(good), "x")
    assert len(lines) == 2
    assert all("Fisher and Stouffer: **holds**" in ln for ln in lines)
    assert all("Simes and ALR: **holds**" in ln for ln in lines)
    assert all("(smallest margin +0.4000, against bonferroni)" in ln for ln in lines)
    assert all("strictly higher: fisher 0, stouffer 1, bonferroni 1" in ln for ln in lines)
    bad = dict.fromkeys(STATISTICS, 0.5) | {"stouffer": 0.9, "alr": 0.5}
    lines = bench.claims(res(bad), "x")
    assert all("Fisher and Stouffer: **does not hold**" in ln for ln in lines)
    assert all("Simes and ALR: **does not hold**" in ln for ln in lines)  # ties are no win


def test_table_averages_over_sets(bench):
    rows = {m: {"auroc": 0.5} for m in bench.ROWS}
    res = {"a": rows, "b": {m: {"auroc": 0.7} for m in bench.ROWS}}
    lines = bench.table(res, "auroc", 100.0, ".1f")
    assert lines[0] == "| method | a | b | avg |"
    assert lines[2] == "| glrt | 50.0 | 70.0 | 60.0 |"
    assert len(lines) == 2 + len(bench.ROWS)


def test_render_and_report_only(bench, tmp_path):
    rng = np.random.default_rng(1)
    bs = SimpleNamespace(names_=NAMES)
    S_hold, S_id = fake_scores(rng, 120, 0.0), fake_scores(rng, 90, 0.0)
    secs = {"train": 3.0, "scores+metrics": 2.0}
    data = {"results": bench.evaluate(bs, S_hold, S_id, {"x": fake_scores(rng, 60, 1.0),
                                                          "y": fake_scores(rng, 60, 2.0)}, 0.05),
            "seconds": secs}
    loco = {f"class {c}": {"results": bench.evaluate(bs, S_hold, S_id,
                                                     {f"class {c}": fake_scores(rng, 30, 1.0)},
                                                     0.25), "seconds": secs} for c in (0, 3)}
    loco["class 0"]["auto"] = {"method": "stouffer", "columns": ["cos_0", "shift_90"],
                               "single": "cos_0", "win_fraction": 0.97}
    args = {"threads": 2, "classes": [0, 3, 5]}
    for mode, result in (("dataset", data), ("loco", loco)):
        raw = {"args": args, "command": f"--mode {mode}", "seconds_total": 7.0, mode: result}
        (tmp_path / f"combine_ood_{mode}_raw.json").write_text(json.dumps(raw, default=float))
        md = bench.render(mode, raw)
        assert md.startswith("# Score combining")
        assert "paper (CIFAR-10)" in md and md.count("GLRT >= Fisher and Stouffer") == 2
        assert "| glrt_cov | " in md and "| hc | " in md and "| csi | " in md
        assert "| cos_0 | " in md and "| shift_270 | " in md  # the base-score table
    assert "(train 3 s, scores+metrics 2 s)" in bench.render("dataset", {
        "args": args, "command": "", "seconds_total": 5.0, "dataset": data})
    assert "finished: 2 of 3" in bench.render("loco", raw)
    assert ("- class 0: stouffer(cos_0+shift_90) (best single on the proxy: cos_0, the best "
            "combination won 97% of paired resamples)") in bench.render("loco", raw)
    assert "| auto | " not in bench.render("loco", raw)  # results without it: no row
    judged = json.loads(json.dumps(raw, default=float))
    judged["loco"]["class 0"]["results"]["class 0"]["auto_vs_single"] = {
        "low": 0.01, "high": 0.02, "verdict": "win"}
    assert ("class 0 win [+0.0100, +0.0200]. 1 win, 0 tie, 0 loss of 1."
            in bench.render("loco", judged))
    assert "(train 6 s, scores+metrics 4 s)" in bench.render("loco", raw)
    assert bench.main(["--report-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "combine_ood_loco.md").read_text() == bench.render("loco", raw)
    beside = [ln for ln in (tmp_path / "combine_ood_dataset.md").read_text().splitlines()
              if ln.startswith("| glrt | ") and ln.endswith("| 0.9677 | 0.9928 |")]
    assert len(beside) == 1  # ours, then the paper's CIFAR-10 and SVHN averages


def test_quick_run_end_to_end(bench, tmp_path):
    pytest.importorskip("torch", reason="needs the torch extra")
    from abstain.datasets import load_fashion_mnist
    from abstain.exceptions import MissingDataSourceError

    try:
        load_fashion_mnist("test")
    except MissingDataSourceError as exc:
        pytest.skip(f"source absent (make data-ood installs it): {exc}")
    try:
        assert bench.main(["--quick", "--quiet", "--out", str(tmp_path)]) == 0
    except MissingDataSourceError as exc:  # another OOD set of the benchmark is absent
        pytest.skip(f"source absent (make data-ood installs it): {exc}")
    for mode in ("dataset", "loco"):
        md = (tmp_path / f"combine_ood_{mode}.md").read_text()
        assert "GLRT >= Fisher and Stouffer" in md and "Time:" in md
        assert "| auto | " in md and "| single (proxy) | " in md and "It chose:" in md
        raw = json.loads((tmp_path / f"combine_ood_{mode}_raw.json").read_text())
        assert raw["args"]["quick"] is True and mode in raw
        (tmp_path / f"combine_ood_{mode}.md").unlink()
    assert bench.main(["--report-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "combine_ood_loco.md").read_text() == md
