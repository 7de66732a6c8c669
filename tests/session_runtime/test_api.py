"""Every public method of ``SessionRuntime`` and every error, with exact messages."""

from __future__ import annotations

import os
import signal

import pytest
import trio
import trio.testing

from code_mode import (
    AlreadyTerminating,
    BusyObserver,
    CellId,
    CodeModeError,
    Completed,
    DuplicateCell,
    MissingCell,
    Pending,
    PendingFrontier,
    RuntimeConfig,
    RuntimeFailure,
    SessionRuntime,
    ShuttingDown,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)
from code_mode._engine import _process_pool, _worker_process
from code_mode._engine._worker_death import COLLATERAL
from code_mode._engine.isolate import Isolate
from code_mode._v8 import _native

from ..helpers import (
    SAFETY,
    GateDelegate,
    Task,
    config,
    engine,
    request,
    settled,
    yielded_cell,
)

# -- errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ShuttingDown(), "code mode session is shutting down"),
        (DuplicateCell(CellId("3")), "exec cell 3 already exists"),
        (MissingCell(CellId("3")), "exec cell 3 not found"),
        (BusyObserver(CellId("3")), "exec cell 3 already has an active observer"),
        (AlreadyTerminating(CellId("3")), "exec cell 3 is already terminating"),
        (RuntimeFailure("V8 said no"), "V8 said no"),
    ],
)
def test_error_messages_are_exact(error: CodeModeError, message: str) -> None:
    assert str(error) == message
    assert isinstance(error, CodeModeError)


def test_errors_compare_by_class_and_cell_id() -> None:
    assert MissingCell(CellId("1")) == MissingCell(CellId("1"))
    assert MissingCell(CellId("1")) != MissingCell(CellId("2"))
    assert MissingCell(CellId("1")) != BusyObserver(CellId("1"))
    assert MissingCell(CellId("1")).cell_id == "1"
    assert RuntimeFailure("a") == RuntimeFailure("a")
    assert RuntimeFailure("a") != RuntimeFailure("b")
    assert ShuttingDown() == ShuttingDown()


def test_runtime_config_rejects_nonsense_limits() -> None:
    with pytest.raises(ValueError, match="memory_limit_bytes"):
        RuntimeConfig(memory_limit_bytes=0)
    with pytest.raises(ValueError, match="callback_grace"):
        RuntimeConfig(callback_grace=-1)


def test_yield_after_rejects_negative_and_nan() -> None:
    with pytest.raises(ValueError):
        YieldAfter(-1)
    with pytest.raises(ValueError):
        YieldAfter(float("nan"))
    with pytest.raises(TypeError):
        YieldAfter("1")  # type: ignore[arg-type]


# -- execute, observe, begin_observe, terminate ----------------------------------------


