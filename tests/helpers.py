"""Delegates and helpers shared by the runtime tests."""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Sequence

import trio
import trio.testing

from code_mode import (
    JSON,
    CellId,
    Engine,
    EngineConfig,
    ExecuteRequest,
    NestedToolCall,
    ObserveMode,
    PendingFrontier,
    RuntimeConfig,
    SessionRuntime,
    StartedCell,
    ToolDefinition,
    ToolKind,
    ToolName,
    Yielded,
)
from code_mode._cell.cell import Phase

SAFETY = 10.0  # seconds; a hang guard, never the thing under test


def function_tool(name: str, namespace: str | None = None) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        tool_name=ToolName(name, namespace),
        description=f"the {name} tool",
        kind=ToolKind.FUNCTION,
    )


def request(source: str, tools: Sequence[str] = ()) -> ExecuteRequest:
    return ExecuteRequest(
        tool_call_id="call-1",
        enabled_tools=[function_tool(name) for name in tools],
        source=source,
    )


class GateDelegate:
    """Tools that wait for the test.

    Every call is announced on ``started`` (as the ``NestedToolCall``). A tool whose name
    is in ``gates`` waits until the test releases it with :meth:`release` and then
    returns ``results.get(name)`` (or raises ``errors[name]``); other tools answer at
    once. A tool named ``block`` never returns (until cancelled; cancellations are
    recorded in ``cancelled``). Notifications and closes are recorded too.
    """

    def __init__(
        self,
        gates: Sequence[str] = (),
        results: dict[str, JSON] | None = None,
        errors: dict[str, Exception] | None = None,
    ) -> None:
        self.gates = {name: trio.Event() for name in gates}
        self.results = results or {}
        self.errors = errors or {}
        self.started_send, self.started = trio.open_memory_channel[NestedToolCall](math.inf)
        self.notifications: list[tuple[str, CellId, str]] = []
        self.notified = trio.Event()
        self.cancelled: list[str] = []
        self.closed: list[CellId] = []
        self.closed_event = trio.Event()

    def release(self, name: str) -> None:
        self.gates[name].set()

    async def next_call(self) -> NestedToolCall:
        with trio.fail_after(SAFETY):
            return await self.started.receive()

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        name = call.tool_name.name
        self.started_send.send_nowait(call)
        try:
            if name == "block":
                await trio.sleep_forever()
            if name in self.gates:
                await self.gates[name].wait()
        except trio.Cancelled:
            self.cancelled.append(call.runtime_tool_call_id)
            raise
        if name in self.errors:
            raise self.errors[name]
        return self.results.get(name, call.input)

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        self.notifications.append((call_id, cell_id, text))
        self.notified.set()

    async def cell_closed(self, cell_id: CellId) -> None:
        self.closed.append(cell_id)
        self.closed_event.set()


def engine(isolation: str, **settings: object) -> Engine:
    """An ``Engine`` of its own for a test that checks what is left once it closes."""
    return Engine(EngineConfig(isolation=isolation, **settings))  # type: ignore[arg-type]


#: Replay off: for tests of what a worker's death does to the cells it ends (which
#: cells, what they are told), not of the replay that otherwise saves them.
NO_REPLAY = RuntimeConfig(max_journal_chars=0)


def config(isolation: str, **limits: object) -> RuntimeConfig:
    """A ``RuntimeConfig`` for ``isolation`` mode with some limits overridden."""
    return RuntimeConfig(isolation=isolation, **limits)  # type: ignore[arg-type]


def pcm16_wav(sample_rate: int, frames: int) -> bytes:
    """Upstream's ``pcm16_wav``: a mono 16-bit PCM WAV of ``frames`` silent frames."""
    data = frames * 2
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
        + b"data"
        + struct.pack("<I", data)
        + bytes(data)
    )


def child_pids() -> set[str]:
    """Child processes of this process (any thread's children), from ``/proc``."""
    pids: set[str] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as children:
                pids.update(children.read().split())
        except OSError:
            continue
    return pids


async def settled(runtime: SessionRuntime, cell_id: CellId) -> None:
    """Wait (at most ``SAFETY``) until the cell's completion is settled: buffered,
    delivered or pushed (its phase is ``COMPLETED``)."""
    cell = runtime._cell(cell_id)
    assert cell is not None
    with trio.fail_after(SAFETY):
        await cell.wait_for_phase(Phase.COMPLETED)


async def yielded_cell(
    runtime: SessionRuntime, request: ExecuteRequest, mode: ObserveMode
) -> StartedCell:
    """Start a cell and check its initial observation is an empty ``Yielded`` (the
    program runs on); returns the started cell."""
    started = await runtime.execute(request, mode)
    assert await started.initial_event() == Yielded([])
    return started


#: A bystander's program: shows ``a1``, waits at the gate ``hold``, then shows ``a2``.
HOLDING = 'text("a1"); await tools.hold(); text("a2")'


async def start_holding(runtime: SessionRuntime) -> StartedCell:
    """Start ``HOLDING`` in ``runtime``, first observed until it calls ``hold``
    (``PendingFrontier``); the delegate's gate ``hold`` lets it finish."""
    return await runtime.execute(request(HOLDING, ["hold"]), PendingFrontier())


class Task:
    """A task started in a nursery whose result the test can check later."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: object = None
        self.error: BaseException | None = None

    @classmethod
    def spawn(cls, nursery: trio.Nursery, function: object, *args: object) -> Task:
        task = cls()

        async def run() -> None:
            try:
                task.result = await function(*args)  # type: ignore[operator]
            except Exception as error:
                task.error = error
            finally:
                task.done.set()

        nursery.start_soon(run)
        return task

    async def assert_still_running(self) -> None:
        """Once every task is blocked, the task has not finished."""
        await trio.testing.wait_all_tasks_blocked()
        assert not self.done.is_set()

    async def wait(self) -> object:
        with trio.fail_after(SAFETY):
            await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result
