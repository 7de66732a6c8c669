"""The command line's MCP parts: ``code-mode mcp serve`` and ``run --mcp-config``.

:mod:`code_mode.cli` only declares the arguments and imports this module when an MCP
command runs, so the core command line works without the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..integrations.mcp import connect_mcp_servers, load_mcp_config
from ..integrations.routing import NestedTool
from ..mcp_server import DEFAULT_MCP_MAX_YIELD_TIME_MS, CodeModeMcpServer, ServerLimits
from ..mcp_server.store import (
    Store,
    StoreConfig,
    StoreError,
    default_store,
    open_store,
    parse_store_url,
)
from .config_options import runtime_config
from .exit_status import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, is_interrupt
from .startup_errors import describe, startup_error
from .tool_specs import load_tools

__all__ = ["load_tools", "mcp_config_tools", "parse_http_address", "serve_main", "server_limits"]


def parse_http_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> ``(host, port)``."""
    host, colon, port = address.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http expects HOST:PORT, e.g. 127.0.0.1:8000, got {address!r}")
    return host, int(port)


@asynccontextmanager
async def mcp_config_tools(path: str | os.PathLike[str]) -> AsyncIterator[list[NestedTool]]:
    """The tools of the servers in the ``mcpServers`` file ``path``, running for the
    duration of the block (``code-mode run --mcp-config``)."""
    async with connect_mcp_servers(load_mcp_config(path)) as servers:
        yield list(servers.tools)


def server_limits(args: argparse.Namespace) -> ServerLimits:
    """The :class:`ServerLimits` of ``mcp serve``'s options (unset ones: defaults).
    Raises ``ValueError`` naming a bad value."""
    given: dict[str, Any] = {}
    for name in ("max_sessions", "session_idle_timeout", "max_request_body_bytes"):
        value = getattr(args, name, None)
        if value is not None:
            given[name] = None if value == "never" else value
    for name in ("drain_deadline", "handover_grace", "exec_retry_window"):
        if getattr(args, name, None) is not None:
            given[name] = getattr(args, name)
    return ServerLimits(**given)


async def _serve(
    args: argparse.Namespace, tools: list[Any], limits: ServerLimits, store: StoreConfig
) -> bool:
    """:func:`_serve_with` the store open (checked at start-up: an unreachable one, or
    wrong credentials, stop the command here)."""
    async with open_store(store, session_ttl=limits.session_idle_timeout) as opened:
        return await _serve_with(args, tools, limits, opened)


async def _serve_with(
    args: argparse.Namespace, tools: list[Any], limits: ServerLimits, store: Store
) -> bool:
    """Serve until the client goes away (stdio), Ctrl-C or SIGTERM; ``True`` after
    Ctrl-C.

    Ctrl-C is received as a signal and stops the server by cancellation, rather than
    as trio's ``KeyboardInterrupt``: that is raised in whatever task runs when the
    signal comes, and a task of the HTTP server may swallow it (hypercorn turns an
    exception in a request handler into an error response). SIGTERM, what a
    supervisor sends to stop a server, drains it first (:meth:`~code_mode.mcp_server.
    CodeModeMcpServer.drain`); a second SIGTERM, or Ctrl-C, stops it at once."""
    interrupted = False
    server: CodeModeMcpServer | None = None
    # The receiver outlives the nursery: a start-up error leaves the nursery (which
    # cancels the task reading signals) before the receiver closes.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def drain_then_stop(server: CodeModeMcpServer) -> None:
                deadline = server.limits.drain_deadline
                _say(f"draining (SIGTERM): no new sessions; programs get up to {deadline:g} s")
                await server.drain()
                _say("drained; stopping")
                nursery.cancel_scope.cancel()

            async def on_signals() -> None:
                nonlocal interrupted
                draining = False
                async for signum in signals:
                    if signum == signal.SIGTERM and server is not None and not draining:
                        draining = True
                        nursery.start_soon(drain_then_stop, server)
                        continue
                    interrupted = signum == signal.SIGINT
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(on_signals)
            configs = load_mcp_config(args.mcp_config) if args.mcp_config is not None else []
            async with connect_mcp_servers(configs) as servers:
                descriptions = dict(servers.namespace_descriptions)
                server = CodeModeMcpServer(
                    [*tools, *servers.tools],
                    namespace_descriptions=descriptions,
                    push=bool(getattr(args, "push", False)),
                    limits=limits,
                    config=runtime_config(args),
                    max_yield_time_ms=getattr(args, "max_yield_ms", DEFAULT_MCP_MAX_YIELD_TIME_MS),
                    wait_idle_floor_ms=getattr(args, "wait_idle_floor_ms", None),
                    store=store,
                )
                if args.http is None:
                    await server.serve_stdio()
                else:
                    host, port = parse_http_address(args.http)
                    url = await nursery.start(server.serve_http, host, port)
                    _say(f"serving MCP (streamable HTTP) at {url}")
                    await trio.sleep_forever()
            nursery.cancel_scope.cancel()  # the stdio client went away: stop listening
    return interrupted


def _say(text: str) -> None:
    """A line for the operator, on stderr (stdout is the MCP stream over stdio)."""
    print(f"code-mode: {text}", file=sys.stderr, flush=True)


def serve_main(args: argparse.Namespace) -> int:
    """``code-mode mcp serve``: ``args.tools`` (``pkg.module:attribute`` strings),
    ``args.mcp_config`` (a path or ``None``), ``args.http`` (``HOST:PORT`` or ``None``
    for stdio), ``args.push`` (serve pushed results: see :class:`CodeModeMcpServer`),
    the limits (:func:`server_limits`), ``args.store`` (a store URL or ``None``: the
    SQLite file at :func:`~code_mode.mcp_server.store.url.default_sqlite_path`, so that
    a server started anew per call, or killed, loses no cell; a bad one, or a SQLite
    file that cannot be used, exits 2 with ``code-mode: --store: <why>``). Returns the
    exit status; errors go to stderr, never stdout (stdout is the MCP stream in stdio mode)."""
    try:
        tools = [tool for spec in args.tools or [] for tool in load_tools(spec)]
        if args.http is not None:
            parse_http_address(args.http)
        limits = server_limits(args)
        runtime_config(args)  # a bad value is found before anything starts
        given = getattr(args, "store", None)
        store = parse_store_url(given) if given else default_store()
        if trio.run(_serve, args, tools, limits, store):
            return EXIT_INTERRUPTED
    except StoreError as error:  # before the rest: a bad URL is a ValueError too
        print(f"code-mode: --store: {describe(error)}", file=sys.stderr)
        return EXIT_USAGE
    except BaseException as error:
        if is_interrupt(error):
            return EXIT_INTERRUPTED
        found = startup_error(error)
        if found is None:
            raise
        where = args.http if isinstance(found, OSError) and args.http else None
        print(f"code-mode: {describe(found, where)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
