"""The ``abstain`` command line end to end on small files in a temporary folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from abstain import (
    BoundedAbstention,
    BoundedImprovement,
    load_json,
)
from abstain.app.cli import main
from abstain.app.io import read_table, write_table
from abstain.app.report import report_figures
from abstain.app.tables import prepare
from abstain.metrics import (
    aurc,
    auroc,
    fpr_at_tpr,
    ood_pr_curve,
    ood_roc_curve,
    oscr,
    selective_risk_at_coverage,
    selective_risk_at_tpr_fpr,
)
from abstain.models import BoundedTPRFPR, CostBasedOOD, least_risk_bound


def _columns(n: int = 300, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    is_ood = rng.random(n) < 0.25
    risk = rng.beta(1, 5, n)
    loss = (rng.random(n) < risk).astype(float)
    risk[is_ood] = rng.beta(2, 3, int(is_ood.sum()))
    loss[is_ood] = np.nan
    distance = rng.normal(np.where(is_ood, 2.0, 0.0), 1.0)
    return {"loss": loss, "risk": risk.round(3), "distance": distance.round(2),
            "is_ood": is_ood.astype(float)}


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "pred.csv"
    write_table(path, _columns())
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- evaluate ------------------------------------------------------------------------------


def test_evaluate_prints_every_metric_and_writes_json(csv_file, tmp_path, capsys):
    code, out, err = run(capsys, "evaluate", csv_file, "--json", tmp_path / "m.json",
                         "--progress", "always")
    assert code == 0
    for label in ("AuRC", "E-AuRC", "AUGRC", "risk at coverage 90%", "AUROC", "AUPR-In",
                  "AUPR-Out", "FPR at TPR 95%", "OSCR", "risk at TPR>=95%, FPR<=5%"):
        assert label in out
    assert "evaluate [" in err  # the progress bar
    doc = json.loads((tmp_path / "m.json").read_text())
    cols = _columns()
    ood = cols["is_ood"] == 1
    loss_id, risk_id = cols["loss"][~ood], cols["risk"][~ood]
    got = doc["metrics"]["risk"]
    assert got["aurc"] == pytest.approx(aurc(loss_id, risk_id), rel=1e-12)
    assert got["risk@0.9"] == pytest.approx(selective_risk_at_coverage(loss_id, risk_id, 0.9))
    assert got["auroc"] == pytest.approx(auroc(ood, cols["risk"]))
    assert got["fpr@0.95"] == pytest.approx(fpr_at_tpr(ood, cols["risk"]))
    assert doc["n_id"] == int((~ood).sum()) and doc["n_ood"] == int(ood.sum())
    assert set(doc["metrics"]) == {"risk", "distance"}


def test_evaluate_quiet_and_label_prediction_columns(tmp_path, capsys):
    path = tmp_path / "lp.csv"
    write_table(path, {"y": ["cat", "dog", "dog", "cat"], "yhat": ["cat", "dog", "cat", "dog"],
                       "u": [0.1, 0.2, 0.8, 0.6]})
    code, out, err = run(capsys, "evaluate", path, "--label", "y", "--prediction", "yhat",
                         "--quiet", "--coverage", "0.5")
    assert code == 0 and err == ""
    assert "risk at coverage 50%" in out and "AUROC" not in out
    assert "0.0000" in out  # the two correct rows have the lowest scores


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
def test_evaluate_reads_npz_and_parquet(suffix, tmp_path, capsys):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
        pytest.importorskip("pandas")
    path = tmp_path / f"pred{suffix}"
    write_table(path, _columns())
    code, out, _ = run(capsys, "evaluate", path, "--quiet", "--json", tmp_path / "m.json")
    assert code == 0
    write_table(tmp_path / "same.csv", _columns())
    run(capsys, "evaluate", tmp_path / "same.csv", "--quiet", "--json", tmp_path / "c.json")
    assert json.loads((tmp_path / "m.json").read_text()) == json.loads(
        (tmp_path / "c.json").read_text())


def test_cli_progress_option(csv_file, capsys, monkeypatch, tty_stream):
    args = ("evaluate", csv_file, "--score", "risk")
    code, _, err = run(capsys, *args)  # capsys's stderr is not a terminal: auto draws nothing
    assert code == 0 and err == ""
    code, _, err = run(capsys, *args, "--progress", "always")
    assert code == 0 and err == "\revaluate [" + "#" * 30 + "] 1/1\n"
    monkeypatch.setattr(sys, "stderr", tty_stream())
    code = main([str(a) for a in args])
    assert code == 0 and "evaluate [" in sys.stderr.getvalue()
    for flags in (["--progress", "never"], ["--quiet"]):
        monkeypatch.setattr(sys, "stderr", tty_stream())
        assert main([str(a) for a in (*args, *flags)]) == 0
        assert sys.stderr.getvalue() == ""
    with pytest.raises(SystemExit) as exc:  # --quiet and --progress exclude each other
        main([str(a) for a in (*args, "--quiet", "--progress", "always")])
    assert exc.value.code == 2


def test_progress_and_score_help_say_what_each_command_does(capsys):
    """``fit`` draws a bar only while it reads in chunks and says so; ``apply`` draws none,
    so it takes no --progress; its --score defaults to the rule file's columns."""
    helps = {}
    for command in ("evaluate", "fit", "apply"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        helps[command] = " ".join(capsys.readouterr().out.split())
    assert "progress bar on stderr: 'auto'" in helps["evaluate"]
    assert "progress bar on stderr while a source is read in chunks" in helps["fit"]
    assert "--progress" not in helps["apply"] and "--quiet" not in helps["apply"]
    assert "(default: every other numeric column)" in helps["evaluate"]
    assert "(default: the columns the rule file names)" in helps["apply"]
    for flags in (["--progress", "always"], ["--quiet"]):
        with pytest.raises(SystemExit) as exc:
            main(["apply", "rule.json", "data.csv", "-o", "out.csv", *flags])
        assert exc.value.code == 2


# -- fit and apply ----------------------------------------------------------------------------


def test_fit_and_apply_bounded_abstention(csv_file, tmp_path, capsys):
    rule_path = tmp_path / "rule.json"
    code, out, _ = run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8",
                       "-o", rule_path)
    assert code == 0 and "BoundedAbstention" in out
    rule = load_json(rule_path)  # the models' own format loads directly
    cols = _columns()
    ood = cols["is_ood"] == 1
    ref = BoundedAbstention(0.8).fit(cols["risk"][~ood], cols["loss"][~ood])
    assert (rule.threshold_, rule.accept_prob_) == (ref.threshold_, ref.accept_prob_)

    before = csv_file.read_bytes()
    out_path = tmp_path / "accepted.csv"
    code, out, _ = run(capsys, "apply", rule_path, csv_file, "-o", out_path)
    assert code == 0 and "accepted" in out
    table = read_table(out_path)
    np.testing.assert_array_equal(table["accept"], rule.accept(cols["risk"]).astype(float))
    np.testing.assert_array_equal(table["risk"], cols["risk"])
    assert csv_file.read_bytes() == before


