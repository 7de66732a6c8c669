"""The stateless revision (2026-07-28) served beside the stateful one: session and cell
handles, stored values per session handle, foreign handles refused, legacy clients
still sticky."""

from __future__ import annotations

import re

import mcp.types as types
import trio
import trio.testing
from mcp import Client

from code_mode.mcp_server import CodeModeMcpServer
from code_mode.mcp_server.stateless import SESSION_SENTENCE
from code_mode.mcp_server.store import HANDLE_BITS, is_handle
from code_mode.model_tools.adapters import MCP_META_CELL, MCP_META_SESSION

from .http_support import GATES, gate, http_server, outputs, texts

SAFETY = 60
RUNNING = re.compile(r"Script running with cell ID (\S+)\n")
SESSION = re.compile(r"Session: (\S+)\nOutput:\n")


def session_of(result: types.CallToolResult) -> str:
    """The session handle a result names, checked in both places: the header's
    `Session:` line (before `Output:`) and `_meta`; never in structured content, which
    some hosts show the model in place of the text."""
    [text] = texts(result)
    named = SESSION.search(text)
    assert named is not None, text
    meta = result.meta or {}
    ours = {key: value for key, value in meta.items() if key.startswith("code-mode/")}
    assert ours == {MCP_META_SESSION: named.group(1)} | (
        {MCP_META_CELL: cell_of(result)} if text.startswith("Script running") else {}
    )
    assert result.structured_content is None
    return named.group(1)


def cell_of(result: types.CallToolResult) -> str:
    running = RUNNING.match(texts(result)[0])
    assert running is not None, texts(result)
    return running.group(1)


async def test_default_client_is_stateless_with_session_and_cell_handles() -> None:
    server = CodeModeMcpServer(tools=[gate])
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, Client(url) as client:
            assert client.protocol_version == "2026-07-28"
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            exec_tool = listed["exec"]
            assert SESSION_SENTENCE in (exec_tool.description or "")
            assert "session" in exec_tool.input_schema["properties"]

            first = await client.call_tool("exec", {"code": 'store("k", 41); text("stored")'})
            assert texts(first)[0].startswith("Script completed\n"), texts(first)
            session = session_of(first)
            assert is_handle(session) and HANDLE_BITS >= 128
            assert outputs(first) == ["stored"]
            # Its state is in the store: no code mode session is kept for it.
            assert server.session_count == 0

            # Stored values belong to the session handle, not to any connection.
            again = await client.call_tool(
                "exec", {"code": 'text(String(load("k") + 1))', "session": session}
            )
            assert session_of(again) == session
            assert outputs(again) == ["42"]
            fresh = await client.call_tool("exec", {"code": 'text(String(load("k")))'})
            assert session_of(fresh) != session
            assert outputs(fresh) == ["undefined"]

            # A yielding program: its cell id is a handle, resumed with wait.
            GATES["stateless"] = trio.Event()
            started = await client.call_tool(
                "exec",
                {
                    "code": '// @exec: {"yield_time_ms": 50}\n'
                    'text("before"); await tools.gate({name: "stateless"}); text("after")',
                    "session": session,
                },
            )
            cell = cell_of(started)
            assert is_handle(cell), cell
            assert session_of(started) == session
            assert outputs(started) == ["before"]
            GATES["stateless"].set()
            finished = await client.call_tool("wait", {"cell_id": cell, "yield_time_ms": 10_000})
            assert texts(finished)[0].startswith("Script completed\n"), texts(finished)
            assert session_of(finished) == session
            assert outputs(finished) == ["after"]
            await trio.testing.wait_all_tasks_blocked()
            assert server.session_count == 0  # the pump let the session go
            # Spent: the handle names nothing any more.
            spent = await client.call_tool("wait", {"cell_id": cell})
            assert spent.is_error
            assert f"exec cell {cell} not found" in "\n".join(texts(spent))


async def test_guessed_neighbouring_and_foreign_handles_are_not_found() -> None:
    server = CodeModeMcpServer(tools=[gate])
    GATES["foreign"] = trio.Event()
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, Client(url) as client:
            started = await client.call_tool(
                "exec",
                {"code": '// @exec: {"yield_time_ms": 50}\nawait tools.gate({name: "foreign"})'},
            )
            cell = cell_of(started)
            neighbour = cell[:-1] + ("A" if cell[-1] != "A" else "B")
            for given in ("1", "2", neighbour, "x" * 24, "../" + cell, 7):
                result = await client.call_tool("wait", {"cell_id": given})
                assert result.is_error, given
                assert texts(result)[0].startswith("Script failed\n"), texts(result)
                # What happened, and what to do (the reference's phrase first).
                said = texts(result)[-1]
                assert f"Script error:\nexec cell {str(given)[:64]} not found: " in said
                assert "another session or server deployment" in said
                assert "expired after 1800 s without a call" in said  # the idle timeout
                assert said.endswith("run the program again with `exec`.")
                assert MCP_META_SESSION not in (result.meta or {})
                assert result.structured_content is None
            # A session handle nobody minted starts nothing.
            unknown = await client.call_tool(
                "exec", {"code": "text(1)", "session": session_of(started)[::-1]}
            )
            assert unknown.is_error, texts(unknown)
            said = texts(unknown)[-1]
            assert f"code mode session {session_of(started)[::-1]} not found: it expired " in said
            assert "Call `exec` again without `session` to start a new session" in said
            GATES["foreign"].set()
            done = await client.call_tool("wait", {"cell_id": cell, "yield_time_ms": 10_000})
            assert texts(done)[0].startswith("Script completed\n"), texts(done)


async def test_legacy_clients_keep_their_session_and_are_given_handles_too() -> None:
    """The stateful revisions on the same endpoint: the MCP session remembers its
    session handle, so a client that passes nothing keeps its stored values; results
    name cells and the session by handles, as in the stateless revision."""
    server = CodeModeMcpServer(tools=[gate])
    GATES["legacy"] = trio.Event()
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, Client(url, mode="legacy") as client:
            assert client.protocol_version != "2026-07-28"
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert SESSION_SENTENCE in (listed["exec"].description or "")
            assert "session" in listed["exec"].input_schema["properties"]
            first = await client.call_tool("exec", {"code": 'store("k", 1)'})
            started = await client.call_tool(
                "exec",
                {
                    "code": '// @exec: {"yield_time_ms": 50}\n'
                    'await tools.gate({name: "legacy"}); text(String(load("k")))'
                },
            )
            assert session_of(started) == session_of(first)
            cell = cell_of(started)
            assert is_handle(cell)
            GATES["legacy"].set()
            done = await client.call_tool("wait", {"cell_id": cell, "yield_time_ms": 10_000})
            assert outputs(done) == ["1"]


async def test_progress_reaches_a_stateless_wait() -> None:
    server = CodeModeMcpServer()
    seen: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    with trio.fail_after(SAFETY):
        async with http_server(server) as url, Client(url) as client:
            result = await client.call_tool(
                "exec", {"code": 'notify("hello"); text("done")'}, progress_callback=progress
            )
            assert outputs(result) == ["done"]
            assert "hello" in seen
