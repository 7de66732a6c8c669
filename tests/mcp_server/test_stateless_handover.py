"""A draining server hands its stateless cells over to another (SIGTERM with a shared store).

Two servers in this test process share one real Redis. Server A drains, as on SIGTERM,
while one of its cells is running; A hands the cell over rather than waiting for it:
the cell's tool call in flight finishes on A (a call still running after
``ServerLimits.handover_grace`` is cancelled and runs again on B), no new call starts
on A, A retires from the store's registry, and B resumes the cell at once from its
journal copy."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from mcp import Client

from code_mode import tool
from code_mode._engine.isolate import Isolate
from code_mode.mcp_server import CodeModeMcpServer, ServerLimits
from code_mode.mcp_server.store import Store

from .http_support import COUNTS, ENTERED, GATES, count, hold, outputs, serving_on, texts
from .store.redis_server import RedisServer

SAFETY = 60
RUNNING = re.compile(r"Script running with cell ID (\S+)\n")
HEARTBEAT = 3.0  # seconds: longer than a hand-over takes, so only retiring makes A dead

PROGRAM = """// @exec: {"yield_time_ms": 50}
text("started");
const a = await tools.count({name: "once"});
const h = await tools.hold({name: "handover"});
const after = await tools.count({name: "after"});
text(`done ${a} ${h} ${after}`);
"""


ON_B: dict[str, int] = {}
"""The calls of ``count`` that ran on server B, by name."""


async def _count_on_b(name: str) -> int:
    ON_B[name] = ON_B.get(name, 0) + 1
    return await count(name)


count_on_b = tool(_count_on_b, name="count")
"""B's ``count``: it also says it ran on B."""


@asynccontextmanager
async def two_servers(
    url: str, limits: ServerLimits | None = None
) -> AsyncIterator[tuple[CodeModeMcpServer, Client, Client, Store]]:
    """Server A (with ``limits``, to be drained) and B on the store at ``url``: A, a
    client of each, and B's store."""
    async with (
        serving_on(url, [count_on_b, hold], heartbeat_ttl=HEARTBEAT) as (_, b, b_store),
        serving_on(url, [count, hold], heartbeat_ttl=HEARTBEAT, limits=limits) as (a_server, a, _),
    ):
        yield a_server, a, b, b_store


