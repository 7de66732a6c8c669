"""The pool of worker processes an engine runs its isolates in (``isolation="process"``).

Each new isolate goes to the least loaded live worker (:class:`WorkerProcess`), and a
new worker starts while every live one is busy, up to ``EngineConfig.worker_processes``.
"""

from __future__ import annotations

import itertools
import math
import os

import trio

from ._backend import IsolateHandle, IsolateSink
from ._native import IsolateUnavailable
from ._worker_process import RemoteIsolate, WorkerProcess


class ProcessPool:
    """Up to ``size`` worker processes; each new isolate goes to the least loaded live
    one, and a new worker starts while every live one is busy. Dead workers are
    dropped and replaced on demand; a worker that has hosted ``recycle_after``
    isolates is retired (it takes no new ones and exits once its last one closes)."""

    def __init__(
        self,
        nursery: trio.Nursery,
        size: int,
        *,
        isolates_per_worker: float = math.inf,
        recycle_after: float = math.inf,
        memory_limit: int | None = None,
        heartbeat_timeout: float = 10.0,
        close_timeout: float = 2.0,
        confine: bool = True,
        parallel_creates: int = 1,
    ) -> None:
        self._nursery = nursery
        self._size = size
        self._per_worker = isolates_per_worker
        self._recycle_after = recycle_after
        self.memory_limit = memory_limit
        self.heartbeat_timeout = heartbeat_timeout
        self.close_timeout = close_timeout
        self.confine = confine
        #: How many isolates a worker builds at once (EngineConfig.warm_isolates_burst).
        self.parallel_creates = parallel_creates
        self.warned_unconfined = False
        self.workers: list[WorkerProcess] = []
        self._ids = itertools.count(1)
        self._closed = False

    def _start_worker(self) -> WorkerProcess:
        """A new worker, usable at once: frames sent before its process is up wait in
        its queue, and a failure to start fails what was asked of it."""
        worker = WorkerProcess(self)
        self.workers.append(worker)
        self._nursery.start_soon(worker.run)
        return worker

    def _worker_died(self, worker: WorkerProcess) -> None:
        if worker in self.workers:
            self.workers.remove(worker)

    async def prestart(self) -> None:
        """Start the first worker early so the first cell does not wait for it."""
        if not self.workers and not self._closed:
            await self._start_worker().started.wait()

    def take_ready_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle | None:
        return None  # nothing is built ahead here (see WarmIsolates)

    async def create_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        if self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        live = [worker for worker in self.workers if worker.alive and not worker.retiring]
        open_ = [worker for worker in live if worker.load < self._per_worker]
        if len(live) < self._size and (not open_ or min(w.load for w in open_) > 0):
            # Every worker is busy: start another. This isolate still goes to a running
            # worker if one has room, rather than wait ~0.1 s for a process to start.
            fresh = self._start_worker()
            if not open_:
                open_ = [fresh]
        if open_:
            # A worker still starting (~0.1-0.5 s) only gets isolates nobody else can host.
            worker = min(open_, key=lambda w: (not w.ready, w.load))
        else:
            raise IsolateUnavailable(
                f"exec runtime is at capacity: {len(live)} worker processes host "
                f"{int(self._per_worker)} isolates each (EngineConfig.isolates_per_worker, "
                "EngineConfig.worker_processes); try again when other cells have ended"
            )
        worker.hosted += 1
        if worker.hosted >= self._recycle_after:
            worker.retiring = True
        if not worker.alive:
            raise IsolateUnavailable(
                "exec runtime ended unexpectedly: the JavaScript worker process died "
                f"({worker.death})"
            )
        isolate_id = next(self._ids)
        try:
            await worker.create(isolate_id, sink, memory_limit_bytes, max_message_chars)
        except IsolateUnavailable:
            worker.retire_if_idle()
            raise
        return RemoteIsolate(worker, isolate_id)

    async def aclose(self) -> None:
        """Ask every worker to exit and wait for them (killing any that hang)."""
        self._closed = True
        for worker in list(self.workers):
            if worker.stuck:
                worker.kill_for("killed: its engine closed")
            worker.shutdown()
        with trio.CancelScope(shield=True):
            for worker in list(self.workers):
                with trio.move_on_after(10):
                    await worker.exited.wait()
                if not worker.exited.is_set():  # pragma: no cover
                    worker.kill()
                    await worker.exited.wait()


def child_process_count() -> int:
    """Live child processes of this process (for tests)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as children:
                count += len(children.read().split())
        except OSError:
            continue
    return count
