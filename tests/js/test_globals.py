"""The globals a program sees (``docs/programs.md``), through the public API.

``text``, ``image``, ``forward_output``, ``console``, ``notify``, ``store``/``load``,
``setTimeout``/``clearTimeout``, ``yield_control`` and ``exit``. The output helpers'
edge cases are unit-tested with ``output.js``; here each is checked through a session.

A helper's failure is a plain string, as the reference's helpers throw it
(``throw_type_error`` in openai/codex codex-rs/code-mode-runtime/src/runtime/value.rs,
commit 4f39251a010a): the tests read ``typeof e`` and ``e`` itself, where they read
``e instanceof Error`` and ``e.message`` before.
"""

from __future__ import annotations

import pytest
import trio

from code_mode import (
    JSON,
    Completed,
    Image,
    ImageDetail,
    NestedToolCall,
    RuntimeConfig,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)
from tests.js_support import (
    CALL_ID,
    SAFETY,
    Delegate,
    function_tool,
    request,
    run,
    run_in,
    session,
    texts,
)

FWD_EXPECTS = (
    "forward_output expects a direct tool output with `content` or `content_items`, "
    "a text/image content item, an image_url object, or a string output"
)


def unable_to_store(key_literal: str) -> str:
    return f"Unable to store {key_literal}. Only plain serializable objects can be stored."


# ---------------------------------------------------------------------------------
# text


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("", "undefined"),
        ("undefined", "undefined"),
        ("null", "null"),
        ("true", "true"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("-0", "0"),
        ("NaN", "NaN"),
        ("10n", "10"),
        ('""', ""),
        ('"plain string"', "plain string"),
        ("{a: 1, b: [true, null]}", '{"a":1,"b":[true,null]}'),
        ('[1, "a"]', '[1,"a"]'),
        ("new Date(0)", '"1970-01-01T00:00:00.000Z"'),
        ("{u: undefined, f() {}, n: NaN}", '{"n":null}'),
    ],
)
async def test_text_appends_one_item(argument: str, expected: str, isolation: str) -> None:
    assert await run(isolation, f"text({argument});") == texts(expected)


async def test_text_of_a_cyclic_value_throws_the_engines_error_text(isolation: str) -> None:
    """Upstream ``text_helper_surfaces_stringify_errors`` (openai/codex
    codex-rs/code-mode-runtime/src/service_tests.rs, commit b0cdcce6169d): the error's
    text is thrown as a plain string (it was a ``TypeError`` here before)."""
    source = (
        "const o = {};\n"
        "o.self = o;\n"
        "try { text(o); } catch (e) {\n"
        "  text(typeof e);\n"
        '  text(e.startsWith("TypeError: Converting circular structure to JSON"));\n'
        "}"
    )
    assert await run(isolation, source) == texts("string", "true")


async def test_text_returns_undefined(isolation: str) -> None:
    assert await run(isolation, 'text(text("a") === undefined);') == texts("a", "true")


# ---------------------------------------------------------------------------------
# image and forward_output


async def test_image_appends_image_items(isolation: str) -> None:
    source = (
        'image("data:image/png;base64,AAAA");\n'
        'image({image_url: "data:image/png;base64,AAAA", detail: "LOW"});\n'
        'image("DATA:image/gif;base64,R0", "original");'
    )
    assert await run(isolation, source) == Completed(
        [
            Image("data:image/png;base64,AAAA", ImageDetail.HIGH),
            Image("data:image/png;base64,AAAA", ImageDetail.LOW),
            Image("DATA:image/gif;base64,R0", ImageDetail.ORIGINAL),
        ]
    )


