"""Writing output files so that a failure never leaves a half-written, lost or stray file.

- A new path or a regular file is written **atomically**: the content goes to a temporary
  file in the target's folder, renamed over the target once complete. A symbolic link to a
  regular file is followed: its target is replaced and the link kept.
- A path that exists and is not a regular file (a FIFO, a character device such as
  ``/dev/null``, ``/dev/stdout`` on a pipe or a terminal), or that is the file the process's
  standard output or error is open on, is **written in place**: the content is written to
  a temporary file first and then copied into the target, so that a failure before the end
  writes nothing there, and the device node or pipe is never replaced by a file.
- Several files into one folder (:func:`atomic_files`) are staged in a temporary folder
  inside it and moved in together; on a failure the files moved in are removed, the files
  they replaced are put back, and a folder created for them is removed when empty. Files
  of the folder that the run did not write are never touched. A file and a folder's files
  land together through :func:`atomic_path_and_files`.

Temporaries are created and removed with SIGINT, SIGTERM and SIGHUP held back until their
clean-up is armed, so a signal turned into an exception (as the command line does) at
any moment removes every temporary.
Every ``OSError`` names the path the user gave and says what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = ["atomic_path", "atomic_files", "atomic_path_and_files", "write_text",
           "os_error", "save_npz"]

_ADVICE = {
    errno.ENOENT: "create its folder or write to another path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; correct the path",
    errno.EISDIR: "name a file inside it",
    errno.EACCES: "write to a folder you can write to",
    errno.EPERM: "write to a folder you can write to",
    errno.EROFS: "write to another disk",
    errno.ENOSPC: "free some space or write to another disk",
    errno.EDQUOT: "free some space or write to another disk",
    errno.EEXIST: "a file of that name is in the way; move it or choose another path",
    errno.EBUSY: "it is in use (a mount point?); write to another path",
    errno.ENAMETOOLONG: "choose a shorter path",
    errno.EPIPE: "its reader closed it before the end; keep the reader open until the "
                 "command ends",
    errno.ELOOP: "it is a loop of symbolic links; correct the path",
}
#: The advice for a path that is read (or used), where it differs from writing's.
_READ_ADVICE = {
    errno.ENOENT: "check the path",
    errno.EACCES: "check its permissions and those of its folders",
    errno.EPERM: "check its permissions and those of its folders",
}


def os_error(path: str | os.PathLike[str], exc: OSError, doing: str = "write") -> OSError:
    """An ``OSError`` whose message names ``path``, gives the system's reason and says what
    to do (``errno`` kept).

    Examples
    --------
    >>> import errno
    >>> from abstain._core.files import os_error
    >>> print(os_error("/dev/full", OSError(errno.ENOSPC, "No space left on device")))
    cannot write '/dev/full': No space left on device; free some space or write to another disk.
    """
    reason = exc.strerror or str(exc)
    code = exc.errno or 0
    if doing == "write":
        advice = _ADVICE.get(code, "check the path and that it can be written")
    else:  # reading or using: the advice of writing where it is not about writing
        advice = _READ_ADVICE.get(code) or _ADVICE.get(code, "check the path and its "
                                                             "permissions")
    out = OSError(f"cannot {doing} {os.fspath(path)!r}: {reason}; {advice}.")
    out.errno = exc.errno
    return out


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while a temporary is created and recorded, or
    removed.

    Python runs signal handlers in the main thread only, between bytecodes; blocking the
    signals there would not hold them back when another thread (a BLAS pool) receives
    them. So the handlers are swapped for one that notes the signal, and the first signal
    noted is handed to the previous handler once they are back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # no handler runs in this thread: nothing to hold back
        return
    noted: list[int] = []

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)

    previous: dict[int, Any] = {}
    try:
        for s in _HELD:  # one ignored (SIGHUP under nohup) stays so, and never hides another
            if signal.getsignal(s) is not signal.SIG_IGN:
                previous[s] = signal.signal(s, note)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if noted:
            _deliver(noted[0], previous[noted[0]])


#: The signals that :func:`_signals_deferred` holds back (those of the command line's
#: interrupt, ``app.console.SIGNALS``).
_HELD = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def _deliver(signum: int, handler: Any) -> None:
    """Hand a signal noted while held back to its handler (the default: raise it again)."""
    if callable(handler):
        handler(signum, None)
    elif handler in (signal.SIG_DFL, None):
        signal.raise_signal(signum)


def _checked(path: str | os.PathLike[str]) -> Path:
    text = os.fspath(path)
    if not isinstance(text, str) or text == "":
        raise ValueError(f"path must name a file to write; got {text!r}.")
    return Path(text)


def _in_place_fd(p: Path) -> int | None:
    """The standard stream (1 or 2) that ``p`` is open on, -1 for another non-regular file
    (written in place), or None for a regular file or a new path (written atomically)."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(p, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise os_error(p, OSError(errno.EISDIR, os.strerror(errno.EISDIR)))
    for fd in (1, 2):
        try:
            fst = os.fstat(fd)
        except OSError:
            continue
        if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
            return fd
    return None if stat.S_ISREG(st.st_mode) else -1


