"""The command line under SIGINT and SIGTERM, and its outputs that are not regular files.

An interrupted command prints one line (``abstain <command>: interrupted``), exits with
128 + the signal number (130 for SIGINT, 143 for SIGTERM), leaves no temporary file and
leaves an existing output as it was, at any point of its run: while the library is
imported, while it reads, while it writes. A FIFO or a device named as output is written
in place, never replaced by a file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from abstain.app import cli

pytestmark = pytest.mark.skipif(sys.platform != "linux",
                                reason="signals to a child and /proc, FIFOs, /dev: Linux")

SRC = Path(__file__).resolve().parents[2] / "src"
ROWS = 30_000
SMALL = 300


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A table big enough to take a second or two to apply a rule, a small one to report
    on, and a rule."""
    folder = tmp_path_factory.mktemp("signals")
    rng = np.random.default_rng(0)
    risk = rng.random(ROWS)
    loss = (rng.random(ROWS) < risk).astype(int)
    rows = [f"{a},{b:.6f}\n" for a, b in zip(loss, risk, strict=False)]
    (folder / "t.csv").write_text("loss,risk\n" + "".join(rows))
    (folder / "small.csv").write_text("loss,risk\n" + "".join(rows[:SMALL]))
    assert cli.main(["fit", str(folder / "small.csv"), "--score", "risk", "--target-coverage",
                     "0.6", "-o", str(folder / "rule.json")]) == 0
    return folder


def _cli(*argv, cwd, stdout=subprocess.PIPE):
    return subprocess.run([sys.executable, "-m", "abstain", *argv], cwd=cwd, env=_env(),
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)


def _env():
    return {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH",
                                                                               "")}


