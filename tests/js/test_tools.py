"""Tools inside a program (``docs/programs.md``: Calling tools), through the
public API: identifiers, ``ALL_TOOLS``, input rules, ids, concurrency, JSON conversion,
host failures and results.

A rejection is a plain string, as in the reference (``resolve_tool_response`` in
openai/codex codex-rs/code-mode-runtime/src/runtime/module_loader.rs, commit
4f39251a010a): the tests read ``typeof e`` and ``e``, where they read
``e instanceof Error`` and ``e.message`` before."""

from __future__ import annotations

import pytest
import trio

from code_mode import (
    JSON,
    CellId,
    Completed,
    NestedToolCall,
    ToolDefinition,
    ToolKind,
    ToolName,
)
from tests.js_support import (
    Delegate,
    freeform_tool,
    function_tool,
    run,
    run_in,
    session,
    texts,
)

ECHO = function_tool("echo")
PATCH = freeform_tool("patch")

# ---------------------------------------------------------------------------------
# Identifiers and ALL_TOOLS


@pytest.mark.parametrize(
    ("raw", "ident"),
    [
        ("hidden-dynamic-tool", "hidden_dynamic_tool"),
        ("1abc", "_abc"),
        ("a1$_b", "a1$_b"),
        ("dotted.name", "dotted_name"),
        ("with space", "with_space"),
        ("ünïcode", "_n_code"),
        ("delete", "delete"),
        ("__proto__", "__proto__"),
        ("", "_"),
    ],
)
async def test_tool_identifiers_are_normalized(raw: str, ident: str, isolation: str) -> None:
    tool = function_tool(raw)
    delegate = Delegate()
    source = (
        f'text(typeof tools["{ident}"]);\n'
        f'text(await tools["{ident}"]({{n: 1}}));\n'
        "text(ALL_TOOLS.map((t) => t.name));\n"
        "text(Object.keys(tools));"
    )
    assert await run(isolation, source, [tool], delegate) == texts(
        "function", '{"n":1}', f'["{ident}"]', f'["{ident}"]'
    )
    assert delegate.calls == [
        NestedToolCall(
            cell_id=CellId("1"),
            runtime_tool_call_id="tool-1",
            tool_name=ToolName(raw),
            tool_kind=ToolKind.FUNCTION,
            input={"n": 1},
        )
    ]


async def test_namespaced_tools_are_flattened(isolation: str) -> None:
    tool = function_tool("tool", namespace="mcp__server")
    delegate = Delegate()
    source = "text(await tools.mcp__server__tool({q: 1}));\ntext(ALL_TOOLS[0].name);"
    assert await run(isolation, source, [tool], delegate) == texts('{"q":1}', "mcp__server__tool")
    assert [call.tool_name for call in delegate.calls] == [ToolName("tool", "mcp__server")]


async def test_all_tools_lists_name_and_description_in_definition_order(isolation: str) -> None:
    tools = [
        function_tool("zeta", description="Last letter.\nSecond line."),
        freeform_tool("apply-patch", description="Patches files."),
        function_tool("alpha", description=""),
    ]
    source = (
        "text(Array.isArray(ALL_TOOLS));\n"
        "text(ALL_TOOLS);\n"
        "text(Object.keys(tools));\n"
        "text(ALL_TOOLS.every((t) => Object.keys(t).join() === 'name,description'));"
    )
    assert await run(isolation, source, tools) == texts(
        "true",
        '[{"name":"zeta","description":"Last letter.\\nSecond line."},'
        '{"name":"apply_patch","description":"Patches files."},'
        '{"name":"alpha","description":""}]',
        '["zeta","apply_patch","alpha"]',
        "true",
    )


async def test_tool_functions_work_detached_from_tools(isolation: str) -> None:
    source = (
        "const { echo } = tools;\n"
        "text(await echo({a: 1}));\n"
        "text(await tools.echo.call(null, {b: 2}));\n"
        "text(echo.name);"
    )
    assert await run(isolation, source, [ECHO]) == texts('{"a":1}', '{"b":2}', "echo")


async def test_no_tools_gives_empty_tools_and_all_tools(isolation: str) -> None:
    source = "text(Object.keys(tools));\ntext(ALL_TOOLS);"
    assert await run(isolation, source) == texts("[]", "[]")


