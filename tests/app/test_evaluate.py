"""abstain.app.evaluate: every applicable metric of each score column, as the metrics give it."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from abstain import metrics as m
from abstain.app.evaluate import evaluate
from abstain.app.tables import prepare
from abstain.exceptions import InfeasibleTargetWarning

# Ten rows, four OOD, ties in both scores; u ranks the ID errors perfectly, g separates OOD.
LOSS = np.array([0, 1, 0, 0, 1, 0, 0, 0, 1, 0], dtype=float)
U = np.array([0.1, 0.9, 0.2, 0.2, 0.7, 0.3, 0.8, 0.4, 0.6, 0.9])
G = np.array([0.0, 0.1, 0.2, 0.9, 0.3, 0.8, 0.7, 0.1, 0.2, 0.95])
OOD = np.array([0, 0, 0, 1, 0, 1, 1, 0, 0, 1], dtype=bool)


def _table(loss=LOSS):
    return {"loss": loss, "u": U, "g": G, "is_ood": OOD.astype(float)}


def _selective(loss, s, coverages):
    out = {"aurc": m.aurc(loss, s), "e_aurc": m.e_aurc(loss, s), "augrc": m.augrc(loss, s)}
    for c in coverages:
        out[f"risk@{c:g}"] = m.selective_risk_at_coverage(loss, s, c)
    return out


def _risk_at(loss, s, tpr, fpr, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return m.selective_risk_at_tpr_fpr(loss, OOD, s, tpr, fpr, **kw)


def _same(got, expected):
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert got[key] == value or (math.isnan(got[key]) and math.isnan(value)), key


def test_every_metric_is_the_library_metric():
    ev = evaluate(prepare(_table()))
    assert (ev.n_id, ev.n_ood, ev.n_dropped, ev.pairs) == (6, 4, 0, {})
    assert ev.labels == {
        "aurc": "AuRC", "e_aurc": "E-AuRC", "augrc": "AUGRC",
        "risk@0.8": "risk at coverage 80%", "risk@0.9": "risk at coverage 90%",
        "risk@0.95": "risk at coverage 95%", "auroc": "AUROC", "aupr_in": "AUPR-In",
        "aupr_out": "AUPR-Out", "fpr@0.95": "FPR at TPR 95%", "oscr": "OSCR",
        "risk@tpr0.95,fpr0.05": "risk at TPR>=95%, FPR<=5%"}
    assert list(ev.metrics) == ["u", "g"]
    for name, s in (("u", U), ("g", G)):
        expected = _selective(LOSS[~OOD], s[~OOD], (0.8, 0.9, 0.95))
        expected.update({
            "auroc": m.auroc(OOD, s), "aupr_in": m.aupr_in(OOD, s),
            "aupr_out": m.aupr_out(OOD, s), "fpr@0.95": m.fpr_at_tpr(OOD, s, 0.95),
            "oscr": m.oscr(np.where(OOD, 0.0, LOSS), OOD, s),
            "risk@tpr0.95,fpr0.05": _risk_at(LOSS * ~OOD, s, 0.95, 0.05)})
        _same(ev.metrics[name], expected)
    # values read off the table: u ranks the ID errors last, g puts every OOD row above ID
    assert ev.metrics["u"]["e_aurc"] == 0.0
    assert ev.metrics["u"]["risk@0.8"] == pytest.approx((1 + 0.8) / 4.8, rel=1e-15)
    assert ev.metrics["g"]["auroc"] == 1.0 and ev.metrics["g"]["fpr@0.95"] == 0.0
    assert math.isnan(ev.metrics["u"]["risk@tpr0.95,fpr0.05"])  # infeasible target


def test_options_and_a_double_score_pair():
    data = prepare(_table(), scores=["u"], ood_score="g")
    calls = []
    ev = evaluate(data, coverages=[0.5], tpr=0.8, fpr=0.25,
                  progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert list(ev.labels) == ["aurc", "e_aurc", "augrc", "risk@0.5", "auroc", "aupr_in",
                               "aupr_out", "fpr@0.8", "oscr", "risk@tpr0.8,fpr0.25"]
    assert ev.labels["risk@tpr0.8,fpr0.25"] == "risk at TPR>=80%, FPR<=25%"
    assert ev.pairs == {"u+g": ("u", "g")}
    assert list(ev.metrics) == ["u", "g", "u+g"]
    assert ev.metrics["u"]["risk@0.5"] == m.selective_risk_at_coverage(LOSS[~OOD], U[~OOD], 0.5)
    assert ev.metrics["u"]["fpr@0.8"] == m.fpr_at_tpr(OOD, U, 0.8)
    both = np.stack([U, G], axis=1)
    exact = {"search": "exact"}  # search="auto" below AUTO_EXACT_ROWS rows
    _same(ev.metrics["u+g"], {"auroc": m.auroc(OOD, both, **exact),
                              "fpr@0.8": m.fpr_at_tpr(OOD, both, 0.8, **exact),
                              "oscr": m.oscr(LOSS * ~OOD, OOD, both, **exact),
                              "risk@tpr0.8,fpr0.25": _risk_at(LOSS * ~OOD, both, 0.8, 0.25,
                                                              **exact)})
    assert "exact, every direction" in ev.notes["u+g"]["auroc"]
    grid = evaluate(data, coverages=[0.5], tpr=0.8, fpr=0.25, search="grid")
    _same(grid.metrics["u+g"], {"auroc": m.auroc(OOD, both),
                                "fpr@0.8": m.fpr_at_tpr(OOD, both, 0.8),
                                "oscr": m.oscr(LOSS * ~OOD, OOD, both),
                                "risk@tpr0.8,fpr0.25": _risk_at(LOSS * ~OOD, both, 0.8, 0.25)})
    assert "depends on their units" in grid.notes["u+g"]["fpr@0.8"]
    with pytest.raises(ValueError, match="search must be one of 'auto', 'exact', 'grid'; got "
                                         "'dense'"):
        evaluate(data, search="dense")


def test_only_the_metrics_that_apply():
    no_ood = evaluate(prepare({"loss": LOSS, "u": U}), coverages=[0.5])
    assert list(no_ood.labels) == ["aurc", "e_aurc", "augrc", "risk@0.5"]
    _same(no_ood.metrics["u"], _selective(LOSS, U, [0.5]))
    assert (no_ood.n_id, no_ood.n_ood) == (10, 0)
    one_class = evaluate(prepare({"loss": LOSS, "u": U, "is_ood": np.zeros(10)}))
    assert "auroc" not in one_class.labels and one_class.n_ood == 0
    unbounded = evaluate(prepare(_table(LOSS * 2)))  # losses above 1: no OSCR
    assert "oscr" not in unbounded.labels and "oscr" not in unbounded.metrics["u"]
    assert unbounded.metrics["u"]["aurc"] == m.aurc(2 * LOSS[~OOD], U[~OOD])
    dropped = evaluate(prepare({"loss": [np.nan, 0, 1], "u": [0.1, np.nan, 0.3]},
                               dropna=True))
    assert dropped.n_dropped == 2 and dropped.n_id == 1
    with pytest.raises(ValueError, match=r"^the table must have in-distribution rows; got only "
                                         r"OOD rows\.$"):
        evaluate(prepare({"loss": [0, 0], "u": [1, 2], "is_ood": [1, 1]}))


def test_to_json_writes_nan_as_null():
    ev = evaluate(prepare(_table()))
    doc = json.loads(ev.to_json())
    assert doc["metrics"]["u"]["risk@tpr0.95,fpr0.05"] is None
    assert doc["metrics"]["g"]["auroc"] == 1.0
    assert doc["metrics"]["u"]["aurc"] == ev.metrics["u"]["aurc"]  # full precision
    assert (doc["n_id"], doc["n_ood"], doc["n_dropped"]) == (6, 4, 0)
    assert doc["labels"] == ev.labels and doc["pairs"] == {}
    assert "NaN" not in ev.to_json()
    pair = json.loads(evaluate(prepare(_table(), scores=["u"], ood_score="g")).to_json())
    assert pair["pairs"] == {"u+g": ["u", "g"]}


def test_format_table_prints_a_dash_where_a_metric_does_not_apply():
    ev = evaluate(prepare(_table(), scores=["u"], ood_score="g"), coverages=[0.5], tpr=0.8,
                  fpr=0.25)
    lines = ev.format_table().splitlines()
    assert lines[0].split() == ["u", "g", "u+g"]
    n = len(ev.labels)
    rows = {line[:26].strip(): line[26:].split() for line in lines[1:n + 1]}
    assert list(rows) == list(ev.labels.values())
    # each '-' and 'nan' carries the number of the line under the table that says why
    notes = dict(line.split(" ", 1) for line in lines[n + 1:])
    assert rows["AuRC"] == [f"{ev.metrics['u']['aurc']:.4f}", f"{ev.metrics['g']['aurc']:.4f}",
                            "-", "(2)"]
    assert notes["(2)"].startswith("takes one score column")
    assert rows["E-AuRC"] == ["0.0000", f"{ev.metrics['g']['e_aurc']:.4f}", "-", "(2)"]
    # a pair's envelope cells say what they are
    assert rows["AUROC"] == [f"{ev.metrics['u']['auroc']:.4f}", "1.0000", "1.0000", "(3)"]
    assert rows["OSCR"][-1] == rows["FPR at TPR 80%"][-1] == "(3)"
    assert "an oracle over directions, not one fitted rule" in notes["(3)"]
    assert rows["risk at TPR>=80%, FPR<=25%"][:2] == ["nan", "(1)"]
    assert notes["(1)"].startswith("infeasible: no rule on these rows keeps TPR >= 80%")
    assert [r[2] for r in rows.values()].count("-") == 6
    assert ev.format_table(digits=2).splitlines()[1].split()[1:] == [
        f"{ev.metrics['u']['aurc']:.2f}", f"{ev.metrics['g']['aurc']:.2f}", "-", "(2)"]


def test_bootstrap_intervals_are_seeded_stratified_and_bracket_the_spread():
    data = prepare(_table(), scores=["u", "g"])
    a = evaluate(data, n_bootstrap=40, random_state=1)
    b = evaluate(data, n_bootstrap=40, random_state=1)
    assert repr(a.intervals) == repr(b.intervals) and a.level == 0.95  # NaN != NaN
    assert repr(a.metrics) == repr(evaluate(data).metrics)  # the point values do not change
    for name in ("u", "g"):
        for key, (lo, hi) in a.intervals[name].items():
            assert (math.isnan(lo) and math.isnan(hi)) or lo <= hi, (name, key)
    # g puts every OOD row above every ID row: so does every stratified resample
    assert a.intervals["g"]["auroc"] == (1.0, 1.0)
    # the infeasible risk at TPR 95% / FPR 5% has no interval
    assert all(math.isnan(v) for v in a.intervals["u"]["risk@tpr0.95,fpr0.05"])
    assert "[" in a.format_table() and '"intervals"' in a.to_json()


@pytest.mark.parametrize("n", [1, -1, 2.5, True])
def test_bootstrap_count_is_checked(n):
    with pytest.raises(ValueError, match="n_bootstrap must be 0 or an integer >= 2"):
        evaluate(prepare(_table()), n_bootstrap=n)


def test_a_numpy_level_is_a_level_and_the_options_name_themselves(tmp_path, capsys):
    from abstain.app.cli import main

    data = prepare(_table())
    a = evaluate(data, n_bootstrap=4, level=np.float32(0.9), random_state=0)
    assert a.level == float(np.float32(0.9))
    for bad in (True, 1.0, np.float64(0.0)):
        with pytest.raises(ValueError, match="level must be in"):
            evaluate(data, n_bootstrap=4, level=bad)
    path = tmp_path / "t.csv"
    path.write_text("loss,u\n0,0.1\n1,0.2\n0,0.3\n")
    for args, line in ((["--bootstrap", "1"], "argument --bootstrap: must be 0 (no interval) "
                                              "or a whole number >= 2; got '1'"),
                       (["--bootstrap", "3", "--random-state", "-1"],
                        "argument --random-state: must be a whole number >= 0; got '-1'")):
        with pytest.raises(SystemExit) as info:
            main(["evaluate", str(path), *args])
        assert info.value.code == 2
        assert f"abstain evaluate: error: {line}" in capsys.readouterr().err


def test_bootstrap_on_workers_gives_the_same_intervals_and_progress(tmp_path, capsys):
    """``n_jobs`` (``--jobs``): the same resamples on forked workers, the same intervals,
    a pair's included; the progress counts every score, pair and resample here."""
    from abstain.app.cli import main

    data = prepare(_table(), scores=["u"], ood_score="g")
    calls = []
    a = evaluate(data, n_bootstrap=12, random_state=3)
    b = evaluate(data, n_bootstrap=12, random_state=3, n_jobs=2,
                 progress=lambda d, t: calls.append((d, t)))
    assert repr(a.intervals) == repr(b.intervals) and "u+g" in b.intervals
    # each score and pair, then each block of resamples as it arrives
    assert calls[:3] == [(1, 15), (2, 15), (3, 15)] and calls[-1] == (15, 15)
    assert calls == sorted(set(calls))
    with pytest.raises(ValueError, match="n_jobs must be None, -1"):
        evaluate(data, n_bootstrap=3, n_jobs=0)
    path = tmp_path / "rows.csv"
    path.write_text("loss,u\n" + "".join(f"{v:g},{u:g}\n" for v, u in zip(LOSS, U, strict=True)))
    outs = []
    for jobs in ("1", "2"):
        assert main(["evaluate", str(path), "--bootstrap", "9", "--jobs", jobs]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "[" in outs[0]
    with pytest.raises(SystemExit):
        main(["evaluate", str(path), "--jobs", "0"])
    assert "--jobs: must be -1 (every core) or a whole number >= 1; got '0'" in \
        capsys.readouterr().err


def test_notes_explain_every_nan_and_absent_cell():
    ev = evaluate(prepare(_table(), scores=["u"], ood_score="g"))
    assert ev.notes["u"]["risk@tpr0.95,fpr0.05"].startswith("infeasible: no rule")
    assert ev.notes["u+g"]["aurc"].startswith("takes one score column")
    for name, values in ev.metrics.items():
        for key in ev.labels:
            if key not in values or math.isnan(values[key]):
                assert key in ev.notes.get(name, {}), (name, key)


def test_to_frame_has_one_row_per_score():
    pytest.importorskip("pandas")
    ev = evaluate(prepare(_table(), scores=["u", "g"]), n_bootstrap=5, random_state=0)
    frame = ev.to_frame()
    assert list(frame.index) == ["u", "g"] and frame.index.name == "score"
    assert frame.loc["g", "auroc"] == ev.metrics["g"]["auroc"]
    assert frame.loc["g", "auroc_low"] == ev.intervals["g"]["auroc"][0]


def test_bootstrap_intervals_do_not_depend_on_the_row_order():
    rng = np.random.default_rng(4)
    n = 120
    table = {"loss": (rng.random(n) < 0.3).astype(float), "u": np.round(rng.random(n), 1),
             "g": np.round(rng.random(n), 1), "is_ood": (rng.random(n) < 0.3).astype(float)}
    a = evaluate(prepare(table, scores=["u", "g"]), n_bootstrap=30, random_state=2)
    for seed in range(3):
        p = np.random.default_rng(seed).permutation(n)
        b = evaluate(prepare({k: v[p] for k, v in table.items()}, scores=["u", "g"]),
                     n_bootstrap=30, random_state=2)
        assert repr(a.intervals) == repr(b.intervals)  # bit for bit (NaN != NaN)


def test_a_huge_bootstrap_is_refused_before_any_work(tmp_path, capsys):
    from abstain.app.cli import main

    message = ("n_bootstrap (--bootstrap) must be at most 1000000 for 10 rows (at most 1000000 "
               "resamples and 2147483648 rows drawn in all, resamples times rows); got "
               "1000000000000.")
    calls = []
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        evaluate(prepare(_table()), n_bootstrap=10**12, progress=lambda *a: calls.append(a))
    assert calls == []
    path = tmp_path / "rows.csv"
    path.write_text("loss,u\n" + "".join(f"{v:g},{u:g}\n" for v, u in zip(LOSS, U, strict=True)))
    assert main(["evaluate", str(path), "--bootstrap", "1000000000000"]) == 1
    out = capsys.readouterr()
    assert out.err == f"abstain evaluate: error: {message}\n" and out.out == ""


def test_losses_near_the_float_maximum_give_finite_exact_numbers_and_intervals():
    big = LOSS * 1e308 + (1 - LOSS) * 0.5e308  # every row near the maximum
    data = prepare({"loss": big, "u": U})
    ev = evaluate(data, n_bootstrap=20, random_state=0)
    for key, value in ev.metrics["u"].items():
        assert math.isfinite(value), key
    expected = _selective(big, U, (0.8, 0.9, 0.95))
    _same(ev.metrics["u"], expected)
    assert ev.metrics["u"]["risk@0.8"] == pytest.approx(
        m.selective_risk_at_coverage(big / 2**64, U, 0.8) * 2**64, rel=1e-15)
    for key, (lo, hi) in ev.intervals["u"].items():
        assert math.isfinite(lo) and math.isfinite(hi) and lo <= hi, key


def half_aurc(losses, uncertainty=None):
    return m.aurc(losses, uncertainty) / 2


def tnr_at_tpr_plus(is_ood, scores=None, *, tpr=0.95):
    return 1.0 - m.fpr_at_tpr(is_ood, scores, tpr)


@pytest.fixture
def toy_metrics():
    """Two metrics added to the registry alone (nothing in abstain.app names them)."""
    specs = [m.register_metric(m.MetricSpec(half_aurc, "selective", "half of AuRC",
                                            "half of AuRC: AuRC / 2")),
             m.register_metric(m.MetricSpec(tnr_at_tpr_plus, "ood", "TNR+ at TPR {tpr}",
                                            "TNR+ at TPR t: 1 - FPR at TPR t", key="tnr+@{tpr}",
                                            params=("tpr",), higher_is_better=True))]
    yield specs
    for spec in specs:
        m.METRICS.pop(spec.name)


@pytest.mark.parametrize("chunk", [None, "4"])
def test_a_registered_metric_is_a_row_of_abstain_evaluate(toy_metrics, chunk, tmp_path,
                                                          capsys):
    from abstain.app.cli import main
    from abstain.app.evaluate import glossary_of
    from abstain.app.io import write_table

    path = tmp_path / "t.csv"
    write_table(path, _table())
    args = ["evaluate", str(path), "--tpr", "0.8", "--json", str(tmp_path / "m.json"),
            "--quiet", *(["--chunk-rows", chunk] if chunk else [])]
    assert main(args) == 0
    out = capsys.readouterr().out
    id_rows = ~OOD
    half = m.aurc(LOSS[id_rows], U[id_rows]) / 2
    tnr = 1.0 - m.fpr_at_tpr(OOD, U, 0.8)
    lines = out.splitlines()
    labels = [line.split("  ")[0] for line in lines]
    # the selective metric after the selective ones, the OOD one after the OOD ones
    i, j = labels.index("half of AuRC"), labels.index("TNR+ at TPR 80%")
    assert labels[i - 1] == "risk at coverage 95%" and f"{half:.4f}" in lines[i]
    assert labels[j - 1] == "risk at TPR>=80%, FPR<=5%" and f"{tnr:.4f}" in lines[j]
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["labels"]["half_aurc"] == "half of AuRC"
    assert doc["labels"]["tnr+@0.8"] == "TNR+ at TPR 80%"
    assert list(doc["labels"])[-1] == "tnr+@0.8"
    assert doc["metrics"]["u"]["half_aurc"] == half
    assert doc["metrics"]["u"]["tnr+@0.8"] == tnr
    assert glossary_of("tnr+@0.8") == "TNR+ at TPR t: 1 - FPR at TPR t"


def test_a_registered_metric_takes_part_in_the_bootstrap_and_the_pair_notes(toy_metrics):
    data = prepare(_table(), scores=["u"], ood_score="g")
    ev = evaluate(data, tpr=0.8, n_bootstrap=5, random_state=0)
    assert "half_aurc" in ev.intervals["u"] and "tnr+@0.8" in ev.intervals["u"]
    assert "tnr+@0.8" not in ev.metrics["u+g"]  # one score column only
    assert ev.notes["u+g"]["tnr+@0.8"].startswith("takes one score column")


def test_a_summary_of_chunks_refuses_a_bootstrap(tmp_path):
    from abstain.app.chunks import summarise
    from abstain.app.io import write_table

    write_table(tmp_path / "t.csv", _table())
    summary = summarise(str(tmp_path / "t.csv"), rows=4, options={})
    with pytest.raises(ValueError, match="n_bootstrap must be 0 for the score tables"):
        evaluate(summary, n_bootstrap=5)


@pytest.mark.parametrize("pair", [False, True])
def test_bootstrap_on_score_tables_gives_the_intervals_of_the_drawn_rows(monkeypatch,
                                                                          pair) -> None:
    from abstain.app import evaluate as app_evaluate
    from abstain.app.data import Resampled
    from abstain.app.tables import TableData

    rng = np.random.default_rng(7)
    n = 60
    ood = rng.random(n) < 0.3
    losses = np.where(ood, 0.0, (rng.random(n) < 0.3).astype(float))
    scores = {"a": np.round(rng.normal(size=n) + ood, 1), "g": np.round(rng.normal(size=n), 1)}
    data = TableData(losses, scores, ood, 0, np.ones(n, dtype=bool),
                     ood_score="g" if pair else None)
    got = app_evaluate.evaluate(data, n_bootstrap=6, random_state=1)
    monkeypatch.setattr(Resampled, "resamplers", staticmethod(lambda src: {}))
    want = app_evaluate.evaluate(data, n_bootstrap=6, random_state=1)
    assert got.intervals.keys() == want.intervals.keys()
    for name, cells in want.intervals.items():
        assert got.intervals[name].keys() == cells.keys()
        for key, pair in cells.items():  # the same numbers (NaN where both are), the single
            # columns' resamples computed together: to the rounding of their sums
            np.testing.assert_allclose(got.intervals[name][key], pair, rtol=1e-12, atol=0,
                                       err_msg=key)


def _pair_rows(n=150, seed=5):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.35
    return {"loss": np.where(ood, 0.0, (rng.random(n) < 0.3) * 1.0),
            "u": np.round(rng.normal(size=n) + ood, 1), "g": np.round(rng.normal(size=n), 1),
            "is_ood": ood.astype(float)}


def test_a_pair_is_bootstrapped_on_its_grid_as_its_drawn_rows_are(monkeypatch):
    """A pair searched on the grid is resampled on its directions' kept orders: the same
    intervals as the drawn rows give (the path taken for a pair searched exactly)."""
    from abstain.app.data import Resampled

    data = prepare(_pair_rows(), scores=["u"], ood_score="g")
    fast = evaluate(data, search="grid", n_bootstrap=25, random_state=3)
    monkeypatch.setattr(Resampled, "pair_resamplers", staticmethod(lambda *a, **k: {}))
    rows = evaluate(data, search="grid", n_bootstrap=25, random_state=3)
    assert repr(fast.intervals) == repr(rows.intervals)  # bit for bit
    assert repr(fast.metrics) == repr(rows.metrics)


def test_with_a_bootstrap_auto_takes_the_scaled_grid_for_a_pair():
    table = _pair_rows()
    ev = evaluate(prepare(table, scores=["u"], ood_score="g"), n_bootstrap=5, random_state=0)
    s = np.column_stack([table["u"], table["g"]])
    ood = table["is_ood"].astype(bool)
    assert ev.metrics["u+g"]["auroc"] == m.auroc(ood, s / s.std(axis=0), search="grid")
    assert "or a bootstrap" in ev.notes["u+g"]["auroc"]
    plain = evaluate(prepare(table, scores=["u"], ood_score="g"))
    assert plain.metrics["u+g"]["auroc"] == m.auroc(ood, s, search="exact")


def test_bootstrap_intervals_of_a_pair_do_not_depend_on_the_row_order():
    # a pair on the grid: its resampler was built on the rows as given
    rng = np.random.default_rng(7)
    n = 70
    ood = rng.random(n) < 0.4
    cols = {"loss": np.where(ood, np.nan, np.round(rng.random(n), 2)),
            "a": np.round(rng.normal(size=n) + ood, 1), "g": np.round(rng.normal(size=n), 1),
            "is_ood": ood}
    runs = [evaluate(prepare({k: v[p] for k, v in cols.items()}, ood_score="g"), tpr=0.8,
                     fpr=0.4, n_bootstrap=60, random_state=11).intervals
            for p in (np.arange(n), np.random.default_rng(0).permutation(n))]
    assert json.dumps(runs[0], sort_keys=True) == json.dumps(runs[1], sort_keys=True)


@pytest.mark.parametrize("ood_score", [None, "g"], ids=["columns", "pair"])
def test_bootstrap_intervals_of_continuous_losses_do_not_depend_on_the_row_order(ood_score):
    # the resampled tables' sums once added the losses in row order, and so did a pair's
    # grid resampler: last bits differed
    rng = np.random.default_rng(5)
    n = 200
    ood = rng.random(n) < 0.25
    u = rng.random(n).round(2)
    g = rng.normal(ood * 1.0, 1).round(2)
    rng.random(n)  # skipped: the losses of a draw whose sums showed the difference
    cols = {"loss": np.where(ood, np.nan, rng.random(n)), "u": u, "g": g, "is_ood": ood}
    a = evaluate(prepare(cols, ood_score=ood_score), n_bootstrap=50, random_state=3)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(n)
        b = evaluate(prepare({k: v[perm] for k, v in cols.items()}, ood_score=ood_score),
                     n_bootstrap=50, random_state=3)
        # bit for bit (repr of every float; NaN where a metric has no interval)
        assert json.dumps(a.intervals, sort_keys=True) == json.dumps(b.intervals,
                                                                     sort_keys=True)


def test_tables_of_unequal_columns_or_no_rows_and_bad_coverages_get_one_line():
    # NumPy's IndexError for unequal columns; "got only OOD rows" for a table of none;
    # a float, a string or None as coverages ended in Python's own TypeError or ValueError
    with pytest.raises(ValueError, match=r"^table must hold columns of one length \(1-D "
                                         r"arrays\); got shapes 'loss': \(4,\), 'u': \(3,\)\."):
        prepare({"loss": np.array([0, 1, 0, 1.0]), "u": np.array([0.1, 0.2, 0.3])})
    with pytest.raises(ValueError, match=r"^the table must have rows; got none\.$"):
        evaluate(prepare({"loss": np.zeros(0), "u": np.zeros(0)}))
    data = prepare({"loss": np.array([0, 1, 0, 1.0]), "u": np.array([0.1, 0.2, 0.3, 0.4])})
    for bad in (0.5, "0.5"):
        with pytest.raises(ValueError, match=r"^coverages must be a sequence of coverages in "):
            evaluate(data, coverages=bad)
    with pytest.raises(ValueError, match=r"^coverages must hold coverages in \(0, 1\]; got None"):
        evaluate(data, coverages=[0.5, None])
    with pytest.raises(ValueError, match=r"^coverages must hold coverages in \(0, 1\]; got 0\."):
        evaluate(data, coverages=[0])


def test_coverages_given_as_an_iterator_are_all_evaluated():
    # the check used the iterator up: no risk at coverage at all
    data = prepare({"loss": np.array([0, 1, 0, 1.0]), "u": np.array([0.1, 0.2, 0.3, 0.4])})
    want = evaluate(data, coverages=[0.5, 0.75]).metrics
    assert evaluate(data, coverages=iter([0.5, 0.75])).metrics == want
    assert evaluate(data, coverages=(c for c in (0.5, 0.75))).metrics == want
