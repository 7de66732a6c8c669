"""Trio ports of the reference implementation's ``session_runtime`` tests (Rust), one each.

Same names, same scenarios, same assertions. Where the Rust tests poll a future once or
wait 100 ms to show that something is *still pending*, these wait until every task is
blocked (``trio.testing.wait_all_tasks_blocked``) after the precondition the scenario
builds, which is deterministic: if the operation could finish, it would have.
``trio.fail_after`` bounds are generous safety nets against hangs, not timing claims.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import pytest
import trio
import trio.testing

from code_mode import (
    JSON,
    CellId,
    Completed,
    ExecuteRequest,
    MissingCell,
    NestedToolCall,
    PendingFrontier,
    SessionRuntime,
    Text,
    YieldAfter,
    Yielded,
)

from ..helpers import SAFETY, Task, config


class FirstCloseOutcome(enum.Enum):
    SUCCEEDS = "succeeds"
    FAILS = "fails"


class BlockingCloseDelegate:
    """Tools return null; ``cell_closed`` reports the id, then waits for a permit and
    may fail the first time."""

    def __init__(self, first_close_outcome: FirstCloseOutcome) -> None:
        self.close_started_send, self.close_started = trio.open_memory_channel[CellId](100)
        self.close_release = trio.Semaphore(0)
        self.fail_first_close = first_close_outcome is FirstCloseOutcome.FAILS

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        return None

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        return None

    async def cell_closed(self, cell_id: CellId) -> None:
        self.close_started_send.send_nowait(cell_id)
        await self.close_release.acquire()
        if self.fail_first_close:
            self.fail_first_close = False
            raise RuntimeError("test close failure")


@attrs.frozen
class NotificationEvent:
    kind: str
    cell_id: CellId | None = None


STARTED = NotificationEvent("started")
CANCELLED = NotificationEvent("cancelled")


class BlockingNotificationDelegate:
    """``notify`` records Started, waits to be cancelled, records Cancelled;
    ``cell_closed`` records Closed(id)."""

    def __init__(self) -> None:
        self.events_send, self.events = trio.open_memory_channel[NotificationEvent](100)

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        return None

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        self.events_send.send_nowait(STARTED)
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.events_send.send_nowait(CANCELLED)
            raise

    async def cell_closed(self, cell_id: CellId) -> None:
        self.events_send.send_nowait(NotificationEvent("closed", cell_id))


def execute_request(source: str) -> ExecuteRequest:
    return ExecuteRequest(tool_call_id="call-1", enabled_tools=[], source=source)


class SessionOwner:
    """A task that opens a session, starts one cell of ``source`` (checking its
    initial event when ``initial`` is given), sets ``ready``, and leaves the session
    block when ``drop`` is set (then sets ``dropped``)."""

    def __init__(
        self,
        delegate: BlockingCloseDelegate | BlockingNotificationDelegate,
        isolation: str,
        source: str,
        mode: YieldAfter,
        initial: Yielded | None = None,
    ) -> None:
        self.delegate, self.isolation = delegate, isolation
        self.source, self.mode, self.initial = source, mode, initial
        self.ready, self.drop, self.dropped = trio.Event(), trio.Event(), trio.Event()
        self.runtime: SessionRuntime | None = None
        self.cell_id: CellId | None = None

    async def run(self) -> None:
        async with SessionRuntime(self.delegate, config(self.isolation)) as runtime:
            self.runtime = runtime
            started = await runtime.execute(execute_request(self.source), self.mode)
            self.cell_id = started.cell_id
            if self.initial is not None:
                assert await started.initial_event() == self.initial
            self.ready.set()
            await self.drop.wait()
        self.dropped.set()

    async def drop_while_the_registry_is_locked(self) -> SessionRuntime:
        """Leave the session block while the test holds the registry lock; returns
        the session once every task is blocked and the lock is released."""
        runtime = self.runtime
        assert runtime is not None
        await runtime._registry_lock.acquire()
        self.drop.set()
        await trio.testing.wait_all_tasks_blocked()
        runtime._registry_lock.release()
        return runtime


DONE = Completed(content_items=[Text("done")], error_text=None)


@asynccontextmanager
async def session_and_nursery(
    delegate: BlockingCloseDelegate, isolation: str
) -> AsyncIterator[tuple[SessionRuntime, trio.Nursery]]:
    """A session in ``isolation`` mode and a nursery for the test's tasks (closed
    before the session)."""
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        yield runtime, nursery


async def completed_cell_closing(
    runtime: SessionRuntime, delegate: BlockingCloseDelegate
) -> CellId:
    """Run a cell to its completion and wait until its delegate cleanup has started
    (it then waits for ``close_release``); returns the cell's id."""
    started = await runtime.execute(execute_request('text("done");'), YieldAfter(60))
    assert await started.initial_event() == DONE
    with trio.fail_after(SAFETY):
        assert await delegate.close_started.receive() == started.cell_id
    return started.cell_id


