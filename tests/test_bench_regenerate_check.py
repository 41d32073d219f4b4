"""benchmarks/regenerate_check.py: which stored tables it covers and how it compares them (the
reruns themselves take minutes: ``make bench-check``)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def rc(load_benchmark):
    return load_benchmark("regenerate_check")


TABLE = """# title

Load average before: 0.7.

| n | kind | time (s) | value |
|---|---|---|---|
| 1,000 | a | 0.138 | 0.25 |
| 2,000 | a | 1.244 | 0.5 |

prose
"""


def test_every_stored_result_is_rerun_or_skipped_with_a_reason(rc):
    covered = {name for run in rc.RUNS for name in run.files}
    for path in rc.RESULTS.iterdir():
        reason = rc.SKIPPED.get(path.name) or any(
            path.name.startswith(p) and path.suffix == ".png" for p in rc.SKIPPED_PREFIXES)
        assert (path.name in covered) != bool(reason), path.name
    assert covered.isdisjoint(rc.SKIPPED)
    for run in rc.RUNS:
        assert (rc.HERE / run.script).is_file()
        assert all((rc.RESULTS / name).is_file() for name in run.files)


def test_timing_columns_and_prose_are_left_out(rc):
    other = TABLE.replace("0.138", "0.201").replace("0.7.", "3.1.").replace("prose", "more")
    assert rc.compare_tables(other, TABLE, ["time (s)"], rows_subset=False) is None
    assert rc.compare_tables(other, TABLE, [], rows_subset=False) == (
        "table 1: row 1,000 | a | 0.201 | 0.25 against stored 1,000 | a | 0.138 | 0.25")


def test_a_changed_value_differs(rc):
    changed = TABLE.replace("| 0.5 |", "| 0.51 |")
    assert rc.compare_tables(changed, TABLE, ["time (s)"], rows_subset=False) == (
        "table 1: row 2,000 | a | 0.51 against stored 2,000 | a | 0.5")
    fewer = TABLE.replace("| 2,000 | a | 1.244 | 0.5 |\n", "")
    assert rc.compare_tables(fewer, TABLE, ["time (s)"], rows_subset=False) == (
        "table 1: 1 row(s) against 2 stored")
    assert rc.compare_tables("no table", TABLE, [], rows_subset=False) == (
        "0 table(s) against 1 stored")


def test_a_subset_of_rows_must_stand_in_the_stored_table(rc):
    fewer = TABLE.replace("| 2,000 | a | 1.244 | 0.5 |\n", "")
    assert rc.compare_tables(fewer, TABLE, ["time (s)"], rows_subset=True) is None
    wrong = fewer.replace("0.25", "0.3")
    assert rc.compare_tables(wrong, TABLE, ["time (s)"], rows_subset=True) == (
        "table 1: row 1,000 | a | 0.3 is not in the stored table")


def test_a_file_without_timings_is_compared_byte_for_byte(rc, tmp_path):
    run = next(r for r in rc.RUNS if "bench_ltt_start.md" in r.files)
    stored = (rc.RESULTS / "bench_ltt_start.md").read_bytes()
    (tmp_path / "same.md").write_bytes(stored)
    assert rc.check(run, "bench_ltt_start.md", tmp_path / "same.md") == (
        "identical", "byte for byte")
    (tmp_path / "other.md").write_bytes(stored + b"\n")
    assert rc.check(run, "bench_ltt_start.md", tmp_path / "other.md")[0] == "differs"
    assert rc.check(run, "bench_ltt_start.md", tmp_path / "missing.md") == (
        "differs", "the benchmark did not write it")


def test_a_stored_file_without_a_table_is_never_identical(rc):
    assert rc.compare_tables("prose", "prose", [], rows_subset=False) == (
        "the stored file holds no table")