async def test_remote_image_urls_are_an_opt_in(isolation: str) -> None:
    """``RuntimeConfig.allow_remote_image_urls=True`` admits http(s) URLs again (the
    older reference's rule, with its scheme error for anything else)."""
    config = RuntimeConfig(
        isolation="thread" if isolation == "thread" else "process", allow_remote_image_urls=True
    )
    source = (
        'image("https://example.com/a.png");\n'
        'image("http://example.com/b.png", "original");\n'
        'try { image("ftp://example.com/a.png"); } catch (e) { text(e); }'
    )
    async with SessionRuntime(Delegate(), config) as runtime:
        assert await run_in(runtime, source) == Completed(
            [
                Image("https://example.com/a.png", ImageDetail.HIGH),
                Image("http://example.com/b.png", ImageDetail.ORIGINAL),
                Text("image expects an http(s) or data URL"),
            ]
        )


async def test_image_rejects_a_bad_url_with_a_plain_string(isolation: str) -> None:
    """Upstream ``image_helpers_reject_invalid_image_outputs`` (openai/codex
    codex-rs/code-mode-runtime/src/service_tests.rs, commit c09df9e35319): the text is
    thrown as a plain string (it was an ``Error`` here, and ftp:// had its own text)."""
    source = (
        'try { image("ftp://example.com/a.png"); } catch (e) {\n  text(typeof e);\n  text(e);\n}'
    )
    assert await run(isolation, source) == texts(
        "string", "Tool call failed: invalid image output. Pass a base64 data URI instead"
    )


async def test_forward_output_appends_tool_result_content(isolation: str) -> None:
    source = (
        'forward_output("plain", {content: [\n'
        '  {type: "text", text: "from content"},\n'
        '  {type: "image", data: "AAAA", mimeType: "image/png"},\n'
        ']}, {content_items: [{type: "input_text", text: "from content_items"}]});'
    )
    assert await run(isolation, source) == Completed(
        [
            Text("plain"),
            Text("from content"),
            Image("data:image/png;base64,AAAA", ImageDetail.HIGH),
            Text("from content_items"),
        ]
    )


async def test_forward_output_validates_everything_before_appending(isolation: str) -> None:
    source = 'try { forward_output("first", 5); } catch (e) { text(e); }'
    assert await run(isolation, source) == texts(FWD_EXPECTS)


# ---------------------------------------------------------------------------------
# console


@pytest.mark.parametrize("method", ["log", "info", "warn", "error", "debug"])
async def test_console_methods_append_one_text_item(method: str, isolation: str) -> None:
    source = f'console.{method}("a", 1, {{b: 2}}, [1], null, undefined, "x y");'
    assert await run(isolation, source) == texts('a 1 {"b":2} [1] null undefined x y')


async def test_console_log_without_arguments_appends_an_empty_item(isolation: str) -> None:
    assert await run(isolation, "console.log();") == texts("")


# ---------------------------------------------------------------------------------
# notify


async def test_notify_sends_text_to_the_delegate_without_output(isolation: str) -> None:
    delegate = Delegate()
    async with session(isolation, delegate) as runtime:
        await run_in(runtime, 'text("first cell");')
        event = await run_in(runtime, 'notify("hello");\nnotify({a: 1});\nnotify(42);\nnotify();')
    assert event == texts()
    # Each notification is its own delegate task: their relative order is not promised.
    assert sorted(delegate.notifications) == sorted(
        [
            (CALL_ID, "2", "hello"),
            (CALL_ID, "2", '{"a":1}'),
            (CALL_ID, "2", "42"),
            (CALL_ID, "2", "undefined"),
        ]
    )


async def test_notify_is_delivered_while_the_cell_runs(isolation: str) -> None:
    # The tool only returns once the notification has reached the delegate.
    delegate = Delegate()

    async def wait_for_notification(call: NestedToolCall) -> JSON:
        await delegate.notified.wait()
        return "notified"

    delegate.handler = wait_for_notification
    source = 'notify("now");\ntext(await tools.wait({}));'
    assert await run(isolation, source, [function_tool("wait")], delegate) == texts("notified")
    assert delegate.notifications == [(CALL_ID, "1", "now")]


