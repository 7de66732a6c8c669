"""Plain-data adapters: ``exec``/``wait`` tool definitions and results in the shapes of
the major LLM APIs, so code mode plugs into any agent loop without glue code.

Everything here returns fresh ``dict``/``list`` values ready for ``json.dumps`` or an
SDK call; nothing imports an SDK. Shapes (as published at the time of writing):

* **OpenAI Responses API**. ``exec`` is a *custom* tool
  (``{"type": "custom", "name", "description", "format"}``) whose input is free text;
  its ``format`` is a Lark grammar (``{"type": "grammar", "syntax": "lark",
  "definition"}``) that admits exactly "optional pragma line, newline, source", or
  ``{"type": "text"}`` (unconstrained) on request. ``wait`` is a function tool
  (``{"type": "function", "name", "description", "parameters", "strict"}``). Results
  go back as ``custom_tool_call_output`` / ``function_call_output`` items whose
  ``output`` is a list of ``input_text`` / ``input_image`` parts; an image always
  carries a ``detail``. Tool outputs cannot carry audio there: an audio item becomes
  an ``input_text`` part saying so (:func:`audio_note`).
* **Anthropic Messages API**. Tools are ``{"name", "description", "input_schema"}``.
  There are no free-text tools, so ``exec`` takes ``{"code": string}`` and its
  description says so. Results are ``tool_result`` blocks with ``text`` and ``image``
  content (``source`` of type ``base64`` for ``data:`` URLs, ``url`` otherwise); an
  audio item becomes a text block saying so, as the API takes no audio there.
* **MCP**. Tools are ``{"name", "description", "inputSchema"}``; ``exec`` takes
  ``{"code": string}`` as for Anthropic. Results are ``CallToolResult`` objects with
  ``text``, ``image`` and ``audio`` content (``data`` base64 + ``mimeType``); MCP has
  no image URLs, so a remote image becomes a text item naming its URL.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from .._types import Audio, Image, ImageDetail, OutputItem, Text, ToolDefinition
from .call_arguments import (
    EXEC_CODE_ARGUMENT,
    ExecArgumentsError,
    WaitArgumentsError,
    exec_source_from_arguments,
    exec_source_from_call,
    wait_arguments_from_call,
)
from .descriptions import NamespaceDescription, exec_description, wait_description
from .formatting import running_cell_id
from .pragma import DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_YIELD_TIME_MS

if TYPE_CHECKING:
    # The SDKs' own parameter types, for type checkers only (the SDKs are optional): the
    # shapes below are typed as what `client.responses.create(tools=..., input=...)` and
    # `client.messages.create(tools=..., messages=...)` accept, so an agent loop passes
    # `mypy --strict` as written.
    from anthropic.types import ImageBlockParam, TextBlockParam, ToolResultBlockParam
    from anthropic.types import ToolParam as AnthropicToolParam
    from openai.types.responses import (
        CustomToolParam,
        FunctionToolParam,
        ResponseCustomToolCallOutputParam,
    )
    from openai.types.responses.response_input_item_param import FunctionCallOutput

__all__ = [
    "ANTHROPIC_IMAGE_MEDIA_TYPES",
    "EXEC_CODE_ARGUMENT",
    "EXEC_LARK_GRAMMAR",
    "EXEC_TOOL_NAME",
    "MCP_META_CELL",
    "MCP_META_SESSION",
    "OPENAI_DEFAULT_IMAGE_DETAIL",
    "WAIT_TOOL_NAME",
    "ExecArgumentsError",
    "WaitArgumentsError",
    "anthropic_content",
    "anthropic_exec_tool",
    "anthropic_tool_result",
    "anthropic_wait_tool",
    "audio_note",
    "exec_json_parameters",
    "exec_source_from_arguments",
    "exec_source_from_call",
    "mcp_call_tool_result",
    "mcp_content",
    "mcp_exec_tool",
    "mcp_input_schema",
    "mcp_text",
    "mcp_wait_tool",
    "openai_content",
    "openai_exec_output",
    "openai_exec_tool",
    "openai_wait_output",
    "openai_wait_tool",
    "wait_arguments_from_call",
    "wait_parameters",
]

EXEC_TOOL_NAME: Final = "exec"
WAIT_TOOL_NAME: Final = "wait"

MCP_META_CELL: Final = "code-mode/cell"
"""The ``_meta`` key of an MCP result that holds the running cell's ID (the text's
``Script running with cell ID <id>``, for a client that reads it by program)."""
MCP_META_SESSION: Final = "code-mode/session"
"""The ``_meta`` key of a stateless MCP result that holds its session handle (the
text's ``Session: <handle>``)."""

EXEC_LARK_GRAMMAR: Final = r"""
start: pragma_source | plain_source
pragma_source: PRAGMA_LINE NEWLINE SOURCE
plain_source: SOURCE

PRAGMA_LINE: /[ \t]*\/\/ @exec:[^\r\n]*/
NEWLINE: /\r?\n/
SOURCE: /[\s\S]+/
"""
"""The input grammar of ``exec`` for OpenAI custom tools: an optional pragma line
(spaces or tabs, ``// @exec:``, the rest of the line), a line break, then the source;
or just the source. It admits every valid input, and only constrains the model away
from wrapping the program in JSON or prose; :func:`~.pragma.parse_exec_input` does the
real validation."""

OPENAI_DEFAULT_IMAGE_DETAIL: Final = "auto"
"""The ``detail`` sent for an image that names none (the Responses API's default)."""

ANTHROPIC_IMAGE_MEDIA_TYPES: Final = frozenset(
    {"image/jpeg", "image/png", "image/gif", "image/webp"}
)
"""Image types the Anthropic API accepts; other ``data:`` images become a text note
rather than making the whole request fail."""


def wait_parameters() -> dict[str, Any]:
    """The JSON Schema of ``wait``'s arguments (a fresh copy each call).

    Only ``cell_id`` is required. Each optional argument states its ``default`` in the
    schema and again in its description, because not every API or host reads
    ``default``. Non-strict: optional fields stay optional (a strict-mode schema must
    list every property as required, so the adapters never mark it strict).
    """
    return {
        "type": "object",
        "properties": {
            "cell_id": {
                "type": "string",
                "description": "The id from `Script running with cell ID <id>`.",
            },
            "yield_time_ms": {
                "type": "integer",
                "minimum": 0,
                "default": DEFAULT_YIELD_TIME_MS,
                "description": "How long to wait before returning the output so far. "
                f"Optional; default {DEFAULT_YIELD_TIME_MS}.",
            },
            "max_tokens": {
                "type": "integer",
                "minimum": 0,
                "default": DEFAULT_MAX_OUTPUT_TOKENS,
                "description": "Output token budget of this call. Optional; default "
                f"{DEFAULT_MAX_OUTPUT_TOKENS}.",
            },
            "terminate": {
                "type": "boolean",
                "default": False,
                "description": "Stop the program instead of waiting. Optional; default false.",
            },
        },
        "required": ["cell_id"],
        "additionalProperties": False,
    }


def exec_json_parameters() -> dict[str, Any]:
    """The JSON Schema of ``exec``'s arguments where it cannot be a free-text tool:
    one required string, ``code``, holding exactly what a freeform call would send."""
    return {
        "type": "object",
        "properties": {
            EXEC_CODE_ARGUMENT: {
                "type": "string",
                "description": "The JavaScript source, optionally starting with a "
                '`// @exec: {"yield_time_ms": ..., "max_output_tokens": ...}` line.',
            }
        },
        "required": [EXEC_CODE_ARGUMENT],
        "additionalProperties": False,
    }


# --- OpenAI Responses API ---------------------------------------------------------


def openai_exec_tool(
    tools: Sequence[ToolDefinition],
    *,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
    deferred: bool = False,
    grammar: bool = True,
    push: bool = False,
    mcp: bool | None = None,
) -> CustomToolParam:
    """``exec`` as a Responses API custom (free-text) tool.

    With ``grammar=True`` the input is constrained by :data:`EXEC_LARK_GRAMMAR`;
    ``grammar=False`` sends ``{"type": "text"}`` for models or proxies without grammar
    support. ``push`` and ``mcp``: see :func:`~.descriptions.exec_description`."""
    text_format: dict[str, Any] = (
        {"type": "grammar", "syntax": "lark", "definition": EXEC_LARK_GRAMMAR}
        if grammar
        else {"type": "text"}
    )
    return cast(
        "CustomToolParam",
        {
            "type": "custom",
            "name": EXEC_TOOL_NAME,
            "description": exec_description(
                tools,
                namespace_descriptions=namespace_descriptions,
                deferred=deferred,
                push=push,
                mcp=mcp,
            ),
            "format": text_format,
        },
    )


def openai_wait_tool(*, push: bool = False, idle_floor_ms: int | None = None) -> FunctionToolParam:
    """``wait`` as a Responses API function tool (``strict: false``, because strict
    mode would force every optional argument to be present). ``push`` and
    ``idle_floor_ms``: see :func:`~.descriptions.wait_description`."""
    return cast(
        "FunctionToolParam",
        {
            "type": "function",
            "name": WAIT_TOOL_NAME,
            "description": wait_description(push=push, idle_floor_ms=idle_floor_ms),
            "parameters": wait_parameters(),
            "strict": False,
        },
    )


def openai_content(
    items: Sequence[OutputItem], *, allow_original_detail: bool = True
) -> list[dict[str, Any]]:
    """Content items as Responses API input parts: ``{"type": "input_text", "text"}``
    and ``{"type": "input_image", "image_url", "detail"}``; an audio item, which a tool
    output cannot carry, becomes an ``input_text`` part (:func:`audio_note`).

    An image always names its ``detail``: the SDK's type for a custom tool's output
    requires it, so an item without one is sent as ``"auto"`` (the API's default). Set
    ``allow_original_detail=False`` for models that reject ``"original"``: such images
    are sent as ``"auto"`` too rather than failing the request."""
    parts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Audio):
            parts.append({"type": "input_text", "text": audio_note(item)})
        elif isinstance(item, Image):
            detail = item.detail
            if detail is ImageDetail.ORIGINAL and not allow_original_detail:
                detail = None
            parts.append(
                {
                    "type": "input_image",
                    "image_url": item.image_url,
                    "detail": OPENAI_DEFAULT_IMAGE_DETAIL if detail is None else detail.value,
                }
            )
        else:
            parts.append({"type": "input_text", "text": item.text})
    return parts


