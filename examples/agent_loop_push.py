"""An agent loop that never polls: the model ends its turn on ``Script running`` and is
woken with the program's result when it finishes (a scripted model, no network).

    python examples/agent_loop_push.py

As in ``agent_loop.py`` the conversation uses the OpenAI Responses API item shapes. The
difference is ``CodeModeSession(on_finished=...)``: the session pushes the result of a
program that outlived its ``exec`` onto a memory channel, and the tool descriptions and
the ``Script running`` result tell the model it will be given that result. So:

1. the model sends a program whose tool takes longer than its ``yield_time_ms``;
2. ``exec`` returns ``Script running with cell ID 1`` and a note saying the result will
   come by itself;
3. the model ends its turn (a message to the user, no tool call): no ``wait``, no
   conversation re-sent to the model while the program works;
4. the loop, with a program still running, waits for the push and gives the result to
   the model as a new message;
5. the model answers.

If the user typed something while the model was inside an ``exec``/``wait`` call,
``await cm.preempt(cell_id)`` would end that call at once, the program running on.
"""

from __future__ import annotations

import math
import re
from typing import Any

import trio

from code_mode import CellFinished, CodeModeSession, OutputItem, Text, tool
from code_mode.model_tools import openai_content, openai_exec_output, openai_wait_output

RUNNING = re.compile(r"^Script running with cell ID (\S+)")


@tool
async def count_errors(service: str) -> int:
    """Count yesterday's errors in a service's logs (made up; takes a while)."""
    await trio.sleep(0.5)
    return {"checkout": 17}.get(service, 0)


PROGRAM = """\
// @exec: {"yield_time_ms": 100}
text("Counting errors...");
const errors = await tools.count_errors({ service: "checkout" });
text(`checkout had ${errors} errors yesterday`);
"""


def output_text(parts: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for part in parts if part["type"] == "input_text")


def message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


class ScriptedModel:
    """Plays the model: reads the last item of the conversation and decides, from a
    script, what a model told "you will be given its result" would do."""

    def respond(
        self, tools: list[dict[str, Any]], conversation: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        assert "you will be given its result" in tools[0]["description"]
        last = conversation[-1]
        if last.get("role") == "user" and isinstance(last["content"], str):
            return [
                {"type": "custom_tool_call", "call_id": "call_1", "name": "exec", "input": PROGRAM}
            ]
        if last.get("type") == "custom_tool_call_output":
            result = output_text(last["output"])
            if RUNNING.match(result):
                # Told the result will come by itself: end the turn instead of polling.
                return [message("I'm counting the errors; I'll tell you as soon as I know.")]
        text = output_text(last["content"])  # the pushed result, as a user message
        answer = text.split("Output:\n", 1)[1].splitlines()[-1]
        return [message(f"Done: {answer}.")]


def show(items: list[OutputItem]) -> str:
    """A result as text: the header, then one line per item."""
    texts = [item.text if isinstance(item, Text) else "[image]" for item in items]
    return texts[0] + "\n".join(texts[1:])


async def run_agent(prompt: str) -> str:
    """The agent loop: model turn, tool calls; when the model ends its turn while a
    program still runs, wait for that program's push and start the next turn with it."""
    pushes, pushed = trio.open_memory_channel[CellFinished](math.inf)
    model = ScriptedModel()
    async with CodeModeSession(tools=[count_errors], on_finished=pushes.send_nowait) as cm:
        tools = cm.openai_tools()
        conversation: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        running: set[str] = set()  # cells handed back as running, not yet finished
        print(f"user: {prompt}")
        for _ in range(10):
            output = model.respond(tools, conversation)
            conversation.extend(output)
            calls = [i for i in output if i["type"] in ("custom_tool_call", "function_call")]
            if not calls:
                answer = str(output[-1]["content"][0]["text"])
                print(f"assistant: {answer}")
                if not running:
                    return answer
                # The model's turn is over, and no one polls: sleep until a push.
                finished = await pushed.receive()
                running.discard(finished.cell_id)
                print(f"pushed (cell {finished.cell_id}):\n{show(finished.items)}")
                content = openai_content(finished.message_items)
                conversation.append({"role": "user", "content": content})
                continue
            for call in calls:
                custom = call["type"] == "custom_tool_call"
                arguments = call["input"] if custom else call["arguments"]
                print(f"model -> {call['name']}:\n{arguments.rstrip()}")
                items = await cm.handle_call(call["name"], arguments, call_id=call["call_id"])
                print(f"{call['name']} result:\n{show(items)}")
                status = RUNNING.match(show(items))
                if status:
                    running.add(status[1])
                make_output = openai_exec_output if custom else openai_wait_output
                conversation.append(make_output(call["call_id"], items))
    raise RuntimeError("the model did not finish")


async def main() -> str:
    return await run_agent("How many errors did checkout have yesterday?")


if __name__ == "__main__":
    trio.run(main)
