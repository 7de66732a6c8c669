"""Descriptions true of this host (issue 27), tool search and the timing header through
``CodeModeSession`` (issue 28).

No description names a tool or a concept the host lacks; each promise the ``exec``
text makes about tools is checked by running a program. The timing header is the
reference's (openai/codex #46288; its test ``..._distinguishes_zero_from_unavailable``
in ``core/src/tools/code_mode`` pins ``Wall time 1.250 seconds (code-mode 0.750
seconds; overhead 0.500 seconds)``).
"""

from __future__ import annotations

import re

import pytest

from code_mode import CodeModeSession, Text, Toolset, tool
from code_mode.model_tools.formatting import result_header


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def get_weather(city: str) -> str:
    """Current weather forecast for a city."""
    return f"sunny in {city}"


ABSENT = ["exec_command", "mcp__ologs", "get_profile", "custom_tool_call_output"]


def _descriptions(cm: CodeModeSession) -> dict[str, str]:
    openai_exec, openai_wait = cm.openai_tools()
    anthropic_exec, anthropic_wait = cm.anthropic_tools()
    mcp_exec, mcp_wait = cm.mcp_tools()
    return {
        "exec_tool": cm.exec_tool.description,
        "openai": openai_exec["description"] + openai_wait["description"],
        "anthropic": anthropic_exec["description"] + anthropic_wait["description"],
        "mcp": mcp_exec["description"] + mcp_wait["description"],
    }


@pytest.mark.parametrize("deferred", [False, True])
@pytest.mark.parametrize("search", [False, True])
def test_no_description_names_what_the_host_lacks(deferred: bool, search: bool) -> None:
    cm = CodeModeSession(tools=[add], deferred=deferred, tool_search=search)
    for api, text in _descriptions(cm).items():
        for word in ABSENT:
            assert word not in text, (api, word)
        if deferred:
            # The text names no tool of the catalog, which may change (issue 35, item 6);
            # its MCP parts are configuration, there by default (for the OpenAI
            # Responses API, which alone carries an image's detail level, with it).
            assert "tools.add" not in text, api
            assert ("codex/imageDetail" in text) == (api in ("exec_tool", "openai")), api
        else:
            # The examples are this session's tools, and a session whose tools return
            # no MCP result hears nothing of MCP (issue 35, item 6).
            assert "`await tools.add(...)`" in text
            assert "MCP" not in text and "codex/imageDetail" not in text, api
        if not search:
            assert "tool_search" not in text


def test_a_deferred_toolset_without_mcp_names_no_mcp() -> None:
    toolset = Toolset.build([add], deferred=True, mcp=False)
    for api, text in _descriptions(CodeModeSession(tools=toolset)).items():
        assert "MCP" not in text and "codex/" not in text, api
        assert "tools.add" not in text, api


async def test_the_texts_promises_about_tools_hold() -> None:
    async with CodeModeSession(tools=[add]) as cm:
        text = cm.exec_tool.description
        # "Nested tool methods take an object as their input argument."
        assert "- Nested tool methods take an object as their input argument." in text
        ok = await cm.exec("text(await tools.add({a: 1, b: 2}));")
        assert ok[1:] == [Text("3")]
        refused = await cm.exec('try { await tools.add("1 2"); } catch (e) { text(e); }')
        assert refused[1:] == [Text("tool `add` expects a JSON object for arguments")]
        # "Nested tools return JSON data (an object, a string, a number, ...)"
        typed = await cm.exec("text(typeof (await tools.add({a: 1, b: 1})));")
        assert typed[1:] == [Text("number")]
        # "ALL_TOOLS: metadata for the enabled nested tools as { name, description }"
        listed = await cm.exec("text(ALL_TOOLS.map((t) => Object.keys(t).join()));")
        assert listed[1:] == [Text('["name,description"]')]


async def test_notify_sends_the_host_a_notification() -> None:
    """The ``notify`` line: "immediately sends the host a notification for the current
    ``exec`` call"."""
    seen = []
    async with CodeModeSession(tools=[add], on_notify=seen.append) as cm:
        await cm.exec('notify("hi");', call_id="call-9")
    assert [(n.call_id, n.text) for n in seen] == [("call-9", "hi")]


async def test_tool_search_finds_tools_from_a_program() -> None:
    async with CodeModeSession(tools=[add, get_weather], tool_search=True) as cm:
        assert "`await tools.tool_search(" in cm.exec_tool.description
        found = await cm.exec(
            'const r = await tools.tool_search({query: "weather forecast", limit: 8});\n'
            "text(r.tools.map((t) => t.name));\n"
            "text(r.tools[0].description.includes('get_weather(args: { city: string; })'));"
        )
        assert found[1:] == [Text('["get_weather"]'), Text("true")]
        errors = await cm.exec(
            'for (const a of [{query: ""}, {query: "x", limit: 0}]) {\n'
            "  try { await tools.tool_search(a); } catch (e) { text(e); }\n}"
        )
        assert errors[1:] == [
            Text("query must not be empty"),
            Text("limit must be greater than zero"),
        ]
        names = await cm.exec("text(ALL_TOOLS.map((t) => t.name));")
        assert names[1:] == [Text('["add","get_weather","tool_search"]')]


async def test_tool_search_is_off_by_default_and_its_name_is_reserved() -> None:
    async with CodeModeSession(tools=[add]) as cm:
        result = await cm.exec(
            "try { await tools.tool_search({query: 'add'}); } catch (e) { text(e); }"
        )
        assert result[1:] == [Text("tool `tool_search` is not enabled in exec")]

    @tool
    async def tool_search(query: str) -> str:
        """Mine."""
        return query

    with pytest.raises(ValueError, match="cannot be named `tool_search`"):
        CodeModeSession(tools=[tool_search], tool_search=True)


def test_timing_header_is_the_references() -> None:
    assert result_header("Script failed", 1.25, 0.75) == (
        "Script failed\nWall time 1.250 seconds (code-mode 0.750 seconds; overhead 0.500 "
        "seconds)\nOutput:\n"
    )
    assert "(code-mode 0.000 seconds; overhead 1.250 seconds)" in result_header("s", 1.25, 0.0)
    assert "(code-mode 1.251 seconds; overhead -0.001 seconds)" in result_header("s", 1.25, 1.2514)
    assert result_header("s", 1.25) == "s\nWall time 1.2 seconds\nOutput:\n"


async def test_show_cell_overhead_is_opt_in() -> None:
    timed = re.compile(
        r"Script completed\nWall time (\d+\.\d{3}) seconds \(code-mode (\d+\.\d{3}) seconds; "
        r"overhead (-?\d+\.\d{3}) seconds\)\nOutput:\n"
    )
    async with CodeModeSession(tools=[add], show_cell_overhead=True) as cm:
        header = (await cm.exec("text(1);"))[0]
        assert isinstance(header, Text)
        match = timed.fullmatch(header.text)
        assert match is not None, header.text
        wall, runtime, overhead = (float(g) for g in match.groups())
        assert runtime <= wall + 0.001 and abs(wall - runtime - overhead) <= 0.002
    async with CodeModeSession(tools=[add]) as cm:
        header = (await cm.exec("text(1);"))[0]
        assert isinstance(header, Text)
        assert re.fullmatch(r"Script completed\nWall time \d+\.\d seconds\nOutput:\n", header.text)