def _openai_output(
    kind: str, call_id: str, items: Sequence[OutputItem], allow_original_detail: bool
) -> dict[str, Any]:
    return {
        "type": kind,
        "call_id": call_id,
        "output": openai_content(items, allow_original_detail=allow_original_detail),
    }


def openai_exec_output(
    call_id: str, items: Sequence[OutputItem], *, allow_original_detail: bool = True
) -> ResponseCustomToolCallOutputParam:
    """The ``custom_tool_call_output`` input item answering an ``exec`` call."""
    output = _openai_output("custom_tool_call_output", call_id, items, allow_original_detail)
    return cast("ResponseCustomToolCallOutputParam", output)


def openai_wait_output(
    call_id: str, items: Sequence[OutputItem], *, allow_original_detail: bool = True
) -> FunctionCallOutput:
    """The ``function_call_output`` input item answering a ``wait`` call."""
    output = _openai_output("function_call_output", call_id, items, allow_original_detail)
    return cast("FunctionCallOutput", output)


# --- Anthropic Messages API -------------------------------------------------------


def _json_exec_tool(
    tools: Sequence[ToolDefinition],
    schema_key: str,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None,
    deferred: bool,
    push: bool,
    mcp: bool | None,
) -> dict[str, Any]:
    """``exec`` for APIs without free-text tools: the source travels as ``code``; the
    APIs differ only in the name of the schema key."""
    return {
        "name": EXEC_TOOL_NAME,
        "description": exec_description(
            tools,
            namespace_descriptions=namespace_descriptions,
            deferred=deferred,
            code_argument=EXEC_CODE_ARGUMENT,
            push=push,
            # Neither API carries an image's detail level: no `detail` in the text.
            image_detail=False,
            mcp=mcp,
        ),
        schema_key: exec_json_parameters(),
    }


