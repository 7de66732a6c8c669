"""Starting the MCP servers of a configuration for the duration of a block."""

from __future__ import annotations

import math
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Final, TextIO

import attrs
import httpx2
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ...model_tools.descriptions import NamespaceDescription
from ._client import McpTool, list_mcp_tools, mcp_namespace
from ._config import McpConfigError, McpServerConfig

__all__ = ["DEFAULT_STARTUP_TIMEOUT", "McpServers", "connect_mcp_servers"]

DEFAULT_STARTUP_TIMEOUT: Final = 60.0
"""Seconds a server gets to start, answer ``initialize`` and list its tools (default
60 s: ``npx`` may download the package first)."""

_HTTP_TIMEOUT: Final = httpx2.Timeout(30.0, read=300.0)


@attrs.frozen
class McpServers:
    """Connected MCP servers: what :func:`connect_mcp_servers` yields.

    ``tools`` (all servers' tools, in configuration order) go to
    ``CodeModeSession(tools=...)``; ``namespace_descriptions`` gives each server
    that sent ``instructions`` a heading in the ``exec`` description;
    ``sessions`` are the SDK client sessions, by server name, for anything else.
    """

    tools: list[McpTool]
    sessions: dict[str, ClientSession]
    namespace_descriptions: dict[str, NamespaceDescription]


async def _connect(
    stack: AsyncExitStack, config: McpServerConfig, errlog: TextIO
) -> tuple[ClientSession, str | None]:
    if config.command is not None:
        parameters = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
        )
        read, write = await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
    else:
        assert config.url is not None
        client = httpx2.AsyncClient(headers=dict(config.headers), timeout=_HTTP_TIMEOUT)
        await stack.enter_async_context(client)
        read, write = await stack.enter_async_context(
            streamable_http_client(config.url, http_client=client)
        )
    session = await stack.enter_async_context(ClientSession(read, write))
    result = await session.initialize()
    return session, result.instructions


def _stderr() -> TextIO:
    """Where the stderr of stdio servers goes by default: ``sys.stderr``, or the
    process's own stderr when ``sys.stderr`` was replaced by an object without a file
    descriptor (a child process can only inherit a real one)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
    return sys.stderr


@asynccontextmanager
async def connect_mcp_servers(
    servers: Sequence[McpServerConfig],
    *,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    errlog: TextIO | None = None,
) -> AsyncIterator[McpServers]:
    """Start (stdio) or connect to (HTTP) every server, initialize it and list its
    tools; on leaving the block, close every session and stop every process.

    A server that cannot be started, fails its handshake, or takes longer than
    ``startup_timeout`` seconds raises :class:`McpConfigError` naming it (the ones
    already started are stopped). ``errlog`` receives the stderr of stdio servers
    (default ``sys.stderr``). Servers are started one after the other: their
    sessions must be closed by the task that opened them.
    """
    names = [server.name for server in servers]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise McpConfigError(f"MCP server names must be unique: {sorted(duplicates)}")
    starting = ""
    # One scope around the whole block, with a deadline only while servers start: the
    # sessions' task groups are entered here and exited at the end, so a `fail_after`
    # around each start would not nest with them.
    with trio.CancelScope(deadline=trio.current_time() + startup_timeout) as startup:
        async with AsyncExitStack() as stack:
            tools: list[McpTool] = []
            sessions: dict[str, ClientSession] = {}
            descriptions: dict[str, NamespaceDescription] = {}
            for server in servers:
                starting = f"`{server.name}` ({server.command or server.url})"
                try:
                    session, instructions = await _connect(
                        stack, server, errlog if errlog is not None else _stderr()
                    )
                    server_tools = await list_mcp_tools(
                        session,
                        server.name,
                        input_schema_max_bytes=server.tool_input_schema_max_bytes,
                    )
                except (OSError, MCPError, httpx2.HTTPError) as error:
                    raise McpConfigError(
                        f"MCP server {starting} could not be started: {error}"
                    ) from None
                tools.extend(server_tools)
                sessions[server.name] = session
                if instructions and instructions.strip():
                    namespace = mcp_namespace(server.name)
                    descriptions[namespace] = NamespaceDescription(namespace, instructions)
            startup.deadline = math.inf
            yield McpServers(tools, sessions, descriptions)
    if startup.cancelled_caught:
        raise McpConfigError(f"MCP server {starting} did not start within {startup_timeout} s")
