"""An MCP client as an agent uses code mode: programs that yield and are resumed with
``wait`` across several requests, one after the other in one session, each checked to
the last item. When its session is lost it does what an SDK client's application does
with MCP's 404: it starts a new session (the balancer sends it to a live server).

The program reports the server process running it (``tools.whoami()``) and a counter
kept in the session's stored values, so a result from the wrong process or a session
whose values were lost would be seen."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import attrs
import mcp.types as types
import trio
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

PROGRAM = """// @exec: {"yield_time_ms": 20000}
text(String(await tools.whoami()));
const count = (load("count") ?? 0) + 1;
for (let step = 0; step < STEPS; step++) {
  text(`NAME step ${step}`);
  yield_control();
  await new Promise((resolve) => setTimeout(resolve, PAUSE));
}
store("count", count);
text(`NAME done ${count}`);
"""

SHUTTING_DOWN = "this server is shutting down"
WAIT_MS = 100  # each wait returns after this long (or at the program's next yield)


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def session_gone(error: BaseException) -> bool:
    """MCP's answer for a session the server does not know (HTTP 404)."""
    return isinstance(error, MCPError) and str(error).startswith("Session not found")


@attrs.define
class Lost:
    """A session that ended under the agent."""

    pid: int | None  # the server it was on, if a program had said
    mid_program: bool  # it failed on a `wait`: a program had started, its result never came
    error: str
    then_404: bool  # the session's next request was answered 404
    at: float


@attrs.define
class SessionRecord:
    pid: int | None = None
    completed: int = 0  # programs whose final result came, all correct
    completed_at: list[float] = attrs.Factory(list)


@attrs.define
class Agent:
    name: str
    url: str
    steps: int = 3
    pause_ms: int = 50
    sessions: list[SessionRecord] = attrs.Factory(list)
    lost: list[Lost] = attrs.Factory(list)
    wrong: list[str] = attrs.Factory(list)  # results that were not exactly as expected
    requests: int = 0
    latencies: list[float] = attrs.Factory(list)
    spans: list[int] = attrs.Factory(list)  # requests each completed program took

    @property
    def completed(self) -> int:
        return sum(record.completed for record in self.sessions)

    @property
    def pid(self) -> int | None:
        return self.sessions[-1].pid if self.sessions else None

    async def run(self, done: Callable[[Agent], bool], progressed: Callable[[], None]) -> None:
        """Run programs until ``done(self)``; ``progressed()`` after each one."""
        while not done(self):
            async with _connect(self.url) as session:
                record = SessionRecord()
                self.sessions.append(record)
                while not done(self):
                    if not await self._program(session, record):
                        break  # the session is gone: start a new one
                    progressed()

    async def _call(
        self, session: ClientSession, name: str, args: dict[str, object]
    ) -> types.CallToolResult:
        started = trio.current_time()
        try:
            return await session.call_tool(name, args)
        finally:
            self.requests += 1
            self.latencies.append(trio.current_time() - started)

    async def _program(self, session: ClientSession, record: SessionRecord) -> bool:
        """One program to its end; ``False`` when the session was lost instead."""
        label = f"{self.name}-{self.completed + 1}"
        source = (
            PROGRAM.replace("STEPS", str(self.steps))
            .replace("PAUSE", str(self.pause_ms))
            .replace("NAME", label)
        )
        items: list[str] = []
        requests_before = self.requests
        try:
            result = await self._call(session, "exec", {"code": source})
        except MCPError as error:
            await self._lose(
                session, record, error, mid_program=False, retry=("exec", {"code": source})
            )
            return False
        first = texts(result)
        if result.is_error and first and first[0].startswith(SHUTTING_DOWN):
            # A draining server refused to start it: nothing was lost.
            self.lost.append(Lost(record.pid, False, first[0], False, trio.current_time()))
            return False
        while True:
            # All of a result's text is in its one text item: the header, then the
            # program's outputs, a line each.
            [text] = texts(result)
            header, _, output = text.partition("\nOutput:\n")
            items.extend(output.split("\n") if output else [])
            if not header.startswith("Script running with cell ID "):
                break
            cell = header.split("\n")[0].removeprefix("Script running with cell ID ")
            # Resumed in short steps, as a model checks on a long program.
            args: dict[str, object] = {"cell_id": cell, "yield_time_ms": WAIT_MS}
            try:
                result = await self._call(session, "wait", args)
            except MCPError as error:
                await self._lose(session, record, error, mid_program=True, retry=("wait", args))
                return False
        count = record.completed + 1
        pid = items[0] if items else "?"
        expected = [pid, *(f"{label} step {step}" for step in range(self.steps))]
        expected.append(f"{label} done {count}")
        if not header.startswith("Script completed") or items != expected:
            self.wrong.append(
                f"{label}: {header.splitlines()[0]!r} {items!r}, expected {expected!r}"
            )
        if record.pid is not None and str(record.pid) != pid:
            self.wrong.append(f"{label}: ran on {pid}, the session was on {record.pid}")
        record.pid = int(pid) if pid.isdigit() else None
        self.spans.append(self.requests - requests_before)
        record.completed += 1
        record.completed_at.append(trio.current_time())
        return True

    async def _lose(
        self,
        session: ClientSession,
        record: SessionRecord,
        error: MCPError,
        *,
        mid_program: bool,
        retry: tuple[str, dict[str, object]],
    ) -> None:
        """The session failed: once more on it, to see MCP's 404 for a lost session."""
        then_404 = session_gone(error)
        if not then_404:
            try:
                await self._call(session, *retry)
            except MCPError as again:
                then_404 = session_gone(again)
        self.lost.append(Lost(record.pid, mid_program, str(error), then_404, trio.current_time()))


@asynccontextmanager
async def _connect(url: str) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