def anthropic_exec_tool(
    tools: Sequence[ToolDefinition],
    *,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
    deferred: bool = False,
    push: bool = False,
    mcp: bool | None = None,
) -> AnthropicToolParam:
    """``exec`` as an Anthropic tool taking ``{"code": string}`` (the API has no
    free-text tools); read the source back with :func:`exec_source_from_arguments`."""
    return cast(
        "AnthropicToolParam",
        _json_exec_tool(tools, "input_schema", namespace_descriptions, deferred, push, mcp),
    )


def anthropic_wait_tool(
    *, push: bool = False, idle_floor_ms: int | None = None
) -> AnthropicToolParam:
    """``wait`` as an Anthropic tool."""
    return cast(
        "AnthropicToolParam",
        {
            "name": WAIT_TOOL_NAME,
            "description": wait_description(push=push, idle_floor_ms=idle_floor_ms),
            "input_schema": wait_parameters(),
        },
    )


def anthropic_content(
    items: Sequence[OutputItem],
) -> list[TextBlockParam | ImageBlockParam]:
    """Content items as Anthropic content blocks: ``{"type": "text", "text"}`` and
    ``{"type": "image", "source": ...}`` with a ``base64`` source for ``data:`` URLs
    and a ``url`` source otherwise; an audio item, which a ``tool_result`` cannot carry,
    becomes a text block (:func:`audio_note`). An image the API would refuse (a type outside
    :data:`ANTHROPIC_IMAGE_MEDIA_TYPES`, or a malformed ``data:`` URL) becomes a text
    block saying so; image detail has no Anthropic equivalent and is dropped."""
    blocks: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Audio):
            blocks.append({"type": "text", "text": audio_note(item)})
            continue
        if isinstance(item, Text):
            blocks.append({"type": "text", "text": item.text})
            continue
        if not item.image_url.startswith("data:"):
            blocks.append({"type": "image", "source": {"type": "url", "url": item.image_url}})
            continue
        decoded = _parse_data_url(item.image_url)
        if decoded is None:
            blocks.append({"type": "text", "text": "[image omitted: malformed data URL]"})
        elif decoded[0] not in ANTHROPIC_IMAGE_MEDIA_TYPES:
            blocks.append(
                {"type": "text", "text": f"[image omitted: unsupported type {decoded[0]}]"}
            )
        else:
            source = {"type": "base64", "media_type": decoded[0], "data": decoded[1]}
            blocks.append({"type": "image", "source": source})
    # The SDK's block types (TypedDicts), so a host's messages type-check against them.
    return cast("list[TextBlockParam | ImageBlockParam]", blocks)