@pytest.mark.parametrize("args,model", [
    (["--score", "risk", "--target-risk", "0.15"], "BoundedImprovement"),
    (["--score", "risk", "--target-risk", "0.4", "--delta", "0.1"], "BoundedImprovement"),
    (["--score", "risk", "--reject-cost", "0.2"], "CostBased"),
    (["--score", "risk", "--score", "distance", "--tpr", "0.6", "--fpr", "0.1"],
     "BoundedTPRFPR"),
    (["--score", "distance", "--precision", "0.9", "--recall", "0.8"],
     "BoundedPrecisionRecall"),
    (["--score", "risk", "--ood-score", "distance", "--precision", "0.9", "--recall", "0.8",
      "--ood-prior", "0.1"], "BoundedPrecisionRecall"),
    (["--score", "risk", "--ood-score", "distance", "--tpr", "0.6", "--fpr", "0.1"],
     "BoundedTPRFPR"),
    (["--score", "risk", "--reject-id-cost", "0.3", "--predict-ood-cost", "1"], "CostBasedOOD"),
    (["--ood-score", "distance", "--reject-id-cost", "0.3", "--predict-ood-cost", "1",
      "--reject-ood-cost", "0.1", "--ood-prior", "0.5"], "CostBasedOOD"),
])
def test_fit_every_model_and_apply(args, model, csv_file, tmp_path, capsys):
    rule_path = tmp_path / "rule.json"
    code, out, err = run(capsys, "fit", csv_file, *args, "-o", rule_path)
    assert code == 0, err
    doc = json.loads(rule_path.read_text())
    assert (doc["format"], doc["kind"]) == ("abstain/1", model)
    rule = load_json(rule_path.read_text())
    code, _, _ = run(capsys, "apply", rule_path, csv_file, "-o", tmp_path / "out.npz")
    assert code == 0
    cols = _columns()
    scores = np.stack([cols[c] for c in doc["columns"]["scores"]], axis=1)
    expected = rule.accept(scores if scores.shape[1] == 2 else scores[:, 0])
    np.testing.assert_array_equal(read_table(tmp_path / "out.npz")["accept"], expected)


def test_apply_refuses_to_overwrite_its_input(csv_file, tmp_path, capsys):
    rule_path = tmp_path / "rule.json"
    run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o", rule_path)
    before = csv_file.read_bytes()
    code, _, err = run(capsys, "apply", rule_path, csv_file, "-o", csv_file)
    assert code == 1 and "is the input file" in err
    assert csv_file.read_bytes() == before


def test_apply_failure_leaves_no_partial_file(csv_file, tmp_path, capsys, monkeypatch):
    rule_path = tmp_path / "rule.json"
    run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o", rule_path)
    out_path = tmp_path / "out.npz"
    out_path.write_bytes(b"old")

    def broken(fh, arr, **kw):
        fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", broken)
    code, _, err = run(capsys, "apply", rule_path, csv_file, "-o", out_path)
    assert code == 1 and "disk full" in err
    assert out_path.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["out.npz", "pred.csv", "rule.json"]


def test_apply_loads_every_kind_and_names_what_is_not_a_rule(csv_file, tmp_path, capsys):
    from abstain.detectors import KNN
    from abstain.scores import LossRegression

    cases = [
        (KNN(k=1).fit([[1.0, 0.0], [0.0, 1.0]]), "KNN"),
        (LossRegression().fit([[0.0], [1.0]], [0, 0], [0.0, 1.0]), "LossRegression"),
    ]
    for obj, kind in cases:
        path = tmp_path / f"{kind}.json"
        path.write_text(obj.to_json())
        line = _one_error_line(*run(capsys, "apply", path, csv_file, "--score", "risk", "-o",
                                    tmp_path / "o.csv")[::2])
        assert line == (f"abstain apply: error: {path} holds a {kind}, not a reject rule on "
                        "score columns; abstain apply needs one of BoundedAbstention, "
                        "BoundedImprovement, CostBased, BoundedTPRFPR, "
                        "BoundedPrecisionRecall or CostBasedOOD (written by abstain fit).")
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["fitted"].update(threshold_="abc"),
     "fitted.threshold_ must be a finite number; got 'abc'."),
    (lambda d: d.update(columns="risk"),
     "columns must be an object {\"scores\": [column names]}; got 'risk'."),
    (lambda d: d.pop("fitted"),
     "fitted is missing: a document needs fitted, format, kind, params."),
])
def test_apply_refuses_a_broken_rule_file_in_one_line(edit, message, csv_file, tmp_path,
                                                        capsys):
    rule_path = tmp_path / "rule.json"
    run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o", rule_path)
    doc = json.loads(rule_path.read_text())
    edit(doc)
    rule_path.write_text(json.dumps(doc))
    line = _one_error_line(*run(capsys, "apply", rule_path, csv_file, "-o",
                                tmp_path / "o.csv")[::2])
    assert line == f"abstain apply: error: {rule_path}: {message}"


def test_apply_refuses_rule_files_of_another_format(csv_file, tmp_path, capsys):
    cols = _columns()
    ood = cols["is_ood"] == 1
    rule = BoundedAbstention(0.8, random_state=0).fit(cols["risk"][~ood], cols["loss"][~ood])
    old = {"format": "abstain.rule/1", "model": "BoundedAbstention",
           "params": rule.get_params(), "columns": {"scores": ["risk"]},
           "fitted": {k: getattr(rule, k) for k in ("threshold_", "accept_prob_")}}
    rule_path = tmp_path / "old.json"
    rule_path.write_text(json.dumps(old))
    out = tmp_path / "o.npz"
    code, _, err = run(capsys, "apply", rule_path, csv_file, "-o", out)
    assert code == 1 and not out.exists()
    assert err == (f"abstain apply: error: {rule_path}: format must be 'abstain/1', the one "
                   "format of abstain documents (write the object again with to_json); got "
                   "'abstain.rule/1'.\n")


def _ood_sample():
    cols = _columns()
    ood = cols["is_ood"] == 1
    return cols, ood, np.nan_to_num(cols["loss"]), np.stack([cols["risk"], cols["distance"]], 1)


