"""``SessionRuntime.preempt`` (end the observation in progress now, the program keeps
running) and ``YieldAfter(idle_floor=...)`` (an observation that finds nothing new
holds on for output, the end, or the floor).

Time-dependent cases run on trio's ``MockClock``: time passes only when the test jumps
it, so "still holding" is a fact, not a guess about a loaded machine. They use thread
isolation: a worker process that hears nothing for a jumped-over heartbeat period would
be killed as hung.
"""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

from code_mode import (
    CellId,
    Completed,
    PendingFrontier,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)

from ..helpers import SAFETY, GateDelegate, config, request, yielded_cell

FOREVER = SAFETY * 1000  # a yield time no test reaches


@attrs.define
class Recorder:
    """Collects what an observation returns, from a task of its own."""

    events: list[object] = attrs.Factory(list)
    done: trio.Event = attrs.Factory(trio.Event)

    async def initial(self, started: object) -> None:
        self.events.append(await started.initial_event())  # type: ignore[attr-defined]
        self.done.set()

    async def observe(self, runtime: SessionRuntime, cell_id: CellId, mode: YieldAfter) -> None:
        self.events.append(await runtime.observe(cell_id, mode))
        self.done.set()

    async def start_observing(
        self, nursery: trio.Nursery, runtime: SessionRuntime, cell_id: CellId, mode: YieldAfter
    ) -> None:
        """Observe in a task of ``nursery``; returns once every task is blocked."""
        nursery.start_soon(self.observe, runtime, cell_id, mode)
        await trio.testing.wait_all_tasks_blocked()


async def test_preempt_ends_exec_while_a_tool_call_is_in_flight(isolation: str) -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(
            request('text("a"); await tools.gate({}); text("b");', ["gate"]),
            YieldAfter(FOREVER),
        )
        await delegate.next_call()  # "a" is in the buffer, the tool call in flight
        with trio.fail_after(SAFETY):
            assert await runtime.preempt(started.cell_id)
            assert await started.initial_event() == Yielded([Text("a")])
        # The program kept running: the tool call was not cancelled, and its result
        # still reaches the program.
        assert delegate.cancelled == []
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            event = await runtime.observe(started.cell_id, YieldAfter(FOREVER))
        assert event == Completed([Text("b")])


async def test_preempt_ends_a_wait(isolation: str) -> None:
    delegate = GateDelegate(gates=["gate"])
    source = 'await tools.gate({}); text("b");'
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await yielded_cell(runtime, request(source, ["gate"]), YieldAfter(0))
        await delegate.next_call()
        recorder = Recorder()
        async with trio.open_nursery() as nursery:
            await recorder.start_observing(nursery, runtime, started.cell_id, YieldAfter(FOREVER))
            assert await runtime.preempt(started.cell_id)
        assert recorder.events == [Yielded([])]
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            event = await runtime.observe(started.cell_id, YieldAfter(FOREVER))
        assert event == Completed([Text("b")])


async def test_preempt_ends_a_frontier_observation_of_a_busy_program(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        # A program that never reaches a frontier: only a preempt ends the observation.
        started = await runtime.execute(request("while (true) {}"), PendingFrontier())
        assert await runtime.preempt(started.cell_id)
        with trio.fail_after(SAFETY):
            assert await started.initial_event() == Yielded([])
        assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_preempt_with_nothing_observing_changes_nothing() -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config("process")) as runtime:
        assert not await runtime.preempt(CellId("404"))
        started = await runtime.execute(
            request('text("a"); yield_control(); text("b"); await tools.gate({});', ["gate"]),
            YieldAfter(FOREVER),
        )
        assert await started.initial_event() == Yielded([Text("a")])
        await delegate.next_call()
        assert not await runtime.preempt(started.cell_id)
        # "b" is still buffered for the next observation.
        assert await runtime.observe(started.cell_id, YieldAfter(0)) == Yielded([Text("b")])
        await runtime.terminate(started.cell_id)
        assert not await runtime.preempt(started.cell_id)


