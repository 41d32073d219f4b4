"""``abstain apply`` reads its input in chunks: the same output and summary at any chunk size."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from abstain import BoundedAbstention, load_json
from abstain.app.cli import main
from abstain.app.io import read_table, write_table


def _columns(n: int = 400, seed: int = 1) -> dict[str, np.ndarray]:
    """Scores of few values (many ties at any threshold) and 0/1 losses (exact sums)."""
    rng = np.random.default_rng(seed)
    is_ood = rng.random(n) < 0.25
    risk = rng.integers(0, 8, n) / 8
    loss = (rng.random(n) < risk).astype(float)
    loss[is_ood] = np.nan
    distance = rng.integers(0, 5, n) + 2.0 * is_ood
    return {"loss": loss, "risk": risk, "distance": distance, "is_ood": is_ood.astype(float),
            "note": np.array([f"r{i}" for i in range(n)])}


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "pred.csv"
    write_table(path, _columns())
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args", [
    ["--score", "risk", "--target-coverage", "0.6"],
    ["--score", "risk", "--target-risk", "0.2"],
    ["--score", "risk", "--reject-cost", "0.3"],
    ["--score", "risk", "--score", "distance", "--tpr", "0.6", "--fpr", "0.2"],
    ["--score", "risk", "--ood-score", "distance", "--tpr", "0.6", "--fpr", "0.2"],
    ["--score", "risk", "--reject-id-cost", "0.3", "--predict-ood-cost", "1"],
])
def test_the_accept_column_and_summary_do_not_depend_on_the_chunk_size(args, csv_file,
                                                                       tmp_path, capsys):
    rule_path = tmp_path / "rule.json"
    code, _, err = _run(capsys, "fit", csv_file, *args, "-o", rule_path)
    assert code == 0, err
    rule = load_json(rule_path.read_text())
    if "--target-coverage" in args:
        assert 0.0 < rule.accept_prob_ < 1.0  # a tie group drawn at the threshold
    outputs = {}
    for rows in (1, 7, 1000):
        out = tmp_path / f"out{rows}.csv"
        code, printed, err = _run(capsys, "apply", rule_path, csv_file, "-o", out,
                                  "--chunk-rows", rows)
        assert code == 0, err
        outputs[rows] = (out.read_bytes(), printed.replace(str(out), "OUT"))
    assert outputs[1] == outputs[7] == outputs[1000]
    # the decisions of one call of the rule on every row, ties drawn in the rows' order
    cols = _columns()
    names = [a for prev, a in zip(args, args[1:], strict=False)
             if prev in ("--score", "--ood-score")]
    x = np.stack([cols[c] for c in names], axis=1)
    expected = rule.accept(x if x.shape[1] == 2 else x[:, 0])
    np.testing.assert_array_equal(read_table(tmp_path / "out7.csv")["accept"], expected)


def test_missing_scores_are_counted_over_every_chunk(tmp_path, capsys):
    cols = _columns()
    cols["risk"][[5, 150, 390]] = np.nan
    path = tmp_path / "gaps.csv"
    write_table(path, cols)
    rule = tmp_path / "rule.json"
    assert main(["fit", str(path), "--score", "risk", "--target-coverage", "0.6", "--dropna",
                 "-o", str(rule)]) == 0
    capsys.readouterr()
    code, _, err = _run(capsys, "apply", rule, path, "-o", tmp_path / "o.csv", "--chunk-rows", 100)
    assert code == 1
    assert "3 row(s) have NaN or empty values in column(s) 'risk' (first at line 7)" in err
    assert not (tmp_path / "o.csv").exists()
    code, _, err = _run(capsys, "apply", rule, path, "-o", tmp_path / "o.csv", "--chunk-rows", 100,
                        "--dropna")
    assert code == 0
    assert "left the accept cell empty on 3 row(s)" in err
    accept = read_table(tmp_path / "o.csv")["accept"]
    assert np.flatnonzero(np.isnan(accept)).tolist() == [5, 150, 390]


def test_a_chunk_size_below_one_is_refused(csv_file, tmp_path, capsys):
    rule = tmp_path / "rule.json"
    assert main(["fit", str(csv_file), "--score", "risk", "--target-coverage", "0.6", "-o",
                 str(rule)]) == 0
    code, _, err = _run(capsys, "apply", rule, csv_file, "-o", tmp_path / "o.csv",
                        "--chunk-rows", 0)
    assert (code, err) == (1, "abstain apply: error: --chunk-rows must be at least 1; got 0.\n")
    assert not (tmp_path / "o.csv").exists()


def test_a_header_alone_is_refused(csv_file, tmp_path, capsys):
    rule = tmp_path / "rule.json"
    assert main(["fit", str(csv_file), "--score", "risk", "--target-coverage", "0.6", "-o",
                 str(rule)]) == 0
    empty = tmp_path / "empty.csv"
    empty.write_text("risk,loss\n")
    code, _, err = _run(capsys, "apply", rule, empty, "-o", tmp_path / "o.csv")
    assert code == 1
    assert "has no data rows (only a header)" in err


def test_a_parquet_input_in_chunks_gives_the_whole_files_output(csv_file, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    source = tmp_path / "pred.parquet"
    write_table(source, _columns())
    rule = tmp_path / "rule.json"
    assert main(["fit", str(csv_file), "--score", "risk", "--target-coverage", "0.6", "-o",
                 str(rule)]) == 0
    tables = []
    for rows in (3, 1000):
        out = tmp_path / f"o{rows}.parquet"
        assert main(["apply", str(rule), str(source), "-o", str(out), "--chunk-rows",
                     str(rows)]) == 0
        tables.append(read_table(out))
    assert tables[0].keys() == tables[1].keys()
    for k in tables[0]:
        np.testing.assert_array_equal(tables[0][k], tables[1][k])


def test_memory_holds_one_chunk_of_cells_not_the_table(tmp_path, capsys):
    n = 60_000
    cols = _columns(n)
    for j in range(6):  # text that apply passes through: the bulk of a table in memory
        cols[f"text{j}"] = np.array([f"cell {i} of column {j}" for i in range(n)])
    path = tmp_path / "wide.csv"
    write_table(path, cols)
    rule = tmp_path / "rule.json"
    assert main(["fit", str(path), "--score", "risk", "--target-coverage", "0.6", "-o",
                 str(rule)]) == 0
    peaks = {}
    for rows in (1000, n):
        tracemalloc.start()
        try:
            assert main(["apply", str(rule), str(path), "-o", str(tmp_path / f"o{rows}.csv"),
                         "--chunk-rows", str(rows)]) == 0
            peaks[rows] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    capsys.readouterr()
    assert peaks[1000] < 0.25 * peaks[n], peaks


def test_a_chunk_that_dropna_empties_is_written_with_empty_cells(tmp_path, capsys):
    cols = _columns()
    cols["risk"][:7] = np.nan  # the first chunk of 7 rows has no score at all
    path = tmp_path / "gaps.csv"
    write_table(path, cols)
    rule = tmp_path / "rule.json"
    assert main(["fit", str(path), "--score", "risk", "--score", "distance", "--tpr", "0.6",
                 "--fpr", "0.2", "--dropna", "-o", str(rule)]) == 0
    outputs = []
    for rows in (7, 1000):
        out = tmp_path / f"o{rows}.csv"
        assert main(["apply", str(rule), str(path), "-o", str(out), "--dropna",
                     "--chunk-rows", str(rows)]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert np.isnan(read_table(tmp_path / "o7.csv")["accept"][:7]).all()


def test_the_summary_types_each_chunk_as_the_whole_file(tmp_path, capsys):
    # text labels in the first chunk, then cells that read as the numbers 1 and 1.0: as
    # text (the whole column's kind) they differ, so those rows are errors
    path = tmp_path / "labels.csv"
    path.write_text("u,label,prediction\n0.1,cat,cat\n0.2,dog,cat\n0.3,cat,cat\n"
                    "0.35,1,1.0\n0.4,2,2.0\n0.8,1,1\n")
    rule = tmp_path / "rule.json"
    rule.write_text(BoundedAbstention(target_coverage=0.9).fit(
        np.arange(10) / 10, np.arange(10) % 2).to_json())
    lines = []
    for rows in (3, 1000):
        assert main(["apply", str(rule), str(path), "--score", "u", "-o",
                     str(tmp_path / f"o{rows}.csv"), "--chunk-rows", str(rows)]) == 0
        lines.append(capsys.readouterr().out.splitlines()[1])
    accept = read_table(tmp_path / "o3.csv")["accept"] == 1
    wrong = np.array([0, 1, 0, 1, 1, 0], dtype=bool)
    risk = wrong[accept].mean()
    assert lines[0] == lines[1] == (f"ID rows: coverage {accept.mean():.4f} ({accept.sum()} of "
                                    f"6 labelled rows), selective risk {risk:.4f}")


@pytest.mark.parametrize("text,reason", [
    # NA and null are class names among text labels: a first chunk of them waits for the
    # column's kind
    ("u,label,prediction\n0.1,null,cat\n0.2,NA,null\n0.3,cat,cat\n0.4,dog,cat\n0.5,cat,dog\n"
     "0.6,null,null\n", None),
    # numbers, then text: the whole file's reason, though the first chunk has no loss
    # or prediction column to report on
    ("u,label\n0.1,1\n0.2,2\n0.3,cat\n", "holds numbers (line 2: '1') but line 4 has the text"),
])
def test_the_summary_of_chunks_is_the_whole_files(text, reason, tmp_path, capsys):
    path = tmp_path / "labels.csv"
    path.write_text(text)
    rule = tmp_path / "rule.json"
    rule.write_text(BoundedAbstention(target_coverage=0.9).fit(
        np.arange(10) / 10, np.arange(10) % 2).to_json())
    printed = []
    for rows in (1, 2, 1000):
        assert main(["apply", str(rule), str(path), "--score", "u", "-o",
                     str(tmp_path / f"o{rows}.csv"), "--chunk-rows", str(rows)]) == 0
        printed.append(capsys.readouterr().out.splitlines()[1:])
    assert printed[0] == printed[1] == printed[2]
    if reason is None:
        assert printed[0] == ["ID rows: coverage 1.0000 (6 of 6 labelled rows), selective "
                              "risk 0.6667"]
    else:
        assert reason in printed[0][0]


def test_a_parquet_batch_of_nulls_does_not_end_the_wait_for_a_columns_kind(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "labels.parquet"
    pq.write_table(pa.table({
        "u": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        "label": pa.array(["NA", "NA", None, None, "cat", "dog"], pa.string()),
        "prediction": pa.array(["NA", "cat", "cat", "cat", "cat", "cat"], pa.string())}), path)
    rule = tmp_path / "rule.json"
    rule.write_text(BoundedAbstention(target_coverage=0.9).fit(
        np.arange(10) / 10, np.arange(10) % 2).to_json())
    printed = []
    for rows in (1, 2, 3, 1000):
        assert main(["apply", str(rule), str(path), "--score", "u", "-o",
                     str(tmp_path / f"o{rows}.csv"), "--chunk-rows", str(rows)]) == 0
        printed.append(capsys.readouterr().out.splitlines()[1:])
    assert all(p == printed[-1] for p in printed)
    assert printed[-1] == ["ID rows: coverage 1.0000 (4 of 4 labelled rows), selective risk "
                           "0.5000"]
