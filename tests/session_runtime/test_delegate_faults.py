"""A misbehaving delegate (``SessionRuntimeDelegate``): tools that raise, hang, or ignore
cancellation, and failing ``notify`` / ``cell_closed``. Each is contained as specified:
the script sees what it should, the cell ends, the session carries on.
"""

from __future__ import annotations

import json
import logging
import math

import pytest
import trio
import trio.testing

from code_mode import (
    JSON,
    CellId,
    Completed,
    MissingCell,
    NestedToolCall,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)

from ..helpers import SAFETY, GateDelegate, config, request


async def run_cell(runtime: SessionRuntime, source: str, tools: list[str] | None = None) -> object:
    with trio.fail_after(SAFETY):
        started = await runtime.execute(request(source, tools or []), YieldAfter(10 * SAFETY))
        return await started.initial_event()


# -- a tool that raises ---------------------------------------------------------------------


async def test_a_tool_that_raises_rejects_with_its_message(isolation: str) -> None:
    """The rejection is the plain string, as the reference's ``resolve_tool_response``
    rejects (openai/codex codex-rs/code-mode-runtime/src/runtime/module_loader.rs,
    commit 4f39251a010a); it was an ``Error`` with that message here before."""
    delegate = GateDelegate(errors={"broken": ValueError("database is on fire")})
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = """
            try { await tools.broken({}); } catch (e) {
              text(typeof e); text(e); text(String(e.message));
            }
            await tools.broken({});
        """
        assert await run_cell(runtime, source, ["broken"]) == Completed(
            [
                Text("string"),
                Text("database is on fire"),
                Text("undefined"),
            ],
            error_text="database is on fire",
        )
        assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])


def odd_value(name: str) -> object:
    """Values a buggy tool might return that are not JSON data."""
    if name == "cycle":
        cycle: list[object] = []
        cycle.append(cycle)
        return cycle
    return {"a_set": {1, 2}, "nan": math.nan, "object": object()}[name]


def dumps_error(value: object) -> str:
    """Python's own words for why ``value`` is not JSON (they vary across versions)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        return str(error)
    raise AssertionError(f"{value!r} is JSON")


class OddResults(GateDelegate):
    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        return odd_value(call.tool_name.name)  # type: ignore[return-value]


@pytest.mark.parametrize("tool", ["a_set", "nan", "object", "cycle"])
async def test_a_tool_returning_non_json_rejects(tool: str, isolation: str) -> None:
    message = (
        f"tool `{tool}` returned a value that is not JSON data: {dumps_error(odd_value(tool))}"
    )
    async with SessionRuntime(OddResults(), config(isolation)) as runtime:
        source = f"try {{ await tools.{tool}({{}}); }} catch (e) {{ text(e); }}"
        assert await run_cell(runtime, source, [tool]) == Completed([Text(message)])
        assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])


# -- a tool that hangs until cancelled --------------------------------------------------------


async def test_terminate_cancels_a_hanging_tool(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(
            request('text("waiting"); await tools.block({});', ["block"]), YieldAfter(60)
        )
        await delegate.next_call()
        with trio.fail_after(SAFETY):
            assert await runtime.terminate(started.cell_id) == Terminated([Text("waiting")])
        assert delegate.cancelled == ["tool-1"]
        assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])


async def test_completion_cancels_a_hanging_tool_the_program_left_behind(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        event = await run_cell(runtime, 'tools.block({}); text("done");', ["block"])
        assert event == Completed([Text("done")])
        assert delegate.cancelled == ["tool-1"]


class CancelledIntoError(GateDelegate):
    """Turns its cancellation into an ordinary exception (a delegate bug)."""

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        self.started_send.send_nowait(call)
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled.append(call.runtime_tool_call_id)
            raise RuntimeError("cleanup failed") from None


async def test_a_tool_that_swallows_its_cancellation_does_not_break_the_session(
    isolation: str,
) -> None:
    delegate = CancelledIntoError()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(request("await tools.t({});", ["t"]), YieldAfter(60))
        await delegate.next_call()
        with trio.fail_after(SAFETY):
            assert await runtime.terminate(started.cell_id) == Terminated([])
        assert delegate.cancelled == ["tool-1"]
        assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])


# -- a tool that ignores cancellation for a while ----------------------------------------------


class Stubborn(GateDelegate):
    """``slow`` ignores cancellation (shielded) until the test releases ``finish``."""

    def __init__(self) -> None:
        super().__init__()
        self.finish = trio.Event()
        self.finished = trio.Event()
        self.saw_cancel = False

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        self.started_send.send_nowait(call)
        with trio.CancelScope(shield=True):
            await self.finish.wait()
        self.finished.set()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled:
            self.saw_cancel = True
            raise
        return "late result"


async def test_a_tool_ignoring_cancellation_is_abandoned_after_the_grace_period(
    isolation: str,
) -> None:
    delegate = Stubborn()
    grace = 0.2
    exited = trio.Event()

    async def session(task_status: trio.TaskStatus[SessionRuntime]) -> None:
        async with SessionRuntime(delegate, config(isolation, callback_grace=grace)) as runtime:
            task_status.started(runtime)
            await terminated.wait()
        exited.set()

    terminated = trio.Event()
    async with trio.open_nursery() as nursery:
        runtime: SessionRuntime = await nursery.start(session)
        started = await runtime.execute(
            request('text("before"); await tools.slow({});', ["slow"]), YieldAfter(60)
        )
        await delegate.next_call()

        # terminate() returns after the grace period although the tool still runs ...
        begun = trio.current_time()
        with trio.fail_after(SAFETY):
            assert await runtime.terminate(started.cell_id) == Terminated([Text("before")])
        assert grace <= trio.current_time() - begun < SAFETY
        assert not delegate.finished.is_set()
        # ... the cell closes and is gone; the session runs other cells meanwhile ...
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()
        assert delegate.closed == [started.cell_id]
        with pytest.raises(MissingCell):
            await runtime.observe(started.cell_id, YieldAfter(0))
        assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])

        # ... and leaving the session block waits for the abandoned tool to finish.
        terminated.set()
        await trio.testing.wait_all_tasks_blocked()
        assert not exited.is_set()
        delegate.finish.set()
        with trio.fail_after(SAFETY):
            await exited.wait()
    assert delegate.finished.is_set()
    # Its late result went nowhere (the cell is long gone) and nothing failed.
    assert delegate.closed == [started.cell_id, "2"]


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """``caplog``, set to capture ``code_mode``'s warnings."""
    caplog.set_level(logging.WARNING, logger="code_mode")
    return caplog


