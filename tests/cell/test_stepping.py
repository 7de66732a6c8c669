"""``StepToFrontier``: the reference's pause-until-resumed observation.

Ports of openai/codex ``codex-rs/code-mode-runtime/src/service_tests.rs``
(``execute_to_pending_*``, ``wait_to_pending_*``) and of ``runtime/mod.rs``
``pending_mode_freezes_runtime_commands_until_resume``, at commit 4f39251a010a (the mode
came with 589b820d6e15, "Add pending-aware code mode execution"). There,
``execute_to_pending`` / ``wait_to_pending`` observe with ``PendingFrontier`` and the cell
holds at the frontier they return; here that is ``StepToFrontier``.

Time is trio's ``MockClock`` running at real speed (so the hang guards work) and jumped
forward where a timer must come due; what the cell holds is read from its hold, which
only trio tasks touch, once every task is blocked.
"""

from __future__ import annotations

import trio
import trio.testing

from code_mode import (
    Completed,
    Pending,
    SessionRuntime,
    StartedCell,
    StepToFrontier,
    Terminated,
    Text,
    YieldAfter,
)
from code_mode._cell.cell import Cell

from ..helpers import SAFETY, GateDelegate, config, request


def cell_of(runtime: SessionRuntime, cell_id: str) -> Cell:
    cell = runtime._cell(cell_id)  # type: ignore[arg-type]
    assert cell is not None
    return cell


async def step_to_the_gate(
    runtime: SessionRuntime, delegate: GateDelegate, source: str
) -> StartedCell:
    """Start ``source`` stepping, see it stop at its first ``gate`` call (``Pending``
    naming ``tool-1``), wait until the delegate has that call, then open the gate."""
    started = await runtime.execute(request(source, ["gate"]), StepToFrontier())
    assert await started.initial_event() == Pending([], ["tool-1"])
    await delegate.next_call()
    delegate.release("gate")
    return started


async def test_execute_to_pending_returns_completed_for_synchronous_results(
    isolation: str,
) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request('text("done");'), StepToFrontier())
            assert await started.initial_event() == Completed([Text("done")])


async def test_execute_to_pending_returns_once_the_runtime_is_quiescent(isolation: str) -> None:
    source = 'text("before"); await new Promise(() => {});'
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source), StepToFrontier())
            assert await started.initial_event() == Pending([Text("before")], [])
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_execute_to_pending_identifies_tool_calls_in_paused_frontier(
    isolation: str,
) -> None:
    source = (
        "await Promise.all([\n"
        '  tools.block({ value: "first" }),\n'
        '  tools.block({ value: "second" }),\n'
        "]);"
    )
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source, ["block"]), StepToFrontier())
            assert await started.initial_event() == Pending([], ["tool-1", "tool-2"])
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_execute_to_pending_excludes_delayed_timeout_tool_calls_until_wait(
    isolation: str, mock_clock: trio.testing.MockClock
) -> None:
    """A timer that comes due while the cell is held fires only when the next
    observation resumes it; the next ``Pending`` lists only the call its callback made
    (upstream: ``tool-3``, although ``tool-1`` and ``tool-2`` never return)."""
    mock_clock.rate = 1.0
    source = (
        "setTimeout(() => {\n"
        '  tools.block({ value: "delayed" });\n'
        "}, 1000);\n"
        "await Promise.all([\n"
        '  tools.block({ value: "second" }),\n'
        '  tools.block({ value: "third" }),\n'
        "]);"
    )
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source, ["block"]), StepToFrontier())
            assert await started.initial_event() == Pending([], ["tool-1", "tool-2"])
        mock_clock.jump(2)  # outside the hang guard, whose deadline it would pass
        await trio.testing.wait_all_tasks_blocked()
        assert cell_of(runtime, started.cell_id)._hold._queue == [1]  # due, held
        with trio.fail_after(SAFETY):
            event = await runtime.observe(started.cell_id, StepToFrontier())
            assert event == Pending([], ["tool-3"])
            inputs = [(await delegate.next_call()).input for _ in range(3)]
            assert sorted(inputs[:2], key=str) == [{"value": "second"}, {"value": "third"}]
            assert inputs[2] == {"value": "delayed"}
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_wait_to_pending_returns_after_resumed_runtime_becomes_quiescent_again(
    isolation: str,
) -> None:
    """A result that arrives while the cell is held reaches the program only on the
    next step, which then runs to the next frontier."""
    source = 'await tools.gate({});\ntext("after");\nawait new Promise(() => {});'
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await step_to_the_gate(runtime, delegate, source)
            await trio.testing.wait_all_tasks_blocked()
            [(kind, call_id, _)] = cell_of(runtime, started.cell_id)._hold._queue  # type: ignore[misc]
            assert (kind, call_id) == ("result", "tool-1")

            event = await runtime.observe(started.cell_id, StepToFrontier())
            assert event == Pending([Text("after")], [])
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_wait_to_pending_returns_completed_after_resumed_runtime_finishes(
    isolation: str,
) -> None:
    source = 'await tools.gate({});\ntext("done");'
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await step_to_the_gate(runtime, delegate, source)
            await trio.testing.wait_all_tasks_blocked()  # the result is held now
            event = await runtime.observe(started.cell_id, StepToFrontier())
            assert event == Completed([Text("done")])


async def test_a_step_with_nothing_held_returns_the_same_frontier(isolation: str) -> None:
    """Upstream ``Resume`` re-checks the queue and, finding it empty, reports ``Pending``
    again: a step moves the program only as far as what arrived lets it."""
    source = 'text("a"); await tools.block({});'
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source, ["block"]), StepToFrontier())
            assert await started.initial_event() == Pending([Text("a")], ["tool-1"])
            assert await runtime.observe(started.cell_id, StepToFrontier()) == Pending([], [])
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_pending_mode_freezes_runtime_commands_until_resume(
    isolation: str, mock_clock: trio.testing.MockClock
) -> None:
    """Upstream ``pending_mode_freezes_runtime_commands_until_resume`` (runtime/mod.rs):
    the timer's firing waits for the resume, then the program prints and pauses again.
    (A 5 s timer, not upstream's 60 s: the clock may not jump past the worker
    processes' heartbeat timeout, 10 s.)"""
    mock_clock.rate = 1.0
    source = (
        "await new Promise((resolve) => setTimeout(resolve, 5_000));\n"
        'text("after");\n'
        "await new Promise(() => {});"
    )
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source), StepToFrontier())
            assert await started.initial_event() == Pending([], [])
        mock_clock.jump(6)  # outside the hang guard, whose deadline it would pass
        await trio.testing.wait_all_tasks_blocked()
        cell = cell_of(runtime, started.cell_id)
        assert cell._hold._queue == [1] and cell._output.items == []
        with trio.fail_after(SAFETY):
            assert await runtime.observe(started.cell_id, StepToFrontier()) == Pending(
                [Text("after")], []
            )
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_a_yield_observation_lets_a_held_cell_run_on(isolation: str) -> None:
    """After a step, a ``YieldAfter`` observation resumes the program for good (the
    reference's ``Continue``)."""
    source = 'await tools.gate({});\nawait tools.gate({});\ntext("done");'
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        with trio.fail_after(SAFETY):
            started = await step_to_the_gate(runtime, delegate, source)
            event = await runtime.observe(started.cell_id, YieldAfter(10 * SAFETY))
            assert event == Completed([Text("done")])
