"""The pool of worker processes an engine runs its isolates in (``isolation="process"``).

Up to ``EngineConfig.worker_processes`` workers (:class:`WorkerProcess`). Which one a
new isolate goes to is decided per *session* (:mod:`._placement`): a session's cells
stay on one worker, sessions are spread over the workers, and with
``EngineConfig.session_placement="exclusive"`` a worker serves one session at a time.
Each worker keeps its own warm isolates (:class:`~._warm.WarmIsolates`), so a
session's next cell finds one ready on the worker it is placed on. A worker admits
cells by their memory limits (``EngineConfig.worker_memory_overcommit``), and a
session whose cells keep killing workers is quarantined on workers of its own
(``EngineConfig.quarantine_after_deaths``): both in :mod:`._placement`.
"""

from __future__ import annotations

import itertools
import logging
import math
import os

import trio

from .._v8 import IsolateLimits, IsolateUnavailable
from ._backend import IsolateHandle, IsolateSink
from ._placement import Place, Placer, Seat
from ._warm import WarmIsolates
from ._worker_process import RemoteIsolate, WorkerProcess
from .config import ISOLATE_RESERVE_BYTES, EngineConfig

logger = logging.getLogger("code_mode")


class _OnWorker:
    """The backend of one worker's warm isolates: creates them on that worker."""

    def __init__(self, pool: ProcessPool, worker: WorkerProcess) -> None:
        self._pool = pool
        self._worker = worker

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        return await self._pool.create_on(self._worker, sink, limits)

    def take_ready_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle | None:
        return None

    async def aclose(self) -> None:
        return None


