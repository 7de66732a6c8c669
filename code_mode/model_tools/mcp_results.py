"""Recognising tools whose output is an MCP ``CallToolResult``, and the shared MCP types.

Every MCP tool returns the same envelope, so the ``exec`` description declares it once
(:data:`MCP_TYPES_PREAMBLE`) and types such outputs as ``CallToolResult<T>``.
"""

from __future__ import annotations

from typing import Final

from .._types import JSON

__all__ = ["MCP_TYPES_PREAMBLE", "is_mcp_call_tool_result", "mcp_structured_content_schema"]


def mcp_structured_content_schema(output_schema: JSON) -> JSON | None:
    """Return the ``structuredContent`` schema if ``output_schema`` describes an MCP
    ``CallToolResult``, else ``None``.

    MCP tools all return the same envelope (``content`` blocks, ``isError``,
    ``_meta``, optional ``structuredContent``). Spelling that envelope out for every
    tool would waste the description, so such outputs are typed with the shared
    ``CallToolResult<T>`` of :data:`MCP_TYPES_PREAMBLE` instead. The test is the
    reference's: ``properties.content`` is ``{type: "array", items: {type: "object"}}``,
    ``properties.isError`` is ``{type: "boolean"}`` and ``properties._meta`` is
    ``{type: "object"}``. A missing ``structuredContent`` is returned as ``True`` (any
    value), which renders as ``unknown``.
    """
    if not isinstance(output_schema, dict):
        return None
    properties = output_schema.get("properties")
    if not isinstance(properties, dict):
        return None
    content = properties.get("content")
    if not isinstance(content, dict) or content.get("type") != "array":
        return None
    items = content.get("items")
    if not isinstance(items, dict) or items.get("type") != "object":
        return None
    is_error = properties.get("isError")
    if not isinstance(is_error, dict) or is_error.get("type") != "boolean":
        return None
    meta = properties.get("_meta")
    if not isinstance(meta, dict) or meta.get("type") != "object":
        return None
    return properties.get("structuredContent", True)


def is_mcp_call_tool_result(output_schema: JSON) -> bool:
    """Whether ``output_schema`` is an MCP ``CallToolResult`` (see
    :func:`mcp_structured_content_schema`); decides if the shared MCP types are shown."""
    return mcp_structured_content_schema(output_schema) is not None


MCP_TYPES_PREAMBLE: Final = """\
type Role = "user" | "assistant";
type MetaObject = Record<string, unknown>;
type Annotations = {
  audience?: Role[];
  priority?: number;
  lastModified?: string;
};
type Icon = {
  src: string;
  mimeType?: string;
  sizes?: string[];
  theme?: "light" | "dark";
};
type TextResourceContents = {
  uri: string;
  mimeType?: string;
  _meta?: MetaObject;
  text: string;
};
type BlobResourceContents = {
  uri: string;
  mimeType?: string;
  _meta?: MetaObject;
  blob: string;
};
type TextContent = {
  type: "text";
  text: string;
  annotations?: Annotations;
  _meta?: MetaObject;
};
type ImageContent = {
  type: "image";
  data: string;
  mimeType: string;
  annotations?: Annotations;
  _meta?: MetaObject;
};
type AudioContent = {
  type: "audio";
  data: string;
  mimeType: string;
  annotations?: Annotations;
  _meta?: MetaObject;
};
type ResourceLink = {
  icons?: Icon[];
  name: string;
  title?: string;
  uri: string;
  description?: string;
  mimeType?: string;
  annotations?: Annotations;
  size?: number;
  _meta?: MetaObject;
  type: "resource_link";
};
type EmbeddedResource = {
  type: "resource";
  resource: TextResourceContents | BlobResourceContents;
  annotations?: Annotations;
  _meta?: MetaObject;
};
type ContentBlock =
  | TextContent
  | ImageContent
  | AudioContent
  | ResourceLink
  | EmbeddedResource;
type CallToolResult<TStructured = { [key: string]: unknown }> = {
  _meta?: MetaObject;
  content: ContentBlock[];
  isError?: boolean;
  structuredContent?: TStructured;
  [key: string]: unknown;
};"""
"""TypeScript declarations of the MCP result types, exactly the reference's text
(openai/codex ``codex-rs/code-mode-protocol/src/description.rs``,
``MCP_TYPESCRIPT_PREAMBLE``, commit 4f39251a010a), modelled on the MCP schema.

Shown once in the ``exec`` description (under ``Shared MCP Types:``) when any tool
returns a ``CallToolResult``, so each such tool's declaration can stay one line."""
