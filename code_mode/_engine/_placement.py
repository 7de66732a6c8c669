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

    __slots__ = ("place",)

    def __init__(self) -> None:
        #: The place its next isolates go to; None until its first, or after a move.
        self.place: Place | None = None


class Place:
    """A worker process, the sessions seated on it, and its warm isolates."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker = worker
        #: Sessions seated here, and how many isolates each has here now.
        self.seats: dict[Seat, int] = {}
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
    __slots__ = ("seat", "woken")

    def __init__(self, seat: Seat) -> None:
        self.seat = seat
        self.woken = trio.Event()


class Placer:
    """Seats sessions on places (see the module's docstring). ``start_worker`` starts
    a worker process and returns its place, already in :attr:`places`."""

    def __init__(
        self,
        mode: SessionPlacement,
        size: int,
        *,
        start_worker: Callable[[], Place],
        isolates_per_worker: float = math.inf,
        wait_timeout: float = 10.0,
    ) -> None:
        self.mode = mode
        self._size = size
        self._start_worker = start_worker
        self._per_worker = isolates_per_worker
        self._wait_timeout = wait_timeout
        #: Every worker's place, retiring ones included, until the worker is gone.
        self.places: list[Place] = []
        self._waiting: collections.deque[_Waiter] = collections.deque()

    # -- choosing ------------------------------------------------------------------

    def _live(self) -> list[Place]:
        return [place for place in self.places if place.usable]

    def _has_room(self, place: Place) -> bool:
        return place.worker.load < self._per_worker

    def place_now(self, seat: Seat) -> Place | None:
        """Where ``seat``'s next isolate goes, chosen without waiting (a worker may be
        started for it). None in ``"exclusive"`` mode when it must wait for a worker.
        Raises ``IsolateUnavailable`` when every worker is full
        (``EngineConfig.isolates_per_worker``). Records nothing: :meth:`opened` does."""
        current = seat.place
        if current is not None and current.usable and seat in current.seats:
            if self._has_room(current):
                return current
            if self.mode == "exclusive":
                raise self._full()
        live = self._live()
        if self.mode == "shared":
            open_ = [place for place in live if self._has_room(place)]
            if len(live) < self._size and all(place.seats for place in open_):
                return self._start_worker()  # no worker without a session is left
            if not open_:
                raise self._full()
            # The fewest sessions first; among equals, a worker that is up, with an
            # isolate ready, the least loaded.
            return min(
                open_,
                key=lambda p: (len(p.seats), not p.worker.ready, not p.warm_ready, p.worker.load),
            )
        if self._waiting and self._waiting[0].seat is not seat:
            return None  # others were waiting first
        free = [place for place in live if not place.seats and self._has_room(place)]
        if current in free:
            return current
        if free:
            return min(free, key=lambda p: (not p.worker.ready, not p.warm_ready))
        if len(live) < self._size:
            return self._start_worker()
        return None

    async def place(self, seat: Seat) -> Place:
        """:meth:`place_now`, waiting in ``"exclusive"`` mode for a free worker (at
        most ``wait_timeout`` seconds, in arrival order; cancellable)."""
        place = self.place_now(seat)
        if place is not None:
            return place
        waiter = _Waiter(seat)
        self._waiting.append(waiter)
        try:
            with trio.move_on_after(self._wait_timeout):
                while True:
                    await waiter.woken.wait()
                    waiter.woken = trio.Event()
                    place = self.place_now(seat)
                    if place is not None:
                        return place
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

    def _full(self) -> IsolateUnavailable:
        return IsolateUnavailable(
            f"exec runtime is at capacity: {len(self._live())} worker processes host "
            f"{int(self._per_worker)} isolates each (EngineConfig.isolates_per_worker, "
            "EngineConfig.worker_processes); try again when other cells have ended"
        )

    # -- bookkeeping ---------------------------------------------------------------

    def opened(self, place: Place, seat: Seat) -> None:
        """An isolate of ``seat`` is (being) created on ``place``: seat it there."""
        previous = seat.place
        if previous is not None and previous is not place:
            self._unseat(previous, seat)
        seat.place = place
        place.seats[seat] = place.seats.get(seat, 0) + 1
        self.keep_one_spare()

    def closed(self, place: Place, seat: Seat) -> None:
        """An isolate of ``seat`` on ``place`` is closed (or was never made)."""
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
            self.wake()

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

    def wake(self) -> None:
        """Something may have freed a worker: the first waiting cell looks again."""
        if self._waiting:
            self._waiting[0].woken.set()

    def keep_one_spare(self) -> None:
        """While fewer than ``size`` workers run, keep one that serves nobody started,
        so the next new session need not wait for a process to start."""
        live = self._live()
        if len(live) < self._size and all(place.seats for place in live):
            self._start_worker()
