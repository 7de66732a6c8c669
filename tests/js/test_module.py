"""What a program sees as a module (``docs/programs.md``: the basics, errors).

Module semantics, stack frames, imports, the global object, ICU, ``error_text`` of
every kind of uncaught value, and termination of programs that never yield.
"""

from __future__ import annotations

import re

import pytest
import trio

from code_mode import Completed, Terminated, Text, YieldAfter, Yielded
from code_mode._engine._syntax_error import syntax_error_text
from tests.js_support import SAFETY, request, run, run_in, session, texts

# ---------------------------------------------------------------------------------
# Module semantics


async def test_strict_mode_assignment_to_undeclared_variable_fails(isolation: str) -> None:
    assert await run(isolation, "undeclared = 1;") == texts(
        error_text="ReferenceError: undeclared is not defined\n    at exec_main.mjs:1:12"
    )


async def test_strict_mode_functions_get_undefined_this(isolation: str) -> None:
    source = "text((function () { return this; })() === undefined);"
    assert await run(isolation, source) == texts("true")


async def test_strict_mode_forbids_with_statements(isolation: str) -> None:
    event = await run(isolation, "with ({a: 1}) { text(a); }")
    assert isinstance(event, Completed)
    assert event.content_items == []
    assert event.error_text is not None
    assert event.error_text.startswith("SyntaxError: ")
    assert event.error_text.endswith("\n    at exec_main.mjs:1:1")


async def test_top_level_await(isolation: str) -> None:
    source = "const v = await Promise.resolve(41);\ntext(v + 1);"
    assert await run(isolation, source) == texts("42")


async def test_top_level_this_is_undefined(isolation: str) -> None:
    assert await run(isolation, "text(this === undefined);") == texts("true")


@pytest.mark.parametrize(
    "declaration",
    [
        "const x = 1;",
        "let x = 1;",
        "var x = 1;",
        "function x() {}",
        "class x {}",
    ],
)
async def test_top_level_declarations_are_not_on_the_global_object(
    declaration: str, isolation: str
) -> None:
    source = f'{declaration}\ntext(typeof globalThis.x);\ntext("x" in globalThis);'
    assert await run(isolation, source) == texts("undefined", "false")


@pytest.mark.parametrize(
    "source",
    [
        '}); text("escaped"); (async function () {',
        '})();\ntext("escaped");\n(async function () {',
        "}\n//",
    ],
)
async def test_a_program_cannot_close_its_wrapper(source: str, isolation: str) -> None:
    event = await run(isolation, source)
    assert isinstance(event, Completed)
    assert event.content_items == []
    assert event.error_text is not None
    assert event.error_text.startswith("SyntaxError: ")


async def test_each_cell_gets_a_fresh_global_object(isolation: str) -> None:
    async with session(isolation) as runtime:
        first = await run_in(runtime, "globalThis.leak = 1; Array.prototype.extra = 2;")
        assert first == texts()
        second = await run_in(runtime, "text(typeof leak); text(typeof [].extra);")
        assert second == texts("undefined", "undefined")


# ---------------------------------------------------------------------------------
# Stack frames: `exec_main.mjs` with the user's own line and column numbers


