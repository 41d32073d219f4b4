"""abstain.app.io: reading and writing tables (CSV, NPZ, Parquet), atomically."""

from __future__ import annotations

import csv
import os
import sys

import numpy as np
import pytest

from abstain.app.io import ColumnError, get_column, read_table, table_format, write_table

# Floats whose shortest repr has 17 significant digits, subnormals, huge and tiny magnitudes,
# integers (written without ".0") and the non-finite values.
FLOATS = np.array([0.1, 1 / 3, 2 / 3, 1e-300, 5e-324, -2.5e17, 123456789.12345679, 1.0, -7.0,
                   1e15, 1e16, 2.0**60, np.nan, np.inf, -np.inf])
TEXT = np.array(["cat", "a,b", 'say "hi"', "é", "x y", "dog", "", "cat", "7b", "-", "z", "q",
                 "r", "s", "t"])


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".parquet"])
def test_round_trip_keeps_every_value(suffix, tmp_path):
    if suffix == ".parquet":
        pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
    path = tmp_path / f"t{suffix}"
    write_table(path, {"x": FLOATS, "label": TEXT, "n": np.arange(15)})
    got = read_table(path)
    assert list(got) == ["x", "label", "n"]
    assert got["x"].dtype == np.float64 and got["n"].dtype == np.float64
    np.testing.assert_array_equal(got["x"], FLOATS)  # bit for bit, NaN where NaN
    assert got["x"][:12].tobytes() == FLOATS[:12].tobytes()
    assert got["label"].dtype.kind == "U"
    assert got["label"].tolist() == TEXT.tolist()
    assert got["n"].tolist() == list(range(15))


def test_csv_writes_floats_by_repr_and_integers_without_a_point(tmp_path):
    path = tmp_path / "t.csv"
    write_table(path, {"x": [0.1, 1 / 3, 1.0, -7.0, 1e15, 1e16, np.nan, np.inf],
                       "b": [True, False, True, False, True, False, True, False]})
    assert path.read_text().splitlines() == [
        "x,b", "0.1,1", "0.3333333333333333,0", "1,1", "-7,0",
        "1000000000000000.0,1", "1e+16,0", "nan,1", "inf,0"]


