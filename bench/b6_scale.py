"""B6, scale: many concurrent cells, each measured in a fresh child process.

A child runs one (side, cell count) pair, so the thread and memory numbers of one
measurement are not polluted by the allocator state of another, and a crash at a large
count (say V8 refusing the 500th isolate) is reported instead of killing the runner::

    python -m bench.b6_scale --side thread --cells 100 --calls 20

prints one JSON object on its last line of standard output. Two phases:

* **idle**: ``cells`` cells blocked on ``await new Promise(() => {})`` (reported as
  ``Pending``); OS threads and RSS are read while all of them are live, against the
  same process just before they were started (after one warm-up cell, so V8's shared
  platform threads already exist). Then all are terminated.
* **busy**: ``cells`` cells started at once, each doing ``calls`` sequential tool calls;
  wall time from the first ``execute`` until every cell reported ``Completed``, and the
  peak of threads/RSS above the pre-phase level, sampled every 5 ms.

``--side`` is an isolation mode (``process``, ``thread``; see
``RuntimeConfig.isolation``) or ``raw``: the same with mini-racer directly
(``MiniRacer()`` contexts in one asyncio loop, a ``wrap_py_function`` echo in each).
Threads and RSS are counted over this process and its descendants, so isolates living
in a worker process are included. :func:`bench_b6` is the runner's side: one child per
(cell count, side), and the summary the targets judge.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import trio

from .child_process import ChildFailed, python_module, run_child
from .engine_probe import wait_warm_pool_filled
from .rounds import with_baseline
from .sizes import Sizes
from .stats import MiB, tree_rss_bytes, tree_threads

SAMPLE_EVERY = 0.005


class _Peak:
    """Largest thread count and RSS seen, and the number of live cells then."""

    def __init__(self, live: Callable[[], int]) -> None:
        self._live = live
        self.threads = tree_threads()
        self.rss = tree_rss_bytes()
        self.live_at_peak = 0

    def sample(self) -> None:
        threads = tree_threads()
        rss = tree_rss_bytes()
        live = self._live()
        if threads > self.threads:
            self.threads = threads
            self.live_at_peak = live
        self.rss = max(self.rss, rss)


def _state() -> tuple[int, int]:
    gc.collect()
    return tree_threads(), tree_rss_bytes()


def _per_cell(delta: float, cells: int) -> float:
    return delta / cells if cells else 0.0


# -- ours ------------------------------------------------------------------------------


def _idle(
    created: float, cells: int, before: tuple[int, int], after: tuple[int, int]
) -> dict[str, Any]:
    """The idle phase's result; ``before`` / ``after`` are ``_state()`` readings."""
    threads, rss = after[0] - before[0], (after[1] - before[1]) / MiB
    return {
        "start_s": created,
        "threads_per_cell": _per_cell(threads, cells),
        "rss_per_cell_mib": _per_cell(rss, cells),
        "threads_delta": threads,
        "rss_delta_mib": rss,
    }


def _busy(
    wall: float, completed: int, failures: list[str], peak: _Peak, before: tuple[int, int]
) -> dict[str, Any]:
    """The busy phase's result; ``before`` is the ``_state()`` reading at its start."""
    return {
        "wall_s": wall,
        "completed": completed,
        "failures": failures,
        "peak_threads_delta": peak.threads - before[0],
        "peak_rss_delta_mib": (peak.rss - before[1]) / MiB,
        "live_at_peak": peak.live_at_peak,
    }


async def _settle(runtime: Any) -> None:
    """Wait until the engine's warm pool is full again: it refills after a cell got
    through its start, so without this "before" and "after" could hold different numbers
    of warm isolates."""
    await wait_warm_pool_filled(runtime.engine, timeout=10)


async def _ours(cells: int, calls: int, isolation: str) -> dict[str, Any]:
    from code_mode import Pending, PendingFrontier, SessionRuntime

    from .measurement import expect
    from .ours import DONE, UNTIL_DONE, BenchDelegate, config, request, sequential_source

    delegate = BenchDelegate()
    result: dict[str, Any] = {}
    async with SessionRuntime(delegate, config=config(isolation)) as runtime:
        warm = await runtime.execute(request('text("done");'), UNTIL_DONE)
        expect(await warm.initial_event(), DONE)
        await delegate.wait_closed(1)

        # Idle phase.
        await _settle(runtime)
        threads0, rss0 = _state()
        start = time.perf_counter()
        started = []
        for _ in range(cells):
            started.append(
                await runtime.execute(request("await new Promise(() => {});"), PendingFrontier())
            )
        for cell in started:
            expect(await cell.initial_event(), Pending([], []))
        created = time.perf_counter() - start
        await _settle(runtime)
        threads1, rss1 = _state()
        result["idle"] = _idle(created, cells, (threads0, rss0), (threads1, rss1))
        async with trio.open_nursery() as nursery:
            for cell in started:
                nursery.start_soon(runtime.terminate, cell.cell_id)
        await delegate.wait_closed(1 + cells)

        # Busy phase.
        await _settle(runtime)
        threads0, rss0 = _state()
        executed = 0
        completed = 0
        failures: list[str] = []
        peak = _Peak(lambda: executed - (delegate.closed - 1 - cells))

        async def wait_for(cell: Any) -> None:
            nonlocal completed
            event = await cell.initial_event()
            if event == DONE:
                completed += 1
            elif len(failures) < 5:
                failures.append(repr(event))

        async def sampler(cancel: trio.CancelScope) -> None:
            with cancel:
                while True:
                    peak.sample()
                    await trio.sleep(SAMPLE_EVERY)

        source = sequential_source(calls)
        sampling = trio.CancelScope()
        start = time.perf_counter()
        async with trio.open_nursery() as outer:
            outer.start_soon(sampler, sampling)
            async with trio.open_nursery() as nursery:
                for _ in range(cells):
                    cell = await runtime.execute(request(source), UNTIL_DONE)
                    executed += 1
                    nursery.start_soon(wait_for, cell)
            wall = time.perf_counter() - start
            sampling.cancel()
        result["busy"] = _busy(wall, completed, failures, peak, (threads0, rss0))
    return result


