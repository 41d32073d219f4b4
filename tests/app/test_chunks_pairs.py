"""--ood-score on sources read in chunks: every metric of each score column from its tables,
the pair's risk at TPR/FPR and the double-score rules from its PairTable, equal to the whole
file, the pair's envelope metrics from its PairTable; too many pairs refused in one line."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from abstain.app.chunks import summarise
from abstain.app.cli import main
from abstain.app.data import as_data
from abstain.app.io import read_table, write_table
from abstain.app.report import CHUNKED_NOTE
from abstain.app.rules import load_rule
from abstain.app.tables import prepare

PAIR = "msp+energy"


def _columns(n: int = 1500, seed: int = 0, continuous: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    u = np.round(rng.random(n), 2)
    label = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < u, (label + 1) % 3, label)
    cols = {"msp": u, "energy": np.round(rng.normal(ood * 1.0, 1.0), 1),
            "is_ood": ood.astype(float)}
    if continuous:
        cols["loss"] = np.where(ood, np.nan, rng.random(n) * u)
    else:
        cols["label"], cols["prediction"] = label.astype(float), pred.astype(float)
    return cols


def _evaluate(source, out, *extra) -> dict:
    assert main(["evaluate", str(source), "--ood-score", "energy", "--json", str(out),
                 "--quiet", *extra]) == 0
    return json.loads(out.read_text())


def _same(v, w, continuous, rel=1e-12):
    return w == v if (v is None or not continuous) else w == pytest.approx(v, rel=rel)


@pytest.mark.parametrize("continuous", [False, True])
def test_evaluate_with_an_ood_score_on_parts_equals_the_whole_file(write_parts, tmp_path,
                                                                   continuous):
    cols = _columns(continuous=continuous)
    write_table(tmp_path / "all.parquet", cols)
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet", "csv"))
    for extra in ([], ["--tpr", "0.6", "--fpr", "0.4", "--search", "grid"]):  # NaN, feasible
        whole = _evaluate(tmp_path / "all.parquet", tmp_path / "a.json", *extra)
        got = _evaluate(parts, tmp_path / "b.json", "--chunk-rows", "200", *extra)
        assert got["labels"] == whole["labels"] and got["pairs"] == whole["pairs"] == {
            PAIR: ["msp", "energy"]}
        for name in ("msp", "energy", PAIR):  # every metric, the pair's envelope included
            assert got["metrics"][name].keys() == whole["metrics"][name].keys()
            for key, v in whole["metrics"][name].items():
                assert _same(v, got["metrics"][name][key], continuous), (name, key)
        assert {"auroc", "oscr"} <= set(whole["metrics"][PAIR]) or continuous
        assert got["notes"] == whole["notes"]
    risk = next(k for k in whole["labels"] if k.startswith("risk@tpr"))
    assert whole["metrics"][PAIR][risk] is not None  # the second run was feasible


def test_the_scaled_grid_of_a_pair_read_in_chunks(write_parts, tmp_path, monkeypatch):
    # above AUTO_EXACT_ROWS, "auto" divides each column by its standard deviation: the
    # table's deviation may differ from the rows' in the last bits, hence rel=1e-9
    import abstain._ood_search.sample as sample
    import abstain.metrics as metrics

    monkeypatch.setattr(sample, "AUTO_EXACT_ROWS", 1000)
    monkeypatch.setattr(metrics, "AUTO_EXACT_ROWS", 1000)
    cols = _columns()
    write_table(tmp_path / "all.parquet", cols)
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet", "csv"))
    whole = _evaluate(tmp_path / "all.parquet", tmp_path / "a.json")
    got = _evaluate(parts, tmp_path / "b.json", "--chunk-rows", "200")
    assert got["metrics"][PAIR].keys() == whole["metrics"][PAIR].keys()
    for key, v in whole["metrics"][PAIR].items():
        assert _same(v, got["metrics"][PAIR][key], True, rel=1e-9), key
    assert "standard deviation" in got["notes"][PAIR]["auroc"]
    assert got["notes"] == whole["notes"]


@pytest.mark.parametrize("target", [["--tpr", "0.6", "--fpr", "0.4"],
                                    ["--precision", "0.8", "--recall", "0.5"],
                                    ["--reject-id-cost", "0.3", "--predict-ood-cost", "1"]])
def test_a_double_score_rule_fitted_on_parts_is_the_rule_of_the_whole_file(write_parts, tmp_path,
                                                                           target):
    cols = _columns()
    write_table(tmp_path / "all.csv", cols)
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet", "csv"))
    for source, out, extra in ((tmp_path / "all.csv", "a.json", []),
                               (parts, "b.json", ["--chunk-rows", "300"])):
        assert main(["fit", str(source), "--ood-score", "energy", *target, "-o",
                     str(tmp_path / out), "--quiet", *extra]) == 0
    rule = (tmp_path / "a.json").read_text()
    assert json.loads(rule)["columns"]["scores"] == ["msp", "energy"]
    assert (tmp_path / "b.json").read_text() == rule


def test_pair_with_on_parts_keeps_only_the_pairs_named(write_parts, tmp_path):
    cols = _columns()
    cols["knn"] = np.round(cols["energy"] + cols["msp"], 1)
    write_table(tmp_path / "all.parquet", cols)
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet",))
    extra = ("--pair-with", "msp", "--tpr", "0.6", "--fpr", "0.4", "--search", "grid")
    whole = _evaluate(tmp_path / "all.parquet", tmp_path / "a.json", *extra)
    got = _evaluate(parts, tmp_path / "b.json", "--chunk-rows", "200", *extra)
    assert got["pairs"] == whole["pairs"] == {PAIR: ["msp", "energy"]}
    assert set(got["metrics"]) == {"msp", "energy", "knn", PAIR}
    risk = [doc["metrics"][PAIR]["risk@tpr0.6,fpr0.4"] for doc in (got, whole)]
    assert risk[0] is not None and risk[0] == risk[1]


def test_a_report_with_an_ood_score_on_parts(write_parts, tmp_path):
    pytest.importorskip("matplotlib")

    cols = _columns(n=600)
    write_table(tmp_path / "all.parquet", cols)
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet",))
    rule = tmp_path / "rule.json"
    assert main(["fit", str(tmp_path / "all.parquet"), "--ood-score", "energy", "--tpr", "0.6",
                 "--fpr", "0.4", "-o", str(rule), "--quiet"]) == 0
    out = tmp_path / "parts.html"
    assert main(["report", str(parts), "--ood-score", "energy", "--rule", str(rule),
                 "-o", str(out), "--quiet", "--fpr", "0.4", "--tpr", "0.6"]) == 0
    page = out.read_text()
    assert PAIR in page and CHUNKED_NOTE in page
    assert re.findall(r"<li>rule BoundedTPRFPR on <strong>msp, energy</strong> \(asked for: "
                      r"tpr 0\.6, fpr 0\.4.*; on these rows \(expected .*\): coverage of "
                      r"ID rows 0\.\d{4}, selective risk 0\.\d{4}, OOD rows accepted", page)
    # the rule's own AUROC from the pair's table is the one on the rows
    own = re.findall(r"as one detector: AUROC (0\.\d{4})", page)
    whole_out = tmp_path / "whole.html"
    assert main(["report", str(tmp_path / "all.parquet"), "--ood-score", "energy", "--rule",
                 str(rule), "-o", str(whole_out), "--quiet", "--fpr", "0.4", "--tpr",
                 "0.6"]) == 0
    assert own and own == re.findall(r"as one detector: AUROC (0\.\d{4})",
                                     whole_out.read_text())
    # the pair's operating point from its PairTable is the one on the rows
    fitted, columns = load_rule(rule)
    options = {"scores": None, "loss": None, "label": None, "prediction": None,
               "is_ood": None, "ood_score": "energy", "dropna": False}
    point = as_data(summarise(str(parts), rows=150, options=options)).operating_point(
        fitted, PAIR, columns)
    on_rows = as_data(prepare(read_table(tmp_path / "all.parquet"), ood_score="energy")
                    ).operating_point(fitted, PAIR, columns)
    np.testing.assert_allclose(point, on_rows, rtol=1e-12)
    from_table = as_data(summarise(str(parts), rows=150, options=options)).rule_auroc(
        fitted, PAIR, columns)
    assert from_table == as_data(prepare(read_table(tmp_path / "all.parquet"),
                                         ood_score="energy")).rule_auroc(fitted, PAIR, columns)


def test_too_many_pairs_and_bad_pair_use_get_one_line(write_parts, tmp_path, capsys):
    cols = _columns()
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet", "csv"))
    for args, pattern in (
        (["evaluate", str(parts), "--ood-score", "energy", "--max-pairs", "100"],
         r"the double-score pair 'msp\+energy' has \d[\d,]* distinct score pairs after "
         r"[\d,]+ rows \(in '.*part-0.parquet'\), more than --max-pairs 100.*Round both"),
        (["evaluate", str(parts), "--ood-score", "energy", "--max-pairs", "0"],
         r"--max-pairs must be at least 1"),
        (["fit", str(parts), "--ood-score", "energy", "--tpr", "0.99", "--fpr", "0.0", "-o",
          str(tmp_path / "r.json")], r"infeasible on the pair msp, energy.*one file without"),
        (["fit", str(parts), "--ood-score", "energy", "--target-coverage", "0.5", "-o",
          str(tmp_path / "r.json")], r"takes one score column; an OOD score \('energy'\)"),
        (["fit", str(parts), "--tpr", "0.5", "--fpr", "0.5", "-o", str(tmp_path / "r.json")],
         r"when read in chunks, one, or a pair with an OOD score"),
    ):
        assert main([*args, "--quiet"]) == 1, args
        assert re.search(pattern, capsys.readouterr().err), args
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(ValueError, match="max_pairs must be an integer >= 1"):
        summarise(str(parts), rows=100, options={}, max_pairs=0)


def test_pairs_on_dask_equal_pairs_on_this_process(write_parts, tmp_path):
    pytest.importorskip("distributed")
    parts = write_parts(_columns(n=600), tmp_path / "parts", formats=("parquet", "csv"))
    options = {"scores": None, "loss": None, "label": None, "prediction": None,
               "is_ood": None, "ood_score": "energy", "dropna": False}
    here = summarise(str(parts), rows=100, options=options)
    there = summarise(str(parts), rows=100, options=options, engine="dask")
    assert here.pairs is not None and there.pairs is not None
    assert here.pairs[PAIR] == there.pairs[PAIR] and here.pairs[PAIR].n == 600
    assert here.columns == there.columns == {PAIR: ("msp", "energy")}
