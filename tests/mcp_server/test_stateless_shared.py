"""Several stateless servers sharing one real Redis, or one SQLite file: any server
answers any call.

Three servers run in this test process, each with its own store client on the same
redis-server (or file); each client call goes to the server a test names, so that a
``wait`` lands on another server than its ``exec``, as behind a round-robin balancer."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import mcp.types as types
import trio
from mcp import Client

from code_mode.mcp_server import CodeModeMcpServer
from code_mode.mcp_server.store import open_store
from code_mode.model_tools.adapters import MCP_META_SESSION

from .http_support import (
    COUNTS,
    ENTERED,
    GATES,
    count,
    gate,
    hold,
    http_server,
    outputs,
    serving_on,
    texts,
)
from .store.redis_server import RedisServer

SAFETY = 60
RUNNING = re.compile(r"Script running with cell ID (\S+)\n")


@asynccontextmanager
async def servers(url: str, count: int, heartbeat_ttl: float = 15.0) -> AsyncIterator[list[Client]]:
    """``count`` servers on the store at ``url``, a default client for each."""
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            store = await stack.enter_async_context(
                open_store(url, session_ttl=600, heartbeat_ttl=heartbeat_ttl)
            )
            server = CodeModeMcpServer(tools=[gate], store=store)
            endpoint = await stack.enter_async_context(http_server(server))
            clients.append(await stack.enter_async_context(Client(endpoint)))
        yield clients


def session_of(result: types.CallToolResult) -> str:
    session = (result.meta or {}).get(MCP_META_SESSION)
    assert isinstance(session, str), texts(result)
    assert f"\nSession: {session}\nOutput:\n" in texts(result)[0]
    return session


async def test_wait_and_stored_values_on_other_servers(shared_store: str) -> None:
    with trio.fail_after(SAFETY):
        async with servers(shared_store, 3) as (a, b, c):
            first = await a.call_tool("exec", {"code": 'store("n", 1); text("a")'})
            session = session_of(first)
            # Stored values read back on another server, changed there, read on a third.
            second = await b.call_tool(
                "exec",
                {"code": 'store("n", load("n") + 1); text(String(load("n")))', "session": session},
            )
            assert outputs(second) == ["2"]
            third = await c.call_tool(
                "exec", {"code": 'text(String(load("n")))', "session": session}
            )
            assert outputs(third) == ["2"]

            # A yielding program started on a; its waits land on b and c.
            GATES["shared"] = trio.Event()
            started = await a.call_tool(
                "exec",
                {
                    "code": '// @exec: {"yield_time_ms": 50}\n'
                    'text("one"); await tools.gate({name: "shared"}); text("two"); '
                    'store("n", 3); image("data:image/png;base64,iVBORw0KGgo=")',
                    "session": session,
                },
            )
            running = RUNNING.match(texts(started)[0])
            assert running is not None, texts(started)
            cell = running.group(1)
            assert outputs(started) == ["one"]
            quiet = await b.call_tool("wait", {"cell_id": cell, "yield_time_ms": 100})
            assert texts(quiet)[0].startswith(f"Script running with cell ID {cell}\n")
            assert session_of(quiet) == session
            assert outputs(quiet) == []  # nothing new since the exec's result
            GATES["shared"].set()
            done = await c.call_tool("wait", {"cell_id": cell, "yield_time_ms": 10_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            assert outputs(done) == ["two"]
            assert [block.type for block in done.content] == ["text", "image"]
            assert session_of(done) == session
            # The stored value the program wrote is the session's, on every server.
            read = await b.call_tool(
                "exec", {"code": 'text(String(load("n")))', "session": session}
            )
            assert outputs(read) == ["3"]
            # The handle is spent everywhere.
            for client in (a, b, c):
                spent = await client.call_tool("wait", {"cell_id": cell})
                assert spent.is_error and f"exec cell {cell} not found" in texts(spent)[-1]


async def test_terminate_reaches_the_running_server(shared_store: str) -> None:
    with trio.fail_after(SAFETY):
        async with servers(shared_store, 2) as (a, b):
            started = await a.call_tool(
                "exec",
                {"code": '// @exec: {"yield_time_ms": 50}\ntext("spin"); while (true) {}'},
            )
            running = RUNNING.match(texts(started)[0])
            assert running is not None, texts(started)
            stopped = await b.call_tool("wait", {"cell_id": running.group(1), "terminate": True})
            assert texts(stopped)[0].startswith("Script terminated\n"), texts(stopped)


async def test_the_cells_of_a_server_that_stopped_fail_clearly(shared_store: str) -> None:
    with trio.fail_after(SAFETY):
        async with (
            open_store(shared_store, session_ttl=600, heartbeat_ttl=0.6) as store,
            servers(shared_store, 1, heartbeat_ttl=0.6) as (b,),
        ):
            # A server that registered a cell, then stopped heartbeating (as a
            # SIGKILLed one does): another server claims the cell and ends it.
            first = await b.call_tool("exec", {"code": 'store("kept", 7)'})
            session = session_of(first)
            await store.heartbeat("ghost")
            cell = await store.register_cell(session, "ghost")
            await store.append_event(cell, '{"output": [{"text": "half"}]}')
            lost = await b.call_tool("wait", {"cell_id": cell, "yield_time_ms": 10_000})
            assert texts(lost)[0].startswith("Script failed\n"), texts(lost)
            assert outputs(lost)[0] == "half"
            assert "stopped before the program ended" in texts(lost)[-1]
            assert session_of(lost) == session
            kept = await b.call_tool(
                "exec", {"code": 'text(String(load("kept")))', "session": session}
            )
            assert outputs(kept) == ["7"]


async def test_a_store_outage_fails_calls_clearly_and_cells_catch_up(
    redis_server: RedisServer,
) -> None:
    GATES["outage"] = trio.Event()
    with trio.fail_after(SAFETY):
        async with servers(redis_server.url, 1) as (a,):
            started = await a.call_tool(
                "exec",
                {
                    "code": '// @exec: {"yield_time_ms": 50}\n'
                    'text("before"); await tools.gate({name: "outage"}); text("after")'
                },
            )
            running = RUNNING.match(texts(started)[0])
            assert running is not None, texts(started)
            redis_server.pause()
            try:
                failed = await a.call_tool("wait", {"cell_id": running.group(1)})
                assert failed.is_error
                (message,) = texts(failed)
                assert message.startswith("code mode could not reach its store: the store redis://")
                assert "did not answer" in message and "s3cret-Pw" not in message
                GATES["outage"].set()  # the program ends while the store is away
                await trio.sleep(0.5)
            finally:
                redis_server.resume()
            # Back: the server is alive and the cell's end caught up in the store.
            done = await a.call_tool("wait", {"cell_id": running.group(1), "yield_time_ms": 20_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            assert outputs(done) == ["after"]


RESUMED = """// @exec: {"yield_time_ms": 50}
const r = Math.random();
const t = Date.now();
text(`r ${r} ${t}`);
const a = await tools.count({name: "once"});
text(`a ${a}`);
await new Promise((resolve) => setTimeout(resolve, 20));
const h = await tools.hold({name: "resume"});
store("kept", {r, a, h});
text(`done ${r} ${t} ${a} ${h}`);
"""


async def test_a_stopped_servers_cell_is_resumed_by_another(shared_store: str) -> None:
    COUNTS.clear()
    ENTERED["resume"] = trio.Event()
    GATES["resume"] = trio.Event()
    with trio.fail_after(SAFETY):
        async with serving_on(shared_store, [count, hold], heartbeat_ttl=0.6) as (_, b, _):
            async with serving_on(shared_store, [count, hold], heartbeat_ttl=0.6) as (_, a, _):
                started = await a.call_tool("exec", {"code": RESUMED})
                session = session_of(started)
                running = RUNNING.match(texts(started)[0])
                assert running is not None, texts(started)
                cell = running.group(1)
                seen = outputs(started)
                await ENTERED["resume"].wait()  # `count` ran, `hold` is in flight on A
                while len(seen) < 2:
                    seen += outputs(await a.call_tool("wait", {"cell_id": cell}))
                ENTERED["resume"] = trio.Event()
            # A stopped without a word (its heartbeat expires): B claims and resumes it.
            assert seen[0].startswith("r ") and seen[1] == "a 1", seen
            await ENTERED["resume"].wait()  # `hold` runs again on B, once
            GATES["resume"].set()
            done = await b.call_tool("wait", {"cell_id": cell, "yield_time_ms": 20_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)
            _, r, t = seen[0].split(" ")
            # Nothing given twice; the values printed before are the values resumed with.
            assert outputs(done) == [f"done {r} {t} 1 resume open"], texts(done)
            assert COUNTS == {"once": 1, "resume": 2}, COUNTS
            kept = await b.call_tool(
                "exec", {"code": 'text(JSON.stringify(load("kept")))', "session": session}
            )
            assert outputs(kept) == [f'{{"r":{r},"a":1,"h":"resume open"}}'], texts(kept)
