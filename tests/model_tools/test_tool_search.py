"""``tools.tool_search`` (:mod:`code_mode.model_tools.tool_search`) and the description
rules of the reference at ca44e7e9ac60.

Ported: ``top_level_function_search_results_use_the_default_namespace`` and
``default_search_text_uses_model_visible_namespace_metadata_once`` (their search texts;
openai/codex ``codex-rs/tools/src/tool_search_tests.rs``, mirror wallentx/codex-termux
21a6962eac13), and ``exec_description_preserves_discovery_guidance_across_catalog_changes``
(``code-mode-protocol/src/description.rs``), ``mcp_types_stay_stable_when_a_deferred_tool_
changes_its_output_schema`` and ``nested_guidance_survives_catalog_changes_and_respects_
overrides`` (``description_override_tests.rs``), all at ca44e7e9ac60, as far as this
package has their options (no text overrides: the guidance is always the reference's).
"""

from __future__ import annotations

import pytest

from code_mode import ToolDefinition, ToolKind, ToolName, ToolSearch
from code_mode.model_tools.descriptions import exec_description, exec_sections
from code_mode.model_tools.guide_texts import DEFERRED_GUIDANCE, TOOL_SEARCH_GUIDANCE
from code_mode.model_tools.tool_search import search_text, tool_search_definition

MCP_RESULT = {
    "type": "object",
    "properties": {
        "content": {"type": "array", "items": {"type": "object"}},
        "isError": {"type": "boolean"},
        "_meta": {"type": "object"},
    },
}


def _tool(name: str, description: str, **schemas: object) -> ToolDefinition:
    return ToolDefinition(name, ToolName(name), description, ToolKind.FUNCTION, **schemas)  # type: ignore[arg-type]


def test_search_text_of_a_function_tool() -> None:
    assert search_text(_tool("lookup_order", "Look up an order", input_schema={})) == (
        "lookup_order lookup order Look up an order"
    )
    schema = {
        "type": "object",
        "description": "Automation options.",
        "properties": {
            "schedule": {
                "type": "object",
                "description": "Schedule settings.",
                "properties": {"timezone": {"type": "string", "description": "IANA timezone."}},
            },
            "mode": {"type": "string", "description": "Update mode."},
        },
    }
    tool = _tool("automation_update", "Create or update automations.", input_schema=schema)
    assert search_text(tool) == (
        "automation_update automation update Create or update automations. Automation "
        "options. mode Update mode. schedule Schedule settings. timezone IANA timezone."
    )


TOOLS = [
    _tool("add", "Add two integers."),
    _tool("get_weather", "Current weather forecast for a city.", input_schema={
        "type": "object", "properties": {"city": {"type": "string"}}}),
    _tool("send_mail", "Send an email.", input_schema={
        "type": "object", "properties": {"to": {"type": "string", "description": "Recipient"}}}),
    _tool("weather_alerts", "Severe weather alerts."),
]  # fmt: skip


def test_bm25_ranks_best_first_and_respects_the_limit() -> None:
    search = ToolSearch(TOOLS)
    found = search.search("weather forecast city")
    assert [hit["name"] for hit in found] == ["get_weather", "weather_alerts"]
    # "weather" three times in a short text (name, spaced name, description) beats twice.
    assert [hit["name"] for hit in search.search("weather", limit=1)] == ["weather_alerts"]
    assert search.search("recipient")[0]["name"] == "send_mail"  # a property's description
    assert search.search("nothing matches this") == []


def test_results_carry_the_all_tools_description() -> None:
    from code_mode.model_tools.descriptions import NamespaceDescription, augment_tool_definition

    tool = ToolDefinition(
        "mcp__docs__find", ToolName("find", "mcp__docs__"), "Find a page.", ToolKind.FUNCTION
    )
    spaces = {"mcp__docs__": NamespaceDescription("mcp__docs", "The team's docs.")}
    [hit] = ToolSearch([tool], spaces).search("find page")
    assert hit == {
        "name": "mcp__docs__find",
        "description": augment_tool_definition(tool, spaces).description,
    }
    assert hit["description"].startswith(
        "The team's docs.\n\nFind a page.\n\nexec tool declaration:"
    )


async def test_errors_and_the_default_limit() -> None:
    many = [_tool(f"tool_{i}", "common words here") for i in range(12)]
    search = ToolSearch(many)
    assert len((await search.call({"query": "common"}))["tools"]) == 8
    assert len((await search.call({"query": "common", "limit": 3}))["tools"]) == 3
    for arguments, message in [
        ({"query": ""}, "query must not be empty"),
        ({"query": "   "}, "query must not be empty"),
        ({}, "query must not be empty"),
        ({"query": "x", "limit": 0}, "limit must be greater than zero"),
        ({"query": "x", "limit": -2}, "limit must be greater than zero"),
    ]:
        with pytest.raises(ValueError, match=f"^{message}$"):
            await search.call(arguments)


def test_exec_description_preserves_discovery_guidance_across_catalog_changes() -> None:
    """Upstream's test, in this package's terms: the deferred guidance is always there,
    the tool-search paragraph once when the search tool is enabled, and the text does
    not depend on which (non-MCP) tools there are beyond the search tool."""
    deferred = [_tool("deferred_tool", "Deferred tool")]
    for ranked in (False, True):
        enabled = [tool_search_definition()] if ranked else []
        for is_deferred in (False, True):
            description = exec_description([*enabled, *deferred], deferred=is_deferred)
            assert "Some deferred nested tools may be omitted" in description
            assert "filter `ALL_TOOLS` by `name` and `description`" in description
            assert description.count("await tools.tool_search(") == int(ranked)
        # In deferred mode (no tool reference) the catalog does not change the text at
        # all: not even the tools line names a deferred tool (issue 35, item 6).
        assert exec_sections([*enabled, *deferred], deferred=True) == exec_sections(
            enabled, deferred=True
        )


def test_mcp_types_stay_stable_when_a_deferred_tool_changes_its_output_schema() -> None:
    for code_mode_only in (False, True):
        for mcp in (None, True, False):
            before = exec_description(
                [_tool("sample", "Deferred tool")],
                deferred=True,
                code_mode_only=code_mode_only,
                mcp=mcp,
            )
            after = exec_description(
                [_tool("sample", "Deferred tool", output_schema=MCP_RESULT)],
                deferred=True,
                code_mode_only=code_mode_only,
                mcp=mcp,
            )
            assert before == after
            assert before.count("Shared MCP Types:") == int(mcp is not False)


def test_nested_guidance_survives_catalog_changes() -> None:
    guidance = "\n".join(DEFERRED_GUIDANCE)
    assert guidance.endswith("Tool availability can change between calls.")
    for code_mode_only in (False, True):
        empty = exec_sections([], deferred=True, code_mode_only=code_mode_only)
        full = exec_sections(
            [_tool("deferred_echo", "Echo a value.")], deferred=True, code_mode_only=code_mode_only
        )
        assert empty[1] == full[1] == guidance
    assert tool_search_definition().description == TOOL_SEARCH_GUIDANCE
