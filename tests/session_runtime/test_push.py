"""Push (``SessionRuntime(on_finished=...)``): the end of a cell that was handed back
to its caller still running reaches the host exactly once, by one path.

Ordering comes from delegate gates (a program waits on ``tools.gate()`` until the test
releases it), from ``yield_control()`` (the initial observation ends when the program
says so, not after a time), and from ``trio.testing.wait_all_tasks_blocked``: once
every task is blocked, whatever could have happened has.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import pytest
import trio
import trio.testing

from code_mode import (
    CellId,
    Completed,
    MissingCell,
    RuntimeConfig,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)

from ..helpers import SAFETY, GateDelegate, config, request, settled

#: Hands back at once (``yield_control``), then waits for the test's ``gate``.
HANDED_BACK = 'text("a"); yield_control(); await tools.gate({}); text("b");'


@attrs.define
class Pushes:
    """An ``on_finished`` that records each push, optionally held until released."""

    hold: bool = False
    received: list[tuple[CellId, Completed]] = attrs.Factory(list)
    order: list[str] | None = None
    started: trio.Event = attrs.Factory(trio.Event)
    release: trio.Event = attrs.Factory(trio.Event)
    done: trio.Event = attrs.Factory(trio.Event)
    fail: bool = False

    async def __call__(self, cell_id: CellId, completed: Completed) -> None:
        self.started.set()
        if self.hold:
            await self.release.wait()
        self.received.append((cell_id, completed))
        if self.order is not None:
            self.order.append(f"push {cell_id}")
        self.done.set()
        if self.fail:
            raise RuntimeError("the host's push handler broke")


class OrderedDelegate(GateDelegate):
    def __init__(self, order: list[str]) -> None:
        super().__init__(gates=["gate"])
        self.order = order

    async def cell_closed(self, cell_id: CellId) -> None:
        self.order.append(f"closed {cell_id}")
        await super().cell_closed(cell_id)


async def handed_back(
    runtime: SessionRuntime, delegate: GateDelegate, source: str = HANDED_BACK
) -> CellId:
    """Start ``source``, take its initial ``Yielded`` (the caller is told it runs) and
    wait until the program calls the delegate's gate."""
    started = await runtime.execute(request(source, ["gate"]), YieldAfter(SAFETY * 100))
    with trio.fail_after(SAFETY):
        assert await started.initial_event() == Yielded([Text("a")])
    await delegate.next_call()
    return started.cell_id


def pushing(delegate: GateDelegate, pushes: Pushes) -> SessionRuntime:
    """A process-mode runtime that pushes to ``pushes``."""
    return SessionRuntime(delegate, config("process"), on_finished=pushes)


@asynccontextmanager
async def handed_back_cell(
    pushes: Pushes, limits: RuntimeConfig | None = None, source: str = HANDED_BACK
) -> AsyncIterator[tuple[SessionRuntime, GateDelegate, CellId]]:
    """A runtime (process mode unless ``limits`` say otherwise) that pushes to
    ``pushes``, with ``source`` handed back (as ``handed_back``) and waiting for the
    delegate's ``gate``."""
    delegate = GateDelegate(gates=["gate"])
    limits = config("process") if limits is None else limits
    async with SessionRuntime(delegate, limits, on_finished=pushes) as runtime:
        yield runtime, delegate, await handed_back(runtime, delegate, source)


def assert_pushed_failure(pushes: Pushes, cell_id: CellId, limit: str) -> None:
    """One push, of ``cell_id``: a failure that names the ``RuntimeConfig`` field ``limit``."""
    [(pushed_id, completed)] = pushes.received
    assert pushed_id == cell_id
    assert completed.error_text is not None
    assert f"RuntimeConfig.{limit}" in completed.error_text


async def push_started(delegate: GateDelegate, pushes: Pushes) -> None:
    """Open the gate and wait until the (held) push has started."""
    delegate.release("gate")
    with trio.fail_after(SAFETY):
        await pushes.started.wait()


