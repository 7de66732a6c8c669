"""Server side: code mode's ``exec`` and ``wait`` served to MCP clients.

::

    server = CodeModeMcpServer(tools=[search, *servers.tools])
    await server.serve_stdio()                          # or
    await server.serve_http("127.0.0.1", 8000)          # streamable HTTP at /mcp

Each MCP session gets its own :class:`~code_mode.CodeModeSession` (cells, stored
values), opened on its first ``exec``/``wait`` and closed, with every cell still
running, when the session ends: the client deletes it (HTTP ``DELETE``), it stays idle
past ``session_idle_timeout``, the stdio client goes away, or the server stops. Over
stdio there is one session (the client at the other end of the pipe); over HTTP the
session is the transport's (``Mcp-Session-Id``), so stateless requests without one are
refused with a result saying so.

Results are ``CallToolResult``s: text, images as ``ImageContent``, ``isError: true`` for
``Script failed``. A program's ``notify(text)`` reaches the client as a progress
notification of the ``exec``/``wait`` request in flight when the client asked for
progress, else as a log message (``notifications/message``, level ``info``), on the
request's stream while one is in flight and on the session's stream otherwise.

With ``push=True`` (``code-mode mcp serve --push``) the client need not poll with
``wait``: a program handed back as ``Script running`` that then finishes has its result
kept as the resource ``code-mode://cells/<id>``, and a client subscribed to it (or to
``code-mode://cells``) is sent ``notifications/resources/updated``; it collects the
result with ``resources/read`` or a ``wait`` (see :mod:`.pushed_results`).
"""

from __future__ import annotations

import importlib.metadata
import itertools
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import mcp.types as types
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp, Receive, Scope, Send

from .._config import RuntimeConfig
from .._facade import CellFinished, CodeModeSession, NestedTool, Notification, is_error_result
from ..model_tools.adapters import EXEC_TOOL_NAME, WAIT_TOOL_NAME, mcp_call_tool_result
from ..model_tools.descriptions import NamespaceDescription
from .pushed_results import PushedResults

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MCP_HTTP_PATH",
    "CodeModeMcpServer",
]

logger = logging.getLogger("code_mode.mcp")

DEFAULT_SESSION_IDLE_TIMEOUT: Final = 30 * 60.0
"""Seconds an HTTP session may go without a request before it is closed with its
cells (default 30 minutes, the SDK's)."""

DEFAULT_MAX_SESSIONS: Final = 64
"""Code mode sessions served at once (default 64): each one owns V8 isolates (and, in
the default process isolation, worker processes), so this is far below the SDK's own
limit on open HTTP sessions."""

MCP_HTTP_PATH: Final = "/mcp"
"""Where :meth:`CodeModeMcpServer.serve_http` serves streamable HTTP."""

_STDIO_KEY: Final = "stdio"
_SESSION_HEADER: Final = "mcp-session-id"


class _Refused(Exception):
    """A call the server cannot serve; the message goes back as a failed result."""


@attrs.define
class _Listener:
    """An ``exec``/``wait`` request in flight, where notifications of its cell go."""

    session: ServerSession
    request_id: types.RequestId | None
    wants_progress: bool
    sent: int = 0


