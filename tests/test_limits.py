"""Every limit of ``RuntimeConfig`` (``javascript.md``: Limits), one or more tests each.

A breach ends only the offending cell with an ``error_text`` that names the limit and
its value; the session then runs the next cell as usual. Each test sets the limit
small, asserts the exact event, and runs ``text("ok")`` afterwards.
"""

from __future__ import annotations

import ast
import inspect
import itertools

import attrs
import trio

from code_mode import (
    JSON,
    CellEvent,
    Completed,
    Image,
    ImageDetail,
    NestedToolCall,
    ObserveMode,
    RuntimeConfig,
    SessionRuntime,
    Text,
    YieldAfter,
    Yielded,
)
from code_mode import _config as config_module
from code_mode._cell import ERROR_TRUNCATED_SUFFIX

from .helpers import SAFETY, GateDelegate, config, request

MiB = 1024 * 1024


async def run_cell(
    runtime: SessionRuntime,
    source: str,
    tools: list[str] | None = None,
    mode: ObserveMode | None = None,
) -> CellEvent:
    with trio.fail_after(SAFETY):
        started = await runtime.execute(
            request(source, tools or []), mode if mode is not None else YieldAfter(10 * SAFETY)
        )
        return await started.initial_event()


async def assert_carries_on(runtime: SessionRuntime) -> None:
    assert await run_cell(runtime, 'text("ok")') == Completed([Text("ok")])


def nested(depth: int) -> JSON:
    """A JSON value ``depth`` arrays deep (``1`` inside)."""
    value: JSON = 1
    for _ in range(depth):
        value = [value]
    return value


def js_nested(depth: int) -> str:
    return f"(() => {{ let v = 1; for (let i = 0; i < {depth}; i++) v = [v]; return v; }})()"


# -- memory_limit_bytes ------------------------------------------------------------------


async def test_memory_limit(isolation: str) -> None:
    limits = config(isolation, memory_limit_bytes=32 * MiB)
    async with SessionRuntime(GateDelegate(), limits) as runtime:
        event = await run_cell(runtime, "const a = []; for (;;) a.push({ n: a.length });")
        assert event == Completed(
            [],
            error_text="exec cell exceeded its memory limit of 33554432 bytes "
            "(RuntimeConfig.memory_limit_bytes)",
        )
        await assert_carries_on(runtime)
        # Below the limit, the same kind of program runs fine.
        event = await run_cell(
            runtime,
            "const a = []; for (let i = 0; i < 1000; i++) a.push({ n: i }); text(a.length);",
        )
        assert event == Completed([Text("1000")])


async def test_output_before_a_memory_limit_breach_is_kept(isolation: str) -> None:
    limits = config(isolation, memory_limit_bytes=32 * MiB)
    async with SessionRuntime(GateDelegate(), limits) as runtime:
        event = await run_cell(
            runtime, 'text("start"); const a = []; for (;;) a.push({ n: a.length });'
        )
        assert event == Completed(
            [Text("start")],
            error_text="exec cell exceeded its memory limit of 33554432 bytes "
            "(RuntimeConfig.memory_limit_bytes)",
        )


async def test_the_default_memory_limit_stops_a_bomb(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        event = await run_cell(runtime, "const a = []; for (;;) a.push('x' + a.length);")
        assert event == Completed(
            [],
            error_text="exec cell exceeded its memory limit of 268435456 bytes "
            "(RuntimeConfig.memory_limit_bytes)",
        )
        await assert_carries_on(runtime)


# -- max_output_bytes -------------------------------------------------------------------


async def test_output_limit(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_output_bytes=1000)) as runtime:
        event = await run_cell(runtime, 'text("a".repeat(600)); text("b".repeat(600)); text("c");')
        assert event == Completed(
            [Text("a" * 600), Text("b" * 600)],
            error_text="exec cell exceeded its limit of 1000 buffered output bytes "
            "(RuntimeConfig.max_output_bytes)",
        )
        await assert_carries_on(runtime)