# Each: a program, and the error_text of its uncaught error (tested with the others below).
STACK_FRAMES = [
    pytest.param(
        'throw new Error("boom");',
        "Error: boom\n    at exec_main.mjs:1:7",
        id="line-1",
    ),
    pytest.param(
        'const a = 1;\n\n  throw new Error("boom");',
        "Error: boom\n    at exec_main.mjs:3:9",
        id="later-line",
    ),
    pytest.param(
        'function f() {\n  throw new Error("boom");\n}\nf();',
        "Error: boom\n    at f (exec_main.mjs:2:9)\n    at exec_main.mjs:4:1",
        id="named-function",
    ),
    pytest.param(
        'function f() { throw new Error("boom"); } f();',
        "Error: boom\n    at f (exec_main.mjs:1:22)\n    at exec_main.mjs:1:43",
        id="function-on-line-1",
    ),
    pytest.param(
        'class A {\n  constructor() { this.m(); }\n  m() { throw new Error("boom"); }\n}\nnew A();',
        "Error: boom\n"
        "    at A.m (exec_main.mjs:3:15)\n"
        "    at new A (exec_main.mjs:2:24)\n"
        "    at exec_main.mjs:5:1",
        id="class-method-and-constructor",
    ),
    pytest.param(
        'await null; throw new Error("boom");',
        "Error: boom\n    at exec_main.mjs:1:19",
        id="after-await-line-1",
    ),
    pytest.param(
        'await null;\nthrow new Error("boom");',
        "Error: boom\n    at exec_main.mjs:2:7",
        id="after-await-later-line",
    ),
    pytest.param(
        'async function g() {\n  await null;\n  throw new Error("boom");\n}\nawait g();',
        "Error: boom\n    at g (exec_main.mjs:3:9)\n    at async exec_main.mjs:5:1",
        id="inside-awaited-async-function",
    ),
    pytest.param(
        'throw new TypeError("bad type");',
        "TypeError: bad type\n    at exec_main.mjs:1:7",
        id="error-subclass",
    ),
]


# ---------------------------------------------------------------------------------
# Imports


@pytest.mark.parametrize(
    ("source", "specifier"),
    [
        ('import x from "default-import";', "default-import"),
        ("import 'side-effect';", "side-effect"),
        ('import * as ns from "./namespace.js";', "./namespace.js"),
        ("import { a, b as c } from 'named';", "named"),
        ('import def, { a } from "mixed";', "mixed"),
        ('import {\n  a,\n  b,\n} from "multi-line";', "multi-line"),
        ('export { a } from "re-export";', "re-export"),
        ('export * from "star";', "star"),
        ('export * as ns from "star-as";', "star-as"),
        ('text("before");\nimport x from "later-line";', "later-line"),
        ('text("before"); import x from "same-line";', "same-line"),
    ],
)
async def test_static_import_fails_the_cell_before_any_code_runs(
    source: str, specifier: str, isolation: str
) -> None:
    assert await run(isolation, source) == texts(
        error_text=f"Unsupported import in exec: {specifier}"
    )


# ---------------------------------------------------------------------------------
# The global object


@pytest.mark.parametrize(
    "name",
    ["Atomics", "SharedArrayBuffer", "WebAssembly", "process", "require", "fetch", "Buffer"],
)
async def test_global_is_absent(name: str, isolation: str) -> None:
    source = f'text(typeof {name});\ntext("{name}" in globalThis);'
    assert await run(isolation, source) == texts("undefined", "false")


async def test_console_is_present(isolation: str) -> None:
    source = "text(typeof console);\ntext(typeof console.log);"
    assert await run(isolation, source) == texts("object", "function")


async def test_full_icu(isolation: str) -> None:
    options = (
        '{weekday: "long", month: "long", day: "numeric", hour: "2-digit", '
        'minute: "2-digit", second: "2-digit", hour12: false, timeZone: "UTC"}'
    )
    source = (
        'const date = new Date("2025-01-02T03:04:05Z");\n'
        f'text(date.toLocaleString("fr-FR", {options}));\n'
        f'text(new Intl.DateTimeFormat("fr-FR", {options}).format(date));\n'
        'text((1234567.891).toLocaleString("de-DE"));'
    )
    expected = "jeudi 2 janvier à 03:04:05"
    assert await run(isolation, source) == texts(expected, expected, "1.234.567,891")


