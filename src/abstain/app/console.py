"""The ``abstain`` console command and its signals: an interrupt at any moment ends it in
one line, with every temporary file removed.

The console script and ``python -m abstain`` enter at :func:`console`, which installs the
handlers before the library (NumPy, SciPy) is imported. SIGINT (Ctrl-C), SIGTERM
(``kill``) and SIGHUP (a closed terminal or SSH session) raise :class:`Interrupted`, so that
the ``finally`` clauses of the file writers remove their temporaries; a second signal
during that clean-up is ignored. The command then prints ``abstain <command>:
interrupted`` on standard error and exits with 128 + the signal number: 130 for SIGINT,
143 for SIGTERM, 129 for SIGHUP. A signal that the command was
started with ignored (``nohup``, a background job of a script) stays ignored.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["Interrupted", "console", "handle_signals", "interrupted", "pending",
           "reraise_interrupt"]

#: The signals turned into :class:`Interrupted`: Ctrl-C, ``kill``, and the hang-up of a
#: closed terminal or SSH session (where the system has it).
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))

_received: list[int] = []


class Interrupted(BaseException):
    """Raised in the main thread by SIGINT, SIGTERM or SIGHUP while the command runs.

    A ``BaseException``, as ``KeyboardInterrupt`` is: only clean-up code sees it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"interrupted by {signal.Signals(self.signum).name}"


def _handler(signum: int, frame: Any) -> None:
    if _received:  # a second signal while the first one's clean-up runs
        return
    _received.append(signum)
    raise Interrupted(signum)


def pending() -> Interrupted | None:
    """The interrupt of the first signal that arrived while the command ran, if any.

    An error that follows an interrupt is its consequence, not the command's: an interrupt
    inside an extension module's import comes back as an ``ImportError`` (NumPy's C API
    turns any failure of its import into one), which would otherwise read as a missing
    package, or inside a class body as a ``RuntimeError`` (``Error calling __set_name__``,
    matplotlib's ticker module)."""
    return Interrupted(_received[0]) if _received else None


def reraise_interrupt(exc: BaseException) -> None:
    """Raise :func:`pending`'s interrupt from ``exc`` when a signal arrived while the
    command ran (for the handlers that turn an error into a message)."""
    if (intr := pending()) is not None:
        raise intr from exc


def handle_signals() -> dict[int, Any] | None:
    """Install the handlers; return the previous ones (None outside the main thread, where
    Python runs no signal handler).

    A signal ignored when the command starts (SIGINT in a background job of a script,
    ``nohup``) stays ignored, as the shell asked.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    _received.clear()
    return {s: signal.signal(s, _handler) for s in SIGNALS
            if signal.getsignal(s) is not signal.SIG_IGN}


def restore_signals(previous: dict[int, Any] | None) -> None:
    """Put back the handlers that :func:`handle_signals` replaced."""
    for s, old in (previous or {}).items():
        signal.signal(s, old if old is not None else signal.SIG_DFL)


def interrupted(exc: BaseException, argv: Sequence[str]) -> int:
    """Print the one line of an interrupted command; return its exit code (128 + signal)."""
    signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
    words = [a for a in argv if not a.startswith("-")]
    command = words[0] if words and words[0] in ("evaluate", "fit", "apply", "report",
                                                 "demo") else ""
    print(f"abstain{' ' + command if command else ''}: interrupted", file=sys.stderr)
    return 128 + int(signum)


def _shown(exc: UnicodeError) -> tuple[str | bytes, int]:
    """The encoding error handler of the command's messages: the bytes of a file name that
    are no text (the surrogates of ``os.fsdecode``) are written back as they were; another
    character that the output's encoding lacks is escaped (``\\u20ac``)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    c = exc.object[exc.start]  # one character at a time: the encoder asks again for more
    if "\udc80" <= c <= "\udcff":
        return bytes([ord(c) - 0xDC00]), exc.start + 1
    return c.encode("ascii", "backslashreplace").decode("ascii"), exc.start + 1  # its code


codecs.register_error("abstain.shown", _shown)


@contextlib.contextmanager
def shown_streams() -> Iterator[None]:
    """Standard output and error that write what their encoding cannot hold as
    :func:`_shown` says, instead of failing (a path with a Latin-1 byte under
    ``en_US.UTF-8``, a column named with a euro sign in a Latin-1 terminal: the command
    stopped after its work, and a rule file it had written came with exit status 1); their
    error handlers are put back when the block ends."""
    streams = []
    for stream in dict.fromkeys((sys.stdout, sys.stderr)):  # the same stream once
        try:
            old = stream.errors
            stream.reconfigure(errors="abstain.shown")  # type: ignore[union-attr]
        except (AttributeError, ValueError, io.UnsupportedOperation):
            continue  # not a text stream that can be reconfigured: left as it is
        streams.append((stream, old))
    try:
        yield
    finally:
        for stream, old in reversed(streams):
            with contextlib.suppress(ValueError, OSError):  # a closed pipe flushed
                stream.reconfigure(errors=old)  # type: ignore[union-attr]


def console() -> None:
    """The ``abstain`` console script: run the command line and exit with its code. Its
    process reuses the memory it frees (:func:`~abstain._core.parallel.keep_freed_memory`)."""
    handled = handle_signals()
    argv = sys.argv[1:]
    try:
        from .._core.parallel import keep_freed_memory
        from .cli import main

        keep_freed_memory()

        code = main(argv)
        sys.stdout.flush()  # here, so that a closed pipe is one of the cases below
    except (Interrupted, KeyboardInterrupt) as exc:
        code = interrupted(exc, argv)
    except BrokenPipeError:  # the reader of standard output left (`abstain ... | head -1`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        code = 128 + int(signal.SIGPIPE)
    finally:  # exiting: a signal now ends the process at once, without a traceback
        for s in handled or {}:
            signal.signal(s, signal.SIG_DFL)
    sys.exit(code)
