"""The configurable limit of a rendered input type: ``max(16000, configured, the MCP
server's)``, as the reference computes it (openai/codex
``codex-rs/tools/src/code_mode.rs`` ``effective_input_schema_max_bytes``, mirror
wallentx/codex-termux at ca44e7e9ac604d0002efe43010bbd26770e41eea)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from code_mode import JSON, ToolDefinition, ToolKind, ToolName, Toolset
from code_mode.integrations.mcp import parse_mcp_config
from code_mode.integrations.mcp._config import McpConfigError
from code_mode.model_tools.typescript import (
    MAX_RENDERED_BYTES,
    input_schema_max_bytes,
    render_input_type,
)


@attrs.frozen
class _Tool:
    definition: ToolDefinition

    async def call(self, input: JSON) -> JSON:
        return None


def _definition(schema: dict[str, Any] | None = None, limit: int | None = None) -> ToolDefinition:
    return ToolDefinition(
        name="bounded",
        tool_name=ToolName("bounded"),
        description="Bounded lookup",
        kind=ToolKind.FUNCTION,
        input_schema=schema,
        input_schema_max_bytes=limit,
    )


def _large_schema() -> dict[str, Any]:
    """An input schema whose TypeScript is longer than 16 000 characters."""
    properties = {
        f"value{index}": {"type": "integer", "minimum": 0, "maximum": 2**64 - 1}
        for index in range(1024)
    }
    return {"type": "object", "properties": properties}


# Port of `code_mode_input_schema_uses_the_larger_budget` (codex-rs/tools/src/
# code_mode_tests.rs at ca44e7e9ac604d0002efe43010bbd26770e41eea).
@pytest.mark.parametrize(
    ("mcp", "code_mode", "expected"),
    [
        (None, None, MAX_RENDERED_BYTES),
        (5_000, 1_000, MAX_RENDERED_BYTES),
        (None, 1_000, MAX_RENDERED_BYTES),
        (30_000, 20_000, 30_000),
        (20_000, 30_000, 30_000),
    ],
)
def test_code_mode_input_schema_uses_the_larger_budget(
    mcp: int | None, code_mode: int | None, expected: int
) -> None:
    toolset = Toolset.build([_Tool(_definition(limit=mcp))], input_schema_max_bytes=code_mode)
    assert input_schema_max_bytes(toolset.definitions[0]) == expected
    assert MAX_RENDERED_BYTES == 16_000


def test_a_larger_budget_shows_a_type_the_default_hides() -> None:
    schema = _large_schema()
    rendered = render_input_type(_definition(schema, limit=100_000))
    assert MAX_RENDERED_BYTES < len(rendered) < 100_000
    assert "value1023?: number;" in rendered
    assert render_input_type(_definition(schema)) == "unknown"
    # Configured on the session's tools, or by the tool's MCP server: the larger counts.
    described = Toolset.build([_Tool(_definition(schema))], input_schema_max_bytes=len(rendered))
    assert "value1023?: number;" in described.exec_tool().description
    assert "value1023?: number;" in described.enabled[0].description
    short = Toolset.build(
        [_Tool(_definition(schema, limit=len(rendered)))], input_schema_max_bytes=1
    )
    assert "value1023?: number;" in short.exec_tool().description
    exact = _definition(schema, limit=len(rendered) - 1)
    assert render_input_type(exact) == "unknown"


def test_the_configured_budget_is_checked() -> None:
    for bad in (0, -1, 1.5, "1"):
        with pytest.raises(ValueError, match="input_schema_max_bytes must be a positive"):
            Toolset.build([], input_schema_max_bytes=bad)  # type: ignore[arg-type]


def test_an_mcp_server_sets_the_limit_of_its_tools() -> None:
    servers = parse_mcp_config(
        {
            "mcpServers": {
                "big": {"command": "x", "tool_input_schema_max_bytes": 40_000},
                "web": {"url": "http://127.0.0.1:1/mcp", "tool_input_schema_max_bytes": 20_000},
                "plain": {"command": "y"},
            }
        }
    )
    assert [s.tool_input_schema_max_bytes for s in servers] == [40_000, 20_000, None]
    for bad in (0, True, "10", 1.0):
        with pytest.raises(McpConfigError, match="`tool_input_schema_max_bytes` must be"):
            parse_mcp_config(
                {"mcpServers": {"s": {"command": "x", "tool_input_schema_max_bytes": bad}}}
            )


def test_an_mcp_tool_carries_its_servers_limit() -> None:
    from mcp import types

    from code_mode.integrations.mcp import McpTool

    listed = types.Tool(name="find", inputSchema={"type": "object"})
    tool = McpTool.from_tool(None, "big", listed, input_schema_max_bytes=40_000)  # type: ignore[arg-type]
    assert tool.definition.input_schema_max_bytes == 40_000
    assert McpTool.from_tool(None, "big", listed).definition.input_schema_max_bytes is None  # type: ignore[arg-type]
