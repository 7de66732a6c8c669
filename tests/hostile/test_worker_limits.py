"""What bounds a worker process as a whole: real memory, liveness, stuck disposals.

``RuntimeConfig.memory_limit_bytes`` counts the heap, ArrayBuffers, and (estimated) ICU
objects and parser memory; ``EngineConfig.worker_memory_limit_bytes`` bounds the
worker's resident memory as a whole, the last line. A worker stopped with ``SIGSTOP`` is found
by the heartbeat (``EngineConfig.worker_heartbeat_timeout``) and killed; meanwhile no
public call waits for it. An isolate stuck in a built-in that ignores termination
delays neither the other cells' ``cell_closed`` nor (in process mode) the session's end.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from code_mode import (
    Completed,
    Pending,
    PendingFrontier,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)
from code_mode._engine import isolate as isolate_module
from code_mode._engine._worker_death import COLLATERAL

from ..helpers import NO_REPLAY, SAFETY, GateDelegate, config, engine, request

MiB = 1024 * 1024
WORKER_DIED = "exec runtime ended unexpectedly: the JavaScript worker process died"

#: Programs whose memory V8's heap limit does not see (ICU objects, the parser's memory):
#: they took a worker to 1-3 GiB at a 64 MiB cell limit, and now count toward the cell
#: (js/allocations.js), which fails with the memory limit's message.
OUTSIDE_THE_HEAP = {
    "segmenter": (
        "const keep = []; const s = new Intl.Segmenter('en', {granularity: 'word'});"
        "for (let i = 0; ; i++) keep.push(s.segment('hello world ' + i)[Symbol.iterator]());"
    ),
    "date-time-format": (
        "const keep = [];"
        "for (;;) keep.push(new Intl.DateTimeFormat('en-US', {timeZone: 'UTC', hour: 'numeric'}));"
    ),
    "collator": (
        "const keep = []; for (;;) keep.push(new Intl.Collator('en', {sensitivity: 'base'}));"
    ),
    "eval-literal": "const a = eval('[' + '0,'.repeat(1e7) + ']'); text(String(a.length));",
}


@pytest.mark.parametrize("name", sorted(OUTSIDE_THE_HEAP))
async def test_memory_outside_the_heap_counts_toward_the_cell(name: str) -> None:
    small = config("process", memory_limit_bytes=64 * MiB)
    delegate = GateDelegate()
    async with (
        engine("process", worker_processes=1, warm_isolates=0) as eng,
        SessionRuntime(delegate, small, engine=eng) as runtime,
    ):
        started = await runtime.execute(request(OUTSIDE_THE_HEAP[name]), YieldAfter(2 * SAFETY))
        with trio.fail_after(2 * SAFETY):
            event = await started.initial_event()
        assert event == Completed(
            [],
            error_text=f"exec cell exceeded its memory limit of {64 * MiB} bytes "
            "(RuntimeConfig.memory_limit_bytes)",
        )
        again = await runtime.execute(request('text("ok")'), YieldAfter(SAFETY))
        assert await again.initial_event() == Completed([Text("ok")])


async def test_the_worker_memory_limit_stays_the_last_line() -> None:
    """A worker whose resident memory passes ``worker_memory_limit_bytes`` is killed,
    whatever its cells' own limits allow (here a heap limit above the worker's)."""
    limit = 256 * MiB
    large = config("process", memory_limit_bytes=1024 * MiB)
    delegate = GateDelegate()
    async with (
        engine(
            "process",
            worker_processes=1,
            warm_isolates=0,
            worker_memory_limit_bytes=limit,
            worker_memory_overcommit=9.0,  # admits a 1 GiB cell on a 256 MiB worker
        ) as eng,
        SessionRuntime(delegate, large, engine=eng) as runtime,
    ):
        source = "const keep = []; for (;;) keep.push(new Array(1e5).fill(1.5));"
        started = await runtime.execute(request(source), YieldAfter(2 * SAFETY))
        with trio.fail_after(2 * SAFETY):
            event = await started.initial_event()
        assert isinstance(event, Completed), event
        assert event.error_text is not None
        # Replayed alone on a worker of its own, it took that one past the limit too:
        # it fails alone, with the limit's name.
        assert event.error_text.startswith(
            "exec cell exceeded the memory a worker process may use: its worker, which ran "
            "it alone, reached a resident memory of "
        )
        assert event.error_text.endswith(
            f"above the limit of {limit} bytes (EngineConfig.worker_memory_limit_bytes)"
        )
        again = await runtime.execute(request('text("ok")'), YieldAfter(SAFETY))
        assert await again.initial_event() == Completed([Text("ok")])


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    """``SIGSTOP`` the process; ``SIGCONT`` it afterwards if it still exists."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


async def test_a_stopped_worker_is_killed_its_cells_fail_and_close() -> None:
    delegate = GateDelegate()
    with trio.fail_after(3 * SAFETY):
        async with engine("process", worker_processes=1, worker_heartbeat_timeout=1.0) as eng:
            async with SessionRuntime(delegate, NO_REPLAY, engine=eng) as runtime:
                started = await runtime.execute(
                    request('text("a"); await tools.block();', ["block"]), PendingFrontier()
                )
                await delegate.next_call()
                # The program waits for its tool call (so it is told it was not running).
                assert await started.initial_event() == Pending([Text("a")], ["tool-1"])
                (pid,) = eng.worker_pids()
                with stopped(pid):
                    event = await runtime.observe(started.cell_id, YieldAfter(SAFETY))
                    assert event == Completed(
                        [],
                        error_text=f"{WORKER_DIED} (killed: it did not answer for 1 s "
                        f"(EngineConfig.worker_heartbeat_timeout)){COLLATERAL}",
                    )
                    assert pid not in eng.worker_pids()
            assert delegate.closed == [started.cell_id]
            async with SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as runtime:
                again = await runtime.execute(request('text("ok")'), YieldAfter(SAFETY))
                assert await again.initial_event() == Completed([Text("ok")])
                assert pid not in eng.worker_pids()


