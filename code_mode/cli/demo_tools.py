"""The harmless demo tools ``code-mode run`` gives a program (no network, no files).

``echo``, ``add``, ``sleep`` and ``weather`` let a newcomer see tool calls, yields and
completion without writing any Python. Each is a nested tool (a definition and an async
``call``), routed like any other by a :class:`~code_mode.integrations.routing.ToolRouter`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import attrs
import trio

from .._types import JSON, CellId, NestedToolCall, ToolDefinition, ToolKind, ToolName
from ..integrations.routing import NestedTool, ToolRouter


def _object_schema(properties: dict[str, JSON], required: list[str]) -> dict[str, JSON]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _arguments(input: JSON) -> dict[str, JSON]:
    return input if isinstance(input, dict) else {}


async def _echo(input: JSON) -> JSON:
    return input


async def _add(input: JSON) -> JSON:
    a, b = _arguments(input).get("a"), _arguments(input).get("b")
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        raise ValueError("add expects numbers `a` and `b`")
    return a + b


async def _sleep(input: JSON) -> JSON:
    ms = _arguments(input).get("ms", 0)
    if not isinstance(ms, int | float):
        raise ValueError("sleep expects a number `ms`")
    await trio.sleep(min(max(float(ms), 0.0), 5000.0) / 1000)
    return None


async def _weather(input: JSON) -> JSON:
    city = str(_arguments(input).get("city", ""))
    seed = sum(map(ord, city))
    skies = ["clear", "cloudy", "rain", "fog", "windy"]
    return {"city": city, "temperature_c": 5 + seed % 25, "sky": skies[seed % len(skies)]}


@attrs.frozen
class DemoTool:
    """One demo tool: a :class:`~code_mode.NestedTool`."""

    definition: ToolDefinition
    _run: Callable[[JSON], Awaitable[JSON]] = attrs.field(alias="run")

    async def call(self, input: JSON) -> JSON:
        return await self._run(input)


def _demo(
    name: str, description: str, schema: dict[str, JSON], run: Callable[[JSON], Awaitable[JSON]]
) -> DemoTool:
    definition = ToolDefinition(
        name=name,
        tool_name=ToolName(name),
        description=description,
        kind=ToolKind.FUNCTION,
        input_schema=schema,
    )
    return DemoTool(definition, run=run)


DEMO_TOOLS: list[NestedTool] = [
    _demo("echo", "Returns its input unchanged.", {"type": "object"}, _echo),
    _demo(
        "add",
        "Adds two numbers.",
        _object_schema({"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
        _add,
    ),
    _demo(
        "sleep",
        "Waits `ms` milliseconds (at most 5000), then returns null.",
        _object_schema({"ms": {"type": "number"}}, ["ms"]),
        _sleep,
    ),
    _demo(
        "weather",
        "Made-up weather for a city (no network).",
        _object_schema({"city": {"type": "string"}}, ["city"]),
        _weather,
    ),
]


class DemoDelegate:
    """Routes a program's calls to ``tools`` and the demo tools (a tool of ``tools``
    wins over a demo tool of its name) and prints notifications."""

    def __init__(self, tools: Sequence[NestedTool] = ()) -> None:
        self.router = ToolRouter([*tools, *DEMO_TOOLS])

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        return await self.router.invoke_tool(call)

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        print(f"[notify] {text}", flush=True)

    async def cell_closed(self, cell_id: CellId) -> None:
        return None


def demo_tools_help() -> str:
    lines = ["demo tools a program can call (await tools.<name>(...)):"]
    lines += [f"  {t.definition.name:<8} {t.definition.description}" for t in DEMO_TOOLS]
    return "\n".join(lines)
