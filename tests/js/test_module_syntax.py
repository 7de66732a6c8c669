"""Programs as ES modules, and the global scope, as the reference has them.

The reference evaluates a program as the module ``exec_main.mjs`` and refuses every
import (openai/codex ``codex-rs/code-mode-runtime/src/runtime/module_loader.rs``,
``evaluate_main_module``, ``resolve_module``, ``dynamic_import_callback``, commit
4f39251a010a); the global scope is checked against its list
(``global_scope_contains_only_allowed_items`` in ``service_tests.rs``, commit
37a9da9901c5, with ``as_settled`` and ``stream_settled``, which ``settled.js`` adds at
842301cbef73), and ``text()`` follows ``serialize_output_text`` (``runtime/value.rs``).
"""

from __future__ import annotations

import json

import pytest

from ..js_support import run, texts

# Upstream's allowed list (global_scope_contains_only_allowed_items), plus this
# package's two extras.
REFERENCE_GLOBALS = {
    "AggregateError", "ALL_TOOLS", "Array", "ArrayBuffer", "as_settled", "AsyncDisposableStack",
    "BigInt",
    "BigInt64Array", "BigUint64Array", "Boolean", "clearTimeout", "DataView", "Date",
    "DisposableStack", "Error", "EvalError", "FinalizationRegistry", "Float16Array",
    "Float32Array", "Float64Array", "Function", "Infinity", "Int16Array", "Int32Array",
    "Int8Array", "Intl", "Iterator", "JSON", "Map", "Math", "NaN", "Number", "Object",
    "Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set", "String",
    "SuppressedError", "Symbol", "SyntaxError", "Temporal", "TypeError", "URIError",
    "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "WeakMap", "WeakRef",
    "WeakSet", "__codexContentItems", "add_content", "audio", "decodeURI",
    "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "exit", "eval",
    "generatedImage", "globalThis", "image", "isFinite", "isNaN", "load", "notify",
    "parseFloat", "parseInt", "setTimeout", "store", "text", "tools", "undefined", "unescape",
    "stream_settled", "yield_control",
}  # fmt: skip
OUR_EXTRAS = {"console", "forward_output"}


async def test_global_scope_contains_only_allowed_items(isolation: str) -> None:
    """Every own property of the global object is on the reference's list, extras
    aside; the gc extension (``__code_mode_gc`` before) is gone from it."""
    event = await run(
        isolation, "text(JSON.stringify(Object.getOwnPropertyNames(globalThis).sort()));"
    )
    [item] = event.content_items
    names = set(json.loads(getattr(item, "text", "")))
    assert names - REFERENCE_GLOBALS == OUR_EXTRAS
    assert {"audio", "generatedImage", "tools", "ALL_TOOLS"} <= names


REFERENCE_ORDER = [
    "tools", "ALL_TOOLS", "clearTimeout", "setTimeout", "text", "image", "audio",
    "generatedImage", "forward_output", "console", "store", "load", "notify",
    "yield_control", "exit", "as_settled", "stream_settled",
]  # fmt: skip


async def test_helpers_are_ordinary_globals_in_the_reference_order(isolation: str) -> None:
    """``install_globals`` sets them with ``global.set``: enumerable, in its order
    (``forward_output`` and ``console``, ours, after ``generatedImage``), then
    ``settled.js``'s two, which it assigns to ``globalThis`` after the others."""
    expected = json.dumps(REFERENCE_ORDER, separators=(",", ":"))
    assert await run(isolation, "text(Object.keys(globalThis));") == texts(expected)


async def test_text_of_a_function_or_symbol_is_undefined_as_in_the_reference(
    isolation: str,
) -> None:
    """``serialize_output_text`` takes V8's ``JSON::Stringify``, whose ``undefined``
    result is itself stringified (``ToString`` in V8's api.cc) to ``"undefined"``: a
    function's source never shows (issue 21 expected it to; the reference does not)."""
    source = 'text(function f(a) { return a; }); text(() => 1); text(Symbol("s"));'
    assert await run(isolation, source) == texts("undefined", "undefined", "undefined")


