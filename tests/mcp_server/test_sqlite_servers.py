"""Two ``code-mode mcp serve`` processes on one SQLite file: one is SIGKILLed while its
program runs, and the other, seeing its process gone, resumes the program before the
dead server's heartbeat would have lapsed."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from mcp import Client

from code_mode.mcp_server.store import DEFAULT_HEARTBEAT_TTL

from .http_support import outputs, texts

SAFETY = 90.0  # seconds the whole test may take on a loaded machine (a bound)
RUNNING = re.compile(r"Script running with cell ID (\S+)\n")
SERVING = re.compile(rb"serving MCP \(streamable HTTP\) at (\S+)")
SERVE = [sys.executable, "-m", "code_mode", "mcp", "serve", "--http", "127.0.0.1:0"]
PROGRAM = """// @exec: {"yield_time_ms": 50}
text("before");
await new Promise((resolve) => setTimeout(resolve, 1000));
text("after");
"""


@asynccontextmanager
async def serve(url: str) -> AsyncIterator[tuple[trio.Process, str]]:
    """``code-mode mcp serve --http`` on the store ``url``: the process and its MCP URL."""
    process = await trio.lowlevel.open_process(
        [*SERVE, "--store", url],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        said = b""
        assert process.stderr is not None
        while (found := SERVING.search(said)) is None:
            chunk = await process.stderr.receive_some()
            assert chunk, f"the server exited: {said.decode()}"
            said += chunk
        yield process, found.group(1).decode()
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def test_a_killed_servers_program_is_resumed_by_the_other_at_once(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/store.db"
    with trio.fail_after(SAFETY):
        async with serve(url) as (a_process, a_url), serve(url) as (_, b_url):
            async with Client(a_url) as a:
                started = await a.call_tool("exec", {"code": PROGRAM})
            running = RUNNING.match(texts(started)[0])
            assert running is not None, texts(started)
            assert outputs(started) == ["before"]
            a_process.kill()  # SIGKILL: no drain, no retire; its heartbeat lives 15 s
            await a_process.wait()
            killed = trio.current_time()
            seen: list[str] = []
            async with Client(b_url) as b:
                while True:  # each wait returns after at most the server's 4 s yield cap
                    done = await b.call_tool("wait", {"cell_id": running.group(1)})
                    seen += outputs(done)
                    if not texts(done)[0].startswith("Script running"):
                        break
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            assert seen == ["after"]  # "before" is not given twice
            # B's first wait saw A's process gone and claimed the cell at once (no
            # reaper pass to wait for); had B waited for the heartbeat, sent at most
            # TTL / 3 before the kill, it could not have claimed the cell before
            # 2 TTL / 3 (10 s) after it, nor finished the program's second before 11 s.
            assert trio.current_time() - killed < DEFAULT_HEARTBEAT_TTL / 3