def anthropic_tool_result(
    tool_use_id: str, items: Sequence[OutputItem], *, is_error: bool = False
) -> ToolResultBlockParam:
    """The ``tool_result`` block answering an ``exec`` or ``wait`` call (goes in a
    ``user`` message). Pass ``is_error=not result_succeeded(result)``."""
    return cast(
        "ToolResultBlockParam",
        {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": anthropic_content(items),
            "is_error": is_error,
        },
    )


# --- MCP --------------------------------------------------------------------------


def mcp_input_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (an object schema) as MCP serves it: each property that is not in
    ``required`` also says ``"nullable": true``.

    Why: MCP hosts turn a tool's ``inputSchema`` into their own tool type, and some
    read only its ``properties``. smolagents (through mcpadapt) takes an argument as
    optional only when its property says ``nullable`` (OpenAPI's keyword, which JSON
    Schema validators ignore), and otherwise refuses a call without it ("Argument
    max_tokens is required"). Every argument our servers take as optional also takes
    ``null`` as "not given", so the keyword is true as well as useful."""
    required = set(schema.get("required", ()))
    properties = {
        name: {**spec, "nullable": True} if name not in required else dict(spec)
        for name, spec in schema.get("properties", {}).items()
    }
    return {**schema, "properties": properties}


def mcp_exec_tool(
    tools: Sequence[ToolDefinition],
    *,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
    deferred: bool = False,
    push: bool = False,
    mcp: bool | None = None,
) -> dict[str, Any]:
    """``exec`` as an MCP tool definition taking ``{"code": string}``
    (:func:`mcp_input_schema`)."""
    tool = _json_exec_tool(tools, "inputSchema", namespace_descriptions, deferred, push, mcp)
    tool["inputSchema"] = mcp_input_schema(tool["inputSchema"])
    return tool


def mcp_wait_tool(*, push: bool = False, idle_floor_ms: int | None = None) -> dict[str, Any]:
    """``wait`` as an MCP tool definition (:func:`mcp_input_schema`)."""
    return {
        "name": WAIT_TOOL_NAME,
        "description": wait_description(push=push, idle_floor_ms=idle_floor_ms),
        "inputSchema": mcp_input_schema(wait_parameters()),
    }


def mcp_content(items: Sequence[OutputItem]) -> list[dict[str, Any]]:
    """Content items as MCP content blocks: ``{"type": "text", "text"}``,
    ``{"type": "image", "data", "mimeType"}`` (base64) for ``data:`` URLs and
    ``{"type": "audio", "data", "mimeType"}``. MCP images carry their bytes, so a remote
    image, or a ``data:`` URL that cannot be decoded, becomes a text block naming it;
    detail is dropped."""
    blocks: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Audio):
            audio = _parse_data_url(item.audio_url)
            if audio is None:
                blocks.append({"type": "text", "text": "[audio omitted: malformed data URL]"})
            else:
                blocks.append({"type": "audio", "data": audio[1], "mimeType": audio[0]})
            continue
        if isinstance(item, Text):
            blocks.append({"type": "text", "text": item.text})
            continue
        decoded = _parse_data_url(item.image_url) if item.image_url.startswith("data:") else None
        if decoded is None:
            blocks.append({"type": "text", "text": f"Image: {item.image_url}"})
        else:
            blocks.append({"type": "image", "data": decoded[1], "mimeType": decoded[0]})
    return blocks


def mcp_call_tool_result(
    items: Sequence[OutputItem], *, is_error: bool = False, session: str | None = None
) -> dict[str, Any]:
    """An MCP ``CallToolResult`` answering an ``exec`` or ``wait`` call. Pass
    ``is_error=not result_succeeded(result)``; ``session``: the session handle of a
    stateless result, already named in the header's ``Session:`` line.

    All of the result's text is in its first content item (:func:`mcp_text`), images
    and audio after it: several hosts give the model only the first item (smolagents),
    or the structured content in place of the content (pydantic-ai), so the result has
    no ``structuredContent``. What a client may want to read by program is in
    ``_meta`` as well as in the text: :data:`MCP_META_CELL` for a running cell,
    :data:`MCP_META_SESSION` for a stateless session."""
    blocks = mcp_content(items)
    media = [block for block in blocks if block["type"] != "text"]
    content = [{"type": "text", "text": mcp_text(blocks)}, *media]
    result: dict[str, Any] = {"content": content, "isError": is_error}
    meta: dict[str, str] = {}
    cell = running_cell_id(items)
    if cell is not None:
        meta[MCP_META_CELL] = cell
    if session is not None:
        meta[MCP_META_SESSION] = session
    if meta:
        result["_meta"] = meta
    return result


def mcp_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The text blocks of ``blocks`` as one text, in order: each starts on a new line
    (a line break is added only where the text before has none), so the header is
    followed by the output as a program printed it."""
    text = ""
    for block in blocks:
        if block["type"] == "text":
            if text and not text.endswith("\n"):
                text += "\n"
            text += block["text"]
    return text


def audio_note(item: Audio) -> str:
    """The text that stands for an audio item where an API takes no audio in tool
    results (OpenAI's Responses API, Anthropic's Messages API): it says what was left
    out, so the model knows a clip exists and can ask for it another way, e.g.
    ``[audio omitted: audio/wav, 48044 bytes; this API takes no audio in tool results]``."""
    decoded = _parse_data_url(item.audio_url)
    if decoded is None:
        return "[audio omitted: malformed data URL; this API takes no audio in tool results]"
    size = len(decoded[1]) * 3 // 4 - decoded[1][-2:].count("=")
    return f"[audio omitted: {decoded[0]}, {size} bytes; this API takes no audio in tool results]"


def _parse_data_url(url: str) -> tuple[str, str] | None:
    """``data:[<type>][;params][;base64],<payload>`` -> ``(media type, base64 data)``,
    or ``None`` when malformed. A non-base64 payload is percent-decoded and encoded."""
    if not url.startswith("data:"):
        return None
    header, comma, payload = url[len("data:") :].partition(",")
    if not comma:
        return None
    params = [param.strip() for param in header.split(";")]
    media_type = params[0].lower() or "text/plain"
    if len(params) > 1 and params[-1].lower() == "base64":
        data = "".join(urllib.parse.unquote(payload).split())
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
        return media_type, data
    return media_type, base64.b64encode(urllib.parse.unquote_to_bytes(payload)).decode("ascii")