async def test_a_handed_back_cell_that_completes_is_pushed_once_then_gone(
    isolation: str,
) -> None:
    order: list[str] = []
    delegate = OrderedDelegate(order)
    pushes = Pushes(order=order)
    async with SessionRuntime(delegate, config(isolation), on_finished=pushes) as runtime:
        cell_id = await handed_back(runtime, delegate)
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()
        assert pushes.received == [(cell_id, Completed([Text("b")]))]
        # The push came before the close, and the cell is gone for observers.
        assert order == [f"push {cell_id}", f"closed {cell_id}"]
        with pytest.raises(MissingCell):
            await runtime.observe(cell_id, YieldAfter(0))
        with pytest.raises(MissingCell):
            await runtime.terminate(cell_id)
    assert len(pushes.received) == 1


async def test_the_observation_attached_when_the_program_ends_gets_it_not_the_push() -> None:
    pushes = Pushes()
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        pending = await runtime.begin_observe(cell_id, YieldAfter(SAFETY * 100))
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            assert await pending.event() == Completed([Text("b")])
            await delegate.closed_event.wait()
    assert pushes.received == []


async def test_a_wait_that_starts_while_the_push_is_delivered_finds_no_cell() -> None:
    pushes = Pushes(hold=True)
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        await push_started(delegate, pushes)
        # The push is being delivered: the result is on its way by that one path.
        with pytest.raises(MissingCell):
            await runtime.observe(cell_id, YieldAfter(SAFETY))
        with pytest.raises(MissingCell):
            await runtime.terminate(cell_id)
        assert not await runtime.preempt(cell_id)
        await trio.testing.wait_all_tasks_blocked()
        assert delegate.closed == []  # the close waits for the push
        pushes.release.set()
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()
    assert pushes.received == [(cell_id, Completed([Text("b")]))]


async def test_a_cancelled_wait_leaves_the_end_to_the_push() -> None:
    pushes = Pushes()
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        with trio.move_on_after(0) as scope:
            await runtime.observe(cell_id, YieldAfter(SAFETY * 100))
        assert scope.cancelled_caught
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            await pushes.done.wait()
    assert pushes.received == [(cell_id, Completed([Text("b")]))]


async def test_a_cell_never_handed_back_keeps_its_completion_for_the_next_wait() -> None:
    delegate = GateDelegate(gates=["gate"])
    pushes = Pushes()
    async with pushing(delegate, pushes) as runtime:
        started = await runtime.execute(
            request('await tools.gate({}); text("b");', ["gate"]), YieldAfter(SAFETY * 100)
        )
        with trio.move_on_after(0):  # the caller gave up before hearing anything
            await started.initial_event()
        await delegate.next_call()
        delegate.release("gate")
        await settled(runtime, started.cell_id)
        await trio.testing.wait_all_tasks_blocked()
        assert pushes.received == []  # nobody was told it runs: nothing to push
        event = await runtime.observe(started.cell_id, YieldAfter(0))
        assert event == Completed([Text("b")])


async def test_a_completion_behind_an_initial_yield_is_pushed_once_the_yield_is_taken() -> None:
    delegate = GateDelegate(gates=["first", "gate"])
    pushes = Pushes()
    source = "await tools.first({}); " + HANDED_BACK
    async with pushing(delegate, pushes) as runtime:
        started = await runtime.execute(
            request(source, ["first", "gate"]), YieldAfter(SAFETY * 100)
        )
        await delegate.next_call()
        with trio.move_on_after(0):  # never observed: the coming yield is kept aside
            await started.initial_event()
        delegate.release("first")
        await delegate.next_call()
        delegate.release("gate")
        await settled(runtime, started.cell_id)
        await trio.testing.wait_all_tasks_blocked()
        assert pushes.received == []
        # The next wait gets the initial yield (so its caller is told the program
        # runs), and the completion waiting behind it is pushed at that moment.
        assert await runtime.observe(started.cell_id, YieldAfter(0)) == Yielded([Text("a")])
        with trio.fail_after(SAFETY):
            await pushes.done.wait()
        assert pushes.received == [(started.cell_id, Completed([Text("b")]))]
        with pytest.raises(MissingCell):
            await runtime.observe(started.cell_id, YieldAfter(0))