@pytest.mark.parametrize("extra,costs,prior", [
    ([], (0.3, 1.0, 0.0), None),
    (["--reject-ood-cost", "0.2", "--ood-prior", "0.4"], (0.3, 1.0, 0.2), 0.4),
])
@pytest.mark.parametrize("pair", [False, True])
def test_fit_cost_based_ood_is_the_models_fit(pair, extra, costs, prior, csv_file, tmp_path,
                                              capsys):
    rule_path = tmp_path / "rule.json"
    scores = ["--score", "risk"] + (["--ood-score", "distance"] if pair else [])
    code, out, err = run(capsys, "fit", csv_file, *scores, "--reject-id-cost", "0.3",
                         "--predict-ood-cost", "1", *extra, "-o", rule_path)
    assert code == 0, err
    cols, ood, loss, both = _ood_sample()
    s = both if pair else cols["risk"]
    ref = CostBasedOOD(*costs, ood_prior=prior, random_state=0).fit(s, ood, loss)
    rule = load_json(rule_path)
    assert isinstance(rule, CostBasedOOD)
    assert rule.get_params() == ref.get_params()
    assert (rule.weights_, rule.threshold_, rule.cost_) == (ref.weights_, ref.threshold_,
                                                           ref.cost_)
    assert json.loads(rule_path.read_text())["columns"]["scores"] == (
        ["risk", "distance"] if pair else ["risk"])
    assert out.startswith("CostBasedOOD: " + ("score 0.9" if pair else "threshold "))
    assert f"empirical cost {ref.cost_:.4f}" in out
    code, out, _ = run(capsys, "apply", rule_path, csv_file, "-o", tmp_path / "acc.csv")
    assert code == 0
    np.testing.assert_array_equal(read_table(tmp_path / "acc.csv")["accept"],
                                  ref.accept(s).astype(float))


def test_cost_based_ood_bad_options(csv_file, tmp_path, capsys):
    out = tmp_path / "x.json"

    def line(*args):
        return _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", *args,
                                    "-o", out)[::2])

    assert "--reject-id-cost and --predict-ood-cost must be given together" in line(
        "--reject-id-cost", "0.3")
    assert "--reject-ood-cost must come with --reject-id-cost and --predict-ood-cost" in line(
        "--tpr", "0.9", "--fpr", "0.2", "--reject-ood-cost", "0.1")
    assert "--ood-prior must come with --precision and --recall or with --reject-id-cost and " \
           "--predict-ood-cost; got it with --target-coverage" in line("--target-coverage", "0.8",
                                                          "--ood-prior", "0.2")
    assert "--predict-ood-cost must be greater than --reject-ood-cost; got 0.1 <= 0.2" in line(
        "--reject-id-cost", "0.3", "--predict-ood-cost", "0.1", "--reject-ood-cost", "0.2")
    assert "got --reject-cost, --reject-id-cost." in line("--reject-cost", "0.1",
                                                      "--reject-id-cost", "0.3")
    no_ood = tmp_path / "no_ood.csv"
    write_table(no_ood, {"loss": [0, 1, 0, 1], "risk": [0.1, 0.2, 0.3, 0.4]})
    assert ("the --reject-id-cost/--predict-ood-cost model needs an OOD column; the table has "
            "none.") in (
        _one_error_line(*run(capsys, "fit", no_ood, "--reject-id-cost", "0.3",
                             "--predict-ood-cost", "1", "-o", out)[::2]))
    assert not out.exists()


# -- double scores: --ood-score --------------------------------------------------------------


def test_evaluate_double_score_pair(csv_file, tmp_path, capsys):
    code, out, _ = run(capsys, "evaluate", csv_file, "--score", "risk", "--ood-score",
                       "distance", "--tpr", "0.9", "--fpr", "0.3", "--json", tmp_path / "m.json")
    assert code == 0
    header = out.splitlines()[1].split()
    assert header == ["risk", "distance", "risk+distance"]
    aurc_row = next(r for r in out.splitlines() if r.startswith("AuRC "))
    assert aurc_row.split()[-2:] == ["-", "(2)"]  # a one-column metric, note 2 says why
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["pairs"] == {"risk+distance": ["risk", "distance"]}
    _, ood, loss, both = _ood_sample()
    got = doc["metrics"]["risk+distance"]
    assert set(got) == {"auroc", "fpr@0.9", "oscr", "risk@tpr0.9,fpr0.3"}
    assert got["auroc"] == pytest.approx(auroc(ood, both, search="exact"), rel=1e-12)
    assert got["fpr@0.9"] == pytest.approx(fpr_at_tpr(ood, both, 0.9, search="exact"),
                                           rel=1e-12)
    assert got["oscr"] == pytest.approx(oscr(loss, ood, both, search="exact"), rel=1e-12)
    assert got["risk@tpr0.9,fpr0.3"] == pytest.approx(
        selective_risk_at_tpr_fpr(loss, ood, both, 0.9, 0.3, search="exact"), rel=1e-12)
    assert "a pair's envelope" in doc["notes"]["risk+distance"]["auroc"]
    assert "exact, every direction" in out
    # the envelope over directions is at least as good as either column alone
    assert got["auroc"] >= max(doc["metrics"][c]["auroc"] for c in ("risk", "distance")) - 1e-3
    # the same with every numeric column a score by default
    code, out2, _ = run(capsys, "evaluate", csv_file, "--ood-score", "distance", "--tpr", "0.9",
                        "--fpr", "0.3")
    assert out2 == out.replace(f"wrote {tmp_path / 'm.json'}\n", "")


