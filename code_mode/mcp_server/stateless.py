"""Stateless MCP (revision 2026-07-28): sessions and cells named by handles, not connections.

A request of the stateless revision carries no ``Mcp-Session-Id``: nothing ties it to
an earlier one. So what spans calls travels in handles the server mints (SEP-2567),
passed back as ordinary tool arguments:

* a **session handle**, minted at the first ``exec`` that has none: the session's
  stored values belong to it. Every result names it in a text line ``Session:
  <handle>`` right after the header, and as ``structuredContent.session`` (beside
  ``structuredContent.result``, the result's text, for hosts that show the model the
  structured content instead of the content); ``exec``
  takes it back as its optional ``session`` argument (the ``exec`` description says so
  in one sentence, in this revision only). An ``exec`` without it starts a new
  session.
* a **cell handle** in place of the session's own cell id: the model still reads
  ``Script running with cell ID <handle>`` and passes it to ``wait``, which needs no
  session: the cell handle alone is the capability to wait on or terminate that cell.

Both are 144 random bits (:mod:`.store.handles`), registered in the server's store
(:mod:`.store`: sessions, and which session and server each cell belongs to). A
handle the store does not know, guessed, a neighbour of a real one, or another
session's, is answered ``exec cell <id> not found`` like any missing cell; a session
handle it does not know is answered as such, without starting a session in its place.

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
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

import mcp.types as types
import trio
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._errors import MissingCell
from .._facade import resolve_yield_time_ms
from .._types import (
    CellEvent,
    CellId,
    Completed,
    OutputItem,
    Pending,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)
from ..model_tools.adapters import (
    EXEC_CODE_ARGUMENT,
    EXEC_TOOL_NAME,
    WaitArgumentsError,
    mcp_call_tool_result,
    wait_arguments_from_call,
)
from ..model_tools.formatting import format_result, is_error_result
from .cell_events import decode_event, encode_end, encode_output
from .client_timeouts import with_progress
from .refusals import NO_NEW_PROGRAMS
from .sessions import Refused, SessionEntry, SessionPool, serve_call
from .store import Store, StoreError, is_handle, missing_cell, new_handle

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

PUMP_PERIOD: Final = 0.25
"""Seconds between two appends of a running cell's new output to the store (its end
is appended at once)."""

_PRUNE_AT: Final = 1024
_RETRY: Final = 0.5  # seconds before a store operation of a background task is retried
_TERMINATE_BOUND: Final = 30.0  # seconds a terminating wait waits for the cell's end

_LOST: Final = Completed(
    [],
    "the code mode server running this program stopped before the program ended (its "
    "process died); the program is lost: its output up to then is above, the stored "
    "values of its session are kept (those it was about to write are not)",
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
    :meth:`running` holds the server's background work (commands, heartbeats)."""

    def __init__(
        self, store: Store, server: str, max_yield_time_ms: int | None, *, local: bool = False
    ) -> None:
        self._store = store
        self._server = server
        self._max_yield_time_ms = max_yield_time_ms
        # A store in this process (memory://) ends with it: a draining server waits for
        # the ends it holds to be collected, as it does for stateful sessions.
        self._local = local
        self._uncollected: set[str] = set()
        self._collected = trio.Event()
        self._prune_at = _PRUNE_AT  # uncollected ends past which expired ones are dropped
        # Cells this server pumps: handle -> (their session entry, the session's own id).
        self._pumped: dict[str, tuple[SessionEntry, CellId]] = {}

    @property
    def server(self) -> str:
        return self._server

    @property
    def pumped(self) -> int:
        """Cells running on this server for stateless clients."""
        return len(self._pumped)

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
        """Forget the uncollected ends whose cell expired from the store."""
        for handle in list(self._uncollected):
            if await self._store.cell(handle) is None:
                self._uncollected.discard(handle)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The server's heartbeat and its command loop, for the block."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._heartbeats)
            nursery.start_soon(self._commands)
            nursery.start_soon(self._reaper)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()

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
                key, items = await self._exec(ctx, pool, arguments)
            else:
                key, items = await _reporting(ctx, lambda: self._wait(arguments))
        except Refused as refusal:
            return _failed(str(refusal))
        except StoreError as error:
            return _failed(f"code mode could not reach its store: {error}")
        if key is not None:
            items = [items[0], Text(f"Session: {key}"), *items[1:]]
        result = mcp_call_tool_result(items, is_error=is_error_result(items))
        if key is not None:
            result["structuredContent"] = {SESSION_ARGUMENT: key, "result": _as_text(items)}
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
            text = (
                f"code mode session {str(given)[:64]} not found (it expired, or was never "
                "minted): call exec without `session` to start a new session"
            )
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
            items = await serve_call(entry, ctx, EXEC_TOOL_NAME, program)
            header = items[0]
            assert isinstance(header, Text)
            running = _RUNNING.match(header.text)
            if running is None:
                await self._save(key, values, runtime.stored_values)
                return items
            handle = await self._store.register_cell(key, self._server)
            local = CellId(running.group(1))
            self._pumped[handle] = (entry, local)
            # Started (holding the session) before this exec lets go of it.
            await entry.calls.start(self._pump, pool, key, handle, local, values)
            text = header.text.replace(running.group(0), f"Script running with cell ID {handle}\n")
            return [Text(text), *items[1:]]

    async def _save(self, key: str, before: dict[str, str], after: dict[str, str]) -> None:
        changes: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
        changes.update({k: None for k in before.keys() - after.keys()})
        if changes:
            await self._store.save_values(key, changes)

    # -- the running server: a cell's output into the store -----------------------------

    async def _pump(
        self,
        pool: SessionPool,
        key: str,
        handle: str,
        local: CellId,
        values: dict[str, str],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Append the cell's output to the store until it ends, then its end; the
        session stays open meanwhile (a running cell is activity)."""
        try:
            await self._pumping(pool.use(key), handle, local, values, task_status)
        finally:
            pool.close_if_quiet(key)

    async def _pumping(
        self,
        using: AbstractAsyncContextManager[SessionEntry],
        handle: str,
        local: CellId,
        values: dict[str, str],
        task_status: trio.TaskStatus[None],
    ) -> None:
        async with using as entry:
            task_status.started()
            assert entry.session is not None
            runtime = entry.session.runtime
            while handle in self._pumped:
                try:
                    event: CellEvent = await runtime.observe(local, YieldAfter(PUMP_PERIOD))
                except MissingCell:  # ended by a terminate command, or the session closed
                    event = Terminated([])
                except Exception as error:  # busy, terminating: look again shortly
                    logger.debug("pumping cell %s: %s", local, error)
                    await trio.sleep(PUMP_PERIOD)
                    continue
                if isinstance(event, Yielded | Pending):
                    if event.content_items:
                        await self._append(handle, encode_output(event.content_items))
                    continue
                if isinstance(event, Completed):
                    await self._retrying(
                        lambda: self._save(entry.key, values, runtime.stored_values)
                    )
                await self._end(handle, event)

    async def _end(self, handle: str, event: CellEvent) -> None:
        """Append the cell's end, once (the pump and a terminate command may both see
        it), and take it off the registry."""
        if self._pumped.pop(handle, None) is None:
            return
        if self._local:
            self._uncollected.add(handle)
            if len(self._uncollected) > self._prune_at:  # bounded by the store's TTL
                await self._prune()
                self._prune_at = max(_PRUNE_AT, 2 * len(self._uncollected))
        await self._append(handle, encode_end(event))
        await self._retrying(lambda: self._store.finish_cell(handle))

    async def _append(self, handle: str, event: str) -> None:
        await self._retrying(lambda: self._store.append_event(handle, event))

    async def _retrying(self, operation: Callable[[], Awaitable[object]]) -> None:
        """``operation``, retried while the store is unavailable: the cell keeps running
        meanwhile and its output catches up when the store is back."""
        while True:
            try:
                await operation()
                return
            except StoreError as error:
                logger.warning("code mode store: %s (retrying)", error)
                await trio.sleep(_RETRY)

    async def _commands(self) -> None:
        """Carry out the commands sent through the store to this server's cells."""
        while True:
            try:
                delivered = await self._store.receive_commands(self._server, timeout=1.0)
            except StoreError as error:
                logger.warning("code mode store: %s (retrying)", error)
                await trio.sleep(_RETRY)
                continue
            for command in delivered:
                pumped = self._pumped.get(command.cell)
                if pumped is None or command.command != "terminate":
                    continue
                entry, local = pumped
                if entry.session is None:
                    continue
                try:
                    event = await entry.session.runtime.terminate(local)
                except Exception as error:  # already gone: the pump ends it
                    logger.debug("terminating cell %s: %s", local, error)
                    continue
                await self._end(command.cell, event)

    async def _heartbeats(self) -> None:
        while True:
            try:
                await self._store.heartbeat(self._server)
            except StoreError as error:
                logger.warning("code mode store: %s (heartbeat)", error)
            await trio.sleep(self._store.heartbeat_ttl / 3)

    async def _reaper(self) -> None:
        """Claim the cells of servers that stopped heartbeating (one claimant wins
        each) and end them with a clear failure, so that their ``wait`` calls do not wait
        on a program nobody runs. (Resuming them from a journal in the store is the
        next step: docs/deploy.md.)"""
        while True:
            await trio.sleep(self._store.heartbeat_ttl / 3)
            try:
                for dead in await self._store.dead_servers():
                    for record in await self._store.claim_cells(dead, self._server):
                        logger.warning(
                            "code mode server %s stopped: ending its cell %s", dead, record.cell
                        )
                        await self._store.append_event(record.cell, encode_end(_LOST))
                        await self._store.finish_cell(record.cell)
            except StoreError as error:
                logger.warning("code mode store: %s (looking for stopped servers)", error)

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
            return None, format_result(str(missing_cell(shown)), wall_time=0.0, cell_id="")
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
                return None, format_result(str(missing_cell(shown)), wall_time=0.0, cell_id="")
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
            if handle in self._uncollected:
                self._uncollected.discard(handle)
                self._collected.set()
            event = (
                Completed(items, end.error_text)
                if isinstance(end, Completed)
                else Terminated(items)
            )
        formatted = format_result(
            event, wall_time=wall, cell_id=handle, max_output_tokens=max_tokens
        )
        return record.session, formatted


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


def _as_text(items: list[OutputItem]) -> str:
    """The result's text items as one text, for ``structuredContent.result``: hosts
    that give the model the structured content in place of the content when all of it
    is text (pydantic-ai) must still show it the result."""
    parts = [item.text for item in items if isinstance(item, Text)]
    return "\n".join(part.removesuffix("\n") if i == 0 else part for i, part in enumerate(parts))
