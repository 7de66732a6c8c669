"""Helpers shared by the ``test_js_*.py`` files: run a program through the public API.

Each test runs once per isolation mode and builds its own session
(``async with session(isolation) as runtime``), runs a program with :func:`run_in`
(or :func:`run` for a one-cell session) and compares the cell's
event with an exact ``Completed(...)``. ``trio.fail_after(SAFETY)`` is only a hang
guard; ordering is always forced with trio events, never with sleeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import trio

from code_mode import (
    JSON,
    CellEvent,
    CellId,
    Completed,
    ExecuteRequest,
    NestedToolCall,
    ObserveMode,
    RuntimeConfig,
    SessionRuntime,
    Text,
    ToolDefinition,
    ToolKind,
    ToolName,
    YieldAfter,
)

SAFETY = 10.0  # seconds; a hang guard, never the thing under test
CALL_ID = "call-1"

ToolHandler = Callable[[NestedToolCall], Awaitable[JSON]]


def function_tool(
    name: str, *, namespace: str | None = None, description: str = "a tool"
) -> ToolDefinition:
    tool_name = ToolName(name) if namespace is None else ToolName(name, namespace)
    return ToolDefinition(
        name=name if namespace is None else f"{namespace}__{name}",
        tool_name=tool_name,
        description=description,
        kind=ToolKind.FUNCTION,
    )


def freeform_tool(name: str, *, description: str = "a freeform tool") -> ToolDefinition:
    return ToolDefinition(
        name=name, tool_name=ToolName(name), description=description, kind=ToolKind.FREEFORM
    )


async def echo(call: NestedToolCall) -> JSON:
    return call.input


class Delegate:
    """Records every callback. Tools answer through ``handler`` (default: echo the
    input back); ``notify`` and ``cell_closed`` return at once."""

    def __init__(self, handler: ToolHandler = echo) -> None:
        self.handler = handler
        self.calls: list[NestedToolCall] = []
        self.notifications: list[tuple[str, CellId, str]] = []
        self.notified = trio.Event()
        self.cancelled_calls: list[str] = []
        self.closed: list[CellId] = []

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        self.calls.append(call)
        try:
            return await self.handler(call)
        except trio.Cancelled:
            self.cancelled_calls.append(call.runtime_tool_call_id)
            raise

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        self.notifications.append((call_id, cell_id, text))
        self.notified.set()

    async def cell_closed(self, cell_id: CellId) -> None:
        self.closed.append(cell_id)

    def inputs(self) -> list[JSON | None]:
        return [call.input for call in self.calls]


def request(source: str, tools: Sequence[ToolDefinition] = ()) -> ExecuteRequest:
    return ExecuteRequest(tool_call_id=CALL_ID, enabled_tools=list(tools), source=source)


async def run_in(
    runtime: SessionRuntime,
    source: str,
    tools: Sequence[ToolDefinition] = (),
    mode: ObserveMode | None = None,
) -> CellEvent:
    """Run ``source`` as a new cell of ``runtime`` and return its initial event (by
    default observed with a yield time far beyond the hang guard, so the event is the
    cell's completion unless the program calls ``yield_control()``)."""
    with trio.fail_after(SAFETY):
        started = await runtime.execute(
            request(source, tools), mode if mode is not None else YieldAfter(10 * SAFETY)
        )
        return await started.initial_event()


def session(isolation: str, delegate: Delegate | None = None) -> SessionRuntime:
    """A session in ``isolation`` mode (the ``isolation`` fixture of ``conftest.py``
    runs each test once per mode); use as ``async with session(...) as runtime``."""
    return SessionRuntime(
        delegate if delegate is not None else Delegate(),
        RuntimeConfig(isolation="thread" if isolation == "thread" else "process"),
    )


async def run(
    isolation: str,
    source: str,
    tools: Sequence[ToolDefinition] = (),
    delegate: Delegate | None = None,
) -> CellEvent:
    """Run ``source`` as the only cell of a fresh session in ``isolation`` mode."""
    async with session(isolation, delegate) as runtime:
        return await run_in(runtime, source, tools)


def texts(*values: str, error_text: str | None = None) -> Completed:
    """``Completed`` with one ``Text`` item per value."""
    return Completed(content_items=[Text(value) for value in values], error_text=error_text)
