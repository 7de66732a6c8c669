"""`scan_tool_calls`: a program's ``tools.x(...)`` calls and their literal arguments,
read without running it (for ``check_programs``). What is uncertain must say so."""

from __future__ import annotations

import pytest

from code_mode.model_tools.program_scan import (
    UNDEFINED,
    UNKNOWN,
    CallSite,
    NoArgument,
    ObjectLiteral,
    scan_tool_calls,
)


def test_calls_and_literal_arguments() -> None:
    scanned = scan_tool_calls(
        "await tools.a({x: 1, 'y': [1, -2.5, {z: null}], 2: true, 1: 'one', u: undefined});\n"
        "tools?.b(); tools.c?.(undefined); tools['d-e']('text'); tools.f(1 + 2);"
    )
    assert not scanned.shadowed
    assert scanned.calls == [
        CallSite(
            "a",
            ObjectLiteral(
                # JavaScript's own-key order: integer keys first, ascending.
                {"1": "one", "2": True, "x": 1, "y": [1, -2.5, {"z": None}], "u": UNDEFINED},
                complete=True,
            ),
            handled=False,
        ),
        CallSite("b", NoArgument(), handled=False),
        CallSite("c", NoArgument(), handled=False),
        CallSite("d-e", "text", handled=False),
        CallSite("f", UNKNOWN, handled=False),
    ]


def test_values_that_are_not_literals_are_unknown() -> None:
    [call] = scan_tool_calls(
        "tools.a({k: f(1, 2), s, m() { return 1; }, big: 1n, t: `x`, z: 3})"
    ).calls
    assert call.argument == ObjectLiteral(
        {"k": UNKNOWN, "s": UNKNOWN, "m": UNKNOWN, "big": UNKNOWN, "t": UNKNOWN, "z": 3},
        complete=True,
    )


@pytest.mark.parametrize(
    "source", ["tools.a({...o, z: 1})", "tools.a({[k]: 1})", "tools.a({get z() { return 1; }})"]
)
def test_spreads_computed_keys_and_accessors_make_an_object_incomplete(source: str) -> None:
    [call] = scan_tool_calls(source).calls
    assert isinstance(call.argument, ObjectLiteral)
    assert not call.argument.complete


@pytest.mark.parametrize(
    "source",
    [
        "// tools.a()\n",
        "/* tools.a() */",
        "'tools.a()'; \"tools.a()\"",
        "`tools.a()`",
        "const r = /tools.a()/g;",
        "x.tools.a(); this.tools.a();",
        "const o = {tools: 1};",
    ],
)
def test_no_call_in_text_comments_regexps_or_properties(source: str) -> None:
    scanned = scan_tool_calls(source)
    assert scanned.calls == []
    assert not scanned.shadowed


def test_code_inside_a_template_is_scanned() -> None:
    [call] = scan_tool_calls("text(`a ${await tools.a({n: 1})} b ${'}'}`)").calls
    assert call == CallSite("a", ObjectLiteral({"n": 1}, complete=True), handled=False)


@pytest.mark.parametrize(
    "source",
    [
        "try { await tools.a(); } catch (e) {}",
        "await tools.a().catch(() => 0);",
        "await tools.a().then(f, g);",
        "await Promise.allSettled([tools.a()]);",
        "await Promise.any([tools.a()]);",
        "for await (const r of as_settled([tools.a()])) {}",
        "await stream_settled([tools.a()], (r) => text(r));",
    ],
)
def test_handled_rejections_are_marked(source: str) -> None:
    [call] = scan_tool_calls(source).calls
    assert call.handled


def test_a_catch_block_is_not_a_try_block() -> None:
    [first, second] = scan_tool_calls("try { x(); } catch (e) { tools.a(); } tools.b();").calls
    assert not first.handled and not second.handled


@pytest.mark.parametrize(
    "source",
    ["const tools = {};", "function f(tools) {}", "const t = tools;", "f(tools)", "typeof tools"],
)
def test_any_other_use_of_tools_is_reported(source: str) -> None:
    assert scan_tool_calls(source).shadowed
