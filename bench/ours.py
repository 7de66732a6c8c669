"""The code_mode side of each benchmark (trio).

Every function here is ``async`` and meant for ``trio.run``; each opens its own
:class:`~code_mode.SessionRuntime` (with the given ``RuntimeConfig.isolation`` mode) so
benchmarks do not disturb one another. Times are ``time.perf_counter`` seconds.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import attrs
import trio

from code_mode import (
    JSON,
    CellId,
    Completed,
    EngineConfig,
    ExecuteRequest,
    NestedToolCall,
    Pending,
    PendingFrontier,
    RuntimeConfig,
    SessionRuntime,
    Terminated,
    Text,
    ToolDefinition,
    ToolKind,
    ToolName,
    YieldAfter,
    Yielded,
)

from .measurement import BenchError, CallRun, expect
from .stats import tree_cpu_seconds, tree_thread_waits, waits_between

ECHO = ToolDefinition(
    name="echo",
    tool_name=ToolName("echo"),
    description="Returns its input.",
    kind=ToolKind.FUNCTION,
)
BLOCK = ToolDefinition(
    name="block",
    tool_name=ToolName("block"),
    description="Never returns (until cancelled).",
    kind=ToolKind.FUNCTION,
)

#: B3 keeps 1000 tool calls in flight in one cell; the default limit is 128.
MAX_OUTSTANDING = 4096

#: The mode name used when ``RuntimeConfig`` has no ``isolation`` field.
DEFAULT_MODE = "default"


def isolation_modes() -> list[str]:
    """The isolation modes to measure, the default engine's first."""
    if "isolation" not in attrs.fields_dict(RuntimeConfig):
        return [DEFAULT_MODE]
    default = str(attrs.fields_dict(EngineConfig)["isolation"].default)
    return [default] + [mode for mode in ("process", "thread") if mode != default]


#: Joins a mode and a changed ``RuntimeConfig`` field in a side's name:
#: ``process+max_journal_chars=0`` (``python -m bench.run --also-with``).
VARIANT = "+"


def variant_side(mode: str, setting: str) -> str:
    """The side measuring ``mode`` with one ``RuntimeConfig`` field changed
    (``setting`` is ``FIELD=JSON``); raises ``ValueError`` naming a bad setting."""
    field, _, value = setting.partition("=")
    if field not in attrs.fields_dict(RuntimeConfig) or field == "isolation":
        raise ValueError(f"not a RuntimeConfig field to vary: {field!r}")
    try:
        json.loads(value)
    except json.JSONDecodeError:
        raise ValueError(f"{setting!r}: the value must be JSON, e.g. {field}=0") from None
    return f"{mode}{VARIANT}{setting}"


def config(side: str = DEFAULT_MODE) -> RuntimeConfig:
    """The benchmark configuration: defaults, except the tool-call limit, the mode and
    any fields a variant side changes (:func:`variant_side`)."""
    isolation, *settings = side.split(VARIANT)
    options: dict[str, Any] = {"max_outstanding_tool_calls": MAX_OUTSTANDING}
    if isolation != DEFAULT_MODE:
        options["isolation"] = isolation
    for setting in settings:
        field, _, value = setting.partition("=")
        options[field] = json.loads(value)
    return RuntimeConfig(**options)


#: Observe mode that waits for the end of a cell (no program here yields).
UNTIL_DONE = YieldAfter(600.0)

DONE = Completed(content_items=[Text("done")], error_text=None)


class BenchDelegate:
    """``echo`` returns its input, ``block`` waits until cancelled; optionally records
    the arrival time of every tool call."""

    def __init__(self) -> None:
        self.record = False
        self.call_times: list[float] = []
        #: call index -> snapshot of the thread waits when that call arrived
        self.waits_at: dict[int, dict[int, int] | None] = {}
        self.closed = 0
        self.closed_changed = trio.Event()

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        if self.record:
            if len(self.call_times) in self.waits_at:
                self.waits_at[len(self.call_times)] = tree_thread_waits()
            self.call_times.append(time.perf_counter())
        if call.tool_name.name == "block":
            await trio.sleep_forever()
        return call.input

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        return None

    async def cell_closed(self, cell_id: CellId) -> None:
        self.closed += 1
        self.closed_changed.set()
        self.closed_changed = trio.Event()

    async def wait_closed(self, count: int) -> None:
        while self.closed < count:
            await self.closed_changed.wait()


def request(source: str) -> ExecuteRequest:
    return ExecuteRequest(tool_call_id="bench", enabled_tools=[ECHO, BLOCK], source=source)


def sequential_source(calls: int) -> str:
    return f'for (let i = 0; i < {calls}; i++) await tools.echo({{ i }});\ntext("done");'


def parallel_source(calls: int) -> str:
    return (
        f"await Promise.all(Array.from({{ length: {calls} }}, (_, i) => tools.echo({{ i }})));\n"
        'text("done");'
    )


# -- B1 --------------------------------------------------------------------------------


