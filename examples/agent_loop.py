"""An agent loop driving code mode, with a scripted stand-in for the model (no network).

    python examples/agent_loop.py

The conversation uses the OpenAI Responses API item shapes: the model answers with
``custom_tool_call`` (``exec``, raw JavaScript) and ``function_call`` (``wait``, JSON)
items, and the loop sends back ``custom_tool_call_output`` / ``function_call_output``
items. To use a real model, replace ``ScriptedModel.respond`` with
``client.responses.create(model=..., tools=tools, input=conversation).output``.

What happens:

1. the model sends a program that calls two Python tools in parallel: ``weather``
   (async) and ``population`` (a blocking function, run in a worker thread); each
   takes half a second, longer than the program's ``yield_time_ms`` of 200;
2. so ``exec`` returns ``Script running with cell ID 1`` (the program keeps running);
3. the model calls ``wait`` with that id and gets ``Script completed`` with the output;
4. the model gives its final answer.
"""

from __future__ import annotations

import re
import time
from typing import Any, TypedDict

import trio

from code_mode import CodeModeSession, Notification, OutputItem, Text, tool
from code_mode.model_tools import openai_exec_output, openai_wait_output


class Forecast(TypedDict):
    city: str
    sky: str
    temperature_c: int


@tool
async def weather(city: str) -> Forecast:
    """Today's weather for a city (made up, no network)."""
    await trio.sleep(0.5)
    return {"city": city, "sky": "sunny", "temperature_c": 21}


@tool
def population(city: str) -> int:
    """The population of a city (a blocking lookup; runs in a worker thread)."""
    time.sleep(0.5)
    return {"Lisbon": 545_923}.get(city, 0)


PROGRAM = """\
// @exec: {"yield_time_ms": 200}
notify("Looking up Lisbon...");
const [forecast, people] = await Promise.all([
  tools.weather({ city: "Lisbon" }),
  tools.population({ city: "Lisbon" }),
]);
text(`${forecast.city}: ${forecast.sky}, ${forecast.temperature_c} °C, ` +
     `population ${people.toLocaleString("en-US")}`);
"""


def output_text(items: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for part in items if part["type"] == "input_text")


class ScriptedModel:
    """Plays the model: reads the last tool result and decides the next step, as a
    real model would, but from a script."""

    def respond(
        self, tools: list[dict[str, Any]], conversation: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        assert [t["name"] for t in tools] == ["exec", "wait"]
        last = conversation[-1]
        if last.get("role") == "user":
            return [
                {"type": "custom_tool_call", "call_id": "call_1", "name": "exec", "input": PROGRAM}
            ]
        result = output_text(last["output"])
        running = re.search(r"Script running with cell ID (\S+)", result)
        if running:
            arguments = f'{{"cell_id": "{running[1]}"}}'
            return [
                {
                    "type": "function_call",
                    "call_id": "call_2",
                    "name": "wait",
                    "arguments": arguments,
                }
            ]
        answer = result.split("Output:\n", 1)[1]
        return [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"Here you go: {answer}"}],
            }
        ]


def show(items: list[OutputItem]) -> str:
    return "".join(item.text if isinstance(item, Text) else "[image]" for item in items)


async def run_agent(prompt: str) -> str:
    """The agent loop: ask the model, serve its exec/wait calls, repeat until it answers."""

    def on_notify(notification: Notification) -> None:
        print(f"[notify from cell {notification.cell_id}] {notification.text}")

    model = ScriptedModel()
    async with CodeModeSession(tools=[weather, population], on_notify=on_notify) as cm:
        tools = cm.openai_tools()
        conversation: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        print(f"user: {prompt}")
        for _ in range(10):
            output = model.respond(tools, conversation)
            conversation.extend(output)
            calls = [i for i in output if i["type"] in ("custom_tool_call", "function_call")]
            if not calls:
                answer = output[-1]["content"][0]["text"]
                print(f"assistant: {answer}")
                return str(answer)
            for call in calls:
                custom = call["type"] == "custom_tool_call"
                arguments = call["input"] if custom else call["arguments"]
                print(f"model -> {call['name']}:\n{arguments.rstrip()}")
                items = await cm.handle_call(call["name"], arguments, call_id=call["call_id"])
                print(f"{call['name']} result:\n{show(items)}")
                make_output = openai_exec_output if custom else openai_wait_output
                conversation.append(make_output(call["call_id"], items))
    raise RuntimeError("the model did not finish")


async def main() -> str:
    return await run_agent("What is the weather in Lisbon, and how many people live there?")


if __name__ == "__main__":
    trio.run(main)