async def test_execute_allocates_decimal_ids_in_order(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        ids = []
        for _ in range(3):
            started = await runtime.execute(request('text("x")'), YieldAfter(60))
            ids.append(started.cell_id)
            assert await started.initial_event() == Completed([Text("x")])
        assert ids == ["1", "2", "3"]


async def test_a_duplicate_cell_id_is_rejected(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        runtime._registry[CellId("1")] = "closing"  # a cell "1" that is still closing
        with pytest.raises(DuplicateCell) as raised:
            await runtime.execute(request("1"), YieldAfter(60))
        assert raised.value == DuplicateCell(CellId("1"))
        del runtime._registry[CellId("1")]
        started = await runtime.execute(request('text("next")'), YieldAfter(60))
        assert started.cell_id == "2"  # the failed admission consumed id 1
        assert await started.initial_event() == Completed([Text("next")])


async def test_observe_and_terminate_unknown_cells_are_missing(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        with pytest.raises(MissingCell) as observed:
            await runtime.observe(CellId("7"), YieldAfter(1))
        assert observed.value == MissingCell(CellId("7"))
        with pytest.raises(MissingCell):
            await runtime.begin_observe(CellId("7"), PendingFrontier())
        with pytest.raises(MissingCell):
            await runtime.terminate(CellId("7"))


async def test_a_second_observer_is_busy_and_does_not_displace_the_first(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = "yield_control(); await tools.block();"
        started = await yielded_cell(runtime, request(source, ["block"]), YieldAfter(60))
        first = await runtime.begin_observe(started.cell_id, YieldAfter(60))
        with pytest.raises(BusyObserver) as raised:
            await runtime.observe(started.cell_id, YieldAfter(60))
        assert raised.value == BusyObserver(started.cell_id)
        async with trio.open_nursery() as nursery:
            waiting = Task.spawn(nursery, first.event)
            await trio.testing.wait_all_tasks_blocked()
            assert await runtime.terminate(started.cell_id) == Terminated([])
        assert await waiting.wait() == Terminated([])  # the observer got the same event


async def test_begin_observe_admits_before_event_is_awaited(isolation: str) -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'yield_control(); await tools.gate(); text("later"); yield_control(); '
        source += "await tools.block();"
        started = await yielded_cell(runtime, request(source, ["gate", "block"]), YieldAfter(60))
        pending = await runtime.begin_observe(started.cell_id, YieldAfter(60))
        assert pending.cell_id == started.cell_id
        # Admitted already: a second observer is refused before anyone awaits the first.
        with pytest.raises(BusyObserver):
            await runtime.begin_observe(started.cell_id, YieldAfter(60))
        await delegate.next_call()
        delegate.release("gate")
        assert await pending.event() == Yielded([Text("later")])
        await runtime.terminate(started.cell_id)


async def test_concurrent_terminate_is_already_terminating(isolation: str) -> None:
    class SlowCancelDelegate(GateDelegate):
        async def invoke_tool(self, call: object) -> object:
            self.started_send.send_nowait(call)  # type: ignore[arg-type]
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await self.gates["cleanup"].wait()

    delegate = SlowCancelDelegate(gates=["cleanup"])
    async with SessionRuntime(delegate, config(isolation, callback_grace=60)) as runtime:
        started = await runtime.execute(request("await tools.slow();", ["slow"]), YieldAfter(60))
        await delegate.next_call()
        async with trio.open_nursery() as nursery:
            terminating = Task.spawn(nursery, runtime.terminate, started.cell_id)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(AlreadyTerminating) as raised:
                await runtime.terminate(started.cell_id)
            assert raised.value == AlreadyTerminating(started.cell_id)
            delegate.release("cleanup")
        assert await terminating.wait() == Terminated([])


async def test_natural_completion_wins_over_a_later_terminate(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        started = await yielded_cell(runtime, request('text("done")'), YieldAfter(0))
        await settled(runtime, started.cell_id)
        assert await runtime.terminate(started.cell_id) == Completed([Text("done")])


async def test_pending_frontier_lists_outstanding_calls(isolation: str) -> None:
    delegate = GateDelegate(gates=["one"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'text("before"); const a = tools.one(); const b = tools.block();'
        source += ' await a; text("after"); await b;'
        started = await runtime.execute(request(source, ["one", "block"]), PendingFrontier())
        assert await started.initial_event() == Pending([Text("before")], ["tool-1", "tool-2"])
        delegate.release("one")
        await trio.testing.wait_all_tasks_blocked()  # the result is on its way to V8
        event = await runtime.observe(started.cell_id, PendingFrontier())
        assert event == Pending([Text("after")], ["tool-2"])
        assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_a_start_failure_is_a_runtime_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise _native.IsolateUnavailable("failed to initialize code mode runtime")

    monkeypatch.setattr(_native.NativeIsolate, "__init__", refuse)
    async with SessionRuntime(GateDelegate(), config("thread")) as runtime:
        with pytest.raises(RuntimeFailure) as raised:
            await runtime.execute(request("1"), YieldAfter(1))
        assert str(raised.value) == "failed to initialize code mode runtime"
        assert runtime.is_alive()


async def test_a_start_command_failing_on_a_warm_isolate_is_raised_by_execute(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a warm isolate ready, execute starts the program in the caller's own task
    (no task switch before the start command); a start that fails there is still
    raised by execute, the isolate is closed, and no cell is left behind."""
    callers: list[trio.lowlevel.Task] = []
    closed: list[Isolate] = []
    original_close = Isolate.close

    def failing_start(self: Isolate, *args: object, **kwargs: object) -> None:
        callers.append(trio.lowlevel.current_task())
        raise ValueError("no start")

    async def recording_close(self: Isolate) -> None:
        closed.append(self)
        await original_close(self)

    async with (
        engine(isolation, warm_isolates=1) as own_engine,
        SessionRuntime(GateDelegate(), config(isolation), engine=own_engine) as runtime,
    ):
        (warm,) = own_engine.warm_pools()  # one worker, or the host's threads
        with trio.fail_after(SAFETY):
            while not warm.ready_count:  # until the pool holds an isolate built ahead
                await warm.wait_for_fill()
        monkeypatch.setattr(Isolate, "start", failing_start)
        monkeypatch.setattr(Isolate, "close", recording_close)
        with pytest.raises(ValueError, match="no start"):
            await runtime.execute(request('text("x")'), YieldAfter(60))
        assert callers == [trio.lowlevel.current_task()]
        assert len(closed) == 1
        assert runtime._cell(CellId("1")) is None
        monkeypatch.undo()
        started = await runtime.execute(request('text("next")'), YieldAfter(60))
        assert await started.initial_event() == Completed([Text("next")])


async def test_a_worker_that_cannot_start_is_a_runtime_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_worker_process, "BOOTSTRAP", "import sys; sys.exit(3)")
    async with SessionRuntime(GateDelegate(), config("process")) as runtime:
        with pytest.raises(RuntimeFailure) as raised:
            await runtime.execute(request("1"), YieldAfter(1))
        assert str(raised.value) == (
            "exec runtime ended unexpectedly: the JavaScript worker process died (exit code 3)"
        )


async def test_a_worker_killed_mid_cell_fails_only_its_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    delegate = GateDelegate()
    async with (
        engine("process", worker_processes=1) as own_engine,
        SessionRuntime(
            delegate, config("process", max_journal_chars=0), engine=own_engine
        ) as runtime,
    ):
        started = await runtime.execute(
            request('text("partial"); await tools.block();', ["block"]), PendingFrontier()
        )
        await delegate.next_call()
        # Waiting for its tool call when the worker dies: so it is told it did not cause it.
        assert await started.initial_event() == Pending([Text("partial")], ["tool-1"])
        (worker,) = own_engine.worker_pids()
        os.kill(worker, signal.SIGKILL)
        assert await runtime.observe(started.cell_id, YieldAfter(60)) == Completed(
            [],
            error_text="exec runtime ended unexpectedly: the JavaScript worker process died "
            f"(killed by SIGKILL){COLLATERAL}",
        )
        assert delegate.cancelled == ["tool-1"]
        following = await runtime.execute(request('text("fresh worker")'), YieldAfter(60))
        assert await following.initial_event() == Completed([Text("fresh worker")])
        (replacement,) = own_engine.worker_pids()
        assert replacement != worker


# -- shutdown, is_alive, leaving the block ----------------------------------------------


async def test_is_alive_until_shutdown_and_execute_is_refused_after(isolation: str) -> None:
    runtime = SessionRuntime(GateDelegate(), config(isolation))
    assert not runtime.is_alive()
    async with runtime:
        assert runtime.is_alive()
        await runtime.shutdown()
        assert not runtime.is_alive()
        with pytest.raises(ShuttingDown) as raised:
            await runtime.execute(request("1"), YieldAfter(1))
        assert str(raised.value) == "code mode session is shutting down"
        await runtime.shutdown()  # idempotent
    assert not runtime.is_alive()


async def test_a_cancelled_shutdown_leaves_the_session_closed(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        await runtime._registry_lock.acquire()
        with trio.move_on_after(0):
            await runtime.shutdown()
        runtime._registry_lock.release()
        with pytest.raises(ShuttingDown):
            await runtime.execute(request("1"), YieldAfter(1))


async def test_shutdown_terminates_running_cells_and_waits_for_their_close(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await yielded_cell(runtime, request("while (true) {}"), YieldAfter(0.001))
        with trio.fail_after(SAFETY):
            await runtime.shutdown()
        assert delegate.closed == [started.cell_id]


def thread_ids() -> set[str]:
    """OS threads of this process, except trio's own worker-thread cache: starting a
    worker process uses ``trio.to_thread`` internally, and trio keeps that thread for
    reuse by any later caller (it is the cache of the trio run, not of a session)."""
    ids = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                if comm.read().startswith("Trio thread"):
                    continue
        except OSError:
            continue
        ids.add(tid)
    return ids


async def no_new_threads(before: set[str]) -> set[str]:
    """The threads that exist now and did not before, after a bounded wait.

    ``pthread_join`` returns when the kernel clears the thread id, a moment before the
    task leaves ``/proc/self/task``, so a just-joined isolate thread can be listed for a
    few microseconds more. This only waits out that window (threads that are really
    left behind never leave); the caller asserts the result is empty.
    """
    # 12 s also outlasts trio's thread cache (idle threads exit after 10 s), whose
    # threads are only recognisable once they have named themselves.
    with trio.move_on_after(12):
        while thread_ids() - before:  # noqa: ASYNC110 - the kernel gives no event to wait on
            await trio.sleep(0.001)
    return thread_ids() - before


async def test_leaving_the_blocks_leaves_no_thread_task_or_isolate_behind(isolation: str) -> None:
    threads_before = thread_ids()
    isolates_before = _native.live_isolate_count()
    children_before = _process_pool.child_process_count()
    tasks_before = len(trio.lowlevel.current_root_task().child_nurseries[0].child_tasks)
    delegate = GateDelegate()
    async with engine(isolation, warm_isolates=0, worker_processes=1) as own_engine:
        async with SessionRuntime(delegate, config(isolation), engine=own_engine) as runtime:
            busy = await runtime.execute(request("while (true) {}"), YieldAfter(0.001))
            assert await busy.initial_event() == Yielded([])
            # It yields once its tool call has started (the call's message comes first),
            # so leaving the block has a call in flight to cancel.
            source = "const call = tools.block(); yield_control(); await call;"
            waiting = await runtime.execute(request(source, ["block"]), YieldAfter(SAFETY))
            assert await waiting.initial_event() == Yielded([])
            done = await runtime.execute(request('text("x")'), YieldAfter(60))
            assert await done.initial_event() == Completed([Text("x")])
            if isolation == "thread":
                # one message-pump thread per live isolate, plus the engine's workers
                assert len(thread_ids() - threads_before) >= 3
                assert _native.live_isolate_count() > isolates_before
            else:
                assert _process_pool.child_process_count() == children_before + 1
        # The session is gone, with every isolate of its cells; the engine lives on.
        assert sorted(delegate.closed) == ["1", "2", "3"]
        assert _native.live_isolate_count() == isolates_before
        assert own_engine.is_running()
    assert await no_new_threads(threads_before) == set()
    assert _native.live_isolate_count() == isolates_before
    assert _process_pool.child_process_count() == children_before
    assert len(trio.lowlevel.current_root_task().child_nurseries[0].child_tasks) == tasks_before
    assert delegate.cancelled == ["tool-1"]


async def test_a_tool_exception_without_a_message_names_its_class(isolation: str) -> None:
    delegate = GateDelegate(errors={"lookup": KeyError()})
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = "try { await tools.lookup(); } catch (e) { text(e); }"
        started = await runtime.execute(request(source, ["lookup"]), YieldAfter(60))
        assert await started.initial_event() == Completed([Text("KeyError")])
