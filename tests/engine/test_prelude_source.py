"""The prelude's source is compacted for V8's parser without changing its meaning."""

from __future__ import annotations

from pathlib import Path

import pytest

from code_mode._engine import _prelude
from code_mode._engine._prelude import compact, prelude_source


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
