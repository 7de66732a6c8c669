"""The Python examples of docs/mcp.md run as written: each prints what its comments say."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ..mcp_support import ROOT, node_command

DOC = ROOT / "docs" / "mcp.md"


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def expected_output(code: str) -> list[str]:
    """``print(...)  # <text>`` lines promise ``<text>`` as output."""
    return re.findall(r"^\s*print\(.*\)  # (.*)$", code, flags=re.MULTILINE)


def test_the_page_has_runnable_examples() -> None:
    assert len(examples()) == 2
    assert all(expected_output(code) for code in examples())


@pytest.mark.parametrize("index", range(2))
def test_example_runs(
    index: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The examples name the servers by command, as an installed server is named.
    command = Path(node_command("mcp-server-everything"))
    monkeypatch.setenv("PATH", f"{command.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    code = examples()[index]
    exec(compile(code, f"{DOC}#example{index + 1}", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines() == expected_output(code)