def test_csv_true_and_false_read_as_one_and_zero(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("is_ood,u\nTRUE,0.5\nfalse,0.25\n True ,1\n")
    got = read_table(path)
    assert got["is_ood"].tolist() == [1.0, 0.0, 1.0]
    assert got["u"].tolist() == [0.5, 0.25, 1.0]


def test_csv_empty_and_na_cells_read_as_nan_in_numeric_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,y,name\n1.5,,a\n,2,\nNA,3,b\nnull,None,c\n nan ,4e-1,d\n")
    got = read_table(path)
    np.testing.assert_array_equal(got["x"], [1.5, np.nan, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(got["y"], [np.nan, 2.0, 3.0, np.nan, 0.4])
    # one text cell keeps the whole column text; its empty cell stays an empty string
    assert got["name"].tolist() == ["a", "", "b", "c", "d"]


def test_csv_rows_of_the_wrong_length_name_the_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match=r"^every CSV row must have 2 fields like the header; "
                                         r"got a different number on line 3 of '.*t\.csv'\.$"):
        read_table(path)
    path.write_text("")
    with pytest.raises(ValueError, match="must be a CSV file with a header row; got an empty"):
        read_table(path)


def test_csv_duplicate_header_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,a\n1,2,3\n4,5,6\n")
    with pytest.raises(ValueError, match="'a'"):
        read_table(path)


def test_unknown_suffix_is_a_value_error_naming_the_path(tmp_path):
    message = r"^path must end in one of \.csv, \.npz, \.parquet, \.pq; got '.*t\.txt'\.$"
    path = tmp_path / "t.txt"
    with pytest.raises(ValueError, match=message):
        table_format(path)
    path.write_text("a\n1\n")
    with pytest.raises(ValueError, match=message):
        read_table(path)
    with pytest.raises(ValueError, match=message):
        write_table(path, {"a": [2.0]})
    assert path.read_text() == "a\n1\n"
    assert [table_format(f"x{s}") for s in (".csv", ".NPZ", ".parquet", ".pq")] == [
        "csv", "npz", "parquet", "parquet"]
    # a name that is only an extension is a hidden file without one, to Path
    for name in (".csv", "sub/.parquet"):
        with pytest.raises(ValueError, match=r"^path must name a file before its extension; "
                                             rf"got '{name}' \(write e\.g\. 'out\."):
            table_format(name)


def test_missing_file_and_unequal_columns(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^file not found: '.*nope\.csv'\.$"):
        read_table(tmp_path / "nope.csv")
    np.savez(tmp_path / "t.npz", a=[1.0, 2.0], b=[1.0])
    with pytest.raises(ValueError, match=r"^every column must have the same length; got "
                                         r"lengths \[1, 2\] in '.*t\.npz'\.$"):
        read_table(tmp_path / "t.npz")
    np.savez(tmp_path / "m.npz", a=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"column 'a' must be one-dimensional; got shape "
                                         r"\(2, 2\)"):
        read_table(tmp_path / "m.npz")


def test_get_column_returns_it_or_suggests_the_closest_name():
    table = {"uncertainty": np.array([0.1]), "Loss": np.array([1.0])}
    assert get_column(table, "uncertainty") is table["uncertainty"]
    with pytest.raises(ColumnError) as exc:
        get_column(table, "uncertainity")
    assert str(exc.value) == ("column 'uncertainity' not found; did you mean 'uncertainty'? "
                              "The columns are: 'uncertainty', 'Loss'.")
    assert isinstance(exc.value, KeyError)
    with pytest.raises(ColumnError, match=r"^loss column 'LOSS' not found; did you mean "
                                          r"'Loss'\?"):  # matched ignoring case
        get_column(table, "LOSS", "loss column")
    with pytest.raises(ColumnError, match=r"^score column 'q' not found\. The columns are: "
                                          r"'uncertainty', 'Loss'\.$"):
        get_column(table, "q", "score column")


class _BrokenWriter:
    """A ``csv.writer`` that writes the header, then fails on the rows."""

    def __init__(self, fh):
        self.fh = fh

    def writerow(self, row):
        self.fh.write(",".join(row) + "\r\n")

    def writerows(self, rows):
        raise OSError("disk full")


def _broken_write_array(fh, arr, **kw):
    fh.write(b"half an array")
    raise OSError("disk full")


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(suffix, tmp_path, monkeypatch):
    path = tmp_path / f"out{suffix}"
    path.write_bytes(b"old")
    (tmp_path / "other.txt").write_text("x")
    if suffix == ".csv":
        monkeypatch.setattr(csv, "writer", _BrokenWriter)
    else:
        monkeypatch.setattr(np.lib.format, "write_array", _broken_write_array)
    with pytest.raises(OSError, match="disk full"):
        write_table(path, {"a": [1.0, 2.0]})
    assert path.read_bytes() == b"old"
    with pytest.raises(OSError, match="disk full"):
        write_table(tmp_path / f"new{suffix}", {"a": [1.0, 2.0]})
    assert sorted(os.listdir(tmp_path)) == ["other.txt", f"out{suffix}"]
    monkeypatch.undo()
    write_table(path, {"a": [1.0, 2.0]})  # a successful write replaces the file
    assert read_table(path)["a"].tolist() == [1.0, 2.0]
    assert sorted(os.listdir(tmp_path)) == ["other.txt", f"out{suffix}"]


def test_protect_refuses_to_overwrite_an_input(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("a\n1\n")
    link = tmp_path / "link.csv"
    link.symlink_to(path)
    for target in (path, tmp_path / "." / "in.csv", link):
        with pytest.raises(ValueError, match=r"^output '.*\.csv' is the input file '.*in\.csv' "
                                             r"\(the same file or a link to it\); write the "
                                             r"output to another path\.$"):
            write_table(target, {"a": [2.0]}, protect=[tmp_path / "x.json", path])
    assert path.read_text() == "a\n1\n"
    write_table(tmp_path / "out.csv", {"a": [2.0]}, protect=[path])
    assert read_table(tmp_path / "out.csv")["a"].tolist() == [2.0]


def test_parquet_without_the_io_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    message = r"^Parquet files needs pandas and pyarrow: pip install 'abstain\[io\]'\.$"
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(ImportError, match=message):
        read_table(path)
    with pytest.raises(ImportError, match=message):
        write_table(tmp_path / "new.pq", {"a": [1.0]})
    assert sorted(os.listdir(tmp_path)) == ["t.parquet"]


def test_reading_parquet_in_chunks_without_pyarrow_names_the_io_extra(tmp_path, monkeypatch):
    from abstain.app.io import read_chunks

    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(ImportError, match=r"^Parquet files needs pandas and pyarrow: "
                                          r"pip install 'abstain\[io\]'\.$"):
        next(read_chunks(path, 10))


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_a_table_written_to_a_fifo_is_written_in_place(suffix, tmp_path, fifo):
    path, content = fifo(f"out{suffix}")
    write_table(path, {"a": [1.0, 2.5], "b": ["x", "y"]})
    (tmp_path / f"copy{suffix}").write_bytes(content())
    copy = read_table(tmp_path / f"copy{suffix}")
    assert copy["a"].tolist() == [1.0, 2.5] and copy["b"].tolist() == ["x", "y"]
    assert path.is_fifo()


def test_a_table_to_an_empty_path_or_a_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"^path must name a file to write; got ''\.$"):
        write_table("", {"a": [1.0]})
    (tmp_path / "folder.csv").mkdir()
    with pytest.raises(OSError, match=r"^cannot write '.*folder\.csv': Is a directory; name a "
                                      r"file inside it\.$"):
        write_table(tmp_path / "folder.csv", {"a": [1.0]})
    assert os.listdir(tmp_path / "folder.csv") == []


def test_csv_numbers_are_digits_not_what_float_accepts(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("u,name\n1e5,1_000\n-.5, \u0661\u0662 \n+3.,0x1f\ninf,infinity\n",
                    encoding="utf-8")
    got = read_table(path)
    assert got["u"].tolist() == [1e5, -0.5, 3.0, np.inf]
    assert got["name"].tolist() == ["1_000", "\u0661\u0662", "0x1f", "infinity"]
    path.write_text("u\n0.5\n1_000\n")
    with pytest.raises(ValueError, match=r"^column 'u' of '.*t\.csv' holds numbers \(line 2: "
                                         r"'0\.5'\) but line 3 has the text '1_000'; correct or "
                                         r"empty that cell\.$"):
        read_table(path)


def test_csv_records_as_the_csv_module_reads_them(tmp_path):
    from abstain.app.io import read_table_rows

    path = tmp_path / "t.csv"
    cells = ['a,"b"', "two\r\nlines", "x" * 200_000, 'in"side', ""]
    path.write_bytes(b'\xef\xbb\xbfname,n\r\n"a,""b""",1\r\n"two\r\nlines",2\r\n'
                     + b"x" * 200_000 + b",3\r\n" + b'in"side,4\r\n\r\n,5\r\n\r\n\n')
    got = read_table_rows(path)
    assert got.columns["name"].tolist() == cells[:4] + [""] + [""]
    np.testing.assert_array_equal(got.columns["n"], [1, 2, 3, 4, np.nan, 5])
    assert got.rows == got.rows._replace(unit="line") and got.rows.numbers.tolist() == [
        2, 3, 5, 6, 7, 8]  # the blank line 7 is a row; lines 9 and 10 end the file
    path.write_bytes(b"u\r0.5\r0.25")  # line endings of a lone carriage return
    assert read_table(path)["u"].tolist() == [0.5, 0.25]


@pytest.mark.parametrize(("content", "message"), [
    (b"u,v\n1,\"open\n2,3\n", r"^a quoted cell of '.*t\.csv' opened on line 2 is never closed"),
    (b"\x00\x01PK\n\x00", r"^'.*t\.csv' is not a text CSV file \(control character 0x00 on "
                          r"line 1\); give a CSV file of text"),
    (b"u\n0.5\n0.\xff\n", r"^'.*t\.csv' is not UTF-8 text \(line 3: byte 0xff at offset 8\)"),
    (b"\nu\n1\n", r"^line 1 of '.*t\.csv' is blank; the header row \(the column names\) must "
                  r"be line 1\.$"),
])
def test_a_file_that_is_not_a_csv_table_names_the_line(tmp_path, content, message):
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_table(path)


def test_chunks_give_a_column_the_kind_the_whole_file_gives(tmp_path):
    from abstain.app.io import read_chunks

    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n,cat,1\n,2,2\n1,1,x\n")  # a: numbers, b: text, c: refused
    message = r"column 'c' of '.*t\.csv' holds numbers \(line 2: '1'\) but line 4 has the text"
    for rows in (1, 2, 3):
        chunks = read_chunks(path, rows, columns=["a", "b"])
        got = list(chunks)
        assert np.concatenate([c.columns["b"] for c in got]).tolist() == ["cat", "2", "1"]
        assert [c.columns["a"].dtype.kind for c in got][-1] == "f"
        assert np.concatenate([c.rows.numbers for c in got]).tolist() == [2, 3, 4]
        with pytest.raises(ValueError, match=message):
            list(read_chunks(path, rows))
    with pytest.raises(ValueError, match=message):
        read_table(path)


def test_parquet_rows_are_named_by_index_and_strings_stay_text(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from abstain.app.io import read_chunks, read_table_rows

    path = tmp_path / "t.parquet"
    pd.DataFrame({"u": [0.5, None, 0.25], "s": ["007", None, "1e5"]}).to_parquet(path)
    got = read_table_rows(path)
    assert got.columns["s"].tolist() == ["007", "", "1e5"]
    assert got.rows.name(2) == "row index 2"
    assert [c.rows.numbers.tolist() for c in read_chunks(path, 2)] == [[0, 1], [2]]
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    for read in (read_table, lambda p: next(read_chunks(p, 2))):
        with pytest.raises(ValueError, match=r"^'.*bad\.parquet' is not a Parquet file \(.+\); "
                                             r"write it with pandas\.DataFrame\.to_parquet "
                                             r"or pyarrow\.$"):
            read(tmp_path / "bad.parquet")
