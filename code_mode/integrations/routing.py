"""What a nested tool is, and routing a program's tool calls to the tools that serve them.

Every tool source (``@tool`` functions, MCP servers, a hand-written class) gives the
same two things: a :class:`~code_mode.ToolDefinition` and an async ``call``. A
:class:`ToolRouter` maps the ``ToolName`` of a program's call to its tool; the façade
and the ``code-mode run`` command both route through one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from .._types import JSON, NestedToolCall, ToolDefinition, ToolName

__all__ = ["NestedTool", "ToolRouter"]


@runtime_checkable
class NestedTool(Protocol):
    """What :class:`~code_mode.CodeModeSession` accepts as a tool: a definition and an
    async ``call``. :class:`~code_mode.PythonTool` (from ``@tool``) is one; an MCP bridge
    or a hand-written class can be another.

    ``call`` gets the program's input (JSON data; ``None`` when the program passed
    none) and returns JSON data. Raising any ``Exception`` rejects the program's promise
    with ``str(exception)``.
    """

    @property
    def definition(self) -> ToolDefinition: ...

    async def call(self, input: JSON) -> JSON: ...


class ToolRouter:
    """Nested tools by ``ToolName``; the first of two with one name is kept (callers
    that must refuse duplicates check before, as the façade does)."""

    def __init__(self, tools: Iterable[NestedTool]) -> None:
        self._tools: dict[ToolName, NestedTool] = {}
        for nested in tools:
            self._tools.setdefault(nested.definition.tool_name, nested)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tools' definitions, in the order given."""
        return [nested.definition for nested in self._tools.values()]

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        """Run the tool the call names (``ValueError`` if none: the runtime only routes
        enabled tools, so that is a host's wiring mistake, reported to the program)."""
        nested = self._tools.get(call.tool_name)
        if nested is None:
            raise ValueError(f"tool `{call.tool_name.display()}` is not available")
        return await nested.call(call.input)
