"""What the server answers before MCP: health and readiness, and the refusals a client
or a balancer acts on (404 for a session that is gone, 503 for a new session the
server cannot take, 413 for a body too large), each with a message naming the limit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
import pytest
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from code_mode.mcp_server import CodeModeMcpServer, ServerLimits

from ..mcp_support import SAFETY, add
from .http_support import (
    GATES,
    INITIALIZE,
    MCP_HEADERS,
    exec_code,
    gate,
    get,
    http_client,
    http_server,
    outputs,
    refused,
    running_cell,
    texts,
)


async def test_health_and_readiness_and_the_session_limit() -> None:
    server = CodeModeMcpServer([add], limits=ServerLimits(max_sessions=1))
    with trio.fail_after(SAFETY):
        async with http_server(server) as url:
            assert await get(url, "/healthz") == (200, "ok\n")
            assert await get(url, "/readyz") == (200, "ready\n")
            async with http_client(url) as first:
                # A session counts from its first exec/wait, not from initialize.
                assert await get(url, "/readyz") == (200, "ready\n")
                done = await exec_code(first, "text(await tools.add({a: 1, b: 2}))")
                assert outputs(done) == ["3"]
                status, body = await get(url, "/readyz")
                assert status == 503
                assert "at most 1 sessions at once on this server" in body
                assert "ServerLimits.max_sessions" in body
                assert await get(url, "/healthz") == (200, "ok\n")
                with refused(r"at most 1 sessions at once"):
                    async with http_client(url):
                        pass
                # The session that has its place keeps it.
                again = await exec_code(first, "text(await tools.add({a: 2, b: 2}))")
                assert outputs(again) == ["4"]
            # Deleted when the client left: the place is free again.
            assert await get(url, "/readyz") == (200, "ready\n")
            async with http_client(url) as second:
                assert outputs(await exec_code(second, 'text("in")')) == ["in"]


async def test_a_session_the_server_does_not_know_is_404() -> None:
    server = CodeModeMcpServer([add])
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, httpx2.AsyncClient() as client:
            headers = {**MCP_HEADERS, "mcp-session-id": "0123456789abcdef0123456789abcdef"}
            response = await client.post(url, json=INITIALIZE, headers=headers)
            assert response.status_code == 404
            assert response.json()["error"]["message"] == "Session not found"


async def test_an_idle_session_is_gone_with_its_reason() -> None:
    """The MCP session goes; its cell, which belongs to its session handle, does not
    keep it, and goes in turn when its handle expires (the store's TTL, the same)."""
    server = CodeModeMcpServer([gate], limits=ServerLimits(session_idle_timeout=0.5))
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            code = '// @exec: {"yield_time_ms": 0}\nawait tools.gate({name: "gone idle"})'
            cell = running_cell(await exec_code(session, code))
            await trio.sleep(1.0)  # past the idle timeout (the deadline is the pool's)
            with refused(r"^Session not found: it was closed after 0.5 s"):
                await exec_code(session, 'text("still here")')
            async with http_client(url) as fresh:
                assert outputs(await exec_code(fresh, 'text("anew")')) == ["anew"]
                gone = await fresh.call_tool("wait", {"cell_id": cell})
                assert gone.is_error and "expired after 0.5 s without a call" in texts(gone)[0]
            GATES.setdefault("gone idle", trio.Event()).set()


async def test_a_body_over_the_limit_is_413_and_the_session_carries_on() -> None:
    server = CodeModeMcpServer([add], limits=ServerLimits(max_request_body_bytes=2000))
    limit_text = r"request body over this server's limit of 2000 bytes \(ServerLimits"
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            with refused(limit_text):
                await exec_code(session, f"text({json.dumps('x' * 3000)})")
            assert outputs(await exec_code(session, 'text("small")')) == ["small"]

            # A body without a length (chunked) is counted as it arrives.
            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(10):
                    yield b" " * 300

            async with httpx2.AsyncClient() as client:
                response = await client.post(url, content=chunks(), headers=MCP_HEADERS)
            assert response.status_code == 413
            assert "limit of 2000 bytes" in response.json()["error"]["message"]


@pytest.mark.parametrize(("host", "accepted"), [("127.0.0.1", False), ("0.0.0.0", True)])
async def test_dns_rebinding_protection_only_for_a_loopback_address(
    host: str, accepted: bool
) -> None:
    """Behind a balancer the server is addressed by names of the balancer's, which the
    protection (for a server on a loopback address) would refuse."""
    server = CodeModeMcpServer([add])
    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    with trio.fail_after(SAFETY):
        async with trio.open_nursery() as nursery:
            # As served on `host`, reached on 127.0.0.1 (the test stays on loopback).
            urls = await nursery.start(hypercorn_serve, server.http_app(host), config)
            headers = {**MCP_HEADERS, "host": "mcp.example.com"}
            async with httpx2.AsyncClient() as client:
                url = urls[0].rstrip("/") + "/mcp"
                response = await client.post(url, json=INITIALIZE, headers=headers)
            assert (response.status_code == 200) is accepted, response.text
            nursery.cancel_scope.cancel()
