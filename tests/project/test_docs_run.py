"""Every code block of README.md and docs/*.md runs as written, or says why not.

Python blocks run, in order, in one namespace per page (a page's later blocks use what
its earlier ones define); a top-level ``await`` runs under trio. docs/agent.md's blocks
are whole programs instead: each runs alone, as ``__main__``, in a namespace of its
own, so a reader can copy any one of them into a file and run it; its OpenAI and
Anthropic loops run against fake clients (the SDKs' client classes replaced) that
script the model's replies. JavaScript blocks run as programs (README's with ``code-mode run``). The
TypeScript declaration is what the renderer prints. A block that is a fragment carries
``<!-- not run: <why> -->`` on the line before it; shell commands, JSON and text
listings are shown, not run. docs/mcp.md's Python examples run in
tests/mcp_server/test_docs.py.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from code_mode import CodeModeSession, Text, tool

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"python", "javascript"}
SHOWN = {"bash", "sh", "json", "text", ""}
MARKER = re.compile(r"<!-- not run: (.+) -->")


@attrs.frozen
class Block:
    page: Path
    line: int
    language: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)```(\w*)\s*$", lines[index])
        if opening is None:
            index += 1
            continue
        indent, language = opening.groups()
        end = index + 1
        while not lines[end].startswith(f"{indent}```"):
            end += 1
        code = "\n".join(line[len(indent) :] for line in lines[index + 1 : end]) + "\n"
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marker = MARKER.search(before)
        found.append(Block(page, index + 1, language, code, marker[1] if marker else None))
        index = end + 1
    return found


def run_python(page: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run ``page``'s Python blocks in order in one namespace; return it."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for block in blocks(page):
        if block.language != "python" or block.not_run is not None:
            continue
        code = compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if code.co_flags & inspect.CO_COROUTINE:
            coroutine = types.FunctionType(code, namespace)()

            async def awaited(coroutine: Any = coroutine) -> None:
                await coroutine

            trio.run(awaited)
        else:
            exec(code, namespace)
    return namespace


def test_every_block_is_run_or_says_why_not() -> None:
    marked = []
    for page in PAGES:
        for block in blocks(page):
            if block.not_run is not None:
                marked.append(block.where)
            elif block.language in {"ts"}:
                continue  # checked against the renderer below
            else:
                assert block.language in RUN | SHOWN, f"{block.where}: ```{block.language}"
    assert len(marked) <= 3, marked  # fragments stay the exception


def test_readme_python_blocks_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_python(ROOT / "README.md", monkeypatch)
    out = capsys.readouterr().out
    assert "42" in out and "OK" in out and "Completed [Text(text='more')]" in out, out


def test_readme_javascript_runs_with_code_mode_run(tmp_path: Path) -> None:
    (program,) = [b for b in blocks(ROOT / "README.md") if b.language == "javascript"]
    path = tmp_path / "example.js"
    path.write_text(program.code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "code_mode", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result
    assert "== Failed" not in result.stdout and "Lima:" in result.stdout, result.stdout


@tool
async def get_weather(city: str) -> dict[str, str]:
    """A stand-in for the docs' weather tool."""
    return {"city": city, "summary": "sunny"}


@tool
async def search(q: str) -> list[str]:
    """A stand-in for the docs' search tool."""
    return [q]


async def test_programs_md_javascript_blocks_run() -> None:
    programs = [b for b in blocks(ROOT / "docs" / "programs.md") if b.language == "javascript"]
    assert programs
    async with CodeModeSession(tools=[get_weather, search], tool_search=True) as cm:
        for block in programs:
            result = await cm.exec(block.code)
            assert isinstance(result[0], Text)
            assert result[0].text.startswith("Script completed"), (block.where, result)


AGENT_MD = ROOT / "docs" / "agent.md"


def run_alone(block: Block) -> dict[str, Any]:
    """Run ``block`` as a program of its own (``python block.py``): a fresh namespace,
    ``__name__ == "__main__"``, no top-level ``await``. Returns the namespace."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(block.code, block.where, "exec"), namespace)
    return namespace


def agent_programs(*has: str, lacks: str = "\0") -> list[Block]:
    """docs/agent.md's Python blocks that have each of ``has`` and not ``lacks``."""
    return [
        block
        for block in blocks(AGENT_MD)
        if block.language == "python"
        and all(text in block.code for text in has)
        and lacks not in block.code
    ]