def _in_place_fd_or_none(path: str | os.PathLike[str]) -> int | None:
    """:func:`_in_place_fd` of ``path``, None also where ``path`` cannot be checked (the
    write itself then gives the error)."""
    try:
        return _in_place_fd(_checked(path))
    except (OSError, ValueError):
        return None


def standard_stream(path: str | os.PathLike[str]) -> int | None:
    """1 where writing ``path`` writes to this process's standard output (``/dev/stdout``,
    ``/proc/self/fd/1``, or the file or pipe that standard output is open on), 2 where to
    its standard error, else None."""
    fd = _in_place_fd_or_none(path)
    return fd if fd in (1, 2) else None


def writes_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether :func:`atomic_path` writes ``path`` in place: a FIFO, a device, or the file
    that standard output or error is open on (not a regular file or a new path)."""
    return _in_place_fd_or_none(path) is not None


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temporary path to write; on success its content becomes ``path``.

    A regular file or a new path is replaced atomically (a symbolic link is followed);
    a FIFO, a device or the file that standard output or error is open on gets the
    content written in place once it is complete. On an exception, the temporary file
    is removed and ``path`` is left as it was. A new file gets the permissions of a newly
    created file (the process umask); a file replaced keeps its own (a private 0600 output
    stays private).

    Raises
    ------
    ValueError
        When ``path`` is empty.
    OSError
        When ``path`` cannot be written; the message names it and says what to do.
    """
    with _staged(path) as (tmp, publish, _):
        yield tmp
        publish()


@contextlib.contextmanager
def _staged(path: str | os.PathLike[str]) -> Iterator[tuple[str, Callable[[], None], bool]]:
    """The temporary of :func:`atomic_path`, the function that makes it ``path``, and
    whether ``path`` is written in place; the temporary is removed on leaving."""
    p = _checked(path)
    fd_target = _in_place_fd(p)
    target = p
    if fd_target is None and p.is_symlink():
        target = Path(os.path.realpath(p))
    if fd_target is None:
        _check_writable(target, p)
    tmp: str | None = None
    try:
        try:
            with _signals_deferred():
                if fd_target is None:
                    fd, tmp = tempfile.mkstemp(prefix=f".{_short(target.name)}.",
                                               suffix=".tmp", dir=target.parent)
                else:
                    fd, tmp = tempfile.mkstemp(prefix="abstain-", suffix=".tmp")
                os.close(fd)
        except OSError as exc:
            raise os_error(p, exc) from None
        written = tmp

        def publish() -> None:
            try:
                if fd_target is None:
                    os.chmod(written, _mode_of(target))
                    os.replace(written, target)
                else:
                    _copy_into(written, p, fd_target)
            except OSError as exc:
                raise os_error(p, exc) from None

        yield tmp, publish, fd_target is not None
    finally:
        with _signals_deferred():
            if tmp is not None and os.path.lexists(tmp):
                os.unlink(tmp)


