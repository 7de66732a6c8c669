"""The module-syntax rewrite (``code_mode/_engine/_module_source.py``), unit by unit.

Every rewrite keeps the program's length and line breaks (syntax errors elsewhere keep
their positions); the JavaScript tests (``tests/js/test_module_syntax.py``) check what a
program then sees.
"""

from __future__ import annotations

import pytest

from code_mode._engine._module_source import module_source


def rewrite(source: str) -> str:
    result = module_source(source)
    assert len(result.body) == len(source)
    assert [i for i, c in enumerate(result.body) if c == "\n"] == [
        i for i, c in enumerate(source) if c == "\n"
    ]
    return result.body


def test_programs_without_the_words_pass_through() -> None:
    source = "text(await tools.search({q: 'x'}));"
    assert module_source(source) == (source, None, False)


@pytest.mark.parametrize(
    ("source", "body"),
    [
        ("export const x = 1;", "       const x = 1;"),
        ("export default 42;", "       0,      42;"),
        ("export default function f() {}", "               function f() {}"),
        ("export default function* g() {}", "               function* g() {}"),
        ("export default async function h() {}", "               async function h() {}"),
        ("export default class {}", "       0,      class {}"),
        ("export { a, b as c };", "                    ;"),
        ("export {\n  a,\n};", "        \n    \n ;"),
    ],
)
def test_export_forms(source: str, body: str) -> None:
    assert rewrite(source) == body
    assert module_source(source).import_error is None


@pytest.mark.parametrize(
    ("source", "specifier"),
    [
        ('import x from "fs";', "fs"),
        ("import 'side';", "side"),
        ('import * as ns from "./ns.js";', "./ns.js"),
        ('import {\n  a,\n} from "multi";', "multi"),
        ('import j from "./d.json" with { type: "json" };', "./d.json"),
        ('export * from "star";', "star"),
        ('export { a } from "re";', "re"),
        ('import x from "f\\x6fo\\u{21}";', "foo!"),
    ],
)
def test_static_imports_are_blanked_and_named(source: str, specifier: str) -> None:
    result = module_source(source)
    assert result.import_error == f"Unsupported import in exec: {specifier}"
    assert rewrite(source).strip(" \n;") == ""


def test_dynamic_import_and_import_meta_use_the_hidden_parameters() -> None:
    result = module_source('const m = import.meta; await import("x"); import ( "y" );')
    assert result.body == 'const m = $cmIM$.meta; await $cmIm$("x"); $cmIm$ ( "y" );'
    assert result.hidden_parameters and result.import_error is None


@pytest.mark.parametrize(
    "source",
    [
        "const s = \"import x from 'y'\";",
        "const t = `export ${1} import`;",
        "// import x from 'y'\n/* export default 1 */",
        "x.import(1); y?.export; ({ import: 1, export: 2 });",
        "const r = /import 'x'/; const d = a / 2 / b;",
        "if (a) { export const b = 1; }",
        "import();",
    ],
)
def test_what_is_not_module_syntax_is_left_alone(source: str) -> None:
    assert module_source(source) == (source, None, False)


def test_template_substitutions_nest() -> None:
    source = "const a = `${ `${ {b: 1}.b }` } export`; export const c = 1;"
    assert rewrite(source) == "const a = `${ `${ {b: 1}.b }` } export`;        const c = 1;"


def test_blanking_keeps_utf16_columns() -> None:
    """An astral character in a blanked list takes its two UTF-16 columns."""
    source = 'export { "\U0001f600" as x };\nbad ='
    body = module_source(source).body
    assert body == " " * 20 + ";\nbad ="
    assert len(body.encode("utf-16-le")) == len(source.encode("utf-16-le"))