async def test_output_limit_counts_utf8_bytes_and_image_urls(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_output_bytes=1000)) as runtime:
        # 500 two-byte characters are 1000 bytes: exactly at the limit.
        assert await run_cell(runtime, 'text("é".repeat(500));') == Completed([Text("é" * 500)])
        event = await run_cell(runtime, 'text("é".repeat(500)); text("!");')
        assert event.error_text == (
            "exec cell exceeded its limit of 1000 buffered output bytes "
            "(RuntimeConfig.max_output_bytes)"
        )
        url = "data:image/png;base64," + "A" * 990
        event = await run_cell(runtime, f'image("{url}");')
        assert event == Completed(
            [Image(url, ImageDetail.HIGH)],
            error_text="exec cell exceeded its limit of 1000 buffered output bytes "
            "(RuntimeConfig.max_output_bytes)",
        )
        await assert_carries_on(runtime)


async def test_output_limit_applies_between_delivered_events(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_output_bytes=1000)) as runtime:
        started = await runtime.execute(
            request('text("a".repeat(600)); yield_control(); text("b".repeat(600));'),
            YieldAfter(10 * SAFETY),
        )
        with trio.fail_after(SAFETY):
            assert await started.initial_event() == Yielded([Text("a" * 600)])
            event = await runtime.observe(started.cell_id, YieldAfter(10 * SAFETY))
        assert event == Completed([Text("b" * 600)])


# -- max_error_text_bytes -----------------------------------------------------------------


async def test_error_text_is_truncated(isolation: str) -> None:
    async with SessionRuntime(
        GateDelegate(), config(isolation, max_error_text_bytes=100)
    ) as runtime:
        event = await run_cell(runtime, 'text("kept"); throw new Error("x".repeat(500));')
        assert event == Completed(
            [Text("kept")],
            error_text="Error: " + "x" * 93 + "\n[code mode error truncated]",
        )
        # Cut at a UTF-8 character boundary: 7 + 46 * 2 bytes fit, the 47th "é" does not.
        event = await run_cell(runtime, 'throw new Error("é".repeat(500));')
        assert event.error_text == "Error: " + "é" * 46 + ERROR_TRUNCATED_SUFFIX
        # Exactly at the limit: kept whole.
        event = await run_cell(runtime, 'throw "y".repeat(100);')
        assert event.error_text == "y" * 100
        # Errors of the runtime itself are cut the same way.
        event = await run_cell(runtime, f'store("k", {js_nested(200)});')
        assert event.error_text is not None
        assert event.error_text.endswith(ERROR_TRUNCATED_SUFFIX)
        assert len(event.error_text.encode()) == 100 + len(ERROR_TRUNCATED_SUFFIX)
        await assert_carries_on(runtime)


async def test_the_default_error_text_limit_is_16_kib(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        event = await run_cell(runtime, 'throw new Error("x".repeat(100000));')
        assert event.error_text == "Error: " + "x" * (16 * 1024 - 7) + ERROR_TRUNCATED_SUFFIX


# -- max_stored_entries / max_stored_bytes ------------------------------------------------

STORAGE_3_ENTRIES = (
    "code mode session storage exceeds its limit of 3 entries or 8388608 serialized bytes"
)


async def test_stored_entries_limit(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_stored_entries=3)) as runtime:
        event = await run_cell(
            runtime,
            'store("a", 1); store("b", 2); store("c", 3); store("a", 10); text("three");'
            ' store("d", 4); text("never");',
        )
        assert event == Completed([Text("three")], error_text=STORAGE_3_ENTRIES)
        # The writes made before the breach are kept (a failed cell keeps its writes).
        event = await run_cell(runtime, 'text(JSON.stringify(["a", "b", "c", "d"].map(load)));')
        assert event == Completed([Text("[10,2,3,null]")])
        # Across cells: the snapshot counts.
        event = await run_cell(runtime, 'store("c", 30); store("e", 5);')
        assert event == Completed([], error_text=STORAGE_3_ENTRIES)
        await assert_carries_on(runtime)


