"""Independent pieces of work on several CPU cores: forked worker processes that return
their results in order (the bootstrap's resamples, the report's figures).

A worker is a fork of the calling process, so the work (a closure over arrays, figures'
builders) is inherited, not pickled; only the items' results travel back. Where ``fork``
is not offered (Windows) or not safe for the system's libraries (macOS), and inside a
worker, the work runs in the calling process. The results do not depend on the number of
workers: each item is computed by the same function on the same inputs.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .validation import plain

T = TypeVar("T")

#: Set in a worker: work it asks for runs in it, never in a pool of its own.
_IN_WORKER = False
#: The work of the pool being started, inherited by its forked workers; set and read
#: under ``_FORKING``, so that calls from several threads each fork with their own.
_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None
_FORKING = threading.Lock()
# a process forked while another thread holds it (a fork of the user's own) gets a free one
os.register_at_fork(after_in_child=lambda: globals().update(_FORKING=threading.Lock()))


#: glibc's ``mallopt`` parameters (malloc.h) and the values :func:`keep_freed_memory` sets:
#: blocks up to 32 MiB (glibc's largest heap threshold) come from the heap, and up to 256 MiB
#: of freed heap stays with the process.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
KEEP_MMAP_THRESHOLD = 32 << 20
KEEP_TRIM_THRESHOLD = 256 << 20


def _glibc() -> bool:
    """Whether this process runs on glibc."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # no confstr, or no such name here
        return False


def keep_freed_memory() -> bool:
    """Let this process reuse the memory it frees instead of handing it back to the system;
    whether it was set.

    A bootstrap resample of a score pair allocates and frees about 150 work arrays of a few
    MB. With glibc's defaults many of them are fresh mappings of zeroed pages, and the
    kernel's page faults then cost up to a third of the time (``abstain report
    --bootstrap 200`` of three pairs on a 2-core AMD EPYC: 18.7 s without this setting,
    13.4 s with it; 35.3 s and 25.6 s on the 2-core Intel Xeon of
    ``benchmarks/results/bench_bootstrap.md``). This sets glibc's
    ``M_MMAP_THRESHOLD`` (32 MiB) and ``M_TRIM_THRESHOLD`` (256 MiB) so that such arrays
    come from, and go back to, the process's own heap. It changes no result, only where
    memory comes from, for the whole process and for good: the ``abstain`` command calls it
    for its own process and each forked worker calls it for itself, never a library call in
    the caller's process. It does nothing (False) off glibc, and where the environment
    already sets ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` (the user's
    choice stands).
    """
    if not _glibc() or any(
            k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD))


def usable_cpus() -> int:
    """The CPU cores this process may run on (its affinity where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not offered on macOS and Windows
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether work may run in forked workers here."""
    return (not _IN_WORKER and sys.platform not in ("win32", "darwin", "emscripten")
            and "fork" in multiprocessing.get_all_start_methods())


def check_jobs(n_jobs: Any, name: str = "n_jobs") -> int | None:
    """``n_jobs`` as given (None, -1 or an int >= 1), or ``ValueError`` naming ``name``."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or (n_jobs < 1
                                                                  and n_jobs != -1):
        raise ValueError(f"{name} must be None, -1 (every usable core) or an integer >= 1; "
                         f"got {plain(n_jobs)}.")
    return int(n_jobs)


def resolve_jobs(n_jobs: int | None, n_items: int) -> int:
    """How many workers run ``n_items`` pieces of work for ``n_jobs`` (None: 1, -1: every
    usable core); 1 means in the calling process."""
    jobs = 1 if n_jobs is None else usable_cpus() if n_jobs == -1 else n_jobs
    if not can_fork():
        return 1
    return max(1, min(jobs, n_items))


#: Signals held back while the workers are forked: a handler that raises (the command
#: line's) must not run inside the fork's own handlers, where Python would drop its error.
_HELD = {signal.SIGINT, signal.SIGTERM}


def _init(mask: set[int]) -> None:
    """A worker: nested work runs in it; it leaves an interrupt to the calling process (which
    stops the pool) and ends quietly when stopped, whatever handlers it inherited."""
    global _IN_WORKER
    _IN_WORKER = True
    keep_freed_memory()  # this process is ours, and it ends with the work
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


class _Failed:
    """A worker's exception, sent back as one that the calling process can rebuild."""

    def __init__(self, exc: Exception) -> None:
        try:  # an exception whose class takes other arguments cannot be rebuilt there, and
            # the pool's result thread would die on it and leave the caller waiting forever
            pickle.loads(pickle.dumps(exc))
            self.exc: Exception = exc
        except Exception:
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.exc = RuntimeError(f"a worker process failed: {text}")


def _run(i: int) -> Any:
    assert _WORK is not None
    func, items = _WORK
    try:
        return func(items[i])
    except Exception as exc:
        return _Failed(exc)


def ordered_map(func: Callable[[Any], T], items: Sequence[Any], n_jobs: int | None, *,
                done: Callable[[int], None] | None = None, chunksize: int = 1) -> list[T]:
    """``[func(item) for item in items]``, on up to ``n_jobs`` forked workers
    (:func:`resolve_jobs`); ``done(k)`` is called in this process after the ``k``-th result
    (in order) has arrived. An exception in a worker is raised here."""
    global _WORK
    jobs = resolve_jobs(n_jobs, len(items))
    out: list[T] = []
    if jobs == 1:
        for item in items:
            out.append(func(item))
            if done is not None:
                done(len(out))
        return out
    with _FORKING:  # another thread's call waits until these workers are forked
        _WORK = (func, items)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            pool = multiprocessing.get_context("fork").Pool(jobs, initializer=_init,
                                                            initargs=(mask,))
        finally:
            _WORK = None  # the workers hold their copy
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a held signal arrives now
    try:
        for result in pool.imap(_run, range(len(items)), chunksize=chunksize):
            if isinstance(result, _Failed):
                raise result.exc
            out.append(result)
            if done is not None:
                done(len(out))
        pool.close()  # every result is in: the workers exit on their own
    except BaseException:  # an error or an interrupt here: stop the workers now
        pool.terminate()
        raise
    finally:
        pool.join()
    return out
