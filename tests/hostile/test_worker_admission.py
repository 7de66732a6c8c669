"""A worker's memory as a whole: admission by the cells' limits, the culprit alone, quarantine.

Each scenario runs in a child process (workers are taken to their resident-memory
limit). Cells that each stay within their own limit are admitted on a worker only
while their limits fit its budget (``EngineConfig.worker_memory_overcommit``), so
together they no longer take it past ``worker_memory_limit_bytes``. A program that does
take its worker past it with memory its own limit allows fails alone, naming the
limit, while its bystanders complete; its session is then quarantined on a worker of
its own (``EngineConfig.quarantine_after_deaths``).
"""

from __future__ import annotations

import json

from ..native_child import run_child

MiB = 1024 * 1024


#: What both child scripts begin with.
HEADER = """
import json
import trio
from code_mode import Engine, EngineConfig, PendingFrontier, RuntimeConfig, SessionRuntime
from code_mode import YieldAfter
from code_mode._engine._worker_process import resident_bytes
from tests.helpers import GateDelegate, request, start_holding

MiB = 1024 * 1024


# Workers whose cells are admitted only while their limits fit the budget.
def without_overcommit(processes, limit):
    return EngineConfig(
        worker_processes=processes, worker_memory_limit_bytes=limit, worker_memory_overcommit=1.0
    )
"""


def child_script(program: str, main: str) -> str:
    """A child script: ``HEADER``, ``PROGRAM`` (the JavaScript ``program``), then ``main``."""
    return HEADER + f"PROGRAM = {program!r}\n" + main


ADMISSION = child_script(
    # 56 MB of doubles on the heap, within the cell's 64 MiB limit; then wait.
    "const keep = []; for (let i = 0; i < 7; i++) keep.push(new Array(1e6).fill(1.5 + i));"
    "text('held'); await tools.hold();",
    """
async def main():
    config = without_overcommit(1, 640 * MiB)
    assert config.worker_memory_budget_bytes == 512 * MiB  # 5 cells of 64 + 32 MiB
    async with Engine(config) as eng:
        tools = GateDelegate(gates=["hold"])
        cell = RuntimeConfig(memory_limit_bytes=64 * MiB)
        async with SessionRuntime(tools, cell, engine=eng) as runtime:
            started, ends = [], []
            async def start():
                s = await runtime.execute(request(PROGRAM, ["hold"]), PendingFrontier())
                first = await s.initial_event()
                started.append(s)
                if type(first).__name__ == "Pending":
                    first = await runtime.observe(s.cell_id, YieldAfter(60))
                ends.append(first)  # those admitted after the release run to the end
            (pid,) = eng.worker_pids()
            async with trio.open_nursery() as nursery:
                for _ in range(9):
                    nursery.start_soon(start)
                with trio.fail_after(120):
                    while len(started) < 5:
                        await trio.sleep(0.05)
                # The others wait for memory: admitted as the first five end.
                for _ in range(20):
                    await trio.sleep(0.05)
                admitted_at_once = len(started)
                peak = resident_bytes(pid)
                tools.release("hold")
            print(json.dumps({
                "admitted_at_once": admitted_at_once, "cells": len(started),
                "errors": [e.error_text for e in ends], "peak": peak,
                "same_worker": eng.worker_pids()[:1] == [pid],
            }))


trio.run(main)
""",
)


def test_cells_within_their_limits_no_longer_take_the_worker_past_its_own() -> None:
    """Nine cells of one session, each holding 56 MB under a 64 MiB limit, on a worker
    of 640 MiB (eight such cells took it to 694 MiB, and it was killed): five run at once
    (their limits and isolates fill the budget of 512 MiB), the others wait for cells
    to end, and the worker is never killed."""
    result = run_child(ADMISSION, None, timeout=300)
    assert result.returncode == 0, result.describe()
    outcome = json.loads(result.output.strip().splitlines()[-1])
    assert outcome["admitted_at_once"] == 5, outcome
    assert outcome["cells"] == 9
    assert outcome["errors"] == [None] * 9, outcome
    assert outcome["same_worker"], outcome
    assert outcome["peak"] < 640 * MiB, outcome


CULPRIT = child_script(
    # 160 MB on the heap and 170 MB of ArrayBuffer: each within the 192 MiB limit,
    # together (with the worker's own memory) past the worker's 384 MiB; then it spins.
    "const keep = []; for (let i = 0; i < 20; i++) keep.push(new Array(1e6).fill(1.5 + i));"
    "const b = new Uint8Array(170e6); b.fill(1); for (;;) {}",
    """
async def main():
    config = without_overcommit(2, 384 * MiB)
    async with Engine(config) as eng:
        a_tools = GateDelegate(gates=["hold"])
        small = RuntimeConfig(memory_limit_bytes=64 * MiB)
        large = RuntimeConfig(memory_limit_bytes=192 * MiB)
        async with (
            SessionRuntime(a_tools, small, engine=eng) as a,
            SessionRuntime(GateDelegate(), large, engine=eng) as b,
        ):
            sa = await start_holding(a)
            await sa.initial_event()
            # B is placed on A's worker (the spare worker holds no session yet, but
            # B's session goes to the one with the fewest: force it beside A).
            b._seat._seat.place = a._seat._seat.place
            a._seat._seat.place.seats[b._seat._seat] = 0
            shared = a._seat.worker_pid()
            sb = await b.execute(request(PROGRAM), YieldAfter(120))
            end_b = await sb.initial_event()
            a_tools.release("hold")
            end_a = await a.observe(sa.cell_id, YieldAfter(60))
            # B's session is quarantined now: its next cell runs on a worker of its own.
            again = await b.execute(request('text("ok")'), YieldAfter(60))
            end_again = await again.initial_event()
            place = b._seat._seat.place
            print(json.dumps({
                "a": repr(end_a), "b": end_b.error_text, "again": repr(end_again),
                "quarantined": place is not None and place.quarantine,
                "b_worker": b._seat.worker_pid(), "a_worker": a._seat.worker_pid(),
                "shared": shared,
            }))


trio.run(main)
""",
)


def test_a_program_past_the_worker_limit_fails_alone_and_is_quarantined() -> None:
    result = run_child(CULPRIT, None, timeout=300)
    assert result.returncode == 0, result.describe()
    outcome = json.loads(result.output.strip().splitlines()[-1])
    # The bystander was replayed elsewhere and completed.
    assert outcome["a"] == "Completed(content_items=[Text(text='a2')], error_text=None)", outcome
    # The culprit, replayed alone, took that worker past the limit too: it fails alone.
    assert outcome["b"].startswith("exec cell exceeded the memory a worker process may use"), (
        outcome
    )
    assert outcome["b"].endswith(
        f"above the limit of {384 * MiB} bytes (EngineConfig.worker_memory_limit_bytes)"
    ), outcome
    # Two deaths of its making: its session now runs on a quarantine worker.
    assert outcome["again"] == "Completed(content_items=[Text(text='ok')], error_text=None)"
    assert outcome["quarantined"], outcome
    assert outcome["b_worker"] not in (None, outcome["a_worker"], outcome["shared"]), outcome
