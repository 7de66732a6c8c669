"""JSON Schema -> TypeScript, for the declarations the ``exec`` description shows.

A model writes better calls when it sees a tool's input and output as a TypeScript
type rather than as raw JSON Schema: TypeScript is short, models know it well, and
a type is exactly what the program in a cell manipulates. This module renders the
subset of JSON Schema that tool definitions use in practice, following the rules of
the reference implementation so that descriptions look like
the ones models were trained on:

* ``true`` -> ``unknown``, ``false`` -> ``never``, anything that is not an object ->
  ``unknown``;
* otherwise the first matching rule of: a local ``$ref`` (see below); ``const``;
  non-empty ``enum``; non-empty ``anyOf`` then ``oneOf`` (``|``); non-empty ``allOf``
  (``&``); ``type`` (array of keywords joined by ``|``, or one keyword); the object
  rule when ``properties``, ``additionalProperties`` or ``required`` is present; the
  array rule when ``items`` or ``prefixItems`` is present; else ``unknown``.

Local references (``#`` and ``#/json/pointer``) are expanded inline, at most
:data:`MAX_REF_EXPANSIONS` deep along one path (a recursive type would otherwise never
end); deeper, unresolvable or non-local references render as ``unknown``. Keywords
next to ``$ref`` render as ``(Ref) & (Sibling)``.

The module also gives the JavaScript identifier of a tool and the one-line
``declare const tools: {...}`` declaration of a tool; MCP-shaped outputs are
recognised by :mod:`.mcp_results`.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Final

from .._tool_names import normalize_identifier as _engine_identifier
from .._types import JSON, ToolDefinition, ToolKind
from .mcp_results import mcp_structured_content_schema

__all__ = [
    "MAX_DEPTH",
    "MAX_REF_EXPANSIONS",
    "normalize_identifier",
    "render_input_type",
    "render_output_type",
    "render_schema",
    "tool_declaration",
]

MAX_REF_EXPANSIONS: Final = 2
"""How many ``$ref`` expansions may be nested along one path before the renderer gives
up with ``unknown``. Two levels show the shape of a recursive type (a tree node and its
children) without letting one schema blow up the description."""

MAX_DEPTH: Final = 64
"""Schemas nested deeper than this render as ``unknown`` there: no real tool needs
more, and a hostile schema must not exhaust the Python stack."""

_UNKNOWN: Final = "unknown"
_INDENT: Final = "  "


def normalize_identifier(name: str) -> str:
    """Return the JavaScript identifier under which a tool appears on ``tools``.

    Every character that is not ``_``, ``$``, an ASCII letter or (except in first
    position) an ASCII digit becomes ``_``; an empty name becomes ``_``. The mapping is
    deliberately simple and lossy so that a model can predict it from the raw name:
    ``hidden-dynamic-tool`` -> ``hidden_dynamic_tool``, ``1abc`` -> ``_abc``. This
    delegates to the rule the engine uses to build ``tools``, so the description and
    the program can never disagree.
    """
    return _engine_identifier(name)


def render_schema(schema: JSON, *, root: JSON | None = None) -> str:
    """Render a JSON Schema as a TypeScript type expression.

    ``root`` is the document that local ``$ref`` pointers resolve against; it defaults
    to ``schema`` itself, which is right for a tool's whole input or output schema.
    Pass the enclosing document when rendering a sub-schema (as done for the
    ``structuredContent`` of an MCP result) so that its references still resolve.

    Rendering never fails: whatever the renderer does not understand becomes
    ``unknown``, which is the honest TypeScript for "any JSON value".
    """
    return _Renderer(schema if root is None else root).render(schema, 0)


def render_input_type(tool: ToolDefinition) -> str:
    """The TypeScript type of a tool's argument: ``string`` for a freeform tool (its
    input is raw text whatever the schema says), else the rendered ``input_schema``,
    or ``unknown`` when the tool has none."""
    if tool.kind is ToolKind.FREEFORM:
        return "string"
    if tool.input_schema is None:
        return _UNKNOWN
    return render_schema(tool.input_schema)


def render_output_type(tool: ToolDefinition) -> str:
    """The TypeScript type a tool's promise resolves to.

    An MCP-shaped output becomes ``CallToolResult`` or ``CallToolResult<T>`` with ``T``
    the rendered ``structuredContent`` (omitted when it is ``unknown``, which is the
    generic's default); any other output schema is rendered as is; no schema is
    ``unknown``.
    """
    if tool.output_schema is None:
        return _UNKNOWN
    structured = mcp_structured_content_schema(tool.output_schema)
    if structured is not None:
        rendered = render_schema(structured, root=tool.output_schema)
        return "CallToolResult" if rendered == _UNKNOWN else f"CallToolResult<{rendered}>"
    return render_schema(tool.output_schema)


def tool_declaration(tool: ToolDefinition) -> str:
    """The TypeScript declaration of one tool as seen from a program, e.g.
    ``declare const tools: { get_weather(args: { city: string; }): Promise<{ ok: boolean; }>; };``.

    It is a complete, valid declaration (not just a method signature) so that a model
    reads it exactly as it would read a ``.d.ts`` file. The parameter is named ``args``
    for function tools and ``input`` for freeform tools, hinting at object vs string.
    """
    param = "input" if tool.kind is ToolKind.FREEFORM else "args"
    ident = normalize_identifier(tool.name)
    method = f"{ident}({param}: {render_input_type(tool)}): Promise<{render_output_type(tool)}>;"
    return f"declare const tools: {{ {method} }};"


class _Renderer:
    """One rendering pass over a schema document (holds the ``$ref`` root)."""

    def __init__(self, root: JSON) -> None:
        self._root = root
        self._depth = 0

    def render(self, schema: JSON, expansions: int) -> str:
        if self._depth >= MAX_DEPTH:
            return _UNKNOWN
        self._depth += 1
        try:
            return self._render(schema, expansions)
        finally:
            self._depth -= 1

    def _render(self, schema: JSON, expansions: int) -> str:
        if schema is True:
            return _UNKNOWN
        if schema is False:
            return "never"
        if not isinstance(schema, dict):
            return _UNKNOWN
        ref = schema.get("$ref")
        if isinstance(ref, str):
            ref_type = self._render_ref(ref, expansions)
            siblings = {key: value for key, value in schema.items() if key != "$ref"}
            sibling_type = self._render_keywords(siblings, expansions)
            # `X & unknown` is just `X`: only intersect when both sides say something.
            if sibling_type == _UNKNOWN:
                return ref_type
            if ref_type == _UNKNOWN:
                return sibling_type
            return f"({ref_type}) & ({sibling_type})"
        return self._render_keywords(schema, expansions)

    def _render_ref(self, ref: str, expansions: int) -> str:
        if expansions >= MAX_REF_EXPANSIONS:
            return _UNKNOWN
        found, target = _resolve_pointer(self._root, ref)
        if not found:
            return _UNKNOWN
        return self.render(target, expansions + 1)

    def _render_keywords(self, schema: dict[str, Any], expansions: int) -> str:
        if "const" in schema:
            return _literal(schema["const"])
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return " | ".join(_literal(value) for value in enum)
        for key in ("anyOf", "oneOf"):
            variants = schema.get(key)
            if isinstance(variants, list) and variants:
                return " | ".join(self.render(variant, expansions) for variant in variants)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            return " & ".join(self.render(part, expansions) for part in all_of)
        schema_type = schema.get("type")
        if isinstance(schema_type, list):
            keywords = [
                self._type_keyword(schema, t, expansions) for t in schema_type if isinstance(t, str)
            ]
            if keywords:
                return " | ".join(keywords)
        elif isinstance(schema_type, str):
            return self._type_keyword(schema, schema_type, expansions)
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            return self._object(schema, expansions)
        if "items" in schema or "prefixItems" in schema:
            return self._array(schema, expansions)
        return _UNKNOWN

    def _type_keyword(self, schema: dict[str, Any], keyword: str, expansions: int) -> str:
        if keyword in ("string", "boolean", "null"):
            return keyword
        if keyword in ("number", "integer"):
            return "number"
        if keyword == "array":
            return self._array(schema, expansions)
        if keyword == "object":
            return self._object(schema, expansions)
        return _UNKNOWN

    def _array(self, schema: dict[str, Any], expansions: int) -> str:
        if "items" in schema:
            return f"Array<{self.render(schema['items'], expansions)}>"
        prefix_items = schema.get("prefixItems")
        if isinstance(prefix_items, list) and prefix_items:
            return "[" + ", ".join(self.render(item, expansions) for item in prefix_items) + "]"
        return "unknown[]"

    def _object(self, schema: dict[str, Any], expansions: int) -> str:
        raw_required = schema.get("required")
        required = (
            {name for name in raw_required if isinstance(name, str)}
            if isinstance(raw_required, list)
            else set()
        )
        raw_properties = schema.get("properties")
        properties: dict[str, Any] = raw_properties if isinstance(raw_properties, dict) else {}
        # Python sorts str by code point, as the reference does.
        names = sorted(properties)

        def property_line(name: str) -> str:
            key = name if normalize_identifier(name) == name else _json(name)
            optional = "" if name in required else "?"
            return f"{key}{optional}: {self.render(properties[name], expansions)};"

        index_line = self._index_line(schema, properties, expansions)
        multi_line = any(
            isinstance(value, dict)
            and isinstance(value.get("description"), str)
            and value["description"] != ""
            for value in properties.values()
        )
        if multi_line:
            lines = ["{"]
            for name in names:
                value = properties[name]
                description = value.get("description") if isinstance(value, dict) else None
                if isinstance(description, str):
                    for raw in description.split("\n"):
                        line = raw.strip()
                        if line:
                            lines.append(f"{_INDENT}// {line}")
                lines.append(_indent(property_line(name)))
            if index_line is not None:
                lines.append(_indent(index_line))
            lines.append("}")
            return "\n".join(lines)
        parts = [property_line(name) for name in names]
        if index_line is not None:
            parts.append(index_line)
        return "{ " + " ".join(parts) + " }" if parts else "{}"

    def _index_line(
        self, schema: dict[str, Any], properties: dict[str, Any], expansions: int
    ) -> str | None:
        if "additionalProperties" in schema:
            additional = schema["additionalProperties"]
            if additional is False:
                return None
            value_type = _UNKNOWN if additional is True else self.render(additional, expansions)
            return f"[key: string]: {value_type};"
        # An object schema that names no properties and does not close itself is an
        # open map; one that lists properties is, in practice, meant to have just those.
        return None if properties else "[key: string]: unknown;"


def _indent(text: str) -> str:
    """Indent every line of a (possibly multi-line) member by one level, so nested
    multi-line object types stay readable. (The reference indents only the first
    line; re-indenting the rest changes no type and reads as ordinary TypeScript.)"""
    return _INDENT + text.replace("\n", "\n" + _INDENT)


def _json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _literal(value: JSON) -> str:
    try:
        return _json(value)
    except (TypeError, ValueError):
        return _UNKNOWN


def _resolve_pointer(root: JSON, ref: str) -> tuple[bool, JSON]:
    """Resolve a local reference (``#`` or ``#/a/b``, RFC 6901 escapes and URI
    percent-encoding honoured). Returns ``(False, None)`` when the reference is not
    local or does not point at anything."""
    if ref == "#":
        return True, root
    if not ref.startswith("#/"):
        return False, None
    node = root
    for raw_token in ref[2:].split("/"):
        token = urllib.parse.unquote(raw_token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node
