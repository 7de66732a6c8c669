"""The pool of worker processes an engine runs its isolates in (``isolation="process"``).

Up to ``EngineConfig.worker_processes`` workers (:class:`WorkerProcess`). Which one a
new isolate goes to is decided per *session* (:mod:`._placement`): a session's cells
stay on one worker, sessions are spread over the workers, and with
``EngineConfig.session_placement="exclusive"`` a worker serves one session at a time.
Each worker keeps its own warm isolates (:class:`~._warm.WarmIsolates`), so a
session's next cell finds one ready on the worker it is placed on.
"""

from __future__ import annotations

import itertools
import math
import os

import trio

from ._backend import IsolateHandle, IsolateSink
from ._native import IsolateUnavailable
from ._placement import Place, Placer, Seat, SessionPlacement
from ._warm import WarmIsolates
from ._worker_process import RemoteIsolate, WorkerProcess


class _OnWorker:
    """The backend of one worker's warm isolates: creates them on that worker."""

    def __init__(self, pool: ProcessPool, worker: WorkerProcess) -> None:
        self._pool = pool
        self._worker = worker

    async def create_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        return await self._pool.create_on(
            self._worker,
            sink,
            memory_limit_bytes=memory_limit_bytes,
            max_message_chars=max_message_chars,
        )

    def take_ready_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle | None:
        return None

    async def aclose(self) -> None:
        return None


class _SeatedIsolate:
    """An isolate of a session: closing it tells the placement (an exclusive worker
    may be free then)."""

    __slots__ = ("_handle", "_place", "_pool", "_seat", "_temporary")

    def __init__(
        self, handle: IsolateHandle, pool: ProcessPool, place: Place, seat: Seat, temporary: bool
    ) -> None:
        self._handle = handle
        self._pool = pool
        self._place = place
        self._seat = seat
        self._temporary = temporary

    def post(self, code: str, tag: int, quiet: bool = False, probe: int | None = None) -> None:
        self._handle.post(code, tag, quiet, probe)

    def cancel(self, tag: int) -> None:
        self._handle.cancel(tag)

    def set_limits(self, memory_limit_bytes: int, max_message_chars: int) -> None:
        self._handle.set_limits(memory_limit_bytes, max_message_chars)

    def collect_output(self) -> None:
        pass  # a worker process keeps no output back (see NativeIsolate._deliver)

    async def close(self) -> None:
        try:
            await self._handle.close()
        finally:
            self._pool.isolate_closed(self._place, self._seat, self._temporary)


