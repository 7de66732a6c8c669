"""The engine: shared by sessions, default per trio run, supervised workers."""

from __future__ import annotations

import contextlib
import threading

import pytest
import trio
import trio.testing

from code_mode import (
    Completed,
    Engine,
    EngineConfig,
    RuntimeConfig,
    RuntimeFailure,
    SessionRuntime,
    Text,
    YieldAfter,
)
from code_mode._engine import _default, _process_pool, _worker_process
from code_mode._v8 import Closed, Created, IsolateLimits, _native

from ..helpers import SAFETY, GateDelegate, config, engine, request


async def run_text(runtime: SessionRuntime, value: str) -> None:
    started = await runtime.execute(request(f"text({value!r})"), YieldAfter(SAFETY))
    assert await started.initial_event() == Completed([Text(value)])


def engine_thread_names() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("code-mode")}


# -- sharing -------------------------------------------------------------------------


async def test_sessions_without_an_engine_share_the_default_one(isolation: str) -> None:
    runtimes = [SessionRuntime(GateDelegate(), config(isolation)) for _ in range(20)]
    async with contextlib.AsyncExitStack() as stack:
        for runtime in runtimes:
            await stack.enter_async_context(runtime)
        async with trio.open_nursery() as nursery:
            for n, runtime in enumerate(runtimes):
                nursery.start_soon(run_text, runtime, f"session {n}")
        (shared,) = {runtime.engine for runtime in runtimes}
        assert shared is not None and shared.isolation == isolation
        assert shared in _default.default_engines()
        if isolation == "process":
            assert 1 <= _process_pool.child_process_count() <= shared.config.worker_processes
    assert shared.is_running()  # leaving sessions leaves the engine running


def tasks_below(task: trio.lowlevel.Task) -> list[trio.lowlevel.Task]:
    """``task`` and every task started in its nurseries, recursively."""
    found = [task]
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            found.extend(tasks_below(child))
    return found


async def test_every_task_of_the_default_engine_lets_ctrl_c_reach_the_main_task(
    isolation: str,
) -> None:
    """trio raises KeyboardInterrupt in whichever unprotected task runs when SIGINT
    arrives; raised in a task below the default engine's system task, it ended the run
    as TrioInternalError (``code-mode run``, Ctrl+C under load). Each task there must be
    KI-protected, as trio's own system tasks are, so that it reaches the main task."""
    # What trio's SIGINT handler asks of the running task (trio._core._ki): the
    # innermost frame whose code is marked decides, else the task's own flag. Asked
    # here of each task's root coroutine, which the engine's code runs below.
    from trio._core._ki import _CODE_KI_PROTECTION_STATUS_WMAP as marked

    def protected(task: trio.lowlevel.Task) -> bool:
        try:
            return bool(marked[task.coro.cr_code])
        except KeyError:
            return bool(task._ki_protected)

    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        await run_text(runtime, "warm")
        (served,) = [
            task
            for task in tasks_below(trio.lowlevel.current_root_task())
            if task.name == f"code_mode default engine ({isolation})"
        ]
        below = tasks_below(served)
        assert len(below) > (2 if isolation == "process" else 1), below
        assert [task.name for task in below if not protected(task)] == []


async def test_a_session_asking_for_another_isolation_gets_a_matching_engine() -> None:
    async with (
        SessionRuntime(GateDelegate()) as default,
        SessionRuntime(GateDelegate(), RuntimeConfig(isolation="thread")) as threaded,
    ):
        await run_text(default, "p")
        await run_text(threaded, "t")
        assert default.engine is not None and default.engine.isolation == "process"
        assert threaded.engine is not None and threaded.engine.isolation == "thread"


async def test_an_explicit_engine_of_the_other_isolation_is_refused() -> None:
    async with engine("thread") as threads:
        with pytest.raises(ValueError, match=r"isolation='process'.*isolation='thread'"):
            SessionRuntime(GateDelegate(), RuntimeConfig(isolation="process"), engine=threads)
        # Without a mode of its own, a session takes the engine's.
        async with SessionRuntime(GateDelegate(), engine=threads) as runtime:
            await run_text(runtime, "ok")


async def test_an_engine_must_be_running() -> None:
    idle = Engine(EngineConfig(isolation="thread"))
    with pytest.raises(RuntimeError, match="not running"):
        async with SessionRuntime(GateDelegate(), engine=idle):
            pass


def test_the_default_engine_closes_with_the_trio_run(isolation: str) -> None:
    threads_before = engine_thread_names()
    children_before = _process_pool.child_process_count()

    async def main() -> None:
        async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
            await run_text(runtime, "ok")
        # Between sessions, the default engine keeps its workers.
        if isolation == "process":
            assert _process_pool.child_process_count() > children_before
        else:
            assert engine_thread_names() - threads_before

    trio.run(main)
    assert engine_thread_names() == threads_before
    assert _process_pool.child_process_count() == children_before
    assert _native.live_isolate_count() == 0


# -- workers -------------------------------------------------------------------------


