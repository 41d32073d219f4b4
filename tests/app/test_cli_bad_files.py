"""The command line loses nothing and prints no silent wrong number: it never writes over an
input, never replaces a column unasked, and refuses a bad file in one line that names it."""

from __future__ import annotations

import os

import numpy as np
import pytest

from abstain.app.cli import main
from abstain.app.io import write_table


def _columns(n: int = 200, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    is_ood = rng.random(n) < 0.2
    risk = rng.beta(1, 5, n)
    loss = (rng.random(n) < risk).astype(float)
    loss[is_ood] = np.nan
    return {"loss": loss, "risk": risk.round(3), "distance": rng.normal(is_ood * 2.0, 1.0),
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


def one_line(code, err):
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("abstain "), err
    return lines[0]


# -- no command writes over its input ------------------------------------------------------


def _link(kind, target, tmp_path):
    """The path under which the output names ``target``: itself, a symlink or a hard link."""
    if kind == "same":
        return target
    link = tmp_path / f"{kind}{target.suffix}"
    if kind == "symlink":
        link.symlink_to(target)
    else:
        os.link(target, link)
    return link


@pytest.fixture
def rule_file(csv_file, tmp_path, capsys):
    path = tmp_path / "rule.json"
    assert run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8",
               "-o", path)[0] == 0
    return path


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("command", ["evaluate", "fit", "report", "report-png", "apply",
                                     "apply-rule"])
def test_no_command_writes_over_its_input(command, kind, csv_file, rule_file, tmp_path, capsys):
    if command.startswith("report"):
        pytest.importorskip("matplotlib")
    victim = rule_file if command == "apply-rule" else csv_file
    out = _link(kind, victim, tmp_path)
    before = victim.read_bytes()
    argv = {
        "evaluate": ["evaluate", csv_file, "--json", out],
        "fit": ["fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o", out],
        "report": ["report", csv_file, "--quiet", "-o", out],
        "report-png": ["report", csv_file, "--quiet", "-o", tmp_path / "r.html", "--png", out],
        "apply": ["apply", rule_file, csv_file, "-o", out],
        "apply-rule": ["apply", rule_file, csv_file, "-o", out],
    }[command]
    if command == "report" and kind == "same":
        out = victim = csv_file
    line = one_line(*run(capsys, *argv)[::2])
    assert f"output {str(out)!r} is the input file" in line
    assert "write the output to another path" in line
    assert victim.read_bytes() == before
    assert not (tmp_path / "r.html").exists()


def test_report_png_never_overwrites_an_input_inside_the_folder(csv_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figs = tmp_path / "figs"
    figs.mkdir()
    other = figs / "roc.png"
    other.write_bytes(b"not a figure")
    link = figs / "risk_coverage.png"
    os.link(csv_file, link)
    before = csv_file.read_bytes()
    line = one_line(*run(capsys, "report", csv_file, "--quiet", "-o", tmp_path / "r.html",
                         "--png", figs)[::2])
    assert "risk_coverage.png" in line and "is the input file" in line
    assert csv_file.read_bytes() == before and os.path.samefile(link, csv_file)
    assert other.read_bytes() == b"not a figure"
    assert not (tmp_path / "r.html").exists()



def test_report_png_never_overwrites_the_rule_file_it_reads(csv_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figs = tmp_path / "figs"
    figs.mkdir()
    rule = figs / "risk_coverage.png"  # fit writes a rule under any name
    assert run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o",
               rule)[0] == 0
    before = rule.read_bytes()
    line = one_line(*run(capsys, "report", csv_file, "--quiet", "--rule", rule, "-o",
                         tmp_path / "r.html", "--png", figs)[::2])
    assert "risk_coverage.png" in line and "is the input file" in line
    assert rule.read_bytes() == before
    assert not (tmp_path / "r.html").exists()
    line = one_line(*run(capsys, "report", csv_file, "--quiet", "--rule", rule, "-o",
                         tmp_path / "r.html", "--png", rule)[::2])
    assert "is the input file" in line and rule.read_bytes() == before

# -- apply never replaces a column unasked ---------------------------------------------------


def test_apply_refuses_to_replace_a_column_unless_asked(csv_file, rule_file, tmp_path, capsys):
    from abstain.app.io import read_table

    out = tmp_path / "out.csv"
    line = one_line(*run(capsys, "apply", rule_file, csv_file, "-o", out, "--column",
                         "risk")[::2])
    assert f"{csv_file} already has a column 'risk'" in line and "--overwrite-column" in line
    assert not out.exists()
    code, _, _ = run(capsys, "apply", rule_file, csv_file, "-o", out, "--column", "risk",
                     "--overwrite-column")
    assert code == 0
    table = read_table(out)
    assert list(table) == ["loss", "risk", "distance", "is_ood"]
    assert set(np.unique(table["risk"])) <= {0.0, 1.0}


@pytest.mark.parametrize("name", ["", " ", "\t"])
def test_apply_refuses_a_new_column_without_a_name(name, csv_file, rule_file, tmp_path, capsys):
    out = tmp_path / "out.csv"
    line = one_line(*run(capsys, "apply", rule_file, csv_file, "-o", out, "--column",
                         name)[::2])
    assert line == f"abstain apply: error: --column must name the new column; got {name!r}."
    assert not out.exists()


@pytest.mark.parametrize("name", ["risk ", " accept", "new\t"])
def test_apply_refuses_a_new_column_that_a_reader_would_read_without_its_spaces(
        name, csv_file, rule_file, tmp_path, capsys):
    out = tmp_path / "out.csv"
    line = one_line(*run(capsys, "apply", rule_file, csv_file, "-o", out, "--column",
                         name)[::2])
    assert line == ("abstain apply: error: --column must not begin or end with spaces (a "
                    f"header is read without them); got {name!r}.")
    assert not out.exists()


# -- a bad file: one line naming the file, the row or column, and what to do -------------------


HEAD = "loss,risk,distance,is_ood\n"
ROWS = "0,0.1,0.5,0\n1,0.9,0.2,0\n0,0.2,2.5,1\n0,0.003726,0.1,0\n"


def _bad_file(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "content", "words"), [
    ("dup.csv", "loss,risk,risk\n0,0.1,0.2\n1,0.3,0.4\n",
     ["column 'risk' appears twice in the header", "(columns 2 and 3)", "rename one"]),
    # Excel's trailing ",,": said as such, not as the name '' twice
    ("trail.csv", "loss,risk,,\n0,0.1,,\n1,0.3,,\n",
     ["has more than one column without a name (columns 3 and 4; trailing commas",
      "name them, or remove the empty ones"]),
    ("text.csv", HEAD + ROWS + "1,high,0.3,0\n",
     ["column 'risk'", "holds numbers (line 2: '0.1') but line 6 has the text 'high'",
      "correct or empty that cell"]),
    ("head.csv", HEAD, ["has no data rows (only a header)", "add one row per sample"]),
    ("latin.csv", ("loss,caf\u00e9\n0,0.1\n").encode("latin-1"),
     ["is not UTF-8 text (line 1: byte 0xe9 at offset 8)", "save it as UTF-8"]),
    ("broken.npz", b"not a zip file", ["is not an NPZ file", "numpy.savez"]),
])
@pytest.mark.parametrize("command", ["evaluate", "fit", "report", "apply"])
def test_a_bad_file_is_one_line_that_names_it(command, name, content, words, rule_file,
                                              tmp_path, capsys):
    path = _bad_file(tmp_path, name, content)
    out = tmp_path / ("out.html" if command == "report" else "out.csv")
    argv = {"evaluate": ["evaluate", path, "--json", out],
            "fit": ["fit", path, "--target-coverage", "0.8", "-o", out],
            "report": ["report", path, "-o", out, "--quiet"],
            "apply": ["apply", rule_file, path, "-o", out]}[command]
    line = one_line(*run(capsys, *argv)[::2])
    assert str(path) in line
    for w in words:
        assert w in line
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == sorted(["pred.csv", "rule.json", name])


def test_an_object_array_npz_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "obj.npz"
    np.savez(path, loss=np.zeros(3), risk=np.array([0.1, None, "x"], dtype=object))
    line = one_line(*run(capsys, "evaluate", path)[::2])
    assert f"array 'risk' of {str(path)!r} holds Python objects" in line
    assert "save it as numbers or strings" in line


def test_a_score_column_of_text_quotes_a_text_cell_not_a_number(tmp_path, capsys):
    path = _bad_file(tmp_path, "t.csv", HEAD + "0,,0.5,0\n1,low,0.2,0\n0,high,0.1,0\n")
    line = one_line(*run(capsys, "evaluate", path, "--score", "risk")[::2])
    assert ("column 'risk' must be numeric; got text values such as 'low' (line 3): a column "
            "whose first value is text is read as text; correct or empty such cells.") in line
    path = _bad_file(tmp_path, "t.csv", HEAD + "0,0.003726,0.5,0\n1,low,0.2,0\n0,high,0.1,0\n")
    line = one_line(*run(capsys, "evaluate", path, "--score", "risk")[::2])
    assert "holds numbers (line 2: '0.003726') but line 3 has the text 'low'" in line


def test_a_stray_text_first_cell_of_a_number_column_is_named_with_what_to_do(tmp_path, capsys):
    # the only candidate score was refused as "no numeric column" without its cause, and
    # --score said "must be numeric" without what to do
    path = _bad_file(tmp_path, "one.csv", "loss,risk\n1,n/a\n0,0.2\n1,0.9\n0,0.1\n")
    for rows in ([], ["--chunk-rows", "1"], ["--chunk-rows", "2"]):  # the same words
        line = one_line(*run(capsys, "evaluate", path, *rows)[::2])
        assert line.endswith("columns are: 'loss', 'risk'. A column whose first value is text "
                             "is read as text: 'risk' ('n/a' on line 2); correct or empty such a "
                             "cell, or name the scores with --score."), line
        line = one_line(*run(capsys, "evaluate", path, "--score", "risk", *rows)[::2])
        assert line.endswith("error: column 'risk' must be numeric; got text values such as "
                             "'n/a' (line 2): a column whose first value is text is read as "
                             "text; correct or empty such cells."), line


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path, capsys):
    path = _bad_file(tmp_path, "excel.csv", "\ufeff" + HEAD + ROWS)
    from abstain.app.io import read_table

    assert list(read_table(path)) == ["loss", "risk", "distance", "is_ood"]
    code, out, _ = run(capsys, "evaluate", path, "--score", "risk")
    assert code == 0 and "3 ID rows, 1 OOD rows" in out


