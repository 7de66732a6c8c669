"""The harmless demo tools ``code-mode run`` gives a program (no network, no files).

``echo``, ``add``, ``sleep`` and ``weather`` let a newcomer see tool calls, yields and
completion without writing any Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

from .._types import JSON, CellId, NestedToolCall, ToolDefinition, ToolKind, ToolName


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


def demo_tools_help() -> str:
    lines = ["demo tools a program can call (await tools.<name>(...)):"]
    lines += [f"  {tool.name:<8} {tool.description}" for tool in DEMO_TOOLS]
    return "\n".join(lines)
