"""Shared by the MCP tests: where the Node MCP programs are, and tools to serve."""

from __future__ import annotations

import shutil
import sys
import tempfile
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


def serve_command(*extra: str, state: Path | None = None) -> tuple[str, list[str], dict[str, str]]:
    """``code-mode mcp serve`` serving :data:`TOOLS`, as (command, args, env). Its
    default store is a SQLite file under ``$XDG_STATE_HOME``: ``state`` (servers given
    the same one share it), else a new folder, so that no test sees another's state."""
    args = ["-m", "code_mode.cli", "mcp", "serve", "--tools", f"{__name__}:TOOLS", *extra]
    folder = state if state is not None else Path(tempfile.mkdtemp(prefix="code-mode-state-"))
    env = {"PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(folder)}
    return sys.executable, args, env


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
