"""``code-mode run``: run one program as a cell to its end, printing each event."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from .._config import RuntimeConfig
from .._delegate import ExecuteRequest
from .._session_runtime import SessionRuntime
from .._types import (
    CellEvent,
    Completed,
    Image,
    Pending,
    Terminated,
    Text,
    YieldAfter,
)
from .demo_tools import DEMO_TOOLS, DemoDelegate
from .exit_status import EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT


def _describe(event: CellEvent) -> str:
    # A program that threw ends as a `Completed` event with an error; its header says
    # `Failed`, as the model's `Script failed` does.
    failed = isinstance(event, Completed) and event.error_text is not None
    lines: list[str] = ["== Failed" if failed else f"== {type(event).__name__}"]
    for item in event.content_items:
        if isinstance(item, Text):
            lines.append(item.text)
        elif isinstance(item, Image):
            url = item.image_url if len(item.image_url) < 80 else item.image_url[:77] + "..."
            lines.append(f"[image {url}]")
        else:
            url = item.audio_url if len(item.audio_url) < 80 else item.audio_url[:77] + "..."
            lines.append(f"[audio {url}]")
    if isinstance(event, Pending):
        lines.append(f"(waiting on {', '.join(event.pending_tool_call_ids) or 'nothing'})")
    if isinstance(event, Completed) and event.error_text is not None:
        lines.append(f"error: {event.error_text}")
    return "\n".join(lines)


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
    from .mcp import mcp_config_tools

    async with mcp_config_tools(mcp_config) as mcp_tools:
        return await _run(source, yield_seconds, config, timeout, [*tools, *mcp_tools])


async def _run(
    source: str, yield_seconds: float, config: RuntimeConfig, timeout: float, tools: Sequence[Any]
) -> int:
    enabled = [tool.definition for tool in [*DEMO_TOOLS, *tools]]
    request = ExecuteRequest(tool_call_id="cli", enabled_tools=enabled, source=source)
    async with SessionRuntime(DemoDelegate(tools), config) as runtime:
        started = await runtime.execute(request, YieldAfter(yield_seconds))
        with trio.move_on_after(timeout):
            event = await started.initial_event()
            while True:
                print(_describe(event), flush=True)
                if isinstance(event, Completed):
                    return EXIT_OK if event.error_text is None else EXIT_FAILED
                if isinstance(event, Terminated):
                    return EXIT_FAILED
                event = await runtime.observe(started.cell_id, YieldAfter(yield_seconds))
        print(_describe(await runtime.terminate(started.cell_id)), flush=True)
        print(f"code-mode: terminated after the timeout of {timeout:g} s", file=sys.stderr)
        return EXIT_TIMEOUT
