"""abstain.app.io: columns whose names or layout other writers and readers treat specially
(NumPy's own keywords in an NPZ file, a pandas index stored in a Parquet file, two columns
of one name) pass through or are refused, never dropped."""

from __future__ import annotations

import os
from decimal import Decimal

import numpy as np
import pytest

from abstain.app.io import (
    check_not_input,
    read_chunks,
    read_table,
    read_table_rows,
    write_table,
    write_with_column,
)


def _parquet():
    pytest.importorskip("pyarrow")
    return pytest.importorskip("pandas")


@pytest.mark.parametrize("name", ["file", "allow_pickle", "args", "kwds"])
@pytest.mark.parametrize("source", [".csv", ".npz", ".parquet"])
def test_npz_output_keeps_columns_named_like_the_keywords_of_savez(name, source, tmp_path):
    if source == ".parquet":
        _parquet()
    src = tmp_path / f"in{source}"
    write_table(src, {"risk": np.array([0.1, 0.5]), name: np.array(["a", "b"])})
    out = tmp_path / "out.npz"
    write_with_column(src, out, "accept", np.array([1.0, 0.0]))
    with np.load(out, allow_pickle=False) as got:
        assert got.files == ["risk", name, "accept"]
        assert got[name].tolist() == ["a", "b"]
        assert got["accept"].tolist() == [1.0, 0.0]


def test_write_table_to_npz_keeps_every_name(tmp_path):
    out = tmp_path / "t.npz"
    write_table(out, {"file": np.arange(3.0), "allow_pickle": np.array(["x", "y", "z"])})
    got = read_table(out)
    assert list(got) == ["file", "allow_pickle"]
    assert got["allow_pickle"].tolist() == ["x", "y", "z"]


def _indexed(tmp_path, **kw):
    pd = _parquet()
    src = tmp_path / "in.parquet"
    frame = pd.DataFrame({"id": ["a", "b", "c"], "day": [3, 1, 2], "risk": [0.1, 0.5, 0.3]})
    frame.set_index(kw.get("index", "id")).to_parquet(src)
    return src


def test_a_stored_pandas_index_is_a_column_in_the_files_order(tmp_path):
    import pyarrow.parquet as pq

    src = _indexed(tmp_path)
    stored = pq.read_schema(src).names  # pandas stores the index after the columns
    assert stored == ["day", "risk", "id"]
    assert list(read_table(src)) == stored
    chunked = list(read_chunks(src, 2))
    assert [list(c.columns) for c in chunked] == [stored, stored]
    assert [v for c in chunked for v in c.columns["id"].tolist()] == ["a", "b", "c"]
    for suffix in (".parquet", ".csv"):
        out = tmp_path / f"out{suffix}"
        write_with_column(src, out, "accept", np.array([1.0, 0.0, np.nan]))
        got = read_table(out)
        assert list(got) == [*stored, "accept"]
        assert got["id"].tolist() == ["a", "b", "c"]
    # to CSV the new column is written as from a CSV source: 1, 0, an empty cell
    assert (tmp_path / "out.csv").read_text().splitlines() == [
        "day,risk,id,accept", "3,0.1,a,1", "1,0.5,b,0", "2,0.3,c,"]


def test_parquet_columns_pass_through_with_their_types_nulls_and_big_integers(tmp_path):
    _parquet()
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    ids = [2**53 + 1, None, 3]
    pq.write_table(pa.table({"risk": pa.array([0.1, 0.5, 0.3]), "id": pa.array(ids, pa.int64()),
                             "n": pa.array([1, 2, None], pa.uint8())}), src)
    write_with_column(src, tmp_path / "out.parquet", "risk", np.array([1.0, 0.0, np.nan]))
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.schema.names == ["risk", "id", "n"]
    assert (got.column("id").type, got.column("n").type) == (pa.int64(), pa.uint8())
    assert got.column("id").to_pylist() == ids
    assert got.column("risk").to_pylist() == [1.0, 0.0, None]
    write_with_column(src, tmp_path / "out.csv", "accept", np.array([1.0, 0.0, np.nan]))
    assert (tmp_path / "out.csv").read_text().splitlines() == [
        "risk,id,n,accept", "0.1,9007199254740993,1,1", "0.5,,2,0", "0.3,3,,"]


def test_a_stored_multi_index_keeps_each_level(tmp_path):
    src = _indexed(tmp_path, index=["id", "day"])
    assert list(read_table(src)) == ["risk", "id", "day"]
    assert read_table(src)["day"].tolist() == [3.0, 1.0, 2.0]


def test_a_range_index_is_not_a_column(tmp_path):
    pd = _parquet()
    src = tmp_path / "in.parquet"
    pd.DataFrame({"risk": [0.1, 0.5]}).to_parquet(src)
    assert list(read_table(src)) == ["risk"]


