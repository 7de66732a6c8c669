"""MCP servers from configuration: the ``mcpServers`` JSON of common MCP hosts, started
and stopped with a scope.

::

    {"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
               "env": {"DEBUG": "1"}},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}
    }}

An entry with ``command`` is a stdio server (a child process); one with ``url`` is a
streamable HTTP server. ``type`` (``"stdio"``, ``"http"``/``"streamable-http"``) may say
so explicitly; ``"disabled": true`` skips an entry; other keys hosts add (``alwaysAllow``,
``timeout``...) are ignored. SSE servers are refused: the transport is deprecated.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Final, TextIO

import attrs
import httpx2
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from code_mode.model_tools.descriptions import NamespaceDescription

from ._client import McpTool, list_mcp_tools, mcp_namespace

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "McpConfigError",
    "McpServerConfig",
    "McpServers",
    "connect_mcp_servers",
    "load_mcp_config",
    "parse_mcp_config",
]

DEFAULT_STARTUP_TIMEOUT: Final = 60.0
"""Seconds a server gets to start, answer ``initialize`` and list its tools (default
60 s: ``npx`` may download the package first)."""

_HTTP_TIMEOUT: Final = httpx2.Timeout(30.0, read=300.0)
_STDIO_KEYS: Final = frozenset({"command", "args", "env", "cwd"})
_HTTP_TYPES: Final = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})


class McpConfigError(ValueError):
    """The ``mcpServers`` configuration is malformed, or a server could not be
    started; the message names the server."""


@attrs.frozen(kw_only=True)
class McpServerConfig:
    """One MCP server to connect to: a stdio ``command`` or a streamable HTTP ``url``.

    ``name`` is the key of its ``mcpServers`` entry; its tools are
    ``mcp__<name>__<tool>``. For stdio, ``env`` is added to a small safe default
    environment (the SDK's: ``PATH``, ``HOME``...), not to the whole environment of
    the host, so secrets are passed on purpose only.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"MCP server `{self.name}` needs either a `command` or a `url`")


def _strings(name: str, key: str, value: Any, kind: type) -> Any:
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise McpConfigError(f"MCP server `{name}`: `{key}` must be a list of strings")
        return tuple(value)
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"MCP server `{name}`: `{key}` must map strings to strings")
    return dict(value)


def _server_config(name: str, entry: Any) -> McpServerConfig | None:
    if not isinstance(entry, dict):
        raise McpConfigError(f"MCP server `{name}` must be a JSON object")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type")
    if kind == "sse":
        raise McpConfigError(
            f"MCP server `{name}`: the SSE transport is not supported (use streamable HTTP)"
        )
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise McpConfigError(f"MCP server `{name}`: unknown `type` {kind!r}")
    if "url" in entry and kind != "stdio":
        url = entry["url"]
        if not isinstance(url, str) or not url:
            raise McpConfigError(f"MCP server `{name}`: `url` must be a non-empty string")
        headers = _strings(name, "headers", entry.get("headers", {}), dict)
        return McpServerConfig(name=name, url=url, headers=headers)
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise McpConfigError(f"MCP server `{name}` needs a `command` (stdio) or a `url` (HTTP)")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f"MCP server `{name}`: `cwd` must be a string")
    return McpServerConfig(
        name=name,
        command=command,
        args=_strings(name, "args", entry.get("args", []), list),
        env=_strings(name, "env", entry.get("env", {}), dict),
        cwd=cwd,
    )


def parse_mcp_config(data: Any) -> list[McpServerConfig]:
    """The servers of an ``mcpServers`` document (the decoded JSON), in file order,
    without the disabled ones. Raises :class:`McpConfigError` naming the problem."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise McpConfigError('an MCP configuration is a JSON object with an "mcpServers" object')
    servers: list[McpServerConfig] = []
    for name, entry in data["mcpServers"].items():
        if not name:
            raise McpConfigError("an MCP server name must not be empty")
        config = _server_config(name, entry)
        if config is not None:
            servers.append(config)
    return servers


def load_mcp_config(path: str | os.PathLike[str]) -> list[McpServerConfig]:
    """:func:`parse_mcp_config` of a JSON file (``OSError`` if it cannot be read)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpConfigError(f"{path}: not valid JSON: {error}") from None
    return parse_mcp_config(data)


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
                    server_tools = await list_mcp_tools(session, server.name)
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