def test_a_pair_has_the_library_s_auroc_in_any_units(tmp_path, capsys):
    from abstain.detectors import KNN, MSP
    from abstain.models import DoubleScoreDetector

    rng = np.random.default_rng(0)
    outputs = lambda f: {"features": f, "logits": f @ np.eye(2)}  # noqa: E731
    det = DoubleScoreDetector(MSP(), KNN(k=5), BoundedTPRFPR(tpr=0.8, fpr=0.2))
    det = det.fit(outputs(rng.normal(size=(300, 2)) + [2.0, 0.0]))
    val = np.vstack([rng.normal(size=(150, 2)) + [2.0, 0.0],
                     rng.normal(size=(60, 2)) * 0.8 + [0.0, 2.5]])
    ood = np.repeat([False, True], [150, 60])
    loss = np.where(ood, np.nan, (val[:, 1] > val[:, 0]) * 1.0)
    raw = [d.score_outputs(outputs(val)) for d in (det.misclassification_, det.ood_)]
    path = tmp_path / "pair.csv"
    write_table(path, {"loss": loss, "msp": raw[0], "knn": raw[1], "is_ood": ood * 1.0})
    scaled = det.scores(outputs(val))  # the columns the detector tunes on: raw / scale_
    assert not np.allclose(det.scale_, 1.0)
    got = {}
    for search in ("auto", "exact", "grid"):
        assert run(capsys, "evaluate", path, "--score", "msp", "--ood-score", "knn",
                   "--search", search, "--json", tmp_path / f"{search}.json")[0] == 0
        doc = json.loads((tmp_path / f"{search}.json").read_text())
        got[search] = doc["metrics"]["msp+knn"]
    exact = auroc(ood, scaled, search="exact")
    assert got["auto"]["auroc"] == pytest.approx(exact, abs=1e-12)
    assert got["exact"]["auroc"] == pytest.approx(exact, abs=1e-12)
    assert got["auto"]["fpr@0.95"] == pytest.approx(fpr_at_tpr(ood, scaled, 0.95,
                                                               search="exact"), abs=1e-12)
    # the grid is the library's grid on the columns as given, and depends on their units
    assert got["grid"]["auroc"] == auroc(ood, np.stack(raw, axis=1), search="grid")
    assert got["grid"]["auroc"] != pytest.approx(auroc(ood, scaled, search="grid"), abs=1e-9)
    with pytest.raises(SystemExit):
        main(["evaluate", str(path), "--search", "dense"])
    assert "invalid choice: 'dense'" in capsys.readouterr().err


def test_fit_double_score_needs_both_columns_to_apply(csv_file, tmp_path, capsys):
    rule_path = tmp_path / "rule.json"
    code, out, err = run(capsys, "fit", csv_file, "--ood-score", "distance", "--tpr", "0.6",
                         "--fpr", "0.1", "-o", rule_path)
    assert code == 0, err
    _, ood, loss, both = _ood_sample()
    ref = BoundedTPRFPR(0.6, 0.1, random_state=0).fit(both, ood, loss)
    rule = load_json(rule_path)
    assert (rule.n_scores_, rule.weights_, rule.threshold_) == (2, ref.weights_, ref.threshold_)
    w = ref.weights_
    assert out.startswith(f"BoundedTPRFPR: score {w[0]:.4g} * risk + {w[1]:.4g} * distance, ")
    only_risk = tmp_path / "only_risk.csv"
    cols = _columns()
    del cols["distance"]
    write_table(only_risk, cols)
    line = _one_error_line(*run(capsys, "apply", rule_path, only_risk, "-o",
                                tmp_path / "o.csv")[::2])
    assert "score column 'distance' not found" in line
    line = _one_error_line(*run(capsys, "apply", rule_path, csv_file, "--score", "risk", "-o",
                                tmp_path / "o.csv")[::2])
    assert "the rule takes 2 score column(s); got 1: 'risk'." in line


def test_pair_with_pairs_the_ood_score_with_the_columns_named(tmp_path, capsys):
    three = tmp_path / "three.csv"
    cols = _columns()
    cols["energy"] = cols["distance"] * 2 + cols["risk"]
    write_table(three, cols)
    code, out, err = run(capsys, "evaluate", three, "--ood-score", "distance", "--pair-with",
                         "risk", "--json", tmp_path / "m.json")
    assert code == 0, err
    assert out.splitlines()[1].split() == ["risk", "distance", "energy", "risk+distance"]
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["pairs"] == {"risk+distance": ["risk", "distance"]}
    code, every, _ = run(capsys, "evaluate", three, "--ood-score", "distance")
    assert code == 0 and every.splitlines()[1].split()[-2:] == ["risk+distance",
                                                                "energy+distance"]
    # the pair's values are the same whichever other columns are paired
    auroc = [next(r.split() for r in text.splitlines() if r.startswith("AUROC "))
             for text in (out, every)]
    assert auroc[0][4] == auroc[1][4] and auroc[0][:4] == auroc[1][:4]
    # fit: one pair among three score columns
    rule_path = tmp_path / "rule.json"
    code, out, err = run(capsys, "fit", three, "--ood-score", "distance", "--pair-with", "risk",
                         "--tpr", "0.6", "--fpr", "0.1", "-o", rule_path)
    assert code == 0, err
    _, ood, loss, both = _ood_sample()
    ref = BoundedTPRFPR(0.6, 0.1, random_state=0).fit(both, ood, loss)
    rule = load_json(rule_path)
    assert (rule.n_scores_, rule.weights_, rule.threshold_) == (2, ref.weights_, ref.threshold_)
    # the columns named once each, in order, added to --score where it leaves them out
    data = prepare(read_table(three), scores=["energy"], ood_score="distance",
                   pair_with=["risk", "energy", "risk"])
    assert list(data.scores) == ["energy", "distance", "risk"]
    assert data.pairs == {"risk+distance": ("risk", "distance"),
                          "energy+distance": ("energy", "distance")}


@pytest.mark.parametrize("argv, message", [
    (["--pair-with", "risk"],
     "pair_with names the columns paired with an OOD score; name the OOD score too"),
    (["--ood-score", "distance", "--pair-with", "rsik"],
     "score column to pair 'rsik' not found; did you mean 'risk'?"),
    (["--ood-score", "distance", "--pair-with", "distance"],
     "the OOD score 'distance' cannot be paired with itself"),
])
def test_pair_with_bad_input(csv_file, capsys, argv, message):
    assert message in _one_error_line(*run(capsys, "evaluate", csv_file, *argv)[::2])


def test_pair_with_must_be_a_list_of_columns(csv_file):
    cols = read_table(csv_file)
    with pytest.raises(TypeError, match="pair_with must be a sequence of column names"):
        prepare(cols, ood_score="distance", pair_with="risk")
    with pytest.raises(ValueError, match="pair_with must name at least one score column"):
        prepare(cols, ood_score="distance", pair_with=[])


