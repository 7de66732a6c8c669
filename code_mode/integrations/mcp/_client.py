"""Client side: the tools of a connected MCP server as nested tools.

Every tool of the server (all pages of ``tools/list``) becomes an :class:`McpTool`
named ``mcp__<server>__<tool>``, the convention models already know from other code
mode hosts. Its declaration in the ``exec`` description is typed with the shared
``CallToolResult<T>`` (``T`` the tool's ``outputSchema``), and a program receives the
result object itself (``content``, ``structuredContent``, ``isError``), which
``text()``, ``image()`` and ``forward_output()`` accept as they are.
"""

from __future__ import annotations

from typing import Any, Final

import anyio
import attrs
import mcp.types as types
from mcp import ClientSession, MCPError

from ..._types import JSON, ToolDefinition, ToolKind, ToolName

__all__ = [
    "MCP_NAMESPACE_PREFIX",
    "McpTool",
    "McpToolError",
    "call_tool_result_schema",
    "list_mcp_tools",
    "mcp_namespace",
]

MCP_NAMESPACE_PREFIX: Final = "mcp"
"""Tools of server ``fs`` live in namespace ``mcp__fs``: raw names ``mcp__fs__<tool>``."""

MAX_TOOL_PAGES: Final = 1000
"""How many ``tools/list`` pages are read before giving up on a server whose cursors
never end (a broken server must not hang the session's start)."""

_TRANSPORT_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class McpToolError(Exception):
    """A call to an MCP tool failed; ``str()`` is the message the program sees."""


def mcp_namespace(server: str) -> str:
    """The tool namespace of MCP server ``server``: ``mcp__<server>``."""
    return f"{MCP_NAMESPACE_PREFIX}__{server}"


def call_tool_result_schema(structured: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema of an MCP ``CallToolResult`` whose ``structuredContent`` follows
    ``structured`` (any value when ``None``).

    It is the shape the ``exec`` description recognises as an MCP result: the tool is
    then declared as returning ``CallToolResult<T>`` and the shared MCP types are
    shown once, instead of spelling the envelope out for every tool."""
    properties: dict[str, Any] = {
        "content": {"type": "array", "items": {"type": "object"}},
        "isError": {"type": "boolean"},
        "_meta": {"type": "object"},
    }
    if structured is not None:
        properties["structuredContent"] = structured
    return {"type": "object", "properties": properties, "required": ["content"]}


def _result_json(result: types.CallToolResult) -> JSON:
    """The result as the program sees it: ``{content, isError, structuredContent?,
    _meta?}``, content blocks in their wire form."""
    data: dict[str, JSON] = {
        "content": [
            block.model_dump(by_alias=True, mode="json", exclude_none=True)
            for block in result.content
        ],
        "isError": bool(result.is_error),
    }
    if result.structured_content is not None:
        data["structuredContent"] = result.structured_content
    if result.meta is not None:
        data["_meta"] = result.meta
    return data


def _is_idempotent(tool: types.Tool) -> bool:
    """Whether calling ``tool`` twice has the effect of calling it once, by the MCP
    spec's tool annotations: ``readOnlyHint`` or ``idempotentHint`` true. The spec's
    default for ``idempotentHint`` is false, so a tool without annotations is not
    idempotent: a call of it in flight when its cell's server dies fails the resumed
    cell rather than reaching the upstream server twice."""
    annotations = tool.annotations
    if annotations is None:
        return False
    return annotations.read_only_hint is True or annotations.idempotent_hint is True


@attrs.frozen(eq=False)
class McpTool:
    """One tool of an MCP server, callable from programs as a nested tool.

    Made by :func:`list_mcp_tools`. ``call`` sends ``tools/call`` on ``session`` and
    resolves the program's promise with the ``CallToolResult`` as JSON data; a
    result with ``isError: true`` is still a result (the program decides what to do),
    while a JSON-RPC error or a broken connection rejects the promise with the
    server's message. Terminating the program cancels the request, and the SDK tells
    the server so (``notifications/cancelled``).
    """

    session: ClientSession
    server: str
    tool: types.Tool
    definition: ToolDefinition

    @classmethod
    def from_tool(
        cls,
        session: ClientSession,
        server: str,
        tool: types.Tool,
        *,
        input_schema_max_bytes: int | None = None,
    ) -> McpTool:
        """Wrap ``tool`` (from ``tools/list`` of ``session``) as served by ``server``
        (``input_schema_max_bytes``: the server's limit, see ``ToolDefinition``).

        The tool is idempotent (see ``ToolDefinition.idempotent``) only when its
        annotations say so (:func:`_is_idempotent`)."""
        namespace = mcp_namespace(server)
        description = tool.description or tool.title or ""
        definition = ToolDefinition(
            name=f"{namespace}__{tool.name}",
            tool_name=ToolName(tool.name, namespace),
            description=description.strip(),
            kind=ToolKind.FUNCTION,
            input_schema=dict(tool.input_schema),
            output_schema=call_tool_result_schema(tool.output_schema),
            idempotent=_is_idempotent(tool),
            input_schema_max_bytes=input_schema_max_bytes,
        )
        return cls(session=session, server=server, tool=tool, definition=definition)

    async def call(self, input: JSON) -> JSON:
        """Call the tool with the program's input (``None`` means ``{}``)."""
        if input is None:
            input = {}
        if not isinstance(input, dict):
            raise McpToolError(f"tool `{self.definition.name}` expects a JSON object for arguments")
        try:
            result = await self.session.call_tool(self.tool.name, input)
        except MCPError as error:
            if error.code == types.CONNECTION_CLOSED:
                raise McpToolError(self._unavailable(error.message)) from None
            raise McpToolError(error.message) from None
        except _TRANSPORT_ERRORS as error:
            raise McpToolError(self._unavailable(str(error) or type(error).__name__)) from None
        return _result_json(result)

    def _unavailable(self, detail: str) -> str:
        return f"MCP server `{self.server}` is unavailable: {detail}"


async def list_mcp_tools(
    session: ClientSession, server: str, *, input_schema_max_bytes: int | None = None
) -> list[McpTool]:
    """Every tool ``session``'s server offers (all pages of ``tools/list``), as nested
    tools named ``mcp__<server>__<tool>``, in the server's order.

    ``session`` must be initialized; ``server`` is the name programs and the ``exec``
    description use for it (the key of the ``mcpServers`` entry);
    ``input_schema_max_bytes`` its ``tool_input_schema_max_bytes``."""
    tools: list[McpTool] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_TOOL_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(
            McpTool.from_tool(session, server, tool, input_schema_max_bytes=input_schema_max_bytes)
            for tool in page.tools
        )
        cursor = page.next_cursor
        if cursor is None:
            return tools
        if cursor in seen:
            raise McpToolError(f"MCP server `{server}` repeated the tools/list cursor {cursor!r}")
        seen.add(cursor)
    raise McpToolError(f"MCP server `{server}` listed more than {MAX_TOOL_PAGES} pages of tools")