def _handles_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler (the command's, from its start)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    caught = int(next(ln.split()[1] for ln in status.splitlines()
                      if ln.startswith("SigCgt:")), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _default_signals() -> None:
    """In the child: SIGINT and SIGTERM as in a terminal, even when the tests run in the
    background (where SIGINT is ignored, and the command keeps it so)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def _temporaries(folder: Path) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp")]


def _interrupt(argv, folder, sig, when, watch):
    """Start the command, send ``sig`` ``when`` seconds after its handler is installed (or,
    with ``when="write"``, as soon as a temporary file appears in ``watch``); return the
    exit code and standard error."""
    proc = subprocess.Popen([sys.executable, "-m", "abstain", *argv], cwd=folder, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    deadline = time.monotonic() + 60
    while not _handles_sigterm(proc.pid) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.002)
    if when == "write":
        while (not any(n.endswith(".tmp") for n in os.listdir(watch))
               and proc.poll() is None):
            assert time.monotonic() < deadline
            time.sleep(0.002)
    else:
        time.sleep(when)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


# (signal, when): 0.0 as the command's handler is installed (the library is being
# imported), 0.6 s later (importing or reading), and as soon as a temporary appears (writing)
APPLY_POINTS = [(signal.SIGINT, 0.0), (signal.SIGTERM, 0.0), (signal.SIGINT, 0.6),
                (signal.SIGTERM, "write"), (signal.SIGINT, "write"), (signal.SIGHUP, "write")]


@pytest.mark.parametrize(("sig", "when"), APPLY_POINTS,
                         ids=[f"{s.name}-{w}" for s, w in APPLY_POINTS])
def test_an_interrupted_apply_leaves_no_temporary_and_the_old_output(sig, when, folder):
    out = folder / "out.csv"
    out.write_text("the user's old output\n")
    code, err = _interrupt(["apply", "rule.json", "t.csv", "-o", "out.csv"], folder, sig, when,
                           folder)
    assert _temporaries(folder) == []
    if code != 0:
        assert (code, err) == (128 + sig, "abstain apply: interrupted\n")
    if out.read_text() != "the user's old output\n":  # the signal came once it was written
        assert out.read_text().count("\n") == ROWS + 1
    else:
        assert code != 0
    out.unlink()


@pytest.mark.parametrize(("sig", "when"), [(signal.SIGINT, 0.3), (signal.SIGTERM, "write")],
                         ids=["SIGINT-0.3", "SIGTERM-write"])
def test_an_interrupted_report_writes_no_png_and_no_page(sig, when, folder):
    png = folder / "png"
    shutil.rmtree(png, ignore_errors=True)  # a failed parameter before this one left it
    (folder / "r.html").unlink(missing_ok=True)
    png.mkdir()
    (png / "notes.txt").write_text("mine")
    code, err = _interrupt(["report", "small.csv", "-o", "r.html", "--png", "png"], folder,
                           sig, when, png)
    assert _temporaries(folder) == []
    if code != 0:
        assert (code, err) == (128 + sig, "abstain report: interrupted\n")
    written = sorted(p.name for p in png.iterdir())
    if (folder / "r.html").exists():  # the signal came once the report was written: all of it
        assert len(written) == 4 and "notes.txt" in written  # 2 curves, 1 histogram, notes
    else:  # nothing of it
        assert code != 0 and written == ["notes.txt"]
    (folder / "r.html").unlink(missing_ok=True)
    shutil.rmtree(png)


def _signal_while_writing(monkeypatch, sig):
    """Make ``apply`` send ``sig`` to this process when it writes its 11th output row."""
    from abstain.app import io as app_io

    real = app_io._accept_cell
    calls = [0]

    def signalling(v):
        calls[0] += 1
        if calls[0] == 11:
            os.kill(os.getpid(), sig)
        return real(v)

    monkeypatch.setattr(app_io, "_accept_cell", signalling)


def test_a_signal_while_writing_in_process_removes_the_temporary(folder, monkeypatch, capsys):
    """Deterministic: the signal arrives while the CSV is half written."""
    out = folder / "in_process.csv"
    out.write_text("old\n")
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    _signal_while_writing(monkeypatch, signal.SIGTERM)
    code = cli.main(["apply", str(folder / "rule.json"), str(folder / "t.csv"), "-o", str(out)])
    assert code == 143 and capsys.readouterr().err == "abstain apply: interrupted\n"
    assert out.read_text() == "old\n" and _temporaries(folder) == []
    assert {s: signal.getsignal(s) for s in before} == before  # the caller's handlers are back
    out.unlink()


@pytest.mark.parametrize("error", [ImportError, OSError, ValueError, RuntimeError])
def test_an_error_that_follows_a_signal_reads_as_the_interrupt(error, folder, monkeypatch,
                                                               capsys):
    """An interrupt inside an extension module's import comes back as an ``ImportError``
    (NumPy's C API turns any failure of its import into one), inside a class body as a
    ``RuntimeError`` (matplotlib's ticker: ``Error calling __set_name__``, a traceback in
    one CI run): the command says it was interrupted, not that a package is missing."""
    from abstain.app import io as app_io
    from abstain.app.console import Interrupted

    def swallowing(v):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
        except Interrupted:
            raise error("numpy.core.multiarray failed to import") from None

    monkeypatch.setattr(app_io, "_accept_cell", swallowing)
    out = folder / "swallowed.csv"
    code = cli.main(["apply", str(folder / "rule.json"), str(folder / "t.csv"), "-o", str(out)])
    assert code == 143 and capsys.readouterr().err == "abstain apply: interrupted\n"
    assert not out.exists() and _temporaries(folder) == []


def test_a_signal_ignored_at_the_start_stays_ignored(folder, monkeypatch, capsys):
    out = folder / "ignored.csv"
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a background job of a script
    try:
        _signal_while_writing(monkeypatch, signal.SIGINT)
        code = cli.main(["apply", str(folder / "rule.json"), str(folder / "small.csv"), "-o",
                         str(out)])
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
    assert code == 0 and "interrupted" not in capsys.readouterr().err
    assert out.read_text().count("\n") == SMALL + 1
    out.unlink()


def test_an_empty_output_path_is_refused(folder, capsys):
    before = sorted(folder.iterdir())
    for argv in (["evaluate", "small.csv", "--json", ""],
                 ["fit", "small.csv", "--target-coverage", "0.5", "-o", ""],
                 ["apply", "rule.json", "small.csv", "-o", ""],
                 ["report", "small.csv", "-o", ""],
                 ["report", "small.csv", "-o", "r.html", "--png", ""]):
        flag, what = argv[-2], "a folder" if argv[-2] == "--png" else "a file"
        code = cli.main([str(folder / a) if a.endswith((".csv", ".json")) else a for a in argv])
        err = capsys.readouterr().err
        assert code == 1 and err == (f"abstain {argv[0]}: error: {flag} must name {what} to "
                                     "write; got an empty path ''.\n")
    assert sorted(folder.iterdir()) == before


def test_a_fifo_output_is_written_in_place(folder, tmp_path, fifo):
    path, content = fifo("out.json")
    assert cli.main(["evaluate", str(folder / "small.csv"), "--json", str(path)]) == 0
    got = content()
    assert got.startswith(b'{\n  "n_id": 300,') and got.endswith(b"}\n")
    assert path.is_fifo() and os.listdir(tmp_path) == ["out.json"]


def test_dev_stdout_gets_the_json_alone_and_the_messages_go_to_stderr(folder, capfd, monkeypatch):
    # standard output a pipe (the command in a pipeline: `... --json /dev/stdout | jq`) ...
    piped = _cli("evaluate", "small.csv", "--json", "/dev/stdout", cwd=folder)
    assert piped.returncode == 0 and piped.stdout.startswith("{\n")
    assert json.loads(piped.stdout)["n_id"] == 300
    assert piped.stderr.startswith("small.csv: 300 ID rows")
    assert piped.stderr.endswith("wrote /dev/stdout\n")
    # ... and a file (`abstain ... > out.txt`; pytest's capfd is such a file)
    capfd.readouterr()
    monkeypatch.chdir(folder)
    assert cli.main(["evaluate", "small.csv", "--json", "/dev/stdout"]) == 0
    got = capfd.readouterr()
    assert got.out == piped.stdout and got.err == piped.stderr
    # a table written by apply to standard output is the CSV alone
    piped = _cli("apply", "rule.json", "small.csv", "-o", "/dev/stdout", cwd=folder)
    assert piped.returncode == 0 and piped.stdout.splitlines()[0].endswith(",accept")
    assert len(piped.stdout.splitlines()) == 301 and "wrote /dev/stdout" in piped.stderr


def test_dev_stderr_gets_the_output_alone_and_the_messages_go_to_stdout(folder):
    # `abstain apply ... -o /dev/stderr 2> out.csv`: the notes of the command went into the
    # table before it (its first line a sentence), and warnings into --json's file
    folder.joinpath("gap.csv").write_text("risk,loss\n0.1,0\n,1\n0.9,1\n")
    proc = _cli("apply", "rule.json", "gap.csv", "-o", "/dev/stderr", "--dropna", cwd=folder)
    assert proc.returncode == 0 and proc.stderr.splitlines() == [
        "risk,loss,accept", "0.1,0,1", ",1,", "0.9,1,0"]
    assert "left the accept cell empty on 1 row(s)" in proc.stdout
    proc = _cli("evaluate", "small.csv", "--json", "/dev/stderr", cwd=folder)
    assert proc.returncode == 0 and json.loads(proc.stderr)["n_id"] == 300
    assert proc.stdout.startswith("small.csv: 300 ID rows")
    assert proc.stdout.endswith("wrote /dev/stderr\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_is_one_line_and_exit_1(folder, capsys):
    for argv in (["evaluate", str(folder / "small.csv"), "--json", "/dev/full"],
                 ["fit", str(folder / "small.csv"), "--target-coverage", "0.5", "-o",
                  "/dev/full"]):
        assert cli.main(argv) == 1
        assert capsys.readouterr().err == (
            f"abstain {argv[0]}: error: cannot write '/dev/full': No space left on device; "
            "free some space or write to another disk.\n")
    assert Path("/dev/full").is_char_device()


@pytest.mark.parametrize("argv", [["evaluate", "small.csv"],
                                  ["apply", "rule.json", "small.csv", "-o", "/dev/stdout"],
                                  ["evaluate", "small.csv", "--json", "/dev/stdout"]],
                         ids=["table", "apply", "json"])
def test_a_closed_standard_output_ends_the_command_quietly(folder, argv):
    # `abstain evaluate ... | head -0`: the reader leaves before the output is written
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "abstain", *argv],
                              cwd=folder, env=_env(), stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == 128 + signal.SIGPIPE
    assert "error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_report_on_standard_output_is_the_page(folder):
    run = _cli("report", "small.csv", "-o", "/dev/stdout", "--quiet", cwd=folder)
    assert run.returncode == 0 and run.stdout.startswith("<!DOCTYPE html>")
    assert run.stdout.rstrip().endswith("</html>")


def test_a_report_on_workers_ends_quietly(folder):
    """``--jobs 2``: the workers end with the pool, silently, and the page is written."""
    run = _cli("report", "small.csv", "-o", "jobs.html", "--bootstrap", "20", "--jobs", "2",
               "--quiet", cwd=folder)
    assert (run.returncode, run.stderr) == (0, "")
    assert (folder / "jobs.html").exists()
    (folder / "jobs.html").unlink()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_report_on_workers_stops_them(sig, folder):
    """A signal once the workers run: one line, the exit code of the signal, nothing
    written, and no worker left running (the command's process group is empty)."""
    proc = subprocess.Popen([sys.executable, "-m", "abstain", "report", "t.csv", "-o",
                             "stopped.html", "--bootstrap", "400", "--jobs", "2", "--quiet"],
                            cwd=folder, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not _handles_sigterm(proc.pid) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.002)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    while proc.poll() is None and not children.read_text().split():  # the workers started
        assert time.monotonic() < deadline
        time.sleep(0.002)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        assert (proc.returncode, err) == (128 + sig, "abstain report: interrupted\n")
    else:  # the machine finished it first
        (folder / "stopped.html").unlink()
    assert not (folder / "stopped.html").exists() and _temporaries(folder) == []
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # a worker is still there
        except ProcessLookupError:
            break
        time.sleep(0.01)
    else:
        raise AssertionError("a worker outlived the command")


def test_the_console_keeps_its_freed_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's own process reuses the memory it frees (keep_freed_memory): set before
    the command runs."""
    from abstain._core import parallel
    from abstain.app import console as console_module

    calls: list[str] = []
    monkeypatch.setattr(parallel, "keep_freed_memory", lambda: calls.append("kept"))
    monkeypatch.setattr(sys, "argv", ["abstain", "--version"])
    with pytest.raises(SystemExit) as exit_info:
        console_module.console()
    assert exit_info.value.code == 0 and calls == ["kept"]
