"""The ``code-mode`` command: run a JavaScript file as a cell, printing each event.

    code-mode run examples/hello.js
    code-mode run --mcp-config servers.json prog.js      # plus MCP servers' tools
    code-mode mcp serve --tools pkg.module:tools [--mcp-config servers.json] [--http HOST:PORT]

The cell gets a few harmless demo tools (``echo``, ``add``, ``sleep``, ``weather``) so a
newcomer can see tool calls, yields and completion without writing any Python.

Subcommands are added in :func:`build_parser`, one ``add_parser`` each; ``run`` is the
first. Exit status: 0 when the program completed, 1 when it failed or was terminated,
2 for a usage error, 124 when ``--timeout`` terminated it, 130 on Ctrl-C.
The MCP commands need the ``mcp`` extra (``code_mode.integrations.mcp``).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from . import __version__
from ._config import RuntimeConfig
from ._session import SessionRuntime
from ._types import (
    JSON,
    CellEvent,
    CellId,
    Completed,
    ExecuteRequest,
    Image,
    NestedToolCall,
    Pending,
    Terminated,
    Text,
    ToolDefinition,
    ToolKind,
    ToolName,
    YieldAfter,
)


def _object_schema(properties: dict[str, JSON], required: list[str]) -> dict[str, JSON]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


DEMO_TOOLS: list[ToolDefinition] = [
    ToolDefinition(
        name="echo",
        tool_name=ToolName("echo"),
        description="Returns its input unchanged.",
        kind=ToolKind.FUNCTION,
        input_schema={"type": "object"},
    ),
    ToolDefinition(
        name="add",
        tool_name=ToolName("add"),
        description="Adds two numbers.",
        kind=ToolKind.FUNCTION,
        input_schema=_object_schema({"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
    ),
    ToolDefinition(
        name="sleep",
        tool_name=ToolName("sleep"),
        description="Waits `ms` milliseconds (at most 5000), then returns null.",
        kind=ToolKind.FUNCTION,
        input_schema=_object_schema({"ms": {"type": "number"}}, ["ms"]),
    ),
    ToolDefinition(
        name="weather",
        tool_name=ToolName("weather"),
        description="Made-up weather for a city (no network).",
        kind=ToolKind.FUNCTION,
        input_schema=_object_schema({"city": {"type": "string"}}, ["city"]),
    ),
]


class DemoDelegate:
    """Implements the demo tools (and routes to ``tools``) and prints notifications."""

    def __init__(self, tools: Sequence[Any] = ()) -> None:
        self.tools = {tool.definition.tool_name: tool for tool in tools}

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        tool = self.tools.get(call.tool_name)
        if tool is not None:
            result: JSON = await tool.call(call.input)
            return result
        args = call.input if isinstance(call.input, dict) else {}
        name = call.tool_name.name
        if name == "echo":
            return call.input
        if name == "add":
            a, b = args.get("a"), args.get("b")
            if not isinstance(a, int | float) or not isinstance(b, int | float):
                raise ValueError("add expects numbers `a` and `b`")
            return a + b
        if name == "sleep":
            ms = args.get("ms", 0)
            if not isinstance(ms, int | float):
                raise ValueError("sleep expects a number `ms`")
            await trio.sleep(min(max(float(ms), 0.0), 5000.0) / 1000)
            return None
        if name == "weather":
            city = str(args.get("city", ""))
            seed = sum(map(ord, city))
            skies = ["clear", "cloudy", "rain", "fog", "windy"]
            return {"city": city, "temperature_c": 5 + seed % 25, "sky": skies[seed % len(skies)]}
        raise ValueError(f"unknown demo tool {name}")

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        print(f"[notify] {text}", flush=True)

    async def cell_closed(self, cell_id: CellId) -> None:
        return None


def _describe(event: CellEvent) -> str:
    lines: list[str] = [f"== {type(event).__name__}"]
    for item in event.content_items:
        if isinstance(item, Text):
            lines.append(item.text)
        elif isinstance(item, Image):
            url = item.image_url if len(item.image_url) < 80 else item.image_url[:77] + "..."
            lines.append(f"[image {url}]")
    if isinstance(event, Pending):
        lines.append(f"(waiting on {', '.join(event.pending_tool_call_ids) or 'nothing'})")
    if isinstance(event, Completed) and event.error_text is not None:
        lines.append(f"error: {event.error_text}")
    return "\n".join(lines)


#: Exit status when ``--timeout`` terminated the program (as coreutils' ``timeout``).
EXIT_TIMEOUT = 124
#: Exit status on Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


async def run_source(
    source: str,
    *,
    yield_seconds: float,
    config: RuntimeConfig,
    timeout: float = math.inf,
    tools: Sequence[Any] = (),
    mcp_config: Path | None = None,
) -> int:
    """Run one program to its end, printing events; returns a process exit status.

    ``tools`` (nested tools) and the servers of ``mcp_config`` join the demo tools.
    After ``timeout`` seconds the cell is terminated: what it produced is printed and
    the status is :data:`EXIT_TIMEOUT`."""
    if mcp_config is None:
        return await _run(source, yield_seconds, config, timeout, tools)
    from .integrations.mcp._cli import mcp_config_tools

    async with mcp_config_tools(mcp_config) as mcp_tools:
        return await _run(source, yield_seconds, config, timeout, [*tools, *mcp_tools])


async def _run(
    source: str, yield_seconds: float, config: RuntimeConfig, timeout: float, tools: Sequence[Any]
) -> int:
    enabled = [*DEMO_TOOLS, *(tool.definition for tool in tools)]
    request = ExecuteRequest(tool_call_id="cli", enabled_tools=enabled, source=source)
    async with SessionRuntime(DemoDelegate(tools), config) as runtime:
        started = await runtime.execute(request, YieldAfter(yield_seconds))
        with trio.move_on_after(timeout):
            event = await started.initial_event()
            while True:
                print(_describe(event), flush=True)
                if isinstance(event, Completed):
                    return 0 if event.error_text is None else 1
                if isinstance(event, Terminated):
                    return 1
                event = await runtime.observe(started.cell_id, YieldAfter(yield_seconds))
        print(_describe(await runtime.terminate(started.cell_id)), flush=True)
        print(f"code-mode: terminated after the timeout of {timeout:g} s", file=sys.stderr)
        return EXIT_TIMEOUT


def _demo_tools_help() -> str:
    lines = ["demo tools a program can call (await tools.<name>(...)):"]
    lines += [f"  {tool.name:<8} {tool.description}" for tool in DEMO_TOOLS]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subparser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="code-mode",
        description="Run LLM-style JavaScript programs as code_mode cells.",
        epilog=_demo_tools_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run a JavaScript file as a cell with demo tools, printing each event",
        description="Run a JavaScript file as a cell with demo tools, printing each event.",
        epilog=_demo_tools_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("file", type=Path, help="the program (JavaScript source)")
    run.add_argument(
        "--yield-seconds",
        type=float,
        default=10.0,
        help="report partial output at least this often (default 10)",
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=math.inf,
        metavar="SECONDS",
        help=f"terminate the program after this long, print what it produced and exit "
        f"with status {EXIT_TIMEOUT} (default: no limit)",
    )
    mcp_config_help = "also run the MCP servers of this mcpServers JSON file (needs code-mode[mcp])"
    run.add_argument("--mcp-config", type=Path, help=mcp_config_help)
    mcp = commands.add_parser("mcp", help="MCP integration (needs code-mode[mcp])")
    serve = mcp.add_subparsers(dest="mcp_command", required=True).add_parser(
        "serve", help="serve exec/wait to MCP clients (stdio, or streamable HTTP with --http)"
    )
    serve.add_argument("--tools", action="append", metavar="PKG.MODULE:ATTR", help="nested tools")
    serve.add_argument("--mcp-config", type=Path, help="MCP servers whose tools programs call")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at /mcp")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "mcp":
        try:
            from .integrations.mcp._cli import serve_main
        except ImportError as error:
            print(f"code-mode: {error}", file=sys.stderr)
            return 2
        return serve_main(args)
    try:
        source = args.file.read_text(encoding="utf-8")
    except OSError as error:
        print(f"code-mode: {error}", file=sys.stderr)
        return 2
    run_file = functools.partial(
        run_source,
        source,
        yield_seconds=args.yield_seconds,
        config=RuntimeConfig(),
        timeout=args.timeout,
        mcp_config=args.mcp_config,
    )
    try:
        return trio.run(run_file)
    except (ImportError, OSError, ValueError) as error:  # a missing extra, a bad config
        print(f"code-mode: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, BaseExceptionGroup) as error:
        # trio has cancelled everything and the session has closed its isolates and
        # worker by now; a Ctrl-C may arrive wrapped in the session's task groups.
        if not _is_interrupt(error):
            raise
        print("code-mode: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _is_interrupt(error: BaseException) -> bool:
    if isinstance(error, KeyboardInterrupt):
        return True
    if isinstance(error, BaseExceptionGroup):
        rest = error.split(KeyboardInterrupt)[1]
        return rest is None or _all_cancelled(rest)
    return False


def _all_cancelled(group: BaseExceptionGroup[BaseException]) -> bool:
    return all(
        _all_cancelled(e) if isinstance(e, BaseExceptionGroup) else isinstance(e, trio.Cancelled)
        for e in group.exceptions
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
