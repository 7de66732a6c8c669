"""The pydantic-ai toolset (code_mode/adapters/pydantic_ai.py), driven by pydantic-ai's
scripted `FunctionModel` under `asyncio.run`: exec, a yielded program resumed with wait,
the session's own descriptions."""

from __future__ import annotations

import asyncio
import re

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from code_mode import CodeModeSession, tool
from code_mode.adapters.pydantic_ai import code_mode_toolset


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0)
    return a + b


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
    ]


def test_exec_then_wait_through_an_agent() -> None:
    seen_tools: list[tuple[str, str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen_tools[:] = [(t.name, t.description or "") for t in info.function_tools]
        done = returns(messages)
        if not done:
            code = (
                '// @exec: {"yield_time_ms": 0}\n'
                "await new Promise(r => setTimeout(r, 100)); text(await tools.add({a: 2, b: 40}))"
            )
            return ModelResponse(parts=[ToolCallPart("exec", {"code": code}, "call-1")])
        content = done[-1].content
        last = "".join(map(str, content)) if isinstance(content, list) else str(content)
        cell = re.search(r"cell ID (\S+)", last)
        if cell is not None:
            arguments = {"cell_id": cell.group(1), "yield_time_ms": 5000}
            return ModelResponse(parts=[ToolCallPart("wait", arguments, f"call-{len(done) + 1}")])
        return ModelResponse(parts=[TextPart(last)])

    async def main() -> tuple[str, list[tuple[str, str]]]:
        async with CodeModeSession(tools=[add]) as cm:
            agent = Agent(FunctionModel(model), toolsets=[code_mode_toolset(cm)])
            result = await agent.run("What is 2 + 40?")
            expected = [(t["name"], t["description"]) for t in cm.mcp_tools()]
            assert seen_tools == expected
            return result.output, expected

    output, _ = asyncio.run(main())
    assert output.startswith("Script completed") and output.endswith("42"), output