def code_mode_warnings(logged: pytest.LogCaptureFixture) -> list[str]:
    """What ``code_mode`` logged, in order, each record checked to be a warning."""
    assert all(record.levelno == logging.WARNING for record in logged.records)
    return [record.getMessage() for record in logged.records if record.name == "code_mode"]


# -- failing notify ---------------------------------------------------------------------------


class FailingNotify(GateDelegate):
    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        self.notifications.append((call_id, cell_id, text))
        raise ConnectionError(f"transport closed while sending {text!r}")


async def test_a_failing_notify_is_logged_and_the_script_carries_on(
    isolation: str, logged: pytest.LogCaptureFixture
) -> None:
    delegate = FailingNotify()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'notify("one"); text("between"); notify("two"); text("after");'
        assert await run_cell(runtime, source) == Completed([Text("between"), Text("after")])
        assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])
    # Notifications run as concurrent tasks: the delegate may see them in any order.
    assert sorted(text for _, _, text in delegate.notifications) == ["one", "two"]
    assert sorted(code_mode_warnings(logged)) == [
        "failed to deliver code mode notification: transport closed while sending 'one'",
        "failed to deliver code mode notification: transport closed while sending 'two'",
    ]


# -- failing cell_closed ------------------------------------------------------------------------


class FailingClose(GateDelegate):
    async def cell_closed(self, cell_id: CellId) -> None:
        self.closed.append(cell_id)
        self.closed_event.set()
        raise OSError(f"could not release cell {cell_id}")


async def test_a_failing_cell_closed_is_logged_and_the_cell_is_still_removed(
    isolation: str, logged: pytest.LogCaptureFixture
) -> None:
    delegate = FailingClose()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        first = await runtime.execute(request('text("one")'), YieldAfter(60))
        assert await first.initial_event() == Completed([Text("one")])
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()
        with pytest.raises(MissingCell):
            await runtime.observe(first.cell_id, YieldAfter(0))
        # A running cell is shut down; its failing close does not make shutdown raise,
        # and shutdown returning means the registry is empty: both cells were removed.
        second = await runtime.execute(request("await new Promise(() => {});"), YieldAfter(0))
        assert await second.initial_event() == Yielded([])
        with trio.fail_after(SAFETY):
            await runtime.shutdown()
    assert delegate.closed == ["1", "2"]
    assert code_mode_warnings(logged) == [
        "failed to close code mode delegate state for cell 1: could not release cell 1",
        "failed to close code mode delegate state for cell 2: could not release cell 2",
    ]