def _check_writable(target: Path, shown: Path) -> None:
    """Refuse to replace a regular file that this user may not write (made read-only with
    ``chmod a-w``, or another user's): a rename needs only the folder's permission, so it
    would be lost without a word. A file on a read-only disk is left to the write, whose
    error gives the system's reason."""
    try:
        st = os.lstat(target)
        if not stat.S_ISREG(st.st_mode) or os.access(target, os.W_OK) or (
                os.statvfs(target.parent).f_flag & os.ST_RDONLY):
            return
    except (OSError, AttributeError):  # no statvfs (Windows): the write decides
        return
    why = ("the file is read-only; make it writable (chmod u+w)"
           if st.st_uid == os.geteuid() and not st.st_mode & stat.S_IWUSR
           else "you may not write this file (its permissions, or another user's file)")
    out = OSError(f"cannot write {os.fspath(shown)!r}: {why} or write to another path.")
    out.errno = errno.EACCES
    raise out


def _short(name: str, room: int = 240) -> str:
    """``name`` cut, a character at a time, to at most ``room`` bytes, so that a temporary
    named after it (15 bytes more) stays within the 255 bytes of a file name."""
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return name


def _mode_of(target: Path) -> int:
    """The permissions the file written to ``target`` gets: those of the regular file it
    replaces, else those of a newly created file."""
    try:
        st = os.stat(target)
    except OSError:
        return 0o666 & ~_umask()
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o666 & ~_umask()


def _copy_into(tmp: str, p: Path, fd: int) -> None:
    """Copy the file ``tmp`` into ``p`` in place: through the open standard stream ``fd``
    (1 or 2, after flushing it), else by opening ``p`` (a FIFO or a device)."""
    if fd in (1, 2):
        stream = sys.stdout if fd == 1 else sys.stderr
        if stream is not None:
            stream.flush()
        out = os.fdopen(os.dup(fd), "wb")
    else:
        out = open(p, "wb")  # noqa: SIM115 - closed below
    with out, open(tmp, "rb") as src:
        shutil.copyfileobj(src, out)
        out.flush()


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)


