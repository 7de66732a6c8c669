"""Tests of the in-isolate output helpers (``code_mode/_v8/js/output.js``).

The fragment is loaded into a bare ``MiniRacer`` context after ``builtins.js`` (the
built-ins it calls, captured), wrapped the way the prelude wraps them (inside one
strict-mode function), and its helpers are called directly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from py_mini_racer import MiniRacer

JS = Path(__file__).resolve().parents[2] / "code_mode" / "_v8" / "js"
#: output.js and what it needs before it, in the prelude's order.
SOURCES = ("builtins.js", "output.js")

HELPERS = (
    "cmOutputText",
    "cmTextItem",
    "cmImageItem",
    "cmForwardOutputItems",
    "cmConsoleText",
    "cmNotifyText",
    "cmErrorText",
)

IMAGE_EXPECTS = (
    "image expects a non-empty image URL string, an object with image_url and optional detail,"
    " or a raw MCP image block"
)
URL_SCHEME = "image expects an http(s) or data URL"
# The reference's texts for data-only images (openai/codex
# codex-rs/code-mode-runtime/src/runtime/value.rs, commit c09df9e35319 "Reject remote
# image URLs from output helpers").
REMOTE = (
    "Tool call failed: remote image URLs are not supported in tool outputs. Pass a base64"
    " data URI instead"
)
INVALID = "Tool call failed: invalid image output. Pass a base64 data URI instead"
DETAIL_VALUES = "image detail must be one of: auto, low, high, original"
DETAIL_STRING = "image detail must be a string when provided"
MCP_DATA = "image expected MCP image data"
FWD_EXPECTS = (
    "forward_output expects a direct tool output with `content` or `content_items`,"
    " a text/image content item, an image_url object, or a string output"
)
FWD_ENTRIES = "forward_output expected content entries to be text/image objects"
SERIALIZE_NOTHING = "failed to serialize JavaScript value: expected value at line 1 column 1"
NOTIFY_EMPTY = "notify expects non-empty text"

CYCLE = "(() => { const o = {}; o.self = o; return o; })()"


def _load(mr: MiniRacer) -> None:
    source = "\n".join((JS / name).read_text(encoding="utf-8") for name in SOURCES)
    exports = ", ".join(HELPERS)
    mr.eval(
        'globalThis.__t = (function () { "use strict";\n'
        f"{source}\n;\nreturn {{{exports}}};\n}})();"
    )


@pytest.fixture(scope="module")
def mr() -> Iterator[MiniRacer]:
    ctx = MiniRacer()
    try:
        _load(ctx)
        yield ctx
    finally:
        ctx.close()


def call(mr: MiniRacer, expr: str) -> dict[str, Any]:
    """Evaluate ``expr``; ``{"ok": value}`` or ``{"err": message, "name": ..., ...}``.

    A helper's own failure is a plain string (as the reference's helpers throw):
    ``name`` is then ``"string"`` and ``err`` the string itself."""
    return mr.execute(
        "(function () { try { return {ok: (" + expr + ")}; } catch (e) {"
        " if (typeof e === 'string') return {err: e, name: 'string', plain: true};"
        " return {err: String(e && e.message), name: e && e.name,"
        " stack: e && e.stack, isError: e instanceof Error, plain: false}; } })()"
    )


def ok(mr: MiniRacer, expr: str) -> Any:
    result = call(mr, expr)
    assert "err" not in result, result
    return result.get("ok")


def err(mr: MiniRacer, expr: str) -> dict[str, Any]:
    result = call(mr, expr)
    assert "err" in result, result
    return result


def image(url: str, detail: str = "high") -> dict[str, str]:
    return {"type": "image", "image_url": url, "detail": detail}


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_fragment_declares_only_the_interface(mr: MiniRacer) -> None:
    assert ok(mr, "Object.keys(__t)") == list(HELPERS)
    assert ok(mr, "typeof globalThis.cmOutputText") == "undefined"
    assert ok(mr, "Object.keys(globalThis).filter((k) => k.startsWith('cm'))") == []


# ---------------------------------------------------------------------------
# Output-text rule

OUTPUT_TEXT_CASES = [
    ("undefined", "undefined"),
    ("null", "null"),
    ("true", "true"),
    ("false", "false"),
    ("0.1 + 0.2", "0.30000000000000004"),
    ("NaN", "NaN"),
    ("-Infinity", "-Infinity"),
    ("1e21", "1e+21"),
    ("10n", "10"),
    ("-0", "0"),
    ('"hi there"', "hi there"),
    ('""', ""),
    ("({a: 1})", '{"a":1}'),
    ('[1, "a"]', '[1,"a"]'),
    ("({a: {b: [1, {c: null}]}})", '{"a":{"b":[1,{"c":null}]}}'),
    ('new Date("2025-01-02T03:04:05Z")', '"2025-01-02T03:04:05.000Z"'),
    ('({when: new Date("2025-01-02T03:04:05Z")})', '{"when":"2025-01-02T03:04:05.000Z"}'),
    ("new Map([[1, 2]])", "{}"),
    ("new Set([1])", "{}"),
    ('new Error("x")', "{}"),
    ("/re/g", "{}"),
    ("new Number(3)", "3"),
    ("({a: undefined, b: () => 1, c: 2})", '{"c":2}'),
    ('[undefined, () => 1, Symbol("s")]', "[null,null,null]"),
    ("({n: NaN, i: -Infinity, z: -0})", '{"n":null,"i":null,"z":0}'),
    ("() => 1", "undefined"),
    ('Symbol("s")', "undefined"),
    ('({toJSON() { return "custom"; }})', '"custom"'),
    ("({get g() { return 5; }})", '{"g":5}'),
    ('"\\ud800x"', "\ufffdx"),
    ('"ok \\ud83d\\ude00"', "ok \U0001f600"),
]


@pytest.mark.parametrize(("expr", "expected"), OUTPUT_TEXT_CASES)
def test_output_text(mr: MiniRacer, expr: str, expected: str) -> None:
    assert ok(mr, f"__t.cmOutputText({expr})") == expected


OUTPUT_TEXT_ERRORS = [
    (CYCLE, "TypeError", "circular"),
    ("({a: 1n})", "TypeError", "Do not know how to serialize a BigInt"),
    ('({toJSON() { throw new RangeError("tj"); }})', "RangeError", "tj"),
    ('({get g() { throw new Error("getter"); }})', "Error", "getter"),
]


@pytest.mark.parametrize(("expr", "name", "fragment"), OUTPUT_TEXT_ERRORS)
def test_output_text_propagates_stringify_errors(
    mr: MiniRacer, expr: str, name: str, fragment: str
) -> None:
    for helper in ("cmOutputText", "cmTextItem", "cmNotifyText"):
        result = err(mr, f"__t.{helper}({expr})")
        assert result["name"] == name
        assert fragment in result["err"]


def test_output_text_rethrows_the_same_exception(mr: MiniRacer) -> None:
    assert ok(
        mr,
        "(() => { const boom = new Error('x');"
        " try { __t.cmOutputText({toJSON() { throw boom; }}); return false; }"
        " catch (e) { return e === boom; } })()",
    )


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("__t.cmTextItem()", text("undefined")),
        ("__t.cmTextItem({a: [1, 'x']})", text('{"a":[1,"x"]}')),
        ("__t.cmTextItem('')", text("")),
    ],
)
def test_text_item(mr: MiniRacer, expr: str, expected: dict[str, str]) -> None:
    assert ok(mr, expr) == expected


# ---------------------------------------------------------------------------
# image()

IMAGE_OK_CASES = [
    ('"https://example.com/image.jpg"', image("https://example.com/image.jpg")),
    ('"http://x/y.png"', image("http://x/y.png")),
    ('"HTTPS://X/Y"', image("HTTPS://X/Y")),
    ('"data:image/png;base64,AAA"', image("data:image/png;base64,AAA")),
    ('"DaTa:anything at all"', image("DaTa:anything at all")),
    ('"https://x", "LOW"', image("https://x", "low")),
    ('"https://x", "Original"', image("https://x", "original")),
    ('"https://x", "auto"', image("https://x", "auto")),
    ('"https://x", null', image("https://x")),
    ('"https://x", undefined', image("https://x")),
    (
        '{image_url: "https://example.com/image.jpg", detail: "low"}, "original"',
        image("https://example.com/image.jpg", "original"),
    ),
    ('{image_url: "https://x", detail: "AUTO"}', image("https://x", "auto")),
    ('{image_url: "https://x", detail: null}', image("https://x")),
    ('{image_url: "https://x", detail: "low"}, null', image("https://x", "low")),
    ('{get image_url() { return "https://g"; }}', image("https://g")),
    ('Object.create({image_url: "https://p"})', image("https://p")),
    (
        '{type: "image", data: "AAA", mimeType: "image/png"}',
        image("data:image/png;base64,AAA"),
    ),
    (
        '{type: "image", data: "AAA", mime_type: "image/jpeg"}',
        image("data:image/jpeg;base64,AAA"),
    ),
    ('{type: "image", data: "AAA"}', image("data:application/octet-stream;base64,AAA")),
    (
        '{type: "image", data: "AAA", mimeType: "", mime_type: "image/gif"}',
        image("data:image/gif;base64,AAA"),
    ),
    (
        '{type: "image", data: "data:image/png;base64,BBB", mimeType: "image/jpeg"}',
        image("data:image/png;base64,BBB"),
    ),
    ('{type: "image", data: "DATA:x,1"}', image("DATA:x,1")),
    (
        '{type: "image", data: "AAA", mimeType: "image/png",'
        ' _meta: {"codex/imageDetail": "original"}}',
        image("data:image/png;base64,AAA", "original"),
    ),
    (
        '{type: "image", data: "AAA", mimeType: "image/png",'
        ' _meta: {"codex/imageDetail": "original"}}, "low"',
        image("data:image/png;base64,AAA", "low"),
    ),
    (
        '{type: "image", data: "AAA", _meta: {"codex/imageDetail": "ORIGINAL"}}',
        image("data:application/octet-stream;base64,AAA"),
    ),
    (
        '{type: "image", data: "AAA", _meta: {"codex/imageDetail": "bogus"}}',
        image("data:application/octet-stream;base64,AAA"),
    ),
    (
        '{toJSON() { return {type: "image", data: "AAA", mimeType: "image/png"}; }}',
        image("data:image/png;base64,AAA"),
    ),
]


@pytest.mark.parametrize(("args", "expected"), IMAGE_OK_CASES)
def test_image_item(mr: MiniRacer, args: str, expected: dict[str, str]) -> None:
    assert ok(mr, f"__t.cmImageItem([{args}], true)") == expected


def test_image_item_data_url_allowed_when_remote_disabled(mr: MiniRacer) -> None:
    assert ok(mr, '__t.cmImageItem(["data:image/png;base64,A"], false)') == image(
        "data:image/png;base64,A"
    )
    assert ok(mr, '__t.cmImageItem([{type: "image", data: "A"}], false)') == image(
        "data:application/octet-stream;base64,A"
    )


def test_image_item_uses_the_real_arguments_length(mr: MiniRacer) -> None:
    wrap = "(function () { return __t.cmImageItem(arguments, true); })"
    assert ok(mr, f'{wrap}("https://x", undefined)') == image("https://x")
    assert ok(mr, f'{wrap}("https://x")') == image("https://x")
    assert err(mr, f'{wrap}("https://x", 5)')["err"] == DETAIL_STRING
    assert err(mr, f"{wrap}()")["err"] == IMAGE_EXPECTS


IMAGE_ERROR_CASES = [
    ("", True, IMAGE_EXPECTS, "string"),
    ("undefined", True, IMAGE_EXPECTS, "string"),
    ("null", True, IMAGE_EXPECTS, "string"),
    ("42", True, IMAGE_EXPECTS, "string"),
    ("true", True, IMAGE_EXPECTS, "string"),
    ('["https://x"]', True, IMAGE_EXPECTS, "string"),
    ('""', True, IMAGE_EXPECTS, "string"),
    ("{}", True, IMAGE_EXPECTS, "string"),
    ('{content: [{type: "image", data: "AAA"}], isError: false}', True, IMAGE_EXPECTS, "string"),
    ("{image_url: 5}", True, IMAGE_EXPECTS, "string"),
    ("{image_url: null}", True, IMAGE_EXPECTS, "string"),
    ('{image_url: ""}', True, IMAGE_EXPECTS, "string"),
    ("{type: 5, data: 'AAA'}", True, IMAGE_EXPECTS, "string"),
    ("() => 1", True, IMAGE_EXPECTS, "string"),
    ("{toJSON() { return undefined; }}", True, IMAGE_EXPECTS, "string"),
    ("new Date(0)", True, IMAGE_EXPECTS, "string"),
    (
        '{type: "text", text: "x"}',
        True,
        'image only accepts MCP image blocks, got "text"',
        "string",
    ),
    ('{type: "image"}', True, MCP_DATA, "string"),
    ('{type: "image", data: ""}', True, MCP_DATA, "string"),
    ('{type: "image", data: 5}', True, MCP_DATA, "string"),
    ('"ftp://x"', True, URL_SCHEME, "string"),
    ('"example.com/a.png"', True, URL_SCHEME, "string"),
    ('"https:/x"', True, URL_SCHEME, "string"),
    ('{image_url: "file:///etc/passwd"}', True, URL_SCHEME, "string"),
    ('"https://x", "medium"', True, DETAIL_VALUES, "string"),
    ('"https://x", ""', True, DETAIL_VALUES, "string"),
    ('{image_url: "https://x", detail: "huge"}', True, DETAIL_VALUES, "string"),
    ('"https://x", 5', True, DETAIL_STRING, "string"),
    ("5, 5", True, DETAIL_STRING, "string"),
    ('"ftp://x", "bogus"', True, URL_SCHEME, "string"),
    ('{image_url: "https://x", detail: 5}', True, DETAIL_STRING, "string"),
    ('"https://x"', False, REMOTE, "string"),
    ('"HTTP://x"', False, REMOTE, "string"),
    ('"http:x"', False, REMOTE, "string"),
    ('{image_url: "https://x", detail: "low"}', False, REMOTE, "string"),
    ('"ftp://x"', False, INVALID, "string"),
    ('"file:///etc/passwd"', False, INVALID, "string"),
    ('"example.com/a.png"', False, INVALID, "string"),
    ('""', False, IMAGE_EXPECTS, "string"),
    ('{type: "image", data: 1n}', True, "Do not know how to serialize a BigInt", "TypeError"),
    ('{get image_url() { throw new Error("iu"); }}', True, "iu", "Error"),
]


@pytest.mark.parametrize(("args", "allow_remote", "message", "name"), IMAGE_ERROR_CASES)
def test_image_item_errors(
    mr: MiniRacer, args: str, allow_remote: bool, message: str, name: str | None
) -> None:
    result = err(mr, f"__t.cmImageItem([{args}], {json.dumps(allow_remote)})")
    assert result["err"] == message
    assert result["name"] == name


def test_helper_errors_are_their_message_as_a_plain_string(mr: MiniRacer) -> None:
    """The reference's helpers throw a ``v8::String`` (``throw_type_error`` in
    codex-rs/code-mode-runtime/src/runtime/value.rs, commit 4f39251a010a)."""
    result = err(mr, '__t.cmImageItem(["ftp://x"], true)')
    assert result == {"err": URL_SCHEME, "name": "string", "plain": True}
    assert ok(
        mr,
        "(() => { try { __t.cmImageItem([], true); } catch (e) { return __t.cmErrorText(e); } })()",
    ) == (IMAGE_EXPECTS)


# ---------------------------------------------------------------------------
# forward_output()

FORWARD_OK_CASES = [
    ("", []),
    ('"hello"', [text("hello")]),
    ('"a", "b"', [text("a"), text("b")]),
    ('""', [text("")]),
    (
        '{content: [{type: "text", text: "x"}, {type: "image", data: "AAA",'
        ' mimeType: "image/png"}]}',
        [text("x"), image("data:image/png;base64,AAA")],
    ),
    (
        '{content: [{type: "image", data: "AAA", mime_type: "image/png",'
        ' _meta: {"codex/imageDetail": "LOW"}}]}',
        [image("data:image/png;base64,AAA", "low")],
    ),
    (
        '{content: [{type: "image", data: "data:x,1", _meta: {"codex/imageDetail": "nope"}}]}',
        [image("data:x,1")],
    ),
    ("{content: [], isError: false}", []),
    (
        '{content_items: [{type: "input_text", text: "t"},'
        ' {type: "input_image", image_url: "https://x", detail: "Auto"}]}',
        [text("t"), image("https://x", "auto")],
    ),
    (
        '{contentItems: [{type: "inputText", text: "t"},'
        ' {type: "inputImage", imageUrl: "https://x"}]}',
        [text("t"), image("https://x")],
    ),
    ('{content_items: [{type: "text", text: "ci"}], contentItems: 5}', [text("ci")]),
    ('{content: [{type: "text", text: "c"}], content_items: 5}', [text("c")]),
    ('{type: "text", text: "solo"}', [text("solo")]),
    ('{type: "image", data: "data:image/png;base64,Q"}', [image("data:image/png;base64,Q")]),
    ('{image_url: "https://x", detail: null}', [image("https://x")]),
    ('{imageUrl: "https://x", detail: "low"}', [image("https://x", "low")]),
    ('{image_url: "https://a", imageUrl: "https://b"}', [image("https://a")]),
    ('{type: "input_image", image_url: "data:x"}', [image("data:x")]),
    ('{content: [{image_url: "https://x"}]}', [image("https://x")]),
    ('{output: "plain"}', [text("plain")]),
    ('{output: "ignored", type: "text", text: "wins"}', [text("wins")]),
    (
        '"s", {output: "o"}, {content: [{type: "text", text: "c"}]}',
        [text("s"), text("o"), text("c")],
    ),
    ('{toJSON() { return {output: "via toJSON"}; }}', [text("via toJSON")]),
    ('{content: [{type: "text", text: "\\ud800"}]}', [text("\ufffd")]),
]


@pytest.mark.parametrize(("args", "expected"), FORWARD_OK_CASES)
def test_forward_output_items(mr: MiniRacer, args: str, expected: list[dict[str, str]]) -> None:
    assert ok(mr, f"__t.cmForwardOutputItems([{args}], true)") == expected


def test_forward_output_data_images_allowed_when_remote_disabled(mr: MiniRacer) -> None:
    assert ok(
        mr, '__t.cmForwardOutputItems([{content: [{type: "image", data: "AAA"}]}], false)'
    ) == [image("data:application/octet-stream;base64,AAA")]


def test_forward_output_takes_the_real_arguments(mr: MiniRacer) -> None:
    wrap = "(function () { return __t.cmForwardOutputItems(arguments, true); })"
    assert ok(mr, f'{wrap}("a", {{output: "b"}})') == [text("a"), text("b")]
    assert ok(mr, f"{wrap}()") == []


FORWARD_ERROR_CASES = [
    ("undefined", True, SERIALIZE_NOTHING),
    ("() => 1", True, SERIALIZE_NOTHING),
    ('Symbol("s")', True, SERIALIZE_NOTHING),
    ("42", True, FWD_EXPECTS),
    ("null", True, FWD_EXPECTS),
    ("true", True, FWD_EXPECTS),
    ('[{type: "text", text: "x"}]', True, FWD_EXPECTS),
    ("{}", True, FWD_EXPECTS),
    ("{output: 5}", True, FWD_EXPECTS),
    ("new Date(0)", True, FWD_EXPECTS),
    ('{content: "x"}', True, "output expected `content` to be an array"),
    ("{content: null}", True, "output expected `content` to be an array"),
    ("{content_items: {}}", True, "output expected `content_items` to be an array"),
    ('{contentItems: "x"}', True, "output expected `content_items` to be an array"),
    ('{content: ["x"]}', True, FWD_ENTRIES),
    ("{content: [null]}", True, FWD_ENTRIES),
    ("{content: [[1]]}", True, FWD_ENTRIES),
    ("{content: [{}]}", True, FWD_EXPECTS),
    ('{content: [{type: "text"}]}', True, "output expected `text` content to include `text`"),
    (
        '{content_items: [{type: "inputText", text: 5}]}',
        True,
        "output expected `inputText` content to include `text`",
    ),
    ('{type: "input_text"}', True, "output expected `input_text` content to include `text`"),
    ('{content: [{type: "image"}]}', True, "output expected `image` content to include `data`"),
    ('{content: [{type: "image", data: ""}]}', True, "output expected MCP image data"),
    (
        '{content: [{type: "audio", data: "x"}]}',
        True,
        "forward_output only supports text and image content blocks, got `audio`",
    ),
    (
        '{type: "resource", output: "x"}',
        True,
        "forward_output only supports text and image content blocks, got `resource`",
    ),
    ('{type: "input_image"}', True, "output expected image content to include `image_url`"),
    ("{image_url: 5}", True, "output expected `image_url` to be a string"),
    ("{image_url: null}", True, "output expected `image_url` to be a string"),
    ('{image_url: "ftp://x"}', True, URL_SCHEME),
    ('{image_url: ""}', True, IMAGE_EXPECTS),
    ('{image_url: "https://x", detail: "huge"}', True, DETAIL_VALUES),
    ('{image_url: "https://x", detail: 1}', True, DETAIL_STRING),
    ('{image_url: "https://x"}', False, REMOTE),
    ('{content: [{type: "input_image", image_url: "HTTP://x"}]}', False, REMOTE),
    ('{image_url: "ftp://x"}', False, INVALID),
    ("{a: 1n}", True, "Do not know how to serialize a BigInt"),
    ('"ok", {content: "bad"}', True, "output expected `content` to be an array"),
]


@pytest.mark.parametrize(("args", "allow_remote", "message"), FORWARD_ERROR_CASES)
def test_forward_output_errors(mr: MiniRacer, args: str, allow_remote: bool, message: str) -> None:
    result = err(mr, f"__t.cmForwardOutputItems([{args}], {json.dumps(allow_remote)})")
    assert result["err"] == message
    # The helper's own failures are plain strings; JSON.stringify's (a BigInt) is the
    # engine's TypeError, which the global turns into its text (globals.js).
    assert result["plain"] is (not message.startswith("Do not know"))


def test_forward_output_cycle_is_the_engine_type_error(mr: MiniRacer) -> None:
    result = err(mr, f"__t.cmForwardOutputItems([{CYCLE}], true)")
    assert result["name"] == "TypeError"
    assert "circular" in result["err"]


# ---------------------------------------------------------------------------
# console.* and notify

CONSOLE_CASES = [
    ("", ""),
    ('"a", "b"', "a b"),
    ('"x", 1, {a: 1}, [1, "a"], null, undefined', 'x 1 {"a":1} [1,"a"] null undefined'),
    ('"", ""', " "),
    ('"a\\nb", " c "', "a\nb  c "),
    ("() => 1, Symbol()", "undefined undefined"),
    ("10n, -0, NaN", "10 0 NaN"),
    ('"\\udc00"', "\ufffd"),
]


@pytest.mark.parametrize(("args", "expected"), CONSOLE_CASES)
def test_console_text(mr: MiniRacer, args: str, expected: str) -> None:
    assert ok(mr, f"__t.cmConsoleText([{args}])") == expected


def test_console_text_cycle_throws(mr: MiniRacer) -> None:
    assert "circular" in err(mr, f'__t.cmConsoleText(["x", {CYCLE}])')["err"]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('"hello"', "hello"),
        ('"  padded  "', "  padded  "),
        ("undefined", "undefined"),
        ("0", "0"),
        ("({a: 1})", '{"a":1}'),
    ],
)
def test_notify_text(mr: MiniRacer, expr: str, expected: str) -> None:
    assert ok(mr, f"__t.cmNotifyText({expr})") == expected


@pytest.mark.parametrize("expr", ['""', '"   "', '"\\n\\t "', '"\\u00a0"'])
def test_notify_text_rejects_empty(mr: MiniRacer, expr: str) -> None:
    result = err(mr, f"__t.cmNotifyText({expr})")
    assert result == {"err": NOTIFY_EMPTY, "name": "string", "plain": True}


# ---------------------------------------------------------------------------
# Error-text rule

ERROR_TEXT_CASES = [
    ('"boom"', "boom"),
    ("42", "42"),
    ("({a: 1})", "[object Object]"),
    ("null", "null"),
    ("undefined", "undefined"),
    ("true", "true"),
    ("10n", "10"),
    ('Symbol("s")', "Symbol(s)"),
    ('(() => { const e = new TypeError("bad"); delete e.stack; return e; })()', "TypeError: bad"),
    ('({stack: "custom stack"})', "custom stack"),
    ('({stack: 5, toString() { return "ts"; }})', "ts"),
    ('({get stack() { throw 1; }, toString() { return "fallback"; }})', "fallback"),
    ('({get stack() { return "from getter"; }})', "from getter"),
    ('({toString() { throw new Error("no"); }})', ""),
    ("Object.create(null)", ""),
    ('Object.assign(() => 1, {stack: "fn stack"})', "fn stack"),
    ('({stack: "bad \\ud800"})', "bad \ufffd"),
    ('"lone \\udfff"', "lone \ufffd"),
]


@pytest.mark.parametrize(("expr", "expected"), ERROR_TEXT_CASES)
def test_error_text(mr: MiniRacer, expr: str, expected: str) -> None:
    assert ok(mr, f"__t.cmErrorText({expr})") == expected


def test_error_text_of_an_error_is_its_stack(mr: MiniRacer) -> None:
    got = ok(mr, '__t.cmErrorText(new Error("boom"))')
    assert got.startswith("Error: boom\n    at ")
    assert ok(
        mr, "(() => { const e = new RangeError('r'); return __t.cmErrorText(e) === e.stack; })()"
    )


# ---------------------------------------------------------------------------
# A program that pollutes built-ins after the prelude cannot break the helpers.

POLLUTE = """
String.prototype.toLowerCase = function () { return "polluted"; };
String.prototype.startsWith = function () { return false; };
String.prototype.slice = function () { return ""; };
String.prototype.charCodeAt = function () { return 0; };
String.prototype.trim = function () { return "x"; };
String.prototype.toWellFormed = function () { return "polluted"; };
String.fromCharCode = function () { return "?"; };
JSON.stringify = function () { return "polluted"; };
JSON.parse = function () { return {}; };
Array.isArray = function () { return false; };
Object.prototype.hasOwnProperty = function () { return true; };
Object.hasOwn = function () { return true; };
Reflect.apply = function () { return "polluted"; };
Reflect.defineProperty = function () { return false; };
Object.defineProperty(Array.prototype, "0", {
  set() { throw new Error("array setter"); }, configurable: true,
});
Object.defineProperty(Object.prototype, "type", {
  get() { return "polluted"; }, set() { throw new Error("type setter"); }, configurable: true,
});
globalThis.String = function () { return "polluted"; };
globalThis.Error = function () { return {}; };
globalThis.TypeError = function () { return {}; };
"""


@pytest.fixture(scope="module")
def polluted() -> Iterator[MiniRacer]:
    ctx = MiniRacer()
    try:
        _load(ctx)
        ctx.eval(POLLUTE)
        yield ctx
    finally:
        ctx.close()


def _catch(expr: str) -> str:
    return (
        f"(() => {{ try {{ {expr}; return 'no error'; }} catch (e) {{"
        " return typeof e === 'string' ? e : e.message; } })()"
    )


POLLUTED_CASES = [
    ('__t.cmImageItem(["HTTPS://Example.com/a.png", "LOW"], true).detail', "low"),
    (
        '__t.cmImageItem(["HTTPS://Example.com/a.png", "LOW"], true).image_url',
        "HTTPS://Example.com/a.png",
    ),
    ('__t.cmImageItem([{image_url: "https://x", detail: "Auto"}], true).detail', "auto"),
    (
        '__t.cmImageItem([{type: "image", data: "AAA", mimeType: "image/png"}], true).image_url',
        "data:image/png;base64,AAA",
    ),
    ('__t.cmImageItem(["https://x"], true).type', "image"),
    ("__t.cmTextItem({a: [1, 'x']}).text", '{"a":[1,"x"]}'),
    ("__t.cmTextItem(-0).text", "0"),
    ("__t.cmTextItem('\\ud800').text === '\\ufffd'", True),
    ("__t.cmConsoleText(['a', 1, {b: 2}])", 'a 1 {"b":2}'),
    (
        '(() => { const r = __t.cmForwardOutputItems([{content: [{type: "text", text: "t"},'
        ' {type: "image", data: "AAA"}]}, {output: "o"}], true);'
        ' return r.length + ":" + r[0].text + ":" + r[1].image_url + ":" + r[2].text; })()',
        "3:t:data:application/octet-stream;base64,AAA:o",
    ),
    (_catch('__t.cmImageItem(["ftp://x"], true)'), URL_SCHEME),
    (_catch('__t.cmImageItem(["https://x"], false)'), REMOTE),
    (_catch('__t.cmImageItem(["nope"], false)'), INVALID),
    (_catch('__t.cmImageItem(["https://x", "huge"], true)'), DETAIL_VALUES),
    (
        _catch('__t.cmForwardOutputItems([{content: "x"}], true)'),
        "output expected `content` to be an array",
    ),
    (_catch("__t.cmForwardOutputItems([{}], true)"), FWD_EXPECTS),
    (_catch('__t.cmNotifyText("   ")'), NOTIFY_EMPTY),
    ("__t.cmErrorText({stack: 'st'})", "st"),
    ("__t.cmErrorText(7)", "7"),
]


@pytest.mark.parametrize(("expr", "expected"), POLLUTED_CASES)
def test_helpers_survive_polluted_builtins(polluted: MiniRacer, expr: str, expected: Any) -> None:
    assert polluted.eval(expr) == expected


# ---------------------------------------------------------------------------
# Lone surrogates without String.prototype.toWellFormed (the fallback path).


@pytest.fixture(scope="module")
def no_well_formed() -> Iterator[MiniRacer]:
    ctx = MiniRacer()
    try:
        ctx.eval("delete String.prototype.toWellFormed;")
        _load(ctx)
        yield ctx
    finally:
        ctx.close()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"plain"', "plain"),
        ('"\\ud800"', "\ufffd"),
        ('"\\udc00x"', "\ufffdx"),
        ('"a\\ud83d\\ude00b"', "a\U0001f600b"),
        ('"\\ude00\\ud83d"', "\ufffd\ufffd"),
        ('"x\\ud83d\\ud83d\\ude00\\ude00y"', "x\ufffd\U0001f600\ufffdy"),
    ],
)
def test_lone_surrogates_without_to_well_formed(
    no_well_formed: MiniRacer, value: str, expected: str
) -> None:
    assert ok(no_well_formed, "typeof String.prototype.toWellFormed") == "undefined"
    assert ok(no_well_formed, f"__t.cmOutputText({value})") == expected
    assert ok(no_well_formed, f"__t.cmConsoleText([{value}])") == expected
