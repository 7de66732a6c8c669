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

Local references (``#`` and ``#/json/pointer``) are expanded inline, each target at
most :data:`MAX_REF_EXPANSIONS` times along one path (a recursive type would otherwise
never end) and :data:`MAX_TOTAL_REF_EXPANSIONS` times in all; others, unresolvable
ones and those inside a nested ``$id`` resource render as ``unknown``. Keywords next to
``$ref`` render as ``(Ref) & (Sibling)``; a union inside ``allOf`` is parenthesised. A
type longer than :data:`MAX_RENDERED_BYTES` (or a tool's larger
``input_schema_max_bytes``, for its input) is ``unknown``. These are the reference's
rules (openai/codex ``codex-rs/code-mode-protocol/src/json_schema_types.rs``, commit
a186f5484dc8).

The module also gives the JavaScript identifier of a tool and the one-line
``declare const tools: {...}`` declaration of a tool; MCP-shaped outputs are
recognised by :mod:`.mcp_results`.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Final

from .._tool_names import normalize_identifier
from .._types import JSON, ToolDefinition, ToolKind
from .mcp_results import mcp_structured_content_schema

__all__ = [
    "MAX_DEPTH",
    "MAX_REF_EXPANSIONS",
    "MAX_RENDERED_BYTES",
    "MAX_RENDER_WORK_BYTES",
    "MAX_TOTAL_REF_EXPANSIONS",
    "input_schema_max_bytes",
    "render_input_type",
    "render_output_type",
    "render_schema",
    "tool_declaration",
]

MAX_REF_EXPANSIONS: Final = 2
"""How many times one ``$ref`` target may be open along one path before the renderer
gives up there with ``unknown``. Two show the shape of a recursive type (a tree node
and its children) without letting one schema blow up the description."""

MAX_TOTAL_REF_EXPANSIONS: Final = 32
"""``$ref`` expansions in one rendering at most (later ones render as ``unknown``):
repeated and fanned-out references cannot blow a compact schema up either. A
reference that points at nothing does not count."""

MAX_RENDERED_BYTES: Final = 16_000
"""A rendered type longer than this is shown as ``unknown`` (the default; an input
type's limit is ``max(16000, ToolDefinition.input_schema_max_bytes)``, the reference's
``DEFAULT_INPUT_SCHEMA_MAX_BYTES`` and configurable budget)."""

MAX_RENDER_WORK_BYTES: Final = 4 * MAX_RENDERED_BYTES
"""Characters one rendering may produce along the way, intermediate results included
(four times the rendering's limit; this for the default one): past it, the whole type
is ``unknown`` (so repeated references cannot build large copies before the final
size check)."""

MAX_DEPTH: Final = 64
"""Schemas nested deeper than this render as ``unknown`` there: no real tool needs
more, and a hostile schema must not exhaust the Python stack."""

_UNKNOWN: Final = "unknown"
_INDENT: Final = "  "
#: The keywords whose presence next to a `$ref` makes a type of their own.
_SCHEMA_KEYWORDS: Final = (
    "const", "enum", "anyOf", "oneOf", "allOf", "type", "properties",
    "additionalProperties", "required", "items", "prefixItems",
)  # fmt: skip


def render_schema(
    schema: JSON, *, root: JSON | None = None, max_bytes: int = MAX_RENDERED_BYTES
) -> str:
    """Render a JSON Schema as a TypeScript type expression.

    ``root`` is the document that local ``$ref`` pointers resolve against; it defaults
    to ``schema`` itself, which is right for a tool's whole input or output schema.
    Pass the enclosing document when rendering a sub-schema (as done for the
    ``structuredContent`` of an MCP result) so that its references still resolve.

    Rendering never fails: whatever the renderer does not understand becomes
    ``unknown``, which is the honest TypeScript for "any JSON value"; so does a type
    longer than ``max_bytes``.
    """
    rendered = _Renderer(schema if root is None else root, 4 * max_bytes).render(schema)
    return _UNKNOWN if len(rendered) > max_bytes else rendered


def input_schema_max_bytes(tool: ToolDefinition) -> int:
    """How long the rendered input type of ``tool`` may be:
    ``max(16000, tool.input_schema_max_bytes)``."""
    return max(MAX_RENDERED_BYTES, tool.input_schema_max_bytes or 0)


def render_input_type(tool: ToolDefinition) -> str:
    """The TypeScript type of a tool's argument: ``string`` for a freeform tool (its
    input is raw text whatever the schema says), else the rendered ``input_schema``,
    or ``unknown`` when the tool has none."""
    if tool.kind is ToolKind.FREEFORM:
        return "string"
    if tool.input_schema is None:
        return _UNKNOWN
    return render_schema(tool.input_schema, max_bytes=input_schema_max_bytes(tool))


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
        rendered = render_schema(structured)  # its refs resolve in itself, as upstream
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
    """One rendering pass over a schema document (holds the ``$ref`` root and the
    pass's budgets)."""

    def __init__(self, root: JSON, work_bytes: int = MAX_RENDER_WORK_BYTES) -> None:
        self._root = root
        self._depth = 0
        self._nested_resources = 0  # nested `$id`s around the current schema
        self._active: dict[str, int] = {}  # pointer -> expansions open along this path
        self._expansions_left = MAX_TOTAL_REF_EXPANSIONS
        self._work_left = work_bytes
        self.exhausted = False

    def render(self, schema: JSON) -> str:
        if self.exhausted or self._depth >= MAX_DEPTH:
            return _UNKNOWN
        nested = schema is not self._root and isinstance(schema, dict) and "$id" in schema
        self._depth += 1
        self._nested_resources += nested
        try:
            rendered = self._render(schema)
        finally:
            self._depth -= 1
            self._nested_resources -= nested
        return rendered if self._charge(len(rendered)) else _UNKNOWN

    def _charge(self, size: int) -> bool:
        """Count ``size`` characters of rendering against the pass's work budget."""
        if size > self._work_left:
            self.exhausted = True
            return False
        self._work_left -= size
        return True

    def _render(self, schema: JSON) -> str:
        if schema is True:
            return _UNKNOWN
        if schema is False:
            return "never"
        if not isinstance(schema, dict):
            return _UNKNOWN
        if "$ref" in schema:
            ref_type = self._render_ref(schema["$ref"])
            if self.exhausted:
                return _UNKNOWN
            siblings = {
                key: value
                for key, value in schema.items()
                if key not in ("$ref", "$defs", "definitions")
            }
            if not any(key in siblings for key in _SCHEMA_KEYWORDS):
                return ref_type
            sibling_type = self._render_keywords(siblings)
            # `X & unknown` is just `X`: only intersect when both sides say something.
            if ref_type == _UNKNOWN:
                return sibling_type
            if sibling_type == _UNKNOWN:
                return ref_type
            return f"({ref_type}) & ({sibling_type})"
        return self._render_keywords(schema)

    def _render_ref(self, ref: JSON) -> str:
        if self._nested_resources or not isinstance(ref, str):
            return _UNKNOWN  # refs inside a nested `$id` resource are not the root's
        pointer = _local_pointer(ref)
        if pointer is None:
            return _UNKNOWN
        active = self._active.get(pointer, 0)
        if active >= MAX_REF_EXPANSIONS or self._expansions_left == 0:
            return _UNKNOWN
        found, target = _resolve_pointer(self._root, pointer)
        if not found:
            return _UNKNOWN  # a dangling reference costs nothing
        self._expansions_left -= 1
        self._active[pointer] = active + 1
        try:
            return self.render(target)
        finally:
            if active == 0:
                del self._active[pointer]
            else:
                self._active[pointer] = active

    def _literal(self, value: JSON) -> str:
        literal = _literal(value)
        return literal if self._charge(len(literal)) else _UNKNOWN

    def _render_keywords(self, schema: dict[str, Any]) -> str:
        if "const" in schema:
            return self._literal(schema["const"])
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            literals = [self._literal(value) for value in enum]
            return _UNKNOWN if self.exhausted else " | ".join(literals)
        for key in ("anyOf", "oneOf"):
            variants = schema.get(key)
            if isinstance(variants, list) and variants:
                return " | ".join(self.render(variant) for variant in variants)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            parts = [self.render(part) for part in all_of]
            # A union inside an intersection keeps its own meaning: `(A | B) & C`.
            return " & ".join(f"({part})" if " | " in part else part for part in parts)
        schema_type = schema.get("type")
        if isinstance(schema_type, list):
            keywords = [self._type_keyword(schema, t) for t in schema_type if isinstance(t, str)]
            if keywords:
                return " | ".join(keywords)
        elif isinstance(schema_type, str):
            return self._type_keyword(schema, schema_type)
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            return self._object(schema)
        if "items" in schema or "prefixItems" in schema:
            return self._array(schema)
        return _UNKNOWN

    def _type_keyword(self, schema: dict[str, Any], keyword: str) -> str:
        if keyword in ("string", "boolean", "null"):
            return keyword
        if keyword in ("number", "integer"):
            return "number"
        if keyword == "array":
            return self._array(schema)
        if keyword == "object":
            return self._object(schema)
        return _UNKNOWN

    def _array(self, schema: dict[str, Any]) -> str:
        if "items" in schema:
            return f"Array<{self.render(schema['items'])}>"
        prefix_items = schema.get("prefixItems")
        if isinstance(prefix_items, list) and prefix_items:
            return "[" + ", ".join(self.render(item) for item in prefix_items) + "]"
        return "unknown[]"

    def _object(self, schema: dict[str, Any]) -> str:
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
            return f"{key}{optional}: {self.render(properties[name])};"

        multi_line = any(
            isinstance(value, dict)
            and isinstance(value.get("description"), str)
            and value["description"] != ""
            for value in properties.values()
        )
        lines: list[str] = []
        if multi_line:
            lines.append("{")
            for name in names:
                value = properties[name]
                description = value.get("description") if isinstance(value, dict) else None
                if isinstance(description, str):
                    for raw in description.split("\n"):
                        line = raw.strip()
                        if line:
                            lines.append(f"{_INDENT}// {line}")
                # Only a member's first line is indented, as the reference does.
                lines.append(_INDENT + property_line(name))
        else:
            lines.extend(property_line(name) for name in names)
        index_line = self._index_line(schema, properties)
        if index_line is not None:
            lines.append(_INDENT + index_line if multi_line else index_line)
        if multi_line:
            lines.append("}")
        if self.exhausted or not self._charge(sum(len(line) for line in lines)):
            return _UNKNOWN
        if multi_line:
            return "\n".join(lines)
        return "{ " + " ".join(lines) + " }" if lines else "{}"

    def _index_line(self, schema: dict[str, Any], properties: dict[str, Any]) -> str | None:
        if "additionalProperties" in schema:
            additional = schema["additionalProperties"]
            if additional is False:
                return None
            value_type = _UNKNOWN if additional is True else self.render(additional)
            return f"[key: string]: {value_type};"
        # An object schema that names no properties and does not close itself is an
        # open map; one that lists properties is, in practice, meant to have just those.
        return None if properties else "[key: string]: unknown;"


def _json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _literal(value: JSON) -> str:
    try:
        return _json(value)
    except (TypeError, ValueError):
        return _UNKNOWN


def _local_pointer(ref: str) -> str | None:
    """The JSON pointer of a local reference (``#`` -> ``""``, ``#/a/b`` -> ``/a/b``,
    percent-decoded first, as the reference does), or ``None`` for any other."""
    if not ref.startswith("#"):
        return None
    try:
        pointer = urllib.parse.unquote(ref[1:], errors="strict")
    except UnicodeDecodeError:
        return None
    return pointer if pointer == "" or pointer.startswith("/") else None


def _resolve_pointer(root: JSON, pointer: str) -> tuple[bool, JSON]:
    """Resolve a JSON pointer (RFC 6901 escapes honoured) in ``root``. Returns
    ``(False, None)`` when it does not point at anything."""
    if pointer == "":
        return True, root
    node = root
    for raw_token in pointer[1:].split("/"):
        token = raw_token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node
