"""Every limit of ``RuntimeConfig`` (``docs/security.md``), one or more tests each.

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
from code_mode._cell.cell import ERROR_TRUNCATED_SUFFIX

from ..helpers import SAFETY, GateDelegate, config, request

MiB = 1024 * 1024


async def run_cell(
    runtime: SessionRuntime,
    source: str,
    tools: list[str] | None = None,
    mode: ObserveMode | None = None,
    guard: float = SAFETY,
) -> CellEvent:
    with trio.fail_after(guard):
        started = await runtime.execute(
            request(source, tools or []), mode if mode is not None else YieldAfter(10 * SAFETY)
        )
        return await started.initial_event()


def limited(
    isolation: str, delegate: GateDelegate | None = None, **limits: object
) -> SessionRuntime:
    """A runtime in ``isolation`` mode with ``limits`` set, on ``delegate`` (a plain
    ``GateDelegate`` unless given)."""
    return SessionRuntime(
        GateDelegate() if delegate is None else delegate, config(isolation, **limits)
    )


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

MEMORY_LIMIT_32_MIB = (
    "exec cell exceeded its memory limit of 33554432 bytes (RuntimeConfig.memory_limit_bytes)"
)


async def test_memory_limit(isolation: str) -> None:
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        event = await run_cell(runtime, "const a = []; for (;;) a.push({ n: a.length });")
        assert event == Completed([], error_text=MEMORY_LIMIT_32_MIB)
        await assert_carries_on(runtime)
        # Below the limit, the same kind of program runs fine.
        event = await run_cell(
            runtime,
            "const a = []; for (let i = 0; i < 1000; i++) a.push({ n: i }); text(a.length);",
        )
        assert event == Completed([Text("1000")])


async def test_output_before_a_memory_limit_breach_is_kept(isolation: str) -> None:
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        event = await run_cell(
            runtime, 'text("start"); const a = []; for (;;) a.push({ n: a.length });'
        )
        assert event == Completed([Text("start")], error_text=MEMORY_LIMIT_32_MIB)


async def test_the_default_memory_limit_stops_a_bomb(isolation: str) -> None:
    async with limited(isolation) as runtime:
        # Filling the default 256 MiB takes seconds, more on a loaded machine: the
        # guard (a hang guard, not what is tested) is three times the usual one.
        event = await run_cell(
            runtime, "const a = []; for (;;) a.push('x' + a.length);", guard=3 * SAFETY
        )
        assert event == Completed(
            [],
            error_text="exec cell exceeded its memory limit of 268435456 bytes "
            "(RuntimeConfig.memory_limit_bytes)",
        )
        await assert_carries_on(runtime)


# -- memory_limit_bytes: ArrayBuffer memory (js/buffers.js) ---------------------------------

BUFFER_LIMIT_32_MIB = MEMORY_LIMIT_32_MIB + " in ArrayBuffer memory"


def js(source: str) -> str:
    return source.replace("MiB", str(MiB))


async def test_array_buffer_memory_limit(isolation: str) -> None:
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        # Backing stores live outside the V8 heap: counted on their own, same limit.
        event = await run_cell(
            runtime,
            js(
                'text("start"); const a = [];'
                " for (let i = 0; i < 64; i++) a.push(new Uint8Array(MiB).fill(1));"
                ' text("never");'
            ),
        )
        assert event == Completed([Text("start")], error_text=BUFFER_LIMIT_32_MIB)
        await assert_carries_on(runtime)
        # Below the limit, the same program runs fine.
        event = await run_cell(
            runtime,
            js(
                "const a = []; for (let i = 0; i < 24; i++) a.push(new Uint8Array(MiB).fill(1));"
                " text(a.length);"
            ),
        )
        assert event == Completed([Text("24")])


async def test_array_buffer_limit_is_the_configured_memory_limit(isolation: str) -> None:
    async with limited(isolation, memory_limit_bytes=64 * MiB) as runtime:
        fits = js("const a = []; for (let i = 0; i < 56; i++) a.push(new ArrayBuffer(MiB));")
        assert await run_cell(runtime, fits + " text(a.length);") == Completed([Text("56")])
        event = await run_cell(runtime, js("new Float64Array(9 * MiB);"))
        assert event == Completed(
            [],
            error_text="exec cell exceeded its memory limit of 67108864 bytes "
            "(RuntimeConfig.memory_limit_bytes) in ArrayBuffer memory",
        )


async def test_an_array_buffer_breach_cannot_be_caught_and_keeps_no_writes(
    isolation: str,
) -> None:
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        event = await run_cell(
            runtime,
            js(
                'store("k", 1); text("before"); let message = "";'
                " try { new ArrayBuffer(40 * MiB); } catch (e) { message = String(e); }"
                ' text(message); store("k", 2); await tools.echo({});',
            ),
            ["echo"],
        )
        # The program saw the RangeError, but the cell had ended: nothing after counts,
        # and, as with the heap limit, its stored writes are not kept.
        assert event == Completed([Text("before")], error_text=BUFFER_LIMIT_32_MIB)
        assert await run_cell(runtime, 'text(String(load("k")));') == Completed([Text("undefined")])


async def test_typed_arrays_work_as_usual_under_the_limit(isolation: str) -> None:
    source = """
        const u = new Uint8Array(1000).fill(7);
        text([u.length, u[999], u.byteLength, u.buffer.byteLength].join());
        const dv = new DataView(u.buffer, 8, 8);
        dv.setUint32(0, 0xdeadbeef);
        text(dv.getUint32(0).toString(16) + " " + u[8]);
        text([u.subarray(1, 3).length, u.slice(2).length, u.map((x) => x + 1)[0],
          u.filter((x, i) => i % 2).length, Uint8Array.from([1, 2, 3]).join("."),
          Float64Array.of(1.5, 2).join("."), new Int16Array(new Set([4, 5])).join("."),
          new Uint8Array({ length: 2, 0: 9 }).join("."), new Float32Array([0.5]).join(),
          u.toReversed().length, u.with(0, 1)[0], u.toSorted()[0]].join());
        text([u instanceof Uint8Array, u.constructor === Uint8Array, Uint8Array.name,
          Uint8Array.length, Object.prototype.toString.call(new Uint8Array(1)),
          Uint8Array.BYTES_PER_ELEMENT, Float64Array.BYTES_PER_ELEMENT,
          Uint8Array[Symbol.species] === Uint8Array, typeof Uint8Array,
          ArrayBuffer.isView(u), new ArrayBuffer(8).constructor === ArrayBuffer,
          Object.getPrototypeOf(new Uint8Array(2)) === Uint8Array.prototype,
          Object.getPrototypeOf(Int8Array) === Object.getPrototypeOf(Uint8Array),
          u.slice(1).constructor === Uint8Array, u.toReversed() instanceof Uint8Array].join());
        class Bytes extends Uint8Array { sum() { return this.reduce((a, b) => a + b, 0); } }
        const b = new Bytes([1, 2, 3]);
        text([b.sum(), b instanceof Bytes, b instanceof Uint8Array, b.map((x) => x * 2).sum(),
          b.slice(1) instanceof Bytes, b.subarray(1).constructor === Bytes,
          Bytes.from([4, 5]).sum()].join());
        text(Uint8Array.fromBase64("aGVsbG8=").join() + " " + Uint8Array.fromHex("ff00").join()
          + " " + new Uint8Array([104, 105]).toBase64());
        const r = new ArrayBuffer(100, { maxByteLength: 1000 });
        r.resize(500);
        text([r.byteLength, r.resizable, r.transfer(600).byteLength, r.detached,
          new ArrayBuffer(300).slice(10, 20).byteLength,
          new ArrayBuffer(300).transferToFixedLength(10).byteLength].join());
        try { new Uint8Array(-1); } catch (e) { text(String(e)); }
        try { Uint8Array(1); } catch (e) { text(e.constructor === TypeError); }
    """
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        event = await run_cell(runtime, source)
    assert event == Completed(
        [
            Text("1000,7,1000,1000"),
            Text("deadbeef 222"),
            Text("2,998,8,500,1.2.3,1.5.2,4.5,9.0,0.5,1000,1,7"),
            Text(
                "true,true,Uint8Array,3,[object Uint8Array],1,8,true,function,true,true,"
                "true,true,true,true"
            ),
            Text("6,true,true,12,true,true,9"),
            Text("104,101,108,108,111 255,0 aGk="),
            Text("500,true,600,true,10,10"),
            Text("RangeError: Invalid typed array length: -1"),
            Text("true"),
        ]
    )


async def test_dropped_buffers_are_credited_once_the_program_waits(isolation: str) -> None:
    # 800 MiB of buffers through a 32 MiB limit, 16 MiB at a time: what a program
    # dropped before it last waited (for a timer or a tool call) no longer counts.
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        for wait in ("new Promise((resolve) => setTimeout(resolve, 0))", "tools.echo({})"):
            source = js(
                "for (let round = 0; round < 50; round++) {"
                " for (let i = 0; i < 16; i++) new Uint8Array(MiB).fill(1);"
                f" await {wait}; }}"
                ' text("done");'
            )
            assert await run_cell(runtime, source, ["echo"]) == Completed([Text("done")])
        # Transfers and resizable buffers hand their bytes over, too.
        source = js(
            "let b = new ArrayBuffer(20 * MiB); for (let i = 0; i < 20; i++)"
            " b = i % 2 ? b.transfer() : b.transferToFixedLength(20 * MiB);"
            " for (let i = 0; i < 20; i++) {"
            " new ArrayBuffer(0, { maxByteLength: 8 * MiB }).resize(MiB);"
            " await new Promise((resolve) => setTimeout(resolve, 0)); }"
            " text(b.byteLength);"
        )
        assert await run_cell(runtime, source) == Completed([Text(str(20 * MiB))])


async def test_buffers_dropped_without_waiting_still_count(isolation: str) -> None:
    # The known limit of the accounting: V8 keeps a WeakRef's target alive until the
    # current job ends, so garbage made since the program last waited counts as live.
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        event = await run_cell(
            runtime, js("for (let i = 0; i < 64; i++) new Uint8Array(MiB); text('never');")
        )
        assert event == Completed([], error_text=BUFFER_LIMIT_32_MIB)
        await assert_carries_on(runtime)


async def test_a_resizable_buffer_counts_its_maximum(isolation: str) -> None:
    # V8 reserves maxByteLength when the buffer is made (in a sandbox that all isolates
    # of the process share): that is what counts, whatever the current length.
    async with limited(isolation, memory_limit_bytes=32 * MiB) as runtime:
        event = await run_cell(runtime, js("new ArrayBuffer(0, { maxByteLength: 33 * MiB });"))
        assert event == Completed([], error_text=BUFFER_LIMIT_32_MIB)
        source = js(
            "const b = new ArrayBuffer(0, { maxByteLength: 24 * MiB }); b.resize(24 * MiB);"
            " new Uint8Array(b).fill(1); b.resize(MiB); text(b.byteLength);"
            " try { new ArrayBuffer(9 * MiB); } catch {}"
        )
        assert await run_cell(runtime, source) == Completed(
            [Text(str(MiB))], error_text=BUFFER_LIMIT_32_MIB
        )


async def test_the_original_constructors_never_reach_the_program(isolation: str) -> None:
    # Descriptor fields and proxy traps read through `Object.prototype` would hand the
    # program the engine's own constructors: the runtime reads none.
    source = """
        const seen = [];
        for (const key of ["get", "set", "apply", "construct", "value", "writable",
                           "enumerable", "configurable", "__proto__"]) {
          Object.defineProperty(Object.prototype, key, { __proto__: null,
            get() { seen.push(key); return undefined; }, set(v) {}, configurable: true });
        }
        const u = new Uint8Array(100).fill(1);
        const all = [u.slice(), u.map((x) => x), u.filter(() => true), u.toReversed(),
          u.toSorted(), u.with(0, 2), u.subarray(1), new Uint8Array(u), new Uint8Array([1, 2]),
          Uint8Array.from([1]), Uint8Array.of(1), new Uint8Array(new ArrayBuffer(100)),
          new ArrayBuffer(100).slice(1), new ArrayBuffer(100).transfer(),
          Uint8Array.fromHex("00".repeat(100)), new ArrayBuffer(0, { maxByteLength: 100 })];
        const names = [u.slice.name, u.map.length, u.filter.name, u.with.length,
          ArrayBuffer.prototype.slice.name, ArrayBuffer.prototype.transfer.name,
          Uint8Array.fromHex.name, Uint8Array.name, Uint8Array.length].join();
        for (const key of ["get", "set", "apply", "construct", "value", "writable",
                           "enumerable", "configurable", "__proto__"]) {
          delete Object.prototype[key];
        }
        text(seen.join() || "none read");
        text(names);
        const ctors = new Set(all.map((x) => x.constructor));
        text([...ctors].every((c) => c === Uint8Array || c === ArrayBuffer));
    """
    async with limited(isolation) as runtime:
        assert await run_cell(runtime, source) == Completed(
            [
                Text("none read"),
                Text("slice,1,filter,2,slice,transfer,fromHex,Uint8Array,3"),
                Text("true"),
            ]
        )


# -- max_output_bytes -------------------------------------------------------------------


async def test_output_limit(isolation: str) -> None:
    async with limited(isolation, max_output_bytes=1000) as runtime:
        event = await run_cell(runtime, 'text("a".repeat(600)); text("b".repeat(600)); text("c");')
        assert event == Completed(
            [Text("a" * 600), Text("b" * 600)],
            error_text="exec cell exceeded its limit of 1000 buffered output bytes "
            "(RuntimeConfig.max_output_bytes)",
        )
        await assert_carries_on(runtime)


async def test_output_limit_counts_utf8_bytes_and_image_urls(isolation: str) -> None:
    async with limited(isolation, max_output_bytes=1000) as runtime:
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
    async with limited(isolation, max_output_bytes=1000) as runtime:
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
    async with limited(isolation, max_error_text_bytes=100) as runtime:
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
        event = await run_cell(runtime, f'store("k".repeat(50), {js_nested(200)});')
        assert event.error_text is not None
        assert event.error_text.endswith(ERROR_TRUNCATED_SUFFIX)
        assert len(event.error_text.encode()) == 100 + len(ERROR_TRUNCATED_SUFFIX)
        await assert_carries_on(runtime)


async def test_the_default_error_text_limit_is_16_kib(isolation: str) -> None:
    async with limited(isolation) as runtime:
        event = await run_cell(runtime, 'throw new Error("x".repeat(100000));')
        assert event.error_text == "Error: " + "x" * (16 * 1024 - 7) + ERROR_TRUNCATED_SUFFIX


# -- max_stored_entries / max_stored_chars ------------------------------------------------

STORAGE_3_ENTRIES = (
    "code mode session storage exceeds its limit of 3 entries or 8388608 serialized bytes"
)


async def test_stored_entries_limit(isolation: str) -> None:
    async with limited(isolation, max_stored_entries=3) as runtime:
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
    async with limited(isolation, max_stored_entries=3, delegate=delegate) as runtime:
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
    async with limited(isolation, max_stored_chars=100) as runtime:
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
    async with limited(isolation, max_stored_chars=100) as runtime:
        # Compact JSON: 1 + len('[1,2,...,20]') = 1 + 51 = 52 bytes, well within 100.
        event = await run_cell(
            runtime, 'store("k", Array.from({ length: 20 }, (_, i) => i + 1)); text("stored");'
        )
        assert event == Completed([Text("stored")])
        # 40 "é": 1 + 42 UTF-16 units, 1 + 82 UTF-8 bytes: within 100 either way.
        event = await run_cell(runtime, 'store("k", "é".repeat(40)); text("stored");')
        assert event == Completed([Text("stored")])


async def test_a_large_stored_value_reads_back_as_it_was_stored(isolation: str) -> None:
    # Over a megabyte of JSON, with every character JSON escapes: its "done" message is
    # decoded, and its member of the stored values encoded, in slices on the host.
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        source = (
            "const s = Array.from({ length: 50_000 }, (_, i) => "
            "String.fromCharCode(i % 64) + '\"\\\\é😀' + i).join('');"
            " store('k', { s, n: [1, 2.5, null] }); text(s.length);"
        )
        stored = await run_cell(runtime, source)
        assert isinstance(stored, Completed) and stored.error_text is None
        length = int(stored.content_items[0].text)  # type: ignore[union-attr]
        assert length > 500_000
        check = (
            "const v = load('k'); const s = Array.from({ length: 50_000 }, (_, i) => "
            "String.fromCharCode(i % 64) + '\"\\\\é😀' + i).join('');"
            " text(v.s === s && JSON.stringify(v.n) === '[1,2.5,null]');"
        )
        assert await run_cell(runtime, check) == Completed([Text("true")])
        assert runtime.stored_values["k"].startswith('{"s":"\\u0000\\"\\\\é😀0')


# -- max_outstanding_tool_calls ------------------------------------------------------------


async def test_outstanding_tool_calls_limit(isolation: str) -> None:
    delegate = GateDelegate()
    async with limited(isolation, max_outstanding_tool_calls=3, delegate=delegate) as runtime:
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
    async with limited(isolation, max_outstanding_tool_calls=3, delegate=delegate) as runtime:
        source = (
            "for (let round = 0; round < 5; round++) {"
            " await Promise.all([1, 2, 3].map((n) => tools.echo({ n }))); }"
            ' text("15 calls");'
        )
        assert await run_cell(runtime, source, ["echo"]) == Completed([Text("15 calls")])


# -- max_pending_timers --------------------------------------------------------------------


async def test_pending_timers_limit(isolation: str) -> None:
    async with limited(isolation, max_pending_timers=3) as runtime:
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
    async with limited(isolation, max_pending_timers=3) as runtime:
        source = (
            "for (let i = 0; i < 10; i++) clearTimeout(setTimeout(() => {}, 60000));"
            " for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));"
            ' text("done");'
        )
        assert await run_cell(runtime, source) == Completed([Text("done")])


# -- max_source_bytes -----------------------------------------------------------------------


async def test_source_size_limit(isolation: str) -> None:
    async with limited(isolation, max_source_bytes=100) as runtime:
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
    async with limited(isolation, max_json_depth=4, delegate=delegate) as runtime:
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
    async with limited(isolation, max_json_depth=4) as runtime:
        event = await run_cell(runtime, f'store("ok", {js_nested(4)}); text("stored");')
        assert event == Completed([Text("stored")])
        # Refused when stored (a program may catch it), not when the cell ends.
        event = await run_cell(
            runtime,
            f'try {{ store("deep", {js_nested(5)}); }} catch (e) {{ text(e); }} text("went on");',
        )
        assert event == Completed([Text(f'Unable to store "deep": it {DEPTH_4}'), Text("went on")])
        event = await run_cell(runtime, f'store("deeper", {js_nested(100_000)});')
        assert event == Completed([], error_text=f'Unable to store "deeper": it {DEPTH_4}')
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
    async with limited(isolation, max_json_depth=4, delegate=DeepResults()) as runtime:
        source = (
            "text(await tools.deep({ depth: 4 }));"
            " try { await tools.deep({ depth: 5 }); } catch (e) { text(e); }"
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
    async with limited(isolation, delegate=DeepResults()) as runtime:
        source = "try { await tools.deep({ depth: 100000 }); } catch (e) { text(e); }"
        assert await run_cell(runtime, source, ["deep"]) == Completed(
            [
                Text(
                    "tool `deep` returned JSON nested deeper than the limit of 128 "
                    "(RuntimeConfig.max_json_depth)"
                )
            ]
        )
        await assert_carries_on(runtime)


# -- max_message_chars -------------------------------------------------------------------------

MESSAGE_LIMIT = (
    "exec cell sent a message larger than the limit of 100000 characters "
    "(RuntimeConfig.max_message_chars)"
)


async def test_message_size_limit(isolation: str) -> None:
    delegate = GateDelegate()
    async with limited(isolation, max_message_chars=100_000, delegate=delegate) as runtime:
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
    async with limited(isolation, max_message_chars=100_000) as runtime:
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
    assert defaults["max_stored_chars"] == 8 * MiB
    assert defaults["max_outstanding_tool_calls"] == 128
    assert defaults["max_pending_timers"] == 1024
    assert defaults["max_source_bytes"] == 1 * MiB
    assert defaults["max_json_depth"] == 128
    assert defaults["max_message_chars"] == 16 * MiB
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