async def shutdown_while_two_cells_close(
    runtime: SessionRuntime, delegate: BlockingCloseDelegate, nursery: trio.Nursery
) -> Task:
    """With one completed cell in its delegate cleanup and one live cell, start
    shutdown; returns it once the live cell's cleanup has started too."""
    closing_cell_id = await completed_cell_closing(runtime, delegate)
    live = await runtime.execute(execute_request("while (true) {}"), YieldAfter(0.001))
    assert await live.initial_event() == Yielded(content_items=[])

    shutdown = Task.spawn(nursery, runtime.shutdown)
    with trio.fail_after(SAFETY):
        terminated_cell_id = await delegate.close_started.receive()
    assert terminated_cell_id == live.cell_id
    assert closing_cell_id != terminated_cell_id
    return shutdown


async def test_closing_cells_reject_requests_while_delegate_cleanup_runs(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with session_and_nursery(delegate, isolation) as (runtime, nursery):
        cell_id = await completed_cell_closing(runtime, delegate)

        with pytest.raises(MissingCell) as observed:
            await runtime.observe(cell_id, PendingFrontier())
        assert observed.value == MissingCell(cell_id)
        with pytest.raises(MissingCell) as terminated:
            await runtime.terminate(cell_id)
        assert terminated.value == MissingCell(cell_id)

        shutdown = Task.spawn(nursery, runtime.shutdown)
        await shutdown.assert_still_running()

        delegate.close_release.release()

        assert await shutdown.wait() is None


async def test_shutdown_waits_for_each_cell_to_finish_delegate_cleanup(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with session_and_nursery(delegate, isolation) as (runtime, nursery):
        shutdown = await shutdown_while_two_cells_close(runtime, delegate, nursery)

        await shutdown.assert_still_running()

        delegate.close_release.release()
        await shutdown.assert_still_running()

        delegate.close_release.release()
        assert await shutdown.wait() is None


async def test_shutdown_waits_for_remaining_cells_when_delegate_cleanup_fails(
    isolation: str,
) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.FAILS)
    async with session_and_nursery(delegate, isolation) as (runtime, nursery):
        shutdown = await shutdown_while_two_cells_close(runtime, delegate, nursery)

        delegate.close_release.release()
        await shutdown.assert_still_running()

        delegate.close_release.release()
        assert await shutdown.wait() is None


async def test_concurrent_shutdowns_wait_for_the_same_cell_cleanup(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with session_and_nursery(delegate, isolation) as (runtime, nursery):
        await completed_cell_closing(runtime, delegate)

        first_shutdown = Task.spawn(nursery, runtime.shutdown)
        second_shutdown = Task.spawn(nursery, runtime.shutdown)

        await first_shutdown.assert_still_running()
        assert not second_shutdown.done.is_set()

        delegate.close_release.release()
        assert await first_shutdown.wait() is None
        assert await second_shutdown.wait() is None


async def test_shutdown_waits_for_cell_admission_already_queued_for_the_registry_lock(
    isolation: str,
) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with session_and_nursery(delegate, isolation) as (runtime, nursery):
        await runtime._registry_lock.acquire()

        execution = Task.spawn(
            nursery, runtime.execute, execute_request("while (true) {}"), YieldAfter(0.001)
        )
        await trio.testing.wait_all_tasks_blocked()
        assert not execution.done.is_set(), "execution finished before the lock was released"

        shutdown = Task.spawn(nursery, runtime.shutdown)
        await trio.testing.wait_all_tasks_blocked()
        assert not shutdown.done.is_set(), "shutdown finished before acquiring the lock"

        runtime._registry_lock.release()

        started = await execution.wait()
        cell_id = started.cell_id  # type: ignore[attr-defined]
        with trio.fail_after(SAFETY):
            close_started = await delegate.close_started.receive()
        assert not shutdown.done.is_set(), "shutdown completed before cell delegate cleanup"
        assert close_started == cell_id

        delegate.close_release.release()
        assert await shutdown.wait() is None


async def test_drop_terminates_cells_when_the_registry_is_locked(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    owner = SessionOwner(
        delegate, isolation, "while (true) {}", YieldAfter(0.001), Yielded(content_items=[])
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(owner.run)
        with trio.fail_after(SAFETY):
            await owner.ready.wait()
        runtime = await owner.drop_while_the_registry_is_locked()

        with trio.fail_after(SAFETY):
            assert await delegate.close_started.receive() == owner.cell_id

        delegate.close_release.release()
        with trio.fail_after(SAFETY):
            await runtime._wait_cell_count(0)
            await owner.dropped.wait()
        assert runtime._cell_count == 0


async def test_drop_cancels_notifications_during_natural_completion_when_registry_is_locked(
    isolation: str,
) -> None:
    delegate = BlockingNotificationDelegate()
    owner = SessionOwner(delegate, isolation, 'notify("pending");', YieldAfter(60))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(owner.run)
        with trio.fail_after(SAFETY):
            await owner.ready.wait()
            assert await delegate.events.receive() == STARTED
        runtime = await owner.drop_while_the_registry_is_locked()

        with trio.fail_after(SAFETY):
            assert await delegate.events.receive() == CANCELLED
            assert await delegate.events.receive() == NotificationEvent("closed", owner.cell_id)
            await runtime._wait_cell_count(0)
            await owner.dropped.wait()
        assert runtime._cell_count == 0
