"""abstain._core.files: atomic writes of regular files, in-place writes of FIFOs, devices and
the standard output, all-or-nothing writes of a folder's files, and write errors that name
the path and say what to do."""

from __future__ import annotations

import errno
import os
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest

from abstain._core.files import (
    atomic_files,
    atomic_path,
    atomic_path_and_files,
    os_error,
    write_text,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev need POSIX")


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as fh:
            into.append(fh.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_regular_file_is_replaced_atomically_and_keeps_no_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(RuntimeError, match="half way"), atomic_path(path) as tmp:
        Path(tmp).write_text("new, half")
        raise RuntimeError("half way")
    assert path.read_text() == "old" and _names(tmp_path) == ["out.json"]
    write_text(path, "new")
    assert path.read_text() == "new" and _names(tmp_path) == ["out.json"]


def test_a_symbolic_link_is_followed_and_kept(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert _names(tmp_path / "real") == ["out.json"]


@posix_only
def test_a_fifo_is_written_in_place_not_replaced(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_text(fifo, "data\n")
    reader.join(10)
    assert got == [b"data\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and _names(tmp_path) == ["out.json"]


@posix_only
def test_a_failed_write_to_a_fifo_writes_nothing_into_it(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    with pytest.raises(RuntimeError, match="broken"), atomic_path(fifo) as tmp:
        Path(tmp).write_text("half")
        raise RuntimeError("broken")
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_text(fifo, "whole\n")  # the reader gets the next complete write only
    reader.join(10)
    assert got == [b"whole\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


@posix_only
@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
def test_a_character_device_is_written_in_place():
    before = os.stat("/dev/null")
    write_text("/dev/null", "discarded")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino,
                                                                            before.st_rdev)


@posix_only
@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="no /dev/stdout")
def test_dev_stdout_is_written_through_the_open_standard_output(capfd):
    print("table", flush=True)
    write_text("/dev/stdout", '{"a": 1}\n')
    print("done", flush=True)
    assert capfd.readouterr().out == 'table\n{"a": 1}\ndone\n'


@posix_only
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_device_is_one_error_that_names_it():
    with pytest.raises(OSError, match=r"^cannot write '/dev/full': No space left on device; "
                                      r"free some space or write to another disk\.$"):
        write_text("/dev/full", "x" * 100_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_an_empty_path_is_refused():
    with pytest.raises(ValueError, match=r"^path must name a file to write; got ''\.$"):
        write_text("", "x")


def test_write_errors_name_the_path_and_say_what_to_do(tmp_path):
    missing = tmp_path / "no-such-folder" / "out.json"
    with pytest.raises(OSError, match=r"cannot write '.*out\.json': No such file or directory; "
                                      r"create its folder or write to another path\.$") as err:
        write_text(missing, "x")
    assert err.value.errno == errno.ENOENT and ".tmp" not in str(err.value)
    with pytest.raises(OSError, match=r"cannot write '.*': Is a directory; name a file inside "
                                      r"it\.$"):
        write_text(tmp_path, "x")
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(OSError, match=r"cannot write '.*plain/out\.json': Not a directory; a "
                                      r"part of the path is a file, not a folder"):
        write_text(plain / "out.json", "x")
    assert _names(tmp_path) == ["plain"]


def test_os_error_keeps_the_reason_of_an_unknown_errno():
    exc = os_error("x", OSError(errno.EIO, "Input/output error"), "read")
    assert str(exc) == ("cannot read 'x': Input/output error; check the path and its "
                        "permissions.") and exc.errno == errno.EIO
    assert str(os_error("x", OSError(errno.EIO, "Input/output error"))).endswith(
        "check the path and that it can be written.")


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_a_path_that_cannot_be_read_gets_the_advice_of_reading(code):
    exc = OSError(code, os.strerror(code))
    assert str(os_error("x", exc, "read")).endswith(
        "; check its permissions and those of its folders.")
    assert str(os_error("x", exc)).endswith("; write to a folder you can write to.")


@pytest.mark.parametrize("creates", ["mkstemp", "mkdtemp"])
def test_a_signal_while_a_temporary_is_created_removes_it(creates, tmp_path, monkeypatch):
    """The signal is handled (here: an exception) once the temporary's clean-up is armed."""
    real = getattr(tempfile, creates)

    def signalled(*args, **kwargs):
        made = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # arrives just after the file is made
        time.sleep(0.01)
        return made

    def handler(signum, frame):
        raise RuntimeError("terminated")

    monkeypatch.setattr(tempfile, creates, signalled)
    old = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(RuntimeError, match="terminated"):
            if creates == "mkstemp":
                write_text(tmp_path / "out.json", "x")
            else:
                with atomic_files(tmp_path / "png", {"a.png": b"a"}):
                    pass
    finally:
        assert signal.signal(signal.SIGTERM, old) is handler  # the handler is back
    assert _names(tmp_path) == []


def test_atomic_files_moves_every_file_in_and_keeps_the_others(tmp_path):
    folder = tmp_path / "png"
    folder.mkdir()
    (folder / "mine.txt").write_text("user")
    (folder / "a.png").write_bytes(b"old a")
    with atomic_files(folder, {"a.png": b"new a", "b.png": b"new b"}):
        staged = [n for n in _names(folder) if n.endswith(".tmp")]
        assert len(staged) == 1 and staged[0].startswith(".png.")  # one hidden folder
        assert (folder / "a.png").read_bytes() == b"old a"  # nothing moved in yet
    assert _names(folder) == ["a.png", "b.png", "mine.txt"]
    assert [(folder / n).read_bytes() for n in ("a.png", "b.png", "mine.txt")] == [
        b"new a", b"new b", b"user"]


@pytest.mark.parametrize("after_commit", [False, True])
def test_atomic_files_puts_the_folder_back_on_a_failure(after_commit, tmp_path):
    folder = tmp_path / "png"
    folder.mkdir()
    (folder / "mine.txt").write_text("user")
    (folder / "a.png").write_bytes(b"old a")
    with pytest.raises(RuntimeError, match="later"), \
            atomic_files(folder, {"a.png": b"new a", "b.png": b"new b"}) as commit:
        if after_commit:
            commit()
            assert (folder / "a.png").read_bytes() == b"new a"
        raise RuntimeError("later")
    assert _names(folder) == ["a.png", "mine.txt"]
    assert (folder / "a.png").read_bytes() == b"old a"


def test_atomic_files_removes_the_folders_it_created_on_a_failure(tmp_path):
    folder = tmp_path / "new" / "png"
    with pytest.raises(RuntimeError, match="later"), atomic_files(folder, {"a.png": b"a"}) \
            as commit:
        commit()
        raise RuntimeError("later")
    assert _names(tmp_path) == []
    with atomic_files(folder, {"a.png": b"a"}):
        pass
    assert _names(folder) == ["a.png"]


def test_atomic_files_refuses_bad_names_and_a_file_in_place_of_the_folder(tmp_path):
    with pytest.raises(ValueError, match=r"^files must be plain file names; got '\.\./x'\.$"):
        with atomic_files(tmp_path, {"../x": b""}):
            pass
    plain = tmp_path / "plain"
    plain.write_text("user")
    with pytest.raises(OSError, match=r"^cannot create the folder '.*plain': File exists; a "
                                      r"file of that name is in the way"):
        with atomic_files(plain, {"a.png": b""}):
            pass
    (tmp_path / "png" / "a.png").mkdir(parents=True)
    with pytest.raises(OSError, match=r"^cannot write '.*a\.png': Is a directory"):
        with atomic_files(tmp_path / "png", {"a.png": b"", "b.png": b""}):
            pass
    assert _names(tmp_path) == ["plain", "png"] and _names(tmp_path / "png") == ["a.png"]
    assert plain.read_text() == "user"


def _signal_on_replace(monkeypatch, sent_when) -> list[str]:
    """Make ``os.replace`` send SIGTERM to this process just after the move whose target's
    name ``sent_when`` accepts; return the list of targets moved so far."""
    from abstain._core import files

    real = os.replace
    seen: list[str] = []

    def replace(src, dst):
        real(src, dst)
        seen.append(Path(dst).name)
        if sent_when(Path(dst).name):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)

    monkeypatch.setattr(files.os, "replace", replace)
    return seen


@pytest.mark.parametrize("at", ["page", "first file", "last file"])
def test_a_signal_while_the_page_and_files_land_lands_after_both(at, tmp_path, monkeypatch):
    """Before, a signal just after the page's rename took the files back and left the page."""
    folder = tmp_path / "png"
    folder.mkdir()
    (folder / "mine.txt").write_text("user")
    (folder / "a.png").write_bytes(b"old a")
    page = tmp_path / "r.html"
    when = {"page": lambda n: n == "r.html", "first file": lambda n: n == "a.png",
            "last file": lambda n: n == "b.png"}[at]
    seen = _signal_on_replace(monkeypatch, when)

    def handler(signum, frame):
        raise RuntimeError("terminated")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(RuntimeError, match="terminated"):
            with atomic_path_and_files(page, folder, {"a.png": b"new a", "b.png": b"new b"}) \
                    as tmp:
                Path(tmp).write_text("page")
    finally:
        assert signal.signal(signal.SIGTERM, old) is handler
    assert "r.html" in seen  # the signal was sent inside the step, and handled after it
    assert page.read_text() == "page" and _names(tmp_path) == ["png", "r.html"]
    assert _names(folder) == ["a.png", "b.png", "mine.txt"]
    assert (folder / "a.png").read_bytes() == b"new a"


@pytest.mark.parametrize("fails", ["page", "file"])
def test_a_failure_of_the_page_or_a_file_writes_neither(fails, tmp_path):
    folder = tmp_path / "png"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"old a")
    page = tmp_path / "r.html"
    page.write_text("old page")
    if fails == "file":
        (folder / "b.png").mkdir()  # a folder holds the name of a file
        with pytest.raises(OSError, match=r"^cannot write '.*b\.png': Is a directory"):
            with atomic_path_and_files(page, folder, {"a.png": b"new", "b.png": b"new"}) \
                    as tmp:
                Path(tmp).write_text("page")
    else:
        with pytest.raises(RuntimeError, match="later"):
            with atomic_path_and_files(page, folder, {"a.png": b"new", "b.png": b"new"}) \
                    as tmp:
                Path(tmp).write_text("page")
                raise RuntimeError("later")
    assert page.read_text() == "old page" and (folder / "a.png").read_bytes() == b"old a"
    assert _names(tmp_path) == ["png", "r.html"]
    assert _names(folder) == (["a.png", "b.png"] if fails == "file" else ["a.png"])


@posix_only
def test_a_page_written_in_place_is_written_before_the_files_move_in(tmp_path):
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    folder = tmp_path / "png"
    with atomic_path_and_files(fifo, folder, {"a.png": b"a"}) as tmp:
        Path(tmp).write_text("page")
    reader.join(10)
    assert got == [b"page"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _names(folder) == ["a.png"]


def test_a_replaced_file_keeps_its_permissions_and_a_new_one_gets_the_umasks(tmp_path):
    from abstain._core.files import write_text

    private = tmp_path / "private.json"
    private.write_text("old")
    os.chmod(private, 0o600)
    write_text(private, "new")
    assert private.read_text() == "new"
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.json"
        write_text(fresh, "x")
        assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o644
    finally:
        os.umask(umask)


def test_the_files_of_a_folder_keep_their_permissions_too(tmp_path):
    """``atomic_files`` (a report's PNGs) gave a replaced file the umask's permissions: a
    private 0600 figure became readable by all."""
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "roc.png").write_bytes(b"old")
    os.chmod(figs / "roc.png", 0o600)
    umask = os.umask(0o022)
    try:
        with atomic_files(figs, {"roc.png": b"new", "pr.png": b"x"}) as commit:
            commit()
    finally:
        os.umask(umask)
    assert (figs / "roc.png").read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(figs / "roc.png").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(figs / "pr.png").st_mode) == 0o644


def test_a_read_only_file_is_not_replaced(tmp_path, monkeypatch):
    """A rename needs only the folder's permission, so a file its owner made read-only was
    replaced without a word; it is refused, as ``cp`` and a shell's ``>`` refuse it (the
    superuser, for whom every file is writable, replaces it as they do)."""
    kept = tmp_path / "kept.csv"
    kept.write_text("the user's")
    os.chmod(kept, 0o444)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: not (
        mode & os.W_OK and not stat.S_IMODE(os.stat(p).st_mode) & 0o222))
    with pytest.raises(OSError, match=r"^cannot write '.*kept.csv': the file is read-only; "
                       r"make it writable \(chmod u\+w\) or write to another path\.$"):
        with atomic_path(kept) as tmp:
            Path(tmp).write_text("new")
    with pytest.raises(OSError, match="the file is read-only"), atomic_files(
            tmp_path, {"kept.csv": b"new"}) as commit:
        commit()
    assert kept.read_text() == "the user's" and sorted(os.listdir(tmp_path)) == ["kept.csv"]


def test_a_temporary_of_a_long_name_stays_within_a_file_name(tmp_path):
    """The temporary is named after the output with 15 more bytes: an output (or folder)
    name of 242 to 255 bytes, which the system takes, was refused as too long. The name is
    cut a character at a time (a 4-byte character at the cut stays whole or goes)."""
    for name in ("o" * 251 + ".csv", "a" * 238 + "\U0001F600" * 3 + ".csv"):
        write_text(tmp_path / name, "x")
        assert os.listdir(tmp_path) == [name]
        os.unlink(tmp_path / name)
    name = "o" * 251 + ".csv"
    folder = tmp_path / ("f" * 255)
    with atomic_files(folder, {"a.png": b"x"}) as commit:
        commit()
    assert os.listdir(folder) == ["a.png"]


@posix_only
def test_another_user_s_file_is_refused_and_a_read_only_disk_left_to_the_write(tmp_path,
                                                                              monkeypatch):
    """A file this user may not write for another reason than its mode (another user's 0644
    file in a shared folder) is refused too; on a read-only disk the write itself fails,
    with the system's reason (it is not said to be the file's permissions)."""
    out = tmp_path / "out.csv"
    out.write_text("old")
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False)
    with pytest.raises(OSError, match=r"^cannot write '.*out.csv': you may not write this "
                       r"file \(its permissions, or another user's file\) or write to another"):
        write_text(out, "new")
    real = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda p: type("V", (), {
        "f_flag": real(p).f_flag | os.ST_RDONLY})())
    write_text(out, "new")  # the disk is writable after all: the write is not refused first
    assert out.read_text() == "new"


@posix_only
def test_an_ignored_signal_held_back_never_hides_another():
    """Under nohup SIGHUP is ignored: noted first while signals were held back, it was the
    one handed on (to be ignored), and a SIGTERM noted after it was lost."""
    from abstain._core.files import _signals_deferred

    class Stop(Exception):
        pass

    def stop(signum, frame):
        raise Stop

    before = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM)}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(Stop), _signals_deferred():
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        for s, h in before.items():
            signal.signal(s, h)
