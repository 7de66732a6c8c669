"""Where sessions' cells run (``EngineConfig.session_placement``), and what the cells of
a dead worker are told.

A session's cells stay on one worker process; sessions spread over the workers; under
``"exclusive"`` placement a worker serves one session at a time. When a worker dies,
each of its cells says whether its program was running (it may have caused the death)
or waiting (another program, or something outside, did).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from code_mode import (
    Completed,
    EngineConfig,
    Pending,
    PendingFrontier,
    RuntimeFailure,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
)
from code_mode._engine._worker_death import ALONE, COLLATERAL, death_notices
from code_mode._engine.engine import Engine

from ..helpers import NO_REPLAY, SAFETY, GateDelegate, engine, request

WORKER_DIED = "exec runtime ended unexpectedly: the JavaScript worker process died"
KILLED = f"{WORKER_DIED} (killed by SIGKILL)"
BLOCKED = 'text("waiting"); await tools.block();'


async def blocked_cell(runtime: SessionRuntime, delegate: GateDelegate) -> str:
    """Start a cell that waits for a tool call forever; returns once it is waiting."""
    started = await runtime.execute(request(BLOCKED, ["block"]), PendingFrontier())
    await delegate.next_call()
    event = await started.initial_event()
    assert isinstance(event, Pending), event
    return started.cell_id


def pid_of(runtime: SessionRuntime) -> int | None:
    assert runtime._seat is not None
    return runtime._seat.worker_pid()


async def worker_gone(eng: Engine, pid: int) -> None:
    """Until the engine has handled the death of worker ``pid``."""
    assert eng._pool is not None
    (worker,) = [w for w in eng._pool.workers if w.pid == pid]
    with trio.fail_after(SAFETY):
        await worker.exited.wait()
    await trio.testing.wait_all_tasks_blocked()


@contextlib.asynccontextmanager
async def sessions_on_workers(
    delegates: list[GateDelegate], **settings: object
) -> AsyncIterator[tuple[Engine, list[SessionRuntime], contextlib.AsyncExitStack]]:
    """A process engine with ``settings`` and a session (without replay) for each
    delegate on it, closed before the engine, with the stack that holds them (for more
    sessions)."""
    async with engine("process", **settings) as eng, contextlib.AsyncExitStack() as stack:
        runtimes = [
            await stack.enter_async_context(SessionRuntime(d, NO_REPLAY, engine=eng))
            for d in delegates
        ]
        yield eng, runtimes, stack


# -- "shared" ------------------------------------------------------------------------


async def test_a_sessions_cells_stay_on_its_worker_and_sessions_spread_over_workers() -> None:
    delegates = [GateDelegate() for _ in range(3)]
    async with sessions_on_workers(delegates, worker_processes=3, warm_isolates=1) as (
        eng,
        runtimes,
        _,
    ):
        cells = []
        for runtime, delegate in zip(runtimes, delegates, strict=True):
            cells.append([await blocked_cell(runtime, delegate) for _ in range(2)])
        pids = [pid_of(runtime) for runtime in runtimes]
        assert None not in pids and len(set(pids)) == 3, pids  # one worker each
        assert eng._pool is not None
        for place in eng._pool.placer.places:  # each session's two cells on its own
            assert sorted(place.seats.values()) == [2]
        assert len(eng.warm_pools()) == 3  # each worker keeps its own warm isolate

        doomed = pids[0]
        assert doomed is not None
        os.kill(doomed, signal.SIGKILL)
        await worker_gone(eng, doomed)
        for cell_id in cells[0]:
            event = await runtimes[0].observe(cell_id, YieldAfter(SAFETY))
            assert event == Completed([], error_text=KILLED + COLLATERAL)
        # The other sessions' cells are untouched.
        for runtime, their_cells in zip(runtimes[1:], cells[1:], strict=True):
            for cell_id in their_cells:
                assert await runtime.terminate(cell_id) == Terminated([])
        # The first session moves to a new worker for its next cells.
        again = await runtimes[0].execute(request('text("moved")'), YieldAfter(SAFETY))
        assert await again.initial_event() == Completed([Text("moved")])
        assert pid_of(runtimes[0]) not in (None, *pids)
        assert pid_of(runtimes[1]) == pids[1]


async def test_a_new_session_goes_to_the_worker_with_the_fewest_sessions() -> None:
    delegates = [GateDelegate() for _ in range(5)]
    async with sessions_on_workers(delegates[1:4], worker_processes=2, warm_isolates=0) as (
        eng,
        runtimes,
        stack,
    ):
        for runtime, delegate in zip(runtimes, delegates[1:4], strict=True):
            await blocked_cell(runtime, delegate)
        # An idle session counts as much as a busy one: its cell ends, the session
        # stays where it is.
        await runtimes[0].terminate("1")
        async with SessionRuntime(delegates[0], NO_REPLAY, engine=eng) as leaving:
            await blocked_cell(leaving, delegates[0])
            first = [pid_of(runtime) for runtime in [*runtimes, leaving]]
            assert sorted(first.count(pid) for pid in set(first)) == [2, 2]
            left = pid_of(leaving)
        # That session is over: its worker has one session fewer.
        newcomer = await stack.enter_async_context(
            SessionRuntime(delegates[4], NO_REPLAY, engine=eng)
        )
        await blocked_cell(newcomer, delegates[4])
        assert pid_of(newcomer) == left
        assert pid_of(runtimes[0]) == first[0]


async def test_a_session_whose_worker_is_recycled_moves_on() -> None:
    async with (
        engine("process", worker_processes=1, warm_isolates=0, recycle_after_cells=2) as eng,
        SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as runtime,
    ):
        seen = []
        for n in range(4):
            started = await runtime.execute(request(f"text('{n}')"), YieldAfter(SAFETY))
            assert await started.initial_event() == Completed([Text(str(n))])
            seen.append(pid_of(runtime))
        # Cell 1 seats the session on the first worker; cell 2 is that worker's last
        # isolate (it retires), so the session has no place until cell 3 seats it on
        # a fresh worker, which cell 4 retires in turn.
        assert seen[0] is not None and seen[1] is None
        assert seen[2] not in (None, seen[0]) and seen[3] is None


# -- what the cells of a dead worker are told ----------------------------------------


async def test_the_running_program_is_told_apart_from_the_waiting_ones() -> None:
    waiting, spinning, other = GateDelegate(), GateDelegate(), GateDelegate()
    async with (
        engine("process", worker_processes=1, warm_isolates=0) as eng,
        SessionRuntime(waiting, NO_REPLAY, engine=eng) as a,
        SessionRuntime(spinning, NO_REPLAY, engine=eng) as b,
        SessionRuntime(other, NO_REPLAY, engine=eng) as c,
    ):
        # Round 1: one program spins while another waits on the same worker.
        parked = await blocked_cell(a, waiting)
        spin = await b.execute(request("while (true) {}"), YieldAfter(SAFETY))
        (pid,) = eng.worker_pids()
        os.kill(pid, signal.SIGKILL)
        assert await spin.initial_event() == Completed([], error_text=KILLED + ALONE)
        event = await a.observe(parked, YieldAfter(SAFETY))
        assert event == Completed([], error_text=KILLED + COLLATERAL)

        # Round 2, on the replacement worker: two programs spin at once.
        parked = await blocked_cell(a, waiting)
        spins = [
            await runtime.execute(request("while (true) {}"), YieldAfter(SAFETY))
            for runtime in (b, c)
        ]
        (pid,) = eng.worker_pids()
        os.kill(pid, signal.SIGKILL)
        both = f"{KILLED} while this program was running, as was one other program on that worker"
        for started in spins:
            assert await started.initial_event() == Completed([], error_text=both)
        event = await a.observe(parked, YieldAfter(SAFETY))
        assert event == Completed([], error_text=KILLED + COLLATERAL)


class _Sink:
    def __init__(self, running: bool) -> None:
        self.running = running

    def on_batch(self, text: str | None) -> None: ...

    def on_task(self, tag: int, outcome: str, detail: str) -> None: ...

    def on_crash(self, message: str) -> None: ...

    def evaluating(self) -> bool:
        return self.running


def test_each_cell_of_a_dead_worker_is_told_how_many_programs_were_running() -> None:
    sinks = [_Sink(running) for running in (True, False, True, True)]
    notices = dict(death_notices(WORKER_DIED + " (x)", sinks))
    assert notices[sinks[1]] == f"{WORKER_DIED} (x){COLLATERAL}"
    for sink in (sinks[0], sinks[2], sinks[3]):
        assert notices[sink] == (
            f"{WORKER_DIED} (x) while this program was running, as were 2 other programs on "
            "that worker"
        )
    (alone,) = death_notices(WORKER_DIED + " (x)", [_Sink(True)])
    assert alone[1] == f"{WORKER_DIED} (x){ALONE}"


# -- "exclusive" ---------------------------------------------------------------------


async def test_exclusive_placement_gives_each_busy_session_a_worker_of_its_own() -> None:
    delegates = [GateDelegate() for _ in range(3)]
    async with (
        engine("process", worker_processes=2, session_placement="exclusive") as eng,
        contextlib.AsyncExitStack() as stack,
    ):
        one, two, three = [
            await stack.enter_async_context(SessionRuntime(d, NO_REPLAY, engine=eng))
            for d in delegates
        ]
        first = [await blocked_cell(one, delegates[0]) for _ in range(2)]  # both on its worker
        await blocked_cell(two, delegates[1])
        assert pid_of(one) is not None and pid_of(two) is not None
        assert pid_of(one) != pid_of(two)
        assert eng._pool is not None
        assert sorted(n for p in eng._pool.placer.places for n in p.seats.values()) == [1, 2]

        # Both workers serve a session: the third session's cell waits for one.
        got: list[str] = []

        async def third() -> None:
            got.append(await blocked_cell(three, delegates[2]))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(third)
            await trio.testing.wait_all_tasks_blocked()
            assert got == [] and pid_of(three) is None
            freed = pid_of(one)
            for cell_id in first:  # the first session's cells end: its worker is free
                await one.terminate(cell_id)
        assert len(got) == 1
        assert pid_of(three) == freed and pid_of(one) is None

        # A worker's death ends the cells of its one session only.
        doomed = pid_of(three)
        assert doomed is not None
        os.kill(doomed, signal.SIGKILL)
        await worker_gone(eng, doomed)
        event = await three.observe(got[0], YieldAfter(SAFETY))
        assert event == Completed([], error_text=KILLED + COLLATERAL)
        assert pid_of(two) is not None and pid_of(two) in eng.worker_pids()


async def test_an_exclusive_wait_for_a_worker_is_bounded() -> None:
    busy = GateDelegate()
    async with (
        engine(
            "process", worker_processes=1, session_placement="exclusive", worker_wait_timeout=0.2
        ) as eng,
        SessionRuntime(busy, NO_REPLAY, engine=eng) as holder,
        SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as latecomer,
    ):
        held = await blocked_cell(holder, busy)
        with trio.fail_after(SAFETY):
            with pytest.raises(RuntimeFailure, match=r"at capacity.*worker_wait_timeout"):
                await latecomer.execute(request('text("late")'), YieldAfter(SAFETY))
        await holder.terminate(held)
        started = await latecomer.execute(request('text("now")'), YieldAfter(SAFETY))
        assert await started.initial_event() == Completed([Text("now")])


async def test_a_waiting_cell_that_is_cancelled_leaves_the_queue() -> None:
    busy = GateDelegate()
    async with (
        engine("process", worker_processes=1, session_placement="exclusive") as eng,
        SessionRuntime(busy, NO_REPLAY, engine=eng) as holder,
        SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as quitter,
        SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as patient,
    ):
        held = await blocked_cell(holder, busy)
        with trio.move_on_after(0.1) as gave_up:
            await quitter.execute(request('text("gave up")'), YieldAfter(SAFETY))
        assert gave_up.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()  # the abandoned cell's task gives up
        assert eng._pool is not None and not eng._pool.placer._waiting
        await holder.terminate(held)
        started = await patient.execute(request('text("served")'), YieldAfter(SAFETY))
        assert await started.initial_event() == Completed([Text("served")])


def test_engine_config_validates_the_placement_fields() -> None:
    assert EngineConfig().session_placement == "shared"
    with pytest.raises(ValueError, match="session_placement"):
        EngineConfig(session_placement="alone")  # type: ignore[arg-type]
    for bad in (0, -1, math.inf):
        with pytest.raises(ValueError, match=r"EngineConfig\.worker_wait_timeout"):
            EngineConfig(worker_wait_timeout=bad)
