"""The prelude's source is compacted for V8's parser without changing its meaning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from code_mode._v8 import _prelude
from code_mode._v8._prelude import compact, prelude_source


def test_compact_drops_indentation_blank_lines_and_whole_line_comments() -> None:
    text = (
        "// a file comment\nconst a = 1;\n\n  // indented comment\n"
        "  if (a) {\n    f(); // kept\n  }\n"
    )
    assert compact("t.js", text) == "const a = 1;\nif (a) {\nf(); // kept\n}"


@pytest.mark.parametrize(
    "line",
    [
        "const s = `a",  # a template literal that goes on to the next line
        'const s = "a \\',  # a string continued on the next line
    ],
)
def test_compact_refuses_a_literal_that_may_span_lines(line: str) -> None:
    with pytest.raises(ValueError, match=r"t\.js:2:"):
        compact("t.js", f"const x = 1;\n{line}\nb`;\n")


def test_the_prelude_carries_the_runtime_compacted() -> None:
    js = Path(_prelude.__file__).parent / "js"
    lines = set(prelude_source().splitlines())
    for path in js.glob("*.js"):
        source = path.read_text(encoding="utf-8").splitlines()
        code = [line for line in source if line.strip() and not line.strip().startswith("//")]
        assert code
        # Every line of code is there, unindented; no whole-line comment is.
        assert all(line.strip() in lines for line in code), path.name
        assert not [line for line in source if line.strip().startswith("//") and line in lines]


def test_every_runtime_file_is_assembled_once() -> None:
    js = Path(_prelude.__file__).parent / "js"
    files = sorted(path.name for path in js.glob("*.js"))
    assert sorted([*_prelude._PARTS, *_prelude._LAZY]) == files
    assert _prelude._PARTS[0] == "builtins.js"


# `const rtX = Array.prototype.push;`: a built-in taken from a global (not from an `rt*`
# capture), possibly through an accessor's descriptor.
_CAPTURE = re.compile(r"^\s*const (\w+) =\s*(?:[\w.]+\()?((?:globalThis|[A-Z]\w*)\b[\w.]*)")


def test_each_built_in_is_captured_once_in_builtins_js() -> None:
    # One place to look for (and fix) what the runtime takes from the language: a
    # capture in any later file could be a second, diverging copy.
    js = Path(_prelude.__file__).parent / "js"
    captured: dict[str, list[str]] = {}
    for part in _prelude._PARTS:
        for line in (js / part).read_text(encoding="utf-8").splitlines():
            match = _CAPTURE.match(line)
            if match and not match[2].startswith("RT_"):
                captured.setdefault(match[2], []).append(f"{part}: {match[1]}")
    assert "Array.prototype.push" in captured  # the pattern finds captures
    assert {value: places for value, places in captured.items() if len(places) > 1} == {}
    assert [
        place
        for places in captured.values()
        for place in places
        if not place.startswith("builtins.js")
    ] == []
