"""Every adapter output is a value the official SDKs' own types accept.

The adapters return plain dicts and import no SDK; these tests hold them to the OpenAI,
Anthropic and MCP SDKs' published param types (test-only dependencies), validated with
pydantic and with unknown keys forbidden, so a shape cannot drift from the SDKs unnoticed.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from code_mode import Image, ImageDetail, OutputItem, Text, ToolDefinition, ToolKind, ToolName
from code_mode.model_tools import adapters

pydantic = pytest.importorskip("pydantic")
pydantic_core = pytest.importorskip("pydantic_core")
openai_responses = pytest.importorskip("openai.types.responses")
openai_input_item = pytest.importorskip("openai.types.responses.response_input_item_param")
anthropic_types = pytest.importorskip("anthropic.types")
mcp_types = pytest.importorskip("mcp.types")

TOOLS = [ToolDefinition("lookup", ToolName("lookup"), "Look up a word.", ToolKind.FUNCTION)]
PNG_URL = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
ITEMS: list[OutputItem] = [
    Text("hello"),
    Image(PNG_URL),
    Image(PNG_URL, ImageDetail.ORIGINAL),
    Image(PNG_URL, ImageDetail.LOW),
    Image("https://example.com/a.jpg"),
    Image("https://example.com/b.jpg", ImageDetail.HIGH),
    Image("data:image/svg+xml,%3Csvg%3E%3C/svg%3E"),
    Image("data:image/png;base64"),
]


def _closed(node: Any) -> Any:
    """A copy of a pydantic core schema with every TypedDict closed to unknown keys, and
    ``Iterable`` fields validated eagerly as lists (pydantic validates them lazily)."""
    if isinstance(node, list):
        return [_closed(child) for child in node]
    if not isinstance(node, dict):
        return node
    node = {key: _closed(child) for key, child in node.items()}
    if node.get("type") == "generator":
        node["type"] = "list"
    if node.get("type") == "typed-dict":
        node["extra_behavior"] = "forbid"
    return node


def assert_sdk_accepts(value: Any, sdk_type: Any) -> None:
    """``value`` validates as ``sdk_type`` by its wire names, and validating loses
    nothing: the SDK's models ignore unknown keys, so a round trip that changes the value
    means a key the SDK does not know."""
    schema = _closed(pydantic.TypeAdapter(sdk_type).core_schema)
    validated = pydantic_core.SchemaValidator(schema).validate_python(
        value, by_alias=True, by_name=False
    )
    serializer = pydantic_core.SchemaSerializer(schema)
    round_trip = serializer.to_python(validated, mode="json", by_alias=True, exclude_unset=True)
    assert round_trip == value


def _openai_tools() -> list[tuple[dict[str, Any], Any]]:
    return [
        (adapters.openai_exec_tool(TOOLS), openai_responses.CustomToolParam),
        (adapters.openai_exec_tool(TOOLS, grammar=False), openai_responses.CustomToolParam),
        (adapters.openai_exec_tool(TOOLS, deferred=True), openai_responses.CustomToolParam),
        (adapters.openai_wait_tool(), openai_responses.FunctionToolParam),
    ]


def _openai_outputs() -> list[tuple[dict[str, Any], Any]]:
    exec_output = openai_responses.ResponseCustomToolCallOutputParam
    wait_output = openai_input_item.FunctionCallOutput
    return [
        (adapters.openai_exec_output("call_1", ITEMS), exec_output),
        (adapters.openai_exec_output("call_1", ITEMS, allow_original_detail=False), exec_output),
        (adapters.openai_wait_output("call_2", ITEMS), wait_output),
        (adapters.openai_wait_output("call_2", ITEMS, allow_original_detail=False), wait_output),
    ]


def _anthropic() -> list[tuple[dict[str, Any], Any]]:
    return [
        (adapters.anthropic_exec_tool(TOOLS), anthropic_types.ToolParam),
        (adapters.anthropic_exec_tool(TOOLS, deferred=True), anthropic_types.ToolParam),
        (adapters.anthropic_wait_tool(), anthropic_types.ToolParam),
        (adapters.anthropic_tool_result("toolu_1", ITEMS), anthropic_types.ToolResultBlockParam),
        (
            adapters.anthropic_tool_result("toolu_1", [Text("x")], is_error=True),
            anthropic_types.ToolResultBlockParam,
        ),
    ]


def _mcp() -> list[tuple[dict[str, Any], Any]]:
    return [
        (adapters.mcp_exec_tool(TOOLS), mcp_types.Tool),
        (adapters.mcp_exec_tool(TOOLS, deferred=True), mcp_types.Tool),
        (adapters.mcp_wait_tool(), mcp_types.Tool),
        (adapters.mcp_call_tool_result(ITEMS), mcp_types.CallToolResult),
        (adapters.mcp_call_tool_result([Text("x")], is_error=True), mcp_types.CallToolResult),
    ]


@pytest.mark.parametrize("cases", [_openai_tools, _openai_outputs, _anthropic, _mcp])
def test_adapter_outputs_match_the_sdk_types(
    cases: Callable[[], list[tuple[dict[str, Any], Any]]],
) -> None:
    for value, sdk_type in cases():
        assert_sdk_accepts(value, sdk_type)


def test_openai_images_always_name_a_detail() -> None:
    # openai 3.x requires ``detail`` on a custom tool output's image; "auto" is the
    # documented default, so an image without one, or an "original" the model may not
    # take, is sent as "auto".
    parts = adapters.openai_content(ITEMS, allow_original_detail=False)
    details = [part.get("detail") for part in parts if part["type"] == "input_image"]
    assert details == ["auto", "auto", "low", "auto", "high", "auto", "auto"]


@pytest.mark.parametrize(
    ("value", "sdk_type"),
    [
        pytest.param(
            {"type": "custom_tool_call_output", "call_id": "c", "output": [], "extra": 1},
            "exec_output",
            id="openai-unknown-top-level-key",
        ),
        pytest.param(
            {
                "type": "custom_tool_call_output",
                "call_id": "c",
                "output": [{"type": "input_image", "image_url": PNG_URL}],
            },
            "exec_output",
            id="openai-image-without-detail",
        ),
        pytest.param(
            {"content": [{"type": "image", "data": "aGk=", "mime_type": "image/png"}]},
            "mcp_result",
            id="mcp-python-name-instead-of-wire-name",
        ),
        pytest.param(
            {"content": [{"type": "text", "text": "x", "colour": "red"}], "isError": False},
            "mcp_result",
            id="mcp-unknown-nested-key",
        ),
    ],
)
def test_the_check_rejects_drifted_shapes(value: dict[str, Any], sdk_type: str) -> None:
    types = {
        "exec_output": openai_responses.ResponseCustomToolCallOutputParam,
        "mcp_result": mcp_types.CallToolResult,
    }
    with pytest.raises((pydantic.ValidationError, AssertionError)):
        assert_sdk_accepts(value, types[sdk_type])
