"""Soak: thousands of cells in one session must not leak memory (``nox -s soak``).

Marked ``slow`` (excluded from the default run by ``addopts``). One session per
isolation mode runs a warm-up (200 sequential cells and one round of 200 concurrent
ones), then 5,000 cells one after the other and 200 at once, every cell making a tool
call, a notification and a store. The resident memory of this process plus its worker
processes, measured after the warm-up and at the end, must grow by less than 20 %.
"""

from __future__ import annotations

import gc
import os
import time

import pytest
import trio

from code_mode import (
    JSON,
    CellId,
    Completed,
    NestedToolCall,
    SessionRuntime,
    Text,
    YieldAfter,
)
from code_mode._v8 import _native

from ..helpers import child_pids, config, engine, request

SEQUENTIAL = 5_000
CONCURRENT = 200
WARM_UP = 200
MAX_GROWTH = 0.20
PAGE = os.sysconf("SC_PAGE_SIZE")

SOURCE = """
const r = await tools.echo({ i: N, pad: "x".repeat(1000) });
notify("cell " + r.i);
store("last", r.i);
text(r.i);
"""


class SoakDelegate:
    def __init__(self) -> None:
        self.calls = 0
        self.notifications = 0
        self.closed = 0

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        self.calls += 1
        await trio.lowlevel.checkpoint()
        return call.input

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        self.notifications += 1

    async def cell_closed(self, cell_id: CellId) -> None:
        self.closed += 1


def rss_of(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except OSError:  # the process is gone
        return 0


def resident() -> tuple[int, int]:
    """(RSS of this process, RSS of its child processes), in bytes."""
    gc.collect()
    return rss_of("self"), sum(rss_of(pid) for pid in child_pids())


async def one_cell(runtime: SessionRuntime, n: int) -> None:
    started = await runtime.execute(request(SOURCE.replace("N", str(n)), ["echo"]), YieldAfter(60))
    assert await started.initial_event() == Completed([Text(str(n))])


async def concurrently(runtime: SessionRuntime, first: int) -> None:
    async with trio.open_nursery() as nursery:
        for n in range(first, first + CONCURRENT):
            nursery.start_soon(one_cell, runtime, n)


def mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


@pytest.mark.slow
async def test_thousands_of_cells_do_not_grow_memory(isolation: str) -> None:
    delegate = SoakDelegate()
    isolates_before = _native.live_isolate_count()
    begun = time.monotonic()
    async with (
        engine(isolation) as own_engine,
        SessionRuntime(delegate, config(isolation), engine=own_engine) as runtime,
    ):
        with trio.fail_after(600):
            for n in range(WARM_UP):
                await one_cell(runtime, n)
            await concurrently(runtime, WARM_UP)
            host_before, workers_before = resident()
            warmed = time.monotonic()

            for n in range(SEQUENTIAL):
                await one_cell(runtime, n)
            sequential_done = time.monotonic()
            await concurrently(runtime, SEQUENTIAL)
            host_after, workers_after = resident()
            finished = time.monotonic()
        last = await runtime.execute(request('text(load("last"))'), YieldAfter(60))
        assert (await last.initial_event()).content_items[0].text.isdigit()  # type: ignore[union-attr]

    cells = WARM_UP + CONCURRENT + SEQUENTIAL + CONCURRENT
    assert delegate.calls == delegate.notifications == cells
    assert delegate.closed == cells + 1
    assert _native.live_isolate_count() == isolates_before
    before, after = host_before + workers_before, host_after + workers_after
    print(
        f"\nsoak[{isolation}]: warm-up {warmed - begun:.1f} s; "
        f"{SEQUENTIAL} sequential cells {sequential_done - warmed:.1f} s "
        f"({(sequential_done - warmed) / SEQUENTIAL * 1000:.2f} ms/cell); "
        f"{CONCURRENT} concurrent {finished - sequential_done:.2f} s\n"
        f"  RSS after warm-up: host {mib(host_before)} + workers {mib(workers_before)}"
        f" = {mib(before)}\n"
        f"  RSS at the end:    host {mib(host_after)} + workers {mib(workers_after)}"
        f" = {mib(after)}  ({(after - before) / before:+.1%})"
    )
    assert after < before * (1 + MAX_GROWTH)
    assert host_after < host_before * (1 + MAX_GROWTH)
