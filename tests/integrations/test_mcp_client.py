"""Programs calling the tools of real MCP servers: the reference servers of the MCP
project (``@modelcontextprotocol/server-everything`` and ``server-filesystem``), run
over stdio; and the configuration that starts them."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from code_mode import CodeModeSession, Image, Text
from code_mode.cli import main as cli_main
from code_mode.integrations.mcp import (
    McpConfigError,
    McpServerConfig,
    connect_mcp_servers,
    list_mcp_tools,
    load_mcp_config,
    parse_mcp_config,
)

from ..mcp_support import SAFETY, node_command


def outputs(items: list[Any]) -> list[str]:
    return [item.text for item in items[1:] if isinstance(item, Text)]


@asynccontextmanager
async def everything() -> AsyncIterator[CodeModeSession]:
    """A session with the tools of the reference ``everything`` server, under the hang guard."""
    config = McpServerConfig(name="everything", command=node_command("mcp-server-everything"))
    with trio.fail_after(SAFETY):
        async with (
            connect_mcp_servers([config]) as servers,
            CodeModeSession(tools=servers.tools) as session,
        ):
            yield session


async def test_every_tool_is_declared_with_its_schemas() -> None:
    async with everything() as session:
        names = [tool.name for tool in session.tools]
        assert "mcp__everything__echo" in names
        assert "mcp__everything__get-structured-content" in names
        description = session.exec_tool.description
        assert "Shared MCP Types:" in description
        assert (
            "mcp__everything__get_structured_content(args: { location: "
            '"New York" | "Chicago" | "Los Angeles"; }): Promise<CallToolResult<{ '
            "conditions: string; humidity: number; temperature: number; }>>;"
        ) in description
        assert "mcp__everything__echo(args: { message: string; }): Promise<CallToolResult>;" in (
            description
        )


async def test_echo_add_structured_and_image_results() -> None:
    async with everything() as session:
        echoed = await session.exec(
            'const r = await tools.mcp__everything__echo({message: "hi"});\n'
            "text(JSON.stringify(r)); forward_output(r);"
        )
        assert outputs(echoed) == [
            '{"content":[{"type":"text","text":"Echo: hi"}],"isError":false}',
            "Echo: hi",
        ]
        added = await session.exec(
            "const r = await tools.mcp__everything__get_sum({a: 2, b: 40});\n"
            "text(r.content[0].text)"
        )
        assert outputs(added) == ["The sum of 2 and 40 is 42."]
        structured = await session.exec(
            "const r = await tools.mcp__everything__get_structured_content("
            '{location: "Chicago"});\ntext(Object.keys(r.structuredContent).sort().join())'
        )
        assert outputs(structured) == ["conditions,humidity,temperature"]
        pictured = await session.exec(
            "const r = await tools.mcp__everything__get_tiny_image({});\n"
            'image(r.content.find(block => block.type === "image"))'
        )
        images = [item for item in pictured if isinstance(item, Image)]
        assert len(images) == 1 and images[0].image_url.startswith("data:image/png;base64,")


async def test_errors_reach_the_program() -> None:
    async with everything() as session:
        # A tool error is a result with isError (the program decides).
        invalid = await session.exec(
            'const r = await tools.mcp__everything__get_sum({a: "x", b: 2});\n'
            "text(String(r.isError)); text(r.content[0].text)"
        )
        assert outputs(invalid)[0] == "true"
        assert "Input validation error" in outputs(invalid)[1]
        # So is an unknown tool, for this server.
        ghost = await session.exec(
            "const r = await tools.mcp__everything__echo({});\ntext(String(r.isError))"
        )
        assert outputs(ghost) == ["true"]


class SpyStream:
    """A write stream that records the JSON-RPC messages the client sends."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[dict[str, Any]] = []
        self.cancelled = trio.Event()

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
        self.sent.append(message)
        if message.get("method") == "notifications/cancelled":
            self.cancelled.set()
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> SpyStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def test_terminating_the_program_cancels_the_mcp_request() -> None:
    command = node_command("mcp-server-everything")
    with trio.fail_after(SAFETY):
        async with stdio_client(StdioServerParameters(command=command)) as (read, write):
            spy = SpyStream(write)
            async with ClientSession(read, spy) as client:
                await client.initialize()
                tools = await list_mcp_tools(client, "everything")
                async with CodeModeSession(tools=tools) as session:
                    started = await session.exec(
                        '// @exec: {"yield_time_ms": 500}\n'
                        "await tools.mcp__everything__trigger_long_running_operation("
                        "{duration: 600, steps: 2}); text('finished')"
                    )
                    assert started[0].text.startswith("Script running with cell ID 1")
                    calls = [m for m in spy.sent if m.get("method") == "tools/call"]
                    assert len(calls) == 1 and not spy.cancelled.is_set()
                    stopped = await session.wait("1", terminate=True)
                    assert stopped[0].text.startswith("Script terminated")
                    await spy.cancelled.wait()
                    cancel = spy.sent[-1]
                    assert cancel["params"]["requestId"] == calls[0]["id"]
                # The server is still usable after the cancellation.
                answer = await client.call_tool("echo", {"message": "still here"})
                assert answer.content[0].text == "Echo: still here"  # type: ignore[union-attr]


