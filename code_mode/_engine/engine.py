"""`Engine`: where isolates live, shared by many sessions.

A session runtime needs isolates; it does not need to own the machinery that makes
them. That machinery — worker processes or engine threads, the warm isolates, the
supervision that replaces a dead worker — is the :class:`Engine`, and many sessions
borrow one, the way many requests share one connection pool in an HTTP client. An idle
session then costs a registry and a nursery, not a process.

Two ways to get one:

* ``async with Engine(EngineConfig(...)) as engine:`` and pass ``engine=engine`` to
  each ``SessionRuntime`` / ``CodeModeSession``. Leaving the block stops the workers
  and threads; every session using it must have been left first.
* Pass nothing: sessions of one ``trio.run`` share a *default engine* per isolation
  mode (:mod:`._default`), started on first use and closed when the run ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Literal

import trio

from .._config import RuntimeConfig
from .._v8 import IsolateLimits, IsolateUnavailable
from ._backend import IsolateBackend, IsolateHandle, IsolateSink
from ._blocking_threads import BlockingWorkers
from ._placement import Seat
from ._process_pool import ProcessPool
from ._thread_backend import ThreadBackend
from ._warm import WarmIsolates
from .config import EngineConfig
from .isolate import isolate_limits

#: What a default RuntimeConfig asks for: warm isolates are set up with it and
#: adjusted when a session's limits differ.
_WARM_LIMITS = isolate_limits(RuntimeConfig())


class Engine:
    """Runs isolates for any number of sessions; use as ``async with Engine(...)``.

    Sessions borrow it (``SessionRuntime(..., engine=engine)``); leaving a session
    leaves the engine running. Leaving the engine's block closes its warm isolates,
    stops its worker processes (killing one that does not exit within 10 seconds) or
    joins its threads: nothing of it is left behind. Sessions still open at that point
    see their cells fail with ``exec runtime ended unexpectedly``.
    """

    def __init__(self, config: EngineConfig | None = None) -> None:
        self._config = config if config is not None else EngineConfig()
        self._running: contextlib.AbstractAsyncContextManager[None] | None = None
        self._creator = BlockingWorkers(
            "code-mode-create", keep_idle=self._config.warm_isolates_burst
        )
        self._disposer = BlockingWorkers("code-mode-dispose")
        self._pool: ProcessPool | None = None
        self._warm: WarmIsolates | None = None
        self._backend: IsolateBackend | None = None
        self._closed = False

    @property
    def config(self) -> EngineConfig:
        return self._config

    @property
    def isolation(self) -> Literal["process", "thread"]:
        return self._config.isolation

    def is_running(self) -> bool:
        """True between entering and leaving the block."""
        return self._backend is not None and not self._closed

    async def __aenter__(self) -> Engine:
        if self._running is not None:
            raise RuntimeError("an Engine can only be entered once")
        self._running = self._open_backends()
        await self._running.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._running is not None
        return await self._running.__aexit__(exc_type, exc, traceback)

    @contextlib.asynccontextmanager
    async def _open_backends(self) -> AsyncIterator[None]:
        """The engine's backend for the length of the block: its background tasks
        (worker supervision, warm refills, trims) run in the block's nursery, and
        leaving the block closes them all."""
        async with trio.open_nursery() as nursery:
            try:
                self._backend = await self._start(nursery)
                yield
            finally:
                self._closed = True
                await self._close_backends()

    async def _start(self, nursery: trio.Nursery) -> IsolateBackend:
        backend: IsolateBackend
        if self._config.isolation == "process":
            self._pool = ProcessPool(nursery, self._config, warm_limits=_WARM_LIMITS)
            await self._pool.prestart()
            return self._pool  # warm isolates per worker (see ProcessPool)
        self._creator.start()
        self._disposer.start()
        backend = ThreadBackend(
            self._creator, self._disposer, parallel_creates=self._config.warm_isolates_burst
        )
        if self._config.warm_isolates > 0:
            self._warm = WarmIsolates(
                backend,
                nursery,
                count=self._config.warm_isolates,
                burst=self._config.warm_isolates_burst,
                limits=_WARM_LIMITS,
            )
            self._warm.refill()
            backend = self._warm
        return backend

    async def _close_backends(self) -> None:
        with trio.CancelScope(shield=True):
            if self._warm is not None:
                await self._warm.aclose()
            if self._pool is not None:
                await self._pool.aclose()
            await self._creator.aclose()
            await self._disposer.aclose()

    @property
    def replays_cells(self) -> bool:
        """A cell whose worker process dies while it waits is replayed elsewhere
        (``process`` isolation: see ``journal.py``)."""
        return self.isolation == "process"

    def seat_session(self) -> SessionSeat:
        """A place on this engine for one session's isolates: create them through it,
        so that they go where ``EngineConfig.session_placement`` puts the session, and
        :meth:`SessionSeat.release` it when the session ends."""
        return SessionSeat(self)

    async def create_isolate(
        self, sink: IsolateSink, limits: IsolateLimits, *, seat: Seat | None = None
    ) -> IsolateHandle:
        """A fresh isolate with the prelude installed, reporting to ``sink`` (raises
        ``IsolateUnavailable``). Without a ``seat`` it counts as a session of its own."""
        if self._backend is None or self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        if self._pool is not None:
            return await self._pool.create_isolate(sink, limits, seat=seat)
        return await self._backend.create_isolate(sink, limits)

    def take_ready_isolate(
        self, sink: IsolateSink, limits: IsolateLimits, *, seat: Seat | None = None
    ) -> IsolateHandle | None:
        """A warm isolate, if one is ready now (no waiting, no task switch); None when
        there is none or the engine is closed (:meth:`create_isolate` then says why)."""
        if self._backend is None or self._closed:
            return None
        if self._pool is not None:
            return self._pool.take_ready_isolate(sink, limits, seat=seat)
        return self._backend.take_ready_isolate(sink, limits)

    async def create_isolate_alone(
        self, sink: IsolateSink, limits: IsolateLimits, *, seat: Seat | None = None
    ) -> IsolateHandle:
        """An isolate on a worker process of its own, started for it and ended with it:
        where a cell suspected of killing its worker is replayed (see ``journal.py``),
        so that if it kills this one too, it takes no other cell with it (and the
        death counts towards quarantining ``seat``'s session)."""
        if self._pool is None or self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        return await self._pool.create_alone(sink, limits, seat=seat)

    def _release(self, seat: Seat) -> None:
        if self._pool is not None:
            self._pool.release(seat)

    # -- for tests and benchmarks --------------------------------------------------

    async def wait_until_settled(self) -> None:
        """Return once no warm isolate is being built (at once without a warm pool).

        The engine refills its warm pools in the background after a cell takes an
        isolate, so a reading of threads or memory taken meanwhile counts a varying
        number of isolates; benchmarks and tests wait for this first."""
        for warm in self.warm_pools():
            await warm.wait_until_filled()

    def warm_pools(self) -> list[WarmIsolates]:
        """The warm isolates, as one pool per worker process (``"process"`` mode) or
        one pool (``"thread"`` mode)."""
        if self._pool is not None:
            return self._pool.warm_pools()
        return [] if self._warm is None else [self._warm]

    def worker_pids(self) -> list[int]:
        """Process ids of the live worker processes (empty in ``"thread"`` mode)."""
        if self._pool is None:
            return []
        return [w.pid for w in self._pool.workers if w.alive and w.pid is not None]


class SessionSeat:
    """One session's place on an :class:`Engine` (from :meth:`Engine.seat_session`):
    the session's cells create their isolates through it, so that they run where the
    engine placed the session (``EngineConfig.session_placement``)."""

    __slots__ = ("_engine", "_seat")

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._seat = Seat()

    @property
    def replays_cells(self) -> bool:
        """A cell whose worker process dies while it waits is replayed elsewhere
        (``process`` isolation: see ``journal.py``)."""
        return self._engine.isolation == "process"

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        return await self._engine.create_isolate(sink, limits, seat=self._seat)

    def take_ready_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle | None:
        return self._engine.take_ready_isolate(sink, limits, seat=self._seat)

    async def create_isolate_alone(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        """See :meth:`Engine.create_isolate_alone`."""
        return await self._engine.create_isolate_alone(sink, limits, seat=self._seat)

    def release(self) -> None:
        """The session is over (its cells are closed): its place is given up."""
        self._engine._release(self._seat)

    def worker_pid(self) -> int | None:
        """The process id of the worker the session is placed on; None before its
        first cell, after its worker died or retired, while it has no cells under
        ``"exclusive"`` placement, and in ``"thread"`` mode (for diagnostics and tests)."""
        place = self._seat.place
        if place is None or not place.usable or self._seat not in place.seats:
            return None
        return place.worker.pid
