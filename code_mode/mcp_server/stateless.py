"""Stateless MCP (revision 2026-07-28): sessions and cells named by handles, not connections.

A request of the stateless revision carries no ``Mcp-Session-Id``: nothing ties it to
an earlier one. So what spans calls travels in handles the server mints (SEP-2567),
passed back as ordinary tool arguments:

* a **session handle**, minted at the first ``exec`` that has none: the session's
  stored values belong to it. Every result names it in a line ``Session: <handle>`` of
  its header, before ``Output:`` (the model reads it there: all of a result's text is
  in its first content item, see :func:`~code_mode.model_tools.adapters.
  mcp_call_tool_result`), and in the result's ``_meta`` as ``code-mode/session`` for a
  client that reads it by program. There is no ``structuredContent``: some hosts show
  the model that instead of the text. ``exec`` takes the handle back as its optional
  ``session`` argument (the ``exec`` description says so in one sentence, in this
  revision only). An ``exec`` without it starts a new session.
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

Push (resource
subscriptions) is stateful-only: this revision has no stream outside a request to
send ``notifications/resources/updated`` on, so a stateless client collects a result
with ``wait``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Final

import mcp.types as types
import trio
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._delegate import ExecuteRequest
from .._facade import resolve_yield_time_ms
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
from ..model_tools.formatting import format_result, is_error_result
from .cell_events import decode_event
from .client_timeouts import with_progress
from .journal_copy import StoreMirror
from .refusals import NO_NEW_PROGRAMS
from .sessions import Refused, SessionPool, serve_call
from .stateless_cells import RunningCells
from .store import Store, StoreError, is_handle, missing_cell, new_handle
from .store.handles import SHOWN_CHARACTERS

__all__ = [
    "SESSION_ARGUMENT",
    "SESSION_SENTENCE",
    "StatelessCalls",
    "is_stateless",
    "server_name",
    "stateless_listing",
]

logger = logging.getLogger("code_mode.mcp")

SESSION_ARGUMENT: Final = "session"
"""``exec``'s optional argument naming the session whose stored values it uses."""

SESSION_SENTENCE: Final = (
    "Stored values belong to a session: each result names it as `Session: <handle>`; "
    "pass that handle as `session` to later `exec` calls to keep using them (without it "
    "a new session starts)."
)
"""The one sentence the stateless ``exec`` description adds."""

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
                "<handle>`), to use its stored values; omit it to start a new session.",
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
    ) -> None:
        self._store = store
        self._server = server
        self._max_yield_time_ms = max_yield_time_ms
        # Seconds a session or cell handle lives without a call (the store's TTL), for
        # the texts that say why a handle names nothing.
        self._expires_after = expires_after
        self._cells = RunningCells(store, server, local=local, save=self._save)

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
    ) -> types.CallToolResult:
        pool = ctx.lifespan_context
        try:
            if name == EXEC_TOOL_NAME:
                if draining:
                    raise Refused(NO_NEW_PROGRAMS)
                with self._cells.starting():  # (no checkpoint since the check above)
                    key, items = await self._exec(ctx, pool, arguments)
            else:
                key, items = await _reporting(ctx, lambda: self._wait(arguments))
        except Refused as refusal:
            return _failed(str(refusal))
        except StoreError as error:
            return _failed(f"code mode could not reach its store: {error}")
        if key is not None:
            items = [_with_session(items[0], key), *items[1:]]
        result = mcp_call_tool_result(items, is_error=is_error_result(items), session=key)
        return types.CallToolResult.model_validate(result)

    # -- exec: on this server, with the session's stored values from the store ----------

    async def _exec(
        self, ctx: ServerRequestContext[SessionPool], pool: SessionPool, arguments: dict[str, Any]
    ) -> tuple[str | None, list[OutputItem]]:
        given = arguments.get(SESSION_ARGUMENT)
        if given is None:
            key = await self._store.new_session()
            values: dict[str, str] | None = {}
        else:
            valid = isinstance(given, str) and is_handle(given)
            key = given if isinstance(given, str) else ""
            values = await self._store.load_values(key) if valid else None
        if values is None:
            shown = str(given)[:SHOWN_CHARACTERS]
            text = missing_session_text(shown, expires_after=self._expires_after)
            return None, format_result(text, wall_time=0.0, cell_id="")
        program = {k: v for k, v in arguments.items() if k == EXEC_CODE_ARGUMENT}
        try:
            return key, await self._run_exec(ctx, pool, key, values, program)
        finally:
            pool.close_if_quiet(key)  # a running cell's pump keeps it open

    async def _run_exec(
        self,
        ctx: ServerRequestContext[SessionPool],
        pool: SessionPool,
        key: str,
        values: dict[str, str],
        program: dict[str, Any],
    ) -> list[OutputItem]:
        async with pool.use(key) as entry:
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
            return [Text(text), *items[1:]]

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

    async def _wait(self, arguments: dict[str, Any]) -> tuple[str | None, list[OutputItem]]:
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
            event: CellEvent = Yielded(items)
        else:
            await self._store.drop_cell(handle)  # the end was handed out: the handle is spent
            self._cells.collected(handle)
            event = (
                Completed(items, end.error_text)
                if isinstance(end, Completed)
                else Terminated(items)
            )
        formatted = format_result(
            event, wall_time=wall, cell_id=handle, max_output_tokens=max_tokens
        )
        return record.session, formatted

    def _missing(self, given: str) -> list[OutputItem]:
        """The failed result of a ``wait`` whose cell handle names nothing here."""
        cell = missing_cell(given).cell_id
        assert cell is not None
        text = missing_cell_text(cell, other_deployments=True, expires_after=self._expires_after)
        return format_result(text, wall_time=0.0, cell_id="")


def _with_session(header: OutputItem, key: str) -> Text:
    """The header with its ``Session: <handle>`` line, before ``Output:``: the handle
    is part of what the call returned, not of what the program printed."""
    assert isinstance(header, Text)
    status, output, rest = header.text.rpartition("Output:\n")
    return Text(f"{status}Session: {key}\n{output}{rest}")


async def _reporting(
    ctx: ServerRequestContext[SessionPool],
    call: Callable[[], Awaitable[tuple[str | None, list[OutputItem]]]],
) -> tuple[str | None, list[OutputItem]]:
    """``call()``, with a progress notification every second meanwhile for a client
    that asked for progress (:mod:`.client_timeouts`)."""
    meta = ctx.meta or {}
    if "progress_token" not in meta and "progressToken" not in meta:
        return await call()
    sent = 0

    async def beat() -> None:
        nonlocal sent
        sent += 1
        await ctx.session.report_progress(sent)

    return await with_progress(beat, call)


def _failed(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
