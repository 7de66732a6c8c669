"""Code mode served over MCP, driven by the SDK's own client (stdio and streamable HTTP
on 127.0.0.1) and by the MCP Inspector's CLI."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import ClientSession, StdioServerParameters, stdio_client

from code_mode import RuntimeConfig
from code_mode.cli.exit_status import is_interrupt
from code_mode.mcp_server import CodeModeMcpServer, ServerLimits
from code_mode.model_tools.adapters import MCP_META_CELL

from ..mcp_support import (
    PIXEL,
    SAFETY,
    add,
    node_command,
    serve_command,
)
from .http_support import (
    GATES,
    INITIALIZE,
    exec_code,
    gate,
    http_client,
    http_server,
    outputs,
    running_cell,
    session_of,
    start_cli_server,
    texts,
    two_sessions,
)

MISSING_99 = (
    "exec cell 99 not found: its program already ended and its final result was "
    "returned, it belongs to another session or server deployment, or it expired after "
    "1800 s without a call. Check that the ID is the one from `Script running with "
    "cell ID <id>`; if you still need the program's result, run the program again with "
    "`exec`."
)


async def test_stdio_lists_exec_and_wait_and_serves_them() -> None:
    command, args, env = serve_command()
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    with trio.fail_after(SAFETY):
        async with (
            stdio_client(StdioServerParameters(command=command, args=args, env=env)) as streams,
            ClientSession(*streams, logging_callback=on_log) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == ["exec", "wait"]
            exec_tool = listed.tools[0]
            assert exec_tool.input_schema["required"] == ["code"]
            assert "add(args: { a: number; b: number; }): Promise<number>;" in (
                exec_tool.description or ""
            )

            result = await exec_code(
                session, 'store("k", 7); notify("half way"); text(await tools.add({a: 2, b: 3}))'
            )
            assert not result.is_error
            assert texts(result)[0].startswith("Script completed\n")
            assert outputs(result) == ["5"]
            assert [(log.level, log.data) for log in logs] == [("info", "half way")]

            code = '// @exec: {"yield_time_ms": 0}\nawait new Promise(r => setTimeout(r, 200));'
            started = await exec_code(
                session, code + 'text(load("k")); image(' + json.dumps(PIXEL) + ")"
            )
            # The cell is named by a handle, in the text and (for a client that reads
            # it by program) in _meta; no structured content.
            cell = running_cell(started)
            assert started.structured_content is None
            finished = await session.call_tool("wait", {"cell_id": cell, "yield_time_ms": 20000})
            assert texts(finished)[0].startswith("Script completed\n")
            assert outputs(finished)[0] == "7"
            image = finished.content[1]  # after the one text item
            assert isinstance(image, types.ImageContent)
            assert image.mime_type == "image/png"
            assert PIXEL.endswith(image.data)

            failed = await exec_code(session, 'throw new Error("boom")')
            assert failed.is_error
            assert outputs(failed)[:2] == ["Script error:", "Error: boom"]
            missing = await session.call_tool("wait", {"cell_id": "99"})
            assert missing.is_error
            assert outputs(missing)[:2] == ["Script error:", MISSING_99]
            assert MCP_META_CELL not in (missing.meta or {})


async def test_stdio_server_ends_its_cells_when_the_client_goes() -> None:
    """Closing stdin ends the server process by itself, with a cell still running."""
    command, args, env = serve_command()
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "exec",
                "arguments": {"code": '// @exec: {"yield_time_ms": 0}\nwhile (true) {}'},
            },
        },
    ]
    with trio.fail_after(SAFETY):
        process = await trio.lowlevel.open_process(
            [command, *args],
            stdin=-1,
            stdout=-1,
            env={**os.environ, **env},
        )
        assert process.stdin is not None and process.stdout is not None
        for message in messages:
            await process.stdin.send_all((json.dumps(message) + "\n").encode())
        received = b""
        while b'"id":2' not in received:
            chunk = await process.stdout.receive_some()
            assert chunk, f"server closed stdout early: {received!r}"
            received += chunk
        assert b"Script running with cell ID " in received
        await process.stdin.aclose()
        assert await process.wait() == 0


async def test_http_sessions_are_separate() -> None:
    server = CodeModeMcpServer([add])
    with trio.fail_after(SAFETY):
        async with two_sessions(server) as (url, first, second):
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            await exec_code(first, 'store("secret", "first"); text("stored")')
            await exec_code(second, 'store("other", 2); text("stored")')
            assert server.session_count == 2
            mine = await exec_code(
                first, 'text(String(load("secret"))); text(String(load("other")))'
            )
            theirs = await exec_code(
                second, 'text(String(load("secret"))); text(String(load("other")))'
            )
            assert outputs(mine) == ["first", "undefined"]
            assert outputs(theirs) == ["undefined", "2"]
            # Cell ids are per session too.
            assert texts(mine)[0].startswith("Script completed")


async def test_http_notify_as_progress_and_images() -> None:
    server = CodeModeMcpServer([add])
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == ["exec", "wait"]
            code = f'notify("one"); notify("two"); image({json.dumps(PIXEL)}); text("done")'
            result = await exec_code(session, code, progress_callback=on_progress)
            assert not result.is_error
            assert isinstance(result.content[1], types.ImageContent)
            assert outputs(result) == ["done"]
            # The SDK's client runs each progress callback in a task of its own, so they
            # may run in any order; the progress value says which came first. Progress
            # without a message is the keep-alive a waiting call sends every second
            # (mcp_server/client_timeouts.py), which a loaded machine may reach.
            ordered = sorted(progress)
            assert [message for _, message in ordered if message is not None] == ["one", "two"]
            values = [value for value, _ in ordered]
            assert values == list(range(1, len(values) + 1)), ordered


async def test_http_a_deleted_sessions_cell_is_waited_on_from_another_session() -> None:
    """A client that opens an MCP session per call (and deletes it after) reaches its
    cell from the next one by handle: the cell belongs to the session handle."""
    server = CodeModeMcpServer([gate])
    with trio.fail_after(SAFETY):
        async with http_server(server) as url:
            async with http_client(url) as session:
                code = (
                    '// @exec: {"yield_time_ms": 100}\n'
                    'store("k", 5); text("before"); await tools.gate({name: "deleted"}); '
                    'text("after")'
                )
                started = await exec_code(session, code)
                cell, handle = running_cell(started), session_of(started)
                assert outputs(started) == ["before"]
            # Leaving the client sent DELETE; the cell runs on.
            GATES.setdefault("deleted", trio.Event()).set()
            async with http_client(url) as other:
                finished = await other.call_tool("wait", {"cell_id": cell, "yield_time_ms": 20000})
                assert texts(finished)[0].startswith("Script completed\n")
                assert outputs(finished) == ["after"]
                loaded = await other.call_tool(
                    "exec", {"code": 'text(String(load("k")))', "session": handle}
                )
                assert outputs(loaded) == ["5"]
                assert session_of(loaded) == handle
                # The other MCP session remembers the handle it was given.
                again = await exec_code(other, 'text(String(load("k")))')
                assert outputs(again) == ["5"]


async def test_http_idle_session_is_closed() -> None:
    server = CodeModeMcpServer([add], limits=ServerLimits(session_idle_timeout=0.5))
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            await exec_code(session, "text(await tools.add({a: 1, b: 1}))")
            assert server.session_count == 1
            await trio.sleep(1.0)  # past the idle timeout (the deadline is the pool's)
            assert server.session_count == 0


async def test_http_server_survives_hostile_programs() -> None:
    config = RuntimeConfig(memory_limit_bytes=32 * 1024 * 1024)
    server = CodeModeMcpServer([add], config=config)
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            hog = await exec_code(
                session, "const a = []; while (true) a.push(new Array(1e6).fill(1));"
            )
            assert hog.is_error
            assert "memory limit" in texts(hog)[-1]
            spin = await exec_code(session, '// @exec: {"yield_time_ms": 100}\nwhile (true) {}')
            spun = running_cell(spin)
            stopped = await session.call_tool("wait", {"cell_id": spun, "terminate": True})
            assert texts(stopped)[0].startswith("Script terminated")
            after = await exec_code(session, "text(await tools.add({a: 1, b: 1}))")
            assert outputs(after) == ["2"]


async def test_unknown_tool_is_a_json_rpc_error() -> None:
    server = CodeModeMcpServer([add])
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            from mcp import MCPError

            with pytest.raises(MCPError, match="Unknown tool: nope"):
                await session.call_tool("nope", {})


async def run_inspector(args: Sequence[str]) -> Any:
    inspector = node_command("mcp-inspector")
    command, serve_args, env = serve_command()
    env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    completed = await trio.run_process(
        [inspector, "--cli", *env_args, command, *serve_args, *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr.decode()
    return json.loads(completed.stdout)


async def test_mcp_inspector_cli_lists_and_calls_tools() -> None:
    with trio.fail_after(SAFETY * 2):
        listed = await run_inspector(["--method", "tools/list"])
        assert [tool["name"] for tool in listed["tools"]] == ["exec", "wait"]
        called = await run_inspector(
            [
                "--method",
                "tools/call",
                "--tool-name",
                "exec",
                "--tool-arg",
                "code=text(await tools.add({a: 20, b: 22}))",
            ]
        )
        assert called["isError"] is False
        [content] = called["content"]
        assert content["text"].startswith("Script completed\n")
        assert content["text"].endswith("\nOutput:\n42")
        waited = await run_inspector(
            ["--method", "tools/call", "--tool-name", "wait", "--tool-arg", "cell_id=1"]
        )
        assert waited["isError"] is True
        assert "exec cell 1 not found" in waited["content"][-1]["text"]


async def test_cli_serves_streamable_http() -> None:
    command, args, env = serve_command("--http", "127.0.0.1:0")
    with trio.fail_after(SAFETY):
        async with trio.open_nursery() as nursery:
            server = await start_cli_server(nursery, command, args, env)
            url = server.url
            assert url.startswith("http://127.0.0.1:")
            async with http_client(url) as session:
                result = await exec_code(session, "text(await tools.add({a: 1, b: 2}))")
                assert outputs(result) == ["3"]
                assert session.server_info is not None
                assert session.server_info.name == "code-mode"
            server.process.send_signal(signal.SIGINT)
            await server.read_to_end()
        assert server.process.returncode == 130, server.received.decode(errors="replace")[-30000:]


def test_ctrl_c_is_an_interrupt_even_with_errors_it_caused_beside_it() -> None:
    # Seen in CI-like runs: Ctrl-C came while the HTTP server was sending a response,
    # and the server's failure to answer arrived in the same exception group.
    caused = RuntimeError("can't send the error response: the response has started")
    assert is_interrupt(KeyboardInterrupt())
    assert is_interrupt(BaseExceptionGroup("stopping", [KeyboardInterrupt(), caused]))
    nested = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [KeyboardInterrupt()])])
    assert is_interrupt(nested)
    assert not is_interrupt(ExceptionGroup("crashed", [caused]))
    assert not is_interrupt(caused)
