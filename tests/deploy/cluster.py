"""``deploy/local.sh`` run by a test: N servers and HAProxy on 127.0.0.1, and what it
reports about them."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Protocol

import attrs
import pytest
import trio

ROOT = Path(__file__).resolve().parents[2]
LOCAL_SH = ROOT / "deploy" / "local.sh"
TOOLS = "tests.deploy.cluster_tools:TOOLS"
START_TIMEOUT = 90.0  # seconds for N servers to start on a loaded two-core machine


MISSING_HAPROXY = (
    "haproxy not found: install it with `apt-get install -y haproxy` (as .ci/run does)"
)

needs_haproxy = pytest.mark.skipif(shutil.which("haproxy") is None, reason=MISSING_HAPROXY)
"""For async tests: a skip raised inside trio loses its reason, a mark keeps it."""


def require_haproxy() -> str:
    """The ``haproxy`` command; skips the test, naming the install, when it is missing."""
    found = shutil.which("haproxy")
    if found is None:
        pytest.skip(MISSING_HAPROXY)
    return found


def free_port_block(count: int) -> int:
    """A port P with P .. P+count-1 free on 127.0.0.1 now (local.sh uses consecutive
    ports: the balancer's, then one per server)."""
    for _ in range(50):
        base = random.randrange(20000, 60000 - count)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
        return base
    raise RuntimeError("no block of free ports on 127.0.0.1")


class Completing(Protocol):
    """An agent of the tests (``agent.Agent``, ``stateless_agent.StatelessAgent``)."""

    @property
    def name(self) -> str: ...

    @property
    def completed(self) -> int: ...


class Crowd:
    """Agents running at once; ``everyone_completed(n)`` waits until each has n
    programs done, ``each_completes(n)`` until each has done n more from now on."""

    def __init__(self, agents: Sequence[Completing]) -> None:
        self.agents = agents
        self._progress = trio.Event()

    def progressed(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    async def everyone_completed(self, count: int) -> None:
        while any(agent.completed < count for agent in self.agents):
            await self._progress.wait()

    async def each_completes(self, more: int) -> None:
        wanted = {agent.name: agent.completed + more for agent in self.agents}
        while any(agent.completed < wanted[agent.name] for agent in self.agents):
            await self._progress.wait()


@attrs.define
class Cluster:
    """A running ``local.sh``: where clients connect, which processes it started, and
    the exit status of each that ended (as it reports them)."""

    url: str
    servers: list[int] = attrs.Factory(list)  # pids, server 1 first
    notes: Path | None = None  # where the servers' `tools.note` calls are logged
    balancer: int = 0
    exits: dict[int, int] = attrs.Factory(dict)
    exited_at: dict[int, float] = attrs.Factory(dict)  # trio time of the report
    lines: list[str] = attrs.Factory(list)
    _changed: trio.Event = attrs.Factory(trio.Event)

    def _line(self, line: str) -> None:
        self.lines.append(line)
        words = line.split()
        if line.startswith("local.sh: ") and "exited with status" in line:
            pid = int(words[words.index("pid") + 1])
            self.exits[pid] = int(words[-1])
            self.exited_at[pid] = trio.current_time()
        elif line.startswith("local.sh: server ") and words[3] == "pid":
            self.servers.append(int(words[4]))
        elif line.startswith("local.sh: balancer pid"):
            self.balancer = int(words[3])
        self._changed.set()
        self._changed = trio.Event()

    async def wait_line(self, text: str) -> None:
        while not any(text in line for line in self.lines):
            await self._changed.wait()

    async def exit_status(self, pid: int) -> int:
        """The exit status of ``pid`` once local.sh reports it."""
        while pid not in self.exits:
            await self._changed.wait()
        return self.exits[pid]

    def output(self) -> str:
        return "\n".join(self.lines[-200:])


@asynccontextmanager
async def local_cluster(
    count: int, *serve_options: str, notes: Path | None = None
) -> AsyncIterator[Cluster]:
    """``deploy/local.sh count PORT`` serving :data:`TOOLS`, until the block ends
    (then stopped with SIGINT; anything left is killed). ``notes``: the file the
    servers' ``tools.note`` calls append to."""
    require_haproxy()
    port = free_port_block(count + 2)  # the balancer, the servers, the store
    cluster = Cluster(url=f"http://127.0.0.1:{port}/mcp", notes=notes)
    env = {
        **os.environ,
        "CODE_MODE_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **({"CODE_MODE_NOTES": str(notes)} if notes is not None else {}),
    }
    command = ["bash", str(LOCAL_SH), str(count), str(port), "--tools", TOOLS, *serve_options]
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    assert process.stdout is not None
    stdout = process.stdout

    async def read_lines() -> None:
        pending = b""
        while chunk := await stdout.receive_some():
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                cluster._line(line.decode(errors="replace"))
        if pending:
            cluster._line(pending.decode(errors="replace"))
        cluster._line("(local.sh closed its output)")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_lines)
            with trio.fail_after(START_TIMEOUT):
                await cluster.wait_line("local.sh: ready")
            try:
                yield cluster
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(30):
                    process.send_signal(signal.SIGINT)
                    await process.wait()
                nursery.cancel_scope.cancel()
    finally:
        for pid in [*cluster.servers, cluster.balancer]:
            if pid and pid not in cluster.exits:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
