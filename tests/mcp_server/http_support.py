"""Shared by the tests of the server's HTTP side: a server on 127.0.0.1, SDK clients,
raw HTTP requests, tools a test opens like a gate, and a tool that counts its calls."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import mcp.types as types
import pytest
import trio
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from code_mode import tool
from code_mode.mcp_server import CodeModeMcpServer, ServerLimits
from code_mode.mcp_server.store import Store, is_handle, open_store
from code_mode.model_tools.adapters import MCP_META_CELL, MCP_META_SESSION

from ..mcp_support import CliServer as CliServer  # re-exported: moved to ..mcp_support
from ..mcp_support import start_cli_server as start_cli_server

GATES: dict[str, trio.Event] = {}
"""Opened by a test; :func:`gate` waits for the one it names."""


@tool
async def gate(name: str) -> str:
    """Wait until the test opens the gate ``name``."""
    await GATES.setdefault(name, trio.Event()).wait()
    return f"{name} open"


COUNTS: dict[str, int] = {}
"""How often :func:`count` and :func:`hold` ran, by name."""
ENTERED: dict[str, trio.Event] = {}
"""Set when :func:`hold` is entered, by name."""


@tool
async def count(name: str) -> int:
    """Count the calls of ``name`` (a tool that must never run twice)."""
    COUNTS[name] = COUNTS.get(name, 0) + 1
    return COUNTS[name]


@tool
async def hold(name: str) -> str:
    """Say it was entered, then wait until the test opens the gate ``name``."""
    COUNTS[name] = COUNTS.get(name, 0) + 1
    ENTERED.setdefault(name, trio.Event()).set()
    await GATES.setdefault(name, trio.Event()).wait()
    return f"{name} open"


@asynccontextmanager
async def serving_on(
    url: str, tools: Sequence[Any], *, heartbeat_ttl: float, limits: ServerLimits | None = None
) -> AsyncIterator[tuple[CodeModeMcpServer, Client, Store]]:
    """A server with ``tools`` on the store at ``url`` (its own client of it), and
    an SDK client (the stateless revision) of the server."""
    async with open_store(url, session_ttl=600, heartbeat_ttl=heartbeat_ttl) as store:
        server = CodeModeMcpServer(tools=list(tools), store=store, limits=limits)
        async with http_server(server) as endpoint, Client(endpoint) as client:
            yield server, client, store


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def running_cell(result: types.CallToolResult) -> str:
    """The handle of the cell ``result`` hands back running (``Script running with
    cell ID <handle>``), checked to be a handle and to be the one its ``_meta`` names."""
    [text] = texts(result)
    found = re.match(r"Script running with cell ID (\S+)\n", text)
    assert found is not None, text
    handle = found.group(1)
    assert is_handle(handle), handle
    assert (result.meta or {}).get(MCP_META_CELL) == handle
    return handle


def session_of(result: types.CallToolResult) -> str:
    """The session handle ``result`` names (``Session: <handle>``)."""
    [text] = texts(result)
    found = re.search(r"^Session: (\S+)$", text.partition("\nOutput:\n")[0], re.MULTILINE)
    assert found is not None, text
    assert (result.meta or {}).get(MCP_META_SESSION) == found.group(1)
    return found.group(1)


def outputs(result: types.CallToolResult) -> list[str]:
    """The program's text output in ``result``, a line each: what follows the header's
    ``Output:`` line. All of a result's text is in its first content item (the server
    joins the outputs, a line each), so there is one text item."""
    [text] = texts(result)
    _, _, output = text.partition("\nOutput:\n")
    return output.split("\n") if output else []


@asynccontextmanager
async def http_server(server: CodeModeMcpServer) -> AsyncIterator[str]:
    """``server`` on 127.0.0.1 (any free port) for the block; yields its MCP URL."""
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(server.serve_http, "127.0.0.1", 0)
        yield url
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def http_client(url: str, **options: Any) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session over streamable HTTP."""
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, **options) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def two_sessions(
    server: CodeModeMcpServer,
) -> AsyncIterator[tuple[str, ClientSession, ClientSession]]:
    """``server`` on 127.0.0.1 with two SDK clients, each its own MCP session; yields
    the URL and the two."""
    async with http_server(server) as url, http_client(url) as first, http_client(url) as second:
        yield url, first, second


def leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions in ``error``, exception groups opened."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


@contextmanager
def refused(pattern: str) -> Iterator[None]:
    """The block raises an ``MCPError`` whose message matches ``pattern`` (alone, or in
    the exception groups of the client's task groups, as leaving a client block does)."""
    try:
        yield
    except BaseException as error:
        if not any(
            isinstance(leaf, MCPError) and re.search(pattern, str(leaf)) for leaf in leaves(error)
        ):
            raise
    else:
        pytest.fail(f"no MCPError matching {pattern!r}")


async def exec_code(session: ClientSession, code: str, **options: Any) -> types.CallToolResult:
    return await session.call_tool("exec", {"code": code}, **options)


async def get(url: str, path: str) -> tuple[int, str]:
    """``GET`` of ``path`` beside the MCP endpoint ``url``: (status, body)."""
    async with httpx2.AsyncClient() as client:
        response = await client.get(url.removesuffix("/mcp") + path)
        return response.status_code, response.text


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}

MCP_HEADERS = {"accept": "application/json, text/event-stream"}