def test_report_refuses_another_suffix(csv_file, tmp_path, capsys):
    line = one_line(*run(capsys, "report", csv_file, "-o", tmp_path / "x.pdf", "--quiet")[::2])
    assert "-o must end in .html or .htm; got" in line and "x.pdf" in line
    assert sorted(os.listdir(tmp_path)) == ["pred.csv"]


@pytest.mark.parametrize("name", [".html", ".HTM"])
def test_report_names_a_file_without_a_name_before_its_suffix(name, csv_file, tmp_path,
                                                               capsys):
    # Path(".html").suffix is "": the message said -o must end in .html, got '.html'
    line = one_line(*run(capsys, "report", csv_file, "-o", tmp_path / name, "--quiet")[::2])
    assert f"-o must name a file before its extension; got '{tmp_path / name}'" in line
    assert sorted(os.listdir(tmp_path)) == ["pred.csv"]


@pytest.mark.parametrize("command", ["evaluate", "fit", "apply"])
def test_a_write_error_names_the_users_path_not_the_temporary_file(command, csv_file,
                                                                   rule_file, tmp_path, capsys):
    out = tmp_path / "no-such-folder" / ("out.json" if command != "apply" else "out.csv")
    argv = {"evaluate": ["evaluate", csv_file, "--json", out],
            "fit": ["fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o", out],
            "apply": ["apply", rule_file, csv_file, "-o", out]}[command]
    line = one_line(*run(capsys, *argv)[::2])
    assert f"cannot write {str(out)!r}: No such file or directory" in line
    assert ".tmp" not in line
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    argv[argv.index(out)] = folder
    line = one_line(*run(capsys, *argv)[::2])
    assert f"cannot write {str(folder)!r}" in line and ".tmp" not in line
    assert sorted(os.listdir(tmp_path)) == ["folder.csv", "pred.csv", "rule.json"]
    assert os.listdir(folder) == []