@pytest.fixture
def quiescing(monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """Set when a cell's hand-over begins (``Isolate.quiesce``): the test task runs
    after that task waits, when no new tool call starts on the cell's server."""
    began = trio.Event()
    original = Isolate.quiesce

    async def quiesce(self: Isolate) -> None:
        began.set()
        await original(self)

    monkeypatch.setattr(Isolate, "quiesce", quiesce)
    return began


def reset(*names: str) -> None:
    COUNTS.clear()
    ON_B.clear()
    for name in names:
        ENTERED[name] = trio.Event()
        GATES[name] = trio.Event()


async def started_cell(client: Client, code: str) -> str:
    started = await client.call_tool("exec", {"code": code})
    running = RUNNING.match(texts(started)[0])
    assert running is not None, texts(started)
    assert outputs(started) == ["started"], texts(started)
    return running.group(1)


async def test_calls_in_flight_finish_then_the_cell_moves(
    redis_server: RedisServer, quiescing: trio.Event
) -> None:
    reset("handover")
    with trio.fail_after(SAFETY):
        async with two_servers(redis_server.url) as (a_server, a, b, b_store):
            cell = await started_cell(a, PROGRAM)
            await ENTERED["handover"].wait()  # `hold` is in flight on A
            async with trio.open_nursery() as nursery:
                nursery.start_soon(a_server.drain)
                await quiescing.wait()
                # The drain waits for `hold`; the program's next call is not started
                # on A once `hold` answers.
                GATES["handover"].set()
            assert a_server.session_count == 0
            # Retired at once (its heartbeat has not lapsed): dead, or claimed already.
            record = await b_store.cell(cell)
            assert record is not None
            name = a_server._stateless.server
            assert name in await b_store.dead_servers() or record.server != name
            done = await b.call_tool("wait", {"cell_id": cell, "yield_time_ms": 20_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            assert outputs(done) == ["done 1 handover open 1"], texts(done)
            # Each call ran once: `hold` on A, `count({name: "after"})` on B.
            assert COUNTS == {"once": 1, "handover": 1, "after": 1}, COUNTS
            assert ON_B == {"after": 1}, ON_B


async def test_a_call_running_past_the_grace_runs_again_where_the_cell_resumes(
    redis_server: RedisServer,
) -> None:
    reset("handover")
    limits = ServerLimits(handover_grace=0.2)
    with trio.fail_after(SAFETY):
        async with two_servers(redis_server.url, limits) as (a_server, a, b, _):
            cell = await started_cell(a, PROGRAM)
            await ENTERED["handover"].wait()
            ENTERED["handover"] = trio.Event()
            await a_server.drain()  # `hold` never answers on A: cancelled after 0.2 s
            await ENTERED["handover"].wait()  # run again on B, once
            GATES["handover"].set()
            done = await b.call_tool("wait", {"cell_id": cell, "yield_time_ms": 20_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            assert outputs(done) == ["done 1 handover open 1"], texts(done)
            assert COUNTS == {"once": 1, "handover": 2, "after": 1}, COUNTS
            assert ON_B == {"after": 1}, ON_B


async def test_an_exec_in_progress_when_the_drain_begins_is_handed_over(
    redis_server: RedisServer,
) -> None:
    # The exec's first step is running when A drains: the hand-over waits for it to
    # register its cell, so the cell is A's when B claims A's cells, never after.
    reset("first")
    program = """// @exec: {"yield_time_ms": 20000}
    const f = await tools.hold({name: "first"});
    text(f);
    yield_control();
    const after = await tools.count({name: "after"});
    text(`done ${after}`);
    """
    with trio.fail_after(SAFETY):
        async with two_servers(redis_server.url) as (a_server, a, b, _):
            async with trio.open_nursery() as nursery:
                results: list[str] = []

                async def run_exec() -> None:
                    started = await a.call_tool("exec", {"code": program})
                    results.extend(texts(started))
                    results.extend(outputs(started))

                nursery.start_soon(run_exec)
                await ENTERED["first"].wait()
                nursery.start_soon(a_server.drain)
                await trio.testing.wait_all_tasks_blocked()
                assert a_server.draining  # (its first step) and waiting for the exec
                GATES["first"].set()
            running = RUNNING.match(results[0])
            assert running is not None, results
            assert results[1:] == ["first open"], results
            done = await b.call_tool("wait", {"cell_id": running.group(1), "yield_time_ms": 20_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            assert outputs(done) == ["done 1"], texts(done)
            assert COUNTS == {"first": 1, "after": 1}, COUNTS


PARKED = """// @exec: {"yield_time_ms": 50}
text("started");
await tools.hold({name: "handover"});
await tools.hold({name: "parked"});
text("never");
"""


async def test_a_terminate_sent_during_the_hand_over_ends_the_cell(
    redis_server: RedisServer, quiescing: trio.Event
) -> None:
    reset("handover", "parked")
    with trio.fail_after(SAFETY):
        async with two_servers(redis_server.url) as (a_server, a, b, _):
            cell = await started_cell(a, PARKED)
            await ENTERED["handover"].wait()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(a_server.drain)
                await quiescing.wait()  # A waits for `hold` before it moves the cell
                stopped = await b.call_tool("wait", {"cell_id": cell, "terminate": True})
                GATES["handover"].set()
            assert texts(stopped)[0].startswith("Script terminated\n"), texts(stopped)
            assert "parked" not in COUNTS  # stopped on A, never resumed
            spent = await b.call_tool("wait", {"cell_id": cell})
            assert spent.is_error and f"exec cell {cell} not found" in texts(spent)[-1]


async def test_a_terminate_sent_before_the_cell_is_resumed_reaches_it(
    redis_server: RedisServer,
) -> None:
    # A stops without a word; the terminate, sent to A, moves with A's cells to B,
    # which receives it before it has resumed the cell, and carries it out after.
    reset("handover", "parked")
    with trio.fail_after(SAFETY):
        async with serving_on(redis_server.url, [count, hold], heartbeat_ttl=0.6) as (_, b, _):
            async with serving_on(redis_server.url, [count, hold], heartbeat_ttl=0.6) as (_, a, _):
                cell = await started_cell(a, PARKED)
                await ENTERED["handover"].wait()
                ENTERED["handover"] = trio.Event()
                # Not a drain: A's nursery is cancelled, its heartbeat lapses.
            stopped = await b.call_tool("wait", {"cell_id": cell, "terminate": True})
            assert texts(stopped)[0].startswith("Script terminated\n"), texts(stopped)
            assert "parked" not in COUNTS
