"""Server side: code mode's ``exec`` and ``wait`` served to MCP clients.

::

    server = CodeModeMcpServer(tools=[search, *servers.tools])
    await server.serve_stdio()                          # or
    await server.serve_http("127.0.0.1", 8000)          # streamable HTTP at /mcp

Each MCP session gets its own :class:`~code_mode.CodeModeSession` (cells, stored
values), opened on its first ``exec``/``wait`` and closed, with every cell still
running, when the session ends: the client deletes it (HTTP ``DELETE``), it stays idle
past ``ServerLimits.session_idle_timeout``, the stdio client goes away, the server
drains, or the server stops. Over stdio there is one session (the client at the other
end of the pipe); over HTTP the session is the transport's (``Mcp-Session-Id``), so
stateless requests without one are refused with a result saying so.

Over HTTP the server is made to run as one of several behind a load balancer
(``docs/deploy.md``): :mod:`.http_front` answers health and readiness checks and
refuses what the server cannot take (a closed session: 404; while draining or full, a
new session: 503; a body too large: 413), and :meth:`CodeModeMcpServer.drain` stops it
without losing a finished result.

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
from collections import OrderedDict
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
from starlette.types import ASGIApp

from .._config import RuntimeConfig
from .._facade import CellFinished, CodeModeSession, NestedTool, Notification, is_error_result
from .._types import Text
from ..model_tools.adapters import EXEC_TOOL_NAME, WAIT_TOOL_NAME, mcp_call_tool_result
from ..model_tools.descriptions import NamespaceDescription
from .any_loop import AnyLoopApp
from .http_front import SESSION_HEADER, HttpFront
from .limits import ServerLimits
from .pushed_results import PushedResults
from .refusals import (
    DRAINED,
    DRAINING,
    NO_NEW_PROGRAMS,
    deadline_text,
    full_text,
    idle_text,
    terminated_text,
)

__all__ = ["MCP_HTTP_PATH", "CodeModeMcpServer"]

logger = logging.getLogger("code_mode.mcp")

MCP_HTTP_PATH: Final = "/mcp"
"""Where :meth:`CodeModeMcpServer.serve_http` serves streamable HTTP."""

_STDIO_KEY: Final = "stdio"

_REMEMBERED_CLOSED_SESSIONS: Final = 10_000
"""Sessions closed by the server whose ids are remembered, to answer their requests
404 with the reason (older ones get the SDK's own 404 once it has forgotten them)."""

_RESPONSE_GRACE: Final = 5.0
"""Seconds a drained server waits for the responses it is still sending."""


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
        self.quiet = trio.Event()  # set while no exec/wait of the session is in flight
        self.quiet.set()
        self.closed_reason: str | None = None  # why the server closed it, if it did
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
        limits: ServerLimits,
    ) -> None:
        self._nursery = nursery
        self._open_session = open_session
        self._idle_timeout = limits.session_idle_timeout
        self._max_sessions = limits.max_sessions
        self._entries: dict[str, _Entry] = {}
        self._closed: OrderedDict[str, str] = OrderedDict()
        self._lock = trio.Lock()
        self.draining = False
        """No session is opened any more (the server drains)."""

    def __len__(self) -> int:
        return len(self._entries)

    def closed_reason(self, key: str) -> str | None:
        """Why the server closed the session ``key``, if it did (recently)."""
        return self._closed.get(key)

    def is_live(self, key: str) -> bool:
        """Whether the session ``key`` has a call in flight, a program whose final
        result has not been received yet, or a pushed result not yet collected."""
        entry = self._entries.get(key)
        if entry is None or entry.session is None:
            return False
        pushed = entry.results is not None and entry.results.uncollected > 0
        return entry.busy > 0 or entry.session.runtime.pending_results > 0 or pushed

    @asynccontextmanager
    async def use(self, key: str) -> AsyncIterator[_Entry]:
        """The session of ``key`` (opened if needed), kept from expiring meanwhile."""
        async with self._lock:  # one opening at a time: no two sessions for one key
            entry = self._entries.get(key)
            if entry is None:
                if self.draining:
                    raise _Refused(DRAINING)
                if len(self._entries) >= self._max_sessions:
                    raise _Refused(full_text(self._max_sessions))
                entry = _Entry(key)
                await self._nursery.start(self._run, entry)
                self._entries[key] = entry
            entry.busy += 1
            if entry.busy == 1:
                entry.quiet = trio.Event()
            entry.idle_scope.deadline = math.inf
        try:
            yield entry
        finally:
            entry.busy -= 1
            if entry.busy == 0:
                entry.quiet.set()
                if self._idle_timeout is not None:
                    entry.idle_scope.deadline = trio.current_time() + self._idle_timeout

    def peek(self, key: str) -> _Entry | None:
        """The session of ``key`` if it is open (never opens one)."""
        return self._entries.get(key)

    def close(self, key: str, reason: str | None = None) -> None:
        """End the session of ``key``, if any: its cells are terminated. With a
        ``reason``, later requests of the session are refused with it (404)."""
        if reason is not None:
            self._remember(key, reason)
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry.closed_reason = reason
            entry.idle_scope.cancel()

    def close_all(self, reason: str | None = None) -> None:
        for key in list(self._entries):
            self.close(key, reason)

    async def settle(self) -> None:
        """Close each session once it has no call in flight, no program whose final
        result has not been received and no pushed result not yet collected; return
        when all are closed. No session opens meanwhile (:attr:`draining`)."""
        while self._entries:  # again for a session whose opening was under way
            async with trio.open_nursery() as nursery:
                for entry in list(self._entries.values()):
                    nursery.start_soon(self._settle, entry)

    async def _settle(self, entry: _Entry) -> None:
        session = entry.session
        assert session is not None  # set before the entry is in the pool
        results = entry.results
        while True:
            if entry.busy:
                await entry.quiet.wait()
            elif session.runtime.cell_count:
                await session.runtime.wait_no_cells()
            elif results is not None and results.uncollected:
                await results.wait_collected()
            else:
                break
        if self._entries.get(entry.key) is entry:
            self.close(entry.key, DRAINED)

    def _remember(self, key: str, reason: str) -> None:
        self._closed[key] = reason
        self._closed.move_to_end(key)
        while len(self._closed) > _REMEMBERED_CLOSED_SESSIONS:
            self._closed.popitem(last=False)

    async def _run(self, entry: _Entry, *, task_status: trio.TaskStatus[None]) -> None:
        session = self._open_session(entry)
        try:
            async with session:
                entry.session = session
                task_status.started()
                with entry.idle_scope:
                    await trio.sleep_forever()
                # Neither closed by the server nor deleted (gone from the pool): idle.
                if entry.closed_reason is None and self._entries.get(entry.key) is entry:
                    entry.closed_reason = idle_text(self._idle_timeout)
                    self._remember(entry.key, entry.closed_reason)
                # Forgotten before its cells are terminated: a request arriving now
                # is not served by a session that is closing.
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
    session. ``limits`` (:class:`~code_mode.mcp_server.ServerLimits`) bound what the
    server takes on at once (sessions, their idle lifetime, request bodies) and how
    long it drains; see the module documentation. ``push``: results of programs that
    finish after ``Script running`` are kept as resources the client is notified of
    (and the tool descriptions tell the model it will be given them); for clients that
    subscribe, see :mod:`.pushed_results`.
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
        push: bool = False,
        limits: ServerLimits | None = None,
    ) -> None:
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
        self._limits = limits if limits is not None else ServerLimits()
        self._pool: _SessionPool | None = None
        self._front: HttpFront | None = None
        self._draining = False
        self._past_deadline = False
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

    @property
    def limits(self) -> ServerLimits:
        """What this server takes on at once, and how long it drains."""
        return self._limits

    @property
    def draining(self) -> bool:
        """Whether :meth:`drain` has been called: the server takes no new session."""
        return self._draining

    async def drain(self) -> None:
        """Stop the server's work without losing a finished result; then stop serving
        (cancel :meth:`serve_http`) to exit.

        From the call on, the readiness check fails and no new session is taken (a
        request opening one is answered 503, so a balancer sends it elsewhere), and no
        new program starts (``exec`` fails saying so). Each session is closed once it
        has no call in flight and no result still to be received (a program's final
        result, or a pushed one); its next request is answered 404 (start a new
        session). Returns once every session is closed, or at
        ``limits.drain_deadline``: then the programs still running are terminated, a
        call waiting on one gets ``Script terminated`` and a text saying why. Before
        returning it lets the responses in flight be sent (up to 5 seconds)."""
        self._draining = True
        pool = self._pool
        if pool is not None:
            pool.draining = True
            deadline = self._limits.drain_deadline
            with trio.move_on_after(deadline) as waiting:
                await pool.settle()
            if waiting.cancelled_caught:
                logger.info(
                    "drain deadline of %g s passed: terminating %d sessions", deadline, len(pool)
                )
                self._past_deadline = True
                pool.close_all(deadline_text(deadline))
        front = self._front
        if front is not None:
            with trio.move_on_after(_RESPONSE_GRACE):
                await front.wait_quiet()

    # -- transports -----------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout until it closes stdin."""
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, host: str = "127.0.0.1") -> ASGIApp:
        """The streamable HTTP endpoint (at :data:`MCP_HTTP_PATH`), with ``/healthz``
        and ``/readyz`` beside it (:mod:`.http_front`), as an ASGI app for an ASGI server
        running on trio, or on asyncio such as uvicorn (its lifespan must run: it holds
        the sessions). ``host`` is
        the address served: DNS rebinding protection is on for loopback hosts, as the
        SDK does, and off otherwise (behind a balancer, clients name the balancer)."""

        def build() -> ASGIApp:
            app = self.server.streamable_http_app(
                streamable_http_path=MCP_HTTP_PATH,
                session_idle_timeout=self._limits.session_idle_timeout,
                max_request_body_size=self._limits.max_request_body_bytes,
                host=host,
            )
            front = HttpFront(app, _Door(self), self._limits.max_request_body_bytes)
            self._front = front
            return front

        return AnyLoopApp(build)  # under uvicorn too: in trio guest mode (any_loop.py)

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
            app = self.http_app(host)
            urls: list[str] = await nursery.start(_serve_hypercorn, app, config)
            task_status.started(urls[0].rstrip("/") + MCP_HTTP_PATH)

    # -- MCP handlers ---------------------------------------------------------------

    @asynccontextmanager
    async def _lifespan(self, _server: Server[_SessionPool]) -> AsyncIterator[_SessionPool]:
        async with trio.open_nursery() as nursery:
            pool = _SessionPool(nursery, self._open_session, self._limits)
            pool.draining = self._draining
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
            if self._draining and params.name == EXEC_TOOL_NAME:
                raise _Refused(NO_NEW_PROGRAMS)
            async with ctx.lifespan_context.use(key) as entry:
                items = await _serve_call(entry, ctx, params.name, arguments)
                if entry.closed_reason is not None and self._past_deadline:
                    items = [*items, Text(terminated_text(self._limits.drain_deadline))]
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
    key = headers.get(SESSION_HEADER) if headers is not None else None
    if not isinstance(key, str) or not key:
        raise _Refused(
            "code mode needs a stateful MCP session: connect with the initialize handshake "
            "over streamable HTTP (stateless requests keep no cells between calls)"
        )
    return key


class _Door:
    """What the HTTP front asks of the server (:class:`.http_front.SessionDoor`)."""

    def __init__(self, server: CodeModeMcpServer) -> None:
        self._server = server

    def new_session_refusal(self) -> str | None:
        server = self._server
        if server.draining:
            return DRAINING
        if server.session_count >= server.limits.max_sessions:
            return full_text(server.limits.max_sessions)
        return None

    def session_refusal(self, key: str) -> str | None:
        pool = self._server._pool
        if pool is None:
            return None
        reason = pool.closed_reason(key)
        if reason is None and self._server.draining and not pool.is_live(key):
            # Nothing of the session is left to finish: closed now, so that its client
            # starts a new session (elsewhere) rather than a program here.
            pool.close(key, DRAINED)
            reason = DRAINED
        return reason

    def deleted(self, key: str) -> None:
        if self._server._pool is not None:
            self._server._pool.close(key)


async def _serve_hypercorn(
    app: ASGIApp, config: HypercornConfig, *, task_status: trio.TaskStatus[list[str]]
) -> None:
    serve: Callable[..., Awaitable[None]] = hypercorn_serve
    await serve(app, config, task_status=task_status)