class ProcessPool:
    """Up to ``config.worker_processes`` worker processes, sessions placed on them (see
    the module). Dead workers are dropped and replaced on demand; a worker that has
    hosted ``config.recycle_after_cells`` isolates is retired (it takes no new ones and
    exits once its last one closes), and the sessions placed on it move for their next
    cells. Warm isolates are built with ``warm_limits``."""

    def __init__(
        self, nursery: trio.Nursery, config: EngineConfig, *, warm_limits: IsolateLimits
    ) -> None:
        self._nursery = nursery
        self._config = config
        recycle = config.recycle_after_cells
        self._recycle_after = math.inf if recycle is None else recycle
        self._warm_limits = warm_limits
        self._warned_unconfined = False
        self.workers: list[WorkerProcess] = []
        self._places: dict[WorkerProcess, Place] = {}
        self.placer = Placer(
            config.session_placement,
            config.worker_processes,
            start_worker=self._start_worker,
            isolates_per_worker=config.isolates_per_worker,
            wait_timeout=config.worker_wait_timeout,
            memory_budget=config.worker_memory_budget_bytes,
            quarantine_after=config.quarantine_after_deaths,
            quarantine_seconds=config.quarantine_seconds,
        )
        #: The session whose cell a worker of its own was started for (create_alone).
        self._alone: dict[WorkerProcess, Seat] = {}
        self._ids = itertools.count(1)
        self._closed = False

    def _start_worker(self, *, quarantine: bool = False) -> Place:
        """A new worker, usable at once: frames sent before its process is up wait in
        its queue, and a failure to start fails what was asked of it."""
        worker = WorkerProcess(
            self._config,
            died=self._worker_died,
            retired=self.worker_retired,
            unconfined=self._warn_unconfined,
        )
        self.workers.append(worker)
        place = Place(worker, quarantine=quarantine)
        self._places[worker] = place
        self.placer.places.append(place)
        self._nursery.start_soon(worker.run)
        if self._config.warm_isolates > 0:
            place.warm = WarmIsolates(
                _OnWorker(self, worker),
                self._nursery,
                count=self._config.warm_isolates,
                burst=self._config.warm_isolates_burst,
                limits=self._warm_limits,
            )
            place.warm.refill()
        return place

    def _warn_unconfined(self, missing: list[str]) -> None:
        if not self._warned_unconfined:
            self._warned_unconfined = True
            logger.warning(
                "code_mode worker processes run unconfined in part: no %s "
                "(see docs/security.md, 'Confinement of worker processes')",
                ", ".join(missing),
            )

    def _worker_died(self, worker: WorkerProcess) -> None:
        if worker in self.workers:
            self.workers.remove(worker)
        # The sessions whose cells were running may have caused the death; a worker
        # started for one suspect cell died of that cell, running or not.
        alone = self._alone.pop(worker, None)
        if alone is not None:
            self.placer.strike(alone)
        place = self._places.pop(worker, None)
        if place is not None:
            for seat in {place.isolate_seats.get(i) for i in worker.running_at_death}:
                if seat is not None:
                    self.placer.strike(seat)
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
        self, sink: IsolateSink, limits: IsolateLimits, *, seat: Seat | None = None
    ) -> IsolateHandle | None:
        """A warm isolate on the worker ``seat``'s session goes to, if one is ready
        there now (never waits). Without a seat, the isolate is a session of its own."""
        if self._closed:
            return None
        temporary = seat is None
        if seat is None:
            seat = Seat()
        charge = limits.memory_limit_bytes + ISOLATE_RESERVE_BYTES
        try:
            place = self.placer.place_now(seat, charge)
        except IsolateUnavailable:
            return None  # create_isolate says so
        if place is None or place.warm is None or not place.usable:
            return None
        handle = place.warm.take_ready_isolate(sink, limits)
        if handle is None:
            return None
        self.placer.opened(place, seat, charge)
        self._seated(handle, place, seat, temporary, charge)
        return handle

    async def create_isolate(
        self, sink: IsolateSink, limits: IsolateLimits, *, seat: Seat | None = None
    ) -> IsolateHandle:
        """An isolate on the worker ``seat``'s session goes to (waiting for a free
        worker in ``"exclusive"`` placement). Without a seat, the isolate is a session
        of its own."""
        if self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        temporary = seat is None
        if seat is None:
            seat = Seat()
        charge = limits.memory_limit_bytes + ISOLATE_RESERVE_BYTES
        place = await self.placer.place(seat, charge)
        self.placer.opened(place, seat, charge)
        try:
            if place.warm is not None:
                handle = await place.warm.create_isolate(sink, limits)
            else:
                handle = await self.create_on(place.worker, sink, limits)
        except BaseException:
            self.isolate_closed(place, seat, temporary, charge, None)
            raise
        self._seated(handle, place, seat, temporary, charge)
        return handle

    def _seated(
        self, handle: IsolateHandle, place: Place, seat: Seat, temporary: bool, charge: int
    ) -> None:
        """``handle`` is an isolate of ``seat``'s session: closing it tells the
        placement (an exclusive worker may be free then, or memory on it)."""
        isolate_id = handle.isolate_id if isinstance(handle, RemoteIsolate) else None
        if isolate_id is not None:
            place.isolate_seats[isolate_id] = seat
        handle.when_closed(lambda: self.isolate_closed(place, seat, temporary, charge, isolate_id))

    def isolate_closed(
        self, place: Place, seat: Seat, temporary: bool, charge: int, isolate_id: int | None
    ) -> None:
        if isolate_id is not None:
            place.isolate_seats.pop(isolate_id, None)
        self.placer.closed(place, seat, charge)
        if temporary:
            self.placer.release(seat)

    def release(self, seat: Seat) -> None:
        """A session is over: its place is given up."""
        self.placer.release(seat)

    async def create_on(
        self, worker: WorkerProcess, sink: IsolateSink, limits: IsolateLimits
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
            await worker.create(isolate_id, sink, limits)
        except IsolateUnavailable:
            worker.retire_if_idle()
            raise
        return RemoteIsolate(worker, isolate_id)

    async def create_alone(
        self, sink: IsolateSink, limits: IsolateLimits, *, seat: Seat | None = None
    ) -> IsolateHandle:
        """An isolate on a new worker process that takes no other isolate and exits
        when this one closes (no place: nobody is seated there; beyond ``size``, as
        it lives only as long as the one cell replayed there). Its death counts
        against ``seat``'s session (see :meth:`Placer.strike`)."""
        if self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        worker = WorkerProcess(
            self._config,
            died=self._worker_died,
            retired=self.worker_retired,
            unconfined=self._warn_unconfined,
        )
        worker.alone = True
        self.workers.append(worker)
        if seat is not None:
            self._alone[worker] = seat
        self._nursery.start_soon(worker.run)
        try:
            handle = await self.create_on(worker, sink, limits)
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
