"""`CodeModeMcpServer.http_app()` under uvicorn (asyncio): the app runs in trio guest
mode (mcp_server/any_loop.py) and serves the MCP SDK's client."""

from __future__ import annotations

import asyncio
import socket

import mcp.types as types
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from code_mode import tool
from code_mode.mcp_server import MCP_HTTP_PATH, CodeModeMcpServer


@tool
async def add(a: int, b: int) -> int:
    """Add two integers (an asyncio tool: it runs on uvicorn's loop)."""
    await asyncio.sleep(0)
    return a + b


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def test_http_app_under_uvicorn_serves_an_sdk_client() -> None:
    async def main() -> list[str]:
        server = CodeModeMcpServer([add])
        # Listening before uvicorn starts: the client's connection waits in the backlog
        # until uvicorn (after the app's lifespan started) accepts it; no polling.
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        config = uvicorn.Config(server.http_app(), lifespan="on", log_level="warning")
        front = uvicorn.Server(config)
        serving = asyncio.create_task(front.serve(sockets=[listener]))
        try:
            url = f"http://127.0.0.1:{port}{MCP_HTTP_PATH}"
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                first = await session.call_tool(
                    "exec",
                    {
                        "code": '// @exec: {"yield_time_ms": 0}\n'
                        "await new Promise(r => setTimeout(r, 200)); "
                        "text(await tools.add({a: 2, b: 40}))"
                    },
                )
                running = texts(first)
                cell = running[0].split("cell ID ")[1].split()[0]
                second = await session.call_tool("wait", {"cell_id": cell, "yield_time_ms": 5000})
                return running[:1] + texts(second)
        finally:
            front.should_exit = True
            await serving
            listener.close()

    result = asyncio.run(main())
    assert result[0].startswith("Script running"), result
    assert result[1].startswith("Script completed") and result[-1].endswith("\nOutput:\n42")


def test_without_lifespan_requests_are_refused_saying_why() -> None:
    async def main() -> tuple[int, str]:
        app = CodeModeMcpServer([add]).http_app()
        sent: list[dict[str, object]] = []

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": MCP_HTTP_PATH, "headers": []}
        await app(scope, receive, send)  # type: ignore[arg-type]
        body = sent[1]["body"]
        assert isinstance(body, bytes)
        return int(str(sent[0]["status"])), body.decode()

    status, body = asyncio.run(main())
    assert status == 500 and "lifespan" in body
