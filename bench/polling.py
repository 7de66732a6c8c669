"""P1: what polling costs, against push. Model turns and bytes re-sent for one program.

    python -m bench.polling                       # the 60 s program, three strategies
    python -m bench.polling --seconds 600         # a longer program
    python -m bench.polling --model-latency 2     # a model that takes 2 s a turn
    python -m bench.polling --context-bytes 200000 --json out.json
    python -m bench.polling --quiet               # no progress output until the end

A scripted model (OpenAI Responses item shapes, no network) runs one program that
works for ``--seconds`` (60 by default) and reports progress every tenth of that, with
``exec``'s default ``yield_time_ms``. Three strategies:

* **polling**: as the reference's models do, it calls ``wait`` with ``yield_time_ms:
  1000`` on every ``Script running`` until the program ends;
* **polling, idle floor**: the same model on ``CodeModeSession(wait_idle_floor_ms=
  30000)``, so a ``wait`` that finds nothing new holds on for output;
* **push**: ``CodeModeSession(on_finished=...)``; the model, told it will be given the
  result, ends its turn on ``Script running``, and the loop starts the next turn with
  the pushed result (``examples/agent_loop_push.py``).

Measured per strategy: model turns (requests to the model), ``wait`` calls (and those
that brought nothing new), and the bytes each request sends: the conversation (the JSON
of its input items, which a stateless API re-sends whole every turn, starting from
``--context-bytes`` of earlier conversation) and the tool definitions sent beside it.

Time is virtual: the run uses trio's ``MockClock`` with an autojump threshold, so the
clock jumps to the next deadline (a program timer, a yield) whenever every task has
waited that long in real time, and a 60 s program takes a few seconds. Program timers
are trio deadlines on the host, so the program sees the same virtual time. Thread
isolation: a worker process would take the jumps as a missed heartbeat.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/polling.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attrs
import trio
import trio.testing

from code_mode import CellFinished, CodeModeSession, OutputItem, RuntimeConfig, Text
from code_mode.model_tools import (
    PUSH_RUNNING_NOTE,
    openai_content,
    openai_exec_output,
    openai_wait_output,
)

RUNNING = re.compile(r"^Script running with cell ID (\S+)")
POLL_MS = 1000  # the reference's models' habit
IDLE_FLOOR_MS = 30_000
AUTOJUMP = 0.1  # real seconds every task must have waited before the clock jumps

STRATEGIES = ("polling", "polling, idle floor", "push")


def program(seconds: float, *, quiet: bool = False) -> str:
    """Works for ``seconds`` and reports progress ten times (unless ``quiet``), then
    the answer."""
    step_ms = round(seconds * 100)  # a tenth, in milliseconds
    progress = "" if quiet else "  text(`step ${step} of 10 done`);\n"
    return (
        "for (let step = 1; step <= 10; step++) {\n"
        f"  await new Promise(r => setTimeout(r, {step_ms}));\n"
        f"{progress}"
        "}\n"
        'text("answer: 42");\n'
    )


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(part.get("text", "") for part in parts if part["type"] == "input_text")


def _message(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    return {"type": "message", "role": "assistant", "content": content}


@attrs.define
class Tally:
    """What one strategy cost."""

    strategy: str
    turns: int = 0
    waits: int = 0
    empty_waits: int = 0
    conversation_bytes: int = 0
    tool_bytes: int = 0
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    answer: str = ""


class ScriptedModel:
    """The model: polls with 1 s waits, or, when ``ends_turn``, trusts the push."""

    def __init__(self, source: str, *, ends_turn: bool, latency: float, tally: Tally) -> None:
        self._source = source
        self._ends_turn = ends_turn
        self._latency = latency
        self._tally = tally
        self._calls = 0

    async def respond(
        self, tools: list[dict[str, Any]], conversation: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        self._tally.turns += 1
        self._tally.conversation_bytes += len(json.dumps(conversation).encode())
        self._tally.tool_bytes += len(json.dumps(tools).encode())
        if self._latency:
            await trio.sleep(self._latency)  # virtual: the program runs on meanwhile
        last = conversation[-1]
        if last.get("role") == "user" and isinstance(last["content"], str):
            return [self._call("custom_tool_call", "exec", input=self._source)]
        if last.get("type") in ("custom_tool_call_output", "function_call_output"):
            result = _text(last["output"])
            running = RUNNING.match(result)
            if running and self._ends_turn:
                return [_message("It is running; I will report when it is done.")]
            if running:
                arguments = json.dumps({"cell_id": running[1], "yield_time_ms": POLL_MS})
                return [self._call("function_call", "wait", arguments=arguments)]
        else:  # the pushed result, given as a user message
            result = _text(last["content"])
        return [_message(result.splitlines()[-1])]

    def _call(self, kind: str, name: str, **payload: str) -> dict[str, Any]:
        self._calls += 1
        return {"type": kind, "call_id": f"call_{self._calls}", "name": name, **payload}


def _body(items: list[OutputItem]) -> list[OutputItem]:
    """The program's output in a result (not its header, nor a push note)."""
    return [
        item
        for item in items[1:]
        if not (isinstance(item, Text) and item.text == PUSH_RUNNING_NOTE)
    ]