# -- raw mini-racer --------------------------------------------------------------------


async def _raw(cells: int, calls: int) -> dict[str, Any]:
    from py_mini_racer import MiniRacer

    from .raw import open_racer, sequential_source

    async def echo(value: Any) -> Any:
        return value

    MiniRacer().close()  # warm-up
    result: dict[str, Any] = {}

    # Idle phase.
    threads0, rss0 = _state()
    start = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(cells):
            racer = await open_racer(stack, "echo", echo)
            racer.eval("new Promise(() => {})")
        created = time.perf_counter() - start
        threads1, rss1 = _state()
    result["idle"] = _idle(created, cells, (threads0, rss0), (threads1, rss1))

    # Busy phase.
    threads0, rss0 = _state()
    live = 0
    peak = _Peak(lambda: live)
    completed = 0
    failures: list[str] = []
    stop = asyncio.Event()

    async def sampler() -> None:
        while not stop.is_set():
            peak.sample()
            await asyncio.sleep(SAMPLE_EVERY)

    async def finish(promise: Any) -> None:
        nonlocal completed, live
        try:
            value = await promise
        except Exception as error:
            value = error
        live -= 1
        if value == "done":
            completed += 1
        elif len(failures) < 5:
            failures.append(repr(value))

    sampling = asyncio.ensure_future(sampler())
    start = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        waiters = []
        code = sequential_source(calls)
        for _ in range(cells):
            racer = await open_racer(stack, "echo", echo)
            live += 1
            waiters.append(asyncio.ensure_future(finish(racer.eval(code))))
            await asyncio.sleep(0)
        await asyncio.gather(*waiters)
        wall = time.perf_counter() - start
        stop.set()
        await sampling
    result["busy"] = _busy(wall, completed, failures, peak, (threads0, rss0))
    return result


# -- parent side -----------------------------------------------------------------------


def measure_point(side: str, cells: int, calls: int, timeout: float) -> dict[str, Any]:
    """Run one measurement in a child process; never raises for a failing child."""
    command = python_module(
        "bench.b6_scale", "--side", side, "--cells", str(cells), "--calls", str(calls)
    )
    start = time.perf_counter()
    outcome: dict[str, Any] = {"side": side, "cells": cells, "calls": calls}
    try:
        data = run_child(command, timeout=timeout, what=f"B6 ({side}, {cells} cells) child")
    except ChildFailed as failure:
        if failure.returncode is not None:
            outcome["child_s"] = time.perf_counter() - start
        outcome.update(ok=False, error=failure.brief)
        return outcome
    outcome["child_s"] = time.perf_counter() - start
    busy = data["busy"]
    outcome.update(data)
    outcome["ok"] = busy["completed"] == cells
    if not outcome["ok"]:
        outcome["error"] = f"{busy['completed']}/{cells} completed: {busy['failures']}"
    return outcome


def bench_b6(
    sizes: Sizes, modes: Sequence[str], progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """B6: 1..500 concurrent cells; wall time, threads and RSS per live cell."""
    sides = with_baseline(modes)
    points: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for cells in sizes.b6_counts:
        for side in sides:
            point = measure_point(side, cells, sizes.b6_calls, sizes.b6_timeout)
            points[side].append(point)
            if progress is not None:
                status = "ok" if point["ok"] else f"FAILED ({point.get('error')})"
                progress(f"  B6 {side:8} {cells:4} cells: {status}")
    summary: dict[str, dict[str, Any]] = {}
    for side in sides:
        ok = [point for point in points[side] if point["ok"]]
        largest = max((point["cells"] for point in ok), default=0)
        at_largest = next((point for point in ok if point["cells"] == largest), None)
        summary[side] = {
            "largest_ok": largest,
            "rss_per_idle_cell_mib": (
                at_largest["idle"]["rss_per_cell_mib"] if at_largest is not None else math.nan
            ),
            "threads_per_live_cell": max(
                (point["idle"]["threads_per_cell"] for point in ok), default=math.nan
            ),
        }
    return {
        "id": "B6",
        "title": f"scale: concurrent cells, {sizes.b6_calls} tool calls each",
        "modes": list(modes),
        "sides": sides,
        "counts": list(sizes.b6_counts),
        "calls": sizes.b6_calls,
        "points": points,
        "summary": summary,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", required=True, help="raw, or an isolation mode")
    parser.add_argument("--cells", type=int, required=True)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    if args.side == "raw":
        result = asyncio.run(_raw(args.cells, args.calls))
    else:
        result = trio.run(_ours, args.cells, args.calls, args.side)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
