"""Sources read in chunks (a directory of parts, a glob, --chunk-rows, --engine dask): the
same metrics and rules as the whole file, and a clear line for every bad part."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from abstain.app.chunks import part_files
from abstain.app.cli import main
from abstain.app.io import read_chunks, write_table


def _columns(n: int = 2000, seed: int = 0, continuous: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = np.round(rng.random(n), 2)
    label = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < u, (label + 1) % 3, label)
    cols = {"msp": u, "energy": rng.random(n), "is_ood": (rng.random(n) < 0.2).astype(float)}
    if continuous:
        cols["loss"] = rng.random(n) * u
    else:
        cols["label"], cols["prediction"] = label.astype(float), pred.astype(float)
    return cols


def _evaluate(source, tmp_path, *extra) -> dict:
    out = tmp_path / f"ev{len(list(tmp_path.iterdir()))}.json"
    assert main(["evaluate", str(source), "--json", str(out), "--quiet", *extra]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("continuous", [False, True])
def test_a_directory_of_parts_gives_the_metrics_of_the_whole_file(write_parts, tmp_path,
                                                                  continuous):
    cols = _columns(continuous=continuous)
    write_table(tmp_path / "all.csv", cols)
    whole = _evaluate(tmp_path / "all.csv", tmp_path)
    source = write_parts(cols, tmp_path / "parts", k=4, formats=("csv", "parquet"))
    parts = _evaluate(source, tmp_path, "--chunk-rows", "170")
    if not continuous:
        assert parts == whole
    else:
        assert parts["labels"] == whole["labels"]
        for s, metrics in whole["metrics"].items():
            for k, v in metrics.items():
                got = parts["metrics"][s][k]
                assert got == v if v is None else got == pytest.approx(v, rel=1e-12)
    chunked_file = _evaluate(tmp_path / "all.csv", tmp_path, "--chunk-rows", "333")
    assert chunked_file["metrics"].keys() == whole["metrics"].keys()


@pytest.mark.parametrize("target", [["--target-coverage", "0.7"], ["--reject-cost", "0.3"],
                                    ["--target-risk", "0.3", "--delta", "0.2"],
                                    ["--tpr", "0.3", "--fpr", "0.5"],
                                    ["--precision", "0.6", "--recall", "0.3"]])
def test_fit_on_parts_writes_the_rule_of_the_whole_file(write_parts, tmp_path, target, capsys):
    cols = _columns()
    write_table(tmp_path / "all.parquet", cols)
    parts = write_parts(cols, tmp_path / "parts", formats=("parquet",), k=4)
    for source, out in ((tmp_path / "all.parquet", "a.json"), (parts / "*.parquet", "b.json")):
        assert main(["fit", str(source), "--score", "msp", *target, "-o",
                     str(tmp_path / out), "--quiet", "--chunk-rows", "250"]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_a_file_whose_name_holds_glob_characters_is_that_file(tmp_path):
    write_table(tmp_path / "run[1].csv", {"loss": np.array([0.0, 1, 0, 1]),
                                          "risk": np.array([0.1, 0.9, 0.2, 0.8])})
    write_table(tmp_path / "run1.csv", {"loss": np.array([0.0, 1, 0, 1]),
                                        "risk": np.array([0.9, 0.1, 0.8, 0.2])})
    assert part_files(str(tmp_path / "run[1].csv")) == [tmp_path / "run[1].csv"]
    assert part_files(str(tmp_path / "run?.csv")) == [tmp_path / "run1.csv"]
    ranked = _evaluate(tmp_path / "run[1].csv", tmp_path, "--score", "risk")
    assert ranked == _evaluate(tmp_path / "run[[]1].csv", tmp_path, "--score", "risk")
    assert ranked != _evaluate(tmp_path / "run1.csv", tmp_path, "--score", "risk")


def test_an_output_that_would_become_a_part_of_its_source_is_refused(write_parts, tmp_path,
                                                                      capsys):
    """``fit parts -o parts/rule.csv`` wrote a table-named file among the parts, and the next
    read of ``parts`` failed on it; outputs a directory or glob would read are refused."""
    folder = write_parts(_columns(n=200), tmp_path / "parts", formats=("csv",))
    before = sorted(p.name for p in folder.iterdir())
    for argv, out in ((["fit", str(folder), "--target-coverage", "0.7", "-o"], "rule.csv"),
                      (["evaluate", str(folder), "--json"], "m.pq"),
                      (["report", str(folder), "-o"], "r.tsv"),
                      (["fit", str(folder / "*.csv"), "--target-coverage", "0.7", "-o"],
                       "x.csv")):
        code = main([*argv, str(folder / out), "--score", "msp", "--quiet"])
        err = capsys.readouterr().err
        assert code == 1 and "would be read as a part of the source" in err, err
    assert sorted(p.name for p in folder.iterdir()) == before
    # a rule beside the parts that no read takes (JSON), or in a folder named _*, is written
    for out in ("rule.json", "_rules/rule.csv"):
        (folder / out).parent.mkdir(exist_ok=True)
        assert main(["fit", str(folder), "--target-coverage", "0.7", "--score", "msp", "-o",
                     str(folder / out), "--quiet"]) == 0
    assert main(["evaluate", str(folder), "--quiet"]) == 0


def test_check_not_a_part_refuses_what_the_next_read_takes_and_only_that(tmp_path,
                                                                         monkeypatch):
    """Each output is refused exactly when ``part_files`` of the source, read after it is
    written, lists it or fails on it: links to the source and from it, ``..`` after a link,
    ``**`` matching no folder, ``*`` within one folder, hidden names."""
    from abstain.app.chunks import check_not_a_part

    monkeypatch.chdir(tmp_path)
    for folder in ("parts/sub", "parts2", "runs"):
        os.makedirs(folder)
    for part in ("parts/p0.csv", "runs/r0.csv"):
        Path(part).write_text("loss,score\n0,1\n")
    os.symlink("parts", "alias")
    os.symlink("parts/sub", "deep")
    cases = [("parts", "parts/rule.csv", True), ("parts", "parts2/rule.csv", False),
             ("parts", "parts/RULE.CSV", True), ("parts", "parts/_x/rule.csv", False),
             ("parts", "parts/rule.json", False), ("alias", "parts/rule.csv", True),
             ("parts", "alias/rule.csv", True), ("parts", "deep/../rule.csv", True),
             ("parts/**/*.csv", "parts/rule.csv", True), ("**/*.csv", "rule.csv", True),
             ("runs/**/*", "runs/rule.json", True), ("parts/*.csv", "parts/sub/r.csv", False),
             ("parts/*.csv", "parts/.rule.csv", False), ("parts/*", "parts/rule.json", True),
             ("parts/**/*.csv", "parts/sub/rule.csv", True), ("alias/*.csv", "parts/r.csv", True)]
    for source, output, refused in cases:
        real = os.path.realpath(output)
        Path(real).parent.mkdir(exist_ok=True)
        Path(real).write_text("{}\n")
        try:
            read = any(os.path.samefile(f, real) for f in part_files(source))
        except ValueError:  # the next read fails on it
            read = True
        os.unlink(real)
        assert read == refused, (source, output)
        if refused:
            with pytest.raises(ValueError, match="would be read as a part of the source"):
                check_not_a_part(output, source)
        else:
            check_not_a_part(output, source)


def test_the_dask_engine_gives_the_same_metrics(write_parts, tmp_path):
    pytest.importorskip("distributed")
    cols = _columns(n=800)
    write_table(tmp_path / "all.csv", cols)
    parts = write_parts(cols, tmp_path / "parts", k=4, formats=("csv", "parquet"))
    assert _evaluate(parts, tmp_path, "--engine", "dask") == _evaluate(tmp_path / "all.csv",
                                                                         tmp_path)


def test_read_chunks_keeps_the_file_line_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("u,loss\n" + "".join(f"0.{i},0\n" for i in range(1, 8)) + "0.9,oops\n")
    chunks = read_chunks(path, 3)
    first, second = next(chunks), next(chunks)
    assert [c.columns["u"].tolist() for c in [first, second]] == [[0.1, 0.2, 0.3],
                                                                  [0.4, 0.5, 0.6]]
    assert second.rows.unit == "line" and second.rows.numbers.tolist() == [5, 6, 7]
    with pytest.raises(ValueError, match=r"holds numbers \(line 2: '0'\) but line 9 has the "
                                         r"text 'oops'"):
        next(chunks)
    npz = tmp_path / "t.npz"
    np.savez(npz, u=np.arange(5.0), loss=np.zeros(5))
    assert [c.columns["u"].size for c in read_chunks(npz, 2)] == [5]


def test_bad_sources_get_one_line(write_parts, tmp_path, capsys):
    cols = _columns(n=400)
    parts = write_parts(cols, tmp_path / "parts", formats=("csv",), k=4)
    (parts / "part-9.csv").write_text("msp,energy,is_ood,label,prediction\n0.1,0.2,0,1,x2\n"
                                      "0.1,abc,0,1,1\n0.3,0.4,0,1,1\n")
    assert main(["evaluate", str(parts), "--quiet"]) == 1
    assert "column 'energy'" in capsys.readouterr().err
    (parts / "part-9.csv").write_text("msp,energy,label,prediction\n0.1,0.2,1,1\n")
    assert main(["evaluate", str(parts), "--quiet"]) == 1
    assert "lacks 'is_ood', which" in capsys.readouterr().err
    assert main(["evaluate", str(parts), "--quiet", "--score", "msp"]) == 1
    assert "every part must have the OOD column or none" in capsys.readouterr().err
    (parts / "part-9.csv").write_text("msp,energy,is_ood,label,prediction\n0.1,,0,1,1\n")
    assert main(["evaluate", str(parts), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "part-9.csv" in err and "(first at line 2);" in err and "--dropna" in err
    assert main(["evaluate", str(parts), "--quiet", "--dropna"]) == 0
    assert "dropped 1 row(s)" in capsys.readouterr().err
    for args, message in (
        (["evaluate", str(tmp_path / "none*.csv")], "no file matches"),
        (["report", str(parts), "-o", str(tmp_path / "r.html")], "(first at line 2);"),
        (["report", str(parts), "-o", str(tmp_path / "r.html"), "--bootstrap", "9"],
         "--bootstrap resamples the rows of one file"),
        (["evaluate", str(parts), "--scheduler", "tcp://h:1"], "--scheduler needs --engine"),
        (["evaluate", str(parts), "--chunk-rows", "0"], "--chunk-rows must be at least 1"),
        (["fit", str(parts), "--score", "msp", "--target-coverage", "0.5", "-o",
          str(parts / "part-0.csv")], "is the input file"),
    ):
        assert main(args) == 1, args
        assert message in capsys.readouterr().err, args
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no .csv, .parquet or .pq file"):
        part_files(str(tmp_path / "empty"))
    # a table not read as it is named was skipped without a word (half the rows)
    table = tmp_path / "kinds"
    table.mkdir()
    (table / "part-0.csv").write_text("u,loss\n0.1,0\n")
    for name in ("README.md", "_SUCCESS", ".part-0.csv.crc", "_tmp/part-9.csv.gz", "notes.json",
                 "_temporary/0/part-0.csv", ".hidden/part-1.csv"):  # Spark's attempts, ...
        (table / name).parent.mkdir(parents=True, exist_ok=True)
        (table / name).write_text("x")  # not tables, or hidden: left alone
    assert part_files(str(table)) == [table / "part-0.csv"]
    for name in ("part-1.csv.gz", "sub/part-2.tsv", "part-3.parquet.bz2"):
        (table / name).parent.mkdir(exist_ok=True)
        (table / name).write_text("x")
        with pytest.raises(ValueError, match=rf"^'{table / name}' in directory '{table}' is a "
                                             r"table that is not read \(only \.csv"):
            part_files(str(table))
        (table / name).unlink()
    (tmp_path / "head.csv").write_text("msp,loss\n")
    assert main(["evaluate", str(tmp_path / "head.csv"), "--chunk-rows", "5"]) == 1
    assert "no data rows" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["numpy", "dask"])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_parts_with_other_columns_are_refused_where_every_numeric_column_is_a_score(
        write_parts, tmp_path, capsys, engine, fmt):
    # a numeric column that only a later part has would not be evaluated, and nothing said so
    cols = _columns(n=400)
    parts = write_parts(cols, tmp_path / "parts", formats=(fmt,), k=3)
    last = sorted(parts.iterdir())[-1]
    extra = {**{k: v[:5] for k, v in cols.items()}, "knn": np.arange(5.0)}
    write_table(str(parts / f"part-9.{fmt}"), extra)
    args = ["evaluate", str(parts), "--quiet", "--engine", engine]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "part-9" in err, err
    assert ("has 'knn', which " + repr(str(sorted(parts.iterdir())[0]))) in err
    assert "; the parts of a source must have the same columns (or name the score columns " \
           "with --score)." in err
    # named score columns: the other columns of a part are not read
    assert main([*args, "--score", "msp", "--score", "energy"]) == 0
    # a part that lacks a column (a text one here) is refused as well
    write_table(str(parts / f"part-9.{fmt}"), {k: v[:5] for k, v in cols.items() if k != "msp"}
                | {"note": np.asarray(["a"] * 5)})
    assert main(args) == 1
    err = capsys.readouterr().err
    assert ": has 'note', which" in err and "; lacks 'msp', which" in err
    assert last.exists()


def test_the_spark_engine_checks_the_parts_columns_before_it_starts(tmp_path):
    from abstain.app.chunks import summarise

    cols = _columns(n=50)
    (tmp_path / "p").mkdir()
    write_table(str(tmp_path / "p" / "a.parquet"), cols)
    write_table(str(tmp_path / "p" / "b.parquet"), cols | {"knn": cols["msp"]})
    with pytest.raises(ValueError, match=r"b\.parquet': has 'knn', which .*a\.parquet' has not"):
        summarise(str(tmp_path / "p"), rows=100, options={}, engine="spark")


def _fit_json(source, tmp_path, *args) -> tuple[int, str]:
    out = tmp_path / f"rule{len(list(tmp_path.iterdir()))}.json"
    code = main(["fit", str(source), "--score", "msp", *args, "-o", str(out), "--quiet"])
    return code, out.read_text() if out.exists() else ""


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("target", [
    ["--target-coverage", "0.7"], ["--reject-cost", "0.3"], ["--target-risk", "0.3"],
    ["--target-risk", "0.3", "--delta", "0.2", "--bound", "sgr"],
    ["--target-risk", "0.05", "--delta", "0.2", "--bound", "sgr"],  # infeasible: same message
    ["--tpr", "0.3", "--fpr", "0.5"], ["--precision", "0.6", "--recall", "0.3"]])
def test_fit_in_chunks_writes_the_rule_of_the_whole_file(tmp_path, target, continuous, capsys):
    cols = _columns(n=400, seed=3, continuous=continuous)
    if continuous:  # losses on a binary grid: every partial sum is exact
        cols["loss"] = np.round(cols["loss"] * 64) / 64
    write_table(tmp_path / "all.csv", cols)
    code, whole = _fit_json(tmp_path / "all.csv", tmp_path, *target)
    whole_err = capsys.readouterr().err
    for k in (1, 7, 150, 1000):
        assert _fit_json(tmp_path / "all.csv", tmp_path, *target, "--chunk-rows", str(k)) == (
            code, whole)
        assert capsys.readouterr().err == whole_err
    assert (code == 0) == ("0.05" not in target), whole_err


@pytest.mark.parametrize("bound", ["binomial", "hb", "wsr"])
def test_fit_in_chunks_refuses_learn_then_test(tmp_path, bound, capsys):
    cols = _columns(n=400, seed=3, continuous=bound != "binomial")
    write_table(tmp_path / "all.csv", cols)
    args = ["--target-risk", "0.4", "--delta", "0.2", "--bound", bound]
    assert _fit_json(tmp_path / "all.csv", tmp_path, *args)[0] == 0
    capsys.readouterr()
    assert _fit_json(tmp_path / "all.csv", tmp_path, *args, "--chunk-rows", "50") == (1, "")
    err = capsys.readouterr().err
    assert err == (f"abstain fit: error: --bound {bound} runs Learn-then-Test, which splits the "
                   "rows by position (every tenth row picks the thresholds, the others test "
                   "them); a source read in chunks keeps only the score table of its rows. Give "
                   "--bound sgr (the same rule as on the whole file), or fit one file without "
                   "--chunk-rows and --engine.\n")


@pytest.mark.parametrize("continuous", [False, True])
def test_fit_in_chunks_certifies_with_sgr_by_default_and_says_so(tmp_path, continuous, capsys):
    cols = _columns(n=400, seed=3, continuous=continuous)
    write_table(tmp_path / "all.csv", cols)
    args = ["--target-risk", "0.4", "--delta", "0.2"]
    code, chunked = _fit_json(tmp_path / "all.csv", tmp_path, *args, "--chunk-rows", "50")
    assert code == 0 and "(procedure sgr)" in capsys.readouterr().out
    assert chunked == _fit_json(tmp_path / "all.csv", tmp_path, *args, "--bound", "sgr")[1]
    whole = json.loads(_fit_json(tmp_path / "all.csv", tmp_path, *args)[1])
    assert whole["fitted"]["bound_"] == ("wsr" if continuous else "binomial")


@pytest.mark.parametrize(("second", "message"), [
    ("loss,risk,id\n0,0.2,x\n1,0.7,y\n", "column 'id' must be numeric; got text values such "
                                         "as 'x' (line 2): a column whose first value is "
                                         "text is read as text; correct or empty such cells."),
    ("loss\n0\n1\n", "lacks 'risk', 'id', which "),
    ("loss,risk,id\n0,inf,1\n", "column 'risk' must hold finite numbers; got inf on line 2"),
])
@pytest.mark.parametrize("chunk_rows", ["1", "1000"])
def test_an_error_in_one_part_of_several_names_that_part(second, message, chunk_rows, tmp_path,
                                                         capsys):
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "a.csv").write_text("loss,risk,id\n0,0.1,1\n1,0.5,2\n")
    (parts / "b.csv").write_text(second)
    assert main(["evaluate", str(parts), "--quiet", "--chunk-rows", chunk_rows]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"abstain evaluate: error: {str(parts / 'b.csv')!r}: {message}")
    assert "\n" not in err
    if "lacks" in message:  # the parts' columns differ: each file alone is another table
        return
    # one file read in chunks says what the whole file says (without its name)
    code = main(["evaluate", str(parts / "b.csv"), "--quiet", "--chunk-rows", chunk_rows])
    alone = capsys.readouterr().err.strip()
    assert main(["evaluate", str(parts / "b.csv"), "--quiet"]) == code
    assert alone == capsys.readouterr().err.strip()


@pytest.mark.parametrize("first", [
    "0,1,2,3", "7,3,9,1", "0,1,9,2", "0,1,1,2", "0.5,1,2,3", "5,6,7,8"])
@pytest.mark.parametrize("chunk_rows", ["1", "2", "3"])
def test_an_unnamed_first_column_is_accepted_or_refused_whatever_the_chunk_size(
        first, chunk_rows, tmp_path, capsys):
    rows = zip(first.split(","), ["0", "1", "0", "1"], ["0.1", "0.5", "0.2", "0.7"],
               strict=True)
    path = tmp_path / "t.csv"
    path.write_text(",loss,risk\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    whole = main(["evaluate", str(path), "--quiet"]), capsys.readouterr()
    chunked = main(["evaluate", str(path), "--quiet", "--chunk-rows", chunk_rows]), \
        capsys.readouterr()
    assert whole[0] == chunked[0]
    assert whole[1].err == chunked[1].err  # the refusal or the note of a skipped index
    assert whole[0] == (0 if first in ("0,1,2,3", "5,6,7,8") else 1)


@pytest.mark.parametrize("rows", [5, 10, 11, 1000])
def test_a_text_column_empty_in_the_first_chunk_is_no_score_at_any_chunk_size(tmp_path,
                                                                               capsys, rows):
    # a column with no value in the first chunk was read as numbers (NaN) there and taken as
    # a default score, so the file was refused by one chunk size and accepted whole
    rng = np.random.default_rng(0)
    lines = ["loss,risk,note"] + [
        f"{int(rng.random() < 0.3)},{rng.random():.3f},{'ok' if i >= 10 and i % 2 else ''}"
        for i in range(40)]
    path = tmp_path / "notes.csv"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.json"
    assert main(["evaluate", str(path), "--quiet", "--json", str(out)]) == 0
    whole = json.loads(out.read_text())
    assert main(["evaluate", str(path), "--quiet", "--chunk-rows", str(rows), "--json",
                 str(out)]) == 0
    assert json.loads(out.read_text()) == whole


@pytest.mark.parametrize("rows", [1, 5, 6, 1000])
@pytest.mark.parametrize("dropna", [False, True])
def test_a_class_named_na_in_a_text_column_is_a_class_at_any_chunk_size(tmp_path, rows,
                                                                         dropna):
    # labels NA (North America), EU, AS: the whole file reads NA as a class of a text
    # column; a first chunk of NA cells alone read them as missing (refused, or dropped
    # with --dropna: other numbers)
    rng = np.random.default_rng(5)
    lines = ["label,prediction,risk"] + [f"NA,NA,{rng.random():.3f}" for _ in range(5)] + [
        f"{a},{b},{rng.random():.3f}" for a, b in rng.choice(["NA", "EU", "AS"], (35, 2))]
    path = tmp_path / "regions.csv"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.json"
    extra = ["--dropna"] if dropna else []
    assert main(["evaluate", str(path), "--quiet", "--json", str(out), *extra]) == 0
    whole = json.loads(out.read_text())
    assert main(["evaluate", str(path), "--quiet", "--chunk-rows", str(rows), "--json",
                 str(out), *extra]) == 0
    assert json.loads(out.read_text()) == whole


@pytest.mark.parametrize("rows", [None, 1, 2, 3, 7])
def test_the_look_ahead_for_a_column_kind_leaves_errors_to_the_file_order(tmp_path, capsys,
                                                                          rows):
    # column b, empty in the first chunk, was read ahead for its kind, and its own error
    # (line 7) came before column a's (line 4), which the whole file reports
    path = tmp_path / "t.csv"
    path.write_text("score,label,prediction,a,b\n0.9,1,1,1,\n0.8,0,1,2,\n0.7,1,1,x,\n"
                    "0.6,0,0,3,\n0.5,0,0,4,5\n0.4,0,0,5,y\n")
    chunk = [] if rows is None else ["--chunk-rows", str(rows)]
    assert main(["evaluate", str(path), "--quiet", *chunk]) == 1
    assert capsys.readouterr().err.strip().endswith(
        "holds numbers (line 2: '1') but line 4 has the text 'x'; correct or empty that cell.")


@pytest.mark.parametrize("rows", [None, 1, 2])
def test_dropna_that_drops_every_row_is_said_so_at_every_chunk_size(tmp_path, capsys, rows):
    # read in chunks, a table left without rows was refused as "only OOD rows"
    path = tmp_path / "t.csv"
    path.write_text("loss,risk\n,0.1\n,0.2\n")
    chunk = [] if rows is None else ["--chunk-rows", str(rows)]
    assert main(["evaluate", str(path), "--quiet", "--dropna", *chunk]) == 1
    assert capsys.readouterr().err.strip().endswith(
        f"every row of {path} has a NaN or empty value in a column used, so --dropna dropped "
        "them all; fill the values or name other columns.")


def test_bad_input_in_a_part_read_by_dask_is_one_line(tmp_path):
    # Dask's worker logged "Compute Failed" with a traceback before the command's one line
    pytest.importorskip("distributed")
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-0.csv").write_text("loss,risk\n0,0.1\n1,0.2\n")
    (parts / "part-1.csv").write_text("loss,risk\n0,0.1\n1,nan\n")
    # in a process of its own: pytest's logging capture hides the worker's log here
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "abstain", "evaluate", str(parts), "--score",
                           "risk", "--quiet", "--engine", "dask"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("abstain evaluate: error: '"), done.stderr
    assert done.stderr.endswith("part-1.csv': 1 row(s) have NaN or empty values in column(s) "
                                "'risk' (first at line 3); pass --dropna to drop them.\n")


# chunks named only the columns of the first chunk holding such a row, without their count,
# and in the order they were met ('loss', 'risk' where the file's read says 'risk', 'loss')
EMPTY_CELLS = [
    ("loss,risk,distance\n0,0.1,\n1,0.9,1\n,0.3,2\n1,0.7,3\n0,0.2,4\n",
     ["fit", "--target-coverage", "0.5"], "2 row(s) have NaN or empty values in column(s) "
     "'distance', 'loss' (first at line 2); pass --dropna to drop them."),
    ("loss,risk\n,0.1\n1,0.2\n0,0.3\n1,\n0,0.2\n", ["evaluate"],
     "2 row(s) have NaN or empty values in column(s) 'risk', 'loss' (first at line 2); "
     "pass --dropna to drop them."),
]


@pytest.mark.parametrize("rows", [None, 1, 2, 100])
@pytest.mark.parametrize("text, command, message", EMPTY_CELLS)
def test_rows_with_empty_cells_are_refused_in_the_same_words_at_every_chunk_size(
        tmp_path, capsys, rows, text, command, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    chunk = [] if rows is None else ["--chunk-rows", str(rows)]
    out = ["-o", str(tmp_path / "r.json")] if command[0] == "fit" else []
    assert main([command[0], str(path), *command[1:], *out, "--quiet", *chunk]) != 0
    assert capsys.readouterr().err.strip().endswith(message)


def test_a_close_that_times_out_leaves_nothing_under_the_commands_line():
    # a close of the local cluster that timed out on a loaded machine left a future whose
    # TimeoutError asyncio printed when it was collected, under the command's one line;
    # the close here leaves such a future in a cycle, and asyncio's level is put back
    pytest.importorskip("distributed")
    import subprocess
    import sys

    code = (
        "import asyncio, logging, distributed\n"
        "from abstain.app.chunks import _client\n"
        "close = distributed.Client.close\n"
        "def timed_out(self, *a, **k):\n"
        "    distributed.Client.close = close  # once: the client closes again at exit\n"
        "    loop = asyncio.new_event_loop()\n"
        "    future = loop.create_future()\n"
        "    future.set_exception(TimeoutError('Timeout'))\n"
        "    future.cycle = [future]\n"
        "    loop.close()\n"
        "    return close(self, *a, **k)\n"
        "distributed.Client.close = timed_out\n"
        "with _client(distributed, None):\n"
        "    pass\n"
        "print(logging.getLogger('asyncio').level)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "never retrieved" not in done.stderr, done.stderr
    assert done.stdout.strip() == "0"  # the level as it was
