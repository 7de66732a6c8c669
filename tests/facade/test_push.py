"""`CodeModeSession` without polling: ``on_finished`` (push), what the model is told,
``wait_idle_floor_ms``, and ``preempt``."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from code_mode import CellFinished, CodeModeSession, RuntimeConfig, Text
from code_mode.model_tools.adapters import wait_parameters
from code_mode.model_tools.descriptions import exec_description, wait_description
from code_mode.model_tools.formatting import PUSH_RUNNING_NOTE

from .test_facade import SAFETY, Gate, body, gated, status

RUNNING = '// @exec: {"yield_time_ms": 60000}\ntext("started"); yield_control();\n'
THREADS = RuntimeConfig(isolation="thread")  # for MockClock: no worker heartbeats


class Pushes:
    """An ``on_finished`` that keeps what it is given."""

    def __init__(self, *, hold: bool = False) -> None:
        self.received: list[CellFinished] = []
        self.arrived = trio.Event()
        self.hold = hold
        self.release = trio.Event()

    async def __call__(self, finished: CellFinished) -> None:
        self.arrived.set()
        if self.hold:
            await self.release.wait()
        self.received.append(finished)


async def test_a_program_that_ends_after_running_is_pushed_once() -> None:
    gate = Gate()
    received: list[CellFinished] = []
    arrived = trio.Event()

    def on_finished(finished: CellFinished) -> None:  # a plain function works too
        received.append(finished)
        arrived.set()

    with trio.fail_after(SAFETY):
        async with CodeModeSession([gate.tool], on_finished=on_finished) as cm:
            started = await cm.exec(RUNNING + 'await tools.gate(); text("done");')
            assert status(started) == "Script running with cell ID 1"
            # The model is told it need not poll: the note comes last, after the output.
            assert body(started) == [Text("started"), Text(PUSH_RUNNING_NOTE)]
            gate.opened.set()
            await arrived.wait()
            [finished] = received
            assert (finished.cell_id, finished.call_id) == ("1", "exec-1")
            assert status(finished.items) == "Script completed"
            assert body(finished.items) == [Text("done")]
            assert not finished.is_error
            assert finished.message_items[1:] == finished.items
            assert isinstance(finished.message_items[0], Text)
            assert "cell 1" in finished.message_items[0].text
            # Returned once: a wait afterwards finds the reference's "not found".
            missing = await cm.wait("1")
            assert status(missing) == "Script failed"
            assert "exec cell 1 not found" in missing[-1].text  # type: ignore[union-attr]
    assert len(received) == 1


async def test_a_pushed_failure_keeps_the_budget_of_its_exec() -> None:
    pushes = Pushes()
    source = (
        '// @exec: {"yield_time_ms": 60000, "max_output_tokens": 20}\n'
        'yield_control(); await tools.gate(); text("x".repeat(1000)); throw new Error("late");'
    )
    async with gated(on_finished=pushes) as (gate, cm):
        assert status(await cm.exec(source, call_id="call_7")) == ("Script running with cell ID 1")
        gate.opened.set()
        await pushes.arrived.wait()
    [finished] = pushes.received
    assert finished.call_id == "call_7"
    assert finished.is_error
    assert status(finished.items) == "Script failed"
    [cut] = body(finished.items)
    assert isinstance(cut, Text)
    # Cut to the exec's 20 tokens (a wait's default budget would keep all of it).
    assert "tokens truncated" in cut.text
    assert len(cut.text) < 200


async def test_the_observing_call_gets_the_end_and_nothing_is_pushed() -> None:
    pushes = Pushes()
    async with gated(on_finished=pushes) as (gate, cm):
        await cm.exec(RUNNING + 'await tools.gate(); text("done");')
        async with trio.open_nursery() as nursery:
            results = []

            async def wait() -> None:
                results.append(await cm.wait("1", yield_time_ms=60_000))

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            gate.opened.set()
        assert status(results[0]) == "Script completed"
        # A final result carries no note.
        assert body(results[0]) == [Text("done")]
        ended = await cm.exec('text("quick")')
        assert body(ended) == [Text("quick")]
    assert pushes.received == []


async def test_a_wait_while_the_push_is_delivered_finds_no_cell() -> None:
    pushes = Pushes(hold=True)
    async with gated(on_finished=pushes) as (gate, cm):
        await cm.exec(RUNNING + 'await tools.gate(); text("done");')
        gate.opened.set()
        await pushes.arrived.wait()
        assert "exec cell 1 not found" in (await cm.wait("1"))[-1].text  # type: ignore[union-attr]
        terminated = await cm.wait("1", terminate=True)
        assert "exec cell 1 not found" in terminated[-1].text  # type: ignore[union-attr]
        pushes.release.set()
    assert len(pushes.received) == 1


async def test_terminating_a_running_program_is_not_pushed() -> None:
    pushes = Pushes()
    async with gated(on_finished=pushes) as (_gate, cm):
        await cm.exec(RUNNING + "await tools.gate();")
        assert status(await cm.wait("1", terminate=True)) == "Script terminated"
        await cm.exec(RUNNING + "await new Promise(() => {});")  # ended by the exit
    assert pushes.received == []


async def test_a_push_handler_that_raises_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    gate = Gate()
    called = trio.Event()

    def on_finished(finished: CellFinished) -> None:
        called.set()
        raise RuntimeError("host bug")

    with trio.fail_after(SAFETY), caplog.at_level(logging.WARNING, logger="code_mode"):
        async with CodeModeSession([gate.tool], on_finished=on_finished) as cm:
            await cm.exec(RUNNING + "await tools.gate();")
            gate.opened.set()
            await called.wait()
            assert status(await cm.exec('text("on")')) == "Script completed"
    assert "host bug" in caplog.text


def test_the_model_is_told_only_when_results_are_pushed() -> None:
    off = CodeModeSession()
    on = CodeModeSession(on_finished=lambda finished: None)
    assert off.wait_tool.description == wait_description()
    assert off.exec_tool.description == exec_description([])
    promise = "you will be given its result when it finishes"
    assert promise not in off.exec_tool.description
    assert promise in on.exec_tool.description
    assert "You do not need `wait`" in on.wait_tool.description
    assert "You do not need `wait`" not in off.wait_tool.description
    for tools in (on.openai_tools(), on.anthropic_tools(), on.mcp_tools()):
        assert promise in tools[0]["description"]
        assert "You do not need `wait`" in tools[1]["description"]
    for tools in (off.openai_tools(), off.anthropic_tools(), off.mcp_tools()):
        assert promise not in tools[0]["description"]
        assert tools[1]["description"] == wait_description()
    assert on.wait_tool.input_schema == wait_parameters()


async def test_without_push_running_results_have_no_note() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            started = await cm.exec(RUNNING + "await new Promise(() => {});")
    assert body(started) == [Text("started")]


# -- the idle floor -------------------------------------------------------------------


async def start_waiting(nursery: trio.Nursery, cm: CodeModeSession, results: list[object]) -> None:
    """Start ``wait("1", yield_time_ms=1000)`` in ``nursery`` (its result goes to
    ``results``) and let every task block."""

    async def wait() -> None:
        results.append(await cm.wait("1", yield_time_ms=1000))

    nursery.start_soon(wait)
    await trio.testing.wait_all_tasks_blocked()


async def test_a_wait_with_nothing_new_holds_until_output(
    mock_clock: trio.testing.MockClock,
) -> None:
    gate = Gate()
    results: list[object] = []
    source = RUNNING + 'await tools.gate(); text("late"); await new Promise(() => {});'
    async with CodeModeSession([gate.tool], config=THREADS, wait_idle_floor_ms=30_000) as cm:
        assert "for up to 30 seconds in all" in cm.wait_tool.description
        assert status(await cm.exec(source)) == "Script running with cell ID 1"
        await gate.called.wait()
        async with trio.open_nursery() as nursery:
            await start_waiting(nursery, cm, results)
            mock_clock.jump(10.0)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # nothing new yet: the wait holds
            gate.opened.set()
        [late] = results
        assert status(late) == "Script running with cell ID 1"  # type: ignore[arg-type]
        assert body(late) == [Text("late")]  # type: ignore[arg-type]
        assert "Wall time 10.0 seconds" in late[0].text  # type: ignore[index]

        # Nothing at all: back at the floor, not at the yield time.
        async with trio.open_nursery() as nursery:
            results.clear()
            await start_waiting(nursery, cm, results)
            mock_clock.jump(29.0)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []
            mock_clock.jump(1.0)
        assert body(results[0]) == []  # type: ignore[arg-type]


async def test_the_idle_floor_is_capped_by_max_yield_time(
    mock_clock: trio.testing.MockClock,
) -> None:
    results: list[object] = []
    async with CodeModeSession(
        config=THREADS, wait_idle_floor_ms=30_000, max_yield_time_ms=5_000
    ) as cm:
        await cm.exec(RUNNING + "await new Promise(() => {});")
        async with trio.open_nursery() as nursery:
            await start_waiting(nursery, cm, results)
            mock_clock.jump(5.0)
        assert "Wall time 5.0 seconds" in results[0][0].text  # type: ignore[index]


def test_the_idle_floor_must_be_a_number_of_milliseconds() -> None:
    with pytest.raises(ValueError, match="wait_idle_floor_ms"):
        CodeModeSession(wait_idle_floor_ms=-1)


# -- preempt --------------------------------------------------------------------------


async def test_preempt_ends_exec_with_a_tool_call_in_flight_and_the_end_is_pushed() -> None:
    pushes = Pushes()
    results: list[object] = []
    source = '// @exec: {"yield_time_ms": 600000}\ntext("so far"); await tools.gate(); text("end");'
    async with gated(on_finished=pushes) as (gate, cm):
        assert not await cm.preempt("1")  # nothing observes it (nothing at all)
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                results.append(await cm.exec(source))

            nursery.start_soon(run)
            await gate.called.wait()
            assert await cm.preempt("1")
        [preempted] = results
        assert status(preempted) == "Script running with cell ID 1"  # type: ignore[arg-type]
        assert body(preempted) == [Text("so far"), Text(PUSH_RUNNING_NOTE)]  # type: ignore[arg-type]
        assert not await cm.preempt("1")  # the program runs, unobserved
        gate.opened.set()  # the tool call was never cancelled
        await pushes.arrived.wait()
    [finished] = pushes.received
    assert body(finished.items) == [Text("end")]


async def test_preempt_ends_a_wait_and_a_later_wait_gets_the_end() -> None:
    results: list[object] = []
    async with gated() as (gate, cm):
        await cm.exec(RUNNING + 'await tools.gate(); text("end");')
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                results.append(await cm.wait("1", yield_time_ms=600_000))

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            assert await cm.preempt("1")
        assert status(results[0]) == "Script running with cell ID 1"  # type: ignore[arg-type]
        gate.opened.set()
        final = await cm.wait("1", yield_time_ms=600_000)
        assert status(final) == "Script completed"
        assert body(final) == [Text("end")]


async def test_a_wait_between_the_runtime_push_and_the_callback_loses_nothing() -> None:
    """The widest window: the runtime has chosen the push (the cell is gone), the
    façade has not formatted it yet, and a wait comes in."""
    gate = Gate()
    pushes = Pushes()
    cm = CodeModeSession([gate.tool], on_finished=pushes)
    deliver = cm._pushed
    chosen = trio.Event()
    go_on = trio.Event()

    async def held(cell_id: Any, completed: Any) -> None:
        chosen.set()
        await go_on.wait()
        await deliver(cell_id, completed)

    cm.runtime._on_finished = held  # the runtime's push, before the façade's formatting
    with trio.fail_after(SAFETY):
        async with cm:
            await cm.exec(RUNNING + 'await tools.gate(); text("done");')
            gate.opened.set()
            await chosen.wait()
            missing = await cm.wait("1")
            assert "exec cell 1 not found" in missing[-1].text  # type: ignore[union-attr]
            go_on.set()
            await pushes.arrived.wait()
    [finished] = pushes.received
    assert (finished.cell_id, finished.call_id) == ("1", "exec-1")
    assert body(finished.items) == [Text("done")]