class _Entry:
    """One MCP session's code mode session, owned by a task of the pool."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.session: CodeModeSession | None = None
        self.busy = 0
        self.idle_scope = trio.CancelScope()
        self.call_ids = itertools.count(1)
        self.by_call: dict[str, _Listener] = {}
        self.by_cell: dict[str, _Listener] = {}
        self.standalone: ServerSession | None = None
        self.results: PushedResults | None = None  # with push: results to collect

    async def notify(self, note: Notification) -> None:
        listener = self.by_cell.get(str(note.cell_id)) or self.by_call.get(note.call_id)
        if listener is not None and listener.wants_progress:
            listener.sent += 1
            await listener.session.report_progress(listener.sent, message=note.text)
            return
        target = listener.session if listener is not None else self.standalone
        if target is None:
            return
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level="info", logger=f"code-mode cell {note.cell_id}", data=note.text
            )
        )
        related = listener.request_id if listener is not None else None
        await target.send_notification(notification, related_request_id=related)


class _SessionPool:
    """The code mode sessions of a running server, each in a task of ``nursery``."""

    def __init__(
        self,
        nursery: trio.Nursery,
        open_session: Callable[[_Entry], CodeModeSession],
        idle_timeout: float | None,
        max_sessions: int,
    ) -> None:
        self._nursery = nursery
        self._open_session = open_session
        self._idle_timeout = idle_timeout
        self._max_sessions = max_sessions
        self._entries: dict[str, _Entry] = {}
        self._lock = trio.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @asynccontextmanager
    async def use(self, key: str) -> AsyncIterator[_Entry]:
        """The session of ``key`` (opened if needed), kept from expiring meanwhile."""
        async with self._lock:  # one opening at a time: no two sessions for one key
            entry = self._entries.get(key)
            if entry is None:
                if len(self._entries) >= self._max_sessions:
                    raise _Refused(
                        f"code mode serves at most {self._max_sessions} sessions at once; "
                        "try again when one has ended"
                    )
                entry = _Entry(key)
                await self._nursery.start(self._run, entry)
                self._entries[key] = entry
            entry.busy += 1
            entry.idle_scope.deadline = math.inf
        try:
            yield entry
        finally:
            entry.busy -= 1
            if entry.busy == 0 and self._idle_timeout is not None:
                entry.idle_scope.deadline = trio.current_time() + self._idle_timeout

    def peek(self, key: str) -> _Entry | None:
        """The session of ``key`` if it is open (never opens one)."""
        return self._entries.get(key)

    def close(self, key: str) -> None:
        """End the session of ``key``, if any: its cells are terminated."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry.idle_scope.cancel()

    def close_all(self) -> None:
        for key in list(self._entries):
            self.close(key)

    async def _run(self, entry: _Entry, *, task_status: trio.TaskStatus[None]) -> None:
        session = self._open_session(entry)
        try:
            async with session:
                entry.session = session
                task_status.started()
                with entry.idle_scope:
                    await trio.sleep_forever()
                # Forgotten before its cells are terminated: a request arriving now
                # gets a new session rather than one that is closing.
                self._forget(entry)
                logger.debug("closing code mode session of MCP session %s", entry.key)
        except Exception:
            # A failure to close one session must not take the server (and every other
            # session) down with it.
            logger.exception("code mode session of MCP session %s failed", entry.key)
        finally:
            self._forget(entry)

    def _forget(self, entry: _Entry) -> None:
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]