async def test_calls_honour_cancellation_while_a_worker_is_stopped() -> None:
    """``execute`` on a stopped worker (no warm isolate) gives up when cancelled and
    holds no lock meanwhile: ``terminate`` of another cell answers at once."""
    delegate = GateDelegate()
    with trio.fail_after(3 * SAFETY):
        async with engine(
            "process", worker_processes=1, warm_isolates=0, worker_heartbeat_timeout=SAFETY
        ) as eng:
            async with SessionRuntime(delegate, NO_REPLAY, engine=eng) as runtime:
                busy = await runtime.execute(
                    request('text("a"); await tools.block();', ["block"]), YieldAfter(0)
                )
                await delegate.next_call()
                (pid,) = eng.worker_pids()
                with stopped(pid):
                    with trio.move_on_after(0.5) as waited:
                        await runtime.execute(request('text("b")'), YieldAfter(SAFETY))
                    assert waited.cancelled_caught
                    with trio.fail_after(SAFETY / 2):  # well before the heartbeat gives up
                        assert await runtime.terminate(busy.cell_id) == Terminated([Text("a")])
                    assert pid in eng.worker_pids()
                # continued again: the worker closes the terminated cell's isolate
            assert delegate.closed == [busy.cell_id]  # never the abandoned one


async def test_a_stuck_disposal_delays_no_other_cell(isolation: str) -> None:
    """A terminated cell stuck in V8's ``sort`` (it ignores terminate-execution) keeps its
    isolate busy for seconds; the other cells close meanwhile. In process mode the
    session also ends within ``isolate_close_timeout``, and the worker, once the stuck
    isolate is all it hosts, is killed."""
    delegate = GateDelegate(gates=["gate"], results={"gate": 7})
    # Numbers sorted as strings (the default comparison): V8's sort of 4 Mi of them runs
    # for many seconds without a check for termination. (A sparse array's sort, the
    # example before, is now walked in JavaScript and stops at once: js/walks.js.)
    # The array is built first (JavaScript, which terminate stops); `tools.go` says the
    # sort is next.
    stuck_source = (
        "const a = [];"
        " for (let i = 0; i < 2 ** 22; i++) a.push((i * 2654435761) % 4294967296);"
        " await tools.go(); a.sort();"
    )
    async with (
        engine(isolation, worker_processes=1, warm_isolates=0, isolate_close_timeout=1.0) as eng,
        SessionRuntime(delegate, config(isolation), engine=eng) as other,
    ):
        waiting = await other.execute(
            request("text(String(await tools.gate()));", ["gate"]), YieldAfter(0)
        )
        await delegate.next_call()
        pids = eng.worker_pids()
        workers = list(eng._pool.workers) if eng._pool is not None else []
        async with SessionRuntime(delegate, config(isolation), engine=eng) as runtime:
            stuck = await runtime.execute(request(stuck_source, ["go"]), YieldAfter(0))
            assert await stuck.initial_event() == Yielded([])
            assert (await delegate.next_call()).tool_name.name == "go"
            # The sort starts as the result of `go` arrives: 0.3 s later it runs.
            assert await runtime.observe(stuck.cell_id, YieldAfter(0.3)) == Yielded([])
            assert await runtime.terminate(stuck.cell_id) == Terminated([])
            done = await runtime.execute(request('text("done")'), YieldAfter(SAFETY))
            assert await done.initial_event() == Completed([Text("done")])
            with trio.fail_after(SAFETY):
                while done.cell_id not in delegate.closed:
                    await delegate.closed_event.wait()
                    delegate.closed_event = trio.Event()
            assert stuck.cell_id not in delegate.closed
            session_left = trio.current_time()
        if isolation == "process":
            assert trio.current_time() - session_left < 1.0 + SAFETY / 2
        assert stuck.cell_id in delegate.closed
        # The cell sharing the worker was not disturbed.
        assert eng.worker_pids() == pids
        delegate.release("gate")
        assert await other.observe(waiting.cell_id, YieldAfter(SAFETY)) == Completed([Text("7")])
        with trio.fail_after(SAFETY):
            for worker in workers:  # only the stuck isolate is left there: killed
                await worker.exited.wait()


async def test_terminate_answers_when_the_worker_dies_before_confirming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``terminate()`` waits for the isolate to confirm the interrupt (and to say
    whether output is queued); a worker that dies meanwhile ends that wait, and no
    drain is posted to the dead isolate: ``Terminated`` still arrives."""
    monkeypatch.setattr(isolate_module, "DRAIN_TIMEOUT", SAFETY)  # only the death ends it
    with trio.fail_after(3 * SAFETY):
        async with (
            engine("process", worker_processes=1) as eng,
            SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as runtime,
        ):
            started = await runtime.execute(request("while (true) {}"), YieldAfter(0.01))
            assert await started.initial_event() == Yielded([])
            (pid,) = eng.worker_pids()
            results: list[object] = []

            async def terminate() -> None:
                results.append(await runtime.terminate(started.cell_id))

            os.kill(pid, signal.SIGSTOP)  # the interrupt is never confirmed
            async with trio.open_nursery() as nursery:
                nursery.start_soon(terminate)
                await trio.testing.wait_all_tasks_blocked()
                assert results == []
                os.kill(pid, signal.SIGKILL)
            assert results == [Terminated([])]
