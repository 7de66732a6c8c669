"""Every start-up error of ``code-mode mcp serve`` and ``code-mode run`` is one line,
``code-mode...: <what>: <culprit>``, exit status 2, no traceback: one case per option
and per kind of bad value."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TOOLS_FILE = """
from code_mode import tool

@tool
async def add(a: int) -> int:
    "Add."
    return a

TWICE = [add, add]
NUMBERS = [1, 2]
NUMBER = 3
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("startup")
    (folder / "eco_tools.py").write_text(TOOLS_FILE)
    (folder / "bad.json").write_text("{bad")
    (folder / "no_command.json").write_text('{"mcpServers": {"x": {}}}')
    (folder / "missing_command.json").write_text(
        '{"mcpServers": {"ghost": {"command": "/nonexistent/ghost-server"}}}'
    )
    (folder / "prog.js").write_text("text(1)")
    return folder


@pytest.fixture(scope="module")
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


SERVE = ["mcp", "serve"]
CASES: list[tuple[list[str], str]] = [
    ([*SERVE, "--tools", "eco_tools.py:TWICE"], "two tools are named `add`"),
    ([*SERVE, "--tools", "eco_tools.py:NUMBERS"], "eco_tools.py:NUMBERS.*must be a tool"),
    ([*SERVE, "--tools", "eco_tools.py:NUMBER"], "eco_tools.py:NUMBER.*must be a tool"),
    ([*SERVE, "--tools", "eco_tools.py:NOPE"], "eco_tools.py has no attribute `NOPE`"),
    ([*SERVE, "--tools", "eco_tools.py"], "--tools expects"),
    ([*SERVE, "--tools", "no_such_module:TOOLS"], "cannot import no_such_module"),
    ([*SERVE, "--tools", "missing.py:TOOLS"], "no Python file at .*missing.py"),
    ([*SERVE, "--mcp-config", "missing.json"], "no such file or directory: missing.json"),
    ([*SERVE, "--mcp-config", "bad.json"], "bad.json: not valid JSON"),
    ([*SERVE, "--mcp-config", "no_command.json"], "MCP server `x` needs a `command`"),
    ([*SERVE, "--mcp-config", "missing_command.json"], "`ghost`.*could not be started"),
    ([*SERVE, "--http", "nohost"], "--http expects HOST:PORT"),
    ([*SERVE, "--http", "127.0.0.1:99999"], "--http expects HOST:PORT"),
    ([*SERVE, "--http", "127.0.0.1:{busy}"], "address already in use.*127.0.0.1:{busy}"),
    ([*SERVE, "--max-sessions", "0"], "ServerLimits.max_sessions"),
    ([*SERVE, "--max-sessions", "x"], "--max-sessions: invalid int value"),
    ([*SERVE, "--session-idle-timeout", "-1"], "ServerLimits.session_idle_timeout"),
    ([*SERVE, "--max-request-body-bytes", "0"], "ServerLimits.max_request_body_bytes"),
    ([*SERVE, "--drain-deadline", "nan"], "ServerLimits.drain_deadline"),
    ([*SERVE, "--exec-retry-window", "0"], "ServerLimits.exec_retry_window"),
    ([*SERVE, "--handover-grace", "-2"], "ServerLimits.handover_grace"),
    ([*SERVE, "--max-yield-ms", "-3"], "--max-yield-ms: must be 0 or more"),
    ([*SERVE, "--wait-idle-floor-ms", "x"], "--wait-idle-floor-ms"),
    ([*SERVE, "--memory-limit-bytes", "0"], "RuntimeConfig.memory_limit_bytes"),
    ([*SERVE, "--max-cell-seconds", "0"], "RuntimeConfig.max_cell_seconds"),
    ([*SERVE, "--callback-grace", "-1"], "RuntimeConfig.callback_grace"),
    ([*SERVE, "--isolation", "vm"], "--isolation: invalid choice"),
    ([*SERVE, "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["run", "missing.js"], "no such file or directory: missing.js"),
    (["run", "--yield-seconds", "-1", "prog.js"], "--yield-seconds: must be"),
    (["run", "--timeout", "x", "prog.js"], "--timeout: must be|--timeout: invalid"),
    (["run", "--max-pending-timers", "0", "prog.js"], "RuntimeConfig.max_pending_timers"),
    (["run", "--mcp-config", "bad.json", "prog.js"], "bad.json: not valid JSON"),
    (["run", "--mcp-config", "missing_command.json", "prog.js"], "`ghost`.*could not be"),
]


@pytest.mark.parametrize(("argv", "culprit"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_bad_start_up_input_is_one_line(
    argv: list[str], culprit: str, folder: Path, busy_port: int
) -> None:
    argv = [arg.replace("{busy}", str(busy_port)) for arg in argv]
    done = subprocess.run(
        [sys.executable, "-m", "code_mode.cli", *argv],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "_code_mode_tools_" not in done.stderr  # never the loader's internal module
    lines = done.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 3, done.stderr
    assert lines[0].startswith("code-mode"), done.stderr
    assert re.search(culprit.replace("{busy}", str(busy_port)), done.stderr), done.stderr
