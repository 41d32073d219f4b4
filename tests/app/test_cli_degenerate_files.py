"""Every command on degenerate CSV files, read whole and in chunks: the exit code, exactly one
line on stderr on failure and nothing written, and from ``apply`` every row, every input cell
byte for byte, and an accept cell appended (empty on rows it could not score)."""

from __future__ import annotations

import csv
import io
import os

import pytest

from abstain.app.cli import main

BOM = b"\xef\xbb\xbf"
HEAD = b"id,loss,risk,note\n"
ROWS = [b"007,0,0.1,a\n", b"010,1,0.9,b\n", b"011,0,0.2,c\n", b"012,1,0.7,d\n",
        b"013,0,0.3,e\n", b"014,0,0.4,f\n"]
GOOD = HEAD + b"".join(ROWS)
OOD = b"id,loss,risk,is_ood\n007,0,0.1,0\n010,1,0.9,0\n011,,0.2,1\n"

# name -> (content, {command: None for success or words of the one error line});
# "apply+dropna" and "evaluate+dropna" run with --dropna.
CASES: dict[str, tuple[bytes, dict[str, str | None]]] = {
    "as written": (
        BOM + b"id,loss,risk,flag,big,note\r\n"
        b"007,0,0.1,true,12345678901234567891,\"a,\"\"b\"\"\"\r\n"
        b"010,1,0.9,1e5,9007199254740993,  spaced  \r\n"
        b"0x1,0,0.2,FALSE,-0,caf\xc3\xa9\r\n",
        {}),
    "blank line inside": (
        HEAD + b"".join(ROWS[:2]) + b"\n" + b"".join(ROWS[2:]),
        {"evaluate": "NaN or empty values in column(s) 'risk', 'loss' (first at line 4); pass "
                     "--dropna to drop them.",
         "fit": "(first at line 4", "apply": "column(s) 'risk' (first at line 4)",
         "evaluate+dropna": None, "apply+dropna": None}),
    "blank lines at the end": (GOOD + b"\n\r\n  \n", {}),
    "blank score": (
        HEAD + b"".join(ROWS[:3]) + b"015,1,,g\n" + b"".join(ROWS[3:]),
        {"evaluate": "(first at line 5", "fit": "(first at line 5",
         "apply": "1 row(s) have NaN or empty values in column(s) 'risk' (first at line 5); "
                  "pass --dropna",
         "evaluate+dropna": None, "apply+dropna": None}),
    "no final line ending": (GOOD.rstrip(b"\n"), {}),
    "carriage returns only": (GOOD.replace(b"\n", b"\r"), {}),
    "a cell over lines": (
        HEAD + ROWS[0] + b"020,1,0.8,\"two\nlines, \"\"quoted\"\"\"\n" + b"".join(ROWS[1:]),
        {}),
    "a cell of 200,000 characters": (
        HEAD + ROWS[0] + b"020,1,0.8," + b"x" * 200_000 + b"\n" + b"".join(ROWS[1:]), {}),
    "unused column of numbers and text": (
        HEAD + b"".join(ROWS[:2]) + b"A-12,0,0.2,c\n" + b"".join(ROWS[3:]), {}),
    "underscore in a number": (
        HEAD + b"".join(ROWS[:2]) + b"011,0,1_000,c\n" + b"".join(ROWS[3:]),
        {"*": "column 'risk' of '{path}' holds numbers (line 2: '0.1') but line 4 has the text "
              "'1_000'; correct or empty that cell."}),
    "label numbers, prediction text": (
        b"label,prediction,risk\n" + b"".join(b"%d,class_%d,0.%d\n" % (i % 2, i % 2, i)
                                             for i in range(1, 8)),
        {"evaluate": "the label and prediction columns 'label' and 'prediction' hold different "
                     "kinds of values: 'label' holds numbers (such as 1), 'prediction' text "
                     "(such as 'class_1')",
         "fit": "hold different kinds of values"}),
    "label of numbers then text": (
        b"label,prediction,risk\n1,1,0.1\n2,1,0.2\n1,2,0.3\n2,2,0.4\ncat,1,0.5\n",
        {"evaluate": "column 'label' of '{path}' holds numbers (line 2: '1') but line 6 has "
                     "the text 'cat'",
         "fit": "but line 6 has the text 'cat'"}),
    "label of text then numbers": (
        b"label,prediction,risk\ncat,cat,0.1\n2,1,0.2\n1,1,0.3\ndog,2,0.4\n1,1,0.5\n", {}),
    "is_ood of 2": (
        OOD + b"012,1,0.7,2\n013,0,0.3,0\n",
        {"evaluate": "column 'is_ood' must hold only 0/1 or true/false (or an empty cell); "
                     "got 2 on line 5 (1 such row(s)",  # "in lines 4 to 5" in chunks
         "fit": "got 2 on line 5", "evaluate+dropna": "got 2 on line 5"}),
    "is_ood of text": (
        OOD + b"012,1,0.7,0\n013,0,0.3,yes\n",
        {"evaluate": "column 'is_ood' of '{path}' holds numbers (line 2: '0') but line 6 has "
                     "the text 'yes'",
         "fit": "the text 'yes'", "evaluate+dropna": "the text 'yes'"}),
    "every row empty": (
        b"id,loss,risk,note\n1,0,,a\n2,1,,b\n",
        {"*": "have NaN or empty values in column(s) 'risk'",
         "evaluate+dropna": "every row of {path} has a NaN or empty value in a column used, so "
                            "--dropna dropped them all", "apply+dropna": None}),
    "negative loss": (
        HEAD + ROWS[0] + b"015,-1,0.5,g\n" + b"".join(ROWS[1:]),
        {"evaluate": "the loss column 'loss' must be non-negative; got -1 on line 3 (1 such "
                     "row(s)",
         "fit": "got -1 on line 3", "apply": None, "apply+dropna": None}),
    "every row OOD": (
        b"id,loss,risk,is_ood\n1,,0.1,1\n2,,0.5,1\n",
        {"evaluate": "the table must have in-distribution rows; got only OOD rows.",
         "fit": "in-distribution rows", "apply": None, "apply+dropna": None}),
    "header only": (HEAD, {"*": "'{path}' has no data rows (only a header)"}),
    "blank header line": (b"\n" + GOOD, {"*": "line 1 of '{path}' is blank; the header row"}),
    "a row too short": (HEAD + ROWS[0] + b"8,1\n" + ROWS[1],
                        {"*": "got a different number on line 3 of '{path}'"}),
    "quote never closed": (HEAD + ROWS[0] + b"9,1,0.5,\"open\n" + b"".join(ROWS[1:]),
                           {"*": "a quoted cell of '{path}' opened on line 3 is never closed"}),
    "not UTF-8": (HEAD + b"1,0,0.5,caf\xe9\n",
                  {"*": "'{path}' is not UTF-8 text (line 2: byte 0xe9 at offset 29)"}),
    "binary": (b"\x00\x01\x02\x03 binary\n\x00\x00",
               {"*": "'{path}' is not a text CSV file (control character 0x00 on line 1)"}),
    "PNG": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            {"*": "'{path}' is not UTF-8 text (line 1: byte 0x89 at offset 0)"}),
}