async def test_workers_are_recycled_after_the_configured_number_of_cells() -> None:
    async with (
        engine("process", worker_processes=1, warm_isolates=0, recycle_after_cells=3) as eng,
        SessionRuntime(GateDelegate(), engine=eng) as runtime,
    ):
        seen: list[int] = []
        for n in range(7):
            await run_text(runtime, str(n))
            seen.extend(pid for pid in eng.worker_pids() if pid not in seen)
        # cells 1-3 on the first worker, 4-6 on a second, 7 on a third
        assert len(seen) == 3


class QuietSink:
    def on_batch(self, text: str | None) -> None:
        pass

    def on_task(self, tag: int, outcome: str, detail: str) -> None:
        pass

    def on_crash(self, message: str) -> None:
        raise AssertionError(f"no isolate should crash here: {message}")


async def test_a_retiring_worker_does_not_exit_under_an_isolate_it_just_created(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seen in a soak run: a worker retiring after its 1,000th isolate exited (code 0)
    # under the cell that isolate was made for. Its replies to "create B" and to
    # "close A" arrived in one read; between the two, B was no longer being created
    # but not yet hosted, so the worker looked idle. Here the worker's process is
    # never started, and its replies are fed to its reader by hand, back to back.
    async with trio.open_nursery() as nursery:
        worker = _worker_process.WorkerProcess(
            EngineConfig(), died=lambda _: None, retired=lambda _: None, unconfined=lambda _: None
        )
        shutdowns: list[int] = []
        monkeypatch.setattr(worker, "shutdown", lambda: shutdowns.append(worker.load))

        async def create(isolate_id: int) -> None:
            await worker.create(isolate_id, QuietSink(), IsolateLimits(1 << 20, 1 << 20))

        nursery.start_soon(create, 1)
        await trio.testing.wait_all_tasks_blocked()
        worker._dispatch(Created(1))
        await trio.testing.wait_all_tasks_blocked()
        assert worker.load == 1

        worker.retiring = True  # as after its last allowed isolate, B
        nursery.start_soon(create, 2)
        await trio.testing.wait_all_tasks_blocked()
        worker._dispatch(Created(2))
        worker._dispatch(Closed(1))
        assert (worker.load, shutdowns) == (1, [])
        await trio.testing.wait_all_tasks_blocked()
        assert (worker.load, shutdowns) == (1, [])

        worker._dispatch(Closed(2))  # B's cell is done
        assert shutdowns == [0]


async def test_a_full_engine_fails_the_cell_with_a_clear_error() -> None:
    delegate = GateDelegate()
    async with (
        engine("process", worker_processes=1, isolates_per_worker=1, warm_isolates=0) as eng,
        SessionRuntime(delegate, engine=eng) as runtime,
    ):
        busy = await runtime.execute(request("await tools.block();", ["block"]), YieldAfter(0))
        await delegate.next_call()
        with pytest.raises(RuntimeFailure, match=r"at capacity.*EngineConfig.isolates_per_worker"):
            await runtime.execute(request('text("no room")'), YieldAfter(SAFETY))
        await runtime.terminate(busy.cell_id)
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()  # its isolate is gone by then
        await run_text(runtime, "room again")


def test_engine_config_validates_its_fields() -> None:
    with pytest.raises(ValueError, match=r"EngineConfig\.worker_processes"):
        EngineConfig(worker_processes=0)
    with pytest.raises(ValueError, match=r"EngineConfig\.warm_isolates"):
        EngineConfig(warm_isolates=-1)
    with pytest.raises(ValueError, match=r"EngineConfig\.warm_isolates_burst"):
        EngineConfig(warm_isolates_burst=0)
    with pytest.raises(ValueError, match=r"EngineConfig\.recycle_after_cells"):
        EngineConfig(recycle_after_cells=0)
    with pytest.raises(ValueError, match="isolation"):
        EngineConfig(isolation="fork")  # type: ignore[arg-type]
    assert EngineConfig(recycle_after_cells=None).recycle_after_cells is None


async def test_warm_isolates_take_each_sessions_own_limits(isolation: str) -> None:
    """The warm isolates are prepared with default limits; a session with a smaller
    memory limit must still get its own limit on the isolate it takes."""
    async with engine(isolation, warm_isolates=2) as eng:
        small = config(isolation, memory_limit_bytes=16 * 1024 * 1024)
        async with SessionRuntime(GateDelegate(), small, engine=eng) as runtime:
            started = await runtime.execute(
                request("const keep = []; while (true) keep.push(new Array(1e5).fill(1));"),
                YieldAfter(SAFETY),
            )
            event = await started.initial_event()
            assert event.error_text is not None
            assert "memory limit of 16777216 bytes" in event.error_text


@pytest.mark.parametrize("isolation", ["thread", "process"])
async def test_wait_until_settled_returns_once_the_warm_pool_is_refilled(isolation: str) -> None:
    async with engine(isolation, warm_isolates=2) as eng:
        (warm,) = eng.warm_pools()  # the one worker's, or the host's
        with trio.fail_after(SAFETY):
            await eng.wait_until_settled()
            assert warm._filling == 0 and len(warm._ready) == 2
            async with SessionRuntime(GateDelegate(), config(isolation), engine=eng) as runtime:
                started = await runtime.execute(request("text(1)"), YieldAfter(SAFETY))
                assert isinstance(await started.initial_event(), Completed)
                await eng.wait_until_settled()
                assert warm._filling == 0 and len(warm._ready) == 2