async def test_stored_entries_limit_across_concurrent_cells(isolation: str) -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation, max_stored_entries=3)) as runtime:
        # Both cells start from the same (empty) snapshot; each stays within the limit on
        # its own, but the second to complete would take the session past it.
        first = await runtime.execute(
            request('store("a", 1); store("b", 2); await tools.gate();', ["gate"]),
            YieldAfter(10 * SAFETY),
        )
        await delegate.next_call()
        second = await run_cell(runtime, 'store("c", 3); store("d", 4);')
        assert second == Completed([])
        delegate.release("gate")
        with trio.fail_after(SAFETY):
            assert await first.initial_event() == Completed([], error_text=STORAGE_3_ENTRIES)
        event = await run_cell(runtime, 'text(JSON.stringify(["a", "b", "c", "d"].map(load)));')
        assert event == Completed([Text("[null,null,3,4]")])


async def test_stored_bytes_limit(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_stored_bytes=100)) as runtime:
        message = (
            "code mode session storage exceeds its limit of 256 entries or 100 serialized bytes"
        )
        # key + JSON text: 1 + 2 + 97 = 100 bytes fit ...
        assert await run_cell(runtime, 'store("k", "x".repeat(97)); text("fits");') == Completed(
            [Text("fits")]
        )
        # ... 101 do not; the value already stored stays.
        event = await run_cell(runtime, 'store("k", "x".repeat(98)); text("never");')
        assert event == Completed([], error_text=message)
        event = await run_cell(runtime, 'text(load("k").length); store("j", "");')
        assert event == Completed([Text("97")], error_text=message)
        await assert_carries_on(runtime)


async def test_stored_bytes_are_counted_alike_in_the_cell_and_on_the_host(
    isolation: str,
) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_stored_bytes=100)) as runtime:
        # Compact JSON: 1 + len('[1,2,...,20]') = 1 + 51 = 52 bytes, well within 100.
        event = await run_cell(
            runtime, 'store("k", Array.from({ length: 20 }, (_, i) => i + 1)); text("stored");'
        )
        assert event == Completed([Text("stored")])
        # 40 "é": 1 + 42 UTF-16 units, 1 + 82 UTF-8 bytes: within 100 either way.
        event = await run_cell(runtime, 'store("k", "é".repeat(40)); text("stored");')
        assert event == Completed([Text("stored")])


# -- max_outstanding_tool_calls ------------------------------------------------------------


async def test_outstanding_tool_calls_limit(isolation: str) -> None:
    delegate = GateDelegate()
    limits = config(isolation, max_outstanding_tool_calls=3)
    async with SessionRuntime(delegate, limits) as runtime:
        event = await run_cell(
            runtime,
            'text("go"); for (let i = 0; i < 4; i++) tools.block(); text("never");',
            ["block"],
        )
        assert event == Completed(
            [Text("go")],
            error_text="exec cell exceeded its limit of 3 outstanding tool calls "
            "(RuntimeConfig.max_outstanding_tool_calls)",
        )
        assert sorted(delegate.cancelled) == ["tool-1", "tool-2", "tool-3"]
        await assert_carries_on(runtime)


async def test_finished_tool_calls_do_not_count(isolation: str) -> None:
    delegate = GateDelegate()
    limits = config(isolation, max_outstanding_tool_calls=3)
    async with SessionRuntime(delegate, limits) as runtime:
        source = (
            "for (let round = 0; round < 5; round++) {"
            " await Promise.all([1, 2, 3].map((n) => tools.echo({ n }))); }"
            ' text("15 calls");'
        )
        assert await run_cell(runtime, source, ["echo"]) == Completed([Text("15 calls")])


# -- max_pending_timers --------------------------------------------------------------------


