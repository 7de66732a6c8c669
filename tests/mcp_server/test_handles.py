"""Issue 35: cells and sessions named by handles over MCP, in every revision and over
stdio, reached from any MCP session or server process of the same store; a server
process that exits or is killed loses no cell and no stored value; a handle guessed,
one character off, or of another deployment names nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client

from code_mode.mcp_server import CodeModeMcpServer
from code_mode.mcp_server.stateless_cells import OVERFLOW_TEXT
from code_mode.mcp_server.store import is_handle, new_handle, open_store

from ..mcp_support import add
from .http_support import http_server, outputs, running_cell, session_of, texts
from .stdio_process import (
    RUNNING,
    SESSION,
    one_call,
    outputs_of,
    stdio_process,
    text_of,
)

SAFETY = 90.0  # seconds a test may take on a loaded machine (a bound, never a wait)


def program(runs: Path, pause_ms: int) -> str:
    """Stores a value, records a tool call, prints, pauses, records another, prints:
    handed back running (the exec's yield time is 0), a tool call on each side of the
    pause, each appending a line to ``runs`` (how many times each ran)."""
    path = json.dumps(str(runs))
    return (
        '// @exec: {"yield_time_ms": 0}\n'
        f'store("k", 7); await tools.record({{path: {path}, line: "one"}}); text("before");\n'
        f"await new Promise((r) => setTimeout(r, {pause_ms}));\n"
        f'await tools.record({{path: {path}, line: "two"}}); text("after");'
    )


def neighbour(handle: str) -> str:
    """``handle`` with one character changed (still a handle's shape)."""
    changed = "A" if handle[5] != "A" else "B"
    return handle[:5] + changed + handle[6:]


async def rest_of(state: Path, cell: str) -> tuple[str, list[str]]:
    """``wait`` on ``cell``, each call in a new server process, until it ends: the
    last result's text and every output line on the way."""
    seen: list[str] = []
    while True:
        result = await one_call(state, "wait", {"cell_id": cell, "yield_time_ms": 3000})
        seen += outputs_of(result)
        if not text_of(result).startswith("Script running"):
            return text_of(result), seen


async def test_stdio_a_server_process_per_call_loses_no_cell_and_no_value(tmp_path: Path) -> None:
    """As LangChain's adapters do: every call opens a new MCP session in a new server
    process, which exits when the call is answered (stdin closed). The first hands its
    running cell over on the way out; the next resumes it from the journal."""
    runs = tmp_path / "runs.txt"
    with trio.fail_after(SAFETY):
        started = await one_call(tmp_path, "exec", {"code": program(runs, 300)})
        running, session = RUNNING.match(text_of(started)), SESSION.search(text_of(started))
        assert running is not None and session is not None, text_of(started)
        assert is_handle(running.group(1)) and is_handle(session.group(1))
        end, seen = await rest_of(tmp_path, running.group(1))
        assert end.startswith("Script completed\n"), end
        assert [*outputs_of(started), *seen] == ["before", "after"]  # none given twice
        assert runs.read_text() == "one\ntwo\n"  # no completed tool call ran again
        # The value stored in one process is loaded in the next, by its session handle.
        loaded = await one_call(
            tmp_path, "exec", {"code": 'text(String(load("k")))', "session": session.group(1)}
        )
        assert outputs_of(loaded) == ["7"]
        assert f"\nSession: {session.group(1)}\n" in text_of(loaded)
        # Without it, a new session: nothing stored.
        fresh = await one_call(tmp_path, "exec", {"code": 'text(String(load("k")))'})
        assert outputs_of(fresh) == ["undefined"]


async def test_stdio_a_killed_servers_cell_is_resumed_by_the_next_process(tmp_path: Path) -> None:
    """SIGKILL between ``exec`` and ``wait``: no hand-over, no retire. The next process
    sees the dead process at once (the SQLite store records it) when the ``wait``
    comes, and resumes the cell from its journal; the tool call that completed before
    the kill is answered from the journal, not run again."""
    runs = tmp_path / "runs.txt"
    with trio.fail_after(SAFETY):
        async with stdio_process(tmp_path) as first:
            started = await first.call("exec", {"code": program(runs, 1000)})
            running = RUNNING.match(text_of(started))
            assert running is not None, text_of(started)
            cell = running.group(1)
            given = outputs_of(started)
            while "before" not in given:  # until the first tool call has completed
                waited = await first.call("wait", {"cell_id": cell, "yield_time_ms": 100})
                given += outputs_of(waited)
            first.process.kill()
            await first.process.wait()
        # Each process of rest_of lives about one wait (at most the 4 s yield cap),
        # less than the reaper's first pass (a third of the 15 s heartbeat TTL after
        # start): the claim comes from the wait itself.
        end, seen = await rest_of(tmp_path, cell)
        assert end.startswith("Script completed\n"), end
        assert [*given, *seen] == ["before", "after"]
        assert runs.read_text() == "one\ntwo\n"


async def test_stdio_one_session_needs_no_handle(tmp_path: Path) -> None:
    """A client that keeps its MCP session passes nothing: the session remembers its
    handle, and cells are waited on by the handle the result names."""
    with trio.fail_after(SAFETY):
        async with stdio_process(tmp_path) as served:
            first = await served.call("exec", {"code": 'store("k", 3); text("ok")'})
            again = await served.call(
                "exec",
                {"code": '// @exec: {"yield_time_ms": 0}\nawait 0; text(String(load("k")))'},
            )
            named = [SESSION.search(text_of(result)) for result in (first, again)]
            assert named[0] is not None and named[1] is not None
            assert named[0].group(1) == named[1].group(1)
            running = RUNNING.match(text_of(again))
            if running is not None:
                done = await served.call("wait", {"cell_id": running.group(1)})
                assert outputs_of(again) + outputs_of(done) == ["3"]
            else:
                assert outputs_of(again) == ["3"]


def missing_cell(text: str, given: str) -> bool:
    return f"exec cell {given} not found" in text


def missing_session(text: str, given: str) -> bool:
    return f"code mode session {given} not found" in text


async def test_stdio_guessed_neighbouring_and_foreign_handles_name_nothing(
    tmp_path: Path,
) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    running = '// @exec: {"yield_time_ms": 0}\nawait new Promise((r) => setTimeout(r, 200));'
    with trio.fail_after(SAFETY):
        async with stdio_process(elsewhere) as other:
            foreign = await other.call("exec", {"code": running})
        async with stdio_process(here) as served:
            mine = await served.call("exec", {"code": running})
            own_cell = RUNNING.match(text_of(mine))
            own_session = SESSION.search(text_of(mine))
            theirs_cell = RUNNING.match(text_of(foreign))
            theirs_session = SESSION.search(text_of(foreign))
            assert own_cell and own_session and theirs_cell and theirs_session
            cells = [new_handle(), neighbour(own_cell.group(1)), theirs_cell.group(1)]
            for cell in cells:
                result = await served.call("wait", {"cell_id": cell})
                assert result["isError"] and missing_cell(text_of(result), cell), result
            sessions = [new_handle(), neighbour(own_session.group(1)), theirs_session.group(1)]
            for session in sessions:
                result = await served.call("exec", {"code": 'text("x")', "session": session})
                assert result["isError"] and missing_session(text_of(result), session), result
            # The real ones still work.
            done = await served.call("wait", {"cell_id": own_cell.group(1), "yield_time_ms": 20000})
            assert text_of(done).startswith("Script completed\n")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_guessed_neighbouring_and_foreign_handles_name_nothing(mode: str) -> None:
    """In the stateful revisions (``legacy``) and the stateless one (``auto``); the
    foreign handles are those of another deployment (another server, its own store)."""
    running = '// @exec: {"yield_time_ms": 0}\nawait new Promise((r) => setTimeout(r, 200));'
    with trio.fail_after(SAFETY):
        async with (
            http_server(CodeModeMcpServer([add])) as url,
            http_server(CodeModeMcpServer([add])) as other_url,
            Client(url, mode=mode) as client,  # type: ignore[arg-type]
            Client(other_url, mode=mode) as other,  # type: ignore[arg-type]
        ):
            mine = await client.call_tool("exec", {"code": running})
            theirs = await other.call_tool("exec", {"code": running})
            cells = [new_handle(), neighbour(running_cell(mine)), running_cell(theirs)]
            for cell in cells:
                result = await client.call_tool("wait", {"cell_id": cell})
                assert result.is_error and missing_cell(texts(result)[0], cell)
            sessions = [new_handle(), neighbour(session_of(mine)), session_of(theirs)]
            for session in sessions:
                result = await client.call_tool("exec", {"code": 'text("x")', "session": session})
                assert result.is_error and missing_session(texts(result)[0], session)
            done = await client.call_tool(
                "wait", {"cell_id": running_cell(mine), "yield_time_ms": 20000}
            )
            assert texts(done)[0].startswith("Script completed\n")


async def test_a_cell_whose_output_passes_the_stores_bound_ends_saying_so(tmp_path: Path) -> None:
    """The SQLite store keeps at most ``max_cell_bytes`` of a cell's output: past it
    the cell is terminated, and its end (kept past the bound) says why."""
    code = (
        '// @exec: {"yield_time_ms": 0}\n'
        "for (let i = 0; ; i++) { text(`${i} ` + 'x'.repeat(200)); "
        "await new Promise((r) => setTimeout(r, 5)); }"
    )
    url = f"sqlite://{tmp_path}/store.db?max_cell_bytes=4000"
    with trio.fail_after(SAFETY):
        async with open_store(url, session_ttl=600) as store:
            server = CodeModeMcpServer(store=store)
            async with http_server(server) as endpoint, Client(endpoint) as client:
                cell = running_cell(await client.call_tool("exec", {"code": code}))
                result: Any = None
                for _ in range(20):  # each wait ends at the server's yield cap
                    result = await client.call_tool("wait", {"cell_id": cell})
                    if not texts(result)[0].startswith("Script running"):
                        break
                assert result is not None and result.is_error
                assert texts(result)[0].startswith("Script failed\n")
                assert outputs(result)[-2:] == ["Script error:", OVERFLOW_TEXT]
