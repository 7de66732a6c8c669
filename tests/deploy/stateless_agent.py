"""An MCP client as an agent uses code mode over the stateless revision: the SDK's
default ``mcp.Client(url)``, programs that yield and are resumed with ``wait`` (each
request may land on any server), a counter kept in the session's stored values, every
result checked to the last item.

The program reports the server process that started it (``tools.whoami()``) and notes
each step with a tool call (``tools.note``, which the servers log to one file, so that
a test counts how often each call ran). A program whose server stops is resumed by
another server; one that could not be ends ``Script failed`` saying so, and the agent
runs it again (its stored values are the session's, in the store: the counter carries
on)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import httpx2
import mcp.types as types
import trio
from mcp import Client, MCPError

from code_mode.model_tools.adapters import MCP_META_SESSION

from ..mcp_server.http_support import leaves
from .agent import WAIT_MS

PROGRAM = """// @exec: {"yield_time_ms": 20000}
text(String(await tools.whoami()));
const count = (load("count") ?? 0) + 1;
for (let step = 0; step < STEPS; step++) {
  text(await tools.note({label: `NAME step ${step}`}));
  yield_control();
  await new Promise((resolve) => setTimeout(resolve, PAUSE));
}
store("count", count);
text(`NAME done ${count}`);
"""

LOST = "stopped before the program ended"
SHUTTING_DOWN = "this server is shutting down"
CALL_RETRIES = 5  # a call whose server died under it: the balancer answers 502 once


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


@attrs.define
class StatelessAgent:
    name: str
    url: str
    steps: int = 3
    pause_ms: int = 100
    session: str | None = None
    count: int = 0  # the stored counter, as the last completed program reported it
    completed: int = 0
    pids: list[int] = attrs.Factory(list)  # the server of each completed program
    labels: list[str] = attrs.Factory(list)  # the label of each completed program
    lost: list[int] = attrs.Factory(list)  # the server of each program lost with it
    refused: int = 0  # execs a draining server refused (nothing started)
    retried: list[str] = attrs.Factory(list)  # calls whose answer never came
    wrong: list[str] = attrs.Factory(list)
    requests: int = 0
    latencies: list[float] = attrs.Factory(list)
    spans: list[int] = attrs.Factory(list)
    attempts: int = 0  # execs sent (each program's label names its attempt)
    doing: str = ""  # what the agent waits for now (a hang's report says it)
    # The counter when an exec's answer never came, or a program's end was lost on
    # the way: that program may run on unseen (resumed elsewhere) and, completing late,
    # write the counter it read then, over later programs' (the last writer wins).
    orphaned_at: list[int] = attrs.Factory(list)

    async def run(
        self, done: Callable[[StatelessAgent], bool], progressed: Callable[[], None]
    ) -> None:
        while not done(self):
            try:
                async with Client(self.url) as client:
                    if client.protocol_version != "2026-07-28":
                        self.wrong.append(f"{self.name}: protocol {client.protocol_version}")
                        return
                    while not done(self):
                        if await self._program(client):
                            progressed()
            except BaseException as error:
                # A server killed while answering cuts the response short, and the
                # SDK's client ends with it: connect again, as an agent would. The
                # program it was in may go on unseen (it runs again from the start).
                if not all(isinstance(leaf, httpx2.TransportError) for leaf in leaves(error)):
                    raise
                self.retried.append(f"reconnected: {error!r}"[:200])
                self.orphaned_at.append(self.count)

    async def _call(
        self, client: Client, name: str, args: dict[str, object]
    ) -> types.CallToolResult:
        for attempt in range(CALL_RETRIES):
            started = trio.current_time()
            try:
                return await client.call_tool(name, args)
            except MCPError as error:
                self.retried.append(f"{name}: {error}")
                if attempt == CALL_RETRIES - 1:
                    raise
                await trio.sleep(0.5)
            finally:
                self.requests += 1
                self.latencies.append(trio.current_time() - started)
        raise AssertionError("unreachable")

    async def _program(self, client: Client) -> bool:
        """One program to its end: ``True`` once it completed (checked)."""
        self.attempts += 1
        label = f"{self.name}-{self.completed + 1}.{self.attempts}"
        source = (
            PROGRAM.replace("STEPS", str(self.steps))
            .replace("PAUSE", str(self.pause_ms))
            .replace("NAME", label)
        )
        arguments: dict[str, object] = {"code": source}
        if self.session is not None:
            arguments["session"] = self.session
        requests_before = self.requests
        retried_before = len(self.retried)
        self.doing = f"exec {label}"
        result = await self._call(client, "exec", arguments)
        self.orphaned_at.extend([self.count] * (len(self.retried) - retried_before))
        first = texts(result)
        if result.is_error and first and first[0].startswith(SHUTTING_DOWN):
            self.refused += 1
            return False
        items: list[str] = []
        while True:
            # All of a result's text is in its one text item: the header (with its
            # `Session:` line, also in `_meta`), then the outputs, a line each.
            [text] = texts(result)
            header, _, output = text.partition("\nOutput:\n")
            session = (result.meta or {}).get(MCP_META_SESSION)
            if session is None or not header.endswith(f"\nSession: {session}"):
                self.wrong.append(f"{label}: no session line: {text[:300]!r}")
                return False
            if self.session is None:
                self.session = session
            elif session != self.session:
                self.wrong.append(f"{label}: session {session}, expected {self.session}")
            items.extend(output.split("\n") if output else [])
            if not header.startswith("Script running with cell ID "):
                break
            cell = header.split("\n")[0].removeprefix("Script running with cell ID ")
            args: dict[str, object] = {"cell_id": cell, "yield_time_ms": WAIT_MS}
            retried_before = len(self.retried)
            self.doing = f"wait {label} on {cell} ({len(items)} items so far)"
            result = await self._call(client, "wait", args)
            said = texts(result)
            if len(self.retried) > retried_before and f"exec cell {cell} not found" in said[-1]:
                # The server answering the wait died after handing out the end (the
                # handle is spent with it) and before its answer reached us: the program
                # completed, unseen. Run the next one.
                self.orphaned_at.append(self.count)
                return False
        pid = items[0] if items else "?"
        if header.startswith("Script failed") and any(LOST in item for item in items):
            self.lost.append(int(pid) if pid.isdigit() else 0)
            return False  # run again: the counter is the session's, in the store
        # The counter: one more than the last completed program's, or more when a
        # program before was lost after its values were saved and before its end, or
        # an exec whose answer never came ran its program unseen.
        done = items[-1] if items else ""
        expected = [pid, *(f"{label} step {step}" for step in range(self.steps))]
        extra = len(self.lost) + len(self.orphaned_at)
        counts = [
            base + 1 + more
            for base in {self.count, *(at + 1 for at in self.orphaned_at)}
            for more in range(extra + 1)
        ]
        if not header.startswith("Script completed") or not any(
            items == [*expected, f"{label} done {count}"] for count in counts
        ):
            self.wrong.append(f"{label}: {header.splitlines()[0]!r} {items!r}")
            return False
        self.count = int(done.rsplit(" ", 1)[-1])
        self.pids.append(int(pid))
        self.labels.append(label)
        self.spans.append(self.requests - requests_before)
        self.completed += 1
        return True