async def test_pending_timers_limit(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_pending_timers=3)) as runtime:
        event = await run_cell(
            runtime, 'text("go"); for (let i = 0; i < 4; i++) setTimeout(() => {}, 60000);'
        )
        assert event == Completed(
            [Text("go")],
            error_text="code mode cell exceeded its limit of 3 pending timers "
            "(RuntimeConfig.max_pending_timers)",
        )
        await assert_carries_on(runtime)


async def test_fired_and_cleared_timers_do_not_count(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_pending_timers=3)) as runtime:
        source = (
            "for (let i = 0; i < 10; i++) clearTimeout(setTimeout(() => {}, 60000));"
            " for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));"
            ' text("done");'
        )
        assert await run_cell(runtime, source) == Completed([Text("done")])


# -- max_source_bytes -----------------------------------------------------------------------


async def test_source_size_limit(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_source_bytes=100)) as runtime:
        fits = 'text("' + "x" * 92 + '")'  # 100 bytes
        assert len(fits) == 100
        assert await run_cell(runtime, fits) == Completed([Text("x" * 92)])
        event = await run_cell(runtime, 'text("' + "é" * 47 + '")')  # 8 + 94 = 102 bytes
        assert event == Completed(
            [],
            error_text="exec source of 102 bytes exceeds the limit of 100 bytes "
            "(RuntimeConfig.max_source_bytes)",
        )
        await assert_carries_on(runtime)


# -- max_json_depth --------------------------------------------------------------------------

DEPTH_4 = "nests deeper than the limit of 4 (RuntimeConfig.max_json_depth)"


async def test_json_depth_of_tool_input(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation, max_json_depth=4)) as runtime:
        # {v: [[[1]]]} is 4 deep: allowed.
        echo = ["echo"]
        event = await run_cell(runtime, f"text(await tools.echo({{ v: {js_nested(3)} }}));", echo)
        assert event == Completed([Text('{"v":[[[1]]]}')])
        event = await run_cell(runtime, f"await tools.echo({{ v: {js_nested(4)} }});", echo)
        assert event == Completed(
            [], error_text=f"exec runtime sent an invalid message: tool `echo` input {DEPTH_4}"
        )
        # Deeper than the host's JSON parser could follow: the same limit is named.
        event = await run_cell(runtime, f"await tools.echo({{ v: {js_nested(10**5)} }});", echo)
        assert event == Completed(
            [], error_text=f"exec runtime sent an invalid message: a message {DEPTH_4}"
        )
        assert [call.input for call in drain(delegate)] == [{"v": nested(3)}]
        await assert_carries_on(runtime)


def drain(delegate: GateDelegate) -> list[object]:
    calls = []
    while True:
        try:
            calls.append(delegate.started.receive_nowait())
        except trio.WouldBlock:
            return calls


async def test_json_depth_of_stored_values(isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation, max_json_depth=4)) as runtime:
        event = await run_cell(runtime, f'store("ok", {js_nested(4)}); text("stored");')
        assert event == Completed([Text("stored")])
        event = await run_cell(runtime, f'store("deep", {js_nested(5)}); text("stored");')
        assert event == Completed(
            [Text("stored")],
            error_text=f"exec runtime sent an invalid message: stored value 'deep' {DEPTH_4}",
        )
        event = await run_cell(runtime, f'store("deeper", {js_nested(100_000)});')
        assert event == Completed(
            [], error_text=f"exec runtime sent an invalid message: stored value 'deeper' {DEPTH_4}"
        )
        event = await run_cell(runtime, 'text(load("ok")); text(String(load("deep")));')
        assert event == Completed([Text("[[[[1]]]]"), Text("undefined")])


class DeepResults(GateDelegate):
    """``tools.deep({depth})`` returns a value nested ``depth`` arrays deep."""

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        assert isinstance(call.input, dict)
        depth = call.input["depth"]
        assert isinstance(depth, int)
        return nested(depth)