# ---------------------------------------------------------------------------------
# Module syntax


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("export const x = 1; text(x);", ["1"]),
        ("export let y = 2;\nexport var z = 3;\ntext(y + z);", ["5"]),
        ("export function f() { return 4; }\ntext(f());", ["4"]),
        ("export async function g() { return 5; }\ntext(await g());", ["5"]),
        ("export class C { static v = 6; }\ntext(C.v);", ["6"]),
        ('export default 42; text("ok");', ["ok"]),
        ("export default function named() {}\ntext(typeof named);", ["function"]),
        ("export default class K {}\ntext(typeof K);", ["function"]),
        ('export default function () {}\ntext("anonymous");', ["anonymous"]),
        ('export default async function () {}\ntext("async");', ["async"]),
        ("const a = 1, b = 2;\nexport { a, b as c };\ntext(a + b);", ["3"]),
        ("export {\n  a as default\n};\nconst a = 1; text(a);", ["1"]),
    ],
)
async def test_export_is_accepted(source: str, expected: list[str], isolation: str) -> None:
    assert await run(isolation, source) == texts(*expected)


async def test_words_in_strings_comments_and_properties_are_left_alone(isolation: str) -> None:
    source = (
        'const s = "import x from \\"y\\"; export default 1";\n'
        "// export const hidden = 1; import z from 'z';\n"
        "const o = { import: 1, export: 2 };\n"
        "const re = /import \\(x\\)/;\n"
        "text(s.length); text(o.import + o.export); text(re.test('import (x)'));\n"
        "text(`export ${'import'.length} import`);"
    )
    assert await run(isolation, source) == texts("35", "3", "true", "export 6 import")


async def test_static_import_is_refused_before_anything_runs(isolation: str) -> None:
    source = 'text("never");\nimport { a } from "./b.js";'
    assert await run(isolation, source) == texts(error_text="Unsupported import in exec: ./b.js")


async def test_the_first_static_import_is_the_one_named(isolation: str) -> None:
    source = 'import a from "first";\nexport * from "second";\nimport "third";'
    assert await run(isolation, source) == texts(error_text="Unsupported import in exec: first")


async def test_a_syntax_error_wins_over_an_import_and_keeps_its_position(isolation: str) -> None:
    """As in a module: compiling comes before resolving imports; the rewritten import
    moves nothing, so the error is where it was."""
    source = 'import x from "fs";\nexport const a = 1;\nconst b = = 2;'
    assert await run(isolation, source) == texts(
        error_text="SyntaxError: Unexpected token '='\n    at exec_main.mjs:3:11"
    )


@pytest.mark.parametrize(
    "source",
    [
        'await import("./other.js");',
        'await import("fs", { with: { type: "json" } });',
        "await import(`${'dyn'}amic`);",
    ],
)
async def test_dynamic_import_rejects_with_the_reference_string(
    source: str, isolation: str
) -> None:
    """``dynamic_import_callback`` rejects with the plain string ``unsupported import
    in exec`` (the value observed in practice; it was ``Error: Not supported`` here)."""
    program = f"try {{ {source} }} catch (e) {{ text(typeof e); text(e); }}"
    assert await run(isolation, program) == texts("string", "unsupported import in exec")
    assert await run(isolation, source) == texts(error_text="unsupported import in exec")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            'const p = import("./other.js");\n'
            "text(p instanceof Promise);\n"
            'await p.then(() => text("loaded"), () => text("rejected"));',
            ["true", "rejected"],
            id="rejects",
        ),
        pytest.param(
            "const p = import(Symbol('s'));\n"
            "text(p instanceof Promise);\n"
            "try { await p; } catch (e) { text(e instanceof TypeError); }",
            ["true", "true"],
            id="converts-its-specifier-first",
        ),
    ],
)
async def test_dynamic_import_gives_a_promise(
    source: str, expected: list[str], isolation: str
) -> None:
    assert await run(isolation, source) == texts(*expected)


async def test_import_meta_is_an_empty_object_without_prototype(isolation: str) -> None:
    source = (
        "const m = import.meta;\n"
        "text(typeof m); text(JSON.stringify(m)); text(Object.getPrototypeOf(m) === null);\n"
        "text(Object.keys(m).length); text(m === import.meta);"
    )
    assert await run(isolation, source) == texts("object", "{}", "true", "0", "true")


async def test_import_inside_a_function_is_still_a_syntax_error(isolation: str) -> None:
    source = "function f() {\n  export const a = 1;\n}"
    event = await run(isolation, source)
    assert event.error_text is not None  # type: ignore[union-attr]
    assert event.error_text.startswith("SyntaxError: Unexpected token 'export'")  # type: ignore[union-attr]