COMMANDS = ["evaluate", "evaluate+chunks", "fit", "fit+chunks", "apply", "evaluate+dropna",
            "apply+dropna"]


@pytest.fixture(scope="module")
def rule(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rule")
    (folder / "t.csv").write_bytes(GOOD)
    assert main(["fit", str(folder / "t.csv"), "--score", "risk", "--target-coverage", "0.6",
                 "-o", str(folder / "rule.json")]) == 0
    return folder / "rule.json"


def _expected(case: str, command: str) -> str | None:
    """The words of the error line, or None for success: a command with --dropna fails as
    the command without it unless the case says otherwise."""
    errors = CASES[case][1]
    base = command.replace("+chunks", "")
    for key in (base, base.replace("+dropna", ""), "*"):
        if key in errors:
            return errors[key]
    return None


def _records(data: bytes) -> list[bytes]:
    """Physical lines joined while a double quote is open (the cases quote evenly)."""
    out, cur = [], b""
    for line in data.splitlines(keepends=True):
        cur += line
        if cur.count(b'"') % 2 == 0:
            out.append(cur)
            cur = b""
    return out + ([cur] if cur else [])


def _check_apply_output(given: bytes, written: bytes, dropna: bool) -> None:
    """``written`` is ``given`` with one cell appended to the header and each row."""
    bom = given.startswith(BOM)
    header, *body = _records(given[3:] if bom else given)
    n = len(body)
    while n and body[n - 1].strip() == b"":  # blank lines after the last row: not rows
        n -= 1
    limit = csv.field_size_limit(1 << 24)
    try:
        rows = list(csv.reader(io.StringIO(written.decode("utf-8"), newline="")))
    finally:
        csv.field_size_limit(limit)
    assert rows[0][-1] == "accept"
    cells = [r[-1] for r in rows[1:] if r][:n]
    assert len(cells) == n  # every row written, none dropped
    assert set(cells) <= ({"0", "1", ""} if dropna else {"0", "1"})
    width = len(next(csv.reader([header.decode("utf-8")])))

    def add(record: bytes, cell: bytes) -> bytes:
        core = record.rstrip(b"\r\n")
        end = record[len(core):]
        if core.strip() == b"":  # a blank line between rows: a row of empty cells
            core = b"," * (width - 1)
        return core + b"," + cell + end

    expected = (BOM if bom else b"") + add(header, b"accept") + b"".join(
        add(r, c.encode()) for r, c in zip(body[:n], cells, strict=True)) + b"".join(body[n:])
    assert written == expected


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", list(CASES))
def test_a_degenerate_file(case, command, rule, tmp_path, capsys):
    path = tmp_path / "in.csv"
    given = CASES[case][0]
    path.write_bytes(given)
    base, _, mode = command.partition("+")
    out = tmp_path / ("out.csv" if base == "apply" else "out.json")
    argv = {"evaluate": ["evaluate", path, "--score", "risk", "--json", out],
            "fit": ["fit", path, "--score", "risk", "--target-coverage", "0.6", "-o", out],
            "apply": ["apply", rule, path, "-o", out]}[base]
    argv += {"chunks": ["--chunk-rows", "2"], "dropna": ["--dropna"], "": []}[mode]
    code = main([str(a) for a in argv])
    stdout, stderr = capsys.readouterr()
    words = _expected(case, command)
    assert path.read_bytes() == given  # the input is never touched
    if words is not None:
        lines = stderr.splitlines()
        assert code == 1 and len(lines) == 1, stderr
        assert lines[0].startswith(f"abstain {base}: error: "), lines[0]
        assert words.format(path=path) in lines[0]
        assert sorted(os.listdir(tmp_path)) == ["in.csv"]  # nothing written
        return
    assert code == 0, stderr
    assert out.exists()
    if base == "apply":
        _check_apply_output(given, out.read_bytes(), mode == "dropna")


@pytest.mark.parametrize("case", list(CASES))
def test_chunks_accept_and_refuse_what_the_whole_file_does(case, tmp_path, capsys):
    """Chunks of every size from 1 row: the same exit code and the same first output line."""
    path = tmp_path / "in.csv"
    path.write_bytes(CASES[case][0])
    runs = []
    for rows in (None, 1, 2, 3, 100):
        extra = [] if rows is None else ["--chunk-rows", str(rows)]
        code = main(["evaluate", str(path), "--score", "risk", *extra])
        stdout, stderr = capsys.readouterr()
        runs.append((code, stdout.splitlines()[:1]))
    assert len(set(code for code, _ in runs)) == 1, runs
    assert all(first == runs[0][1] for _, first in runs)


def test_a_refusal_in_chunks_counts_the_rows_of_its_chunk_as_such(tmp_path, capsys):
    # read in chunks, the later chunks are not read yet: "1 such row(s)" for a file with
    # two such rows said of the whole file what held for one chunk
    path = tmp_path / "in.csv"
    path.write_bytes(b"loss,risk\n0,inf\n1,-inf\n0,0.5\n")
    for extra, count in (([], "(2 such row(s));"),
                         (["--chunk-rows", "1"], "(1 such row(s) in lines 2 to 2);"),
                         (["--chunk-rows", "2"], "(2 such row(s) in lines 2 to 3);")):
        assert main(["evaluate", str(path), *extra]) == 1
        line = capsys.readouterr().err.strip()
        assert line.startswith("abstain evaluate: error: column 'risk' must hold finite "
                               f"numbers; got inf on line 2 {count}"), line