async def test_terminate_gets_the_end_and_nothing_is_pushed() -> None:
    pushes = Pushes()
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        assert await runtime.terminate(cell_id) == Terminated([])
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()
    assert pushes.received == []


async def test_a_limit_broken_after_the_hand_back_is_pushed_as_a_failure() -> None:
    pushes = Pushes()
    limits = config("process", max_output_bytes=1000)
    source = 'text("a"); yield_control(); await tools.gate({}); text("x".repeat(2000));'
    async with handed_back_cell(pushes, limits, source) as (_runtime, delegate, cell_id):
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            await pushes.done.wait()
    assert_pushed_failure(pushes, cell_id, "max_output_bytes")


async def test_the_running_time_limit_is_pushed(mock_clock: trio.testing.MockClock) -> None:
    pushes = Pushes()
    # Threads: a worker process that hears nothing for a jumped-over heartbeat period
    # would be killed as hung, which is another failure than the one under test.
    limits = config("thread", max_cell_seconds=60.0)
    async with handed_back_cell(pushes, limits) as (_runtime, _delegate, cell_id):
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(61)
        with trio.fail_after(SAFETY):
            await pushes.done.wait()
    assert_pushed_failure(pushes, cell_id, "max_cell_seconds")


async def test_shutdown_ends_a_handed_back_cell_without_a_push() -> None:
    pushes = Pushes()
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        await runtime.shutdown()
        assert delegate.closed == [cell_id]
    assert pushes.received == []


async def test_shutdown_waits_for_a_push_in_flight_which_arrives_once() -> None:
    pushes = Pushes(hold=True)
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        await push_started(delegate, pushes)
        shut = trio.Event()

        async def shut_down() -> None:
            await runtime.shutdown()
            shut.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(shut_down)
            await trio.testing.wait_all_tasks_blocked()
            assert not shut.is_set()  # the result is not cut off half-way
            pushes.release.set()
        assert delegate.closed == [cell_id]
    assert pushes.received == [(cell_id, Completed([Text("b")]))]


async def test_leaving_the_block_by_an_exception_cancels_a_push_in_flight() -> None:
    pushes = Pushes(hold=True)
    with pytest.RaisesGroup(KeyError):
        async with handed_back_cell(pushes) as (_runtime, delegate, cell_id):
            await push_started(delegate, pushes)
            raise KeyError("the host fails")
    assert pushes.received == []
    assert delegate.closed == [cell_id]  # the close path still ran


async def test_a_push_that_raises_is_logged_and_the_session_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pushes = Pushes(fail=True)
    async with handed_back_cell(pushes) as (runtime, delegate, cell_id):
        with caplog.at_level(logging.WARNING, logger="code_mode"):
            delegate.release("gate")
            with trio.fail_after(SAFETY):
                await delegate.closed_event.wait()
        assert f"failed to push the result of code mode cell {cell_id}" in caplog.text
        assert "the host's push handler broke" in caplog.text
        started = await runtime.execute(request('text("next")'), YieldAfter(math.inf))
        assert await started.initial_event() == Completed([Text("next")])


async def test_without_on_finished_a_handed_back_completion_waits_for_the_next_wait() -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config("process")) as runtime:
        cell_id = await handed_back(runtime, delegate)
        delegate.release("gate")
        await settled(runtime, cell_id)
        await trio.testing.wait_all_tasks_blocked()
        assert delegate.closed == []
        assert await runtime.observe(cell_id, YieldAfter(0)) == Completed([Text("b")])
