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

Each session handle is served by a code mode session of the server's
:class:`~.sessions.SessionPool` keyed by the handle, so its idle lifetime, the
server's session limit and draining apply as to stateful sessions; the handles of its
cells live on its :class:`~.sessions.SessionEntry` and go with it. Push (resource
subscriptions) is stateful-only: this revision has no stream outside a request to
send ``notifications/resources/updated`` on, so a stateless client collects a result
with ``wait``.
"""

from __future__ import annotations

import re
from typing import Any, Final

import mcp.types as types
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._types import OutputItem, Text
from ..model_tools.adapters import (
    EXEC_CODE_ARGUMENT,
    EXEC_TOOL_NAME,
    WAIT_TOOL_NAME,
    mcp_call_tool_result,
)
from ..model_tools.formatting import format_result, is_error_result
from .refusals import NO_NEW_PROGRAMS
from .sessions import Refused, SessionEntry, SessionPool, serve_call
from .store import Store, is_handle, missing_cell, new_handle, same_handle

__all__ = [
    "SESSION_ARGUMENT",
    "SESSION_SENTENCE",
    "StatelessCalls",
    "is_stateless",
    "stateless_listing",
]

SESSION_ARGUMENT: Final = "session"
"""``exec``'s optional argument naming the session whose stored values it uses."""

SESSION_SENTENCE: Final = (
    "Stored values belong to a session: each result names it as `Session: <handle>`; "
    "pass that handle as `session` to later `exec` calls to keep using them (without it "
    "a new session starts)."
)
"""The one sentence the stateless ``exec`` description adds."""

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


class StatelessCalls:
    """Serves the ``exec`` and ``wait`` calls of the stateless revision on ``pool``'s
    sessions, with the handles of ``store`` (see the module documentation).
    ``server`` names this server in the store's cell registry."""

    def __init__(self, store: Store, server: str) -> None:
        self._store = store
        self._server = server

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
                key, items = await self._wait(ctx, pool, arguments)
        except Refused as refusal:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(refusal))], is_error=True
            )
        if key is not None:
            items = [items[0], Text(f"Session: {key}"), *items[1:]]
        result = mcp_call_tool_result(items, is_error=is_error_result(items))
        if key is not None:
            result["structuredContent"] = {SESSION_ARGUMENT: key, "result": _as_text(items)}
        return types.CallToolResult.model_validate(result)

    async def _exec(
        self, ctx: ServerRequestContext[SessionPool], pool: SessionPool, arguments: dict[str, Any]
    ) -> tuple[str | None, list[OutputItem]]:
        given = arguments.get(SESSION_ARGUMENT)
        if given is None:
            key = await self._store.new_session()
        elif isinstance(given, str) and is_handle(given) and await self._store.touch_session(given):
            key = given
        else:
            shown = str(given)[:64]
            text = (
                f"code mode session {shown} not found (it expired, or was never minted here): "
                "call exec without `session` to start a new session"
            )
            return None, format_result(text, wall_time=0.0, cell_id="")
        program = {k: v for k, v in arguments.items() if k == EXEC_CODE_ARGUMENT}
        async with pool.use(key) as entry:
            items = await serve_call(entry, ctx, EXEC_TOOL_NAME, program)
            return key, await self._named(entry, items)

    async def _wait(
        self, ctx: ServerRequestContext[SessionPool], pool: SessionPool, arguments: dict[str, Any]
    ) -> tuple[str | None, list[OutputItem]]:
        given = arguments.get("cell_id")
        shown = str(given) if isinstance(given, str | int) else ""
        found = await self._find(pool, given)
        if found is None:
            return None, format_result(str(missing_cell(shown)), wall_time=0.0, cell_id="")
        key, local = found
        async with pool.use(key) as entry:
            items = await serve_call(entry, ctx, WAIT_TOOL_NAME, {**arguments, "cell_id": local})
            return key, await self._named(entry, items, local=local)

    async def _find(self, pool: SessionPool, given: object) -> tuple[str, str] | None:
        """``(session handle, cell id in the session)`` of the cell handle ``given``,
        or ``None`` for a handle this server does not run."""
        if not isinstance(given, str) or not is_handle(given):
            return None
        record = await self._store.cell(given)
        if record is None or record.server is None:
            return None
        entry = pool.peek(record.session)
        if entry is None:
            return None
        for handle, local in entry.cells.items():
            if same_handle(given, handle):
                return record.session, local
        return None

    async def _named(
        self, entry: SessionEntry, items: list[OutputItem], *, local: str | None = None
    ) -> list[OutputItem]:
        """``items`` with the session's own cell id replaced by the cell's handle (one
        minted for a cell handed back running for the first time); a cell whose final
        result this is is forgotten."""
        header = items[0]
        assert isinstance(header, Text)
        running = _RUNNING.match(header.text)
        if running is not None:
            local = running.group(1)
            handle = entry.handles.get(local)
            if handle is None:
                handle = await self._store.register_cell(entry.key, self._server)
                entry.handles[local] = handle
                entry.cells[handle] = local
            text = header.text.replace(running.group(0), f"Script running with cell ID {handle}\n")
            return [Text(text), *items[1:]]
        if local is None:
            return items
        handle = entry.handles.get(local)
        if handle is None:
            return items
        renamed = [_renamed(item, local, handle) for item in items]
        if not any(_still_running(item, handle) for item in renamed):
            # The cell's end (or it is gone): its handle is spent.
            del entry.handles[local]
            entry.cells.pop(handle, None)
            await self._store.finish_cell(handle)
        return renamed


def _as_text(items: list[OutputItem]) -> str:
    """The result's text items as one text, for ``structuredContent.result``: hosts
    that give the model the structured content in place of the content when all of it
    is text (pydantic-ai) must still show it the result."""
    parts = [item.text for item in items if isinstance(item, Text)]
    return "\n".join(part.removesuffix("\n") if i == 0 else part for i, part in enumerate(parts))


def _renamed(item: OutputItem, local: str, handle: str) -> OutputItem:
    """A text naming the session's own cell id (a call's error), naming the handle."""
    if isinstance(item, Text) and f"exec cell {local} " in item.text:
        return Text(item.text.replace(f"exec cell {local} ", f"exec cell {handle} "))
    return item


def _still_running(item: OutputItem, handle: str) -> bool:
    """Whether ``item`` is the error of a ``wait`` refused while the cell runs on
    (another call observes it, or it is being terminated)."""
    return isinstance(item, Text) and (
        f"exec cell {handle} already has an active observer" in item.text
        or f"exec cell {handle} is already terminating" in item.text
    )


def server_name() -> str:
    """A fresh name for this server in the store's registry (unguessable, like any
    handle: it keys the server's command queue)."""
    return f"server-{new_handle()}"