def test_ood_score_bad_input(csv_file, tmp_path, capsys):
    out = tmp_path / "x.json"
    line = _one_error_line(*run(capsys, "evaluate", csv_file, "--ood-score", "distnce")[::2])
    assert "OOD score column 'distnce' not found; did you mean 'distance'?" in line
    no_ood = tmp_path / "no_ood.csv"
    write_table(no_ood, {"loss": [0, 1, 0, 1], "a": [0.1, 0.2, 0.3, 0.4], "b": [1, 2, 3, 4]})
    line = _one_error_line(*run(capsys, "evaluate", no_ood, "--ood-score", "b")[::2])
    assert "the OOD score 'b' needs an OOD column; the table has none" in line
    line = _one_error_line(*run(capsys, "evaluate", csv_file, "--score", "distance",
                                "--ood-score", "distance")[::2])
    assert "pairs with the other score columns; got no other score column" in line
    line = _one_error_line(*run(capsys, "fit", csv_file, "--ood-score", "distance",
                                "--target-coverage", "0.8", "-o", out)[::2])
    assert "--target-coverage takes one score column; an OOD score ('distance') pairs columns " \
           "for the OOD models only" in line
    three = tmp_path / "three.csv"
    cols = _columns()
    cols["energy"] = cols["distance"] + 1
    write_table(three, cols)
    line = _one_error_line(*run(capsys, "fit", three, "--ood-score", "distance", "--tpr", "0.6",
                                "--fpr", "0.1", "-o", out)[::2])
    assert ("the --tpr/--fpr model takes one pair (s_r, OOD score); got 2 other score columns "
            "besides the OOD score 'distance': 'risk', 'energy'.") in line
    assert not out.exists()


# -- report and demo ----------------------------------------------------------------------------


def test_report_has_images_and_table(csv_file, tmp_path, capsys):
    html_path = tmp_path / "report.html"
    code, out, err = run(capsys, "report", csv_file, "-o", html_path, "--png", tmp_path / "png",
                         "--progress", "always")
    assert code == 0 and "report [" in err
    text = html_path.read_text()
    assert text.count('src="data:image/png;base64,') == 7
    for name in ("risk_coverage", "roc", "pr", "risk_at_fpr", "histograms_risk",
                 "histograms_distance"):
        assert f'alt="{name}"' in text
        assert (tmp_path / "png" / f"{name}.png").stat().st_size > 5_000
    assert '<table class="metrics">' in text and "<th>AuRC</th>" in text and "<th>OSCR</th>" in text


def test_report_draws_the_double_score_curves(csv_file, tmp_path, capsys):
    html_path = tmp_path / "report.html"
    code, _, err = run(capsys, "report", csv_file, "--score", "risk", "--ood-score", "distance",
                       "-o", html_path)
    assert code == 0 and err == ""
    text = html_path.read_text()
    assert text.count('src="data:image/png;base64,') == 7
    assert "<th>risk+distance</th>" in text
    row = re.search(r"<tr><th>AUROC</th>(.*?)</tr>", text).group(1)
    _, ood, loss, both = _ood_sample()
    # the pair's cell (last) carries the note that it is an envelope
    assert re.findall(r"<td[^>]*>(.*?)</td>", row)[-1].startswith(
        f"{auroc(ood, both, search='exact'):.4f}")
    data = prepare(read_table(csv_file), scores=["risk"], ood_score="distance")
    # the pair's curves search the directions as its table does (auto: exact here), so the
    # AUROC in the legend is the table's
    for search, how in (("auto", "exact"),):  # (the displays' other searches: tests/plot)
        figs = report_figures(data, fpr=0.05, search=search)
        for name, curve in (("roc", ood_roc_curve(ood, both, search=how)),
                            ("pr", ood_pr_curve(ood, both, search=how))):
            (ax,) = figs[name].axes
            line = next(ln for ln in ax.lines
                        if ln.get_label().split(" (")[0] == "risk+distance")
            assert line.get_linestyle() == "--"
            np.testing.assert_array_equal(line.get_xydata(), np.stack(
                [curve[0], curve[1]] if name == "roc" else [curve.recall, curve.precision], 1))
        label = next(ln.get_label() for ln in figs["roc"].axes[0].lines
                     if ln.get_label().startswith("risk+distance"))
        assert f"AUROC = {auroc(ood, both, search=how):.4f}" in label
    (ax,) = figs["risk_at_fpr"].axes
    assert [ln.get_label() for ln in ax.lines] == ["risk (FPR <= 0.05)", "distance (FPR <= 0.05)",
                                                   "risk+distance (FPR <= 0.05)", "random"]


def test_demo_subcommand_runs_the_demo(tmp_path, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr("abstain.app.demo.run", lambda out, seed: calls.append((out, seed)))
    code, _, _ = run(capsys, "demo", "--out", tmp_path, "--random-state", "3")
    assert code == 0 and calls == [(tmp_path, 3)]


def test_console_entry_point(csv_file):
    proc = subprocess.run([sys.executable, "-m", "abstain", "evaluate", str(csv_file), "--quiet",
                           "--score", "risk"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "AuRC" in proc.stdout


# -- bad input: one clear line, non-zero exit ----------------------------------------------------


def _one_error_line(code, err):
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("abstain ")
    return lines[0]


def test_missing_file(tmp_path, capsys):
    line = _one_error_line(*run(capsys, "evaluate", tmp_path / "nope.csv")[::2])
    assert "file not found" in line and "nope.csv" in line


def test_misspelled_column_suggests_the_closest(csv_file, tmp_path, capsys):
    line = _one_error_line(*run(capsys, "evaluate", csv_file, "--score", "rsik")[::2])
    assert "score column 'rsik' not found; did you mean 'risk'?" in line
    line = _one_error_line(*run(capsys, "fit", csv_file, "--loss", "Loss", "--score", "risk",
                                "--target-coverage", "0.5", "-o", tmp_path / "x.json")[::2])
    assert "did you mean 'loss'?" in line


def test_a_name_in_other_unicode_code_points_is_shown_by_them(tmp_path, capsys):
    # a header written decomposed (NFD, as macOS tools write it) against a composed --score:
    # "did you mean 'café'?" looked the same as what was typed
    path = tmp_path / "nfd.csv"
    path.write_text("loss,cafe\u0301\n0,0.1\n1,0.9\n", encoding="utf-8")
    line = _one_error_line(*run(capsys, "evaluate", path, "--score", "caf\u00e9")[::2])
    assert ("score column 'caf\u00e9' not found; the file has 'cafe\\u0301', the same letters "
            "in other Unicode code points than 'caf\\xe9': write the name as the file does."
            ) in line


def test_nan_rows_are_refused_or_dropped(tmp_path, capsys):
    cols = _columns()
    cols["risk"][[3, 10, 20]] = np.nan
    path = tmp_path / "nan.csv"
    write_table(path, cols)
    line = _one_error_line(*run(capsys, "evaluate", path, "--quiet")[::2])
    assert "3 row(s) have NaN or empty values in column(s) 'risk'" in line
    assert "--dropna" in line
    code, out, err = run(capsys, "evaluate", path, "--quiet", "--dropna")
    assert code == 0 and "dropped 3 row(s)" in err


def test_nan_loss_on_ood_rows_is_fine_but_not_on_id_rows(tmp_path, capsys):
    cols = _columns()
    id_row = int(np.flatnonzero(cols["is_ood"] == 0)[0])
    cols["loss"][id_row] = np.nan
    path = tmp_path / "nan.csv"
    write_table(path, cols)
    line = _one_error_line(*run(capsys, "evaluate", path, "--quiet")[::2])
    assert "1 row(s)" in line and "'loss'" in line


def test_infeasible_targets_say_what_is_attainable(csv_file, tmp_path, capsys):
    small = tmp_path / "small.csv"
    write_table(small, {"loss": [1, 0, 1, 0], "u": [0.1, 0.2, 0.3, 0.4]})
    line = _one_error_line(*run(capsys, "fit", small, "--target-risk", "0.1", "-o",
                                tmp_path / "x.json")[::2])
    assert "target risk 0.1 is infeasible" in line
    assert "lowest selective risk attainable on these 4 rows is 0.5" in line
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--target-risk",
                                "0.01", "--delta", "0.05", "-o", tmp_path / "x.json")[::2])
    assert ("target risk 0.01 with --delta 0.05 is infeasible for --bound binomial: the "
            "threshold where the learning rows start its sequence for this target fails its "
            "test; the least target that it meets with --delta 0.05 on these 234 rows is "
            ) in line
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--tpr", "0.99",
                                "--fpr", "0.01", "-o", tmp_path / "x.json")[::2])
    assert "TPR >= 0.99 with FPR <= 0.01 is infeasible" in line
    assert "highest attainable TPR is" in line
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--precision",
                                "0.999", "--recall", "0.99", "-o", tmp_path / "x.json")[::2])
    assert "highest attainable precision is" in line
    assert not (tmp_path / "x.json").exists()