# The constructors the memory checks wrap (js/allocations.js), as the language defines
# them (the same lines as without the checks): name, length, `prototype.constructor`,
# [[Prototype]], with and without `new`, and as a base class. Each line: one
# constructor's properties, or a way of using one.
WRAPPED_CONSTRUCTORS = """
const AsyncFunction = (async () => {}).constructor;
const GeneratorFunction = function* () {}.constructor;
const AsyncGeneratorFunction = async function* () {}.constructor;
const all = { RegExp, Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction,
  Collator: Intl.Collator, Segmenter: Intl.Segmenter, Locale: Intl.Locale };
for (const [key, C] of Object.entries(all)) {
  const base = Object.getPrototypeOf(C) === (key.endsWith("Function") &&
    key !== "Function" ? Function : Function.prototype);
  text([key, C.name, C.length, C.prototype.constructor === C, base,
    Object.getOwnPropertyNames(C).includes("prototype")].join(" "));
}
text([RegExp("a+", "g").flags, new RegExp(/b/i).source, /c/.constructor === RegExp,
  new RegExp("d") instanceof RegExp, typeof RegExp.$1,
  RegExp[Symbol.species] === RegExp].join(" "));
class R extends RegExp { twice(s) { return this.exec(s + s); } }
text([new R("x").twice("x")[0], new R("y") instanceof R, new R("y") instanceof RegExp].join(" "));
text([Function("a", "b", "return a + b")(1, 2), new Function("return 3")(),
  (function () {}).constructor === Function, new AsyncFunction("return 4") instanceof Function,
  typeof new GeneratorFunction("yield 5")().next].join(" "));
class C extends Intl.Collator {}
text([new C("en").compare("a", "b"), Intl.Collator("en") instanceof Intl.Collator,
  new Intl.Collator("en").constructor === Intl.Collator,
  Intl.Collator.supportedLocalesOf(["en"]).join()].join(" "));
"""


async def test_the_checked_constructors_behave_as_the_language_defines_them(
    isolation: str,
) -> None:
    assert await run(isolation, WRAPPED_CONSTRUCTORS) == texts(
        "RegExp RegExp 2 true true true",
        "Function Function 1 true true true",
        "AsyncFunction AsyncFunction 1 true true true",
        "GeneratorFunction GeneratorFunction 1 true true true",
        "AsyncGeneratorFunction AsyncGeneratorFunction 1 true true true",
        "Collator Collator 0 true true true",
        "Segmenter Segmenter 0 true true true",
        "Locale Locale 1 true true true",
        "g b true true string true",
        "x true true",
        "3 3 true true function",
        "-1 true true en",
    )


# ---------------------------------------------------------------------------------
# Errors -> error_text


# Uncaught values give their stack, or their string.
UNCAUGHT_VALUES = [
    pytest.param('throw "boom";', "boom", id="string"),
    pytest.param("throw 42;", "42", id="number"),
    pytest.param("throw {a: 1};", "[object Object]", id="plain-object"),
    pytest.param("throw undefined;", "undefined", id="undefined"),
    pytest.param("await Promise.reject(null);", "null", id="rejected-null"),
    pytest.param(
        'await Promise.reject(new Error("nope"));',
        "Error: nope\n    at exec_main.mjs:1:22",
        id="rejected-error",
    ),
    pytest.param('throw {stack: "custom stack"};', "custom stack", id="string-stack"),
    pytest.param(
        'throw {stack: 5, toString() { return "from toString"; }};',
        "from toString",
        id="non-string-stack",
    ),
    pytest.param(
        'const e = new Error("m");\ndelete e.stack;\nthrow e;',
        "Error: m",
        id="deleted-stack",
    ),
]


