"""The worker process's closing threads (``_worker_process_main._Closers``).

Each close runs on a thread of its own, so one stuck in a builtin holds up no other;
a thread that finished a close waits, idle, for the next one rather than a new thread
being started per close (back-to-back cells close an isolate each).
"""

from __future__ import annotations

import threading

from code_mode._v8._worker_process_main import _Closers

TIMEOUT = 10.0


def _wait_until_idle(closers: _Closers, count: int) -> None:
    # The thread goes idle right after its close returned.
    done = threading.Event()
    for _ in range(10_000):
        with closers._lock:
            if len(closers._idle) == count:
                return
        done.wait(0.001)
    raise AssertionError(f"never {count} idle closing threads")


def test_a_stuck_close_holds_up_no_other_close() -> None:
    release = threading.Event()
    closed: dict[int, threading.Event] = {1: threading.Event(), 2: threading.Event()}

    def close(isolate_id: int) -> None:
        if isolate_id == 1:
            assert release.wait(TIMEOUT)
        closed[isolate_id].set()

    closers = _Closers(close, keep_idle=2)
    closers.submit(1)
    closers.submit(2)
    assert closed[2].wait(TIMEOUT)
    assert not closed[1].is_set()
    release.set()
    closers.join()
    assert closed[1].is_set()


def test_closes_one_after_another_reuse_one_idle_thread() -> None:
    threads: list[int] = []

    def close(isolate_id: int) -> None:
        threads.append(threading.get_ident())

    closers = _Closers(close, keep_idle=2)
    for isolate_id in range(5):
        closers.submit(isolate_id)
        _wait_until_idle(closers, 1)
    closers.join()
    assert len(threads) == 5
    assert len(set(threads)) == 1


def test_idle_threads_beyond_keep_idle_exit_and_join_stops_the_rest() -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    def close(isolate_id: int) -> None:
        started.release()
        assert release.wait(TIMEOUT)

    closers = _Closers(close, keep_idle=1)
    for isolate_id in range(3):
        closers.submit(isolate_id)
    for _ in range(3):
        assert started.acquire(timeout=TIMEOUT)  # three threads, one close each
    release.set()
    _wait_until_idle(closers, 1)
    threads = list(closers._threads)
    closers.join()
    assert len(threads) == 3
    assert not any(thread.is_alive() for thread in threads)
