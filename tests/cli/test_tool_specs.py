"""``--tools`` finds tools as uvicorn and FastMCP find apps (``code_mode.cli.tool_specs``):
``module:attr`` from the current folder too, ``path/to/file.py:attr`` from anywhere."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import trio
from mcp import ClientSession, StdioServerParameters, stdio_client

from code_mode import PythonTool
from code_mode.cli.tool_specs import load_tools

from ..helpers import SAFETY

ROOT = Path(__file__).resolve().parents[2]

TOOLS_FILE = textwrap.dedent(
    '''
    from code_mode import tool
    from helper_module import OFFSET  # a neighbour of this file

    @tool
    async def shift(x: int) -> int:
        """Add the offset."""
        return x + OFFSET

    tools = [shift]

    class registry:
        tools = (shift,)
    '''
)


@pytest.fixture
def tools_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "helper_module.py").write_text("OFFSET = 100\n")
    (folder / "mytools_spec_test.py").write_text(TOOLS_FILE)
    (folder / "t.py").write_text(TOOLS_FILE)
    # Each test imports these afresh, whatever an earlier one left in sys.modules.
    for name in ("helper_module", "mytools_spec_test"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return folder


def test_a_module_is_imported_from_the_current_folder(
    tools_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tools_folder)
    [shift] = load_tools("mytools_spec_test:tools")
    assert isinstance(shift, PythonTool)
    assert shift.definition.name == "shift"


def test_a_file_is_loaded_from_any_folder(
    tools_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    [by_absolute] = load_tools(f"{tools_folder / 't.py'}:tools")
    [by_relative] = load_tools("../project/t.py:tools")
    assert by_absolute.definition.name == by_relative.definition.name == "shift"


def test_a_dotted_attribute_and_a_single_tool(
    tools_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tools_folder)
    [single] = load_tools("./t.py:shift")
    [dotted] = load_tools("./t.py:registry.tools")
    assert single is dotted
    assert single.definition.name == "shift"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nothing_here", r"expects `pkg.module:attribute` or `path/to/file.py:attribute`"),
        (":tools", r"expects `pkg.module:attribute`"),
        ("no_such_module_xyz:tools", r"cannot import no_such_module_xyz: .*looked in the current"),
        ("./missing.py:tools", r"no Python file at .*missing.py"),
        ("./t.py:absent", r"\./t\.py has no attribute `absent`"),
        ("mytools_spec_test:absent", r"mytools_spec_test has no attribute `absent`"),
    ],
)
def test_errors_name_what_was_tried(
    spec: str, message: str, tools_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tools_folder)
    with pytest.raises(ValueError, match=message):
        load_tools(spec)


def test_a_file_that_fails_to_import_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ValueError, match=r"importing .*broken.py failed: RuntimeError\('boom'\)"):
        load_tools(f"{broken}:tools")


async def _call_shift_over_stdio(cwd: Path, spec: str) -> str:
    """Start ``code-mode mcp serve --tools spec`` as an MCP host does: the SDK's stdio
    client with its default environment (no ``PYTHONPATH``), in ``cwd``."""
    script = Path(sys.executable).parent / "code-mode"  # the installed command
    command, args = (str(script), []) if script.exists() else (sys.executable, ["-m", "code_mode"])
    parameters = StdioServerParameters(
        command=command, args=[*args, "mcp", "serve", "--tools", spec], cwd=cwd
    )
    with trio.fail_after(SAFETY):
        async with stdio_client(parameters) as streams, ClientSession(*streams) as session:
            await session.initialize()
            result = await session.call_tool("exec", {"code": "text(await tools.shift({x: 1}))"})
    assert not result.is_error, result
    [content] = result.content  # all of the text in one item, the output after `Output:`
    return getattr(content, "text", "").partition("\nOutput:\n")[2]


async def test_an_sdk_client_in_another_folder_serves_a_file_spec(
    tools_folder: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "host"
    elsewhere.mkdir()
    (elsewhere / "t.py").write_text((tools_folder / "t.py").read_text())
    (elsewhere / "helper_module.py").write_text("OFFSET = 100\n")
    assert await _call_shift_over_stdio(elsewhere, "./t.py:tools") == "101"


async def test_an_sdk_client_in_the_project_folder_serves_a_module_spec(
    tools_folder: Path,
) -> None:
    assert await _call_shift_over_stdio(tools_folder, "mytools_spec_test:tools") == "101"


def test_the_documented_host_entries_name_a_file_spec() -> None:
    """docs/mcp.md's Claude Desktop and VS Code entries use the form that works from a
    host's folder and environment (a file path), and parse as JSON."""
    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    blocks = [json.loads(block) for block in _json_blocks(doc) if '"code-mode"' in block]
    entries = [b.get("mcpServers", b.get("servers", {}))["code-mode"] for b in blocks]
    assert len(entries) == 2
    for entry in entries:
        assert entry["command"] == "code-mode"
        spec = entry["args"][entry["args"].index("--tools") + 1]
        assert spec.partition(":")[0].endswith(".py")


def _json_blocks(doc: str) -> list[str]:
    return re.findall(r"```json\n(.*?)```", doc, flags=re.DOTALL)
