"""What a type checker sees: the README quick start passes ``mypy --strict`` as written,
and ``@tool`` keeps the decorated function's signature."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.project.test_docs_run import blocks
from tests.project.test_readme_example import quickstart_code

ROOT = Path(__file__).resolve().parents[2]


def mypy_strict(tmp_path: Path, cache: Path, source: str) -> tuple[int, str]:
    """Run ``mypy --strict`` (with the project's configuration) on ``source``; return
    its exit status and report."""
    path = tmp_path / "checked.py"
    path.write_text(source, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return completed.returncode, completed.stdout + completed.stderr


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One cache for the session's mypy runs: the first one analyses code_mode and trio.
    return tmp_path_factory.mktemp("mypy-cache")


def test_readme_quickstart_passes_mypy_strict(tmp_path: Path, mypy_cache: Path) -> None:
    status, report = mypy_strict(tmp_path, mypy_cache, quickstart_code())
    assert status == 0, report


def test_tool_keeps_the_signature_for_type_checkers(tmp_path: Path, mypy_cache: Path) -> None:
    source = textwrap.dedent(
        """
        from typing import assert_type
        from code_mode import tool

        @tool
        async def add(a: int, b: int) -> int:
            return a + b

        @tool(name="shout", namespace="text")
        def upper(text: str, *, twice: bool = False) -> str:
            return text.upper() * (2 if twice else 1)

        async def check() -> None:
            assert_type(await add(1, 2), int)
            assert_type(upper("a", twice=True), str)
            assert_type(tool(upper.function)("b"), str)
            await add("one", 2)  # the only error: a str for an int
        """
    )
    status, report = mypy_strict(tmp_path, mypy_cache, source)
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert status == 1, report
    assert len(errors) == 1, report
    assert 'Argument 1 to "__call__" of "PythonTool" has incompatible type "str"' in errors[0]
    assert ":17:" in errors[0], report


@pytest.mark.parametrize(
    ("client", "push"),
    [("OpenAI", False), ("Anthropic", False), ("OpenAI", True), ("Anthropic", True)],
    ids=["openai", "anthropic", "openai-push", "anthropic-push"],
)
def test_agent_md_loops_pass_mypy_strict_with_the_sdks(
    client: str, push: bool, tmp_path: Path, mypy_cache: Path
) -> None:
    """docs/agent.md's SDK loops, each a program of its own, type-check against the
    installed OpenAI and Anthropic SDKs: the adapters return the SDKs' param types."""
    page = [
        b
        for b in blocks(ROOT / "docs" / "agent.md")
        if b.language == "python" and b.not_run is None
    ]
    (loop,) = [
        b.code
        for b in page
        if f"client = {client}()" in b.code and ("pushed.receive()" in b.code) == push
    ]
    status, report = mypy_strict(tmp_path, mypy_cache, loop)
    assert status == 0, report
