"""The ``thread`` backend: isolates on their own threads inside this process.

The fastest path (no pipe between the host and V8), but a fatal V8 failure takes the
whole Python process down: meant for trusted programs (``EngineConfig.isolation =
"thread"``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

import trio

from .._v8 import IsolateLimits, NativeIsolate, Outcome
from ._backend import HandleBase, IsolateHandle, IsolateSink
from ._blocking_threads import BlockingWorkers

#: Longest a cell's closing waits for its isolate's disposal, which waits for the
#: isolate's JavaScript to stop: a few built-ins ignore termination for seconds
#: (``new Array(2 ** 26).sort()``), a generic one over a huge length for days
#: (``Array.prototype.indexOf.call({ length: 2 ** 53 })``). Past it, the disposal goes
#: on, on its own thread, and the session closes.
CLOSE_PATIENCE = 5.0

logger = logging.getLogger("code_mode.engine")


class _ReportQueue:
    """Hands an isolate thread's reports to the trio thread in order, waking trio
    once per burst rather than once per report."""

    def __init__(self, token: trio.lowlevel.TrioToken, sink: IsolateSink) -> None:
        self._token = token
        self._sink = sink
        self._lock = threading.Lock()
        self._reports: list[tuple[Any, ...]] = []
        self._scheduled = False

    def put(self, report: tuple[Any, ...]) -> None:
        with self._lock:
            self._reports.append(report)
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self.drain)

    def drain(self) -> None:
        """Hand the queued reports over now (on the trio thread)."""
        with self._lock:
            reports, self._reports = self._reports, []
            self._scheduled = False
        for report in reports:
            if len(report) == 1:
                self._sink.on_batch(report[0])
            else:
                self._sink.on_task(*report)


class _ThreadIsolate(HandleBase):
    __slots__ = ("_disposer", "_native", "_reports")

    def __init__(
        self, native: NativeIsolate, disposer: BlockingWorkers, reports: _ReportQueue
    ) -> None:
        super().__init__()
        self._native = native
        self._disposer = disposer
        self._reports = reports

    def post(self, code: str, tag: int, quiet: bool = False, probe: int | None = None) -> None:
        self._native.post(code, tag, quiet, probe)

    def cancel(self, tag: int) -> None:
        self._native.cancel(tag)

    def set_limits(self, limits: IsolateLimits) -> None:
        self._native.set_limits(limits)

    def collect_output(self) -> None:
        # Queued behind the reports not yet handed over, then all of them handed over:
        # in order, as if trio had run the queue's drain a moment earlier.
        self._native.flush_output()
        self._reports.drain()

    async def _close(self) -> None:
        if not await self._disposer.run_for_at_most(self._native.close, CLOSE_PATIENCE):
            logger.warning(
                "an isolate's JavaScript did not stop within %g s of its termination: "
                "its disposal goes on in the background (thread mode; a worker process "
                "would have been killed)",
                CLOSE_PATIENCE,
            )


class ThreadBackend:
    """Isolates on their own threads in this process (``EngineConfig.isolation =
    "thread"``). Creating and closing them block, so they run on engine-owned threads:
    up to ``parallel_creates`` threads create (the warm pool builds that many at once
    while cells come back to back), and each close gets a thread of its own
    (:class:`BlockingWorkers`): closing an isolate may wait for JavaScript stuck in a
    builtin that ignores terminate-execution, and that must hold up neither new cells
    nor the closing of other cells. Reports are handed to the trio thread with
    ``TrioToken.run_sync_soon``."""

    def __init__(
        self, creator: BlockingWorkers, disposer: BlockingWorkers, *, parallel_creates: int = 1
    ) -> None:
        self._worker = creator
        self._disposer = disposer
        # Bounds the creating threads: many cells starting at once queue here rather
        # than start a thread each.
        self._creating = trio.Semaphore(parallel_creates)

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        reports = _ReportQueue(trio.lowlevel.current_trio_token(), sink)

        def on_batch(text: str | None) -> None:
            reports.put((text,))

        def on_task(tag: int, outcome: Outcome, detail: str) -> None:
            reports.put((tag, outcome, detail))

        def build() -> NativeIsolate:
            return NativeIsolate(
                limits=limits,
                on_batch=on_batch,
                on_task=on_task,
                keep_output=True,  # see collect_output
            )

        async with self._creating:
            native = await self._worker.run(build)
        return _ThreadIsolate(native, self._disposer, reports)

    def take_ready_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle | None:
        return None  # nothing is built ahead here (see WarmIsolates)

    async def aclose(self) -> None:
        return None
