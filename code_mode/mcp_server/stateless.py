"""Sessions and cells named by handles, not connections: every ``exec`` and ``wait``.

A request of the stateless revision (2026-07-28) carries no ``Mcp-Session-Id``, and
most agent frameworks' clients of the stateful revisions open a new MCP session, or
start a new server process, for each tool call: nothing ties a call to an earlier one.
So what spans calls travels in handles the server mints (SEP-2567), passed back as
ordinary tool arguments, in every revision and over stdio alike (one addressing
model). A stateful MCP session adds one thing: it remembers its session handle (minted
at its first ``exec``, or the first one passed to it) for the ``exec`` calls that pass
none (``home`` in :meth:`StatelessCalls.call`), so a client keeping one session passes
nothing. Its cells still belong to the session handle, not to it.

* a **session handle**, minted at the first ``exec`` that has none: the session's
  stored values belong to it. Every result names it in a line ``Session: <handle>`` of
  its header, before ``Output:`` (the model reads it there: all of a result's text is
  in its first content item, see :func:`~code_mode.model_tools.adapters.
  mcp_call_tool_result`), and in the result's ``_meta`` as ``code-mode/session`` for a
  client that reads it by program. There is no ``structuredContent``: some hosts show
  the model that instead of the text. ``exec`` takes the handle back as its optional
  ``session`` argument (the ``exec`` description says so in one sentence). An
  ``exec`` without it uses the MCP session's remembered handle, or starts a new
  session.
* a **cell handle** in place of the session's own cell id: the model still reads
  ``Script running with cell ID <handle>`` and passes it to ``wait``, which needs no
  session: the cell handle alone is the capability to wait on or terminate that cell.

Both are 144 random bits (:mod:`.store.handles`), registered in the server's store
(:mod:`.store`: sessions, and which session and server each cell belongs to). A
handle the store does not know, guessed, a neighbour of a real one, or another
session's, is answered ``exec cell <id> not found`` like any missing cell; a session
handle it does not know is answered as such, without starting a session in its place.
Both answers say what may have happened and what to do (:mod:`~code_mode.model_tools.
error_texts`).

State lives in the store, so that any server answers any call (a shared store such as
Redis: several servers; the default, in memory: this one):

* a session's **stored values** are the store's: an ``exec`` loads them into the code
  mode session serving it (one per session handle in this server's
  :class:`~.sessions.SessionPool`, so idle lifetime, session limit and draining apply
  as to stateful sessions) and saves what its program changed, whichever server ran
  the ``exec`` before;
* a cell handed back running is **pumped** by the server running it: a task observes
  it and appends its output, then its end, to the store's event stream
  (:mod:`.cell_events`), and keeps its session open meanwhile;
* a ``wait`` on any server reads that stream from the cell's cursor (how far the
  client has been given it) for up to ``yield_time_ms``, and answers as the running
  server would: new output and ``Script running``, or the end, after which the handle
  is spent; ``terminate: true`` is a store command that the running server's command
  loop carries out.

Push (resource subscriptions) is stateful-only: the stateless revision has no stream
outside a request to send ``notifications/resources/updated`` on, so a stateless client
collects a result with ``wait``; for a stateful MCP session the pump of a cell that
ends keeps what a ``wait`` would return as its pushed result.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import mcp.types as types
import trio
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._delegate import ExecuteRequest
from .._facade import CellFinished, resolve_yield_time_ms
from .._types import (
    CellEvent,
    CellId,
    Completed,
    OutputItem,
    Terminated,
    Text,
    Yielded,
)
from ..model_tools.adapters import (
    EXEC_CODE_ARGUMENT,
    EXEC_TOOL_NAME,
    WaitArgumentsError,
    mcp_call_tool_result,
    mcp_input_schema,
    wait_arguments_from_call,
)
from ..model_tools.error_texts import missing_cell_text, missing_session_text
from ..model_tools.formatting import PUSH_RUNNING_NOTE, format_result, is_error_result
from .cell_events import decode_event
from .client_timeouts import with_progress
from .journal_copy import StoreMirror
from .refusals import NO_NEW_PROGRAMS
from .sessions import Listener, Refused, SessionEntry, SessionPool, serve_call
from .stateless_cells import RunningCells
from .store import CellRecord, Store, StoreError, is_handle, missing_cell, new_handle
from .store.handles import SHOWN_CHARACTERS

__all__ = [
    "SESSION_ARGUMENT",
    "SESSION_SENTENCE",
    "StatelessCalls",
    "failed_result",
    "is_stateless",
    "server_name",
    "stateless_listing",
]

logger = logging.getLogger("code_mode.mcp")

SESSION_ARGUMENT: Final = "session"
"""``exec``'s optional argument naming the session whose stored values it uses."""