async def test_a_preempted_cell_is_pushed_when_it_ends() -> None:
    delegate = GateDelegate(gates=["gate"])
    pushed: list[tuple[CellId, Completed]] = []
    done = trio.Event()

    async def on_finished(cell_id: CellId, completed: Completed) -> None:
        pushed.append((cell_id, completed))
        done.set()

    async with SessionRuntime(delegate, config("process"), on_finished=on_finished) as runtime:
        started = await runtime.execute(
            request('await tools.gate({}); text("b");', ["gate"]), YieldAfter(FOREVER)
        )
        await delegate.next_call()
        assert await runtime.preempt(started.cell_id)
        assert await started.initial_event() == Yielded([])
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            await done.wait()
    assert pushed == [(started.cell_id, Completed([Text("b")]))]


# -- the idle floor ------------------------------------------------------------------


async def test_a_wait_with_nothing_new_holds_until_output(
    mock_clock: trio.testing.MockClock,
) -> None:
    delegate = GateDelegate(gates=["gate", "second"])
    source = 'await tools.gate({}); text("late"); text("with it"); await tools.second({});'
    async with SessionRuntime(delegate, config("thread")) as runtime:
        started = await yielded_cell(runtime, request(source, ["gate", "second"]), YieldAfter(0))
        await delegate.next_call()
        recorder = Recorder()
        async with trio.open_nursery() as nursery:
            await recorder.start_observing(
                nursery, runtime, started.cell_id, YieldAfter(1.0, idle_floor=30.0)
            )
            mock_clock.jump(5.0)  # past the yield time, short of the floor
            await trio.testing.wait_all_tasks_blocked()
            assert recorder.events == []  # nothing new: it holds
            delegate.release("gate")
        # Handed over as soon as there was output, with what came in the same breath.
        assert recorder.events == [Yielded([Text("late"), Text("with it")])]
        await runtime.terminate(started.cell_id)


async def test_a_holding_wait_returns_at_the_floor_or_at_the_end(
    mock_clock: trio.testing.MockClock,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config("thread")) as runtime:
        started = await yielded_cell(
            runtime, request('await tools.gate({}); text("done");', ["gate"]), YieldAfter(0)
        )
        await delegate.next_call()
        floor = Recorder()
        async with trio.open_nursery() as nursery:
            await floor.start_observing(
                nursery, runtime, started.cell_id, YieldAfter(1.0, idle_floor=30.0)
            )
            mock_clock.jump(29.0)
            await trio.testing.wait_all_tasks_blocked()
            assert floor.events == []
            mock_clock.jump(1.0)
        assert floor.events == [Yielded([])]

        end = Recorder()
        async with trio.open_nursery() as nursery:
            await end.start_observing(
                nursery, runtime, started.cell_id, YieldAfter(0, idle_floor=30.0)
            )
            assert end.events == []
            delegate.release("gate")
        assert end.events == [Completed([Text("done")])]


async def test_a_wait_that_finds_output_returns_at_its_yield_time(
    mock_clock: trio.testing.MockClock,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    source = 'text("ready"); yield_control(); text("more"); await tools.gate({});'
    async with SessionRuntime(delegate, config("thread")) as runtime:
        started = await runtime.execute(request(source, ["gate"]), YieldAfter(FOREVER))
        assert await started.initial_event() == Yielded([Text("ready")])
        await delegate.next_call()
        # Output waiting: the floor plays no part, even with no time to wait at all.
        event = await runtime.observe(started.cell_id, YieldAfter(0, idle_floor=30.0))
        assert event == Yielded([Text("more")])
        # A preempt ends a holding wait as well.
        recorder = Recorder()
        async with trio.open_nursery() as nursery:
            await recorder.start_observing(
                nursery, runtime, started.cell_id, YieldAfter(0, idle_floor=30.0)
            )
            assert await runtime.preempt(started.cell_id)
        assert recorder.events == [Yielded([])]
        await runtime.terminate(started.cell_id)


def test_the_idle_floor_is_checked() -> None:
    with pytest.raises(ValueError, match="idle_floor"):
        YieldAfter(1.0, idle_floor=-1.0)
    assert YieldAfter(1.0) == YieldAfter(1.0, idle_floor=None)
