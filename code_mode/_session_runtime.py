"""`SessionRuntime`: owns the cells of one agent session (``docs/runtime.md``).

The session is an async context manager around a trio nursery. Each admitted cell is
one task in that nursery with its own cancel scope, so leaving the ``async with``
block is the whole teardown story: every live cell is terminated, its callbacks are
cancelled, its ``cell_closed`` runs (shielded), and only then does the block exit.

State:

* the *registry* ``cell id -> Live(cell) | Closing``, guarded by one FIFO
  ``trio.Lock`` (ordering of admissions and shutdown relies on its fairness);
* a live count of registry entries that ``shutdown`` waits on;
* the session's stored values, merged from each completing cell: kept as the JSON text
  the runtime's ``store`` wrote, never parsed on the host, each encoded once as a member
  of the JSON of the whole map, which is kept ready for the next cell's start command
  (so neither a start nor a commit costs more than a copy of text, whatever the values
  hold, and a commit encodes only what it writes);
* one :class:`_Phase`: *new*, *open*, *rejecting* (no new ``execute`` may start; from
  the moment a shutdown begins) and *closed* (set under the lock, so an ``execute`` that
  queued on the lock before a ``shutdown`` is still admitted: a caller that asked first
  is served first; the drop sets it at once).

The nursery is opened by :func:`open_session_runtime` (trio's advice: a background
task is part of the API, so it is opened by an ``open_*`` context manager);
``async with SessionRuntime(...)`` enters the same manager.
"""

from __future__ import annotations

import enum
import itertools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Final

import attrs
import trio

from ._cell import Cell, CellHost, Observer, OneShot
from ._config import RuntimeConfig
from ._delegate import ExecuteRequest, SessionRuntimeDelegate, describe_exception
from ._engine import Engine, SessionSeat, default_engine
from ._errors import DuplicateCell, MissingCell, ShuttingDown
from ._resumption import JournalMirror
from ._types import CellEvent, CellId, Completed, ObserveMode
from ._validators import utf16_length

__all__ = ["PendingEvent", "SessionRuntime", "StartedCell", "open_session_runtime"]

logger = logging.getLogger("code_mode")

_CLOSING: Final = "closing"


class _Phase(enum.Enum):
    """Where a session runtime is in its one lifetime."""

    NEW = "new"  # not entered yet
    OPEN = "open"  # entered: cells are admitted
    REJECTING = "rejecting"  # a shutdown began: no new execute starts
    CLOSED = "closed"  # no admission, not even one queued on the lock before


@attrs.frozen(eq=False)
class StartedCell:
    """An admitted cell. Not awaiting :meth:`initial_event` does not stop it."""

    cell_id: CellId
    _observer: Observer = attrs.field(alias="observer", repr=False)

    async def initial_event(self) -> CellEvent:
        """The first event of the cell, for the observe mode given to ``execute``."""
        return await self._observer.wait()


@attrs.frozen(eq=False)
class PendingEvent:
    """An observation already admitted (ordered) by ``begin_observe``."""

    cell_id: CellId
    _waiter: OneShot[CellEvent] = attrs.field(alias="waiter", repr=False)

    async def event(self) -> CellEvent:
        """Wait for the observation's outcome."""
        return await self._waiter.wait()