def server_pids(command: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                status = (entry / "status").read_text()
            except OSError:
                continue
            parent = next(line for line in status.splitlines() if line.startswith("PPid:"))
            if int(parent.split()[1]) == os.getpid() and any(
                command.encode() in part or b"server-everything" in part for part in cmdline
            ):
                pids.append(int(entry.name))
    return pids


async def test_a_dead_server_rejects_the_call() -> None:
    command = node_command("mcp-server-everything")
    async with everything() as session:
        started = await session.exec(
            '// @exec: {"yield_time_ms": 300}\n'
            "try { await tools.mcp__everything__trigger_long_running_operation("
            "{duration: 600, steps: 2}) } catch (error) { text(String(error)) }"
        )
        assert started[0].text.startswith("Script running with cell ID 1")
        pids = server_pids(command)
        assert len(pids) == 1
        os.kill(pids[0], signal.SIGKILL)
        finished = await session.wait("1", yield_time_ms=20_000)
        assert outputs(finished) == ["MCP server `everything` is unavailable: Connection closed"]


@pytest.fixture
def fs_root(tmp_path: Path) -> Path:
    root = tmp_path.resolve()
    (root / "in.txt").write_text("hello from disk")
    return root


async def test_filesystem_server_reads_and_writes(fs_root: Path) -> None:
    command = node_command("mcp-server-filesystem")
    root = fs_root
    config = McpServerConfig(name="fs", command=command, args=(str(root),))
    source = f"""
        const root = {json.dumps(str(root))};
        const read = await tools.mcp__fs__read_text_file({{path: root + "/in.txt"}});
        await tools.mcp__fs__write_file({{path: root + "/out.txt",
                                           content: read.content[0].text.toUpperCase()}});
        const listing = await tools.mcp__fs__list_directory({{path: root}});
        text(listing.content[0].text);
        const outside = await tools.mcp__fs__read_text_file({{path: "/etc/hostname"}});
        text(String(outside.isError));
    """
    with trio.fail_after(SAFETY):
        async with (
            connect_mcp_servers([config]) as servers,
            CodeModeSession(tools=servers.tools) as session,
        ):
            result = await session.exec(source)
    assert await trio.Path(root / "out.txt").read_text() == "HELLO FROM DISK"
    listing, outside = outputs(result)
    assert "[FILE] in.txt" in listing and "[FILE] out.txt" in listing
    assert outside == "true"


@asynccontextmanager
async def sdk_server(server: Server[Any]) -> AsyncIterator[ClientSession]:
    """A client of ``server`` (the SDK's low-level server) over in-memory streams."""
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(server.run, *server_streams, server.create_initialization_options())
        async with ClientSession(*client_streams) as client:
            await client.initialize()
            yield client
        nursery.cancel_scope.cancel()


async def test_all_pages_of_tools_are_listed() -> None:
    """A server that pages ``tools/list`` two tools at a time."""
    all_tools = [
        types.Tool(name=f"t{index}", input_schema={"type": "object"}) for index in range(5)
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        start = int(params.cursor) if params is not None and params.cursor else 0
        more = start + 2 < len(all_tools)
        return types.ListToolsResult(
            tools=all_tools[start : start + 2], next_cursor=str(start + 2) if more else None
        )

    with trio.fail_after(SAFETY):
        async with sdk_server(Server("paged", on_list_tools=list_tools)) as client:
            tools = await list_mcp_tools(client, "paged")
    assert [tool.definition.name for tool in tools] == [f"mcp__paged__t{i}" for i in range(5)]


async def test_only_tools_annotated_read_only_or_idempotent_are_idempotent() -> None:
    """The MCP spec's annotations decide whether a call in flight on a dead server may
    run again: ``readOnlyHint`` or ``idempotentHint`` true; the spec's default for
    ``idempotentHint`` is false, so no annotations means not idempotent."""
    annotated = {
        "plain": None,
        "empty": types.ToolAnnotations(),
        "read": types.ToolAnnotations(read_only_hint=True),
        "again": types.ToolAnnotations(idempotent_hint=True),
        "both": types.ToolAnnotations(read_only_hint=True, idempotent_hint=False),
        "write": types.ToolAnnotations(read_only_hint=False, idempotent_hint=False),
        "destroy": types.ToolAnnotations(destructive_hint=True),
    }

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, input_schema={"type": "object"}, annotations=annotations)
                for name, annotations in annotated.items()
            ]
        )

    with trio.fail_after(SAFETY):
        async with sdk_server(Server("hints", on_list_tools=list_tools)) as client:
            tools = await list_mcp_tools(client, "hints")
    assert {tool.tool.name: tool.definition.idempotent for tool in tools} == {
        "plain": False,
        "empty": False,
        "read": True,
        "again": True,
        "both": True,
        "write": False,
        "destroy": False,
    }


