"""Tool definitions and schemas the model-tools tests share."""

from __future__ import annotations

from typing import Any

from code_mode import ToolDefinition, ToolKind, ToolName
from code_mode.integrations.mcp._client import call_tool_result_schema

#: The output schema of an MCP tool's ``CallToolResult`` (``structuredContent`` as given),
#: as the MCP client side builds it.
mcp_result_schema = call_tool_result_schema


def tool_definition(
    name: str,
    description: str = "",
    *,
    namespace: str | None = None,
    kind: ToolKind = ToolKind.FUNCTION,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
) -> ToolDefinition:
    """A tool definition as a tool source hands it over (``namespace`` is its
    ``ToolName``'s namespace)."""
    return ToolDefinition(
        name=name,
        tool_name=ToolName(name, namespace),
        description=description,
        kind=kind,
        input_schema=input_schema,
        output_schema=output_schema,
    )
