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
    JSON,
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
    """Two million references to one `{}` are 6 MB of JSON (within `max_stored_chars`)
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
            " catch (e) { text(e); }"
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


# -- item 2: output items that cost nothing -----------------------------------------


async def test_empty_output_items_are_capped(isolation: str) -> None:
    """`text('')` and `console.log()` count 0 bytes: an endless loop of them used to
    buffer millions of items under a 1 MiB byte limit and never end."""
    limits = config(isolation, max_output_bytes=MiB, max_output_items=1000)
    async with SessionRuntime(GateDelegate(), limits) as runtime:
        for source in ("for (;;) text('');", "for (;;) console.log();"):
            event = await run_cell(runtime, source)
            assert isinstance(event, Completed)
            assert event.error_text == (
                "exec cell exceeded its limit of 1000 buffered output items "
                "(RuntimeConfig.max_output_items)"
            )
            # Kept up to the item that broke the limit, as for `max_output_bytes`.
            assert len(event.content_items) == 1001
        # At the limit is fine, and the count starts again after each delivered event.
        source = "for (let i = 0; i < 1000; i++) text(''); yield_control(); text('');"
        started = await runtime.execute(request(source), YieldAfter(10 * SAFETY))
        with trio.fail_after(SAFETY):
            first = await started.initial_event()
            assert len(first.content_items) == 1000
            assert await runtime.observe(started.cell_id, YieldAfter(10 * SAFETY)) == Completed(
                [Text("")]
            )
        await assert_carries_on(runtime)


def test_the_default_output_item_limit_keeps_host_memory_near_the_byte_limit() -> None:
    from code_mode import RuntimeConfig

    defaults = RuntimeConfig()
    # About 100 bytes of host memory per buffered item (a Text and its list slot).
    assert defaults.max_output_items * 100 <= defaults.max_output_bytes


# -- item 5: a misbehaving tool only rejects its call --------------------------------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class ExplodingDict(dict[str, JSON]):
    def items(self):  # type: ignore[no-untyped-def,override]
        raise RuntimeError("items exploded")

    def values(self):  # type: ignore[no-untyped-def,override]
        raise RuntimeError("values exploded")


class HostileTools(GateDelegate):
    """``unprintable`` raises an exception whose ``__str__`` raises; ``exploding``
    returns a dict whose ``items()`` raises; ``notify`` and ``cell_closed`` raise
    unprintable exceptions too."""

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        if call.tool_name.name == "unprintable":
            raise Unprintable()
        if call.tool_name.name == "exploding":
            return ExplodingDict(a=1)
        return await super().invoke_tool(call)

    async def notify(self, call_id: str, cell_id: object, text: str) -> None:  # type: ignore[override]
        raise Unprintable()

    async def cell_closed(self, cell_id: object) -> None:  # type: ignore[override]
        raise Unprintable()


async def test_a_tool_failure_that_cannot_be_described_only_rejects_its_call(
    isolation: str,
) -> None:
    async with SessionRuntime(HostileTools(), config(isolation)) as runtime:
        source = (
            "for (const t of [tools.unprintable, tools.exploding]) {"
            "  try { await t({}); } catch (e) { text(e); } }"
            " notify('n'); text('done');"
        )
        event = await run_cell(runtime, source, ["unprintable", "exploding"])
        assert event == Completed(
            [
                Text("Unprintable"),
                Text("tool `exploding` returned a value that is not JSON data: items exploded"),
                Text("done"),
            ]
        )
        await assert_carries_on(runtime)


# -- item 7: notifications are bounded ----------------------------------------------


class SlowNotify(GateDelegate):
    """``notify`` waits until the test releases it (or the cell cancels it)."""

    def __init__(self) -> None:
        super().__init__()
        self.release_notify = trio.Event()
        self.delivered: list[str] = []
        self.busy = 0
        self.most_busy = 0
        self.all_busy = trio.Event()  # 16 notifications are with the delegate

    async def notify(self, call_id: str, cell_id: object, text: str) -> None:  # type: ignore[override]
        self.busy += 1
        self.most_busy = max(self.most_busy, self.busy)
        if self.busy >= 16:
            self.all_busy.set()
        try:
            await self.release_notify.wait()
            self.delivered.append(text)
        finally:
            self.busy -= 1


async def test_notifications_in_flight_are_capped(isolation: str) -> None:
    delegate = SlowNotify()
    limits = config(isolation, max_pending_notifications=50)
    async with SessionRuntime(delegate, limits) as runtime:
        event = await run_cell(runtime, "for (let i = 0;; i++) notify('n' + i);")
        assert event == Completed(
            [],
            error_text="exec cell exceeded its limit of 50 pending notifications "
            "(RuntimeConfig.max_pending_notifications)",
        )
        # The notifications with the lagging delegate were cancelled.
        assert delegate.delivered == []
        assert delegate.busy == 0
        # 50 in flight at most, waiting in order; they finish once the delegate answers.
        delegate.release_notify.set()
        event = await run_cell(runtime, "for (let i = 0; i < 50; i++) notify('m' + i);")
        assert event == Completed([])
        assert sorted(delegate.delivered) == sorted(f"m{i}" for i in range(50))


async def test_a_burst_of_notifications_costs_a_few_tasks(isolation: str) -> None:
    """A slow delegate used to get one task per `notify` (25 698 in 4 s); now at most
    16 notifications of a cell are with it at once, the rest wait their turn."""
    delegate = SlowNotify()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(
            request("for (let i = 0; i < 1000; i++) notify('n' + i); text('sent');"),
            YieldAfter(10 * SAFETY),
        )
        with trio.fail_after(SAFETY):
            await delegate.all_busy.wait()
        delegate.release_notify.set()
        with trio.fail_after(SAFETY):
            assert await started.initial_event() == Completed([Text("sent")])
        assert delegate.most_busy == 16
        assert sorted(delegate.delivered) == sorted(f"n{i}" for i in range(1000))


# -- item 10: running time ------------------------------------------------------------


async def test_a_cell_cannot_run_longer_than_its_time_limit(isolation: str) -> None:
    limits = config(isolation, max_cell_seconds=0.3)
    async with SessionRuntime(GateDelegate(), limits) as runtime:
        limit_text = (
            "exec cell exceeded its running-time limit of 0.3 seconds "
            "(RuntimeConfig.max_cell_seconds)"
        )
        for source in (
            "text('spinning'); store('k', 1); while (true) {}",
            "text('waiting'); await tools.block({});",
            "text('sleeping'); await new Promise((r) => setTimeout(r, 60000));",
        ):
            with trio.fail_after(SAFETY):
                started = await runtime.execute(request(source, ["block"]), YieldAfter(60))
                event = await started.initial_event()
            assert isinstance(event, Completed)
            assert event.error_text == limit_text
            assert len(event.content_items) == 1
        assert await run_cell(runtime, "text(String(load('k')));") == Completed([Text("undefined")])
        await assert_carries_on(runtime)


async def test_lone_surrogates_reach_the_program_as_written(isolation: str) -> None:
    """A lone surrogate in a source, a tool result or a stored key has no UTF-8 form;
    it crossed to the isolate as the raw character and ended the worker (or, in thread
    mode, the session). Now it crosses as a JSON escape and means the same."""
    delegate = GateDelegate(results={"echo": "\ud800!"})
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = (
            "const r = await tools.echo({}); // \udfff\n"
            "text(r.charCodeAt(0) === 0xd800 && '\udbff'.charCodeAt(0) === 0xdbff);"
        )
        assert await run_cell(runtime, source, ["echo"]) == Completed([Text("true")])
        await assert_carries_on(runtime)