async def cell_latency(
    cells: int,
    isolation: str = DEFAULT_MODE,
    warmup: int = 3,
    gap: float = 0.0,
    cpu: list[float] | None = None,
) -> list[float]:
    """B1: ``execute`` -> ``Completed`` of ``text("done")``, one session, cells run one
    after another: the next starts as soon as the previous one's event arrived, or
    ``gap`` seconds later (an agent's think time, during which the previous isolate is
    closed and a warm one prepared). With ``cpu``, appends the CPU time per cell of
    the whole process tree (worker processes included) over the measured cells."""
    samples: list[float] = []
    delegate = BenchDelegate()
    cpu_start = 0.0
    async with SessionRuntime(delegate, config=config(isolation)) as runtime:
        for index in range(warmup + cells):
            if index == warmup:
                cpu_start = tree_cpu_seconds()
            start = time.perf_counter()
            started = await runtime.execute(request('text("done");'), UNTIL_DONE)
            event = await started.initial_event()
            elapsed = time.perf_counter() - start
            expect(event, DONE)
            if index >= warmup:
                samples.append(elapsed)
            if gap > 0:
                await trio.sleep(gap)
        if cpu is not None and cells:
            cpu.append((tree_cpu_seconds() - cpu_start) / cells)
    return samples


# -- B2 / B3 ---------------------------------------------------------------------------


async def tool_calls(
    calls: int, reps: int, *, parallel: bool, isolation: str = DEFAULT_MODE, warmup: int = 1
) -> CallRun:
    """B2 (sequential ``await``) or B3 (``Promise.all``): ``calls`` echo calls per cell."""
    source = parallel_source(calls) if parallel else sequential_source(calls)
    delegate = BenchDelegate()
    per_call: list[float] = []
    gaps: list[float] = []
    waits_per_call: list[float] = []
    cpu_start = 0.0
    async with SessionRuntime(delegate, config=config(isolation)) as runtime:
        for index in range(warmup + reps):
            if index == warmup:
                cpu_start = tree_cpu_seconds()
            delegate.call_times = []
            # Between the first and the last call (the cell's isolate is alive then).
            delegate.waits_at = {0: None, calls - 1: None}
            delegate.record = True
            started = await runtime.execute(request(source), UNTIL_DONE)
            event = await started.initial_event()
            end = time.perf_counter()
            delegate.record = False
            expect(event, DONE)
            times = delegate.call_times
            if len(times) != calls:
                raise BenchError(f"expected {calls} tool calls, saw {len(times)}")
            if index < warmup:
                continue
            per_call.append((end - times[0]) / calls)
            first, last = delegate.waits_at[0], delegate.waits_at[calls - 1]
            if first is not None and last is not None and calls > 1:
                waits_per_call.append(waits_between(first, last) / (calls - 1))
            if not parallel:
                gaps.extend(later - earlier for earlier, later in itertools.pairwise(times))
        cpu = [(tree_cpu_seconds() - cpu_start) / (calls * reps)] if reps else []
    return CallRun(per_call, gaps, cpu, waits_per_call)


# -- B4 --------------------------------------------------------------------------------


async def terminate_latency(
    reps: int, isolation: str = DEFAULT_MODE, warmup: int = 3, spin: float = 0.005
) -> list[float]:
    """B4: ``terminate()`` of a cell spinning in ``while (true) {}`` until it returns
    ``Terminated``."""
    samples: list[float] = []
    delegate = BenchDelegate()
    async with SessionRuntime(delegate, config=config(isolation)) as runtime:
        for index in range(warmup + reps):
            started = await runtime.execute(request("while (true) {}"), YieldAfter(spin))
            expect(await started.initial_event(), Yielded(content_items=[]))
            start = time.perf_counter()
            event = await runtime.terminate(started.cell_id)
            elapsed = time.perf_counter() - start
            expect(event, Terminated(content_items=[]))
            if index >= warmup:
                samples.append(elapsed)
            await delegate.wait_closed(index + 1)
    return samples


# -- B5 --------------------------------------------------------------------------------


@attrs.frozen
class YieldRun:
    """Overshoot beyond the requested delay, for the cell and for a plain trio.sleep."""

    ours: list[float]
    sleep: list[float]


async def yield_punctuality(
    reps: int, isolation: str = DEFAULT_MODE, delay: float = 0.05, warmup: int = 2
) -> YieldRun:
    """B5: ``YieldAfter(delay)`` on a cell whose tool call is in flight (the delegate
    blocks), interleaved with ``trio.sleep(delay)`` as the baseline."""
    ours: list[float] = []
    sleep: list[float] = []
    delegate = BenchDelegate()
    async with SessionRuntime(delegate, config=config(isolation)) as runtime:
        started = await runtime.execute(
            request('await tools.block({});\ntext("done");'), PendingFrontier()
        )
        expect(await started.initial_event(), Pending([], ["tool-1"]))
        for index in range(warmup + reps):
            start = time.perf_counter()
            event = await runtime.observe(started.cell_id, YieldAfter(delay))
            elapsed = time.perf_counter() - start
            expect(event, Yielded(content_items=[]))
            start = time.perf_counter()
            await trio.sleep(delay)
            slept = time.perf_counter() - start
            if index >= warmup:
                ours.append(elapsed - delay)
                sleep.append(slept - delay)
        expect(await runtime.terminate(started.cell_id), Terminated(content_items=[]))
    return YieldRun(ours, sleep)
