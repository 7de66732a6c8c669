"""`Toolset`: the nested tools of a session, checked, ordered and described once.

Building the ``exec`` description needs only the tools and how they are to be shown
(namespace headings, deferred), never a running session. A :class:`Toolset` is that
value: the MCP server builds one to answer ``tools/list`` and hands the same one to
each of its sessions, and a :class:`~code_mode.CodeModeSession` built from plain tools
makes its own.

The tools' policy lives here: a tool may not be named ``exec`` or ``wait``, two tools
may not share a name, and of two whose names become the same identifier on ``tools``
(``foo-bar`` and ``foo_bar``) the first is kept and the later one left out, with a
warning logged, as the reference implementation does. Each namespace's tools are kept
together so that the description gives every namespace one heading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._tool_names import normalize_identifier
from .._types import ToolDefinition, ToolKind, ToolName
from ..integrations.python_tools import PythonTool, tool
from ..integrations.routing import NestedTool
from ..model_tools.adapters import (
    EXEC_TOOL_NAME,
    WAIT_TOOL_NAME,
    anthropic_exec_tool,
    anthropic_wait_tool,
    mcp_exec_tool,
    mcp_wait_tool,
    openai_exec_tool,
    openai_wait_tool,
    wait_parameters,
)
from ..model_tools.descriptions import (
    NamespaceDescription,
    augment_tool_definition,
    exec_description,
    wait_description,
)
from ..model_tools.tool_search import TOOL_SEARCH_NAME, ToolSearch

if TYPE_CHECKING:  # the SDKs' param types (model_tools/adapters.py)
    from anthropic.types import ToolParam as AnthropicToolParam
    from openai.types.responses import CustomToolParam, FunctionToolParam

__all__ = ["Toolset"]

logger = logging.getLogger("code_mode")


def _as_nested_tool(candidate: object) -> NestedTool:
    if isinstance(candidate, NestedTool) and isinstance(
        getattr(candidate, "definition", None), ToolDefinition
    ):
        return candidate
    if callable(candidate):
        return tool(candidate)
    raise TypeError(
        f"not a tool: {candidate!r} (pass @tool functions, plain type-hinted functions, or "
        "objects with a `definition` and an async `call`)"
    )


def _kept(tools: Iterable[NestedTool]) -> list[NestedTool]:
    """``tools`` less those whose identifier an earlier tool already has; raises for
    a duplicate name or a tool named ``exec``/``wait``."""
    names: set[ToolName] = set()
    by_identifier: dict[str, str] = {}
    kept: list[NestedTool] = []
    for entry in tools:
        definition = entry.definition
        if definition.tool_name in names:
            raise ValueError(f"two tools are named `{definition.tool_name.display()}`")
        if definition.name in (EXEC_TOOL_NAME, WAIT_TOOL_NAME):
            raise ValueError(f"a nested tool cannot be named `{definition.name}`")
        names.add(definition.tool_name)
        identifier = normalize_identifier(definition.name)
        if identifier in by_identifier:
            # The reference's rule: the first tool with an identifier wins, a later one
            # is left out of programs (and of the description), with a warning.
            logger.warning(
                "code mode leaves out tool `%s`: `tools.%s` is already tool `%s`",
                definition.name,
                identifier,
                by_identifier[identifier],
            )
            continue
        by_identifier[identifier] = definition.name
        kept.append(entry)
    return kept


def _limited(definition: ToolDefinition, max_bytes: int | None) -> ToolDefinition:
    """``definition`` with the larger of its own and the configured input limit."""
    own = definition.input_schema_max_bytes
    if max_bytes is None or (own is not None and own >= max_bytes):
        return definition
    return attrs.evolve(definition, input_schema_max_bytes=max_bytes)


def _grouped(tools: list[NestedTool]) -> tuple[NestedTool, ...]:
    """Tools with each namespace's members contiguous (in order of first appearance),
    so the ``exec`` description gives every namespace one heading."""
    order: dict[str | None, list[NestedTool]] = {}
    for nested in tools:
        order.setdefault(nested.definition.tool_name.namespace, []).append(nested)
    return tuple(nested for group in order.values() for nested in group)


@attrs.frozen
class Toolset:
    """The nested tools programs may call, in the order they see them, and how the
    ``exec`` description shows them; build one with :meth:`build`.

    ``push`` and ``idle_floor_ms`` of the description methods are the session's (see
    :class:`~code_mode.CodeModeSession`): the descriptions tell the model it will be
    given results, or that a ``wait`` holds on for output.
    """

    tools: tuple[NestedTool, ...]
    """The tools kept, each namespace's together."""
    namespaces: Mapping[str, NamespaceDescription] = attrs.field(factory=dict)
    """The heading of each namespace in the ``exec`` description."""
    deferred: bool = False
    """Whether the ``exec`` description stays short (programs search ``ALL_TOOLS``)."""
    input_schema_max_bytes: int | None = None
    """The configured limit of a rendered input type (``None``: the default 16 000):
    each tool's is ``max(16000, this, the tool's own)`` (an MCP server's limit)."""
    mcp: bool | None = None
    """Whether the ``exec`` description speaks of MCP (its result types, forwarding MCP
    content); ``None``: decided by :func:`~code_mode.model_tools.descriptions.speaks_mcp`
    (a tool returns an MCP result; in deferred mode, yes)."""
    enabled: list[ToolDefinition] = attrs.field(
        init=False,
        eq=False,
        default=attrs.Factory(
            lambda self: [augment_tool_definition(d, self.namespaces) for d in self.definitions],
            takes_self=True,
        ),
    )
    """The definitions as each cell's start gives them to its program (each with its
    namespace's description), built once: every ``exec`` sends them."""

    @classmethod
    def build(
        cls,
        tools: Iterable[NestedTool | Callable[..., Any]] = (),
        *,
        namespace_descriptions: Mapping[str, NamespaceDescription | str] | None = None,
        deferred: bool = False,
        tool_search: bool = False,
        input_schema_max_bytes: int | None = None,
        mcp: bool | None = None,
    ) -> Toolset:
        """Check ``tools`` (``@tool`` functions, plain type-hinted functions, wrapped
        with :func:`~code_mode.tool`, or any :class:`~code_mode.NestedTool`) and order
        them. ``namespace_descriptions``: a heading for each tool namespace (a string
        is used as the description, the namespace as the heading). ``tool_search``:
        add ``tools.tool_search`` (BM25 over the other tools), last.
        ``input_schema_max_bytes``: how long a tool's input type may be in the ``exec``
        description before it is shown as ``unknown``, when more than the default
        16 000 (the reference's configurable limit; a tool's own, from its MCP server,
        counts when larger). ``mcp``: whether the ``exec`` description speaks of MCP
        (:attr:`mcp`); a deferred toolset whose catalog never holds MCP tools passes
        ``False``, one that does need not."""
        if input_schema_max_bytes is not None and not (
            isinstance(input_schema_max_bytes, int) and input_schema_max_bytes > 0
        ):
            raise ValueError("input_schema_max_bytes must be a positive integer or None")
        namespaces = {
            key: value
            if isinstance(value, NamespaceDescription)
            else NamespaceDescription(key, value)
            for key, value in (namespace_descriptions or {}).items()
        }
        kept = _kept(_as_nested_tool(candidate) for candidate in tools)
        nested = _grouped(kept)
        if tool_search:
            if any(normalize_identifier(t.definition.name) == TOOL_SEARCH_NAME for t in kept):
                raise ValueError(f"a nested tool cannot be named `{TOOL_SEARCH_NAME}`")
            limited = [_limited(entry.definition, input_schema_max_bytes) for entry in nested]
            nested = (*nested, ToolSearch(limited, namespaces))
        return cls(nested, namespaces, deferred, input_schema_max_bytes, mcp)

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tools' definitions, in the order programs see them (each with its
        limit of :attr:`input_schema_max_bytes`)."""
        return [_limited(entry.definition, self.input_schema_max_bytes) for entry in self.tools]

    def exec_tool(self, *, push: bool = False) -> ToolDefinition:
        """``exec`` as a FREEFORM :class:`~code_mode.ToolDefinition` (its input is raw
        JavaScript) with the generated description."""
        return ToolDefinition(
            name=EXEC_TOOL_NAME,
            tool_name=ToolName(EXEC_TOOL_NAME),
            description=exec_description(
                self.definitions,
                namespace_descriptions=self.namespaces,
                deferred=self.deferred,
                push=push,
                mcp=self.mcp,
            ),
            kind=ToolKind.FREEFORM,
        )

    @staticmethod
    def wait_tool(*, push: bool = False, idle_floor_ms: int | None = None) -> ToolDefinition:
        """``wait`` as a FUNCTION :class:`~code_mode.ToolDefinition` with its JSON
        Schema."""
        return ToolDefinition(
            name=WAIT_TOOL_NAME,
            tool_name=ToolName(WAIT_TOOL_NAME),
            description=wait_description(push=push, idle_floor_ms=idle_floor_ms),
            kind=ToolKind.FUNCTION,
            input_schema=wait_parameters(),
        )

    def openai_tools(
        self, *, grammar: bool = True, push: bool = False, idle_floor_ms: int | None = None
    ) -> list[CustomToolParam | FunctionToolParam]:
        """``[exec, wait]`` for the OpenAI Responses API (``exec`` a custom tool)."""
        exec_tool = openai_exec_tool(
            self.definitions,
            namespace_descriptions=self.namespaces,
            deferred=self.deferred,
            grammar=grammar,
            push=push,
            mcp=self.mcp,
        )
        return [exec_tool, openai_wait_tool(push=push, idle_floor_ms=idle_floor_ms)]

    def anthropic_tools(
        self, *, push: bool = False, idle_floor_ms: int | None = None
    ) -> list[AnthropicToolParam]:
        """``[exec, wait]`` for the Anthropic Messages API."""
        exec_tool = anthropic_exec_tool(
            self.definitions,
            namespace_descriptions=self.namespaces,
            deferred=self.deferred,
            push=push,
            mcp=self.mcp,
        )
        return [exec_tool, anthropic_wait_tool(push=push, idle_floor_ms=idle_floor_ms)]

    def mcp_tools(
        self, *, push: bool = False, idle_floor_ms: int | None = None
    ) -> list[dict[str, Any]]:
        """``[exec, wait]`` as MCP tool definitions (``tools/list``)."""
        exec_tool = mcp_exec_tool(
            self.definitions,
            namespace_descriptions=self.namespaces,
            deferred=self.deferred,
            push=push,
            mcp=self.mcp,
        )
        return [exec_tool, mcp_wait_tool(push=push, idle_floor_ms=idle_floor_ms)]


# `PythonTool` satisfies `NestedTool`; checked here so a change to either is caught.
_check: type[NestedTool] = PythonTool