@pytest.mark.parametrize(
    ("source", "error_text"),
    [
        # V8 points at the argument it was parsing; columns count UTF-16 units.
        ('text("a";', "SyntaxError: missing ) after argument list\n    at exec_main.mjs:1:6"),
        (
            'text("fine");\nconst = 1;',
            "SyntaxError: Unexpected token '='\n    at exec_main.mjs:2:7",
        ),
        (
            'const a = 1;\n\tif (a) {\n\t\ttext("é😀", "a" b);\n\t}',
            "SyntaxError: missing ) after argument list\n    at exec_main.mjs:3:15",
        ),
        # V8 finds these past the program's end: placed after its last character.
        ("}", "SyntaxError: Unexpected token '}'\n    at exec_main.mjs:1:2"),
        ("text(`abc", "SyntaxError: Unexpected end of input\n    at exec_main.mjs:1:10"),
        ("if (x) {\n  text(1);\n", "SyntaxError: Unexpected token ')'\n    at exec_main.mjs:3:1"),
        ("let await = 1;", None),
    ],
)
async def test_syntax_errors_give_line_and_column(
    source: str, error_text: str | None, isolation: str
) -> None:
    event = await run(isolation, source)
    assert isinstance(event, Completed), event
    assert event.content_items == []
    if error_text is None:  # only the shape: V8 chooses the words
        assert event.error_text is not None
        assert re.fullmatch(r"SyntaxError: .+\n    at exec_main\.mjs:1:\d+", event.error_text)
    else:
        assert event.error_text == error_text


async def test_unawaited_rejections_do_not_fail_the_cell(isolation: str) -> None:
    source = (
        'Promise.reject(new Error("ignored"));\n'
        'new Promise((_, reject) => reject("also ignored"));\n'
        "await null;\n"
        'text("done");'
    )
    assert await run(isolation, source) == texts("done")


async def test_caught_errors_do_not_fail_the_cell(isolation: str) -> None:
    source = 'try { throw new Error("x"); } catch (e) { text(e.message); }'
    assert await run(isolation, source) == texts("x")


async def test_output_before_an_error_is_kept(isolation: str) -> None:
    source = 'text("one");\ntext("two");\nthrow new Error("boom");'
    assert await run(isolation, source) == texts(
        "one", "two", error_text="Error: boom\n    at exec_main.mjs:3:7"
    )


# Uncaught errors of the helpers give the bare message.
HELPER_ERRORS = [
    ("setTimeout(1);", "setTimeout expects a function callback"),
    (
        'store("k", undefined);',
        'Unable to store "k". Only plain serializable objects can be stored.',
    ),
    ('notify("   ");', "notify expects non-empty text"),
    (
        'image("ftp://example.com/a.png");',
        "Tool call failed: invalid image output. Pass a base64 data URI instead",
    ),
    # openai/codex module_loader.rs dynamic_import_callback (commit 4f39251a010a);
    # the ftp:// text above is value.rs's since c09df9e35319.
    ('await import("fs");', "unsupported import in exec"),
    ("await tools.missing({});", "tool `missing` is not enabled in exec"),
]


@pytest.mark.parametrize(
    ("source", "error_text"), [*STACK_FRAMES, *UNCAUGHT_VALUES, *HELPER_ERRORS]
)
async def test_an_uncaught_error_ends_the_cell_with_its_error_text(
    source: str, error_text: str, isolation: str
) -> None:
    assert await run(isolation, source) == texts(error_text=error_text)


# ---------------------------------------------------------------------------------
# Termination of programs that never give control back


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("while (true) {}", id="busy-loop"),
        pytest.param(
            "(function f() { Promise.resolve().then(f); })();\nawait new Promise(() => {});",
            id="endless-microtasks",
        ),
        pytest.param("await new Promise(() => {});", id="never-settles"),
    ],
)
async def test_terminate_interrupts_programs_that_never_finish(source: str, isolation: str) -> None:
    async with session(isolation) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source), YieldAfter(0.05))
            assert await started.initial_event() == Yielded(content_items=[])
            assert await runtime.terminate(started.cell_id) == Terminated(content_items=[])
        # The session is unharmed.
        assert await run_in(runtime, 'text("next");') == Completed([Text("next")])


def test_only_a_syntax_error_report_becomes_a_result() -> None:
    # Any other error out of the runtime stays a runtime failure.
    assert syntax_error_text("<anonymous>:3: TypeError: x is not a function\nx()\n^", "x()") is None
    assert syntax_error_text("exec runtime failed", "x") is None
    assert syntax_error_text("f:1: SyntaxError: wrapper\n(\n^", "x") is None  # not the program