class SessionRuntime:
    """Runs cells for one agent session; use as ``async with SessionRuntime(...)``.

    ``engine``: where the isolates run (see :class:`~code_mode.Engine`); sessions share
    engines, and leaving a session leaves its engine running. Without one, the session
    borrows the current trio run's default engine for ``config.isolation``.

    ``on_finished``: push. Called as ``await on_finished(cell_id, completed)`` when a
    cell that was handed back to its caller still running (an observation of it ended
    with ``Yielded`` or ``Pending``) completes, fails or breaks a limit while nothing
    observes it: the ``Completed`` an observation would have received, which no
    observation can receive any more (the cell is gone from then on). Each such cell's
    end reaches the host exactly once: through the observation attached when it ends,
    through ``terminate``, or through this callback. Cells you end yourself
    (``terminate``, ``shutdown``, leaving the block) are never pushed. A push never
    comes before ``execute`` has returned the cell's id. It runs in the cell's task,
    before ``cell_closed``; a shutdown waits for it, leaving the block by an exception
    cancels it, and what it raises is logged. Keep it short: hand the
    result to your agent loop (a memory channel) rather than running the model in it.
    """

    def __init__(
        self,
        delegate: SessionRuntimeDelegate,
        config: RuntimeConfig | None = None,
        *,
        engine: Engine | None = None,
        on_finished: Callable[[CellId, Completed], Awaitable[None]] | None = None,
    ) -> None:
        self._delegate = delegate
        self._on_finished = on_finished
        self._config = config if config is not None else RuntimeConfig()
        if engine is not None and self._config.isolation not in (None, engine.isolation):
            raise ValueError(
                f"RuntimeConfig(isolation={self._config.isolation!r}) does not match the "
                f"engine given, which runs isolates with isolation={engine.isolation!r}"
            )
        self._engine = engine
        self._registry: dict[CellId, Cell | str] = {}
        self._registry_lock = trio.Lock()
        self._cell_count = 0
        self._count_changed = trio.Event()
        # key -> `"key":"<JSON text, as a JSON string>"`, the member of `_stored_json`:
        # each value encoded once, when it is written, never again at a later commit.
        self._stored_members: dict[str, str] = {}
        self._stored_units: dict[str, int] = {}  # key -> UTF-16 units of key and text
        self._stored_json = "{}"  # the members joined, as the start command carries it
        self._ids = itertools.count(1)
        #: Gives each new cell a journal mirror (or None): see ``ExecuteRequest``.
        self.journal_mirrors: Callable[[CellId, ExecuteRequest], JournalMirror | None] | None
        self.journal_mirrors = None
        self._phase = _Phase.NEW
        self._exit_stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._host: CellHost | None = None
        #: Where its cells run on the engine (from entering; for diagnostics and tests).
        self._seat: SessionSeat | None = None

    @property
    def config(self) -> RuntimeConfig:
        return self._config

    @property
    def engine(self) -> Engine | None:
        """The engine this session's isolates run on (known once the block is entered)."""
        return self._engine

    # -- the session block ---------------------------------------------------------

    async def __aenter__(self) -> SessionRuntime:
        stack = AsyncExitStack()
        await stack.enter_async_context(self._running())
        self._exit_stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._exit_stack is not None
        return await self._exit_stack.__aexit__(exc_type, exc, traceback)

    @asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        """The session's lifetime: its seat on the engine, and the nursery its cells
        run in; leaving it is the drop."""
        if self._phase is not _Phase.NEW:
            raise RuntimeError("a SessionRuntime can only be entered once")
        self._phase = _Phase.REJECTING  # until the nursery is open
        if self._engine is None:
            self._engine = await default_engine(self._config.isolation or "process")
        elif not self._engine.is_running():
            raise RuntimeError(
                "the engine given to this session is not running: "
                "open it with `async with Engine(...)` around the session"
            )
        # Where this session's cells run (EngineConfig.session_placement): all on one
        # worker process, given up when the block ends.
        seat = self._seat = self._engine.seat_session()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._host = CellHost(
                    nursery=nursery,
                    delegate=self._delegate,
                    config=self._config,
                    backend=seat,
                    commit_writes=self._commit_writes,
                    close_cell=self._close_cell,
                    forget_cell=self._forget_cell,
                    on_finished=self._on_finished,
                )
                self._phase = _Phase.OPEN
                try:
                    yield
                finally:
                    # The drop: close without taking the registry lock (another task
                    # may hold it), terminate every cell, and let the nursery wait for
                    # their shielded cleanup.
                    self._phase = _Phase.CLOSED
                    for entry in list(self._registry.values()):
                        if isinstance(entry, Cell):
                            entry.request_shutdown()
        finally:
            seat.release()

    def is_alive(self) -> bool:
        """True from entering the block until shutdown or exit begins; never again."""
        return self._phase is _Phase.OPEN

    @property
    def cell_count(self) -> int:
        """Cells not closed yet: running, finished with a final result nobody has
        received yet, or closing. A server that is stopping waits for this to reach 0
        (:meth:`wait_no_cells`), so that it loses no result."""
        return self._cell_count

    @property
    def pending_results(self) -> int:
        """Cells whose final result has yet to reach anyone: running, being terminated,
        or finished with nobody observing them yet (closing cells are not counted)."""
        return sum(
            1
            for entry in self._registry.values()
            if isinstance(entry, Cell) and entry.result_pending
        )

    async def wait_no_cells(self) -> None:
        """Return once :attr:`cell_count` is 0 (at once if it is)."""
        await self._wait_cell_count(0)

    @property
    def stored_values(self) -> dict[str, str]:
        """The session's stored values, key -> the JSON text of the value (a copy):
        what a host that keeps them outside the process (the MCP server's store) saves
        after a cell completes."""
        values: dict[str, str] = json.loads(self._stored_json)
        return values

    def replace_stored_values(self, values: dict[str, str]) -> None:
        """Make ``values`` (key -> JSON text, as :attr:`stored_values` gives them) the
        session's stored values; cells started from now on load them. For a host that
        keeps them outside the process and may have had them changed elsewhere (another
        MCP server of the same session); not checked against the limits, which held
        when they were stored."""
        self._stored_members = {
            key: json.dumps(key, ensure_ascii=False) + ":" + json.dumps(text, ensure_ascii=False)
            for key, text in values.items()
        }
        self._stored_units = {
            key: utf16_length(key) + utf16_length(text) for key, text in values.items()
        }
        self._stored_json = "{" + ",".join(self._stored_members.values()) + "}"

    # -- operations ----------------------------------------------------------------

    async def execute(self, request: ExecuteRequest, initial_mode: ObserveMode) -> StartedCell:
        """Admit and start a cell running ``request.source``; the initial observer
        (``initial_mode``) is attached before the program can produce anything."""
        if self._phase is not _Phase.OPEN or self._host is None:
            raise ShuttingDown()
        cell_id = CellId(str(next(self._ids)))
        stored_json = self._stored_json
        lock = self._registry_lock
        await self._acquire_registry_lock()
        try:
            if self._is_closed():  # since the lock was asked for: by the drop
                raise ShuttingDown()
            if cell_id in self._registry:
                raise DuplicateCell(cell_id)
            if request.journal_mirror is None and self.journal_mirrors is not None:
                mirror = self.journal_mirrors(cell_id, request)
                if mirror is not None:
                    request = attrs.evolve(request, journal_mirror=mirror)
            cell = Cell(cell_id, request, self._host)
            observer = cell.admit(initial_mode)
            self._registry[cell_id] = cell
            self._publish_count()
            # With a warm isolate ready the program starts right here, without
            # waiting (so without a task switch before its start command).
            started = cell.start_now(stored_json)
            assert self._nursery is not None
            self._nursery.start_soon(cell.run, stored_json, name=f"code_mode cell {cell_id}")
        finally:
            lock.release()
        if started:
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:
            # The isolate is created outside the lock: a worker that does not answer
            # holds up only this call, which its caller may cancel.
            await cell.wait_started()
        cell.mark_known()
        return StartedCell(cell_id, observer=observer)

    def _is_closed(self) -> bool:
        return self._phase is _Phase.CLOSED

    async def _acquire_registry_lock(self) -> None:
        """``self._registry_lock.acquire()``, without the task switch ``acquire``
        makes after taking a free lock (one scheduler pass less for each cell's start
        and close). A held lock is queued on as before, so admissions and shutdown
        keep their arrival order; a cancelled caller still stops here."""
        lock = self._registry_lock
        if lock.locked():
            await lock.acquire()
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
            lock.acquire_nowait()

    def output_handed(self, cell_id: CellId) -> int:
        """How many output items of the live cell ``cell_id`` observers have been
        handed (0 for a cell that is not live). A stateless server records it with the
        cell's journal, so that a host resuming the cell hands on only the rest."""
        cell = self._cell(cell_id)
        return 0 if cell is None else cell.output_handed

    def _cell(self, cell_id: CellId) -> Cell | None:
        """The live cell ``cell_id``, if any (a seam for tests)."""
        entry = self._registry.get(cell_id)
        return entry if isinstance(entry, Cell) else None

    async def _live_cell(self, cell_id: CellId) -> Cell:
        async with self._registry_lock:
            entry = self._registry.get(cell_id)
        if not isinstance(entry, Cell):
            raise MissingCell(cell_id)
        return entry

    async def begin_observe(self, cell_id: CellId, mode: ObserveMode) -> PendingEvent:
        """Admit an observation of ``cell_id`` now; await ``.event()`` for it."""
        cell = await self._live_cell(cell_id)
        return PendingEvent(cell_id, waiter=cell.begin_observe(mode))

    async def observe(self, cell_id: CellId, mode: ObserveMode) -> CellEvent:
        """The next event of ``cell_id``: new output since the last one, or the end."""
        pending = await self.begin_observe(cell_id, mode)
        return await pending.event()

    async def terminate(self, cell_id: CellId) -> CellEvent:
        """Stop ``cell_id`` (even mid-``while (true) {}``) and return its final event:
        ``Terminated``, or the ``Completed`` of a cell that had already finished."""
        cell = await self._live_cell(cell_id)
        return await cell.request_terminate().wait()

    async def quiesce(self, cell_id: CellId) -> None:
        """Prepare ``cell_id`` to be stopped and resumed by another host (its host is
        stopping on purpose): from now on its program's tool calls are not started
        here (the host resuming it starts them), and this returns once every call
        started here has been answered and the answer recorded in the cell's journal
        (its mirror copies it behind: wait for the copy before handing the cell on).
        Only a cell with a journal mirror (``ExecuteRequest.journal_mirror``) is
        affected; others return at once. Unbounded: a tool may take its time, so bound
        it and then :meth:`terminate` the cell."""
        cell = await self._live_cell(cell_id)
        await cell.quiesce()

    async def preempt(self, cell_id: CellId) -> bool:
        """End the observation of ``cell_id`` in progress now (the initial event of an
        ``execute``, or an ``observe``): it resolves with ``Yielded`` and the output so
        far, and the program keeps running (a later observation, or the push, gets
        its end). For a host whose user typed something while the model waits on a
        program. False, changing nothing, when nothing observes the cell (or there is
        no such cell, or it is already ending)."""
        try:
            cell = await self._live_cell(cell_id)
        except MissingCell:
            return False
        return cell.preempt()

    async def terminate_all(self) -> list[CellId]:
        """Terminate every cell of the session that has not been closed, and return once
        each of them is: the reference's interrupted turn (openai/codex #51835). A
        running cell (a background one of an earlier turn included) is stopped, its
        nested tool calls cancelled, and an observation attached to it resolves with
        ``Terminated``; a finished cell whose result nobody received is dropped; a
        later ``observe`` of any of them raises ``MissingCell``. None is pushed.
        Stored values stay, and the session keeps admitting cells (one admitted while
        this waits is not touched). Idempotent; never raises for a failing
        ``cell_closed``. Returns the ids of the cells it ended, in admission order."""
        async with self._registry_lock:
            # Not those whose result was received: they are closing by themselves.
            cells = [
                entry
                for entry in self._registry.values()
                if isinstance(entry, Cell) and entry.result_pending
            ]
        for cell in cells:
            cell.request_shutdown()
        ids = [cell.id for cell in cells]
        del cells  # the runtime keeps no reference to a closed cell (nor its delegate)
        while not self._registry.keys().isdisjoint(ids):
            await self._count_changed.wait()
        return ids

    async def shutdown(self) -> None:
        """Close the session: admissions already queued on the registry lock are let
        through, every live cell is terminated, and this returns once every admitted
        cell has finished its ``cell_closed``. Idempotent; never raises for a failing
        ``cell_closed``."""
        if self._phase is not _Phase.CLOSED:
            self._phase = _Phase.REJECTING
        async with self._registry_lock:
            self._phase = _Phase.CLOSED
            cells = [entry for entry in self._registry.values() if isinstance(entry, Cell)]
        for cell in cells:
            cell.request_shutdown()
        await self._wait_cell_count(0)

    # -- internals the cells use -----------------------------------------------------

    def _publish_count(self) -> None:
        self._cell_count = len(self._registry)
        self._count_changed.set()
        self._count_changed = trio.Event()

    async def _wait_cell_count(self, count: int) -> None:
        while self._cell_count != count:
            await self._count_changed.wait()

    def _commit_writes(
        self, writes: dict[str, str], members: dict[str, str] | None = None
    ) -> str | None:
        """Commit a cell's writes (key -> JSON text); ``members``, when given, holds
        each one's member of ``_stored_json`` already encoded (by the engine, in steps:
        encoding megabytes here at once held the trio thread for tens of ms)."""
        if not writes:
            return None
        # Counted as the isolate counts them: JSON text, in UTF-16 code units.
        units = {key: utf16_length(key) + utf16_length(text) for key, text in writes.items()}
        size = sum(units.values()) + sum(
            count for key, count in self._stored_units.items() if key not in writes
        )
        entries = len(self._stored_units.keys() | writes.keys())
        if entries > self._config.max_stored_entries or size > self._config.max_stored_chars:
            return (
                "code mode session storage exceeds its limit of "
                f"{self._config.max_stored_entries} entries or "
                f"{self._config.max_stored_chars} serialized bytes"
            )
        for key, text in writes.items():
            member = None if members is None else members.get(key)
            self._stored_members[key] = member or (
                json.dumps(key, ensure_ascii=False) + ":" + json.dumps(text, ensure_ascii=False)
            )
        self._stored_units.update(units)
        self._stored_json = "".join(["{", ",".join(self._stored_members.values()), "}"])
        return None

    def _forget_cell(self, cell_id: CellId) -> None:
        """A cell that never started (no isolate): it leaves no trace, and the
        delegate never heard of it."""
        self._registry.pop(cell_id, None)
        self._publish_count()

    async def _close_cell(self, cell_id: CellId) -> None:
        await self._acquire_registry_lock()
        entry = self._registry.get(cell_id)
        delegate = entry.delegate if isinstance(entry, Cell) else self._delegate
        self._registry[cell_id] = _CLOSING
        self._registry_lock.release()
        try:
            await delegate.cell_closed(cell_id)
        except Exception as error:
            logger.warning(
                "failed to close code mode delegate state for cell %s: %s",
                cell_id,
                describe_exception(error),
            )
        await self._acquire_registry_lock()
        self._registry.pop(cell_id, None)
        self._publish_count()
        self._registry_lock.release()


@asynccontextmanager
async def open_session_runtime(
    delegate: SessionRuntimeDelegate,
    config: RuntimeConfig | None = None,
    *,
    engine: Engine | None = None,
    on_finished: Callable[[CellId, Completed], Awaitable[None]] | None = None,
) -> AsyncIterator[SessionRuntime]:
    """Open a :class:`SessionRuntime` whose cells run in a nursery of this block
    (the same as ``async with SessionRuntime(...)``; the arguments are its)."""
    async with SessionRuntime(delegate, config, engine=engine, on_finished=on_finished) as runtime:
        yield runtime
