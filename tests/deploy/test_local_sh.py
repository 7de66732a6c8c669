"""``deploy/local.sh`` says what is wrong at start-up instead of waiting in silence: a
Python without the extras the servers need is named before anything starts, and a
server that exits at once stops everything, with the lines it wrote and a non-zero
status (before: every server exited 2 for want of ``coredis`` and the script waited
out its 120 s readiness deadline, then exited 0)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from .cluster import LOCAL_SH, ROOT, TOOLS, free_port_block, needs_haproxy

BOUND = 60.0  # seconds; far below the readiness deadline of 120 s


def closed_port() -> int:
    """A port nothing listens on (bound and closed at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def local_sh(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "CODE_MODE_PYTHON": python,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with trio.fail_after(BOUND):
        return await trio.run_process(
            ["bash", str(LOCAL_SH), *args],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


@needs_haproxy
@pytest.mark.parametrize(
    ("store", "extra"),
    [("redis://127.0.0.1:1/0", "code-mode[mcp,redis]"), ("memory://", "code-mode[mcp]")],
)
async def test_a_python_without_the_extras_is_named(tmp_path: Path, store: str, extra: str) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 1\n")  # imports nothing
    python.chmod(0o755)
    port = free_port_block(4)
    done = await local_sh("1", str(port), "--store", store, python=str(python))
    assert done.returncode == 2
    said = done.stderr.decode()
    assert f"needs {extra}; install it with `{python} -m pip install '{extra}'`" in said, said
    assert done.stdout == b""  # nothing started


@needs_haproxy
async def test_a_server_that_exits_at_once_stops_everything_saying_why() -> None:
    port = free_port_block(4)
    store = f"redis://127.0.0.1:{closed_port()}/0"  # nothing answers: each server exits 2
    done = await local_sh("2", str(port), "--tools", TOOLS, "--store", store)
    out = done.stdout.decode()
    assert done.returncode == 1, out
    assert "local.sh: ready" not in out
    assert "exited with status 2 before it was ready; its last lines:" in out, out
    assert "local.sh: | code-mode: --store: " in out, out  # the server's own words
    assert "balancer pid" not in out  # never started