async def test_identifier_collision_fails_the_cell_naming_both_tools(isolation: str) -> None:
    delegate = Delegate()
    tools = [function_tool("a-b"), function_tool("ok"), function_tool("a_b")]
    assert await run(isolation, 'text("never runs");', tools, delegate) == texts(
        error_text="code mode tool identifier collision: `a-b` and `a_b` both normalize to `a_b`"
    )
    assert delegate.calls == []


# ---------------------------------------------------------------------------------
# Input rules


@pytest.mark.parametrize(
    ("arguments", "expected_input", "echoed"),
    [
        ("", {}, "{}"),
        ("undefined", {}, "{}"),
        ("{}", {}, "{}"),
        ('{a: 1, b: "two"}', {"a": 1, "b": "two"}, '{"a":1,"b":"two"}'),
        ("{a: 1}, {ignored: true}", {"a": 1}, '{"a":1}'),
    ],
)
async def test_function_tools_take_a_json_object(
    arguments: str, expected_input: JSON, echoed: str, isolation: str
) -> None:
    delegate = Delegate()
    source = f"text(await tools.echo({arguments}));"
    assert await run(isolation, source, [ECHO], delegate) == texts(echoed)
    assert delegate.inputs() == [expected_input]
    assert delegate.calls[0].tool_kind is ToolKind.FUNCTION


async def test_freeform_tools_take_a_string(isolation: str) -> None:
    delegate = Delegate()
    source = 'text(await tools.patch("*** Begin Patch\\n"));'
    assert await run(isolation, source, [PATCH], delegate) == texts("*** Begin Patch\n")
    assert delegate.inputs() == ["*** Begin Patch\n"]
    assert delegate.calls[0].tool_kind is ToolKind.FREEFORM


#: Calls a program may make that never reach the delegate: the tools enabled, the
#: call, and the string its promise rejects with.
REFUSED_CALLS = [
    *(
        pytest.param(
            [ECHO],
            f"echo({argument})",
            "tool `echo` expects a JSON object for arguments",
            id=f"function-{argument}",
        )
        for argument in ["5", '"text"', "[1, 2]", "null", "true"]
    ),
    *(
        pytest.param(
            [PATCH],
            f"patch({arguments})",
            "tool `patch` expects a string input",
            id=f"freeform-{arguments}",
        )
        for arguments in ["", "undefined", "5", "{}", "null", '["a"]']
    ),
    pytest.param([ECHO], "missing({})", "tool `missing` is not enabled in exec", id="not-enabled"),
]


@pytest.mark.parametrize(("tools", "call", "reason"), REFUSED_CALLS)
async def test_a_refused_call_rejects_its_promise_with_a_string(
    tools: list[ToolDefinition], call: str, reason: str, isolation: str
) -> None:
    """Function tools take a JSON object, freeform tools a string, and only enabled
    tools can be called."""
    delegate = Delegate()
    source = (
        f"const promise = tools.{call};\n"
        "text(promise instanceof Promise);\n"
        "try { await promise; } catch (e) { text(typeof e); text(e); }"
    )
    assert await run(isolation, source, tools, delegate) == texts("true", "string", reason)
    assert delegate.calls == []


# ---------------------------------------------------------------------------------
# Ids and concurrency


async def test_tool_call_ids_follow_call_order(isolation: str) -> None:
    delegate = Delegate()
    tools = [function_tool("a"), function_tool("b")]
    source = (
        "await Promise.all([tools.a({n: 1}), tools.b({n: 2}), tools.a({n: 3})]);\n"
        "await tools.b({n: 4});"
    )
    assert await run(isolation, source, tools, delegate) == texts()
    # The concurrent calls reach the delegate as separate tasks, in no promised order.
    seen = sorted((c.runtime_tool_call_id, c.tool_name.name, c.input) for c in delegate.calls)
    assert seen == [
        ("tool-1", "a", {"n": 1}),
        ("tool-2", "b", {"n": 2}),
        ("tool-3", "a", {"n": 3}),
        ("tool-4", "b", {"n": 4}),
    ]


