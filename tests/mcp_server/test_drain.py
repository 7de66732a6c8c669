"""Draining: a server told to stop (``drain()``, SIGTERM from the command line) takes
no new session or program, loses no result a program finished, and terminates what is
still running at its deadline with a result saying why."""

from __future__ import annotations

import signal

import mcp.types as types
import trio

from code_mode.mcp_server import CodeModeMcpServer, ServerLimits
from code_mode.mcp_server.cell_events import decode_event

from ..mcp_support import BLOCKED, SAFETY, block, serve_command
from .http_support import (
    GATES,
    exec_code,
    gate,
    get,
    http_client,
    http_server,
    outputs,
    refused,
    running_cell,
    start_cli_server,
    texts,
    two_sessions,
)

SHUTTING_DOWN = "this server is shutting down"


async def completed(server: CodeModeMcpServer, cell: str) -> None:
    """Until the store holds the end of ``cell``, which nobody has received yet (the
    state a drain must not lose)."""
    store = server._stateless._store
    offset = 0
    while True:
        read = await store.read_events(cell, offset, timeout=SAFETY)
        assert read is not None
        if any(decode_event(event).end is not None for event in read.entries):
            return
        offset = read.next_offset


def start_drain(nursery: trio.Nursery, server: CodeModeMcpServer) -> trio.Event:
    """Drain ``server`` in ``nursery``; the event is set once the drain returns."""
    drained = trio.Event()

    async def drain() -> None:
        await server.drain()
        drained.set()

    nursery.start_soon(drain)
    return drained


async def test_drain_waits_for_every_result_and_refuses_new_work() -> None:
    GATES["drain"] = trio.Event()
    server = CodeModeMcpServer([gate])

    with trio.fail_after(SAFETY):
        async with two_sessions(server) as (url, busy, idle), trio.open_nursery() as nursery:
            await exec_code(idle, 'store("k", 1)')
            code = '// @exec: {"yield_time_ms": 0}\ntext(await tools.gate({name: "drain"}))'
            started = await exec_code(busy, code)
            cell = running_cell(started)

            drained = start_drain(nursery, server)
            await trio.testing.wait_all_tasks_blocked()
            assert server.draining
            status, body = await get(url, "/readyz")
            assert status == 503 and SHUTTING_DOWN in body
            assert await get(url, "/healthz") == (200, "ok\n")
            # No new session; an idle one is closed (404, so its client starts anew).
            with refused(f"^{SHUTTING_DOWN} and takes no new sessions"):
                async with http_client(url):
                    pass
            with refused(f"^Session not found: {SHUTTING_DOWN}"):
                await exec_code(idle, 'text("more")')
            # The busy session may not start a program, but keeps the one it runs.
            another = await exec_code(busy, 'text("more")')
            assert another.is_error and texts(another)[0].startswith(SHUTTING_DOWN)

            GATES["drain"].set()
            await completed(server, cell)  # finished, its result not received yet
            await trio.testing.wait_all_tasks_blocked()
            assert not drained.is_set()
            finished = await busy.call_tool("wait", {"cell_id": cell})
            assert texts(finished)[0].startswith("Script completed")
            assert outputs(finished) == ["drain open"]
            await drained.wait()
            assert server.session_count == 0
            with refused(f"^Session not found: {SHUTTING_DOWN}"):
                await busy.call_tool("wait", {"cell_id": cell})


async def test_drain_waits_for_a_pushed_result_to_be_collected() -> None:
    """With push, a program that finishes after `Script running` hands its result to
    the session's pushed results: the drain waits until the client has read it."""
    GATES["pushed"] = trio.Event()
    server = CodeModeMcpServer([gate], push=True)

    with trio.fail_after(SAFETY):
        async with (
            http_server(server) as url,
            http_client(url) as session,
            trio.open_nursery() as nursery,
        ):
            code = '// @exec: {"yield_time_ms": 0}\ntext(await tools.gate({name: "pushed"}))'
            cell = running_cell(await exec_code(session, code))
            drained = start_drain(nursery, server)
            await trio.testing.wait_all_tasks_blocked()
            GATES["pushed"].set()
            await completed(server, cell)
            pool = server._pool
            assert pool is not None
            (entry,) = [entry for entry in pool._entries.values() if entry.stateful]
            assert entry.results is not None
            while not entry.results.uncollected:  # pushed once the end is in the store
                await trio.testing.wait_all_tasks_blocked()
            await trio.testing.wait_all_tasks_blocked()
            assert not drained.is_set()
            read = await session.read_resource(f"code-mode://cells/{cell}")
            [content] = read.contents
            assert isinstance(content, types.TextResourceContents)
            assert content.text.endswith("\nOutput:\npushed open")
            await drained.wait()


