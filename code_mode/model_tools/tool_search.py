"""``tools.tool_search({query, limit})``: BM25-ranked discovery of a session's tools.

A host with hundreds of tools cannot show the model every declaration; with the
reference's ranked discovery (openai/codex #51209, ``codex-rs/tools/src/tool_search.rs``
and ``code-mode-protocol/src/description.rs`` at ca44e7e9ac60) a program asks for the
few tools that match a query and reads their declarations::

    const { tools: found } = await tools.tool_search({ query: "weather forecast" });
    // [{ name: "get_weather", description: "<namespace text>\\n\\n<description>\\n\\n
    //    exec tool declaration: ..." }, ...]

:class:`ToolSearch` is the tool itself (a :class:`~code_mode.NestedTool`: a
``definition`` and an async ``call``), built over the tools it searches. Each tool is
indexed by its search text (:func:`search_text`, the reference's fields); a query is
scored with Okapi BM25 (k1 1.2, b 0.75) and the best ``limit`` (8 by default) matches
come back best first, ties in the tools' order; tools that share no word with the query
are not returned.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._types import JSON, ToolDefinition, ToolKind, ToolName
from .descriptions import NamespaceDescription, augment_tool_definition
from .guide_texts import TOOL_SEARCH_GUIDANCE

__all__ = [
    "DEFAULT_TOOL_SEARCH_LIMIT",
    "TOOL_SEARCH_GUIDANCE",
    "TOOL_SEARCH_NAME",
    "ToolSearch",
    "search_text",
    "tool_search_definition",
]

TOOL_SEARCH_NAME: Final = "tool_search"
DEFAULT_TOOL_SEARCH_LIMIT: Final = 8

_K1: Final = 1.2
_B: Final = 0.75
_WORD: Final = re.compile(r"[^\W_]+")


def tool_search_definition() -> ToolDefinition:
    """The search tool as programs see it: ``tools.tool_search(args)``."""
    return ToolDefinition(
        name=TOOL_SEARCH_NAME,
        tool_name=ToolName(TOOL_SEARCH_NAME),
        description=TOOL_SEARCH_GUIDANCE,
        kind=ToolKind.FUNCTION,
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words that describe the tool."},
                "limit": {
                    "type": "integer",
                    "description": "How many matches at most (default 8).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )


def search_text(tool: ToolDefinition) -> str:
    """What a tool is found by, as the reference builds it for a function tool
    (``append_function_search_text``): its name, the name with ``_`` as spaces, its
    description, then its input schema's description and, property by property in
    name order, the property's name and (recursively) its schema's text, ``items``
    and ``anyOf`` included. A freeform tool: its name and description. Blank parts are
    left out; the rest are joined by spaces."""
    parts: list[str] = []
    _push(parts, tool.name)
    if tool.kind is ToolKind.FUNCTION:
        _push(parts, tool.name.replace("_", " "))
    _push(parts, tool.description)
    if tool.kind is ToolKind.FUNCTION and isinstance(tool.input_schema, dict):
        _schema_text(tool.input_schema, parts, 0)
    return " ".join(parts)


def _push(parts: list[str], part: object) -> None:
    if isinstance(part, str) and part.strip():
        parts.append(part.strip())


def _schema_text(schema: Mapping[str, Any], parts: list[str], depth: int) -> None:
    if depth > 64:  # a hostile schema must not exhaust the stack
        return
    _push(parts, schema.get("description"))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name in sorted(properties):
            _push(parts, name)
            if isinstance(properties[name], dict):
                _schema_text(properties[name], parts, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        _schema_text(items, parts, depth + 1)
    variants = schema.get("anyOf")
    if isinstance(variants, list):
        for variant in variants:
            if isinstance(variant, dict):
                _schema_text(variant, parts, depth + 1)


def _words(text: str) -> list[str]:
    """Lower-cased runs of letters and digits: ``get_weather`` is ``get`` and
    ``weather``."""
    return _WORD.findall(text.lower())


class ToolSearch:
    """``tools.tool_search`` over ``tools`` (the session's nested tools, without the
    search tool itself). ``namespace_descriptions`` lead each result's description, as
    they lead ``ALL_TOOLS``'s. Built once: the index is fixed with the tools."""

    def __init__(
        self,
        tools: Sequence[ToolDefinition],
        namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
    ) -> None:
        self._tools = [tool for tool in tools if tool.name != TOOL_SEARCH_NAME]
        self._results = [
            augment_tool_definition(tool, namespace_descriptions).description
            for tool in self._tools
        ]
        self._documents = [Counter(_words(search_text(tool))) for tool in self._tools]
        self._lengths = [sum(counts.values()) for counts in self._documents]
        count = len(self._documents)
        self._average = sum(self._lengths) / count if count else 0.0
        frequency: Counter[str] = Counter()
        for counts in self._documents:
            frequency.update(counts.keys())
        self._idf = {
            word: math.log(1 + (count - n + 0.5) / (n + 0.5)) for word, n in frequency.items()
        }
        self._definition = tool_search_definition()

    @property
    def definition(self) -> ToolDefinition:
        """:func:`tool_search_definition`."""
        return self._definition

    def search(self, query: str, limit: int = DEFAULT_TOOL_SEARCH_LIMIT) -> list[dict[str, str]]:
        """The best ``limit`` matches for ``query`` as ``{name, description}``, best
        first. ``ValueError`` (the text the program gets) for an empty query or a
        ``limit`` below one."""
        if not query.strip():
            raise ValueError("query must not be empty")
        if limit <= 0:
            raise ValueError("limit must be greater than zero")
        terms = set(_words(query))
        scored: list[tuple[float, int]] = []
        for position, counts in enumerate(self._documents):
            score = 0.0
            norm = _K1 * (1 - _B + _B * self._lengths[position] / (self._average or 1.0))
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (_K1 + 1) / (tf + norm)
            if score > 0:
                scored.append((-score, position))
        scored.sort()
        return [
            {"name": self._tools[position].name, "description": self._results[position]}
            for _, position in scored[:limit]
        ]

    async def call(self, input: JSON) -> JSON:
        """The program's call: ``{query: string, limit?: integer}`` ->
        ``{tools: [...]}``."""
        arguments = input if isinstance(input, dict) else {}
        query = arguments.get("query")
        if not isinstance(query, str):
            raise ValueError(
                "query must not be empty" if query is None else "query must be a string"
            )
        limit = arguments.get("limit", DEFAULT_TOOL_SEARCH_LIMIT)
        if limit is None:
            limit = DEFAULT_TOOL_SEARCH_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit != int(limit):
            raise ValueError("limit must be an integer")
        return {"tools": self.search(query, int(limit))}