async def test_json_depth_of_tool_results(isolation: str) -> None:
    async with SessionRuntime(DeepResults(), config(isolation, max_json_depth=4)) as runtime:
        source = (
            "text(await tools.deep({ depth: 4 }));"
            " try { await tools.deep({ depth: 5 }); } catch (e) { text(e.message); }"
            " await tools.deep({ depth: 6 });"
        )
        rejected = (
            "tool `deep` returned JSON nested deeper than the limit of 4 "
            "(RuntimeConfig.max_json_depth)"
        )
        assert await run_cell(runtime, source, ["deep"]) == Completed(
            [Text("[[[[1]]]]"), Text(rejected)], error_text=rejected
        )
        await assert_carries_on(runtime)


async def test_a_tool_result_too_deep_for_json_dumps_fails_only_the_call(
    isolation: str,
) -> None:
    async with SessionRuntime(DeepResults(), config(isolation)) as runtime:
        source = "try { await tools.deep({ depth: 100000 }); } catch (e) { text(e.message); }"
        assert await run_cell(runtime, source, ["deep"]) == Completed(
            [
                Text(
                    "tool `deep` returned JSON nested deeper than the limit of 128 "
                    "(RuntimeConfig.max_json_depth)"
                )
            ]
        )
        await assert_carries_on(runtime)


# -- max_message_bytes -------------------------------------------------------------------------

MESSAGE_LIMIT = (
    "exec cell sent a message larger than the limit of 100000 characters "
    "(RuntimeConfig.max_message_bytes)"
)


async def test_message_size_limit(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation, max_message_bytes=100_000)) as runtime:
        event = await run_cell(runtime, 'text("x".repeat(99000)); text("y".repeat(100001));')
        assert event == Completed([Text("x" * 99000)], error_text=MESSAGE_LIMIT)
        event = await run_cell(runtime, 'await tools.echo({ s: "x".repeat(100001) });', ["echo"])
        assert event == Completed([], error_text=MESSAGE_LIMIT)
        event = await run_cell(runtime, 'notify("n".repeat(100001));')
        assert event == Completed([], error_text=MESSAGE_LIMIT)
        assert drain(delegate) == []
        assert delegate.notifications == []
        await assert_carries_on(runtime)


async def test_many_messages_below_the_limit_are_not_one_big_message(isolation: str) -> None:
    async with SessionRuntime(
        GateDelegate(), config(isolation, max_message_bytes=100_000)
    ) as runtime:
        source = 'for (let i = 0; i < 100; i++) text("x".repeat(60000)); text("done");'
        event = await run_cell(runtime, source)
        assert event == Completed([Text("x" * 60000)] * 100 + [Text("done")])


# -- every limit is documented ------------------------------------------------------------------


def test_every_limit_has_a_documented_default() -> None:
    defaults = {field.name: field.default for field in attrs.fields(RuntimeConfig)}
    assert defaults["memory_limit_bytes"] == 256 * MiB
    assert defaults["max_output_bytes"] == 64 * MiB
    assert defaults["max_error_text_bytes"] == 16 * 1024
    assert defaults["max_stored_entries"] == 256
    assert defaults["max_stored_bytes"] == 8 * MiB
    assert defaults["max_outstanding_tool_calls"] == 128
    assert defaults["max_pending_timers"] == 1024
    assert defaults["max_source_bytes"] == 1 * MiB
    assert defaults["max_json_depth"] == 128
    assert defaults["max_message_bytes"] == 16 * MiB
    # Every field is followed by its docstring, which states the default.
    source = inspect.getsource(config_module)
    body = next(
        node.body
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef) and node.name == "RuntimeConfig"
    )
    documented = {
        field.target.id
        for field, doc in itertools.pairwise(body)
        if isinstance(field, ast.AnnAssign)
        and isinstance(field.target, ast.Name)
        and isinstance(doc, ast.Expr)
        and isinstance(doc.value, ast.Constant)
        and "default" in str(doc.value.value)
    }
    assert documented >= set(defaults) - {"allow_remote_image_urls"}