def test_a_parquet_file_with_two_columns_of_one_name_is_refused_in_one_line(tmp_path):
    _parquet()
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "dup.parquet"
    pq.write_table(pa.table([pa.array([1.0, 2.0]), pa.array([3.0, 4.0])],
                            names=["risk", "risk"]), src)
    for read in (lambda: read_table_rows(src), lambda: list(read_chunks(src, 1))):
        with pytest.raises(ValueError, match=r"^'.*dup.parquet' has two columns named 'risk'; "
                                             r"rename one") as info:
            read()
        assert "\n" not in str(info.value)


def test_a_loop_of_symbolic_links_is_not_the_input(tmp_path):
    loop = tmp_path / "loop.csv"
    os.symlink(loop, loop)
    check_not_input(loop, [tmp_path / "in.csv"])
    check_not_input(tmp_path / "out.csv", [loop])


def test_an_npz_file_with_a_member_that_is_not_an_array_is_refused_naming_it(tmp_path):
    import zipfile

    path = tmp_path / "t.npz"
    write_table(path, {"risk": np.array([0.1, 0.5])})
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("notes.txt", "hello")
    with pytest.raises(ValueError, match=r"^'.*t\.npz' holds 'notes\.txt', which is not a "
                                         r"\.npy array; write the file with numpy\.savez"):
        read_table(path)


def test_nested_and_binary_parquet_columns_are_refused_where_the_output_would_change_them(
        tmp_path):
    # a list of 1,500 numbers came out as "[   0    1    2 ... 1497 1498 1499]", a struct's
    # 9007199254740993 as 9007199254740992.0, bytes as "b'ab'"
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    big = 2**53 + 1
    columns = {"emb": pa.array([list(range(1500)), [big, 3]]),
               "meta": pa.array([{"id": big}, None]),
               "raw": pa.array([b"ab", b"\xff"])}
    for name, column in columns.items():
        src = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"risk": [0.1, 0.5], name: column}), src)
        for fmt, article in (("csv", "a"), ("npz", "an")):
            out = tmp_path / f"{name}_out.{fmt}"
            with pytest.raises(ValueError, match=rf"^'.*{name}\.parquet': column '{name}' holds "
                               rf".* values, which {article} {fmt.upper()} output cannot hold as "
                               rf"written; write the output as Parquet \(\.parquet\), which "
                               rf"keeps them\.$"):
                write_with_column(src, out, "accept", np.array([1.0, 0.0]))
            assert not out.exists()
        out = tmp_path / f"{name}_out.parquet"
        write_with_column(src, out, "accept", np.array([1.0, 0.0]))
        assert pq.read_table(out).column(name).equals(pq.read_table(src).column(name))


def test_a_decimal_parquet_column_is_read_as_numbers(tmp_path):
    # decimal values came as Python Decimal objects: "column 'risk' must be numeric; got text"
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from abstain.app.io import read_table_rows

    src = tmp_path / "d.parquet"
    pq.write_table(pa.table({"loss": [0.0, 1.0, 0.0],
                             "risk": pa.array([Decimal("0.1"), None, Decimal("12.345")],
                                              pa.decimal128(10, 3))}), src)
    got = read_table_rows(src).columns["risk"]
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [0.1, np.nan, 12.345])


def test_npz_arrays_of_other_shapes_are_no_columns_and_pass_through_to_npz(tmp_path):
    # an embeddings array beside the scores made every command refuse the file
    src = tmp_path / "t.npz"
    emb = np.arange(12.0).reshape(3, 4)
    np.savez(src, risk=np.array([0.1, 0.5, 0.3]), emb=emb, version=np.array(7))
    assert list(read_table_rows(src).columns) == ["risk"]
    out = tmp_path / "out.npz"
    write_with_column(src, out, "accept", np.array([1.0, 0.0, 1.0]))
    with np.load(out) as got:
        np.testing.assert_array_equal(got["emb"], emb)
        assert got["version"].shape == () and int(got["version"]) == 7
        assert got["accept"].tolist() == [1.0, 0.0, 1.0]
    for fmt in ("csv", "parquet"):
        target = tmp_path / f"out.{fmt}"
        with pytest.raises(ValueError, match=rf"^'.*t\.npz': array 'emb' has shape \(3, 4\), "
                           rf"which a {fmt.upper()} output cannot hold as a column; write the "
                           rf"output as NPZ \(\.npz\), which keeps it\.$"):
            write_with_column(src, target, "accept", np.array([1.0, 0.0, 1.0]))
        assert not target.exists()
    np.savez(tmp_path / "only.npz", emb=emb)  # no column at all: refused as before
    with pytest.raises(ValueError, match=r"column 'emb' must be one-dimensional"):
        read_table_rows(tmp_path / "only.npz")