@contextlib.contextmanager
def atomic_files(folder: str | os.PathLike[str],
                 files: Mapping[str, bytes]) -> Iterator[Callable[..., None]]:
    """Write several files into ``folder`` together; yield the function that moves them in.

    On entry, ``folder`` is created if missing and the files are written into a temporary
    folder inside it. Calling the yielded ``commit()`` (or leaving the block normally)
    moves them in, each over any file of its name; an exception in the block, after or
    before ``commit()``, removes every file moved in, puts back the files they replaced
    and removes ``folder`` if this call created it and it is empty. Other files of
    ``folder`` are never touched. ``commit(then)`` also calls ``then()`` in the same step
    (SIGINT, SIGTERM and SIGHUP held back from the first move to its return): once it returns,
    nothing is taken back, so that the files and what ``then`` wrote land together.

    Parameters
    ----------
    folder : path
    files : mapping of str to bytes
        File name (no folder part) to content.

    Raises
    ------
    ValueError
        When a name is empty or has a folder part.
    OSError
        When a file cannot be written (a name held by a folder, a full disk); the message
        names it and says what to do.
    """
    base = _checked(folder)
    for name in files:
        if not name or Path(name).name != name or name in (".", ".."):
            raise ValueError(f"files must be plain file names; got {name!r}.")
    created: list[Path] = []  # folders this call made, innermost last
    stage: str | None = None
    moved: list[tuple[Path, Path | None]] = []  # (file moved in, backup of what it replaced)
    done = ok = False
    kept = False
    try:
        try:
            missing = [q for q in (base, *base.parents) if not os.path.lexists(q)]
            for q in reversed(missing):
                with _signals_deferred():
                    q.mkdir()
                    created.append(q)
        except OSError as exc:
            raise os_error(base, exc, "create the folder") from None
        if not base.is_dir():
            raise os_error(base, OSError(errno.EEXIST, os.strerror(errno.EEXIST)),
                           "create the folder")
        for name in files:
            dest = base / name
            if os.path.lexists(dest) and not (dest.is_symlink() or dest.is_file()):
                code = errno.EISDIR if dest.is_dir() else errno.EEXIST
                raise os_error(dest, OSError(code, os.strerror(code)))
            _check_writable(dest, dest)
        try:
            with _signals_deferred():
                stage = tempfile.mkdtemp(prefix=f".{_short(base.name or 'out')}.",
                                         suffix=".tmp", dir=base)
            os.mkdir(os.path.join(stage, "new"))
            os.mkdir(os.path.join(stage, "old"))
            for name, content in files.items():
                with _signals_deferred():
                    fd = os.open(os.path.join(stage, "new", name), os.O_WRONLY | os.O_CREAT |
                                 os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(content)
                # the permissions of the file it replaces, else the umask's
                os.chmod(os.path.join(stage, "new", name), _mode_of(base / name))
        except OSError as exc:
            raise os_error(base, exc) from None

        def commit(then: Callable[[], None] | None = None) -> None:
            nonlocal done, ok
            assert stage is not None
            with _signals_deferred():  # the moves and then() are one step for a signal
                for name in files if not done else ():
                    dest = base / name
                    try:
                        if os.path.lexists(dest):
                            backup = Path(stage, "old", name)
                            os.replace(dest, backup)
                            moved.append((dest, backup))
                        else:
                            moved.append((dest, None))
                        os.replace(os.path.join(stage, "new", name), dest)
                    except OSError as exc:
                        raise os_error(dest, exc) from None
                done = True
                if then is not None:
                    then()
                    ok = True  # sealed: nothing is taken back from here on

        yield commit
        commit()
        ok = True
    except BaseException:
        with _signals_deferred():
            if not ok:
                kept = _roll_back(moved)
        raise
    finally:
        with _signals_deferred():
            if stage is not None and not kept:  # never remove a file not put back
                shutil.rmtree(stage, ignore_errors=True)
            if not ok:
                for q in reversed(created):
                    with contextlib.suppress(OSError):
                        q.rmdir()  # only if empty


@contextlib.contextmanager
def atomic_path_and_files(path: str | os.PathLike[str], folder: str | os.PathLike[str],
                          files: Mapping[str, bytes]) -> Iterator[str]:
    """:func:`atomic_path` for ``path`` and :func:`atomic_files` for ``folder``, all or
    nothing: yield the temporary path to write; on success ``path`` and the files land
    together, on an exception (an interrupt included) neither does.

    A regular ``path`` is renamed in the same step as the files are moved in, with SIGINT,
    SIGTERM and SIGHUP held back, so a signal lands before both or after both. A ``path``
    written in place (a FIFO, a device, standard output) cannot be taken back once
    written: it is written first, and the files are moved in once it is complete.
    """
    with atomic_files(folder, files) as commit, _staged(path) as (tmp, publish, in_place):
        yield tmp
        if in_place:
            publish()
            commit(lambda: None)
        else:
            commit(publish)


def _roll_back(moved: list[tuple[Path, Path | None]]) -> bool:
    """Undo the moves of :func:`atomic_files`: remove each file moved in and put back the
    file it replaced; return whether a replaced file could not be put back."""
    kept = False
    for dest, backup in reversed(moved):
        try:
            if backup is None:
                if os.path.lexists(dest):
                    os.unlink(dest)  # a file this run wrote
            elif os.path.lexists(backup):
                os.replace(backup, dest)
        except OSError:
            kept = kept or backup is not None
    return kept


def save_npz(file: str | os.PathLike[str] | BinaryIO, arrays: Mapping[str, Any]) -> None:
    """Write ``arrays`` to ``file`` (a path or a binary file) as ``numpy.savez`` does (a
    zip of ``NAME.npy`` members, no pickle), for any names: ``numpy.savez`` takes its own
    keywords (``file``, ``allow_pickle``) out of the names of the arrays."""
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
