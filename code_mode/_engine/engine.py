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

import math
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Literal

import attrs
import trio

from .._config import RuntimeConfig
from .._validators import non_negative_int, optional, positive_finite, positive_int
from ._backend import IsolateBackend, IsolateHandle, IsolateSink
from ._blocking_threads import BlockingWorkers
from ._native import IsolateUnavailable
from ._placement import Seat
from ._process_pool import ProcessPool
from ._thread_backend import ThreadBackend
from ._warm import WarmIsolates

_DEFAULTS = RuntimeConfig()


@attrs.frozen(kw_only=True)
class EngineConfig:
    """How an :class:`Engine` runs isolates. Every field has a documented default."""

    isolation: Literal["process", "thread"] = attrs.field(
        default="process", validator=attrs.validators.in_(("process", "thread"))
    )
    """Where isolates run. ``"process"`` (the default) hosts them in supervised worker
    processes: V8 aborts its whole process on some failures (one huge allocation), and
    then only that worker dies; its cells fail with a clear error and the engine starts
    a new one. ``"thread"`` runs them on threads of this process: lower latency, but
    such a failure ends the application. See ``docs/security.md``."""

    worker_processes: int = attrs.field(default=1, validator=positive_int)
    """Most worker processes running at once in ``"process"`` mode (default 1). Each
    session's cells go to one worker (see ``session_placement``); while fewer than
    this many run and every one already has a session, one more is started ahead for
    the next session. More workers spread sessions wider, so a worker's death ends
    the cells of fewer sessions, at the price of a process each (about 30 MiB of
    PSS, 70 MiB RSS, measured with its warm isolate)."""

    session_placement: Literal["shared", "exclusive"] = attrs.field(
        default="shared", validator=attrs.validators.in_(("shared", "exclusive"))
    )
    """How sessions share the worker processes (``"process"`` mode). All the cells of a
    session run on one worker, for as long as that worker lives and is not recycled;
    a worker's death therefore ends only the cells of the sessions on it.

    ``"shared"`` (the default): a session is placed, at its first cell, on the worker
    with the fewest sessions, and many sessions share a worker. A fatal failure of one
    program ends the running cells of the sessions on its worker (about one
    ``worker_processes``-th of them).

    ``"exclusive"``: a worker serves one session at a time, so one program's fatal
    failure ends cells of its own session only (for an operator whose sessions belong
    to different users). A session holds its worker while it has cells there and gives
    it up when its last cell has closed; at most ``worker_processes`` sessions run
    cells at once. A new session's cell waits (in arrival order) until a worker is
    free, for at most ``worker_wait_timeout``, and then fails with ``exec runtime is
    at capacity: ...``. Set ``worker_processes`` to the number of sessions that may
    run cells at once; each busy session then costs a worker process. The cost, as
    measured, is in ``docs/security.md``."""

    worker_wait_timeout: float = attrs.field(default=10.0, validator=positive_finite)
    """Seconds a cell waits for a free worker process under
    ``session_placement="exclusive"`` when every one of the ``worker_processes``
    serves another session (default 10 s); then it fails with ``exec runtime is at
    capacity: each of the <N> worker processes serves another session (...)``. The
    caller of ``execute`` may give up sooner (cancelling it abandons the cell)."""

    isolates_per_worker: int = attrs.field(default=512, validator=positive_int)
    """Most isolates one worker process hosts at once (default 512), each with a thread
    and a few MiB of its own. When every worker is full and no more may start, a new
    cell fails at once with an error naming this setting, rather than the machine
    running out of memory or threads."""

    warm_isolates: int = attrs.field(default=1, validator=non_negative_int)
    """Isolates kept created ahead of time for the next cells of any session (default
    1), so starting a cell does not wait for V8 to build an isolate and run the
    prelude; in ``"process"`` mode, this many in each worker process, so that a
    session finds one on the worker its cells go to. 0 turns it off."""

    warm_isolates_burst: int = attrs.field(default=4, validator=positive_int)
    """Isolates built at once, ahead of the cells, while cells come faster than one
    isolate is built (default 4; at least ``warm_isolates`` count). Building one is
    about 3 ms of CPU and comes in two halves that run on different threads (V8's
    isolate, then the prelude on the isolate's own thread); building several at once
    keeps both cores of a small machine busy and a few isolates ahead of the cells,
    so back to back a cell seldom waits for a build. (On a 2-core machine 4 gave a
    back-to-back median about 20 % lower than 2, and a longer tail: builds and cells
    share the cores.) When cells are paced the pool refills to ``warm_isolates`` only,
    and 0.1 s after a burst it trims back to it, so an idle engine holds
    ``warm_isolates`` (each a few MiB)."""

    recycle_after_cells: int | None = attrs.field(default=1000, validator=optional(positive_int))
    """After hosting this many isolates, a worker process takes no new ones and exits
    once its last one closes; a fresh worker takes its place (default 1000; ``None``
    never recycles). This bounds what a long-lived worker accumulates (allocator
    fragmentation, V8's process-wide caches)."""

    worker_memory_limit_bytes: int | None = attrs.field(
        default=2 * 1024 * 1024 * 1024, validator=optional(positive_int)
    )
    """Most resident memory (RSS) one worker process may use, in bytes (default 2 GiB;
    ``None``: no limit). ``RuntimeConfig.memory_limit_bytes`` bounds what V8 counts (its
    heap, ArrayBuffers); some memory of a program lives outside both: ICU objects
    behind ``Intl.Segmenter``, ``Intl.DateTimeFormat`` or ``Intl.Collator``, the parser's
    memory for ``eval`` of a huge literal. The engine reads each worker's RSS every
    0.1 s; a worker above the limit is killed, and every cell it hosted fails with
    ``exec runtime ended unexpectedly: the JavaScript worker process died (killed: its
    resident memory of <M> MiB exceeded the limit of <N> bytes
    (EngineConfig.worker_memory_limit_bytes))``; a new worker serves the next cells.
    Only ``"process"`` mode: in ``"thread"`` mode isolates share the host's memory
    (see ``docs/security.md``)."""

    worker_heartbeat_timeout: float = attrs.field(default=10.0, validator=positive_finite)
    """Seconds a worker process may go without answering the engine's heartbeat
    (default 10 s) before it counts as hung (stopped with ``SIGSTOP``, deadlocked):
    it is then killed, its cells fail with ``exec runtime ended unexpectedly: the
    JavaScript worker process died (killed: it did not answer for <T> s
    (EngineConfig.worker_heartbeat_timeout))``, and a new worker replaces it. The
    heartbeat is answered by the worker's command loop, which JavaScript never
    occupies, so a busy program does not count as hung."""

    isolate_close_timeout: float = attrs.field(default=2.0, validator=positive_finite)
    """Seconds the engine waits for a worker process to dispose of an isolate
    (default 2 s). Disposing waits for the isolate's JavaScript to stop, and a few
    built-ins ignore termination (``new Array(2 ** 26).sort()`` runs to its end). After
    this long the cell is closed anyway (its ``cell_closed`` runs, the session may
    end); the worker takes no new isolates and is killed as soon as the stuck
    isolate is the only one it hosts, so the other cells there are not disturbed.
    Only ``"process"`` mode: in ``"thread"`` mode each disposal runs on a thread of
    its own, so a stuck one delays only its own cell."""

    confine_workers: bool = True
    """Whether worker processes confine themselves once V8 is up (default ``True``):
    no new processes, no sockets, no file writes, reads only of what a worker needs
    (seccomp-bpf, Landlock, ``PR_SET_NO_NEW_PRIVS``, rlimits), so that a V8 exploit
    does not get the host user's powers. Where the kernel lacks a mechanism the worker
    runs without it and a warning is logged once. Turn it off only to debug a worker.
    See ``docs/security.md``."""


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
        self._nursery_manager: AbstractAsyncContextManager[trio.Nursery] | None = None
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
        if self._nursery_manager is not None:
            raise RuntimeError("an Engine can only be entered once")
        self._nursery_manager = trio.open_nursery()
        nursery = await self._nursery_manager.__aenter__()
        backend: IsolateBackend
        try:
            if self._config.isolation == "process":
                recycle = self._config.recycle_after_cells
                self._pool = ProcessPool(
                    nursery,
                    self._config.worker_processes,
                    placement=self._config.session_placement,
                    wait_timeout=self._config.worker_wait_timeout,
                    warm_isolates=self._config.warm_isolates,
                    warm_memory_limit_bytes=_DEFAULTS.memory_limit_bytes,
                    warm_max_message_chars=_DEFAULTS.max_message_chars,
                    isolates_per_worker=self._config.isolates_per_worker,
                    recycle_after=math.inf if recycle is None else recycle,
                    memory_limit=self._config.worker_memory_limit_bytes,
                    heartbeat_timeout=self._config.worker_heartbeat_timeout,
                    close_timeout=self._config.isolate_close_timeout,
                    confine=self._config.confine_workers,
                    parallel_creates=self._config.warm_isolates_burst,
                )
                await self._pool.prestart()
                backend = self._pool  # warm isolates per worker (see ProcessPool)
            else:
                self._creator.start()
                self._disposer.start()
                backend = ThreadBackend(
                    self._creator,
                    self._disposer,
                    parallel_creates=self._config.warm_isolates_burst,
                )
            if self._config.warm_isolates > 0 and self._pool is None:
                self._warm = WarmIsolates(
                    backend,
                    nursery,
                    count=self._config.warm_isolates,
                    burst=self._config.warm_isolates_burst,
                    # What a default RuntimeConfig asks for: warm isolates are set up
                    # with it and adjusted when a session's limits differ.
                    memory_limit_bytes=_DEFAULTS.memory_limit_bytes,
                    max_message_chars=_DEFAULTS.max_message_chars,
                )
                self._warm.refill()
                backend = self._warm
        except BaseException as error:
            await self._close_backends()
            await self._nursery_manager.__aexit__(type(error), error, error.__traceback__)
            raise
        self._backend = backend
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        self._closed = True
        assert self._nursery_manager is not None
        await self._close_backends()
        return await self._nursery_manager.__aexit__(exc_type, exc, traceback)

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
        self,
        sink: IsolateSink,
        *,
        memory_limit_bytes: int,
        max_message_chars: int,
        seat: Seat | None = None,
    ) -> IsolateHandle:
        """A fresh isolate with the prelude installed, reporting to ``sink`` (raises
        ``IsolateUnavailable``). Without a ``seat`` it counts as a session of its own."""
        if self._backend is None or self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        if self._pool is not None:
            return await self._pool.create_isolate(
                sink,
                memory_limit_bytes=memory_limit_bytes,
                max_message_chars=max_message_chars,
                seat=seat,
            )
        return await self._backend.create_isolate(
            sink, memory_limit_bytes=memory_limit_bytes, max_message_chars=max_message_chars
        )

    def take_ready_isolate(
        self,
        sink: IsolateSink,
        *,
        memory_limit_bytes: int,
        max_message_chars: int,
        seat: Seat | None = None,
    ) -> IsolateHandle | None:
        """A warm isolate, if one is ready now (no waiting, no task switch); None when
        there is none or the engine is closed (:meth:`create_isolate` then says why)."""
        if self._backend is None or self._closed:
            return None
        if self._pool is not None:
            return self._pool.take_ready_isolate(
                sink,
                memory_limit_bytes=memory_limit_bytes,
                max_message_chars=max_message_chars,
                seat=seat,
            )
        return self._backend.take_ready_isolate(
            sink, memory_limit_bytes=memory_limit_bytes, max_message_chars=max_message_chars
        )

    async def create_isolate_alone(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        """An isolate on a worker process of its own, started for it and ended with it:
        where a cell suspected of killing its worker is replayed (see ``journal.py``),
        so that if it kills this one too, it takes no other cell with it."""
        if self._pool is None or self._closed:
            raise IsolateUnavailable("exec runtime is not available: its engine is closed")
        return await self._pool.create_alone(
            sink, memory_limit_bytes=memory_limit_bytes, max_message_chars=max_message_chars
        )

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

    async def create_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        return await self._engine.create_isolate(
            sink,
            memory_limit_bytes=memory_limit_bytes,
            max_message_chars=max_message_chars,
            seat=self._seat,
        )

    def take_ready_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle | None:
        return self._engine.take_ready_isolate(
            sink,
            memory_limit_bytes=memory_limit_bytes,
            max_message_chars=max_message_chars,
            seat=self._seat,
        )

    async def create_isolate_alone(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        """See :meth:`Engine.create_isolate_alone`."""
        return await self._engine.create_isolate_alone(
            sink, memory_limit_bytes=memory_limit_bytes, max_message_chars=max_message_chars
        )

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