def _number_after(text, words):
    return float(re.search(re.escape(words) + r" ([0-9.e+-]+?)[;.]?(?: |$)", text).group(1))


def _fit_code(capsys, path, *args):
    return run(capsys, "fit", path, *args, "-o", path.parent / "rule.json")[0]


def test_infeasible_delta_names_the_least_attainable_bound(csv_file, capsys):
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--target-risk",
                                "0.01", "--delta", "0.05", "-o", csv_file.parent / "x.json")[::2])
    least = _number_after(line, "with --delta 0.05 on these 234 rows is")
    assert 0.01 < least < 1
    cols = _columns()
    ood = cols["is_ood"] == 1
    exact = least_risk_bound(cols["risk"][~ood], cols["loss"][~ood], 0.05)
    assert exact <= least <= exact * (1 + 1e-3)  # rounded up to 4 digits: itself feasible
    assert _fit_code(capsys, csv_file, "--score", "risk", "--target-risk", least,
                     "--delta", "0.05") == 0
    assert _fit_code(capsys, csv_file, "--score", "risk", "--target-risk", least * 0.995,
                     "--delta", "0.05") == 1
    # a larger delta makes a lower bound attainable
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--target-risk",
                                "0.01", "--delta", "0.5", "-o", csv_file.parent / "x.json")[::2])
    assert _number_after(line, "with --delta 0.5 on these 234 rows is") < least


@pytest.mark.parametrize("scores", [["risk"], ["risk", "distance"]])
def test_infeasible_tpr_fpr_names_attainable_rates(scores, csv_file, capsys):
    s = [a for c in scores for a in ("--score", c)]
    line = _one_error_line(*run(capsys, "fit", csv_file, *s, "--tpr", "0.99", "--fpr", "0.01",
                                "-o", csv_file.parent / "x.json")[::2])
    assert line.startswith("abstain fit: error: TPR >= 0.99 with FPR <= 0.01 is infeasible: ")
    tpr = _number_after(line, "at FPR <= 0.01 the highest attainable TPR is")
    fpr = _number_after(line, "at TPR >= 0.99 the lowest attainable FPR is")
    assert _fit_code(capsys, csv_file, *s, "--tpr", tpr, "--fpr", "0.01") == 0
    assert _fit_code(capsys, csv_file, *s, "--tpr", tpr * 1.005, "--fpr", "0.01") == 1
    assert _fit_code(capsys, csv_file, *s, "--tpr", "0.99", "--fpr", fpr) == 0
    assert _fit_code(capsys, csv_file, *s, "--tpr", "0.99", "--fpr", fpr * 0.995) == 1


@pytest.mark.parametrize("scores", [["distance"], ["risk", "distance"]])
def test_infeasible_precision_recall_names_attainable_rates(scores, csv_file, capsys):
    s = [a for c in scores for a in ("--score", c)]
    line = _one_error_line(*run(capsys, "fit", csv_file, *s, "--precision", "0.99", "--recall",
                                "0.95", "-o", csv_file.parent / "x.json")[::2])
    assert line.startswith("abstain fit: error: precision >= 0.99 with recall >= 0.95 is "
                           "infeasible: ")
    prec = _number_after(line, "at recall >= 0.95 the highest attainable precision is")
    rec = _number_after(line, "at precision >= 0.99 the highest attainable recall is")
    assert 0 < rec < 0.95 and prec < 0.99
    assert _fit_code(capsys, csv_file, *s, "--precision", prec, "--recall", "0.95") == 0
    assert _fit_code(capsys, csv_file, *s, "--precision", min(prec * 1.005, 1),
                     "--recall", "0.95") == 1
    assert _fit_code(capsys, csv_file, *s, "--precision", "0.99", "--recall", rec) == 0
    assert _fit_code(capsys, csv_file, *s, "--precision", "0.99", "--recall", rec * 1.005) == 1


def test_fit_needs_exactly_one_target(csv_file, tmp_path, capsys):
    out = tmp_path / "x.json"
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "-o", out)[::2])
    assert "exactly one target" in line
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--target-risk",
                                "0.1", "--reject-cost", "0.1", "-o", out)[::2])
    assert "got --target-risk, --reject-cost" in line


def test_parquet_without_the_extra_names_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1")
    line = _one_error_line(*run(capsys, "evaluate", path)[::2])
    assert "pip install 'abstain[io]'" in line


def test_unknown_extension(tmp_path, capsys):
    path = tmp_path / "x.txt"
    path.write_text("a\n1\n")
    line = _one_error_line(*run(capsys, "evaluate", path)[::2])
    assert "must end in one of" in line


def test_version(capsys):
    from abstain import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"abstain {__version__}\n"


