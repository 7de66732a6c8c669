"""Tool definitions and schemas the model-tools tests share."""

from __future__ import annotations

from typing import Any

from code_mode import ToolDefinition, ToolKind, ToolName


def mcp_result_schema(structured: Any = None) -> dict[str, Any]:
    """The output schema of an MCP tool's ``CallToolResult``, with ``structured`` as
    its ``structuredContent`` when given (as an MCP client builds it)."""
    properties: dict[str, Any] = {
        "content": {"type": "array", "items": {"type": "object"}},
        "isError": {"type": "boolean"},
        "_meta": {"type": "object"},
    }
    if structured is not None:
        properties["structuredContent"] = structured
    return {"type": "object", "properties": properties, "required": ["content"]}


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
