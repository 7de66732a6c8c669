"""Which worker process a session's isolates go to (``EngineConfig.session_placement``).

A worker process that dies takes every isolate it hosts with it. So that a death ends
as few sessions' cells as possible, the pool places *sessions*, not isolates:

* each session has a :class:`Seat`; all its isolates go to the worker it is seated on,
  for as long as that worker lives and takes new isolates (a worker that retires or
  dies loses its seats, and their sessions are seated again for their next cells);
* ``"shared"``: a session is seated once, on the worker with the fewest sessions
  seated (a session counts from its first cell until it is released, idle or not).
  Sessions share workers; a death ends the cells of the sessions on that worker only;
* ``"exclusive"``: a worker serves one session at a time. A session holds its worker
  while it has isolates there (cells); once the last one is closed the worker is free
  for any session, and the session goes back to it if it is still free next time.
  When every worker serves another session and no more may start, a new session's
  cell waits for one to be free, in arrival order, for at most
  ``EngineConfig.worker_wait_timeout`` seconds; then it fails with an error naming
  the settings.

While fewer than ``worker_processes`` run, one worker that serves no session is kept
started ahead, so that a new session does not wait for a process to start.

**Memory budgets.** A worker admits a cell only while the memory limits of the cells
running there, the new one's included, add up to at most
``EngineConfig.worker_memory_budget_bytes`` (``worker_memory_limit_bytes`` less the
worker's own memory, times ``worker_memory_overcommit``): so cells that each stay
within their limit cannot together take the worker past its resident-memory limit. A
cell that does not fit on its session's worker goes to another one that has room
(``"shared"``), or waits, in arrival order and at most ``worker_wait_timeout``
seconds, for cells to end; then it fails with an error naming the settings.

**Quarantine.** A session whose cells were running at ``quarantine_after_deaths``
worker deaths within ``quarantine_seconds`` (the deaths they likely caused) is placed,
for the next ``quarantine_seconds``, on a *quarantine* worker: one that serves only
quarantined sessions, started beyond ``worker_processes`` (at most that many more),
so that it can no longer end the cells of well-behaved sessions. While fewer
quarantine workers run than quarantined sessions want one, each gets its own; beyond,
they share the quarantine workers.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import trio

from .._v8 import IsolateUnavailable

if TYPE_CHECKING:
    from ._warm import WarmIsolates
    from ._worker_process import WorkerProcess

SessionPlacement = Literal["shared", "exclusive"]


class Seat:
    """One session's place on an engine's worker processes (see the module)."""

    __slots__ = ("place", "quarantined_until", "strikes")

    def __init__(self) -> None:
        #: The place its next isolates go to; None until its first, or after a move.
        self.place: Place | None = None
        #: When each worker death that one of its running cells may have caused happened.
        self.strikes: list[float] = []
        #: Until when (trio's clock) it is kept on a quarantine worker; None: it is not.
        self.quarantined_until: float | None = None

    def quarantined(self) -> bool:
        until = self.quarantined_until
        return until is not None and trio.current_time() < until


class Place:
    """A worker process, the sessions seated on it, and its warm isolates."""

    def __init__(self, worker: WorkerProcess, *, quarantine: bool = False) -> None:
        self.worker = worker
        #: Serves only quarantined sessions (see the module).
        self.quarantine = quarantine
        #: Sessions seated here, and how many isolates each has here now.
        self.seats: dict[Seat, int] = {}
        #: The memory limits of the isolates created here for cells, added up.
        self.committed = 0
        #: Each isolate made here for a cell, by its id, and its session.
        self.isolate_seats: dict[int, Seat] = {}
        #: Isolates built ahead in this worker (None: ``warm_isolates=0``).
        self.warm: WarmIsolates | None = None

    @property
    def usable(self) -> bool:
        """The worker takes new isolates."""
        return self.worker.alive and not self.worker.retiring

    @property
    def warm_ready(self) -> bool:
        return self.warm is not None and self.warm.ready_count > 0


class _Waiter:
    __slots__ = ("for_memory", "seat", "woken")

    def __init__(self, seat: Seat) -> None:
        self.seat = seat
        self.woken = trio.Event()
        #: Waits for memory on a worker (not for a free worker): holds up no one.
        self.for_memory = False


class Placer:
    """Seats sessions on places (see the module's docstring). ``start_worker`` starts
    a worker process and returns its place, already in :attr:`places`
    (``start_worker(quarantine=True)``: a quarantine worker's)."""

    def __init__(
        self,
        mode: SessionPlacement,
        size: int,
        *,
        start_worker: Callable[..., Place],
        isolates_per_worker: float = math.inf,
        wait_timeout: float = 10.0,
        memory_budget: int | None = None,
        quarantine_after: int | None = None,
        quarantine_seconds: float = 600.0,
    ) -> None:
        self.mode = mode
        self._size = size
        self._start_worker = start_worker
        self._per_worker = isolates_per_worker
        self._wait_timeout = wait_timeout
        self._budget = memory_budget
        self._quarantine_after = quarantine_after
        self._quarantine_seconds = quarantine_seconds
        #: Every worker's place, retiring ones included, until the worker is gone.
        self.places: list[Place] = []
        self._waiting: collections.deque[_Waiter] = collections.deque()

    # -- choosing ------------------------------------------------------------------

    def _live(self, quarantine: bool = False) -> list[Place]:
        return [p for p in self.places if p.usable and p.quarantine == quarantine]

    def _has_room(self, place: Place, charge: int = 0) -> bool:
        return place.worker.load < self._per_worker and self._fits(place, charge)

    def _fits(self, place: Place, charge: int) -> bool:
        return self._budget is None or place.committed + charge <= self._budget

    def place_now(self, seat: Seat, charge: int = 0) -> Place | None:
        """Where ``seat``'s next isolate goes, a cell with a memory limit of ``charge``
        bytes, chosen without waiting (a worker may be started for it). None when it
        must wait: for a free worker (``"exclusive"``), or for memory on a worker.
        Raises ``IsolateUnavailable`` when every worker is full
        (``EngineConfig.isolates_per_worker``), or the cell's limit alone is above a
        worker's memory budget. Records nothing: :meth:`opened` does."""
        if self._budget is not None and charge > self._budget:
            raise self._too_large(charge)
        current = seat.place
        quarantined = seat.quarantined()
        if current is not None and current.quarantine != quarantined:
            current = None  # quarantined since, or the quarantine is over
        if current is not None and current.usable and seat in current.seats:
            if self._has_room(current, charge):
                return current
            if self.mode == "exclusive" or quarantined:
                if current.worker.load >= self._per_worker:
                    raise self._full()
                return None  # its own cells must end first
        if quarantined:
            return self._quarantine_place(charge)
        live = self._live()
        if self.mode == "shared":
            open_ = [place for place in live if self._has_room(place, charge)]
            if len(live) < self._size and all(place.seats for place in open_):
                return self._start_worker()  # no worker without a session is left
            if not open_:
                if any(place.worker.load < self._per_worker for place in live):
                    return None  # room by count, not by memory: wait for cells to end
                raise self._full()
            # The fewest sessions first; among equals, a worker that is up, with an
            # isolate ready, the least loaded.
            return min(
                open_,
                key=lambda p: (len(p.seats), not p.worker.ready, not p.warm_ready, p.worker.load),
            )
        first = next((w for w in self._waiting if not w.for_memory), None)
        if first is not None and first.seat is not seat:
            return None  # others were waiting first
        free = [place for place in live if not place.seats and self._has_room(place, charge)]
        if current in free:
            return current
        if free:
            return min(free, key=lambda p: (not p.worker.ready, not p.warm_ready))
        if len(live) < self._size:
            return self._start_worker()
        return None

    def _quarantine_place(self, charge: int) -> Place | None:
        """A quarantine worker for a quarantined session (see the module)."""
        live = self._live(quarantine=True)
        free = [place for place in live if not place.seats and self._has_room(place, charge)]
        if free:
            return free[0]
        if len(live) < self._size:
            return self._start_worker(quarantine=True)
        open_ = [place for place in live if self._has_room(place, charge)]
        if not open_:
            return None
        return min(open_, key=lambda p: (len(p.seats), p.worker.load))

    def _waits_for_memory(self, seat: Seat) -> bool:
        """Whether ``seat`` waits for memory, not for a free worker."""
        current = seat.place
        return (
            self.mode == "shared"
            or seat.quarantined()
            or (current is not None and seat in current.seats)
        )

    async def place(self, seat: Seat, charge: int = 0) -> Place:
        """:meth:`place_now`, waiting for a free worker (``"exclusive"``) or for memory
        on one (at most ``wait_timeout`` seconds, in arrival order; cancellable)."""
        place = self.place_now(seat, charge)
        if place is not None:
            return place
        waiter = _Waiter(seat)
        waiter.for_memory = self._waits_for_memory(seat)
        self._waiting.append(waiter)
        try:
            with trio.move_on_after(self._wait_timeout):
                while True:
                    await waiter.woken.wait()
                    waiter.woken = trio.Event()
                    place = self.place_now(seat, charge)
                    if place is not None:
                        return place
                    waiter.for_memory = self._waits_for_memory(seat)
            if waiter.for_memory:
                raise self._no_memory(charge)
            raise IsolateUnavailable(
                f"exec runtime is at capacity: each of the {self._size} worker processes "
                "serves another session (EngineConfig.session_placement='exclusive', "
                "EngineConfig.worker_processes), and none was free within "
                f"{self._wait_timeout:g} s (EngineConfig.worker_wait_timeout); try again "
                "when other cells have ended"
            )
        finally:
            self._waiting.remove(waiter)
            self.wake()

    def _too_large(self, charge: int) -> IsolateUnavailable:
        return IsolateUnavailable(
            f"exec runtime cannot admit this cell: its memory limit "
            f"(RuntimeConfig.memory_limit_bytes) and its isolate's 32 MiB, {charge} bytes, "
            "are above what one worker process admits, "
            f"{self._budget} bytes ((EngineConfig.worker_memory_limit_bytes - 128 MiB) * "
            "EngineConfig.worker_memory_overcommit); lower the one or raise the other"
        )

    def _no_memory(self, charge: int) -> IsolateUnavailable:
        return IsolateUnavailable(
            "exec runtime is at capacity: the memory limits of the cells running on "
            f"the worker processes leave no room for this cell's {charge} bytes "
            "(RuntimeConfig.memory_limit_bytes and 32 MiB for its isolate) within a "
            "worker's budget of "
            f"{self._budget} bytes ((EngineConfig.worker_memory_limit_bytes - 128 MiB) * "
            f"EngineConfig.worker_memory_overcommit, EngineConfig.worker_processes), "
            f"and none was freed within {self._wait_timeout:g} s "
            "(EngineConfig.worker_wait_timeout); try again when other cells have ended"
        )

    def _full(self) -> IsolateUnavailable:
        return IsolateUnavailable(
            f"exec runtime is at capacity: {len(self._live())} worker processes host "
            f"{int(self._per_worker)} isolates each (EngineConfig.isolates_per_worker, "
            "EngineConfig.worker_processes); try again when other cells have ended"
        )

    # -- bookkeeping ---------------------------------------------------------------

    def opened(self, place: Place, seat: Seat, charge: int = 0) -> None:
        """An isolate of ``seat`` with a memory limit of ``charge`` bytes is (being)
        created on ``place``: seat it there."""
        previous = seat.place
        if previous is not None and previous is not place:
            self._unseat(previous, seat)
        seat.place = place
        place.seats[seat] = place.seats.get(seat, 0) + 1
        place.committed += charge
        self.keep_one_spare()

    def closed(self, place: Place, seat: Seat, charge: int = 0) -> None:
        """An isolate of ``seat`` on ``place`` is closed (or was never made)."""
        place.committed -= charge
        if charge:
            self.wake(place)
        count = place.seats.get(seat)
        if count is None:
            return
        if count > 1 or self.mode == "shared":
            place.seats[seat] = max(0, count - 1)
            return
        del place.seats[seat]  # exclusive: the worker is free now
        self.wake()

    def release(self, seat: Seat) -> None:
        """The session is over: it holds no place any more."""
        place, seat.place = seat.place, None
        if place is not None:
            self._unseat(place, seat)

    def _unseat(self, place: Place, seat: Seat) -> None:
        if place.seats.pop(seat, None) is not None and not place.seats:
            if place.quarantine and place.usable:
                place.worker.retire()  # exits once its isolates are closed
            self.wake()

    def strike(self, seat: Seat) -> None:
        """A cell of ``seat`` was running when a worker died (it may have caused the
        death): quarantine the session once that happened often enough."""
        if self._quarantine_after is None:
            return
        now = trio.current_time()
        seat.strikes = [t for t in seat.strikes if now - t < self._quarantine_seconds]
        seat.strikes.append(now)
        if len(seat.strikes) >= self._quarantine_after:
            seat.quarantined_until = now + self._quarantine_seconds

    def dropped(self, place: Place) -> None:
        """``place``'s worker retired or died: its sessions move on their next cells
        (a dead worker's place is forgotten)."""
        if not place.worker.alive and place in self.places:
            self.places.remove(place)
        for seat in place.seats:
            if seat.place is place:
                seat.place = None
        place.seats.clear()
        self.wake()

    def wake(self, freed: Place | None = None) -> None:
        """Something may have freed a worker, or memory (on ``freed``): the first cell
        waiting for a free worker looks again, and the first waiting for memory; so do
        the cells waiting for memory on their own session's worker if that is
        ``freed``. (Not all of them: hundreds of waiters woken at every close would
        cost more than the cells. A cell that is placed wakes the next, see
        :meth:`place`.)"""
        worker_woken = memory_woken = False
        for waiter in self._waiting:
            if not waiter.for_memory:
                if not worker_woken:
                    worker_woken = True
                    waiter.woken.set()
            elif freed is not None and self._bound(waiter.seat) is freed:
                waiter.woken.set()
            elif not memory_woken:
                memory_woken = True
                waiter.woken.set()

    def _bound(self, seat: Seat) -> Place | None:
        """The worker ``seat`` waits for memory on, if only one will do (its own)."""
        if self.mode == "shared" and not seat.quarantined():
            return None
        return seat.place

    def keep_one_spare(self) -> None:
        """While fewer than ``size`` workers run, keep one that serves nobody started,
        so the next new session need not wait for a process to start."""
        live = self._live()
        if len(live) < self._size and all(place.seats for place in live):
            self._start_worker()
