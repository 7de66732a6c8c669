"""S3: what cells that survive their worker cost (``python -m bench.sessions --replay``).

* **The journal's memory.** N sessions each run one cell that makes K tool calls
  (each result about 120 characters of JSON) and then waits on a tool that does not
  answer yet. Measured: the host memory of the journals (every batch posted, the clock
  readings, the event fingerprints; Python object sizes, deep), per live cell and, by
  the difference between K=0 and K=10, per recorded tool result.
* **Time to resume N bystanders.** The worker all N cells run on is killed
  (``SIGKILL``); measured: the time from the kill until every cell has been replayed
  on a new worker and is waiting again on its unanswered tool (each replay re-runs the
  program from the start, its K results answered from the journal). N = 1, 20, 200;
  the cells get a small memory limit (32 MiB) and the engine an overcommit that admits
  all of them on one worker, so that one kill hits all N.

Each point runs in a fresh process.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from array import array
from typing import Any

MiB = 1024 * 1024

PROGRAM = """
for (let i = 0; i < {results}; i++) await tools.echo({{ i, pad: "x".repeat(100) }});
text("ready");
await tools.hold({{}});
text("done");
"""


class _Tools:
    """``echo`` answers at once with its input; ``hold`` waits for :meth:`release`."""

    def __init__(self) -> None:
        import trio

        self.held = 0
        self.gate = trio.Event()
        self.holding = trio.Event()

    async def invoke_tool(self, call: Any) -> Any:
        if call.tool_name.name == "hold":
            self.held += 1
            self.holding.set()
            await self.gate.wait()
        return call.input

    async def notify(self, call_id: str, cell_id: Any, text: str) -> None:
        return None

    async def cell_closed(self, cell_id: Any) -> None:
        return None


def _deep_size(journal: Any) -> int:
    size = sys.getsizeof(journal) + sys.getsizeof(journal.batches)
    size += sum(sys.getsizeof(batch) for batch in journal.batches)
    size += sys.getsizeof(journal.clock_readings) + 8 * len(journal.clock_readings)
    prints = journal._prints
    return size + (sys.getsizeof(prints) if isinstance(prints, array) else 0)


async def s3_child(bystanders: int, results: int) -> dict[str, Any]:
    import contextlib
    import gc

    import trio

    from code_mode import (
        Engine,
        EngineConfig,
        ExecuteRequest,
        Pending,
        PendingFrontier,
        RuntimeConfig,
        SessionRuntime,
        ToolDefinition,
        ToolKind,
        ToolName,
        YieldAfter,
    )
    from code_mode._engine.config import ISOLATE_RESERVE_BYTES, WORKER_RESERVE_BYTES
    from code_mode._engine.journal import Journal

    cell_limit = 32 * MiB
    budget = 2 * 1024 * MiB - WORKER_RESERVE_BYTES
    charge = cell_limit + ISOLATE_RESERVE_BYTES
    overcommit = max(1.0, math.ceil((bystanders + 2) * charge / budget))
    config = EngineConfig(worker_processes=1, worker_memory_overcommit=overcommit)
    tools = [
        ToolDefinition(name=n, tool_name=ToolName(n), description=n, kind=ToolKind.FUNCTION)
        for n in ("echo", "hold")
    ]
    request = ExecuteRequest(
        tool_call_id="call-1", enabled_tools=tools, source=PROGRAM.format(results=results)
    )
    async with Engine(config) as engine, contextlib.AsyncExitStack() as stack:
        delegates = [_Tools() for _ in range(bystanders)]
        runtimes = [
            await stack.enter_async_context(
                SessionRuntime(d, RuntimeConfig(memory_limit_bytes=cell_limit), engine=engine)
            )
            for d in delegates
        ]
        cells = []
        for runtime, delegate in zip(runtimes, delegates, strict=True):
            started = await runtime.execute(request, PendingFrontier())
            await started.initial_event()
            await delegate.holding.wait()
            event = await runtime.observe(started.cell_id, PendingFrontier())
            if not isinstance(event, Pending) or delegate.held != 1:
                raise RuntimeError(f"cell did not wait on its tool: {event}")
            cells.append(started.cell_id)
        gc.collect()
        journals = [o for o in gc.get_objects() if isinstance(o, Journal) and o.batches]
        journal_bytes = sum(_deep_size(j) for j in journals)
        (pid,) = engine.worker_pids()
        (worker,) = [w for w in engine._pool.workers if w.pid == pid]  # type: ignore[union-attr]
        begun = time.perf_counter()
        os.kill(pid, signal.SIGKILL)
        await worker.exited.wait()
        for runtime, cell in zip(runtimes, cells, strict=True):
            event = await runtime.observe(cell, PendingFrontier())
            if not isinstance(event, Pending):
                raise RuntimeError(f"cell not resumed: {event}")
        resumed = time.perf_counter() - begun
        repeated = sum(d.held for d in delegates) - bystanders
        for delegate in delegates:
            delegate.gate.set()
        errors = []
        for runtime, cell in zip(runtimes, cells, strict=True):
            with trio.fail_after(120):
                end = await runtime.observe(cell, YieldAfter(60))
            errors.append(end.error_text)
    return {
        "bystanders": bystanders,
        "results": results,
        "journals": len(journals),
        "journal_bytes_per_cell": journal_bytes / max(1, len(journals)),
        "resume_s": resumed,
        "hold_calls_repeated": repeated,
        "errors": [e for e in errors if e is not None][:3],
        "overcommit": overcommit,
    }
