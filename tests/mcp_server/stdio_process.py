"""A ``code-mode mcp serve`` process over stdio, spoken to by hand: one process per
MCP session, as the clients of most agent frameworks start one per tool call
(LangChain's ``langchain-mcp-adapters``), and one a test can SIGKILL."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from ..mcp_support import serve_command
from .http_support import INITIALIZE

RUNNING = re.compile(r"Script running with cell ID (\S+)\n")
SESSION = re.compile(r"^Session: (\S+)$", re.MULTILINE)


class StdioProcess:
    """One server process and its MCP session (initialized)."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._received = b""
        self._ids = 1  # the initialize request's

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all((json.dumps(message) + "\n").encode())

    async def _answer(self, request_id: int) -> dict[str, Any]:
        """The response to ``request_id`` (notifications on the way are skipped)."""
        assert self.process.stdout is not None
        while True:
            line, newline, rest = self._received.partition(b"\n")
            if newline:
                self._received = rest
                message = json.loads(line)
                if message.get("id") == request_id:
                    assert "result" in message, message
                    result: dict[str, Any] = message["result"]
                    return result
                continue
            chunk = await self.process.stdout.receive_some()
            assert chunk, f"the server closed stdout: {self._received!r}"
            self._received += chunk

    async def initialize(self) -> None:
        await self._send(INITIALIZE)
        await self._answer(1)
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call``: the ``CallToolResult`` as JSON."""
        self._ids += 1
        params = {"name": tool, "arguments": arguments}
        await self._send(
            {"jsonrpc": "2.0", "id": self._ids, "method": "tools/call", "params": params}
        )
        return await self._answer(self._ids)


def text_of(result: dict[str, Any]) -> str:
    """All of a result's text: its first content item."""
    text: str = result["content"][0]["text"]
    return text


def outputs_of(result: dict[str, Any]) -> list[str]:
    _, _, output = text_of(result).partition("\nOutput:\n")
    return output.split("\n") if output else []


@asynccontextmanager
async def stdio_process(state: Path, *extra: str) -> AsyncIterator[StdioProcess]:
    """A server whose default store is under ``state`` (servers given the same one
    share it), initialized; on leaving, its stdin is closed (the client goes away, as
    at the end of a per-call session) and it must exit 0, unless the test killed it."""
    command, args, env = serve_command(*extra, state=state)
    process = await trio.lowlevel.open_process(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **env},
    )
    served = StdioProcess(process)
    try:
        await served.initialize()
        yield served
        assert process.stdin is not None
        await process.stdin.aclose()
        assert await process.wait() in (0, -9)  # (-9: SIGKILLed by the test)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def one_call(state: Path, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call in a server process of its own, as a per-call client makes it."""
    async with stdio_process(state) as served:
        return await served.call(tool, arguments)
