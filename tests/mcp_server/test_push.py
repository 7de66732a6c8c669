"""Push over MCP (``code-mode mcp serve --push``): a client hears that a program it was
told is running has finished, without calling ``wait``, and collects the result once.
Driven by the official SDK's client over stdio (the command line) and streamable HTTP.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from code_mode import CellFinished, tool
from code_mode.mcp_server import CodeModeMcpServer
from code_mode.mcp_server.pushed_results import (
    CELLS_URI,
    RESOURCE_NOT_FOUND,
    PushedResults,
    cell_uri,
)
from code_mode.model_tools.formatting import PUSH_RUNNING_NOTE

from ..mcp_support import PIXEL, SAFETY, add, serve_command
from .http_support import exec_code, http_server, outputs, running_cell, texts


class Updates:
    """A ``message_handler`` that keeps the URIs of resource-updated notifications."""

    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str](math.inf)

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.send.send_nowait(message.params.uri)

    async def next(self) -> str:
        with trio.fail_after(SAFETY):
            return await self.receive.receive()


# The SDK warns that 2026-07-28 replaces resources/subscribe with subscriptions/listen;
# that revision is the stateless one, which this server (whose cells live in a session)
# does not serve, so the initialize-handshake subscription is the one that applies.
pytestmark = pytest.mark.filterwarnings("ignore:resources/subscribe is removed")

GATES: dict[str, trio.Event] = {}


@tool
async def gate(name: str) -> str:
    """Wait until the test opens the gate called ``name``."""
    await GATES.setdefault(name, trio.Event()).wait()
    return name


@asynccontextmanager
async def http_client(url: str, updates: Updates) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=updates) as session,
    ):
        await session.initialize()
        yield session


async def test_stdio_client_is_told_and_reads_the_result_once() -> None:
    command, args, env = serve_command("--push")
    updates = Updates()
    code = '// @exec: {"yield_time_ms": 0}\nawait new Promise(r => setTimeout(r, 100));'
    with trio.fail_after(SAFETY):
        async with (
            stdio_client(StdioServerParameters(command=command, args=args, env=env)) as streams,
            ClientSession(*streams, message_handler=updates) as session,
        ):
            initialized = await session.initialize()
            resources = initialized.capabilities.resources
            assert resources is not None and resources.subscribe
            listed = await session.list_tools()
            assert "you will be given its result" in (listed.tools[0].description or "")
            await session.subscribe_resource(CELLS_URI)

            started = await exec_code(session, code + f'text("done"); image({PIXEL!r});')
            cell = running_cell(started)
            assert texts(started)[0].endswith(f"\n{PUSH_RUNNING_NOTE}")

            assert await updates.next() == cell_uri(cell)
            listing = await session.list_resources()
            assert [resource.uri for resource in listing.resources] == [cell_uri(cell)]
            read = await session.read_resource(cell_uri(cell))
            # As a tool result: all of the text first, then the image.
            text, image = read.contents
            assert isinstance(text, types.TextResourceContents)
            assert text.text.startswith("Script completed\n")
            assert text.text.endswith("\nOutput:\ndone")
            assert isinstance(image, types.BlobResourceContents)
            assert image.mime_type == "image/png" and PIXEL.endswith(image.blob)

            # Collected once: the resource and the cell are gone.
            with pytest.raises(MCPError) as missing:
                await session.read_resource(cell_uri(cell))
            assert missing.value.error.code == RESOURCE_NOT_FOUND
            waited = await session.call_tool("wait", {"cell_id": cell})
            assert waited.is_error and f"exec cell {cell} not found" in texts(waited)[-1]
            assert (await session.list_resources()).resources == []


async def test_http_client_collects_a_pushed_result_with_wait() -> None:
    GATES.clear()
    server = CodeModeMcpServer([add, gate], push=True)
    updates = Updates()
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url, updates) as session:
            code = '// @exec: {"yield_time_ms": 0}\nconst x = await tools.gate({name: "one"});'
            started = await exec_code(session, code + 'throw new Error("after " + x);')
            cell = running_cell(started)
            # Subscribing to the one cell (not to all of them) is enough.
            await session.subscribe_resource(cell_uri(cell))
            GATES.setdefault("one", trio.Event()).set()
            assert await updates.next() == cell_uri(cell)

            collected = await session.call_tool("wait", {"cell_id": cell})
            assert collected.is_error  # the program threw: Script failed
            assert texts(collected)[0].startswith("Script failed\n")
            assert outputs(collected)[:2] == ["Script error:", "Error: after one"]
            with pytest.raises(MCPError):
                await session.read_resource(cell_uri(cell))


async def test_http_pushed_results_stay_for_a_client_that_did_not_subscribe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    GATES.clear()
    kept = trio.Event()
    original = PushedResults.on_finished

    async def on_finished(self: PushedResults, finished: CellFinished) -> None:
        await original(self, finished)
        kept.set()

    monkeypatch.setattr(PushedResults, "on_finished", on_finished)
    server = CodeModeMcpServer([gate], push=True)
    updates = Updates()
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url, updates) as session:
            code = '// @exec: {"yield_time_ms": 0}\nawait tools.gate({name: "two"}); text("ok");'
            cell = running_cell(await exec_code(session, code))
            GATES.setdefault("two", trio.Event()).set()
            await kept.wait()
            # No subscription, so no notification: the result waits as a resource.
            assert updates.receive.statistics().current_buffer_used == 0
            listing = await session.list_resources()
            assert [resource.uri for resource in listing.resources] == [cell_uri(cell)]
            read = await session.read_resource(cell_uri(cell))
            [content] = read.contents
            assert isinstance(content, types.TextResourceContents)
            assert content.text.endswith("\nOutput:\nok")
            with pytest.raises(MCPError) as bad:
                await session.subscribe_resource("code-mode://elsewhere")
            assert bad.value.error.code == RESOURCE_NOT_FOUND


async def test_without_push_the_server_offers_no_resources() -> None:
    server = CodeModeMcpServer([add])
    updates = Updates()
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url, updates) as session:
            assert session.server_capabilities is not None
            assert session.server_capabilities.resources is None
            listed = await session.list_tools()
            assert "you will be given its result" not in (listed.tools[0].description or "")
