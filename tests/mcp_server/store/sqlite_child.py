"""A second server process on a SQLite store, for the tests that share one file between
processes: ``python sqlite_child.py URL HEARTBEAT_TTL``.

It opens the store, writes ``{"ready": PID}`` and then, for each line ``[method, *args]``
on its standard input, calls ``store.method(*args)`` and writes the result as one line
of JSON (records as lists, ``{"error": ...}`` for an exception). It is driven by
:class:`Child`, in the test's trio run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import attrs
import trio

from code_mode.mcp_server.store import JournalEntry, open_store

_SCRIPT = os.path.abspath(__file__)


def _plain(value: Any) -> Any:
    if attrs.has(type(value)):
        return [_plain(each) for each in attrs.astuple(value, recurse=False)]
    if isinstance(value, list | tuple):
        return [_plain(each) for each in value]
    return value


async def _serve(url: str, heartbeat_ttl: float) -> None:
    async with open_store(url, session_ttl=600, heartbeat_ttl=heartbeat_ttl) as store:
        print(json.dumps({"ready": os.getpid()}), flush=True)
        while line := await trio.to_thread.run_sync(sys.stdin.readline):
            method, *args = json.loads(line)
            if method == "append_journal":
                args[1] = JournalEntry(*args[1])
            try:
                result = _plain(await getattr(store, method)(*args))
            except Exception as error:
                result = {"error": f"{type(error).__name__}: {error}"}
            print(json.dumps(result), flush=True)


class Child:
    """The child process, driven from a trio test: :meth:`call` sends one call and
    returns its result; :meth:`kill` is SIGKILL."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.pid = 0
        self._buffer = b""

    @classmethod
    async def start(cls, url: str, *, heartbeat_ttl: float = 600.0) -> Child:
        process = await trio.lowlevel.open_process(
            [sys.executable, _SCRIPT, url, str(heartbeat_ttl)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        child = cls(process)
        child.pid = (await child._line())["ready"]
        return child

    async def call(self, method: str, *args: Any) -> Any:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps([method, *args]).encode() + b"\n")
        return await self._line()

    async def _line(self) -> Any:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self.process.stdout.receive_some()
            if not chunk:
                raise RuntimeError(f"the child exited ({await self.process.wait()})")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    async def kill(self) -> None:
        self.process.kill()
        await self.process.wait()

    async def close(self) -> None:
        if self.process.returncode is None:
            assert self.process.stdin is not None
            await self.process.stdin.aclose()  # it leaves its loop and closes the store
            with trio.move_on_after(10):
                await self.process.wait()
        if self.process.returncode is None:
            await self.kill()


if __name__ == "__main__":
    trio.run(_serve, sys.argv[1], float(sys.argv[2]))