async def test_past_the_deadline_programs_are_terminated_with_a_clear_result() -> None:
    BLOCKED["waited"] = trio.Event()
    BLOCKED["left"] = trio.Event()
    server = CodeModeMcpServer([block], limits=ServerLimits(drain_deadline=0.5))
    code = '// @exec: {"yield_time_ms": 0}\nawait tools.block({name: "%s"})'
    with trio.fail_after(SAFETY):
        async with two_sessions(server) as (_url, waiting, away):
            cell = running_cell(await exec_code(waiting, code % "waited"))
            left = running_cell(await exec_code(away, code % "left"))
            results = []

            async def wait_long() -> None:
                args = {"cell_id": cell, "yield_time_ms": 30000}
                results.append(await waiting.call_tool("wait", args))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_long)
                await trio.testing.wait_all_tasks_blocked()
                started = trio.current_time()
                await server.drain()
                assert trio.current_time() - started >= 0.5
            assert BLOCKED["waited"].is_set() and BLOCKED["left"].is_set()
            (result,) = results
            assert texts(result)[0].startswith("Script terminated")
            assert outputs(result)[0].startswith(
                "This server is shutting down: its drain deadline of 0.5 s "
                "(ServerLimits.drain_deadline) passed, so the program was terminated."
            )
            # The session nobody was waiting on is gone, and says why.
            with refused(r"^Session not found: .*drain deadline of 0.5 s"):
                await away.call_tool("wait", {"cell_id": left})


async def test_sigterm_drains_then_exits_0() -> None:
    # In memory: the programs finish here (a store outside the process hands them over).
    command, args, env = serve_command(
        "--http", "127.0.0.1:0", "--drain-deadline", "30", "--store", "memory://"
    )
    args = ["-m", "code_mode", *args[2:]]  # `python -m code_mode`: the command itself
    with trio.fail_after(SAFETY):
        async with trio.open_nursery() as nursery:
            server = await start_cli_server(nursery, command, args, env)
            url = server.url
            async with http_client(url) as session:
                code = '// @exec: {"yield_time_ms": 0}\n'
                code += "await new Promise(r => setTimeout(r, 500));\n"
                code += "text(await tools.add({a: 2, b: 3}))"
                cell = running_cell(await exec_code(session, code))
                server.process.send_signal(signal.SIGTERM)
                await server.read_until(b"draining (SIGTERM)")
                assert (await get(url, "/readyz"))[0] == 503
                finished = await session.call_tool(
                    "wait", {"cell_id": cell, "yield_time_ms": 20000}
                )
                assert outputs(finished) == ["5"]
            await server.read_to_end()
        assert server.process.returncode == 0, server.received.decode(errors="replace")[-3000:]
        assert b"drained; stopping" in server.received


async def test_a_stateless_drain_waits_for_the_end_to_be_collected() -> None:
    # The default store lives in this process: a drain waits until the end of a
    # program it holds has been collected (as for stateful sessions), and still
    # serves that wait, while it refuses new programs.
    from mcp import Client

    GATES["stateless drain"] = trio.Event()
    server = CodeModeMcpServer([gate])
    with trio.fail_after(SAFETY):
        async with (
            http_server(server) as url,
            Client(url) as client,
            trio.open_nursery() as nursery,
        ):
            code = (
                '// @exec: {"yield_time_ms": 0}\ntext(await tools.gate({name: "stateless drain"}))'
            )
            started = await client.call_tool("exec", {"code": code})
            cell = texts(started)[0].split("\n")[0].removeprefix("Script running with cell ID ")
            drained = start_drain(nursery, server)
            await trio.testing.wait_all_tasks_blocked()
            refused_exec = await client.call_tool("exec", {"code": 'text("more")'})
            assert refused_exec.is_error and texts(refused_exec)[0].startswith(SHUTTING_DOWN)
            GATES["stateless drain"].set()
            await trio.testing.wait_all_tasks_blocked()
            assert not drained.is_set()  # ended, its end not collected yet
            finished = await client.call_tool("wait", {"cell_id": cell, "yield_time_ms": 10_000})
            assert texts(finished)[0].startswith("Script completed"), texts(finished)
            assert outputs(finished) == ["stateless drain open"]
            await drained.wait()