@pytest.mark.parametrize("first_to_settle", ["tool-1", "tool-2"])
async def test_concurrent_tool_calls_settle_in_either_order(
    first_to_settle: str, isolation: str
) -> None:
    settled = trio.Event()

    async def handler(call: NestedToolCall) -> JSON:
        if call.runtime_tool_call_id != first_to_settle:
            await settled.wait()
        else:
            settled.set()
        assert isinstance(call.input, dict)
        return call.input["n"]

    source = (
        "const order = [];\n"
        "const first = tools.echo({n: 1}).then((n) => order.push(n));\n"
        "const second = tools.echo({n: 2}).then((n) => order.push(n));\n"
        "await Promise.all([first, second]);\n"
        "text(order);"
    )
    expected = "[1,2]" if first_to_settle == "tool-1" else "[2,1]"
    assert await run(isolation, source, [ECHO], Delegate(handler)) == texts(expected)


async def test_unawaited_tool_calls_are_cancelled_when_the_cell_ends(isolation: str) -> None:
    async def never(call: NestedToolCall) -> JSON:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    delegate = Delegate(never)
    assert await run(isolation, 'tools.echo({});\ntext("done");', [ECHO], delegate) == texts("done")
    assert delegate.cancelled_calls == ["tool-1"]


# ---------------------------------------------------------------------------------
# JSON conversion of the input


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param("{a: NaN}", {"a": None}, id="nan"),
        pytest.param("{a: Infinity, b: -Infinity}", {"a": None, "b": None}, id="infinity"),
        pytest.param("{a: -0}", {"a": 0}, id="negative-zero"),
        pytest.param("{d: new Date(0)}", {"d": "1970-01-01T00:00:00.000Z"}, id="date"),
        pytest.param("{f: () => 1, g() {}}", {}, id="functions-dropped"),
        pytest.param("{u: undefined, s: Symbol('x')}", {}, id="undefined-dropped"),
        pytest.param(
            "{arr: [undefined, () => 1, Symbol('x'), NaN]}",
            {"arr": [None, None, None, None]},
            id="null-in-arrays",
        ),
        pytest.param(
            "{m: new Map([[1, 2]]), s: new Set([1]), e: new Error('x'), r: /re/}",
            {"m": {}, "s": {}, "e": {}, "r": {}},
            id="map-set-error-regexp",
        ),
        pytest.param(
            "{n: new Number(3), s: new String('x'), b: new Boolean(false)}",
            {"n": 3, "s": "x", "b": False},
            id="boxed-primitives",
        ),
        pytest.param(
            "{t: {toJSON() { return 'custom'; }}}", {"t": "custom"}, id="to-json-honoured"
        ),
        pytest.param("{get g() { return 'got'; }}", {"g": "got"}, id="getters-run"),
        pytest.param(
            "{big: 2 ** 53, f: 1.5, neg: -7, s: 'é\\u2028😀'}",
            {"big": 9007199254740992, "f": 1.5, "neg": -7, "s": "é\u2028😀"},
            id="numbers-and-strings",
        ),
        pytest.param(
            "{nested: {list: [1, {deep: [true, null]}]}}",
            {"nested": {"list": [1, {"deep": [True, None]}]}},
            id="nested",
        ),
        pytest.param(
            "Object.assign(Object.create({inherited: 1}), {own: 2})", {"own": 2}, id="own-only"
        ),
    ],
)
async def test_tool_input_crosses_as_json(expression: str, expected: JSON, isolation: str) -> None:
    delegate = Delegate()
    assert await run(isolation, f"await tools.echo({expression});", [ECHO], delegate) == texts()
    assert delegate.inputs() == [expected]


@pytest.mark.parametrize(
    ("expression", "message_start"),
    [
        pytest.param("{a: 1n}", "Do not know how to serialize a BigInt", id="bigint"),
        pytest.param("{a: [2n]}", "Do not know how to serialize a BigInt", id="nested-bigint"),
        pytest.param(
            "(() => { const o = {}; o.self = o; return o; })()",
            "Converting circular structure to JSON",
            id="cycle",
        ),
        pytest.param(
            "{toJSON() { throw new Error('from toJSON'); }}", "from toJSON", id="throwing-to-json"
        ),
        pytest.param(
            "{get g() { throw new Error('from getter'); }}", "from getter", id="throwing-getter"
        ),
    ],
)
async def test_unconvertible_input_throws_synchronously(
    expression: str, message_start: str, isolation: str
) -> None:
    delegate = Delegate()
    source = (
        "let result = 'no throw';\n"
        f"try {{ tools.echo({expression}); }} catch (e) {{ result = e; }}\n"
        "text(result);"
    )
    event = await run(isolation, source, [ECHO], delegate)
    assert isinstance(event, Completed)
    assert event.error_text is None
    [item] = event.content_items
    # The error's text (a plain string, as upstream's tool_callback throws it):
    # its first line is `<name>: <message>`.
    assert message_start in getattr(item, "text", "").split("\n")[0]
    assert delegate.calls == []