async def test_notify_rejects_empty_text(isolation: str) -> None:
    source = (
        'for (const value of ["", "   ", "\\n\\t"]) {\n'
        "  try { notify(value); } catch (e) { text(typeof e); text(e); }\n"
        "}"
    )
    delegate = Delegate()
    message = "notify expects non-empty text"
    assert await run(isolation, source, delegate=delegate) == texts(*["string", message] * 3)
    assert delegate.notifications == []


# ---------------------------------------------------------------------------------
# store / load


async def test_store_and_load_inside_one_cell(isolation: str) -> None:
    source = (
        'store("k", {a: [1]});\n'
        'const copy = load("k");\n'
        "copy.a.push(2);\n"
        'text(load("k"));\n'
        'text(load("k") === load("k"));\n'
        "const value = {b: 1};\n"
        'store("v", value);\n'
        "value.b = 2;\n"
        'text(load("v"));\n'
        'text(load("missing") === undefined);\n'
        'store("k", "replaced");\n'
        'text(load("k"));'
    )
    assert await run(isolation, source) == texts(
        '{"a":[1]}', "false", '{"b":1}', "true", "replaced"
    )


async def test_store_keys_are_coerced_with_string(isolation: str) -> None:
    source = (
        'store(1, "one");\ntext(load("1"));\n'
        'store({}, "object");\ntext(load("[object Object]"));\n'
        'store(undefined, "undef");\ntext(load());\n'
        'store(null, "null");\ntext(load("null"));\n'
        "text(load(1));\n"
        "const bad = {toString() { throw new Error('no string'); }};\n"
        "try { store(bad, 1); } catch (e) { text(e); }\n"
        "try { load(bad); } catch (e) { text(e); }"
    )
    assert await run(isolation, source) == texts(
        "one",
        "object",
        "undef",
        "null",
        "one",
        "store key must be a string",
        "load key must be a string",
    )


async def test_any_string_is_a_key_including_proto(isolation: str) -> None:
    async with session(isolation) as runtime:
        source = 'store("__proto__", {a: 1});\nstore("", 2);\ntext(load("__proto__"));'
        assert await run_in(runtime, source) == texts('{"a":1}')
        next_cell = 'text(load("__proto__"));\ntext(load(""));\ntext(load("toString"));'
        assert await run_in(runtime, next_cell) == texts('{"a":1}', "2", "undefined")


async def test_stored_values_are_json_data(isolation: str) -> None:
    source = (
        'store("k", {n: NaN, d: new Date(0), f() {}, u: undefined, a: [undefined]});\n'
        'text(load("k"));'
    )
    assert await run(isolation, source) == texts(
        '{"n":null,"d":"1970-01-01T00:00:00.000Z","a":[null]}'
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('store("k", undefined)', unable_to_store('"k"')),
        ('store("k")', unable_to_store('"k"')),
        ('store("k", () => 1)', unable_to_store('"k"')),
        ('store("a\\"b\\\\c", undefined)', unable_to_store('"a\\"b\\\\c"')),
        ('store(7, Symbol("s"))', unable_to_store('"7"')),
        ('store("k", 1n)', "TypeError: Do not know how to serialize a BigInt"),
    ],
)
async def test_store_rejects_values_that_are_not_json(
    call: str, message: str, isolation: str
) -> None:
    source = (
        'store("k", "kept");\n'
        f"try {{ {call}; }} catch (e) {{ text(typeof e); text(e.split('\\n')[0]); }}\n"
        'text(load("k"));'
    )
    # A plain string, as upstream's store_callback throws (openai/codex
    # codex-rs/code-mode-runtime/src/runtime/callbacks.rs, commit 4f39251a010a); an
    # engine error on the way (a BigInt) becomes its error text.
    assert await run(isolation, source) == texts("string", message, "kept")


