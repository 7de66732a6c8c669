"""The OpenAI Agents SDK function tools (code_mode/adapters/openai_agents.py), driven by
the SDK's `ScriptedModel` under `asyncio.run`: exec, a yielded program resumed with
wait, the session's own descriptions."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from code_mode import CodeModeSession, tool
from code_mode.adapters.openai_agents import code_mode_function_tools

set_tracing_disabled(True)  # no trace export attempted without an API key


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0)
    return a + b


def last_output(call: ModelCall) -> str:
    items: list[Any] = list(call.input)
    outputs = [
        item
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    output = outputs[-1]["output"]
    if isinstance(output, str):
        return output
    return "".join(part.get("text", "") for part in output)


def test_exec_then_wait_through_an_agent() -> None:
    code = (
        '// @exec: {"yield_time_ms": 0}\n'
        "await new Promise(r => setTimeout(r, 100)); text(await tools.add({a: 2, b: 40}))"
    )

    def then_wait(call: ModelCall) -> ModelStep:
        cell = re.search(r"cell ID (\S+)", last_output(call))
        assert cell is not None, last_output(call)
        arguments = json.dumps({"cell_id": cell.group(1), "yield_time_ms": 5000})
        return ModelStep(output=[function_call("wait", arguments, call_id="call-2")])

    def answer(call: ModelCall) -> ModelStep:
        return ModelStep(output=[assistant_message(last_output(call))])

    model = ScriptedModel(
        [
            ModelStep(output=[function_call("exec", {"code": code}, call_id="call-1")]),
            ModelStep.respond(then_wait),
            ModelStep.respond(answer),
        ]
    )

    async def main() -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
        async with CodeModeSession(tools=[add]) as cm:
            agent = Agent(name="coder", model=model, tools=code_mode_function_tools(cm))
            result = await Runner.run(agent, "What is 2 + 40?")
            expected = [(t["name"], t["description"]) for t in cm.mcp_tools()]
            seen = [(t.name, getattr(t, "description", "")) for t in model.calls[0].tools]
            return str(result.final_output), expected, seen

    output, expected, seen = asyncio.run(main())
    assert seen == expected
    assert output.startswith("Script completed") and output.endswith("42"), output
    model.assert_complete()
