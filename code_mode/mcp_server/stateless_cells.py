"""The stateless cells a server runs: their output into the store, their takeover when one stops.

:mod:`.stateless` answers the requests; this module is the server's side of the cells
it hands back running (``Script running with cell ID <handle>``):

* a **pump** per cell observes it and appends its output, then its end, to the store's
  event stream (:mod:`.cell_events`), where a ``wait`` on any server reads it; before
  appending it waits for the cell's journal copy (:mod:`.journal_copy`) to hold every
  record the output depends on;
* the **command loop** carries out what other servers sent through the store
  (``terminate``);
* the **heartbeat** keeps this server alive in the store's registry;
* the **reaper** claims the cells of servers whose heartbeat stopped (one claimant
  wins each, atomically) and **resumes** each from its journal copy: a new cell on
  this server replays the program (``ExecuteRequest.resume``): tool calls that
  completed are answered from the copy, a call that was in flight runs again at most
  once (or, for a tool that is not idempotent, the cell fails saying so), output the
  client was given is not given again, and the cell goes on live, pumped from here;
* a draining server **hands its cells over** (:meth:`RunningCells.hand_over`): it
  lets the ``exec`` calls in progress register their cells, lets each cell's tool
  calls in flight finish (starting no new one: the server resuming the cell starts
  it), stops the cells, finishes copying their journals and retires from the
  registry, so that the others claim them at once instead of waiting out
  ``drain_deadline``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Final

import trio

from .. import SessionRuntime, StartedCell
from .._delegate import ExecuteRequest
from .._errors import AlreadyTerminating, MissingCell, ShuttingDown
from .._resumption import Resumption
from .._types import CellEvent, CellId, Completed, Pending, Terminated, YieldAfter, Yielded
from .cell_events import encode_end, encode_output
from .journal_copy import StoreMirror, read_copy
from .sessions import Refused, SessionEntry, SessionPool
from .store import CellRecord, Store, StoreError, StoreFull

__all__ = ["OVERFLOW_TEXT", "PUMP_PERIOD", "RunningCells"]

logger = logging.getLogger("code_mode.mcp")

PUMP_PERIOD: Final = 0.25
"""Seconds between two appends of a running cell's new output to the store (its end
is appended at once)."""

OVERFLOW_TEXT: Final = (
    "the program was ended because its output passed the bound its code mode store "
    "keeps of one program's output (the SQLite store's max_cell_bytes). Its output up to "
    "then is above; print less (summarize, or store() large values and print a part), "
    "or ask the operator for a larger bound"
)
"""The error a cell ends with when the store refuses more of its output (``StoreFull``)."""

_PRUNE_AT: Final = 1024
_RETRY: Final = 0.5  # seconds before a store operation of a background task is retried


def _lost(reason: str) -> Completed:
    return Completed(
        [],
        "the code mode server running this program stopped before the program ended, "
        f"and the program could not be resumed: {reason}. Its output up to then is "
        "above; the stored values of its session are kept (those it was about to write "
        "are not)",
    )


class RunningCells:
    """The stateless cells this server runs (see the module). ``local``: the store
    lives in this process (``memory://``), so nothing survives the server and journals
    are not copied; ``save``: writes a session's changed stored values to the store."""

    def __init__(
        self,
        store: Store,
        server: str,
        *,
        local: bool,
        save: Callable[[str, dict[str, str], dict[str, str]], Awaitable[None]],
        on_end: Callable[[SessionEntry, str, float], Awaitable[None]] | None = None,
    ) -> None:
        self._store = store
        self._on_end = on_end  # push: a session's cell ended (its entry, handle, start)
        self._server = server
        self._local = local
        self._save = save
        self._pool: SessionPool | None = None
        # Cells this server pumps: handle -> (their session entry, the session's own id).
        self._pumped: dict[str, tuple[SessionEntry, CellId]] = {}
        self._pump_started: dict[str, float] = {}  # handle -> when its pump started
        self._pumps_changed = trio.Event()
        self._starting = 0  # exec calls that may yet register a cell here
        self._ending = 0  # ends being appended
        # A drain hands the cells over (hand_over): what runs here stops, in order.
        self._handing_over = False
        self._handover_grace = 0.0
        self._reaping = trio.Lock()  # held by a pass of the reaper
        self._heartbeat_sleep = trio.CancelScope()
        self._heartbeats_done = trio.Event()
        self._heartbeating = False
        self._retired = False  # the command loop stops (hand_over)
        self._commanding = False
        self._commands_done = trio.Event()
        # Cells of this server a terminate was sent to while they did not run here.
        self._orders: set[str] = set()
        # Cells claimed from stopped servers and not yet resumed (the store failed).
        self._claimed: list[tuple[str, CellRecord]] = []
        # A store in this process (memory://) ends with it: a draining server waits for
        # the ends it holds to be collected, as it does for stateful sessions.
        self._uncollected: dict[str, str] = {}  # handle -> its session
        # With a shared store, cells handed over from here, and ends appended here, that
        # no wait here has collected yet: a stateful MCP session waiting on one stays
        # open while draining (its client collects the end here, from the store).
        self._handed: dict[str, str] = {}  # handle -> its session
        self._collected = trio.Event()
        self._changes = trio.lowlevel.ParkingLot()  # what holds() answers changed
        self._prune_at = _PRUNE_AT  # uncollected ends past which expired ones are dropped

    @property
    def copies_journals(self) -> bool:
        """Whether cells' journals are copied to the store (a shared store)."""
        return not self._local

    @contextmanager
    def starting(self) -> Iterator[None]:
        """Around an ``exec`` call that may register a cell here: a hand-over waits
        for it. Enter it in the same step as the check that the server is not
        draining (no checkpoint between), so that no ``exec`` slips past both."""
        self._starting += 1
        try:
            yield
        finally:
            self._starting -= 1
            self._pumps_changed.set()
            self._changes.unpark_all()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The server's heartbeat, command loop and reaper, for the block."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._heartbeats)
            nursery.start_soon(self._commands)
            nursery.start_soon(self._reaper)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()

    def serve(self, pool: SessionPool | None) -> None:
        """The sessions resumed cells are opened in (``None``: none now)."""
        self._pool = pool

    # -- pumping ------------------------------------------------------------------------

    async def pump(
        self,
        pool: SessionPool,
        entry: SessionEntry,
        handle: str,
        local: CellId,
        values: dict[str, str],
        mirror: StoreMirror | None,
        handed: int | None,
        started: StartedCell | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Append the cell's output to the store until it ends, then its end; the
        session stays open meanwhile (a running cell is activity). With a ``mirror``,
        its journal copy is written meanwhile (``handed``: see
        :meth:`StoreMirror.write`); ``started``: a resumed cell, whose first event is
        its initial one."""
        self._pumped[handle] = (entry, local)
        self._pump_started[handle] = trio.current_time()
        try:
            async with pool.use(entry.key), trio.open_nursery() as copying:
                if mirror is not None:
                    await copying.start(mirror.write, handle, handed)
                task_status.started()
                await self._pumping(entry, handle, local, values, mirror, started)
                copying.cancel_scope.cancel()
        finally:
            self._pump_started.pop(handle, None)
            self._pumps_changed.set()
            self._changes.unpark_all()
            pool.close_if_quiet(entry.key)

    async def _pumping(
        self,
        entry: SessionEntry,
        handle: str,
        local: CellId,
        values: dict[str, str],
        mirror: StoreMirror | None,
        started: StartedCell | None,
    ) -> None:
        assert entry.session is not None
        runtime = entry.session.runtime
        while handle in self._pumped and not self._handing_over:
            try:
                if started is not None:
                    event: CellEvent = await started.initial_event()
                    started = None
                else:
                    event = await runtime.observe(local, YieldAfter(PUMP_PERIOD))
            except (MissingCell, ShuttingDown):  # ended by a terminate command, or the
                event = Terminated([])  # session closed (a drain past its deadline)
            except Exception as error:  # busy, terminating: look again shortly
                logger.debug("pumping cell %s: %s", local, error)
                await trio.sleep(PUMP_PERIOD)
                continue
            if mirror is not None:
                await mirror.flushed()  # the records this output depends on, first
            if isinstance(event, Yielded | Pending):
                output = event.content_items
                if not output or await self._kept(handle, encode_output(output)):
                    continue
                event = await self._overflowed(runtime, local)
            if isinstance(event, Completed):
                await self._retrying(lambda: self._save(entry.key, values, runtime.stored_values))
            await self.end(handle, event)
        if self._handing_over and handle in self._pumped:
            await self._hand_over_cell(entry, handle, local, values, mirror)

    async def _kept(self, handle: str, event: str) -> bool:
        """Append output; ``False`` when the store refuses more of this cell's output
        (retrying cannot help: the cell must end instead, see :meth:`_overflowed`)."""
        try:
            await self._append(handle, event)
        except StoreFull as error:
            logger.warning("code mode store: %s (ending the cell)", error)
            return False
        return True

    def holds(self, session: str) -> bool:
        """Whether a cell of the session handle ``session`` is pumped here, or its end
        waits in a local store to be collected (:class:`.sessions.Elsewhere`)."""
        pumped = any(entry.key == session for entry, _ in self._pumped.values())
        return pumped or session in (*self._uncollected.values(), *self._handed.values())

    async def wait_changed(self) -> None:
        await self._changes.park()

    async def _overflowed(self, runtime: SessionRuntime, local: CellId) -> Completed:
        """End a cell whose output the store refuses: it is terminated here, and its end
        (appended as ``final``, which the bound does not refuse) says why."""
        with contextlib.suppress(Exception):  # it may have ended meanwhile
            await runtime.terminate(local)
        return Completed([], OVERFLOW_TEXT)

    async def _hand_over_cell(
        self,
        entry: SessionEntry,
        handle: str,
        local: CellId,
        values: dict[str, str],
        mirror: StoreMirror | None,
    ) -> None:
        """Stop the cell here, to be resumed by another server: its tool calls in
        flight finish first (for up to the grace), no new one starts, and its journal
        copy is complete before the server retires. No end is appended, unless the
        program completed meanwhile: then it ends here, as it would have."""
        assert entry.session is not None
        runtime = entry.session.runtime
        try:
            with trio.move_on_after(self._handover_grace):
                await runtime.quiesce(local)
            event: CellEvent | None = await runtime.terminate(local)
        except AlreadyTerminating:
            return  # by a terminate command, which ends it here (RunningCells.end)
        except Exception as error:  # ended meanwhile (the pump's last event had it)
            logger.debug("handing over cell %s: %s", local, error)
            event = None
        if mirror is not None:
            await mirror.flushed()
        if isinstance(event, Completed):
            await self._retrying(lambda: self._save(entry.key, values, runtime.stored_values))
            await self.end(handle, event)
            return
        self._handed[handle] = entry.key  # (before the pop: no checkpoint between)
        self._pumped.pop(handle, None)

    async def end(self, handle: str, event: CellEvent) -> None:
        """Append the cell's end, once (the pump and a terminate command may both see
        it), and take it off the registry."""
        pumped = self._pumped.pop(handle, None)
        if pumped is None:
            return
        self._ending += 1  # (a hand-over retires the server once no end is on its way)
        try:
            await self._append_end(handle, event, pumped[0].key)
            entry = pumped[0]
            if self._on_end is not None and entry.results is not None:
                since = self._pump_started.get(handle, trio.current_time())
                await self._on_end(entry, handle, since)
        finally:
            self._ending -= 1
            self._pumps_changed.set()
            self._changes.unpark_all()

    async def _append_end(self, handle: str, event: CellEvent, session: str) -> None:
        # (Before any checkpoint: a drain sees the session at work.) A shared store
        # outlives this server, so its ends keep no drain waiting; they are noted
        # only so that a stateful MCP session waiting on one stays open meanwhile.
        ends = self._uncollected if self._local else self._handed
        ends[handle] = session
        if len(ends) > self._prune_at:  # bounded by the store's TTL
            await self._prune()
            self._prune_at = max(_PRUNE_AT, 2 * len(self._uncollected), 2 * len(self._handed))
        await self._append(handle, encode_end(event), final=True)
        await self._retrying(lambda: self._store.finish_cell(handle))

    async def _append(self, handle: str, event: str, *, final: bool = False) -> None:
        await self._retrying(lambda: self._store.append_event(handle, event, final=final))

    async def _retrying(self, operation: Callable[[], Awaitable[object]]) -> None:
        """``operation``, retried while the store is unavailable: the cell keeps running
        meanwhile and its output catches up when the store is back."""
        while True:
            try:
                await operation()
                return
            except StoreFull:
                raise  # retrying does not help (see _kept)
            except StoreError as error:
                logger.warning("code mode store: %s (retrying)", error)
                await trio.sleep(_RETRY)

    def pumped(self, handle: str) -> tuple[SessionEntry, CellId] | None:
        """The session entry and own id of a cell pumped here (for a ``wait`` on it,
        to route its notifications), ``None`` for one that is not."""
        return self._pumped.get(handle)

    # -- ends kept in a local store ------------------------------------------------------

    def collected(self, handle: str) -> None:
        """A ``wait`` handed out the cell's end."""
        handed = self._handed.pop(handle, None)
        if self._uncollected.pop(handle, None) is not None:
            self._collected.set()
            self._changes.unpark_all()
        elif handed is not None:
            self._changes.unpark_all()

    async def settle(self) -> None:
        """Return once no cell's end kept in a local store waits to be collected
        (a drain waits for this; at once with a shared store, which outlives the
        server). A cell whose record expired meanwhile no longer counts."""
        while self._uncollected:
            await self._prune()
            if self._uncollected:
                with trio.move_on_after(1.0):
                    await self._collected.wait()
                self._collected = trio.Event()

    async def _prune(self) -> None:
        """Forget the uncollected ends (and cells handed over) whose cell expired from
        the store, or was collected on another server."""
        for ends in (self._uncollected, self._handed):
            for handle in list(ends):
                if await self._store.cell(handle) is None:
                    ends.pop(handle, None)
                    self._changes.unpark_all()

    # -- the server in the registry ------------------------------------------------------

    async def _commands(self) -> None:
        """Carry out the commands sent through the store to this server's cells, until
        it retires (what is sent later waits in its queue for the server claiming its
        cells)."""
        self._commanding = True
        try:
            while not self._retired:
                try:
                    delivered = await self._store.receive_commands(self._server, timeout=1.0)
                except StoreError as error:
                    logger.warning("code mode store: %s (retrying)", error)
                    await trio.sleep(_RETRY)
                    continue
                for command in delivered:
                    if command.command == "terminate":
                        await self._terminate(command.cell)
        finally:
            self._commands_done.set()

    async def _terminate(self, handle: str) -> None:
        """Carry out a ``terminate`` sent to ``handle``. A cell of this server not
        running here now (claimed and not resumed yet, or being handed over) keeps the
        order for the server that resumes it: here after the resumption, or sent on
        by :meth:`hand_over`."""
        pumped = self._pumped.get(handle)
        if pumped is None:
            if self._handing_over or await self._owns(handle):
                self._orders.add(handle)
            return
        entry, local = pumped
        if entry.session is None:
            return
        try:
            event = await entry.session.runtime.terminate(local)
        except Exception as error:  # already gone: the pump ends it
            logger.debug("terminating cell %s: %s", local, error)
            if self._handing_over:  # (or stopped to be handed over)
                self._orders.add(handle)
            return
        await self.end(handle, event)

    async def _owns(self, handle: str) -> bool:
        """Whether the store says ``handle`` is this server's (unreachable: yes)."""
        try:
            record = await self._store.cell(handle)
        except StoreError:
            return True
        return record is not None and record.server == self._server

    async def _heartbeats(self) -> None:
        self._heartbeating = True
        try:
            while not self._handing_over:
                try:
                    await self._store.heartbeat(self._server)
                except StoreError as error:
                    logger.warning("code mode store: %s (heartbeat)", error)
                if self._handing_over:
                    break
                # (No checkpoint since the check: a hand-over cancels this sleep.)
                self._heartbeat_sleep = trio.CancelScope()
                with self._heartbeat_sleep:
                    await trio.sleep(self._store.heartbeat_ttl / 3)
        finally:
            self._heartbeats_done.set()

    async def claim_if_dead(self, record: CellRecord) -> None:
        """A ``wait`` on a cell of another server: if that server is dead (a SQLite
        store sees a dead process at once; a retired server is dead at once), claim
        and resume its cells now, rather than at the reaper's next pass, so that the
        ``wait`` reads the rest of the program within its yield time."""
        server = record.server
        if server is None or server == self._server or self._local or self._handing_over:
            return
        try:
            if server not in await self._store.dead_servers():
                return
        except StoreError as error:
            logger.warning("code mode store: %s (looking for stopped servers)", error)
            return
        async with self._reaping:
            await self._reap()

    async def _reaper(self) -> None:
        """Claim the cells of servers that stopped heartbeating (one claimant wins
        each) and resume them here (see the module)."""
        while not self._handing_over:
            await trio.sleep(self._store.heartbeat_ttl / 3)
            async with self._reaping:
                await self._reap()

    async def _reap(self) -> None:
        """One pass of the reaper."""
        pool = self._pool
        if pool is None or pool.draining or self._handing_over:
            return
        try:
            for dead in await self._store.dead_servers():
                claimed = await self._store.claim_cells(dead, self._server)
                self._claimed.extend((dead, record) for record in claimed)
        except StoreError as error:
            logger.warning("code mode store: %s (looking for stopped servers)", error)
        # Claimed cells are this server's to resume or end, whatever fails: a cell
        # nobody resumes would keep its clients waiting for ever.
        while self._claimed:
            dead, record = self._claimed[0]
            try:
                await self._take_over(pool, dead, record)
            except StoreError as error:
                logger.warning("code mode store: %s (resuming a claimed cell)", error)
                break  # tried again at the next pass
            except Exception as error:
                logger.exception("resuming cell %s failed", record.cell)
                reason = f"resuming it failed: {error}"
                await self._append_end(record.cell, _lost(reason), record.session)  # retries itself
            self._claimed.pop(0)
            await self._carry_out_order(record.cell)

    async def _carry_out_order(self, handle: str) -> None:
        """A terminate that reached this server before it resumed ``handle`` (see
        :meth:`_terminate`): carried out now that the cell runs here, dropped if the
        cell ended instead, kept while this server drains (:meth:`hand_over` sends it
        on to the server that resumes the cell)."""
        if handle not in self._orders or (self._pool is not None and self._pool.draining):
            return
        self._orders.discard(handle)
        if handle in self._pumped:
            await self._terminate(handle)

    async def _take_over(self, pool: SessionPool, dead: str, record: CellRecord) -> None:
        if self._local:
            reason = "its server kept its journal in memory (a store in this process)"
            await self._append_end(record.cell, _lost(reason), record.session)
            return
        copy = await read_copy(self._store, record.cell)
        if copy is None:  # it ended (or expired) before its server could say so
            await self._retrying(lambda: self._store.finish_cell(record.cell))
            return
        reason = copy.resumption if isinstance(copy.resumption, str) else ""
        if isinstance(copy.resumption, Resumption):
            try:
                await self._resume(pool, record, copy.source, copy.call_id, copy.resumption)
                logger.warning("code mode server %s stopped: resumed its cell here", dead)
                return
            except Refused as refusal:
                if pool.draining:
                    # This server is stopping: the cell stays registered here, and
                    # the server that claims this one's cells resumes it.
                    return
                reason = f"no server could take it: {refusal}"
        logger.warning("code mode server %s stopped: ending its cell (%s)", dead, reason)
        await self._append_end(record.cell, _lost(reason), record.session)

    async def _resume(
        self,
        pool: SessionPool,
        record: CellRecord,
        source: str,
        call_id: str,
        resumption: Resumption,
    ) -> None:
        values = await self._store.load_values(record.session) or {}
        async with pool.use(record.session) as entry:
            assert entry.session is not None and entry.calls is not None
            runtime = entry.session.runtime
            if runtime.stored_values != values:
                runtime.replace_stored_values(values)
            mirror = StoreMirror(self._store, handle=record.cell)
            request = ExecuteRequest(
                tool_call_id=call_id,
                enabled_tools=entry.session.toolset.enabled,
                source=source,
                journal_mirror=mirror,
                resume=resumption,
            )
            started = await runtime.execute(request, YieldAfter(0))
            await entry.calls.start(
                self.pump,
                pool,
                entry,
                record.cell,
                started.cell_id,
                values,
                mirror,
                None,
                started,
            )

    async def hand_over(self, grace: float) -> None:
        """Stop this server's cells and let another server resume them now (see the
        module): each cell's tool calls in flight get up to ``grace`` seconds to finish
        (one still running then is cancelled, and runs again where the cell resumes).
        A local store keeps nothing to resume from, so then nothing is done. In order:
        no pass of the reaper is left half done (a cell it resumed here is handed over
        in turn), every ``exec`` in progress has registered its cell, every cell is
        stopped with its journal copy complete (or has ended, its end in the store),
        the heartbeat has stopped; only then is the server retired, so that no cell
        is registered here, and no end appended, after its claim. Terminations sent
        here meanwhile are sent on to the server that claims the cells."""
        if self._local or self._retired:  # (a drain hands over, then the exit)
            return
        self._handing_over = True
        self._handover_grace = grace
        async with self._reaping:
            pass
        while self._pumped or self._starting or self._ending:
            self._pumps_changed = trio.Event()
            await self._pumps_changed.wait()
        self._heartbeat_sleep.cancel()
        if self._heartbeating:
            await self._heartbeats_done.wait()
        try:
            await self._store.retire(self._server)
        except StoreError as error:
            logger.warning("code mode store: %s (retiring: others claim after the TTL)", error)
        # Terminations sent here meanwhile go on to the server resuming the cells.
        self._retired = True
        if self._commanding:
            await self._commands_done.wait()
        for handle in sorted(self._orders):
            try:
                await self._store.send_command(handle, "terminate")
            except StoreError as error:
                logger.warning("code mode store: %s (a terminate is lost)", error)
        self._orders.clear()