# -- apply writes every row and every input cell as it went in -----------------------------


def test_apply_keeps_ids_numbers_and_text_as_written(rule_file, tmp_path, capsys):
    path = _bad_file(tmp_path, "ids.csv", "id,risk,flag,big\n007,0.1,true,12345678901234567891\n"
                                          "010,0.9,1e5,9007199254740993\n")
    out = tmp_path / "out.csv"
    assert run(capsys, "apply", rule_file, path, "-o", out)[0] == 0
    assert out.read_text() == ("id,risk,flag,big,accept\n007,0.1,true,12345678901234567891,1\n"
                               "010,0.9,1e5,9007199254740993,0\n")
    assert run(capsys, "apply", rule_file, path, "-o", out, "--column", "flag",
               "--overwrite-column")[0] == 0
    assert out.read_text() == ("id,risk,flag,big\n007,0.1,1,12345678901234567891\n"
                               "010,0.9,0,9007199254740993\n")
    npz = tmp_path / "out.npz"  # a CSV to NPZ: the cells' text
    assert run(capsys, "apply", rule_file, path, "-o", npz)[0] == 0
    with np.load(npz) as got:
        assert got["id"].tolist() == ["007", "010"] and got["accept"].tolist() == [1.0, 0.0]


def test_apply_keeps_parquet_dtypes_and_npz_arrays(rule_file, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    big = np.array([2**62 + 1, 2**53 + 1, 7], dtype=np.int64)
    frame = pd.DataFrame({"id": ["007", "010", "x"], "big": big, "flag": [True, False, True],
                          "risk": [0.1, 0.9, np.nan]})
    frame.to_parquet(tmp_path / "in.parquet", index=False)
    out = tmp_path / "out.parquet"
    code, _, err = run(capsys, "apply", rule_file, tmp_path / "in.parquet", "-o", out,
                       "--dropna")
    assert code == 0 and "left the accept cell empty on 1 row(s)" in err
    got = pd.read_parquet(out)
    assert list(got.columns) == ["id", "big", "flag", "risk", "accept"]
    assert got["big"].dtype == np.int64 and got["big"].tolist() == big.tolist()
    assert got["flag"].dtype == bool and got["id"].tolist() == ["007", "010", "x"]
    np.testing.assert_array_equal(got["accept"], [1.0, 0.0, np.nan])
    assert run(capsys, "apply", rule_file, tmp_path / "in.parquet", "-o",
               tmp_path / "out.csv", "--dropna")[0] == 0
    assert (tmp_path / "out.csv").read_text().splitlines()[1:] == [
        f"007,{2**62 + 1},True,0.1,1", f"010,{2**53 + 1},False,0.9,0", "x,7,True,,"]
    np.savez(tmp_path / "in.npz", big=big, risk=np.array([0.1, 0.9, 0.2]))
    assert run(capsys, "apply", rule_file, tmp_path / "in.npz", "-o", tmp_path / "o.npz")[0] == 0
    with np.load(tmp_path / "o.npz") as got_npz:
        assert got_npz["big"].dtype == np.int64 and got_npz["big"].tolist() == big.tolist()
        assert got_npz["accept"].tolist() == [1.0, 0.0, 1.0]


def test_apply_from_npz_to_parquet_keeps_nan_a_value_and_dates_dates(rule_file, tmp_path,
                                                                      capsys):
    # written through pandas, NaN came out as a null (null_count 1) and datetime64[D] as
    # timestamp[ms]
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    np.savez(tmp_path / "in.npz", risk=np.array([0.1, 0.5, 0.3]),
             z=np.array([np.nan, 2.0, 1.0]), d=np.array(["2020-01-01"] * 3, "datetime64[D]"))
    out = tmp_path / "out.parquet"
    assert run(capsys, "apply", rule_file, tmp_path / "in.npz", "-o", out)[0] == 0
    got = pq.read_table(out)
    assert got.column("z").null_count == 0 and np.isnan(got.column("z").to_pylist()[0])
    assert got.schema.field("d").type == pa.date32()
    assert got.column("accept").null_count == 0
    # dates and times in units Arrow does not take (months, hours): written in seconds,
    # not Arrow's ArrowNotImplementedError; a dropped row's accept cell is a null
    np.savez(tmp_path / "units.npz", risk=np.array([0.1, np.nan, 0.3]),
             month=np.array(["2020-01", "2020-02", "2020-03"], "datetime64[M]"),
             hours=np.array([1, 2, 3], "timedelta64[h]"),
             tens=np.array([1, 2, 3], "datetime64[10ms]"))
    out.unlink()
    assert run(capsys, "apply", rule_file, tmp_path / "units.npz", "-o", out, "--dropna")[0] == 0
    got = pq.read_table(out)
    assert got.column("month").to_pylist()[1].month == 2
    assert got.column("hours").to_pylist()[2].total_seconds() == 3 * 3600
    assert got.column("tens").to_pylist()[2].microsecond == 30_000  # in ms, not a bare 3
    assert got.column("accept").null_count == 1


def test_apply_from_parquet_to_npz_keeps_integers_or_refuses_their_nulls(rule_file, tmp_path,
                                                                         capsys):
    # int64 with a null came out as float64 (9007199254740993 as ...992), booleans with a
    # null as the strings 'True', '', 'False'
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    risk = pa.array([0.1, 0.5, 0.3])
    pq.write_table(pa.table({"risk": risk, "id": pa.array([2**53 + 1, 2, 3], pa.int64()),
                             "w": pa.array([0.5, None, 1.0], pa.float32())}),
                   tmp_path / "full.parquet")
    out = tmp_path / "o.npz"
    assert run(capsys, "apply", rule_file, tmp_path / "full.parquet", "-o", out)[0] == 0
    with np.load(out) as got:
        assert got["id"].dtype == np.int64 and got["id"].tolist() == [2**53 + 1, 2, 3]
        assert got["w"].dtype == np.float32 and np.isnan(got["w"][1])
    for column in (pa.array([2**53 + 1, None, 3], pa.int64()), pa.array([True, None, False])):
        pq.write_table(pa.table({"risk": risk, "c": column}), tmp_path / "nulls.parquet")
        out.unlink(missing_ok=True)
        line = one_line(*run(capsys, "apply", rule_file, tmp_path / "nulls.parquet", "-o",
                             out)[::2])
        assert "column 'c' holds 1 null(s) among its" in line and "write the output as CSV" \
            in line
        assert not out.exists()


def test_apply_never_writes_fewer_rows_than_it_reads(rule_file, tmp_path, capsys):
    path = _bad_file(tmp_path, "b.csv", "risk\n0.1\n\n0.9\n0.3\n")
    out = tmp_path / "o.csv"
    line = one_line(*run(capsys, "apply", rule_file, path, "-o", out)[::2])
    assert "1 row(s) have NaN or empty values in column(s) 'risk' (first at line 3)" in line
    assert not out.exists()
    code, stdout, err = run(capsys, "apply", rule_file, path, "-o", out, "--dropna")
    assert code == 0 and "of 3 rows" in stdout
    assert err == "left the accept cell empty on 1 row(s) with NaN or empty scores.\n"
    lines = out.read_text().splitlines()
    assert [x[:-1] for x in lines] == ["risk,accep", "0.1,", "", "0.9,", "0.3,"]
    assert lines[2] == "," and {x[-1] for x in lines[1:]} - {","} <= {"0", "1"}


# -- an input that is not a readable file is named with what is wrong ----------------------


def _odd_input(kind, tmp_path):
    path = tmp_path / f"{kind}.csv"
    if kind == "loop":
        os.symlink(path, path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this system")
        os.mkfifo(path)
    elif kind == "broken":
        path.symlink_to(tmp_path / "gone.csv")
    return path


_ODD = {"loop": "Too many levels of symbolic links; it is a loop of symbolic links; correct "
                "the path.",
        "folder": "Is a directory; name a file inside it.",
        "fifo": "it is not a regular file (a pipe, socket or device), and inputs are read from "
                "files only; save it to a file first.",
        "broken": None, "missing": None}


# a folder as input is a directory of parts, and a directory lists only what is there
_ROLES = [(role, kind) for role in ("input", "rule", "part") for kind in _ODD
          if not (kind == "folder" and role != "rule") and not (kind == "missing"
                                                                 and role == "part")]


@pytest.mark.parametrize(("role", "kind"), _ROLES)
def test_an_input_that_is_no_readable_file_is_named_with_the_reason(kind, role, csv_file,
                                                                    rule_file, tmp_path, capsys):
    odd = _odd_input(kind, tmp_path)
    if role == "part":  # a part among good ones is refused, not skipped
        parts = tmp_path / "parts"
        parts.mkdir()
        (parts / "a.csv").write_bytes(csv_file.read_bytes())
        if kind == "fifo":
            os.mkfifo(parts / "b.csv")
        else:
            (parts / "b.csv").symlink_to(odd)
        odd = parts / "b.csv"
        argv = ["evaluate", parts]
    elif role == "rule":
        odd = odd.with_suffix(".json") if kind == "missing" else odd
        argv = ["report", csv_file, "--rule", odd, "-o", tmp_path / "r.html"]
    else:
        argv = ["evaluate", odd]
    line = one_line(*run(capsys, *argv)[::2])
    reason = _ODD[kind]
    if reason is None:
        assert line.endswith(f"file not found: {str(odd)!r}."), line
    else:
        assert line.endswith(f"cannot read {str(odd)!r}: {reason}"), line


def test_apply_names_a_rule_that_is_a_loop_of_links(csv_file, tmp_path, capsys):
    loop = _odd_input("loop", tmp_path)
    line = one_line(*run(capsys, "apply", loop, csv_file, "-o", tmp_path / "o.csv")[::2])
    assert f"cannot read {str(loop)!r}: Too many levels of symbolic links" in line
    assert not (tmp_path / "o.csv").exists()


def test_npz_float32_columns_go_to_csv_in_their_own_shortest_digits(rule_file, tmp_path,
                                                                    capsys):
    # float32 0.1 was written through float64: 0.10000000149011612
    src = tmp_path / "f.npz"
    np.savez(src, risk=np.array([0.1, 0.5]), f32=np.array([0.1, 1.5], dtype=np.float32),
             f16=np.array([0.1, 2.0], dtype=np.float16))
    out = tmp_path / "o.csv"
    assert run(capsys, "apply", rule_file, src, "-o", out)[0] == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "risk,f32,f16,accept" and lines[1].startswith("0.1,0.1,0.1,")
    assert lines[2].startswith("0.5,1.5,2,")


def test_npz_arrays_that_are_not_columns_are_refused_in_one_line(rule_file, tmp_path, capsys):
    import io
    import warnings
    import zipfile

    def npy(a):
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    # a zip holding one name twice (appending with zipfile): one of them was read silently
    dup = tmp_path / "dup.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        with zipfile.ZipFile(dup, "w") as z:
            z.writestr("loss.npy", npy(np.array([0.0, 1, 0, 1])))
            z.writestr("risk.npy", npy(np.array([0.1, 0.9, 0.2, 0.8])))
            z.writestr("risk.npy", npy(np.array([0.9, 0.1, 0.8, 0.2])))
    line = one_line(*run(capsys, "evaluate", dup)[::2])
    assert "holds two arrays named 'risk'; write the file again with numpy.savez" in line
    # a record array or raw bytes: a traceback, or NumPy's message naming no array
    for name, arr in (("st", np.zeros(4, dtype=[("a", "i4"), ("b", "f4")])),
                      ("v", np.zeros(4, dtype="V3"))):
        path = tmp_path / f"{name}.npz"
        np.savez(path, loss=np.array([0.0, 1, 0, 1]), risk=np.arange(4.0), **{name: arr})
        line = one_line(*run(capsys, "evaluate", path, "--score", "risk")[::2])
        assert f"array '{name}' of" in line and "which is not a column; save each field" in line
    # a complex array written to Parquet: pyarrow's traceback, now refused before writing
    src = tmp_path / "c.npz"
    np.savez(src, risk=np.array([0.1, 0.9]), c=np.array([1 + 2j, 3j]))
    out = tmp_path / "o.parquet"
    line = one_line(*run(capsys, "apply", rule_file, src, "-o", out)[::2])
    assert "array 'c' has the dtype complex128, which Parquet cannot store" in line
    assert not out.exists()
    assert run(capsys, "apply", rule_file, src, "-o", tmp_path / "o.npz")[0] == 0
    with np.load(tmp_path / "o.npz") as got:
        assert got["c"].tolist() == [1 + 2j, 3j]


@pytest.mark.parametrize("chunk", [None, 3])
def test_parquet_integers_beyond_2_53_with_a_null_are_not_rounded(tmp_path, capsys, chunk):
    # pyarrow reads int64 with nulls as float64: 2**53 + 1 became 2**53 and tied with it, and
    # such a column was evaluated as a score (or taken as one by default)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ids = pa.array([2**53, 2**53 + 1, None, 2**53 + 3], pa.int64())
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"id": ids, "loss": [0.0, 1.0, 0.0, 1.0],
                             "u": [0.1, 0.2, 0.3, 0.4]}), path)
    more = [] if chunk is None else ["--chunk-rows", str(chunk)]
    code, _, err = run(capsys, "evaluate", path, "--score", "id", "--dropna", *more)
    assert code == 1 and "column 'id' holds integers that float64 cannot hold exactly" in err
    if chunk is None:  # by default it is no score (read whole: the note says why)
        code, _, err = run(capsys, "evaluate", path, "--quiet")
        assert code == 0 and "column 'id' holds integers beyond 2**53" in err


