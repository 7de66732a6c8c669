"""The bridge between a program and the host, attacked from both ends.

Programs can read, overwrite or call every global they see, but no global leads to the
host's entry point; they try to forge, swallow or reorder messages by replacing the
built-ins the runtime relies on. Whatever they do, the delegate only ever receives the calls the
program really made through ``tools``, and only the cell itself is affected.

Below the runtime, :class:`MessageValidator` is fed crafted batches: forged, malformed,
duplicated and out-of-order messages, unknown tools and oversized nesting each raise
:class:`ProtocolViolation` with a clear message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from code_mode import (
    JSON,
    CellEvent,
    CellId,
    Completed,
    NestedToolCall,
    SessionRuntime,
    Text,
    ToolKind,
    ToolName,
    YieldAfter,
)
from code_mode._engine._bridge import (
    BufferMemoryExceeded,
    Finished,
    MessageValidator,
    Notify,
    Output,
    ProtocolViolation,
    Started,
    TimerCleared,
    TimerSet,
    ToolCallRequested,
    YieldRequested,
    json_depth_exceeds,
)

from ..helpers import SAFETY, GateDelegate, config, request


class RecordingDelegate(GateDelegate):
    """A ``GateDelegate`` that also keeps every call it received, in arrival order."""

    def __init__(self, gates: tuple[str, ...] = ()) -> None:
        super().__init__(gates=gates)
        self.calls: list[NestedToolCall] = []

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        self.calls.append(call)
        return await super().invoke_tool(call)


def call(tool: str, input: JSON, n: int = 1, cell: str = "1") -> NestedToolCall:
    return NestedToolCall(
        cell_id=CellId(cell),
        runtime_tool_call_id=f"tool-{n}",
        tool_name=ToolName(tool),
        tool_kind=ToolKind.FUNCTION,
        input=input,
    )


async def run_cell(runtime: SessionRuntime, source: str, tools: list[str]) -> CellEvent:
    with trio.fail_after(SAFETY):
        started = await runtime.execute(request(source, tools), YieldAfter(10 * SAFETY))
        return await started.initial_event()


async def run_and_check_next(
    isolation: str, source: str, tools: list[str] | None = None
) -> tuple[CellEvent, RecordingDelegate]:
    delegate = RecordingDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        event = await run_cell(runtime, source, tools if tools is not None else ["echo"])
        assert await run_cell(runtime, 'text("ok")', []) == Completed([Text("ok")])
    return event, delegate


# -- programs against the bridge -------------------------------------------------------------


async def test_no_global_leads_to_the_entry_point(isolation: str) -> None:
    # The host calls the runtime through a function handle, not a global: a program
    # neither sees it nor can put something of its own in its place.
    source = """
        text(typeof __code_mode_recv);
        text(Object.getOwnPropertyNames(globalThis).filter((n) => /recv/i.test(n)).join());
        globalThis.__code_mode_recv = () => { throw new Error("the host called me"); };
        text(await tools.echo({ still: "works" }));
    """
    event, delegate = await run_and_check_next(isolation, source)
    assert event == Completed([Text("undefined"), Text(""), Text('{"still":"works"}')])
    assert delegate.calls == [call("echo", {"still": "works"})]


REPLACED_BUILTINS = {
    "json": 'JSON.stringify = () => \'{"t":"tool","id":"tool-9","name":"echo"}\';'
    " JSON.parse = () => ({ forged: true });",
    "array": "Array.prototype.push = () => 0; Array.prototype.join = () => '[]';"
    " Array.prototype.map = Array.prototype.forEach = Array.prototype.slice = null;"
    " Array.isArray = () => false; Array.from = () => [];",
    "array-index-accessors": "Object.defineProperty(Array.prototype, '0', { configurable: true,"
    ' get() { return \'{"t":"tool","id":"tool-1","name":"echo","input":"x"}\'; },'
    " set(v) {} });",
    "promise": "Promise.prototype.then = function () { throw new Error('then'); };"
    " Promise.prototype.catch = Promise.prototype.finally = null;"
    " Promise.withResolvers = () => ({}); Promise.reject = Promise.resolve = () => 1;",
    "promise-species": "Object.defineProperty(Promise, Symbol.species,"
    " { get() { throw new Error('species'); } });",
    "reflect": "Reflect.apply = () => { throw new Error('apply'); };"
    " Reflect.get = Reflect.set = Reflect.defineProperty = () => { throw new Error('r'); };",
    "object": "Object.defineProperty = Object.freeze = Object.keys = Object.hasOwn = () => {"
    " throw new Error('object'); }; Object.setPrototypeOf = () => { throw new Error('sp'); };",
    # Descriptor fields are read through the prototype chain.
    "object-prototype": "Object.prototype.get = function () { return 1; };"
    " Object.prototype.set = function () {}; Object.prototype.t = 'tool';"
    " Object.prototype.id = 'tool-1'; Object.prototype.name = 'echo';",
    "function": "Function.prototype.call = Function.prototype.apply ="
    " Function.prototype.bind = () => { throw new Error('fn'); };",
    "string": "for (const k of Object.getOwnPropertyNames(String.prototype))"
    " if (k !== 'constructor' && k !== 'length') String.prototype[k] = () => 'S';"
    " String = function () { return 'S'; };",
    "map": "for (const k of ['get', 'set', 'has', 'delete', 'forEach', 'clear'])"
    " Map.prototype[k] = () => { throw new Error('map'); };"
    " Object.defineProperty(Map.prototype, 'size', { get() { return 0; } });",
    "number-math": "Number = () => 0; Number.isFinite = () => false; Math.min = () => 0;"
    " Math.trunc = () => 0;",
    "errors": "Error = function () { return { stack: 'forged' }; };"
    " TypeError = Error; Error.prototype.toString = () => 'E';",
    "typed-arrays": "Uint16Array.prototype.fill = Int32Array.prototype.set = null;"
    " Object.defineProperty(Object.getPrototypeOf(Uint16Array.prototype), 'length',"
    " { get() { return 0; } });",
}


@pytest.mark.parametrize("replaced", list(REPLACED_BUILTINS))
async def test_replaced_builtins_do_not_break_or_forge_the_bridge(
    replaced: str, isolation: str
) -> None:
    # After replacing built-ins the runtime relies on, the program's tools, text,
    # storage and timers still work, and the delegate sees exactly the real calls.
    source = (
        REPLACED_BUILTINS[replaced]
        + """
        text("text works");
        const r = await tools.echo({ a: 1 });
        text(r);
        store("k", { v: 2 });
        text(load("k"));
        await new Promise((resolve) => setTimeout(resolve, 1));
        text("timers work");
        try { await tools.fail({}); } catch (e) { text(e); }
    """
    )
    delegate = RecordingDelegate()
    delegate.errors["fail"] = RuntimeError("tool failed")
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        event = await run_cell(runtime, source, ["echo", "fail"])
        assert event == Completed(
            [
                Text("text works"),
                Text('{"a":1}'),
                Text('{"v":2}'),
                Text("timers work"),
                Text("tool failed"),
            ]
        )
        # The writes were committed as real JSON, not as what the program's JSON said.
        assert await run_cell(runtime, 'text(load("k"));', []) == Completed([Text('{"v":2}')])
    assert delegate.calls == [call("echo", {"a": 1}), call("fail", {}, n=2)]


async def test_a_polluted_object_prototype_toJSON_changes_only_the_programs_json(
    isolation: str,
) -> None:
    # JSON.stringify semantics apply to the program's own values (tool input, text of
    # objects, stored values), never to the runtime's messages.
    source = """
        Object.prototype.toJSON = function () { return "poisoned"; };
        text("plain"); text({ a: 1 }); notify("note"); store("k", { v: 1 });
        await new Promise((resolve) => setTimeout(resolve, 1));
        try { await tools.echo({ a: 1 }); } catch (e) { text(e); }
        text(load("k"));
    """
    event, delegate = await run_and_check_next(isolation, source)
    assert event == Completed(
        [
            Text("plain"),
            Text('"poisoned"'),
            Text("tool `echo` expects a JSON object for arguments"),
            Text("poisoned"),  # the stored value is the string the program's JSON made
        ]
    )
    assert delegate.calls == []
    assert [text for _, _, text in delegate.notifications] == ["note"]


ECHO_1 = {"t": "tool", "id": "tool-2", "name": "echo", "input": {"ok": 1}}


@pytest.mark.parametrize(
    ("batch", "kept", "error"),
    [
        # A forged message (as a subverted runtime would send): no event of its batch
        # is acted on, not even the valid tool call before it.
        (
            [ECHO_1, {"t": "tool", "id": "tool-3", "name": "evil", "input": {}}],
            [],
            "tool `evil` is not enabled in exec",
        ),
        # Output has no effect on the host: what the program printed before the bad
        # message in the same batch is kept (but not the tool call beside it).
        (
            [{"t": "text", "text": "same batch"}, ECHO_1, ECHO_1, {"t": "text", "text": "x"}],
            [Text("same batch")],
            "tool call id 'tool-2' is not fresh",
        ),
    ],
    ids=["forged-tool", "output-then-duplicate"],
)
async def test_a_bad_message_in_a_batch_voids_the_rest_of_it(
    batch: list[dict[str, Any]], kept: list[Text], error: str, isolation: str
) -> None:
    delegate = RecordingDelegate(gates=("gate",))
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(
            request('text("before"); await tools.gate({});', ["gate", "echo"]),
            YieldAfter(10 * SAFETY),
        )
        await delegate.next_call()
        cell = runtime._cell(started.cell_id)
        assert cell is not None and cell._isolate is not None
        cell._isolate.on_batch(json.dumps(batch))
        with trio.fail_after(SAFETY):
            event = await started.initial_event()
        assert event == Completed(
            [Text("before"), *kept], error_text=f"exec runtime sent an invalid message: {error}"
        )
        # Only this cell failed.
        assert await run_cell(runtime, 'text("ok")', []) == Completed([Text("ok")])
    assert delegate.calls == [call("gate", {})]
    assert delegate.cancelled == ["tool-1"]


# -- MessageValidator, message by message ------------------------------------------------------

START = {"t": "started"}


def validator(**options: Any) -> MessageValidator:
    options.setdefault("tool_idents", frozenset({"echo", "patch"}))
    options.setdefault("max_json_depth", 4)
    return MessageValidator(**options)


def parse(*batches: object, **options: Any) -> list[object]:
    """Parse ``batches`` (each a list of messages, or raw text) with one validator."""
    checker = validator(**options)
    events: list[object] = []
    for batch in batches:
        events.extend(checker.parse_batch(batch if isinstance(batch, str) else json.dumps(batch)))
    return events


def violation(*batches: object, **options: Any) -> str:
    with pytest.raises(ProtocolViolation) as raised:
        parse(*batches, **options)
    return str(raised.value)


def test_a_well_formed_stream_becomes_events() -> None:
    events = parse(
        [START, {"t": "text", "text": "hé"}],
        [
            {"t": "image", "image_url": "data:x", "detail": "low"},
            {"t": "notify", "text": "n"},
            {"t": "yield"},
            {"t": "tool", "id": "tool-1", "name": "echo", "input": {"a": [1, [2]]}},
            {"t": "timer", "id": 1, "ms": 5},
            {"t": "timer", "id": 2, "ms": 0},
            {"t": "clear", "id": 1},
            {"t": "tool", "id": "tool-2", "name": "patch", "input": "diff"},
        ],
        [{"t": "done", "error": None, "writes": {"k": "[1]", "__proto__": "{}"}}],
    )
    assert events[0] == Started()
    assert events[1] == Output(Text("hé"), 3)
    assert events[3:] == [
        Notify("n"),
        YieldRequested(),
        ToolCallRequested("tool-1", "echo", {"a": [1, [2]]}, True),
        TimerSet(1, 0.005),
        TimerSet(2, 0.0),
        TimerCleared(1),
        ToolCallRequested("tool-2", "patch", "diff", True),
        Finished(None, {"k": "[1]", "__proto__": "{}"}),  # texts, kept as written
    ]


def test_an_array_buffer_breach_ends_the_stream() -> None:
    # js/buffers.js sends `memory` (the host names the limit) and nothing after it.
    assert parse([START, {"t": "text", "text": "t"}, {"t": "memory"}]) == [
        Started(),
        Output(Text("t"), 1),
        BufferMemoryExceeded(),
    ]


@pytest.mark.parametrize(
    ("batches", "message"),
    [
        # not a batch of messages
        (["not json"], "malformed message batch: Expecting value: line 1 column 1 (char 0)"),
        (["[1,"], "malformed message batch: Expecting value: line 1 column 4 (char 3)"),
        (['{"t": "started"}'], "a message batch must be a JSON array"),
        (["[1]"], "a message must be a JSON object"),
        ([[START, []]], "a message must be a JSON object"),
        (
            ['[{"t": "started"}, {"t": "timer", "id": 1, "ms": NaN}]'],
            "malformed message batch: non-standard JSON constant NaN",
        ),
        (
            ['[{"t": "started"}, {"t": "timer", "id": 1, "ms": Infinity}]'],
            "malformed message batch: non-standard JSON constant Infinity",
        ),
        # order of the stream
        ([[{"t": "text", "text": "early"}]], "'text' message before 'started'"),
        ([[{"t": "done", "error": None, "writes": {}}]], "'done' message before 'started'"),
        ([[START], [START]], "duplicate 'started' message"),
        (
            [[START, {"t": "done", "error": None, "writes": {}}], [{"t": "text", "text": "late"}]],
            "'text' message after completion",
        ),
        (
            [
                [
                    START,
                    {"t": "done", "error": None, "writes": {}},
                    {"t": "done", "error": None, "writes": {}},
                ]
            ],
            "'done' message after completion",
        ),
        ([[{"t": "memory"}]], "'memory' message before 'started'"),
        (
            [[START, {"t": "memory"}], [{"t": "text", "text": "late"}]],
            "'text' message after completion",
        ),
        (
            [[START, {"t": "memory"}, {"t": "done", "error": None, "writes": {}}]],
            "'done' message after completion",
        ),
        ([[START, {"t": "evil"}]], "unknown message type 'evil'"),
        ([[START, {"text": "no type"}]], "unknown message type None"),
        # field types
        ([[START, {"t": "text", "text": 1}]], "field 'text' of a 'text' message must be a string"),
        ([[START, {"t": "text"}]], "field 'text' of a 'text' message must be a string"),
        (
            [[START, {"t": "notify", "text": None}]],
            "field 'text' of a 'notify' message must be a string",
        ),
        ([[START, {"t": "image", "image_url": "x", "detail": "huge"}]], "invalid image detail"),
        (
            [[START, {"t": "image", "image_url": ["x"], "detail": "low"}]],
            "field 'image_url' of a 'image' message must be a string",
        ),
        # tool calls: fresh ids in order, enabled tools, input shapes and depth
        (
            [[START, {"t": "tool", "id": "tool-2", "name": "echo", "input": {}}]],
            "tool call id 'tool-2' is not fresh",
        ),
        (
            [
                [
                    START,
                    {"t": "tool", "id": "tool-1", "name": "echo", "input": {}},
                    {"t": "tool", "id": "tool-1", "name": "echo", "input": {}},
                ]
            ],
            "tool call id 'tool-1' is not fresh",
        ),
        (
            [
                [
                    START,
                    {"t": "tool", "id": "tool-1", "name": "echo", "input": {}},
                    {"t": "tool", "id": "tool-3", "name": "echo", "input": {}},
                ]
            ],
            "tool call id 'tool-3' is not fresh",
        ),
        (
            [[START, {"t": "tool", "id": "1", "name": "echo", "input": {}}]],
            "tool call id '1' is not fresh",
        ),
        (
            [[START, {"t": "tool", "id": 1, "name": "echo", "input": {}}]],
            "field 'id' of a 'tool' message must be a string",
        ),
        (
            [[START, {"t": "tool", "id": "tool-1", "name": "evil", "input": {}}]],
            "tool `evil` is not enabled in exec",
        ),
        (
            [[START, {"t": "tool", "id": "tool-1", "input": {}}]],
            "field 'name' of a 'tool' message must be a string",
        ),
        (
            [[START, {"t": "tool", "id": "tool-1", "name": "echo", "input": [1]}]],
            "tool `echo` input must be a JSON object or a string",
        ),
        (
            [[START, {"t": "tool", "id": "tool-1", "name": "echo", "input": None}]],
            "tool `echo` input must be a JSON object or a string",
        ),
        (
            [[START, {"t": "tool", "id": "tool-1", "name": "echo", "input": {"a": [[[[1]]]]}}]],
            "tool `echo` input nests deeper than the limit of 4 (RuntimeConfig.max_json_depth)",
        ),
        (
            [
                "["
                + json.dumps(START)
                + ',{"t":"tool","id":"tool-1","name":"echo","input":'
                + "[" * 100_000
                + "]" * 100_000
                + "}]"
            ],
            "a message nests deeper than the limit of 4 (RuntimeConfig.max_json_depth)",
        ),
        # timers
        ([[START, {"t": "timer", "id": 2, "ms": 0}]], "timer id 2 is out of order"),
        (
            [[START, {"t": "timer", "id": 1, "ms": 0}, {"t": "timer", "id": 1, "ms": 0}]],
            "timer id 1 is out of order",
        ),
        (
            [[START, {"t": "timer", "id": "1", "ms": 0}]],
            "field 'id' of a 'timer' message must be an integer",
        ),
        (
            [[START, {"t": "timer", "id": True, "ms": 0}]],
            "field 'id' of a 'timer' message must be an integer",
        ),
        ([[START, {"t": "timer", "id": 1, "ms": -1}]], "timer delay must be a non-negative number"),
        (
            [[START, {"t": "timer", "id": 1, "ms": "5"}]],
            "timer delay must be a non-negative number",
        ),
        (
            [[START, {"t": "timer", "id": 1, "ms": False}]],
            "timer delay must be a non-negative number",
        ),
        (
            # no number of a message may be out of range (JSON.rawJSON can write one)
            ['[{"t":"started"},{"t":"timer","id":1,"ms":1e400}]'],
            "malformed message batch: number 1e400 is out of range",
        ),
        ([[START, {"t": "clear", "id": 1}]], "clear of unknown timer id 1"),
        (
            [[START, {"t": "timer", "id": 1, "ms": 0}, {"t": "clear", "id": 2}]],
            "clear of unknown timer id 2",
        ),
        ([[START, {"t": "clear", "id": 0}]], "clear of unknown timer id 0"),
        (
            [[START, {"t": "clear", "id": 1.5}]],
            "field 'id' of a 'clear' message must be an integer",
        ),
        # completion
        (
            [[START, {"t": "done", "error": 1, "writes": {}}]],
            "field 'error' of a 'done' message must be a string or null",
        ),
        (
            [[START, {"t": "done", "error": None}]],
            "field 'writes' of a 'done' message must be an object",
        ),
        (
            [[START, {"t": "done", "error": None, "writes": []}]],
            "field 'writes' of a 'done' message must be an object",
        ),
        (
            [[START, {"t": "done", "error": None, "writes": {"k": 1}}]],
            "stored values must arrive as JSON text",
        ),
        (
            [[START, {"t": "done", "error": None, "writes": {"k": ""}}]],
            "stored values must arrive as JSON text",
        ),
    ],
)
def test_a_bad_message_is_a_protocol_violation(batches: list[object], message: str) -> None:
    assert violation(*batches) == message


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("function", "text", "tool `t` input must be a JSON object"),
        ("function", [1], "tool `t` input must be a JSON object"),
        ("freeform", {"a": 1}, "tool `t` input must be a string"),
        ("freeform", None, "tool `t` input must be a string"),
    ],
)
def test_with_tool_kinds_an_input_must_have_its_tools_shape(
    kind: str, value: JSON, message: str
) -> None:
    tool = {"t": "tool", "id": "tool-1", "name": "t", "input": value}
    assert violation([START, tool], tool_kinds={"t": kind}) == message


def test_with_tool_kinds_the_right_shapes_pass() -> None:
    events = parse(
        [
            START,
            {"t": "tool", "id": "tool-1", "name": "f", "input": {"a": 1}},
            {"t": "tool", "id": "tool-2", "name": "g", "input": "text"},
        ],
        tool_idents=frozenset(),
        tool_kinds={"f": "function", "g": "freeform"},
    )
    assert events[1:] == [
        ToolCallRequested("tool-1", "f", {"a": 1}, True),
        ToolCallRequested("tool-2", "g", "text", True),
    ]


def test_a_violation_anywhere_in_a_batch_rejects_the_whole_batch() -> None:
    checker = validator()
    checker.parse_batch(json.dumps([START]))
    with pytest.raises(ProtocolViolation, match="tool `evil` is not enabled in exec"):
        checker.parse_batch(
            json.dumps(
                [
                    {"t": "text", "text": "fine"},
                    {"t": "tool", "id": "tool-1", "name": "echo", "input": {}},
                    {"t": "tool", "id": "tool-2", "name": "evil", "input": {}},
                ]
            )
        )


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        (1, 0),
        ("x", 0),
        (None, 0),
        ({}, 1),
        ([], 1),
        ({"i": 1, "s": "x", "n": None}, 1),
        ([1, "x", True], 1),
        ({"a": 1, "b": {}}, 2),
        ([1, [2, [3]]], 3),
        ({"a": [{"b": [{}]}]}, 5),
    ],
)
def test_json_depth_exceeds_only_past_the_limit(value: Any, depth: int) -> None:
    for limit in range(6):
        assert json_depth_exceeds(value, limit) is (depth > limit), (value, limit)


def test_json_depth_counts_objects_and_arrays_alike() -> None:
    at_limit = {"a": [{"b": [1]}]}  # 4 deep
    assert parse([START, {"t": "tool", "id": "tool-1", "name": "echo", "input": at_limit}])[1:] == [
        ToolCallRequested("tool-1", "echo", at_limit, True)
    ]
    too_deep = {"a": [{"b": [{}]}]}  # 5 deep (an empty object counts)
    assert violation([START, {"t": "tool", "id": "tool-1", "name": "echo", "input": too_deep}]) == (
        "tool `echo` input nests deeper than the limit of 4 (RuntimeConfig.max_json_depth)"
    )
