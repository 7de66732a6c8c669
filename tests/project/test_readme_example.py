"""The README quick start runs as written (and stays within 15 lines of Python)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- quickstart:start -->", "<!-- quickstart:end -->"


def quickstart_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(START) + len(START) : text.index(END)]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the quick start has exactly one python block"
    return str(blocks[0])


def test_quickstart_is_short() -> None:
    assert len(quickstart_code().strip().splitlines()) <= 15


def test_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = quickstart_code()
    exec(compile(code, str(README), "exec"), {"__name__": "__main__"})
    output = capsys.readouterr().out
    assert output.startswith("Script completed\nWall time ")
    assert output.rstrip().endswith("Output:\n42")