def test_npz_bytes_and_negative_zero_go_to_csv_as_written(rule_file, tmp_path, capsys):
    # bytes cells were written as b'x', and -0.0 as 0 (read back as +0.0)
    np.savez(tmp_path / "in.npz", risk=np.array([0.1, 0.9, 0.2]),
             tag=np.array([b"x", b"yz", b"007"]), z=np.array([-0.0, 1.0, 2.0]))
    out = tmp_path / "o.csv"
    assert run(capsys, "apply", rule_file, tmp_path / "in.npz", "-o", out)[0] == 0
    lines = out.read_text().splitlines()
    assert [row.split(",")[1:3] for row in lines[1:]] == [["x", "-0.0"], ["yz", "1"],
                                                        ["007", "2"]]


@pytest.mark.parametrize("chunk", [[], ["--chunk-rows", "5"]])
def test_an_npz_file_without_rows_or_arrays_says_so_in_chunks_too(tmp_path, capsys, chunk):
    # in chunks, a file without rows was said to hold "only OOD rows", and one without
    # arrays to have "no loss ... The columns are: ."
    np.savez(tmp_path / "rows0.npz", loss=np.zeros(0), u=np.zeros(0))
    np.savez(tmp_path / "cols0.npz")
    code, _, err = run(capsys, "evaluate", tmp_path / "rows0.npz", *chunk)
    assert code == 1 and "has no data rows (only a header)" in err
    code, _, err = run(capsys, "evaluate", tmp_path / "cols0.npz", *chunk)
    assert code == 1 and "has no columns; write one column per score" in err
