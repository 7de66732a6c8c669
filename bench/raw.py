"""The baselines: mini-racer used directly through its public API.

B1 uses the synchronous API (``MiniRacer()``, ``eval``, ``close``); the others run in
asyncio, where mini-racer's callbacks (``wrap_py_function``) and cancellation
(``eval_cancelable``) live. Times are ``time.perf_counter`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from py_mini_racer import MiniRacer

from .measurement import BenchError, CallRun
from .stats import tree_cpu_seconds, tree_thread_waits, waits_between


def sequential_source(calls: int) -> str:
    return f'(async () => {{ for (let i = 0; i < {calls}; i++) await echo(i); return "done"; }})()'


def parallel_source(calls: int) -> str:
    return (
        "(async () => { await Promise.all(Array.from({ length: "
        f'{calls} }}, (_, i) => echo(i))); return "done"; }})()'
    )


def install_global(racer: MiniRacer, name: str, value: Any) -> None:
    """``globalThis[name] = value`` through mini-racer's object API."""
    global_object: Any = racer.eval("this")
    global_object[name] = value


async def open_racer(
    stack: contextlib.AsyncExitStack, name: str, function: Callable[..., Awaitable[Any]]
) -> MiniRacer:
    """A new ``MiniRacer`` whose global ``name`` calls the async Python ``function``
    (``wrap_py_function``); both are closed when ``stack`` closes."""
    racer = MiniRacer()  # in a running loop: uses it (no thread of its own)
    stack.callback(racer.close)
    wrapped = await stack.enter_async_context(racer.wrap_py_function(function))
    install_global(racer, name, wrapped)
    return racer


# -- B1 --------------------------------------------------------------------------------


def cell_latency(
    cells: int, warmup: int = 3, gap: float = 0.0, cpu: list[float] | None = None
) -> list[float]:
    """B1 baseline: ``MiniRacer()`` + ``eval('"done"')`` + ``close()``, one after the
    other, or ``gap`` seconds apart. With ``cpu``, appends the CPU time per cell."""
    samples: list[float] = []
    cpu_start = 0.0
    for index in range(warmup + cells):
        if index == warmup:
            cpu_start = tree_cpu_seconds()
        if gap > 0 and index > 0:
            time.sleep(gap)
        start = time.perf_counter()
        racer = MiniRacer()
        value = racer.eval('"done"')
        racer.close()
        elapsed = time.perf_counter() - start
        if value != "done":
            raise BenchError(f"mini-racer returned {value!r}")
        if index >= warmup:
            samples.append(elapsed)
    if cpu is not None and cells:
        cpu.append((tree_cpu_seconds() - cpu_start) / cells)
    return samples


# -- B2 / B3 ---------------------------------------------------------------------------


async def _tool_calls(calls: int, reps: int, parallel: bool, warmup: int) -> CallRun:
    times: list[float] = []
    per_call: list[float] = []
    gaps: list[float] = []
    waits_per_call: list[float] = []

    waits_at: dict[int, dict[int, int]] = {}

    async def echo(value: Any) -> Any:
        if len(times) in (0, calls - 1):
            waits_at[len(times)] = tree_thread_waits()
        times.append(time.perf_counter())
        return value

    async with contextlib.AsyncExitStack() as stack:
        racer = await open_racer(stack, "echo", echo)
        code = parallel_source(calls) if parallel else sequential_source(calls)
        cpu_start = 0.0
        for index in range(warmup + reps):
            if index == warmup:
                cpu_start = tree_cpu_seconds()
            times.clear()
            waits_at.clear()
            promise: Any = racer.eval(code)
            result = await promise
            end = time.perf_counter()
            if result != "done" or len(times) != calls:
                raise BenchError(f"mini-racer loop returned {result!r} after {len(times)}")
            if index < warmup:
                continue
            per_call.append((end - times[0]) / calls)
            if calls > 1:
                waits = waits_between(waits_at[0], waits_at[calls - 1])
                waits_per_call.append(waits / (calls - 1))
            if not parallel:
                gaps.extend(later - earlier for earlier, later in itertools.pairwise(times))
        cpu = [(tree_cpu_seconds() - cpu_start) / (calls * reps)] if reps else []
    return CallRun(per_call, gaps, cpu, waits_per_call)


def tool_calls(calls: int, reps: int, *, parallel: bool, warmup: int = 1) -> CallRun:
    """B2/B3 baseline: the same loop with a ``wrap_py_function`` callback in asyncio."""
    return asyncio.run(_tool_calls(calls, reps, parallel, warmup))


# -- B4 --------------------------------------------------------------------------------


@attrs.frozen
class CancelRun:
    """``cancelled``: from ``task.cancel()`` until awaiting the task raised
    ``CancelledError``. ``confirmed``: until a following evaluation in the same context
    answered, i.e. until the JavaScript had really stopped."""

    cancelled: list[float]
    confirmed: list[float]


async def _cancel_latency(reps: int, warmup: int, spin: float) -> CancelRun:
    racer = MiniRacer()
    cancelled: list[float] = []
    confirmed: list[float] = []
    try:
        for index in range(warmup + reps):
            task = asyncio.ensure_future(racer.eval_cancelable("while (true) {}"))
            await asyncio.sleep(spin)
            start = time.perf_counter()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            stopped = time.perf_counter()
            if await racer.eval_cancelable("1") != 1:
                raise BenchError("mini-racer context unusable after cancellation")
            answered = time.perf_counter()
            if index >= warmup:
                cancelled.append(stopped - start)
                confirmed.append(answered - start)
    finally:
        racer.close()
    return CancelRun(cancelled, confirmed)


def cancel_latency(reps: int, warmup: int = 3, spin: float = 0.005) -> CancelRun:
    """B4 baseline: cancel ``eval_cancelable("while (true) {}")`` in asyncio."""
    return asyncio.run(_cancel_latency(reps, warmup, spin))
