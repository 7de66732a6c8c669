"""Trio ports of the reference implementation's ``session_runtime`` tests (Rust), one each.

Same names, same scenarios, same assertions. Where the Rust tests poll a future once or
wait 100 ms to show that something is *still pending*, these wait until every task is
blocked (``trio.testing.wait_all_tasks_blocked``) after the precondition the scenario
builds, which is deterministic: if the operation could finish, it would have.
``trio.fail_after`` bounds are generous safety nets against hangs, not timing claims.
"""

from __future__ import annotations

import enum

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

from ..helpers import SAFETY, config


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

    async def wait(self) -> object:
        with trio.fail_after(SAFETY):
            await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result


DONE = Completed(content_items=[Text("done")], error_text=None)


async def test_closing_cells_reject_requests_while_delegate_cleanup_runs(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        started = await runtime.execute(execute_request('text("done");'), YieldAfter(60))
        cell_id = started.cell_id

        assert await started.initial_event() == DONE
        with trio.fail_after(SAFETY):
            assert await delegate.close_started.receive() == cell_id

        with pytest.raises(MissingCell) as observed:
            await runtime.observe(cell_id, PendingFrontier())
        assert observed.value == MissingCell(cell_id)
        with pytest.raises(MissingCell) as terminated:
            await runtime.terminate(cell_id)
        assert terminated.value == MissingCell(cell_id)

        shutdown = Task.spawn(nursery, runtime.shutdown)
        await trio.testing.wait_all_tasks_blocked()
        assert not shutdown.done.is_set()

        delegate.close_release.release()

        assert await shutdown.wait() is None


async def test_shutdown_waits_for_each_cell_to_finish_delegate_cleanup(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        completed = await runtime.execute(execute_request('text("done");'), YieldAfter(60))
        assert await completed.initial_event() == DONE
        with trio.fail_after(SAFETY):
            closing_cell_id = await delegate.close_started.receive()

        live = await runtime.execute(execute_request("while (true) {}"), YieldAfter(0.001))
        assert await live.initial_event() == Yielded(content_items=[])

        shutdown = Task.spawn(nursery, runtime.shutdown)
        with trio.fail_after(SAFETY):
            terminated_cell_id = await delegate.close_started.receive()
        assert closing_cell_id != terminated_cell_id

        await trio.testing.wait_all_tasks_blocked()
        assert not shutdown.done.is_set()

        delegate.close_release.release()
        await trio.testing.wait_all_tasks_blocked()
        assert not shutdown.done.is_set()

        delegate.close_release.release()
        assert await shutdown.wait() is None


async def test_shutdown_waits_for_remaining_cells_when_delegate_cleanup_fails(
    isolation: str,
) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.FAILS)
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        completed = await runtime.execute(execute_request('text("done");'), YieldAfter(60))
        assert await completed.initial_event() == DONE
        with trio.fail_after(SAFETY):
            closing_cell_id = await delegate.close_started.receive()

        live = await runtime.execute(execute_request("while (true) {}"), YieldAfter(0.001))
        assert await live.initial_event() == Yielded(content_items=[])

        shutdown = Task.spawn(nursery, runtime.shutdown)
        with trio.fail_after(SAFETY):
            terminated_cell_id = await delegate.close_started.receive()
        assert closing_cell_id != terminated_cell_id

        delegate.close_release.release()
        await trio.testing.wait_all_tasks_blocked()
        assert not shutdown.done.is_set()

        delegate.close_release.release()
        assert await shutdown.wait() is None


async def test_concurrent_shutdowns_wait_for_the_same_cell_cleanup(isolation: str) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        completed = await runtime.execute(execute_request('text("done");'), YieldAfter(60))
        cell_id = completed.cell_id
        assert await completed.initial_event() == DONE
        with trio.fail_after(SAFETY):
            assert await delegate.close_started.receive() == cell_id

        first_shutdown = Task.spawn(nursery, runtime.shutdown)
        second_shutdown = Task.spawn(nursery, runtime.shutdown)

        await trio.testing.wait_all_tasks_blocked()
        assert not first_shutdown.done.is_set()
        assert not second_shutdown.done.is_set()

        delegate.close_release.release()
        assert await first_shutdown.wait() is None
        assert await second_shutdown.wait() is None


async def test_shutdown_waits_for_cell_admission_already_queued_for_the_registry_lock(
    isolation: str,
) -> None:
    delegate = BlockingCloseDelegate(FirstCloseOutcome.SUCCEEDS)
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
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
    drop = trio.Event()
    dropped = trio.Event()
    holder: list[SessionRuntime] = []
    ready = trio.Event()
    cell_ids: list[CellId] = []

    async def session_owner() -> None:
        async with SessionRuntime(delegate, config(isolation)) as runtime:
            holder.append(runtime)
            started = await runtime.execute(execute_request("while (true) {}"), YieldAfter(0.001))
            cell_ids.append(started.cell_id)
            assert await started.initial_event() == Yielded(content_items=[])
            ready.set()
            await drop.wait()
        dropped.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session_owner)
        with trio.fail_after(SAFETY):
            await ready.wait()
        runtime = holder[0]
        await runtime._registry_lock.acquire()
        drop.set()  # leave the session block while the registry is locked
        await trio.testing.wait_all_tasks_blocked()
        runtime._registry_lock.release()

        with trio.fail_after(SAFETY):
            assert await delegate.close_started.receive() == cell_ids[0]

        delegate.close_release.release()
        with trio.fail_after(SAFETY):
            await runtime._wait_cell_count(0)
            await dropped.wait()
        assert runtime._cell_count == 0


async def test_drop_cancels_notifications_during_natural_completion_when_registry_is_locked(
    isolation: str,
) -> None:
    delegate = BlockingNotificationDelegate()
    drop = trio.Event()
    dropped = trio.Event()
    holder: list[SessionRuntime] = []
    ready = trio.Event()
    cell_ids: list[CellId] = []

    async def session_owner() -> None:
        async with SessionRuntime(delegate, config(isolation)) as runtime:
            holder.append(runtime)
            started = await runtime.execute(execute_request('notify("pending");'), YieldAfter(60))
            cell_ids.append(started.cell_id)
            ready.set()
            await drop.wait()
        dropped.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session_owner)
        with trio.fail_after(SAFETY):
            await ready.wait()
            assert await delegate.events.receive() == STARTED
        runtime = holder[0]

        await runtime._registry_lock.acquire()
        drop.set()
        await trio.testing.wait_all_tasks_blocked()
        runtime._registry_lock.release()

        with trio.fail_after(SAFETY):
            assert await delegate.events.receive() == CANCELLED
            assert await delegate.events.receive() == NotificationEvent("closed", cell_ids[0])
            await runtime._wait_cell_count(0)
            await dropped.wait()
        assert runtime._cell_count == 0
