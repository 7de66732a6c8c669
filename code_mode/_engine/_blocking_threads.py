"""Engine-owned threads for the native calls that block.

Creating a V8 isolate and disposing of one (which joins its thread) take milliseconds.
They must not run on the trio thread, and using ``trio.to_thread`` would leave trio's
cached worker threads alive after the engine. So the engine owns its threads: a
:class:`BlockingWorker` (one thread, jobs in order) creates isolates, and
:class:`BlockingWorkers` (a thread per job running at once) disposes of them, since one
disposal can be stuck for long (see :class:`BlockingWorkers`). All are started when the
engine opens and joined when it closes.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import trio

T = TypeVar("T")

_STOP = object()


class _Job:
    __slots__ = ("error", "function", "result", "task")

    def __init__(self, function: Callable[[], Any], task: trio.lowlevel.Task) -> None:
        self.function = function
        self.task = task  # parked until the worker thread reschedules it
        self.result: Any = None
        self.error: BaseException | None = None


def _uncancellable(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
    # The job runs to its end whatever happens: a cancellation is seen at the
    # caller's next checkpoint (as in a shielded wait, without a cancel scope).
    return trio.lowlevel.Abort.FAILED


class BlockingWorker:
    """Runs blocking callables one at a time on a dedicated thread."""

    def __init__(self, name: str = "code-mode-engine") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stopped = trio.Event()

    def start(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        token = self._token
        assert token is not None
        while True:
            job = self._jobs.get()
            if job is _STOP:
                # (The run may have ended meanwhile: see BlockingWorkers.run_for_at_most.)
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(self._stopped.set)
                return
            if callable(job):
                job()  # posted: tells its caller itself (it never raises)
                continue
            try:
                job.result = job.function()
            except BaseException as error:
                job.error = error
            token.run_sync_soon(trio.lowlevel.reschedule, job.task)

    async def run(self, function: Callable[[], T]) -> T:
        """Run ``function()`` on the worker thread and return its result.

        Not cancellable: these calls are short and their results own native
        resources (an isolate) that must not be dropped on the floor, so the caller
        waits for them even while being cancelled, then sees the cancellation at its
        next checkpoint.
        """
        if self._thread is None:
            raise RuntimeError("BlockingWorker is not running")
        job = _Job(function, trio.lowlevel.current_task())
        self._jobs.put(job)
        # Nothing runs between the put and parking here: the worker's reschedule
        # reaches the trio thread only once this task is parked.
        await trio.lowlevel.wait_task_rescheduled(_uncancellable)
        if job.error is not None:
            raise job.error
        result: T = job.result
        return result

    def post(self, function: Callable[[], None]) -> None:
        """Queue ``function()`` (which must not raise) without waiting for it."""
        if self._thread is None:
            raise RuntimeError("BlockingWorker is not running")
        self._jobs.put(function)

    def abandon(self) -> None:
        """Let the thread end after its jobs, unjoined: one of them may never end."""
        self._jobs.put(_STOP)
        self._thread = None

    async def aclose(self) -> None:
        """Finish queued jobs, stop the thread and join it."""
        if self._thread is None:
            return
        self._jobs.put(_STOP)
        with trio.CancelScope(shield=True):
            await self._stopped.wait()
        self._thread.join()  # returns at once: the thread has signalled its exit
        self._thread = None


class BlockingWorkers:
    """Runs each blocking callable on a thread of its own: an idle one if there is
    one, a new one otherwise (up to ``keep_idle`` idle threads are kept for reuse).

    For disposing of isolates: disposal waits for the isolate's JavaScript to stop,
    and a few built-ins ignore termination (``new Array(2 ** 26).sort()`` runs for
    seconds), so one stuck disposal must not hold up the others queued behind it.
    """

    def __init__(self, name: str = "code-mode-engine", *, keep_idle: int = 2) -> None:
        self._name = name
        self._keep_idle = keep_idle
        self._idle: list[BlockingWorker] = []
        self._busy: set[BlockingWorker] = set()
        self._closed = False

    def start(self) -> None:
        self._closed = False

    async def run(self, function: Callable[[], T]) -> T:
        """Run ``function()`` on a thread of its own and return its result (not
        cancellable, like :meth:`BlockingWorker.run`)."""
        if self._closed:
            raise RuntimeError("BlockingWorkers is closed")
        if self._idle:
            worker = self._idle.pop()
        else:
            worker = BlockingWorker(self._name)
            worker.start()
        self._busy.add(worker)
        try:
            return await worker.run(function)
        finally:
            self._busy.discard(worker)
            if self._closed or len(self._idle) >= self._keep_idle:
                await worker.aclose()
            else:
                self._idle.append(worker)

    async def run_for_at_most(self, function: Callable[[], None], seconds: float) -> bool:
        """Run ``function()`` on a thread of its own (its error is raised here), and wait
        at most ``seconds`` for it: False when it still runs then. Its thread goes on
        with it, and ends after it, if ever: a disposal that waits for JavaScript V8
        does not stop (a built-in that ignores termination for days, in ``thread``
        mode) must not hold its session's closing forever."""
        if self._closed:
            raise RuntimeError("BlockingWorkers is closed")
        worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = BlockingWorker(self._name)
            worker.start()
        self._busy.add(worker)
        done = trio.Event()
        token = trio.lowlevel.current_trio_token()

        errors: list[BaseException] = []

        def job() -> None:
            try:
                function()
            except BaseException as error:
                errors.append(error)
            finally:
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(done.set)

        worker.post(job)
        # Not cancellable, like run(): a caller being cancelled (an engine closing at
        # the end of its run) still waits, up to `seconds`.
        with trio.CancelScope(shield=True), trio.move_on_after(seconds):
            await done.wait()
        self._busy.discard(worker)
        if not done.is_set():
            worker.abandon()
            return False
        if self._closed or len(self._idle) >= self._keep_idle:
            await worker.aclose()
        else:
            self._idle.append(worker)
        if errors:
            raise errors[0]
        return True

    async def aclose(self) -> None:
        """Stop and join the idle threads; busy ones stop when their job ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for worker in idle:
            await worker.aclose()
