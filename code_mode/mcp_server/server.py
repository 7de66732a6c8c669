"""Server side: code mode's ``exec`` and ``wait`` served to MCP clients.

::

    server = CodeModeMcpServer(tools=[search, *servers.tools])
    await server.serve_stdio()                          # or
    await server.serve_http("127.0.0.1", 8000)          # streamable HTTP at /mcp

One addressing model, in every revision and transport (:mod:`.stateless`): a code
mode session and a running cell are named by unguessable handles registered in the
server's store, which every result names (``Session: <handle>``, ``Script running
with cell ID <handle>``) and ``exec``/``wait`` take back from any MCP session,
connection or server process sharing the store. Most agent frameworks' clients open
a new MCP session per tool call (LangChain's even a new server process), so nothing a
model needs between calls may hang on a connection. A stateful MCP session (stdio;
HTTP with ``Mcp-Session-Id``) only remembers its session handle, minted at its first
``exec``, for the ``exec`` calls that pass none; its end (HTTP ``DELETE``, idle past
``ServerLimits.session_idle_timeout``, the stdio client going away) ends none of its
cells. Leaving :meth:`CodeModeMcpServer.serve_stdio` or ``serve_http`` with a store
outside the process hands the running cells over (:mod:`.stateless_cells`), so the
next server process resumes them. ``store=None`` keeps the store in memory: a library
writes no file its caller did not ask for (``code-mode mcp serve`` defaults to a
SQLite file, :func:`~.store.url.default_store`).

Over HTTP the server is made to run as one of several behind a load balancer
(``docs/deploy.md``): :mod:`.http_front` answers health and readiness checks and
refuses what the server cannot take (a closed session: 404; while draining or full, a
new session: 503; a body too large: 413), and :meth:`CodeModeMcpServer.drain` stops it
without losing a finished result.

Results are ``CallToolResult``s: all of the text in the first content item (header,
then the program's text output), then images as ``ImageContent``; ``isError: true`` for
``Script failed``; a running cell's handle also in ``_meta`` (``code-mode/cell``), the
session's in ``code-mode/session``. No
``outputSchema``, no ``structuredContent``: hosts that show the model one content item,
or the structured content, then still show it everything
(:func:`~code_mode.model_tools.adapters.mcp_call_tool_result`).

A program's ``notify(text)`` reaches the client as a progress notification of the
``exec``/``wait`` request in flight when the client asked for progress, else as a log
message (``notifications/message``, level ``info``), on the request's stream while one
is in flight and on the session's stream otherwise.

With ``push=True`` (``code-mode mcp serve --push``) the client need not poll with
``wait``: a program handed back as ``Script running`` that then finishes has its result
kept as the resource ``code-mode://cells/<handle>``, and a client subscribed to it (or to
``code-mode://cells``) is sent ``notifications/resources/updated``; it collects the
result with ``resources/read`` or a ``wait`` (see :mod:`.pushed_results`).
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import mcp.types as types
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp

from .._config import RuntimeConfig
from .._facade import CodeModeSession, Toolset
from ..integrations.routing import NestedTool
from ..model_tools.adapters import EXEC_TOOL_NAME, WAIT_TOOL_NAME
from ..model_tools.descriptions import NamespaceDescription
from .any_loop import AnyLoopApp
from .client_timeouts import DEFAULT_MCP_MAX_YIELD_TIME_MS
from .http_front import HttpFront
from .limits import ServerLimits
from .protocol_versions import advertise_served_versions
from .pushed_results import PushedResults, cell_of_uri
from .refusals import DRAINING, deadline_text, terminated_text
from .sessions import Refused, SessionEntry, SessionPool, open_session_pool, session_key
from .stateless import (
    StatelessCalls,
    failed_result,
    is_stateless,
    server_name,
    stateless_listing,
)
from .store import MemoryStore, Store

__all__ = ["MCP_HTTP_PATH", "CodeModeMcpServer"]

logger = logging.getLogger("code_mode.mcp")

MCP_HTTP_PATH: Final = "/mcp"
"""Where :meth:`CodeModeMcpServer.serve_http` serves streamable HTTP."""

_RESPONSE_GRACE: Final = 5.0
"""Seconds a drained server waits for the responses it is still sending."""


class CodeModeMcpServer:
    """``exec`` and ``wait`` as an MCP server, over stdio or streamable HTTP.

    ``tools`` are the nested tools programs may call, as for
    :class:`~code_mode.CodeModeSession` (``@tool`` functions, the
    :class:`~code_mode.integrations.mcp.McpTool`\\ s of connected servers...); they are
    shared by every session, so they must be safe to call concurrently. ``config``,
    ``namespace_descriptions``, ``deferred``, ``max_yield_time_ms`` and
    ``wait_idle_floor_ms`` configure each session (see
    :class:`~code_mode.CodeModeSession`); ``max_yield_time_ms`` is 4000 by default
    (``None``: no cap), so that no call outlasts the common clients' timeouts
    (:mod:`.client_timeouts`). ``limits`` (:class:`~code_mode.mcp_server.ServerLimits`)
    bound what the server takes on at once (sessions, their idle lifetime, request bodies) and how
    long it drains; see the module documentation. ``push``: results of programs that
    finish after ``Script running`` are kept as resources the client is notified of
    (and the tool descriptions tell the model it will be given them); for clients that
    subscribe, see :mod:`.pushed_results` (stateful revisions only). ``store``: where
    session and cell handles, stored values, cells' output and journals live
    (:mod:`.store`, ``--store``; default: in this process's memory, so nothing
    survives it: pass an opened SQLite or Redis store for that).
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
        max_yield_time_ms: int | None = DEFAULT_MCP_MAX_YIELD_TIME_MS,
        wait_idle_floor_ms: int | None = None,
        push: bool = False,
        limits: ServerLimits | None = None,
        store: Store | None = None,
    ) -> None:
        # Checked and described once: tools/list needs no session, and every session
        # shares the toolset.
        self._toolset = Toolset.build(
            tools, namespace_descriptions=namespace_descriptions, deferred=deferred
        )
        # Where the stateless revision's handles live (None: in this process).
        self._store = store
        idle_timeout = (limits or ServerLimits()).session_idle_timeout
        self._stateless = StatelessCalls(
            store if store is not None else MemoryStore(session_ttl=idle_timeout),
            server_name(),
            max_yield_time_ms,
            local=store is None or isinstance(store, MemoryStore),
            expires_after=idle_timeout,
            push=push,
        )
        self._session_options: dict[str, Any] = {
            "config": config,
            "max_yield_time_ms": max_yield_time_ms,
            "wait_idle_floor_ms": wait_idle_floor_ms,
        }
        self._push = push
        # Every revision's exec takes a session handle (one addressing model).
        self._listing = stateless_listing(
            [types.Tool.model_validate(tool) for tool in self._toolset.mcp_tools(push=push)]
        )
        # Push is stateful-only (:mod:`.stateless`): the stateless listing never offers it.
        self._stateless_listing = stateless_listing(
            [types.Tool.model_validate(tool) for tool in self._toolset.mcp_tools()]
        )
        self._limits = limits if limits is not None else ServerLimits()
        self._pool: SessionPool | None = None
        self._front: HttpFront | None = None
        self._draining = False
        self._past_deadline = False
        self.server: Server[SessionPool] = Server(
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
        advertise_served_versions(self.server)

    @property
    def store(self) -> Store | None:
        """The store given as ``store=`` (:mod:`.store`), ``None`` for the default (in
        this process): the registry of session and cell handles."""
        return self._store

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
        returning it lets the responses in flight be sent (up to 5 seconds).

        With a shared store, the cells of stateless clients do not wait for the
        deadline: they are handed over (their tool calls in flight finish, for up to
        ``limits.handover_grace``; then they are stopped here, their journals complete
        in the store, and this server retired from its registry) and another server
        resumes them at once."""
        self._draining = True
        pool = self._pool
        if pool is not None:
            pool.draining = True
            deadline = self._limits.drain_deadline
            with trio.move_on_after(deadline) as waiting:
                # Stateless cells go to another server at once (with a shared store).
                await self._stateless.cells.hand_over(self._limits.handover_grace)
                await pool.settle()
                await self._stateless.cells.settle()  # stateless ends still to be collected
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
            front = HttpFront(
                app,
                _Door(lambda: self._pool, lambda: self._draining),
                self._limits.max_request_body_bytes,
            )
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
    async def _lifespan(self, _server: Server[SessionPool]) -> AsyncIterator[SessionPool]:
        cells = self._stateless.cells
        async with (
            cells.running(),
            open_session_pool(self._open_session, self._limits, draining=self._draining) as pool,
        ):
            self._pool = pool
            pool.elsewhere = cells
            cells.serve(pool)  # where cells taken over from a stopped server run
            try:
                yield pool
            finally:
                # Leaving (stdio's client went away, the server stops): with a store
                # outside the process, the cells still running are handed over, so the
                # next server resumes them; in memory nothing would be left to resume.
                grace = self._limits.handover_grace
                with trio.CancelScope(shield=True), trio.move_on_after(grace + _RESPONSE_GRACE):
                    await cells.hand_over(grace)
                cells.serve(None)
                self._pool = None

    def _open_session(self, entry: SessionEntry) -> CodeModeSession:
        # Results are pushed by the cells' pumps, from the store (:mod:`.stateless`),
        # not by the session: every cell handed back running is pumped.
        if self._push:
            entry.results = PushedResults()
        return CodeModeSession(self._toolset, on_notify=entry.notify, **self._session_options)

    async def _list_tools(
        self, ctx: ServerRequestContext[SessionPool], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listing = self._stateless_listing if is_stateless(ctx) else self._listing
        return types.ListToolsResult(tools=list(listing))

    async def _call_tool(
        self, ctx: ServerRequestContext[SessionPool], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in (EXEC_TOOL_NAME, WAIT_TOOL_NAME):
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        arguments = params.arguments if params.arguments is not None else {}
        if is_stateless(ctx):
            return await self._stateless.call(
                ctx, params.name, dict(arguments), draining=self._draining
            )
        try:
            key = session_key(ctx)
        except Refused as refusal:
            return failed_result(str(refusal))
        # One addressing model: a stateful MCP session is served as a stateless call
        # whose session handle the MCP session remembers (its ``home``).
        result = await self._stateless.call(
            ctx, params.name, dict(arguments), draining=self._draining, home=key
        )
        pool = ctx.lifespan_context
        first = result.content[0] if result.content else None
        if self._past_deadline and pool.closed_reason(key) and isinstance(first, types.TextContent):
            # Said after the output, on a line of its own in the one text item.
            said = first.text if first.text.endswith("\n") else first.text + "\n"
            first.text = said + terminated_text(self._limits.drain_deadline)
        return result

    # -- push: pushed results as resources --------------------------------------------

    def _results(self, ctx: ServerRequestContext[SessionPool]) -> PushedResults | None:
        try:
            entry = ctx.lifespan_context.peek(session_key(ctx))
        except Refused as refusal:
            raise MCPError(code=types.INVALID_REQUEST, message=str(refusal)) from None
        return entry.results if entry is not None else None

    async def _list_resources(
        self, ctx: ServerRequestContext[SessionPool], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        results = self._results(ctx)
        return types.ListResourcesResult(resources=results.listing() if results else [])

    async def _read_resource(
        self, ctx: ServerRequestContext[SessionPool], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        result = (self._results(ctx) or PushedResults()).read(params.uri)
        cell = cell_of_uri(str(params.uri))
        if cell is not None:  # collected: its handle is spent, as after a wait
            await self._stateless.collected(cell)
        return result

    async def _subscribe(
        self, ctx: ServerRequestContext[SessionPool], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        try:  # subscribing comes first, so it opens the session
            async with ctx.lifespan_context.use(session_key(ctx)) as entry:
                entry.stateful = True
                assert entry.results is not None
                entry.results.subscribe(params.uri, ctx.session)
        except Refused as refusal:
            raise MCPError(code=types.INVALID_REQUEST, message=str(refusal)) from None
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[SessionPool], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        results = self._results(ctx)
        if results is not None:
            results.unsubscribe(params.uri)
        return types.EmptyResult()


def _version() -> str:
    try:
        return importlib.metadata.version("code-mode")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
        return ""


class _Door:
    """What the HTTP front asks of the server (:class:`.http_front.SessionDoor`): the
    pool's answers while it runs (the lifespan holds it), else the server's."""

    def __init__(self, pool: Callable[[], SessionPool | None], draining: Callable[[], bool]):
        self._pool = pool
        self._draining = draining

    def new_session_refusal(self) -> str | None:
        pool = self._pool()
        if pool is None:
            return DRAINING if self._draining() else None
        return pool.new_session_refusal()

    def session_refusal(self, key: str) -> str | None:
        pool = self._pool()
        return pool.session_refusal(key) if pool is not None else None

    def deleted(self, key: str) -> None:
        pool = self._pool()
        if pool is not None:
            pool.deleted(key)


async def _serve_hypercorn(
    app: ASGIApp, config: HypercornConfig, *, task_status: trio.TaskStatus[list[str]]
) -> None:
    serve: Callable[..., Awaitable[None]] = hypercorn_serve
    await serve(app, config, task_status=task_status)
