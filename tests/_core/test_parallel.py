"""abstain._core.parallel: forked workers return the same results, in order, as the calling
process; errors travel back; a worker never starts workers of its own."""

from __future__ import annotations

import os

import pytest

from abstain._core import parallel
from abstain._core.parallel import can_fork, check_jobs, ordered_map, resolve_jobs

forks = pytest.mark.skipif(not parallel.can_fork(), reason="this system runs work in the "
                           "calling process (no safe fork)")


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@forks
def test_workers_return_the_results_in_order_and_progress_is_called_here() -> None:
    items = list(range(23))
    seen: list[tuple[int, int]] = []
    got = ordered_map(_square_and_pid, items, 2,
                      done=lambda k: seen.append((k, os.getpid())))
    assert [v for v, _ in got] == [x * x for x in items]
    assert {pid for _, pid in got} - {os.getpid()}  # computed elsewhere
    assert seen == [(k, os.getpid()) for k in range(1, 24)]
    assert ordered_map(_square_and_pid, items, None)[5] == (25, os.getpid())


@forks
def test_an_error_in_a_worker_is_raised_here() -> None:
    def bad(x: int) -> int:
        if x == 3:
            raise ValueError("row 3 is bad")
        return x

    with pytest.raises(ValueError, match="row 3 is bad"):
        ordered_map(bad, list(range(6)), 2)
    assert parallel._WORK is None  # the next call may run
    assert ordered_map(lambda x: x + 1, [1, 2], 2) == [2, 3]


@forks
def test_calls_from_several_threads_each_run_their_own_work() -> None:
    # the work a pool's workers inherit is set while they are forked: threads starting
    # pools at once must neither refuse each other nor run each other's function
    from concurrent.futures import ThreadPoolExecutor

    def job(c: int) -> list[int]:
        return ordered_map(lambda x: c * 100 + x, list(range(4)), 2)

    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(job, range(8)))
    assert got == [[c * 100 + x for x in range(4)] for c in range(8)]
    assert parallel._WORK is None


@forks
def test_a_process_forked_while_a_pool_is_being_started_gets_a_free_lock() -> None:
    # the lock held while workers are forked was inherited held by a process that another
    # thread forked at that moment: its own parallel work then hung for ever
    with parallel._FORKING:
        pid = os.fork()
        if pid == 0:  # the child: its lock is free, and its work runs
            ok = parallel._FORKING.acquire(blocking=False)
            if ok:
                parallel._FORKING.release()
            os._exit(0 if ok and ordered_map(abs, [-1, 2], 2) == [1, 2] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@forks
def test_a_worker_runs_nested_work_itself() -> None:
    assert ordered_map(lambda _: resolve_jobs(4, 10), [0, 1], 2) == [1, 1]
    assert resolve_jobs(4, 10) == 4


def test_jobs_resolve_to_the_work_at_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_jobs(None, 100) == 1
    assert resolve_jobs(1, 100) == 1
    if parallel.can_fork():
        assert resolve_jobs(8, 3) == 3
        assert resolve_jobs(-1, 10**6) == parallel.usable_cpus()
    monkeypatch.setattr(parallel, "can_fork", lambda: False)
    assert resolve_jobs(8, 100) == 1
    assert ordered_map(_square_and_pid, [2, 3], 8) == [(4, os.getpid()), (9, os.getpid())]


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_jobs_are_refused_naming_the_argument(bad: object) -> None:
    with pytest.raises(ValueError, match=r"--jobs must be None, -1 \(every usable core\) or an "
                       r"integer >= 1; got"):
        check_jobs(bad, "--jobs")
    assert check_jobs(None) is None and check_jobs(-1) == -1 and check_jobs(3) == 3


def test_freed_memory_is_kept_on_glibc_unless_the_environment_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    glibc = parallel._glibc()
    assert parallel.keep_freed_memory() is glibc  # the settings are taken where glibc runs
    # the user's own setting stands; another C library is left alone
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")
    assert parallel.keep_freed_memory() is False
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.setattr(parallel, "_glibc", lambda: False)
    assert parallel.keep_freed_memory() is False


@forks
def test_each_worker_keeps_its_freed_memory_and_the_caller_is_left_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kept: list[int] = []
    monkeypatch.setattr(parallel, "keep_freed_memory", lambda: kept.append(os.getpid()))
    # each worker calls it in its initializer (its list is its own copy) ...
    got = ordered_map(lambda _: list(kept), [0, 1, 2], 2)
    assert all(len(k) == 1 and k[0] != os.getpid() for k in got)
    assert kept == []  # ... never the calling process


class _TwoArgumentError(Exception):
    def __init__(self, message, detail):  # pickles, but cannot be rebuilt from its args
        super().__init__(message)
        self.detail = detail


def _fails(i):
    raise _TwoArgumentError("statistic failed", i)


def test_an_exception_that_cannot_be_rebuilt_is_raised_not_waited_for():
    # the pool's result thread died rebuilding it and imap waited forever
    if not can_fork():
        pytest.skip("no fork here: the work runs in one process")
    # (where a library has taught pickle to rebuild any exception, as distributed's tblib
    # does once imported, the exception itself comes back)
    with pytest.raises((RuntimeError, _TwoArgumentError), match=r"statistic failed$"):
        ordered_map(_fails, [1, 2, 3], 2)
    with pytest.raises(ZeroDivisionError):  # one that can is raised as it is
        ordered_map(lambda i: 1 / 0, [1, 2], 2)