class ProcessPool:
    """Up to ``size`` worker processes, sessions placed on them (see the module). Dead
    workers are dropped and replaced on demand; a worker that has hosted
    ``recycle_after`` isolates is retired (it takes no new ones and exits once its
    last one closes), and the sessions placed on it move for their next cells."""

    def __init__(
        self,
        nursery: trio.Nursery,
        size: int,
        *,
        placement: SessionPlacement = "shared",
        wait_timeout: float = 10.0,
        isolates_per_worker: float = math.inf,
        recycle_after: float = math.inf,
        memory_limit: int | None = None,
        heartbeat_timeout: float = 10.0,
        close_timeout: float = 2.0,
        confine: bool = True,
        parallel_creates: int = 1,
        warm_isolates: int = 0,
        warm_memory_limit_bytes: int = 256 * 1024 * 1024,
        warm_max_message_chars: int = 16 * 1024 * 1024,
    ) -> None:
        self._nursery = nursery
        self._size = size
        self._recycle_after = recycle_after
        self.memory_limit = memory_limit
        self.heartbeat_timeout = heartbeat_timeout
        self.close_timeout = close_timeout
        self.confine = confine
        #: How many isolates a worker builds at once (EngineConfig.warm_isolates_burst).
        self.parallel_creates = parallel_creates
        self._warm_count = warm_isolates
        self._warm_limits = (warm_memory_limit_bytes, warm_max_message_chars)
        self.warned_unconfined = False
        self.workers: list[WorkerProcess] = []
        self._places: dict[WorkerProcess, Place] = {}
        self.placer = Placer(
            placement,
            size,
            start_worker=self._start_worker,
            isolates_per_worker=isolates_per_worker,
            wait_timeout=wait_timeout,
        )
        self._ids = itertools.count(1)
        self._closed = False

    def _start_worker(self) -> Place:
        """A new worker, usable at once: frames sent before its process is up wait in
        its queue, and a failure to start fails what was asked of it."""
        worker = WorkerProcess(self)
        self.workers.append(worker)
        place = Place(worker)
        self._places[worker] = place
        self.placer.places.append(place)
        self._nursery.start_soon(worker.run)
        if self._warm_count > 0:
            memory, max_message = self._warm_limits
            place.warm = WarmIsolates(
                _OnWorker(self, worker),
                self._nursery,
                count=self._warm_count,
                burst=self.parallel_creates,
                memory_limit_bytes=memory,
                max_message_chars=max_message,
            )
            place.warm.refill()
        return place

    def _worker_died(self, worker: WorkerProcess) -> None:
        if worker in self.workers:
            self.workers.remove(worker)
        place = self._places.pop(worker, None)
        if place is not None:
            # No replacement is started here: a worker that cannot start would be
            # restarted in a loop. The next cell that needs one starts it.
            self._forget(place)

    def worker_retired(self, worker: WorkerProcess) -> None:
        """``worker`` takes no new isolates from now on (recycled, or an isolate could
        not be disposed of): its sessions move, its warm isolates are closed, and its
        replacement starts now, so the next cell need not wait for it."""
        place = self._places.get(worker)
        if place is not None:
            self._forget(place)
            if not self._closed:
                self.placer.keep_one_spare()

    def _forget(self, place: Place) -> None:
        self.placer.dropped(place)
        warm, place.warm = place.warm, None
        if warm is not None:
            self._nursery.start_soon(warm.aclose)

    async def prestart(self) -> None:
        """Start the first worker early so the first cell does not wait for it."""
        if not self.workers and not self._closed:
            await self._start_worker().worker.started.wait()

    def warm_pools(self) -> list[WarmIsolates]:
        """Every worker's warm isolates (for tests and benchmarks)."""
        return [place.warm for place in self._places.values() if place.warm is not None]

    # -- isolates --------------------------------------------------------------------

    def take_ready_isolate(
        self,
        sink: IsolateSink,
        *,
        memory_limit_bytes: int,
        max_message_chars: int,
        seat: Seat | None = None,
    ) -> IsolateHandle | None:
        """A warm isolate on the worker ``seat``'s session goes to, if one is ready
        there now (never waits). Without a seat, the isolate is a session of its own."""
        if self._closed:
            return None
        temporary = seat is None
        if seat is None:
            seat = Seat()
        try:
            place = self.placer.place_now(seat)
        except IsolateUnavailable:
            return None  # create_isolate says so
        if place is None or place.warm is None or not place.usable:
            return None
        handle = place.warm.take_ready_isolate(
            sink, memory_limit_bytes=memory_limit_bytes, max_message_chars=max_message_chars
        )
        if handle is None:
            return None
        self.placer.opened(place, seat)
        return _SeatedIsolate(handle, self, place, seat, temporary)

    async def create_isolate(
        self,
        sink: IsolateSink,
        *,
        memory_limit_bytes: int,
        max_message_chars: int,
        seat: Seat | None = None,
    ) -> IsolateHandle:
        """An isolate on the worker ``seat``'s session goes to (waiting for a free
        worker in ``"exclusive"`` placement). Without a seat, the isolate is a session
        of its own."""
        if self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        temporary = seat is None
        if seat is None:
            seat = Seat()
        place = await self.placer.place(seat)
        self.placer.opened(place, seat)
        try:
            if place.warm is not None:
                handle = await place.warm.create_isolate(
                    sink, memory_limit_bytes=memory_limit_bytes, max_message_chars=max_message_chars
                )
            else:
                handle = await self.create_on(
                    place.worker,
                    sink,
                    memory_limit_bytes=memory_limit_bytes,
                    max_message_chars=max_message_chars,
                )
        except BaseException:
            self.isolate_closed(place, seat, temporary)
            raise
        return _SeatedIsolate(handle, self, place, seat, temporary)

    def isolate_closed(self, place: Place, seat: Seat, temporary: bool) -> None:
        self.placer.closed(place, seat)
        if temporary:
            self.placer.release(seat)

    def release(self, seat: Seat) -> None:
        """A session is over: its place is given up."""
        self.placer.release(seat)

    async def create_on(
        self,
        worker: WorkerProcess,
        sink: IsolateSink,
        *,
        memory_limit_bytes: int,
        max_message_chars: int,
    ) -> IsolateHandle:
        """A new isolate on ``worker`` (raises ``IsolateUnavailable``)."""
        if self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        if not worker.alive:
            raise IsolateUnavailable(
                "exec runtime ended unexpectedly: the JavaScript worker process died "
                f"({worker.death})"
            )
        worker.hosted += 1
        if worker.hosted >= self._recycle_after and not worker.retiring:
            worker.retire()
        isolate_id = next(self._ids)
        try:
            await worker.create(isolate_id, sink, memory_limit_bytes, max_message_chars)
        except IsolateUnavailable:
            worker.retire_if_idle()
            raise
        return RemoteIsolate(worker, isolate_id)

    async def create_alone(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        """An isolate on a new worker process that takes no other isolate and exits
        when this one closes (no place: nobody is seated there; beyond ``size``, as
        it lives only as long as the one cell replayed there)."""
        if self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        worker = WorkerProcess(self)
        self.workers.append(worker)
        self._nursery.start_soon(worker.run)
        try:
            handle = await self.create_on(
                worker,
                sink,
                memory_limit_bytes=memory_limit_bytes,
                max_message_chars=max_message_chars,
            )
        finally:
            worker.retiring = True  # exits once its one isolate is closed
            worker.retire_if_idle()
        return handle

    async def aclose(self) -> None:
        """Close the warm isolates, ask every worker to exit and wait for them
        (killing any that hang)."""
        self._closed = True
        with trio.CancelScope(shield=True):
            for place in list(self._places.values()):
                warm, place.warm = place.warm, None
                if warm is not None:
                    await warm.aclose()
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