# ---------------------------------------------------------------------------------
# Results and host failures


@pytest.mark.parametrize(
    ("value", "type_name", "json_text"),
    [
        ("a string", "string", '"a string"'),
        (1.5, "number", "1.5"),
        (7, "number", "7"),
        (True, "boolean", "true"),
        (None, "object", "null"),
        ([1, None, "x"], "object", '[1,null,"x"]'),
        ({"é": {"list": [1]}}, "object", '{"é":{"list":[1]}}'),
    ],
)
async def test_tool_results_arrive_as_json_data(
    value: JSON, type_name: str, json_text: str, isolation: str
) -> None:
    async def handler(call: NestedToolCall) -> JSON:
        return value

    source = "const r = await tools.echo({});\ntext(typeof r);\ntext(JSON.stringify(r));"
    assert await run(isolation, source, [ECHO], Delegate(handler)) == texts(type_name, json_text)


async def test_tool_results_are_fresh_copies(isolation: str) -> None:
    shared: JSON = {"list": [1], "nested": {"k": "v"}}

    async def handler(call: NestedToolCall) -> JSON:
        return shared

    source = (
        "const a = await tools.echo({});\n"
        "a.list.push(2);\n"
        "a.nested.k = 'changed';\n"
        "const b = await tools.echo({});\n"
        "text(b);\n"
        "text(a === b);\n"
        "text(Object.getPrototypeOf(b) === Object.prototype);\n"
        "text(Array.isArray(b.list));"
    )
    assert await run(isolation, source, [ECHO], Delegate(handler)) == texts(
        '{"list":[1],"nested":{"k":"v"}}', "false", "true", "true"
    )
    assert shared == {"list": [1], "nested": {"k": "v"}}


async def test_host_failure_rejects_with_the_exception_message(isolation: str) -> None:
    """A failed tool call rejects with a plain string, the host's error text, as
    upstream's ``resolve_tool_response`` rejects (openai/codex
    codex-rs/code-mode-runtime/src/runtime/module_loader.rs, commit 4f39251a010a;
    ``code_mode_exec_surfaces_handler_errors_as_exceptions`` in
    codex-rs/core/tests/suite/code_mode.rs catches it as ``error?.message ??
    String(error)``). It was an ``Error`` here before."""

    async def handler(call: NestedToolCall) -> JSON:
        raise ValueError("the host says no")

    source = (
        "try { await tools.echo({}); } catch (e) {\n"
        "  text(typeof e);\n"
        "  text(e?.message ?? String(e));\n"
        "}\n"
        "await tools.echo({});"
    )
    assert await run(isolation, source, [ECHO], Delegate(handler)) == texts(
        "string", "the host says no", error_text="the host says no"
    )


async def test_one_call_failing_and_one_succeeding_are_both_seen(isolation: str) -> None:
    async def handler(call: NestedToolCall) -> JSON:
        if call.tool_name.name == "bad":
            raise RuntimeError("bad failed")
        return "good result"

    tools = [function_tool("good"), function_tool("bad")]
    source = (
        "const [good, bad] = await Promise.allSettled([tools.good({}), tools.bad({})]);\n"
        "text(good.value);\n"
        "text(bad.reason);"
    )
    assert await run(isolation, source, tools, Delegate(handler)) == texts(
        "good result", "bad failed"
    )


async def test_tools_of_one_cell_are_not_visible_to_the_next(isolation: str) -> None:
    delegate = Delegate()
    other: ToolDefinition = function_tool("other")
    async with session(isolation, delegate) as runtime:
        assert await run_in(runtime, "await tools.echo({});", [ECHO]) == texts()
        source = "text(ALL_TOOLS.map((t) => t.name));\nawait tools.echo({});"
        assert await run_in(runtime, source, [other]) == texts(
            '["other"]', error_text="tool `echo` is not enabled in exec"
        )
    assert len(delegate.calls) == 1