SESSION_SENTENCE: Final = (
    "Stored values belong to a session: each result names it as `Session: <handle>`; "
    "pass that handle as `session` to later `exec` calls to keep using them."
)
"""The one sentence the ``exec`` description adds (in every revision: a client may open
a new MCP session, or start a new server process, for each call)."""

_TERMINATE_BOUND: Final = 30.0  # seconds a terminating wait waits for the cell's end

#: The journal mirrors made for the cells of the ``exec`` call running in this context
#: (one, or none for a cell refused before it started), see ``_run_exec``.
_EXEC_MIRRORS: ContextVar[list[StoreMirror] | None] = ContextVar(
    "code_mode_exec_mirrors", default=None
)

_RUNNING: Final = re.compile(r"Script running with cell ID (\S+)\n")


def is_stateless(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request is of the stateless revision over HTTP (over stdio the
    connection is the session, as with the stateful revision)."""
    return ctx.request is not None and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def stateless_listing(listing: list[types.Tool]) -> list[types.Tool]:
    """``listing`` (``exec`` and ``wait``) as the stateless revision lists it: ``exec``
    with the optional ``session`` argument and :data:`SESSION_SENTENCE`."""
    tools: list[types.Tool] = []
    for tool in listing:
        if tool.name == EXEC_TOOL_NAME:
            schema = dict(tool.input_schema)
            properties = dict(schema.get("properties", {}))
            properties[SESSION_ARGUMENT] = {
                "type": "string",
                "description": "The session handle of an earlier result (`Session: "
                "<handle>`), to use its stored values.",
            }
            schema["properties"] = properties
            schema = mcp_input_schema(schema)
            description = f"{tool.description or ''}\n\n{SESSION_SENTENCE}".lstrip()
            tool = tool.model_copy(update={"input_schema": schema, "description": description})
        tools.append(tool)
    return tools


def server_name() -> str:
    """A fresh name for this server in the store's registry (unguessable, like any
    handle: it keys the server's command queue)."""
    return f"server-{new_handle()}"


class StatelessCalls:
    """Serves the ``exec`` and ``wait`` calls of the stateless revision with the state
    in ``store`` (see the module documentation). ``server`` names this server in the
    store's cell registry; ``max_yield_time_ms`` caps a ``wait`` as it caps a session's.
    :attr:`cells` runs the cells it hands back running (:mod:`.stateless_cells`)."""

    def __init__(
        self,
        store: Store,
        server: str,
        max_yield_time_ms: int | None,
        *,
        local: bool = False,
        expires_after: float | None = None,
        push: bool = False,
    ) -> None:
        self._store = store
        self._server = server
        self._max_yield_time_ms = max_yield_time_ms
        # Seconds a session or cell handle lives without a call (the store's TTL), for
        # the texts that say why a handle names nothing.
        self._expires_after = expires_after
        self._push = push
        self._cells = RunningCells(
            store, server, local=local, save=self._save, on_end=self._pushed if push else None
        )

    @property
    def server(self) -> str:
        return self._server

    @property
    def cells(self) -> RunningCells:
        """The cells this server runs for stateless clients (:mod:`.stateless_cells`)."""
        return self._cells

    async def call(
        self,
        ctx: ServerRequestContext[SessionPool],
        name: str,
        arguments: dict[str, Any],
        *,
        draining: bool,
        home: str | None = None,
    ) -> types.CallToolResult:
        """Serve one ``exec`` or ``wait``. ``home``: the MCP session of a stateful
        request (its pool key), which remembers its session handle (minted at its first
        ``exec``) for the ``exec`` calls that pass none; ``None`` for the stateless
        revision, where an ``exec`` without one starts a new session."""
        pool = ctx.lifespan_context
        try:
            if name == EXEC_TOOL_NAME:
                if draining:
                    raise Refused(NO_NEW_PROGRAMS)
                with self._cells.starting():  # (no checkpoint since the check above)
                    if home is None:
                        key, items = await self._exec(ctx, pool, arguments)
                    else:
                        key, items = await self._exec_at_home(ctx, pool, arguments, home)
            else:
                listener = listener_of(ctx)
                key, items = await _reporting(
                    listener, lambda: self._wait(pool, listener, arguments, home)
                )
        except Refused as refusal:
            return failed_result(str(refusal))
        except StoreError as error:
            return failed_result(f"code mode could not reach its store: {error}")
        if key is not None:
            items = [_with_session(items[0], key), *items[1:]]
        result = mcp_call_tool_result(items, is_error=is_error_result(items), session=key)
        return types.CallToolResult.model_validate(result)

    # -- exec: on this server, with the session's stored values from the store ----------

    async def _exec_at_home(
        self,
        ctx: ServerRequestContext[SessionPool],
        pool: SessionPool,
        arguments: dict[str, Any],
        home: str,
    ) -> tuple[str | None, list[OutputItem]]:
        """A stateful ``exec``: with the session handle its MCP session remembers
        (minted at its first ``exec``) unless the call names one. Then as any ``exec``:
        the cells belong to the session handle, not to the MCP session, so that any
        other MCP session (a client opening one per call) reaches them by handle, and
        the MCP session's end ends none of them."""
        async with pool.use(home) as entry:
            entry.stateful = True
            given = arguments.get(SESSION_ARGUMENT)
            if given is None:  # the remembered one (no store operation more than a pass)
                if entry.handle is None:
                    entry.handle = await self._store.new_session()
                    return await self._exec(ctx, pool, arguments, entry, fresh=entry.handle)
                return await self._exec(ctx, pool, arguments, entry, remembered=entry.handle)
            if entry.handle is None and await self._known_session(given):
                entry.handle = given  # a new MCP session passing an earlier one's handle
            return await self._exec(ctx, pool, arguments, entry)

    async def _known_session(self, given: object) -> bool:
        return (
            isinstance(given, str) and is_handle(given) and await self._store.touch_session(given)
        )

    async def _exec(
        self,
        ctx: ServerRequestContext[SessionPool],
        pool: SessionPool,
        arguments: dict[str, Any],
        home: SessionEntry | None = None,
        *,
        fresh: str | None = None,
        remembered: str | None = None,
    ) -> tuple[str | None, list[OutputItem]]:
        """An ``exec`` with the session ``arguments`` name (none: a new one). For a
        stateful MCP session (``home``): ``fresh``, the handle it just minted, or
        ``remembered``, the one it uses when the call names none (one that expired
        from the store meanwhile is replaced by a new one, not refused)."""
        given = arguments.get(SESSION_ARGUMENT)  # (null: not given)
        given = remembered if given is None else given
        values: dict[str, str] | None
        if fresh is not None:
            key, values = fresh, {}
        elif given is None:
            key = await self._store.new_session()
            values = {}
        else:
            valid = isinstance(given, str) and is_handle(given)
            key = given if isinstance(given, str) else ""
            values = await self._store.load_values(key) if valid else None
        if values is None and home is not None and remembered is not None:
            home.handle = key = await self._store.new_session()
            values = {}
        if values is None:
            shown = str(given)[:SHOWN_CHARACTERS]
            text = missing_session_text(shown, expires_after=self._expires_after)
            return None, format_result(text, wall_time=0.0, cell_id="")
        program = {k: v for k, v in arguments.items() if k == EXEC_CODE_ARGUMENT}
        try:
            return key, await self._run_exec(ctx, pool, key, values, program, home)
        finally:
            pool.close_if_quiet(key)  # a running cell's pump keeps it open

    async def _run_exec(
        self,
        ctx: ServerRequestContext[SessionPool],
        pool: SessionPool,
        key: str,
        values: dict[str, str],
        program: dict[str, Any],
        home: SessionEntry | None,
    ) -> list[OutputItem]:
        """Run ``program`` in the code mode session of the session handle ``key``;
        a cell handed back running is registered under a new handle and pumped. For a
        stateful MCP session (``home``), which counts against ``max_sessions`` itself,
        its end is pushed to the MCP session's results (with push)."""
        async with pool.use(key, counted=home is None) as entry:
            if home is not None and home.results is not None:
                entry.results = home.results
            assert entry.session is not None and entry.calls is not None
            runtime = entry.session.runtime
            if runtime.stored_values != values:  # changed on another server since
                runtime.replace_stored_values(values)
            mirrors: list[StoreMirror] = []
            if self._cells.copies_journals:
                runtime.journal_mirrors = self._mirror_for
            token = _EXEC_MIRRORS.set(mirrors)
            try:
                items = await serve_call(entry, ctx, EXEC_TOOL_NAME, program)
            finally:
                _EXEC_MIRRORS.reset(token)
            header = items[0]
            assert isinstance(header, Text)
            running = _RUNNING.match(header.text)
            if running is None:
                await self._save(key, values, runtime.stored_values)
                return items
            local = CellId(running.group(1))
            mirror = mirrors[0] if mirrors else None
            # What the exec call handed back is counted now, before the pump takes more.
            handed = runtime.output_handed(local)
            # A cell registered is pumped (holding the session) before this exec lets
            # go of it, even if its caller goes away meanwhile: a registered cell
            # nobody pumps would stall on its journal copy (journal_copy.py).
            with trio.CancelScope(shield=True):
                handle = await self._store.register_cell(key, self._server)
                await entry.calls.start(
                    self._cells.pump, pool, entry, handle, local, values, mirror, handed
                )
            text = header.text.replace(running.group(0), f"Script running with cell ID {handle}\n")
            return self._noted([Text(text), *items[1:]])

    def _noted(self, items: list[OutputItem]) -> list[OutputItem]:
        """A running result, ending with the push note when results are pushed."""
        return [*items, Text(PUSH_RUNNING_NOTE)] if self._push else items

    def _mirror_for(self, cell_id: CellId, request: ExecuteRequest) -> StoreMirror | None:
        """A journal copy for a cell started by the ``exec`` call of this context."""
        mirrors = _EXEC_MIRRORS.get()
        if mirrors is None:
            return None
        mirror = StoreMirror(self._store, program=(request.source, request.tool_call_id))
        mirrors.append(mirror)
        return mirror

    async def _save(self, key: str, before: dict[str, str], after: dict[str, str]) -> None:
        changes: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
        changes.update({k: None for k in before.keys() - after.keys()})
        if changes:
            await self._store.save_values(key, changes)

    # -- wait: on any server, from the store -------------------------------------------

    async def _wait(
        self,
        pool: SessionPool,
        listener: Listener,
        arguments: dict[str, Any],
        home: str | None,
    ) -> tuple[str | None, list[OutputItem]]:
        started_at = trio.current_time()
        given = arguments.get("cell_id")
        shown = str(given) if isinstance(given, str | int) else ""
        try:
            _, yield_ms, max_tokens, terminate = wait_arguments_from_call(arguments)
        except WaitArgumentsError as error:
            return None, format_result(str(error), wall_time=0.0, cell_id="")
        record = await self._store.cell(given) if isinstance(given, str) else None
        if record is None:
            return None, self._missing(shown)
        handle = record.cell
        pushed = self._take_pushed(pool, home, handle)
        if pushed is not None:  # finished and pushed: this wait collects it
            await self.collected(handle)
            return record.session, pushed
        await self._cells.claim_if_dead(record)  # its server is gone: resume it here now
        with self._routed(handle, listener):
            return await self._read(record, shown, terminate, yield_ms, max_tokens, started_at)

    @contextmanager
    def _routed(self, handle: str, listener: Listener) -> Iterator[None]:
        """The notifications of ``handle``, if it runs here, go to this ``wait``."""
        pumped = self._cells.pumped(handle)
        if pumped is None:
            yield
            return
        entry, local = pumped
        entry.by_cell[str(local)] = listener
        try:
            yield
        finally:
            if entry.by_cell.get(str(local)) is listener:
                del entry.by_cell[str(local)]

    async def _read(
        self,
        record: CellRecord,
        shown: str,
        terminate: bool,
        yield_ms: int,
        max_tokens: int,
        started_at: float,
    ) -> tuple[str | None, list[OutputItem]]:
        """The ``wait`` proper: the cell's events from the store, from its cursor."""
        handle = record.cell
        if terminate:
            await self._store.send_command(handle, "terminate")
            seconds = _TERMINATE_BOUND
        else:
            seconds = resolve_yield_time_ms(yield_ms, self._max_yield_time_ms) / 1000
        deadline = started_at + seconds
        items: list[OutputItem] = []
        end: Completed | Terminated | None = None
        offset = record.cursor
        while end is None:
            remaining = deadline - trio.current_time()
            read = await self._store.read_events(handle, offset, timeout=max(0.0, remaining))
            if read is None:  # dropped meanwhile (another wait got its end)
                return None, self._missing(shown)
            for text in read.entries:
                decoded = decode_event(text)
                items.extend(decoded.items)
                end = decoded.end or end
            offset = read.next_offset
            if trio.current_time() >= deadline:
                break
        wall = trio.current_time() - started_at
        if end is None:
            await self._store.set_cursor(handle, offset)
            formatted = format_result(
                Yielded(items), wall_time=wall, cell_id=handle, max_output_tokens=max_tokens
            )
            return record.session, self._noted(formatted)
        await self.collected(handle)  # the end was handed out: the handle is spent
        event = _final(items, end)
        formatted = format_result(
            event, wall_time=wall, cell_id=handle, max_output_tokens=max_tokens
        )
        return record.session, formatted

    async def collected(self, handle: str) -> None:
        """The cell's end was handed out (by a ``wait`` or, pushed, a
        ``resources/read``): the handle is spent."""
        await self._store.drop_cell(handle)
        self._cells.collected(handle)

    # -- push: a stateful session's cells that end are pushed to it --------------------

    async def _pushed(self, entry: SessionEntry, handle: str, since: float) -> None:
        """The cell ``handle`` of ``entry``'s session ended: keep what a ``wait`` would
        return now (the events from the cell's cursor) as its pushed result."""
        results = entry.results
        record = await self._store.cell(handle)
        read = await self._store.read_events(handle, record.cursor) if record else None
        if results is None or read is None:
            return  # collected meanwhile by a wait
        items: list[OutputItem] = []
        end: Completed | Terminated | None = None
        for text in read.entries:
            decoded = decode_event(text)
            items.extend(decoded.items)
            end = decoded.end or end
        if end is None:
            return
        wall = trio.current_time() - since
        formatted = format_result(_final(items, end), wall_time=wall, cell_id=handle)
        await results.on_finished(CellFinished(CellId(handle), "", formatted))
        if await self._store.cell(handle) is None:  # a wait collected it meanwhile
            results.take(handle)

    @staticmethod
    def _take_pushed(pool: SessionPool, home: str | None, handle: str) -> list[OutputItem] | None:
        entry = pool.peek(home) if home is not None else None
        results = entry.results if entry is not None else None
        return results.take(handle) if results is not None else None

    def _missing(self, given: str) -> list[OutputItem]:
        """The failed result of a ``wait`` whose cell handle names nothing here."""
        cell = missing_cell(given).cell_id
        assert cell is not None
        text = missing_cell_text(cell, other_deployments=True, expires_after=self._expires_after)
        return format_result(text, wall_time=0.0, cell_id="")


def _final(items: list[OutputItem], end: Completed | Terminated) -> CellEvent:
    """A cell's last result: ``items`` with how it ``end``ed."""
    if isinstance(end, Completed):
        return Completed(items, end.error_text)
    return Terminated(items)


def listener_of(ctx: ServerRequestContext[SessionPool]) -> Listener:
    """Where the notifications of a request's cell go: the request's stream, as
    progress when the client asked for it."""
    meta = ctx.meta or {}
    wants_progress = "progress_token" in meta or "progressToken" in meta
    return Listener(ctx.session, ctx.request_id, wants_progress=wants_progress)


def _with_session(header: OutputItem, key: str) -> Text:
    """The header with its ``Session: <handle>`` line, before ``Output:``: the handle
    is part of what the call returned, not of what the program printed."""
    assert isinstance(header, Text)
    status, output, rest = header.text.rpartition("Output:\n")
    return Text(f"{status}Session: {key}\n{output}{rest}")


async def _reporting(
    listener: Listener,
    call: Callable[[], Awaitable[tuple[str | None, list[OutputItem]]]],
) -> tuple[str | None, list[OutputItem]]:
    """``call()``, with a progress notification every second meanwhile for a client
    that asked for progress (:mod:`.client_timeouts`); the cell's notifications share
    the listener's count, so progress only grows."""
    if not listener.wants_progress:
        return await call()

    async def beat() -> None:
        listener.sent += 1
        await listener.session.report_progress(listener.sent)

    return await with_progress(beat, call)


def failed_result(text: str) -> types.CallToolResult:
    """A failed ``CallToolResult`` of one text: a call refused before reaching a cell."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
