"""Shared by the MCP tests: where the Node MCP programs are, tools to serve, and the
server command run as a child process. Imports no MCP SDK: the tests of hosts on the
SDK 1.x (``test_hosts_mcp1.py``) use it too."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from code_mode import tool

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / ".ci" / "node" / "node_modules" / ".bin"
SAFETY = 30.0  # seconds; a hang guard, never the thing under test (Node servers start slowly)
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def node_command(name: str) -> str:
    """The path of an npm-installed command (``.ci/node``, where ``.ci/run`` installs
    them, else ``PATH``); skips the test, naming it, when it is missing."""
    local = NODE_BIN / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None or shutil.which("node") is None:
        pytest.skip(f"`{name}` not found: run `npm ci --prefix .ci/node` (as .ci/run does)")
    return found


def serve_command(
    *extra: str, executable: str | None = None, state: Path | None = None
) -> tuple[str, list[str], dict[str, str]]:
    """``code-mode mcp serve`` serving :data:`TOOLS`, as (command, args, env): run by
    this Python, or by ``executable``, the ``code-mode`` command of another environment
    (a client's environment may lack the server's dependencies). Its default store is a
    SQLite file under ``$XDG_STATE_HOME``: ``state`` (servers given the same one share
    it), else a new folder, so that no test sees another's state."""
    args = ["mcp", "serve", "--tools", f"{__name__}:TOOLS", *extra]
    folder = state if state is not None else Path(tempfile.mkdtemp(prefix="code-mode-state-"))
    env = {"PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(folder)}
    if executable is not None:
        return executable, args, env
    return sys.executable, ["-m", "code_mode.cli", *args], env


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = [add]

BLOCKED: dict[str, trio.Event] = {}
"""Set when a :func:`block` call named by the key is cancelled."""


@tool
async def block(name: str) -> None:
    """Wait until cancelled (records the cancellation under ``name``)."""
    try:
        await trio.sleep_forever()
    finally:
        BLOCKED.setdefault(name, trio.Event()).set()


@tool
async def record(path: str, line: str) -> str:
    """Append ``line`` to the file ``path`` (how a test counts the runs of a program
    served by another process)."""
    with open(path, "a", encoding="utf-8") as file:  # noqa: ASYNC230 - a test's tiny file
        file.write(line + "\n")
    return line


TOOLS.append(record)


class CliServer:
    """``code-mode mcp serve --http ...`` run as a child process: its stderr so far,
    and its MCP URL once it has said it."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.received = b""

    async def read_until(self, marker: bytes) -> None:
        """Read the server's stderr until ``marker`` (it must not end before)."""
        while marker not in self.received:
            assert self.process.stderr is not None
            chunk = await self.process.stderr.receive_some()
            assert chunk, f"the server ended: {self.received!r}"
            self.received += chunk

    async def read_to_end(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.receive_some():
            self.received += chunk

    @property
    def url(self) -> str:
        return self.received.decode().split("/mcp\n")[0].split(" at ")[-1].strip() + "/mcp"


async def start_cli_server(
    nursery: trio.Nursery, command: str, args: Sequence[str], env: dict[str, str]
) -> CliServer:
    """Start the server command in ``nursery`` and read until it serves HTTP."""
    process = await nursery.start(
        functools.partial(
            trio.run_process,
            [command, *args],
            env={**os.environ, **env},
            stderr=subprocess.PIPE,
            check=False,
        )
    )
    server = CliServer(process)
    await server.read_until(b"/mcp\n")
    return server
