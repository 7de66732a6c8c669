"""Hostile programs, round 2: amplification, liveness and malformed model input.

Each test pins one attack that used to break a documented guarantee (stored values that
cost the host far more than their limit, a number JavaScript can write but JSON cannot
hold, a misbehaving tool or notify delegate, output items that cost nothing, a cell
that runs forever) and asserts the runtime now contains it to the one cell, in both
isolation modes.
"""

from __future__ import annotations

import trio

from code_mode import (
    CellEvent,
    Completed,
    NestedToolCall,
    SessionRuntime,
    Text,
    YieldAfter,
)
from code_mode._engine._bridge import MessageValidator, ProtocolViolation

from ..helpers import SAFETY, GateDelegate, config, request

MiB = 1024 * 1024


async def run_cell(
    runtime: SessionRuntime, source: str, tools: list[str] | None = None
) -> CellEvent:
    with trio.fail_after(10 * SAFETY):
        started = await runtime.execute(request(source, tools or []), YieldAfter(10 * SAFETY))
        return await started.initial_event()


async def assert_carries_on(runtime: SessionRuntime) -> None:
    assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])


# -- item 3: stored values amplify ---------------------------------------------------


async def test_stored_values_never_make_later_cells_unrunnable(isolation: str) -> None:
    """Two million references to one `{}` are 6 MB of JSON (within `max_stored_bytes`)
    but two million distinct objects once parsed: far above a 32 MiB cell. Stored values
    reach later cells as text, parsed only by `load`, so those cells still start."""
    limits = config(isolation, memory_limit_bytes=32 * MiB)
    async with SessionRuntime(GateDelegate(), limits) as runtime:
        source = "const o = {}; store('k', new Array(2000000).fill(o)); text('stored');"
        assert await run_cell(runtime, source) == Completed([Text("stored")])
        assert await run_cell(runtime, "text('hi');") == Completed([Text("hi")])
        event = await run_cell(runtime, "text(typeof load); store('k', null); text('reset');")
        assert event == Completed([Text("function"), Text("reset")])
        assert await run_cell(runtime, "text(load('k'));") == Completed([Text("null")])


async def test_a_stored_value_is_loaded_as_it_was_stored(isolation: str) -> None:
    """The text round trip keeps every JSON value exactly (keys, escapes, numbers)."""
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        value = '{ "__proto__": [1, -2.5e-7, "\\ud800 é 😀 \\"q\\""], "n": null, "t": true }'
        event = await run_cell(runtime, f"store('\\ud800k', {value}); text('stored');")
        assert event == Completed([Text("stored")])
        event = await run_cell(
            runtime, f"text(JSON.stringify(load('\\ud800k')) === JSON.stringify({value}));"
        )
        assert event == Completed([Text("true")])


async def test_text_the_host_cannot_parse_only_fails_load_of_its_key(isolation: str) -> None:
    """The host never parses stored values: even a text that is not JSON (the
    runtime's `store` never writes one) costs later cells nothing but a failing `load`
    of that key."""
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        assert runtime._commit_writes({"bad": "{", "good": "[1]"}) is None
        event = await run_cell(
            runtime, "text(load('good')); try { load('bad'); } catch (e) { text(e.name); }"
        )
        assert event == Completed([Text("[1]"), Text("SyntaxError")])


# -- item 4: numbers JavaScript writes and JSON cannot hold -------------------------


async def test_an_infinite_stored_number_is_refused_at_store_time(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        for literal in ("1e400", "-1e400", "1" * 5000):
            event = await run_cell(runtime, f'store("k", [JSON.rawJSON("{literal}")]);')
            shown = literal if len(literal) <= 40 else literal[:40] + "..."
            assert event == Completed(
                [],
                error_text=f'Unable to store "k": it holds the number {shown}, '
                "which is out of range",
            )
        event = await run_cell(
            runtime, 'store("k", { v: JSON.rawJSON("1e300") }); text(load("k").v);'
        )
        assert event == Completed([Text("1e+300")])
        await assert_carries_on(runtime)
        assert await run_cell(runtime, 'text(load("k").v);') == Completed([Text("1e+300")])


async def test_an_infinite_number_in_tool_input_rejects_that_call(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = (
            'try { await tools.echo({ x: JSON.rawJSON("1e400") }); }'
            " catch (e) { text(e.message); }"
            ' text(JSON.stringify(await tools.echo({ x: JSON.rawJSON("1e3") })));'
        )
        event = await run_cell(runtime, source, ["echo"])
        assert event == Completed(
            [
                Text(
                    "tool `echo` input is not JSON data: it holds the number 1e400, "
                    "which is out of range"
                ),
                Text('{"x":1000}'),
            ]
        )
        calls: list[NestedToolCall] = []
        while True:
            try:
                calls.append(delegate.started.receive_nowait())
            except trio.WouldBlock:
                break
        assert [call.input for call in calls] == [{"x": 1000.0}]
        await assert_carries_on(runtime)


def test_a_forged_infinite_number_is_a_protocol_violation() -> None:
    validator = MessageValidator(tool_idents=frozenset({"echo"}), max_json_depth=8)
    for number in ("1e400", "-1e400", "1" * 5000):
        batch = (
            '[{"t":"started"},{"t":"tool","id":"tool-1","name":"echo","input":{"x":'
            + number
            + "}}]"
        )
        try:
            MessageValidator(tool_idents=frozenset({"echo"}), max_json_depth=8).parse_batch(batch)
        except ProtocolViolation as violation:
            assert "malformed message batch" in str(violation)
        else:
            raise AssertionError(f"{number[:10]} passed")
    assert validator.parse_batch('[{"t":"started"}]')