def test_apply_reports_labelled_id_rows_and_ood_rows_apart(csv_file, tmp_path, capsys):
    rule = tmp_path / "r.json"
    assert main(["fit", str(csv_file), "--score", "risk", "--target-coverage", "0.8", "-o",
                 str(rule)]) == 0
    capsys.readouterr()
    out_path = tmp_path / "out.csv"
    assert main(["apply", str(rule), str(csv_file), "-o", str(out_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = read_table(out_path)
    ood = table["is_ood"] == 1
    acc = table["accept"] == 1
    k, n_id = int(acc[~ood].sum()), int((~ood).sum())
    risk = table["loss"][~ood & acc].mean()
    assert lines[1] == (f"ID rows: coverage {k / n_id:.4f} ({k} of {n_id} labelled rows), "
                        f"selective risk {risk:.4f}")
    k_ood = int(acc[ood].sum())
    assert lines[2] == f"OOD rows: {k_ood} of {int(ood.sum())} accepted ({k_ood / ood.sum():.2%})"
    # new rows without labels: the count only, and why
    bare = tmp_path / "bare.csv"
    write_table(bare, {"risk": table["risk"]})
    assert main(["apply", str(rule), str(bare), "-o", str(tmp_path / "b.csv")]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("(no loss, or label and prediction")


def test_fit_precision_recall_prints_the_achieved_precision(csv_file, tmp_path, capsys):
    assert main(["fit", str(csv_file), "--score", "distance", "--precision", "0.9", "--recall",
                 "0.5", "-o", str(tmp_path / "pr.json")]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert re.search(r"precision 0\.\d{4}, recall \(TPR\) 0\.\d{4}, FPR", line), line


@pytest.mark.parametrize("bound", ["sgr", "binomial", "hb", "wsr"])
def test_fit_bound_prints_and_writes_the_certified_bound(bound, csv_file, tmp_path, capsys):
    rule_path = tmp_path / "rule.json"
    code, out, err = run(capsys, "fit", csv_file, "--score", "risk", "--target-risk", "0.4",
                         "--delta", "0.1", "--bound", bound, "-o", rule_path)
    assert code == 0, err
    rule = load_json(rule_path.read_text())
    cols = _columns()
    rows = cols["is_ood"] == 0
    same = BoundedImprovement(0.4, delta=0.1, bound=bound, random_state=0).fit(
        cols["risk"][rows], cols["loss"][rows])
    assert (rule.bound, rule.bound_, rule.threshold_) == (bound, bound, same.threshold_)
    assert rule.risk_bound_ == same.risk_bound_ <= 0.4
    assert (f"certified risk bound {same.risk_bound_:.4f} with probability >= 0.9 "
            f"(procedure {bound})") in out


def test_fit_loss_bound_for_losses_beyond_one(tmp_path, capsys):
    rng = np.random.default_rng(3)
    u = rng.random(600)
    path = tmp_path / "scaled.csv"
    write_table(path, {"loss": 2.0 * (rng.random(600) < u / 4), "u": u})
    code, out, err = run(capsys, "fit", path, "--target-risk", "0.6", "--delta", "0.1",
                         "--loss-bound", "2", "-o", tmp_path / "r.json")
    assert code == 0, err
    rule = load_json((tmp_path / "r.json").read_text())
    assert (rule.loss_bound, rule.bound_) == (2.0, "wsr") and rule.risk_bound_ <= 0.6
    assert "(procedure wsr)" in out
    line = _one_error_line(*run(capsys, "fit", path, "--target-risk", "0.6", "--delta", "0.1",
                                "-o", tmp_path / "x.json")[::2])
    assert "losses must be at most --loss-bound 1.0" in line
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("extra, message", [
    (["--delta", "0.1", "--bound", "exact"], "--bound must be one of"),
    (["--bound", "sgr"], "--bound must come with --target-risk and --delta; got --bound sgr "
                         "without --delta."),
    (["--loss-bound", "2"], "--loss-bound must come with --target-risk and --delta; got "
                            "--loss-bound 2.0 without --delta."),
    (["--delta", "0.1", "--loss-bound", "-1"], "--loss-bound must"),
    (["--delta", "0.1", "--bound", "binomial", "--loss-bound", "0.5"],
     "losses must be at most --loss-bound 0.5"),
])
def test_fit_bad_bound_options(extra, message, csv_file, tmp_path, capsys):
    line = _one_error_line(*run(capsys, "fit", csv_file, "--score", "risk", "--target-risk",
                                "0.4", *extra, "-o", tmp_path / "x.json")[::2])
    assert message in line
    assert not (tmp_path / "x.json").exists()


class RejectShare(BoundedAbstention):
    """A toy reject rule: rejects the share ``reject_share`` of the most uncertain rows."""

    def __init__(self, reject_share: float = 0.1, *, random_state=None) -> None:
        self.reject_share = reject_share
        self.random_state = random_state

    @property
    def target_coverage(self) -> float:
        return 1.0 - self.reject_share


def test_a_registered_rule_is_an_option_of_fit_and_applies(tmp_path, capsys, monkeypatch):
    # Registering a rule (its class, serialisable, and one registry entry; nothing in
    # abstain.app) makes it an option of abstain fit, fitted and applied like the others.
    from abstain._core import serialize
    from abstain.models import REJECT_RULES, RuleSpec, RuleTarget, register_rule

    monkeypatch.setattr(serialize, "_KINDS", dict(serialize._KINDS))
    serialize.serializable("rule")(RejectShare)
    spec = RuleSpec(
        RejectShare, (RuleTarget("reject_share", "RejectShare: the share of rows rejected",
                                 metavar="SHARE"),),
        lambda rule, columns: [f"threshold {rule.threshold_:.6g} on {columns[0]}"])
    monkeypatch.setitem(REJECT_RULES, "RejectShare", spec)  # removed again after the test
    assert register_rule(spec) is spec and list(REJECT_RULES)[-1] == "RejectShare"
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = capsys.readouterr().out
    assert re.search(r"--reject-share SHARE\s+RejectShare: the share of rows rejected", out)
    path = tmp_path / "pred.csv"
    u = np.arange(1, 11) / 10
    write_table(path, {"loss": (u > 0.7).astype(float), "u": u})
    code, out, err = run(capsys, "fit", path, "--reject-share", "0.3", "-o", tmp_path / "r.json")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "RejectShare: threshold 0.7 on u"
    rule = load_json(tmp_path / "r.json")
    assert type(rule) is RejectShare and rule.reject_share == 0.3
    code, out, err = run(capsys, "apply", tmp_path / "r.json", path, "-o", tmp_path / "a.csv")
    assert code == 0
    assert read_table(tmp_path / "a.csv")["accept"].tolist() == [1] * 7 + [0] * 3
    code, out, err = run(capsys, "fit", path, "--reject-share", "0.3", "--target-coverage",
                         "0.5", "-o", tmp_path / "r.json")
    assert code == 1 and "--reject-share); got --target-coverage, --reject-share." in err


def test_a_library_message_names_the_search_option_as_the_command_takes_it(tmp_path, capsys):
    # the exact search refuses scores that reach 2**1020 beside subnormal ones, and told a
    # command-line user to "use search='grid'" (the Python keyword)
    path = tmp_path / "extreme.csv"
    big = "1.7976931348623157e308"
    path.write_text(f"loss,a,b,is_ood\n0,5e-324,-{big},0\n1,1e-323,{big},0\n0,0,{big},1\n"
                    f"1,1.5e-323,-{big},1\n0,5e-324,0,0\n")
    assert main(["evaluate", str(path), "--ood-score", "b", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "use --search grid." in err and "search='grid'" not in err
    assert main(["evaluate", str(path), "--ood-score", "b", "--quiet", "--search", "grid"]) == 0


def test_apply_takes_a_rule_file_with_a_byte_order_mark(tmp_path, capsys):
    # load_json read it, then the column names were read again without the mark: "Unexpected
    # UTF-8 BOM", naming no file
    rng = np.random.default_rng(0)
    data = tmp_path / "d.csv"
    write_table(data, {"loss": (rng.random(40) < 0.3) * 1.0, "risk": rng.random(40)})
    rule = tmp_path / "rule.json"
    code, _, _ = run(capsys, "fit", data, "--score", "risk", "--target-coverage", "0.8", "-o", rule)
    assert code == 0
    marked = tmp_path / "rule_bom.json"
    marked.write_bytes(b"\xef\xbb\xbf" + rule.read_bytes())
    code, _, err = run(capsys, "apply", marked, data, "-o", tmp_path / "a.csv")
    assert code == 0, err
    assert read_table(tmp_path / "a.csv")["accept"].tolist() == read_table(
        _applied(capsys, data, rule, tmp_path / "b.csv"))["accept"].tolist()


def _applied(capsys, data, rule, out):
    assert run(capsys, "apply", rule, data, "-o", out)[0] == 0
    return out


def test_an_unused_array_of_bytes_passes_through_apply(tmp_path, capsys):
    # b"caf\xe9" ended in "'ascii' codec can't decode byte 0xe9", naming neither file nor array
    rng = np.random.default_rng(0)
    data = tmp_path / "d.csv"
    write_table(data, {"loss": (rng.random(40) < 0.3) * 1.0, "risk": rng.random(40)})
    rule = tmp_path / "rule.json"
    code, _, _ = run(capsys, "fit", data, "--score", "risk", "--target-coverage", "0.8",
                     "-o", rule)
    assert code == 0
    src = tmp_path / "r.npz"
    tag = np.array([b"ok", b"caf\xe9", b""])
    np.savez(src, risk=np.array([0.1, 0.5, 0.9]), tag=tag)
    code, _, err = run(capsys, "apply", rule, src, "-o", tmp_path / "out.npz")
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as out:
        assert out["tag"].tolist() == tag.tolist()


def _strict_run(tmp_path, encoding, *args):
    """The command in a process of its own whose standard streams encode strictly."""
    env = {**os.environ, "PYTHONIOENCODING": f"{encoding}:strict"}
    return subprocess.run([sys.executable, "-m", "abstain", *map(os.fsencode, args)],
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)


@pytest.mark.skipif(sys.platform == "win32", reason="file names are bytes on POSIX only")
def test_names_the_output_encoding_cannot_hold_are_written_not_refused(tmp_path):
    # under en_US.UTF-8 (strict streams) a path with a Latin-1 byte stopped evaluate with
    # "surrogates not allowed", and fit exited 1 after writing its rule; a column named with
    # a euro sign in a Latin-1 terminal stopped evaluate before its --json was written
    name = os.fsdecode(b"caf\xe9.csv")
    write_table(tmp_path / name, {"loss": [0, 1, 0, 1, 0, 1], "risk_\u20ac": [
        0.1, 0.9, 0.2, 0.8, 0.3, 0.7]})
    done = _strict_run(tmp_path, "utf-8", "evaluate", name)
    assert done.returncode == 0 and done.stdout.startswith(b"caf\xe9.csv: 6 ID rows"), done
    rule = os.fsdecode(b"r\xe8gle.json")
    done = _strict_run(tmp_path, "utf-8", "fit", name, "--target-coverage", "0.5", "-o", rule)
    assert done.returncode == 0 and done.stdout.endswith(b"wrote r\xe8gle.json\n"), done
    done = _strict_run(tmp_path, "latin-1", "evaluate", name, "--json", "m.json")
    assert done.returncode == 0 and b"risk_\\u20ac" in done.stdout, done
    assert (tmp_path / "m.json").exists()
    page = os.fsdecode(b"rapport\xe9.html")
    before = (sys.stdout.errors, sys.stderr.errors)
    assert main(["report", str(tmp_path / name), "-o", str(tmp_path / page), "--quiet"]) == 0
    assert (sys.stdout.errors, sys.stderr.errors) == before  # put back as they were
    assert "caf\\udce9.csv" in (tmp_path / page).read_text(encoding="utf-8")


def test_the_output_streams_are_put_back_once_each_and_mixed_names_written_by_character(
        monkeypatch):
    # a stream given as both stdout and stderr kept the handler; a euro sign beside a byte
    # that is no text had the byte escaped with it
    import io

    from abstain.app.console import shown_streams

    stream = io.TextIOWrapper(io.BytesIO(), encoding="latin-1", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", stream)
    with shown_streams():
        print("b\u20ac" + os.fsdecode(b"\xff.csv"), file=stream)
        stream.flush()
    assert stream.errors == "strict"
    assert stream.buffer.getvalue() == b"b\\u20ac\xff.csv\n"
    # an escape is text that the stream's own code writes (EBCDIC is no ASCII)
    ebcdic = io.TextIOWrapper(io.BytesIO(), encoding="cp037", errors="strict")
    monkeypatch.setattr(sys, "stdout", ebcdic)
    with shown_streams():
        print("b\u20ac.csv", file=ebcdic)
        ebcdic.flush()
    assert ebcdic.buffer.getvalue().decode("cp037") == "b\\u20ac.csv\n"