async def run_strategy(
    strategy: str,
    seconds: float,
    *,
    latency: float = 0.0,
    context_bytes: int = 0,
    quiet: bool = False,
) -> Tally:
    """One conversation: the user's question, the model's turns, until it answers."""
    tally = Tally(strategy)
    push = strategy == "push"
    pushes, pushed = trio.open_memory_channel[CellFinished](math.inf)
    options: dict[str, Any] = {"config": RuntimeConfig(isolation="thread")}
    if push:
        options["on_finished"] = pushes.send_nowait
    if strategy == "polling, idle floor":
        options["wait_idle_floor_ms"] = IDLE_FLOOR_MS
    source = program(seconds, quiet=quiet)
    model = ScriptedModel(source, ends_turn=push, latency=latency, tally=tally)
    started = trio.current_time()
    async with CodeModeSession(**options) as cm:
        tools = cm.openai_tools()
        conversation: list[dict[str, Any]] = []
        if context_bytes:  # earlier turns of the session, re-sent with every request
            filler = "x" * max(0, context_bytes - 40)
            conversation.append({"role": "user", "content": filler})
            conversation.append(_message("(earlier work)"))
        conversation.append({"role": "user", "content": "Run the analysis."})
        running: set[str] = set()
        while True:
            output = await model.respond(tools, conversation)
            conversation.extend(output)
            calls = [i for i in output if i["type"] in ("custom_tool_call", "function_call")]
            if not calls:
                if not running:
                    tally.answer = output[-1]["content"][0]["text"]
                    break
                finished = await pushed.receive()
                running.discard(finished.cell_id)
                content = openai_content(finished.message_items)
                conversation.append({"role": "user", "content": content})
                continue
            for call in calls:
                custom = call["type"] == "custom_tool_call"
                arguments = call["input"] if custom else call["arguments"]
                items = await cm.handle_call(call["name"], arguments, call_id=call["call_id"])
                header = items[0]
                assert isinstance(header, Text)
                status = RUNNING.match(header.text)
                if status:
                    running.add(status[1])
                else:
                    running.clear()
                if not custom:
                    tally.waits += 1
                    tally.empty_waits += not _body(items)
                make_output = openai_exec_output if custom else openai_wait_output
                conversation.append(make_output(call["call_id"], items))
    tally.virtual_seconds = trio.current_time() - started
    return tally


def measure(
    seconds: float, *, latency: float = 0.0, context_bytes: int = 0, quiet: bool = False
) -> list[Tally]:
    """Every strategy, each in a trio run of its own on a virtual clock."""
    tallies = []
    for strategy in STRATEGIES:
        clock = trio.testing.MockClock(autojump_threshold=AUTOJUMP)
        began = time.perf_counter()
        tally = trio.run(
            lambda s=strategy: run_strategy(
                s, seconds, latency=latency, context_bytes=context_bytes, quiet=quiet
            ),
            clock=clock,
        )
        tally.wall_seconds = time.perf_counter() - began
        tallies.append(tally)
    return tallies


def format_table(tallies: Sequence[Tally]) -> str:
    polling = tallies[0]
    rows = [
        "| strategy | model turns | `wait` calls (nothing new) | conversation bytes sent "
        "| tool-definition bytes sent | vs polling (all bytes) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for tally in tallies:
        total = tally.conversation_bytes + tally.tool_bytes
        ratio = total / (polling.conversation_bytes + polling.tool_bytes)
        rows.append(
            f"| {tally.strategy} | {tally.turns} | {tally.waits} ({tally.empty_waits}) "
            f"| {tally.conversation_bytes:,} | {tally.tool_bytes:,} | {ratio:.3f} |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the program's duration")
    parser.add_argument("--model-latency", type=float, default=0.0, help="seconds a turn")
    parser.add_argument(
        "--context-bytes", type=int, default=0, help="earlier conversation re-sent each turn"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    tallies = measure(
        args.seconds,
        latency=args.model_latency,
        context_bytes=args.context_bytes,
        quiet=args.quiet,
    )
    shape = "quiet until the end" if args.quiet else "progress every tenth"
    print(
        f"P1: a {args.seconds:g} s program ({shape}), model latency "
        f"{args.model_latency:g} s, {args.context_bytes:,} bytes of earlier conversation"
    )
    print(format_table(tallies))
    for tally in tallies:
        print(
            f"  {tally.strategy}: answer {tally.answer!r}, {tally.virtual_seconds:.1f} s "
            f"virtual, {tally.wall_seconds:.1f} s wall"
        )
    if args.json is not None:
        args.json.write_text(json.dumps([attrs.asdict(t) for t in tallies], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
