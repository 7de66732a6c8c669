"""The generated ``exec`` and ``wait`` descriptions.

The full ``exec`` description for a representative tool set is pinned by a golden file;
regenerate it after an intended change with ``UPDATE_GOLDEN=1 pytest tests/model_tools``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from code_mode import ToolDefinition, ToolKind, ToolName
from code_mode.model_tools.descriptions import (
    NamespaceDescription,
    augment_tool_definition,
    exec_description,
    tool_reference,
    tool_sample,
    wait_description,
)
from code_mode.model_tools.mcp_results import MCP_TYPES_PREAMBLE
from code_mode.model_tools.typescript import tool_declaration

GOLDEN = Path(__file__).parent / "golden" / "exec_description.txt"


def _tool(
    name: str,
    description: str = "",
    *,
    namespace: str | None = None,
    kind: ToolKind = ToolKind.FUNCTION,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        tool_name=ToolName(name, namespace),
        description=description,
        kind=kind,
        input_schema=input_schema,
        output_schema=output_schema,
    )


def _mcp_result(structured: dict[str, Any] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "content": {"type": "array", "items": {"type": "object"}},
        "isError": {"type": "boolean"},
        "_meta": {"type": "object"},
    }
    if structured is not None:
        properties["structuredContent"] = structured
    return {"type": "object", "properties": properties, "required": ["content"]}


NAMESPACES = {
    "mcp__docs__": NamespaceDescription(
        "mcp__docs", "  Search and read the team's documentation.\nRead-only.  "
    ),
    "mcp__tracker__": NamespaceDescription("mcp__tracker", "Issue tracker of the project."),
    "mcp__quiet__": NamespaceDescription("mcp__quiet", "   "),
}

TOOLS = [
    _tool(
        "get_weather",
        "Current weather for a city.",
        input_schema={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. `Paris`."},
                "units": {"enum": ["metric", "imperial"]},
                "days": {"type": "integer", "description": "Forecast days.\nAt most 7."},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "temperature": {"type": "number"},
                "conditions": {"type": ["string", "null"]},
                "alerts": {"type": "array", "items": {"$ref": "#/$defs/Alert"}},
            },
            "required": ["temperature"],
            "$defs": {
                "Alert": {
                    "type": "object",
                    "properties": {
                        "level": {"const": "warning"},
                        "text": {"type": "string"},
                    },
                    "required": ["level", "text"],
                }
            },
        },
    ),
    _tool(
        "apply-patch",
        "Apply a patch in the unified diff format.",
        kind=ToolKind.FREEFORM,
    ),
    _tool(
        "mcp__docs__search",
        "Full-text search over the docs.",
        namespace="mcp__docs__",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"type": "string"}},
                        {"type": "null"},
                    ]
                },
                "page-size": {"type": "integer"},
                "range": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                },
            },
            "required": ["query"],
        },
        output_schema=_mcp_result(
            {
                "type": "object",
                "properties": {
                    "hits": {
                        "type": "array",
                        "items": {
                            "allOf": [
                                {"$ref": "#/$defs/Doc"},
                                {"properties": {"score": {"type": "number"}}},
                            ]
                        },
                    }
                },
                "required": ["hits"],
            }
        )
        | {
            "$defs": {
                "Doc": {
                    "properties": {"id": {"type": "string"}, "title": {"type": "string"}},
                    "required": ["id"],
                }
            }
        },
    ),
    _tool(
        "mcp__docs__read",
        "Read one page.",
        namespace="mcp__docs__",
        input_schema={
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "section": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            },
            "required": ["id"],
        },
        output_schema=_mcp_result(),
    ),
    _tool(
        "mcp__tracker__create_issue",
        "Open an issue.",
        namespace="mcp__tracker__",
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "parent": {"$ref": "#/$defs/Issue"},
                "extra": True,
            },
            "required": ["title"],
            "additionalProperties": True,
            "$defs": {
                "Issue": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "parent": {"$ref": "#/$defs/Issue"}},
                    "required": ["id"],
                }
            },
        },
        output_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        },
    ),
    _tool("mcp__quiet__ping", "Ping.", namespace="mcp__quiet__"),
    _tool("1st-tool", "", input_schema={"type": "object"}, output_schema={"type": "string"}),
    _tool(
        "mcp__docs__feedback",
        "Send feedback (back in the docs namespace).",
        namespace="mcp__docs__",
        input_schema={
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
        output_schema=False,  # type: ignore[arg-type]
    ),
]


def test_exec_description_golden() -> None:
    description = exec_description(TOOLS, namespace_descriptions=NAMESPACES)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(description, encoding="utf-8")
    assert description == GOLDEN.read_text(encoding="utf-8")


def test_description_parts_in_order() -> None:
    description = exec_description(TOOLS, namespace_descriptions=NAMESPACES)
    assert description.startswith("Run a JavaScript program")
    shared = description.index("Shared MCP Types:\n```ts\n" + MCP_TYPES_PREAMBLE + "\n```")
    tools = description.index("\n\n# Tools\n\n")
    assert shared < tools
    assert description.count("Shared MCP Types:") == 1


def test_guide_mentions_every_global_and_the_pragma() -> None:
    description = exec_description([])
    for name in (
        "tools.",
        "ALL_TOOLS",
        "text(",
        "image(",
        "forward_output(",
        "console.log(",
        "notify(",
        "store(",
        "load(",
        "setTimeout(",
        "clearTimeout(",
        "yield_control(",
        "exit(",
        '// @exec: {"yield_time_ms": 10000, "max_output_tokens": 1000}',
        "yield_time_ms` (default 10000)",
        "max_output_tokens` (default 10000)",
        "raw JavaScript",
        "fresh V8 isolate",
        "top-level `await`",
        "Script running with cell ID <id>",
    ):
        assert name in description, name
    assert "# Tools" not in description
    assert "Shared MCP Types" not in description


def test_reference_blocks() -> None:
    reference = tool_reference(TOOLS, NAMESPACES)
    blocks = reference.split("\n\n")
    assert "### `get_weather`\nCurrent weather for a city." in reference
    assert "### `apply_patch` (`apply-patch`)\nApply a patch" in reference
    assert "apply_patch(input: string): Promise<unknown>;" in reference
    assert "## mcp__docs\nSearch and read the team's documentation.\nRead-only." in blocks
    # A namespace with a blank description has no heading; a returning one repeats it.
    assert "## mcp__quiet" not in reference
    assert reference.count("## mcp__docs\n") == 2
    assert reference.count("## mcp__tracker\n") == 1
    # An empty description still gets its declaration.
    assert "### `_st_tool` (`1st-tool`)\nexec tool declaration:\n```ts\n" in reference


def test_tool_without_schemas_block() -> None:
    reference = tool_reference([_tool("foo", "bar")])
    assert reference == (
        "### `foo`\nbar\n\nexec tool declaration:\n```ts\n"
        "declare const tools: { foo(args: unknown): Promise<unknown>; };\n```"
    )


def test_unknown_namespace_key_gets_no_heading() -> None:
    reference = tool_reference([_tool("x", "d", namespace="nowhere")], NAMESPACES)
    assert reference.startswith("### `x`\nd")


def test_sample_and_augment() -> None:
    tool = TOOLS[0]
    sample = tool_sample(tool)
    assert sample == (
        f"{tool.description}\n\nexec tool declaration:\n```ts\n{tool_declaration(tool)}\n```"
    )
    augmented = augment_tool_definition(tool)
    assert augmented.description == sample
    assert augmented.name == tool.name and augmented.input_schema == tool.input_schema


def test_deferred_mode_is_short_and_explains_search() -> None:
    description = exec_description(TOOLS, namespace_descriptions=NAMESPACES, deferred=True)
    full = exec_description(TOOLS, namespace_descriptions=NAMESPACES)
    assert len(description) < len(full)
    assert "# Tools" not in description
    assert "declare const tools" not in description
    # The reference's facts of the interface, which models were trained on.
    assert "Some nested tools (8 tools) are omitted from this description" in description
    assert "they remain available on `tools` and in `ALL_TOOLS`" in description
    assert "filter `ALL_TOOLS` by `name` and `description`" in description
    assert "ALL_TOOLS.filter(" in description
    assert "print only a few matches" in description
    assert "- mcp__docs: Search and read the team's documentation." in description
    assert "- mcp__tracker: Issue tracker of the project." in description
    assert "Shared MCP Types:" in description  # a fixed cost, still useful for results


def test_deferred_without_mcp_tools() -> None:
    description = exec_description([_tool("a", "b")], deferred=True)
    assert "Some nested tools (1 tool) are omitted from this description" in description
    assert "Shared MCP Types" not in description
    assert "Tool groups" not in description


def test_code_argument_wording() -> None:
    description = exec_description([], code_argument="code")
    assert "Put the program's JavaScript source in the `code` argument" in description
    assert "not JSON" not in description
    assert "not JSON" in exec_description([])


def test_wait_description() -> None:
    description = wait_description()
    for fragment in (
        "Script running with cell ID <id>",
        "`cell_id`",
        "`yield_time_ms` (default 10000)",
        "`max_tokens` (default 10000)",
        "`terminate: true`",
        "only the output produced since the previous result",
        "`Script completed`, `Script failed` or `Script terminated`",
        "exec cell <id> not found",
    ):
        assert fragment in description, fragment
    assert all(line.startswith("- ") for line in description.splitlines()[1:])
