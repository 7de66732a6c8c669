"""How many sessions one worker's death takes with it, under each placement.

What nothing prevents (a V8 bug, ``kill -9``) ends every cell of a worker process.
Twenty sessions each run two cells that wait on a tool call; the worker of the first
session is killed with ``SIGKILL``; every session whose cell failed counts as lost.
``"shared"`` placement (4 workers) must lose at most the sessions one worker holds,
``ceil(20 / 4)``; ``"exclusive"`` (a worker per busy session) exactly one. Each run is
a child process (20 worker processes, a kill), the orderings are events: each cell
is at its pending frontier before the kill, and the count is taken once the engine
has handled the death and every task has settled.
"""

from __future__ import annotations

import json
import math

import pytest

from ..native_child import run_child

SESSIONS = 20

CHILD = """
import contextlib, json, os, signal, sys
import attrs, trio, trio.testing
from code_mode import (
    Engine, EngineConfig, Pending, PendingFrontier, RuntimeConfig, SessionRuntime, YieldAfter,
)
from code_mode._engine._worker_death import COLLATERAL
from tests.helpers import GateDelegate, request

SESSIONS, CELLS = {sessions}, 2


async def main(placement, workers, replay):
    config = EngineConfig(worker_processes=workers, session_placement=placement)
    # 64 MiB cells: ten of them (and their isolates) fit a worker's memory budget.
    small = RuntimeConfig(memory_limit_bytes=64 * 1024 * 1024)
    runtime_config = small if replay else attrs.evolve(small, max_journal_chars=0)
    async with Engine(config) as eng, contextlib.AsyncExitStack() as stack:
        delegates = [GateDelegate(gates=["hold"]) for _ in range(SESSIONS)]
        runtimes = [
            await stack.enter_async_context(SessionRuntime(d, runtime_config, engine=eng))
            for d in delegates
        ]
        cells = []
        for index, runtime in enumerate(runtimes):
            for _ in range(CELLS):
                started = await runtime.execute(
                    request('await tools.hold(); text("done")', ["hold"]), PendingFrontier()
                )
                assert isinstance(await started.initial_event(), Pending)
                cells.append((index, started.cell_id))
        placed = {{runtime._seat.worker_pid() for runtime in runtimes}}
        ends = {{}}
        async with trio.open_nursery() as nursery:
            async def watch(index, cell_id):
                ends[(index, cell_id)] = await runtimes[index].observe(cell_id, YieldAfter(600))

            for index, cell_id in cells:
                nursery.start_soon(watch, index, cell_id)
            await trio.testing.wait_all_tasks_blocked()
            doomed = runtimes[0]._seat.worker_pid()
            (worker,) = [w for w in eng._pool.workers if w.pid == doomed]
            os.kill(doomed, signal.SIGKILL)
            await worker.exited.wait()
            await trio.testing.wait_all_tasks_blocked()
            failed = {{key: event for key, event in ends.items() if event.error_text}}
            for delegate in delegates:
                delegate.release("hold")
        lost = sorted({{index for index, _ in failed}})
        collateral = all(e.error_text.endswith(COLLATERAL) for e in failed.values())
        completed = sum(1 for e in ends.values() if not e.error_text and e.content_items)
        print(json.dumps({{"workers_used": len(placed), "sessions_lost": lost,
                          "cells_lost": len(failed), "completed": completed,
                          "collateral": collateral}}))


trio.run(main, sys.argv[1], int(sys.argv[2]), sys.argv[3] == "replay")
"""


def _outcome(placement: str, workers: int, replay: bool) -> dict[str, object]:
    script = CHILD.format(sessions=SESSIONS).replace(
        'trio.run(main, sys.argv[1], int(sys.argv[2]), sys.argv[3] == "replay")',
        f"trio.run(main, {placement!r}, {workers}, {replay})",
    )
    result = run_child(script, None, timeout=300)
    assert result.returncode == 0, result.describe()
    outcome: dict[str, object] = json.loads(result.output.strip().splitlines()[-1])
    print(f"{placement}, {workers} workers, replay {replay}: {outcome}")  # in the test log
    return outcome


@pytest.mark.parametrize(("placement", "workers"), [("shared", 4), ("exclusive", SESSIONS)])
def test_a_killed_worker_costs_no_session_anything_with_replay(
    placement: str, workers: int
) -> None:
    """The default: every cell of the killed worker was waiting, so each is replayed
    on another worker and completes once its tool call returns."""
    outcome = _outcome(placement, workers, replay=True)
    assert outcome["sessions_lost"] == [], outcome
    assert outcome["cells_lost"] == 0, outcome
    assert outcome["completed"] == 2 * SESSIONS, outcome


@pytest.mark.parametrize(("placement", "workers"), [("shared", 4), ("exclusive", SESSIONS)])
def test_a_killed_worker_ends_the_cells_of_as_few_sessions_as_the_placement_allows(
    placement: str, workers: int
) -> None:
    """Replay off (``RuntimeConfig.max_journal_chars=0``): the placement alone bounds
    what one death costs."""
    outcome = _outcome(placement, workers, replay=False)
    lost = outcome["sessions_lost"]
    assert isinstance(lost, list)
    assert 0 in lost, outcome  # the first session's worker was the one killed
    assert outcome["workers_used"] == min(workers, SESSIONS), outcome
    if placement == "shared":
        assert 1 <= len(lost) <= math.ceil(SESSIONS / workers), outcome
    else:
        assert lost == [0], outcome
    # Every lost cell was waiting on its tool call, and is told it was collateral;
    # every other cell completed once its tool call returned.
    assert outcome["collateral"], outcome
    assert outcome["cells_lost"] == 2 * len(lost), outcome
    assert outcome["completed"] == 2 * SESSIONS - outcome["cells_lost"], outcome