async def test_stored_values_reach_the_next_cell_only_after_completion(isolation: str) -> None:
    release = trio.Event()
    blocked = trio.Event()

    async def block(call: NestedToolCall) -> JSON:
        blocked.set()
        await release.wait()
        return None

    async with session(isolation, Delegate(block)) as runtime:
        with trio.fail_after(SAFETY):
            writer = await runtime.execute(
                request('store("k", "written");\nawait tools.block({});', [function_tool("block")]),
                YieldAfter(10 * SAFETY),
            )
            await blocked.wait()
        # The write is visible to the writer only while it runs.
        assert await run_in(runtime, 'text(load("k") === undefined);') == texts("true")
        release.set()
        with trio.fail_after(SAFETY):
            assert await writer.initial_event() == texts()
        assert await run_in(runtime, 'text(load("k"));') == texts("written")


async def test_stored_values_are_kept_when_the_script_fails(isolation: str) -> None:
    async with session(isolation) as runtime:
        failing = await run_in(runtime, 'store("k", 1);\nthrow new Error("boom");')
        assert failing == texts(error_text="Error: boom\n    at exec_main.mjs:2:7")
        assert await run_in(runtime, 'text(load("k"));') == texts("1")


async def test_stored_values_are_discarded_when_the_cell_is_terminated(isolation: str) -> None:
    async with session(isolation) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(
                request('store("k", 1);\nyield_control();\nawait new Promise(() => {});'),
                YieldAfter(10 * SAFETY),
            )
            assert await started.initial_event() == Yielded([])
            assert await runtime.terminate(started.cell_id) == Terminated([])
        assert await run_in(runtime, 'text(load("k") === undefined);') == texts("true")


# ---------------------------------------------------------------------------------
# setTimeout / clearTimeout


#: Programs using timers, and what they show.
TIMER_PROGRAMS = [
    pytest.param(
        "text([setTimeout(() => {}), setTimeout(() => {}, 5), setTimeout(() => {}, 0)]);",
        ["[1,2,3]"],
        id="ids-count-from-one",
    ),
    pytest.param(
        "await new Promise((resolve) => setTimeout(function () {\n"
        "  text(arguments.length);\n"
        "  text(this === undefined);\n"
        "  resolve();\n"
        '}, 0, "extra", "arguments"));',
        ["0", "true"],
        id="callbacks-get-no-arguments-and-undefined-this",
    ),
    pytest.param(
        'const delays = [Infinity, -Infinity, NaN, -5, undefined, "abc"];\n'
        "const fired = [];\n"
        "await new Promise((resolve) => {\n"
        "  for (const delay of delays) {\n"
        "    setTimeout(() => {\n"
        "      fired.push(String(delay));\n"
        "      if (fired.length === delays.length) resolve();\n"
        "    }, delay);\n"
        "  }\n"
        "});\n"
        "text(fired);",
        ['["Infinity","-Infinity","NaN","-5","undefined","abc"]'],
        id="non-finite-or-negative-delays-are-zero",
    ),
    pytest.param(
        'for (const value of [1, "text()", null, undefined, {}]) {\n'
        "  try { setTimeout(value, 0); } catch (e) {\n"
        "    text(typeof e);\n"
        "    text(e);\n"
        "  }\n"
        "}",
        ["string", "setTimeout expects a function callback"] * 5,
        id="set-timeout-requires-a-function",
    ),
    pytest.param(
        'const first = setTimeout(() => text("cleared"), 0);\n'
        "clearTimeout(first);\n"
        'const second = setTimeout(() => text("cleared by string id"), 0);\n'
        "clearTimeout(String(second));\n"
        'for (const id of [undefined, null, 999, -1, NaN, "x"]) clearTimeout(id);\n'
        "clearTimeout();\n"
        "await new Promise((resolve) => setTimeout(resolve, 0));\n"
        'text("done");',
        ["done"],
        id="clear-timeout-cancels-a-timer",
    ),
]


@pytest.mark.parametrize(("source", "expected"), TIMER_PROGRAMS)
async def test_timers(source: str, expected: list[str], isolation: str) -> None:
    assert await run(isolation, source) == texts(*expected)


