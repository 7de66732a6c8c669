"""The tool calls of a cell run in one nursery and cancel scope held by a runner task
(``_cell/in_flight.py``): started with the first call, shared by the later ones, ended with
the cell, and every call still reaches the delegate (cancelled or not) and sends its
outcome. Driven directly, with a stand-in for the isolate."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from code_mode import CellId, RuntimeConfig
from code_mode._cell.in_flight import CellCallbacks
from code_mode._engine._bridge import ToolCallRequested
from code_mode._engine.isolate import Isolate

from ..helpers import SAFETY, GateDelegate, function_tool


class Results:
    """Stands in for the isolate: records the outcomes sent to it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send_tool_result(self, call_id: str, value_json: str) -> None:
        self.sent.append((call_id, value_json))

    def send_tool_error(self, call_id: str, message: str) -> None:
        self.sent.append((call_id, "error: " + message))


def callbacks_in(nursery: trio.Nursery, delegate: GateDelegate, results: Results) -> CellCallbacks:
    isolate: Isolate = results  # type: ignore[assignment]  # the two methods used
    return CellCallbacks(
        cell_id=CellId("cell-1"),
        call_id="call-1",
        nursery=nursery,
        delegate=delegate,
        config=RuntimeConfig(callback_grace=0.5),
        results_to=lambda: isolate,
        wake_cell=lambda: None,
    )


def call(number: int, tool: str) -> ToolCallRequested:
    return ToolCallRequested(f"tool-{number}", tool, {"n": number}, True)


async def test_calls_share_one_runner_that_ends_with_the_cell() -> None:
    delegate = GateDelegate(gates=["slow"], results={"slow": "late"})
    results = Results()
    with trio.fail_after(SAFETY):
        async with trio.open_nursery() as nursery:
            callbacks = callbacks_in(nursery, delegate, results)
            assert callbacks.start_tool_call(function_tool("echo"), call(1, "echo")) is None
            assert callbacks.start_tool_call(function_tool("slow"), call(2, "slow")) is None
            await trio.testing.wait_all_tasks_blocked()
            assert len(nursery.child_tasks) == 1  # the runner; the calls are its children
            assert results.sent == [("tool-1", '{"n": 1}')]  # echo returns its input
            assert callbacks.pending_tool_call_ids() == ["tool-2"]
            assert callbacks.start_tool_call(function_tool("echo"), call(3, "echo")) is None
            await trio.testing.wait_all_tasks_blocked()
            assert len(nursery.child_tasks) == 1
            assert results.sent[1:] == [("tool-3", '{"n": 3}')]
            delegate.release("slow")
            await trio.testing.wait_all_tasks_blocked()
            assert results.sent[2:] == [("tool-2", '"late"')]
            assert not callbacks.in_flight
            assert len(nursery.child_tasks) == 1  # idle, until the cell ends
            callbacks.close()
            await trio.testing.wait_all_tasks_blocked()
            assert len(nursery.child_tasks) == 0


@pytest.mark.parametrize("runner_ran", [False, True])
async def test_cancel_ends_the_calls_and_drops_their_outcomes(runner_ran: bool) -> None:
    """Also when the runner has not run yet: the delegate still sees each call and
    its cancellation, as it would have a moment later."""
    delegate = GateDelegate()
    results = Results()
    with trio.fail_after(SAFETY):
        async with trio.open_nursery() as nursery:
            callbacks = callbacks_in(nursery, delegate, results)
            callbacks.start_tool_call(function_tool("block"), call(1, "block"))
            callbacks.start_tool_call(function_tool("block"), call(2, "block"))
            if runner_ran:
                await trio.testing.wait_all_tasks_blocked()
            assert callbacks.pending_tool_call_ids() == ["tool-1", "tool-2"]
            await callbacks.cancel(notifications=False)
            assert sorted(delegate.cancelled) == ["tool-1", "tool-2"]
            assert not callbacks.in_flight and results.sent == []
            await trio.testing.wait_all_tasks_blocked()
            assert len(nursery.child_tasks) == 0