async def test_json_rpc_error_rejects_with_the_servers_message() -> None:
    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[types.Tool(name="fail", input_schema={"type": "object"})]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        raise MCPError(code=types.INVALID_PARAMS, message=f"no access to {params.arguments}")

    server = Server("strict", on_list_tools=list_tools, on_call_tool=call_tool)
    with trio.fail_after(SAFETY):
        async with sdk_server(server) as client:
            tools = await list_mcp_tools(client, "strict")
            async with CodeModeSession(tools=tools) as session:
                result = await session.exec(
                    "try { await tools.mcp__strict__fail({x: 1}) } "
                    "catch (error) { text(String(error)) }"
                )
    # A plain string, as the reference rejects a failed call (module_loader.rs).
    assert outputs(result) == ["no access to {'x': 1}"]


def test_config_of_common_hosts() -> None:
    servers = parse_mcp_config(
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "/tmp"], "env": {"A": "1"}},
                "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
                "typed": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
                "off": {"command": "x", "disabled": True},
            }
        }
    )
    assert servers == [
        McpServerConfig(name="fs", command="npx", args=("-y", "pkg", "/tmp"), env={"A": "1"}),
        McpServerConfig(name="remote", url="http://127.0.0.1:9/mcp", headers={"X": "y"}),
        McpServerConfig(name="typed", url="http://127.0.0.1:9/mcp"),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, '"mcpServers" object'),
        ({"mcpServers": {"a": {}}}, "`a` needs a `command`"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "`args` must be a list"),
        ({"mcpServers": {"a": {"type": "sse", "url": "http://h"}}}, "SSE transport"),
        ({"mcpServers": {"a": {"type": "ws", "url": "http://h"}}}, "unknown `type`"),
    ],
)
def test_bad_config_is_named(data: Any, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        parse_mcp_config(data)


async def test_a_server_that_cannot_start_is_named(tmp_path: Path) -> None:
    config = McpServerConfig(name="ghost", command=str(tmp_path / "no-such-command"))
    with trio.fail_after(SAFETY), pytest.raises(McpConfigError, match=r"`ghost`.*could not be"):
        async with connect_mcp_servers([config]):
            pass


def test_cli_runs_a_program_against_configured_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "servers.json"
    command = node_command("mcp-server-everything")
    config.write_text(json.dumps({"mcpServers": {"everything": {"command": command}}}))
    assert [server.name for server in load_mcp_config(config)] == ["everything"]
    program = tmp_path / "prog.js"
    program.write_text(
        'const r = await tools.mcp__everything__echo({message: "from the CLI"});\n'
        "forward_output(r);"
    )
    assert cli_main(["run", "--mcp-config", str(config), str(program)]) == 0
    assert "Echo: from the CLI" in capsys.readouterr().out