@pytest.mark.parametrize(
    ("callback", "error_text"),
    [
        ('throw new Error("in callback");', "Error: in callback\n    at exec_main.mjs:1:26"),
        ('throw "plain";', "plain"),
    ],
)
async def test_a_throwing_timer_callback_fails_the_cell(
    callback: str, error_text: str, isolation: str
) -> None:
    source = (
        f'setTimeout(() => {{ {callback} }}, 0);\ntext("before");\nawait new Promise(() => {{}});'
    )
    assert await run(isolation, source) == texts("before", error_text=error_text)


@pytest.mark.parametrize("delay", ["0", "10"])
async def test_timers_never_keep_a_cell_alive(delay: str, isolation: str) -> None:
    assert await run(isolation, f'setTimeout(() => text("late"), {delay});') == texts()


# ---------------------------------------------------------------------------------
# yield_control


async def test_yield_control_hands_over_the_output_so_far(isolation: str) -> None:
    async with session(isolation) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(
                request('text("a");\nyield_control();\ntext("b");'), YieldAfter(10 * SAFETY)
            )
            assert await started.initial_event() == Yielded([Text("a")])
            event = await runtime.observe(started.cell_id, YieldAfter(10 * SAFETY))
            assert event == texts("b")


# ---------------------------------------------------------------------------------
# exit


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param('text("before");\nexit();\ntext("after");', ["before"], id="plain"),
        pytest.param('exit();\nthrow new Error("ignored");', [], id="then-throw"),
        pytest.param(
            'text("a");\nexit();\nawait Promise.reject(new Error("ignored"));',
            ["a"],
            id="then-reject",
        ),
        pytest.param('text("a");\nexit();\nwhile (true) {}', ["a"], id="then-spin"),
        pytest.param(
            'try { exit(); } catch (e) { text("caught"); } finally { text("finally"); }\n'
            'text("after");',
            [],
            id="try-catch-finally",
        ),
        pytest.param(
            "await new Promise(() => setTimeout(() => {\n"
            '  text("in timer");\n'
            "  exit();\n"
            '  text("after exit");\n'
            "}, 0));",
            ["in timer"],
            id="in-timer-callback",
        ),
        pytest.param(
            "Promise.resolve().then(() => exit());\nawait new Promise(() => {});",
            [],
            id="in-microtask",
        ),
        pytest.param(
            'function deep() { exit(); text("after"); }\ntext("a");\ndeep();\ntext("b");',
            ["a"],
            id="inside-function",
        ),
        pytest.param(
            'text("a");\nexit();\nyield_control();\ntext("b");',
            ["a"],
            id="then-yield",
        ),
    ],
)
async def test_exit_ends_the_cell_successfully(
    source: str, expected: list[str], isolation: str
) -> None:
    assert await run(isolation, source) == texts(*expected)


async def test_nothing_after_exit_takes_effect(isolation: str) -> None:
    source = (
        'store("before", 1);\n'
        'text("before");\n'
        "try {\n"
        "  exit();\n"
        '  text("in try");\n'
        "} catch (e) {\n"
        '  text("caught");\n'
        "} finally {\n"
        '  text("finally");\n'
        '  notify("finally");\n'
        '  store("after", 1);\n'
        "  tools.echo({});\n"
        '  setTimeout(() => text("timer"), 0);\n'
        '  console.log("console");\n'
        '  image("https://example.com/a.png");\n'
        '  forward_output("forwarded");\n'
        "}\n"
        'text("after");'
    )
    delegate = Delegate()
    async with session(isolation, delegate) as runtime:
        assert await run_in(runtime, source, [function_tool("echo")]) == texts("before")
        after = await run_in(runtime, 'text(load("before"));\ntext(load("after") === undefined);')
        assert after == texts("1", "true")
    assert delegate.calls == []
    assert delegate.notifications == []


async def test_exit_after_a_tool_result(isolation: str) -> None:
    source = 'text(await tools.echo({n: 1}));\nexit();\ntext("after");'
    assert await run(isolation, source, [function_tool("echo")]) == texts('{"n":1}')