class CodeModeMcpServer:
    """``exec`` and ``wait`` as an MCP server, over stdio or streamable HTTP.

    ``tools`` are the nested tools programs may call, as for
    :class:`~code_mode.CodeModeSession` (``@tool`` functions, the
    :class:`~code_mode.integrations.mcp.McpTool`\\ s of connected servers...); they are
    shared by every session, so they must be safe to call concurrently. ``config``,
    ``namespace_descriptions``, ``deferred`` and ``max_yield_time_ms`` configure each
    session. ``session_idle_timeout`` (seconds, ``None`` for never) and
    ``max_sessions`` bound what clients can hold; see the module documentation.
    ``push``: results of programs that finish after ``Script running`` are kept as
    resources the client is notified of (and the tool descriptions tell the model it
    will be given them); for clients that subscribe, see :mod:`.pushed_results`.
    """

    def __init__(
        self,
        tools: Iterable[NestedTool | Callable[..., Any]] = (),
        *,
        name: str = "code-mode",
        instructions: str | None = None,
        config: RuntimeConfig | None = None,
        namespace_descriptions: Mapping[str, NamespaceDescription | str] | None = None,
        deferred: bool = False,
        max_yield_time_ms: int | None = None,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        push: bool = False,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if session_idle_timeout is not None and not session_idle_timeout > 0:
            raise ValueError("session_idle_timeout must be a positive number of seconds or None")
        self._tools = list(tools)
        self._session_options: dict[str, Any] = {
            "config": config,
            "namespace_descriptions": namespace_descriptions,
            "deferred": deferred,
            "max_yield_time_ms": max_yield_time_ms,
        }
        self._push = push
        # Never entered: it checks the tools now and describes them for tools/list.
        self._prototype = CodeModeSession(
            self._tools, on_finished=_unused if push else None, **self._session_options
        )
        self._listing = [types.Tool.model_validate(tool) for tool in self._prototype.mcp_tools()]
        self._idle_timeout = session_idle_timeout
        self._max_sessions = max_sessions
        self._pool: _SessionPool | None = None
        self.server: Server[_SessionPool] = Server(
            name,
            version=_version(),
            instructions=instructions,
            lifespan=self._lifespan,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources if push else None,
            on_read_resource=self._read_resource if push else None,
            on_subscribe_resource=self._subscribe if push else None,
            on_unsubscribe_resource=self._unsubscribe if push else None,
        )
        """The SDK's low-level server, for transports of your own: ``await
        server.server.run(read, write, server.server.create_initialization_options())``."""

    @property
    def session_count(self) -> int:
        """Code mode sessions open right now."""
        return len(self._pool) if self._pool is not None else 0

    # -- transports -----------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout until it closes stdin."""
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self) -> ASGIApp:
        """The streamable HTTP endpoint (at :data:`MCP_HTTP_PATH`) as an ASGI app, for
        an ASGI server running on trio (its lifespan must run: it holds the sessions).
        DNS rebinding protection is on for loopback hosts, as the SDK does."""
        app = self.server.streamable_http_app(
            streamable_http_path=MCP_HTTP_PATH, session_idle_timeout=self._idle_timeout
        )

        async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
            await app(scope, receive, send)
            if scope["type"] == "http" and scope["method"] == "DELETE" and self._pool is not None:
                key = _header(scope, _SESSION_HEADER)
                if key is not None:
                    self._pool.close(key)

        return asgi

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve streamable HTTP on ``host:port`` (``0``: any free port) with
        hypercorn, until cancelled. With ``nursery.start`` it returns the endpoint's
        URL, e.g. ``http://127.0.0.1:49152/mcp``."""
        config = HypercornConfig()
        config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
        config.accesslog = None
        config.errorlog = logger

        async with trio.open_nursery() as nursery:
            urls: list[str] = await nursery.start(_serve_hypercorn, self.http_app(), config)
            task_status.started(urls[0].rstrip("/") + MCP_HTTP_PATH)

    # -- MCP handlers ---------------------------------------------------------------

    @asynccontextmanager
    async def _lifespan(self, _server: Server[_SessionPool]) -> AsyncIterator[_SessionPool]:
        async with trio.open_nursery() as nursery:
            pool = _SessionPool(nursery, self._open_session, self._idle_timeout, self._max_sessions)
            self._pool = pool
            try:
                yield pool
            finally:
                self._pool = None
                pool.close_all()

    def _open_session(self, entry: _Entry) -> CodeModeSession:
        if self._push:
            entry.results = PushedResults()
        return CodeModeSession(
            self._tools,
            on_notify=entry.notify,
            on_finished=entry.results.on_finished if entry.results is not None else None,
            **self._session_options,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[_SessionPool], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self._listing))

    async def _call_tool(
        self, ctx: ServerRequestContext[_SessionPool], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in (EXEC_TOOL_NAME, WAIT_TOOL_NAME):
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        arguments = params.arguments if params.arguments is not None else {}
        try:
            key = _session_key(ctx)
            async with ctx.lifespan_context.use(key) as entry:
                items = await _serve_call(entry, ctx, params.name, arguments)
        except _Refused as refusal:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(refusal))], is_error=True
            )
        result = mcp_call_tool_result(items, is_error=is_error_result(items))
        return types.CallToolResult.model_validate(result)

    # -- push: pushed results as resources --------------------------------------------

    def _results(self, ctx: ServerRequestContext[_SessionPool]) -> PushedResults | None:
        try:
            entry = ctx.lifespan_context.peek(_session_key(ctx))
        except _Refused as refusal:
            raise MCPError(code=types.INVALID_REQUEST, message=str(refusal)) from None
        return entry.results if entry is not None else None

    async def _list_resources(
        self, ctx: ServerRequestContext[_SessionPool], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        results = self._results(ctx)
        return types.ListResourcesResult(resources=results.listing() if results else [])

    async def _read_resource(
        self, ctx: ServerRequestContext[_SessionPool], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return (self._results(ctx) or PushedResults()).read(params.uri)

    async def _subscribe(
        self, ctx: ServerRequestContext[_SessionPool], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        try:  # subscribing comes first, so it opens the session
            async with ctx.lifespan_context.use(_session_key(ctx)) as entry:
                assert entry.results is not None
                entry.results.subscribe(params.uri, ctx.session)
        except _Refused as refusal:
            raise MCPError(code=types.INVALID_REQUEST, message=str(refusal)) from None
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[_SessionPool], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        results = self._results(ctx)
        if results is not None:
            results.unsubscribe(params.uri)
        return types.EmptyResult()


def _unused(finished: CellFinished) -> None:  # pragma: no cover - never entered
    """The ``on_finished`` of the prototype session, which only describes the tools."""


async def _serve_call(
    entry: _Entry, ctx: ServerRequestContext[_SessionPool], name: str, arguments: dict[str, Any]
) -> list[Any]:
    """Run one exec/wait on ``entry``'s session with its notifications routed to this
    request."""
    session = entry.session
    assert session is not None
    meta = ctx.meta or {}
    listener = _Listener(
        ctx.session,
        ctx.request_id,
        wants_progress="progress_token" in meta or "progressToken" in meta,
    )
    entry.standalone = ctx.session
    if name == EXEC_TOOL_NAME:
        call_id = f"mcp-exec-{next(entry.call_ids)}"
        entry.by_call[call_id] = listener
        try:
            return await session.handle_call(name, arguments, call_id=call_id)
        finally:
            del entry.by_call[call_id]
    cell = arguments.get("cell_id")
    cell_key = str(cell) if isinstance(cell, str | int) else None
    pushed = entry.results.take(cell_key) if entry.results and cell_key is not None else None
    if pushed is not None:  # finished and pushed: this wait collects it
        return pushed
    if cell_key is not None:
        entry.by_cell[cell_key] = listener
    try:
        return await session.handle_call(name, arguments)
    finally:
        if cell_key is not None and entry.by_cell.get(cell_key) is listener:
            del entry.by_cell[cell_key]


def _version() -> str:
    try:
        return importlib.metadata.version("code-mode")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
        return ""


def _session_key(ctx: ServerRequestContext[_SessionPool]) -> str:
    """Which MCP session a request belongs to: the one stdio client, or the HTTP
    transport's session id."""
    request = ctx.request
    if request is None:
        return _STDIO_KEY
    headers: Any = getattr(request, "headers", None)
    key = headers.get(_SESSION_HEADER) if headers is not None else None
    if not isinstance(key, str) or not key:
        raise _Refused(
            "code mode needs a stateful MCP session: connect with the initialize handshake "
            "over streamable HTTP (stateless requests keep no cells between calls)"
        )
    return key


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers", []):
        if key.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


async def _serve_hypercorn(
    app: ASGIApp, config: HypercornConfig, *, task_status: trio.TaskStatus[list[str]]
) -> None:
    serve: Callable[..., Awaitable[None]] = hypercorn_serve
    await serve(app, config, task_status=task_status)