def test_every_agent_md_block_is_a_program_of_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each Python block of docs/agent.md runs alone, with what it needs in the block
    itself (the loops, which call a model's API, run in the tests below)."""
    programs = agent_programs()
    assert len(programs) >= 8
    for block in programs:
        assert block.not_run is None, block.where
        if "client = " not in block.code:
            run_alone(block)
    assert capsys.readouterr().out.splitlines()[-1] == "done"  # the pydantic-ai agent


def test_agent_md_typescript_is_what_the_renderer_prints() -> None:
    first = agent_programs()[0]  # the @tool block the declaration shows
    (declaration,) = [b for b in blocks(AGENT_MD) if b.language == "ts"]
    description = CodeModeSession(tools=[run_alone(first)["search"]]).exec_tool.description
    assert declaration.code.strip() in description


# -- the SDK loops, with scripted clients --------------------------------------------


def _ns(**fields: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**fields)


class _FakeOpenAI:
    """``client.responses.create`` returning scripted responses; records inputs."""

    def __init__(self, replies: list[list[types.SimpleNamespace]], final: str) -> None:
        self.replies = replies
        self.final = final
        self.inputs: list[list[Any]] = []
        self.responses = self

    def create(self, **request: Any) -> types.SimpleNamespace:
        self.inputs.append(list(request["input"]))
        output = self.replies.pop(0) if self.replies else []
        return _ns(output=output, output_text=self.final)


class _FakeAnthropic:
    def __init__(self, replies: list[list[types.SimpleNamespace]]) -> None:
        self.replies = replies
        self.messages = self
        self.sent: list[list[Any]] = []

    def create(self, **request: Any) -> types.SimpleNamespace:
        self.sent.append(list(request["messages"]))
        return _ns(content=self.replies.pop(0))


def _run_loop(monkeypatch: pytest.MonkeyPatch, block: Block, sdk: str, fake: Any) -> dict[str, Any]:
    """Run a loop block as its own program, its SDK client class replaced by ``fake``."""
    module = __import__(sdk)
    monkeypatch.setattr(module, "OpenAI" if sdk == "openai" else "Anthropic", lambda: fake)
    return run_alone(block)


def test_agent_md_openai_loop_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = agent_programs("client = OpenAI()", lacks="pushed.receive()")
    fake = _FakeOpenAI(
        [[_ns(type="custom_tool_call", name="exec", input="text(6 * 7)", call_id="c1")]],
        final="the answer is 42",
    )
    _run_loop(monkeypatch, block, "openai", fake)
    assert capsys.readouterr().out == "the answer is 42\n"
    output = fake.inputs[1][-1]
    assert output["type"] == "custom_tool_call_output" and "42" in json.dumps(output)


def test_agent_md_anthropic_loop_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = agent_programs("client = Anthropic()", lacks="pushed.receive()")
    fake = _FakeAnthropic(
        [
            [_ns(type="tool_use", name="exec", input={"code": "text(6 * 7)"}, id="u1")],
            [_ns(type="text", text="42 it is")],
        ]
    )
    _run_loop(monkeypatch, block, "anthropic", fake)
    assert capsys.readouterr().out == "42 it is\n"
    result = fake.sent[1][-1]["content"][0]
    assert result["type"] == "tool_result" and "42" in json.dumps(result)


SLOW = '// @exec: {"yield_time_ms": 0}\nawait new Promise(r => setTimeout(r, 100)); text(42)'


def test_agent_md_openai_push_loop_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = agent_programs("client = OpenAI()", "pushed.receive()")
    fake = _FakeOpenAI(
        [[_ns(type="custom_tool_call", name="exec", input=SLOW, call_id="c1")], []],
        final="pushed 42",
    )
    _run_loop(monkeypatch, block, "openai", fake)
    assert capsys.readouterr().out == "pushed 42\n"
    pushed = fake.inputs[2][-1]
    assert pushed["role"] == "user" and "42" in json.dumps(pushed)


def test_agent_md_anthropic_push_loop_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = agent_programs("client = Anthropic()", "pushed.receive()")
    fake = _FakeAnthropic(
        [
            [_ns(type="tool_use", name="exec", input={"code": SLOW}, id="u1")],
            [],  # the model ends its turn while the program runs
            [_ns(type="text", text="pushed 42")],
        ]
    )
    _run_loop(monkeypatch, block, "anthropic", fake)
    assert capsys.readouterr().out == "pushed 42\n"
    pushed = fake.sent[2][-1]
    assert pushed["role"] == "user" and "42" in json.dumps(pushed)
