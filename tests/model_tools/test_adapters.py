"""Tool definitions and results in OpenAI Responses, Anthropic and MCP shapes."""

from __future__ import annotations

import base64
import json
import re

import pytest

from code_mode import (
    Audio,
    Image,
    ImageDetail,
    OutputItem,
    Text,
    ToolDefinition,
    ToolKind,
    ToolName,
)
from code_mode.model_tools.adapters import (
    EXEC_LARK_GRAMMAR,
    MCP_META_CELL,
    MCP_META_SESSION,
    ExecArgumentsError,
    anthropic_content,
    anthropic_exec_tool,
    anthropic_tool_result,
    anthropic_wait_tool,
    exec_json_parameters,
    exec_source_from_arguments,
    exec_source_from_call,
    mcp_call_tool_result,
    mcp_content,
    mcp_exec_tool,
    mcp_text,
    mcp_wait_tool,
    openai_content,
    openai_exec_output,
    openai_exec_tool,
    openai_wait_output,
    openai_wait_tool,
    wait_parameters,
)
from code_mode.model_tools.descriptions import exec_description, wait_description
from code_mode.model_tools.pragma import ExecInputError, PragmaError, parse_exec_input

TOOLS = [ToolDefinition("lookup", ToolName("lookup"), "Look up a word.", ToolKind.FUNCTION)]
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
PNG_URL = f"data:image/png;base64,{PNG_B64}"
ITEMS: list[OutputItem] = [
    Text("hello"),
    Image(PNG_URL, ImageDetail.ORIGINAL),
    Image("https://example.com/a.jpg"),
]


def test_openai_exec_tool_is_a_custom_grammar_tool() -> None:
    tool = openai_exec_tool(TOOLS)
    assert tool == {
        "type": "custom",
        "name": "exec",
        "description": exec_description(TOOLS),
        "format": {"type": "grammar", "syntax": "lark", "definition": EXEC_LARK_GRAMMAR},
    }
    assert openai_exec_tool(TOOLS, grammar=False)["format"] == {"type": "text"}
    assert "### `lookup`" in tool["description"]
    assert "declare const tools" not in openai_exec_tool(TOOLS, deferred=True)["description"]
    json.dumps(tool)


def test_grammar_terminals_accept_the_pragma_forms() -> None:
    # The terminals use regex syntax Python understands too; check them on real inputs.
    terminals = dict(re.findall(r"^(\w+): /(.*)/$", EXEC_LARK_GRAMMAR, flags=re.MULTILINE))
    pragma, newline, source = (
        re.compile(terminals["PRAGMA_LINE"].replace(r"\/", "/")),
        re.compile(terminals["NEWLINE"]),
        re.compile(terminals["SOURCE"]),
    )
    assert pragma.fullmatch(' \t// @exec: {"yield_time_ms": 1}')
    assert not pragma.fullmatch("// @exec: {}\nx")
    assert newline.fullmatch("\r\n") and newline.fullmatch("\n")
    assert source.fullmatch("const a = 1;\n\ntext(a)\n")
    assert "start: pragma_source | plain_source" in EXEC_LARK_GRAMMAR


def test_openai_wait_tool() -> None:
    assert openai_wait_tool() == {
        "type": "function",
        "name": "wait",
        "description": wait_description(),
        "parameters": wait_parameters(),
        "strict": False,
    }


def test_wait_parameters_schema() -> None:
    schema = wait_parameters()
    assert schema["required"] == ["cell_id"]
    assert schema["additionalProperties"] is False
    assert {name: prop["type"] for name, prop in schema["properties"].items()} == {
        "cell_id": "string",
        "yield_time_ms": "integer",
        "max_tokens": "integer",
        "terminate": "boolean",
    }
    schema["required"].append("x")  # each call returns a fresh copy
    assert wait_parameters()["required"] == ["cell_id"]


def test_openai_content_and_outputs() -> None:
    parts = openai_content(ITEMS)
    assert parts == [
        {"type": "input_text", "text": "hello"},
        {"type": "input_image", "image_url": PNG_URL, "detail": "original"},
        {"type": "input_image", "image_url": "https://example.com/a.jpg", "detail": "auto"},
    ]
    no_original = openai_content(ITEMS, allow_original_detail=False)
    assert no_original[1] == {"type": "input_image", "image_url": PNG_URL, "detail": "auto"}
    assert openai_content([Image(PNG_URL, ImageDetail.LOW)])[0]["detail"] == "low"
    assert openai_exec_output("call_1", ITEMS) == {
        "type": "custom_tool_call_output",
        "call_id": "call_1",
        "output": parts,
    }
    assert openai_wait_output("call_2", ITEMS) == {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": parts,
    }


def wait_tool(schema_key: str) -> dict[str, object]:
    """The ``wait`` tool as Anthropic and MCP list tools: its schema under ``schema_key``."""
    return {"name": "wait", "description": wait_description(), schema_key: wait_parameters()}


def test_anthropic_tools() -> None:
    tool = anthropic_exec_tool(TOOLS)
    assert set(tool) == {"name", "description", "input_schema"}
    assert tool["name"] == "exec"
    assert tool["input_schema"] == exec_json_parameters()
    assert tool["input_schema"]["required"] == ["code"]
    assert tool["description"] == exec_description(TOOLS, code_argument="code", image_detail=False)
    assert anthropic_wait_tool() == wait_tool("input_schema")


def test_anthropic_content() -> None:
    assert anthropic_content(ITEMS) == [
        {"type": "text", "text": "hello"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
    ]


def test_anthropic_content_refuses_what_the_api_would_reject() -> None:
    svg = Image("data:image/svg+xml,%3Csvg%3E%3C/svg%3E")
    broken = Image("data:image/png;base64")
    assert anthropic_content([svg, broken]) == [
        {"type": "text", "text": "[image omitted: unsupported type image/svg+xml]"},
        {"type": "text", "text": "[image omitted: malformed data URL]"},
    ]


def test_anthropic_tool_result() -> None:
    assert anthropic_tool_result("toolu_1", [Text("x")], is_error=True) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "x"}],
        "is_error": True,
    }


def test_mcp_tools() -> None:
    tool = mcp_exec_tool(TOOLS)
    assert set(tool) == {"name", "description", "inputSchema"}
    assert tool["inputSchema"] == exec_json_parameters()
    assert "`code` argument" in tool["description"]
    wait = mcp_wait_tool()
    expected = wait_tool("inputSchema")
    assert {**wait, "inputSchema": None} == {**expected, "inputSchema": None}
    # Served as wait_parameters(), with each optional argument also `nullable`
    # (smolagents reads that, not `required`).
    schema = wait["inputSchema"]
    assert schema["required"] == ["cell_id"]
    for name, spec in schema["properties"].items():
        assert spec.pop("nullable", False) is (name != "cell_id")
    assert schema == wait_parameters()


def test_wait_parameters_state_the_defaults() -> None:
    properties = wait_parameters()["properties"]
    assert {name: spec.get("default") for name, spec in properties.items()} == {
        "cell_id": None,
        "yield_time_ms": 10000,
        "max_tokens": 10000,
        "terminate": False,
    }
    for name in ("yield_time_ms", "max_tokens", "terminate"):
        assert "Optional; default " in properties[name]["description"]


def test_mcp_content() -> None:
    assert mcp_content(ITEMS) == [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
        {"type": "text", "text": "Image: https://example.com/a.jpg"},
    ]
    # A percent-encoded (non-base64) data URL is decoded and re-encoded.
    svg = mcp_content([Image("data:image/svg+xml,%3Csvg%3E%3C/svg%3E")])
    assert svg == [
        {
            "type": "image",
            "data": base64.b64encode(b"<svg></svg>").decode(),
            "mimeType": "image/svg+xml",
        }
    ]
    assert mcp_content([Image("data:image/png;base64,@@@")]) == [
        {"type": "text", "text": "Image: data:image/png;base64,@@@"}
    ]
    assert mcp_call_tool_result([Text("x")]) == {
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
    }


def test_an_mcp_result_has_all_its_text_in_its_first_item() -> None:
    """Hosts that keep only the first content item (smolagents) still get the whole
    text: header, every text output joined a line each, then images and audio."""
    header = Text("Script running with cell ID 7\nWall time 0.1 seconds\nOutput:\n")
    audio = Audio("data:audio/wav;base64,UklGRg==")
    items = [header, Text("first"), Image(f"data:image/png;base64,{PNG_B64}"), Text("two\n"),
             Text("three"), audio, Image("https://example.com/a.jpg")]  # fmt: skip
    result = mcp_call_tool_result(items, session="S" * 24)
    assert result == {
        "content": [
            {
                "type": "text",
                "text": "Script running with cell ID 7\nWall time 0.1 seconds\nOutput:\n"
                "first\ntwo\nthree\nImage: https://example.com/a.jpg",
            },
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        ],
        "isError": False,
        "_meta": {MCP_META_CELL: "7", MCP_META_SESSION: "S" * 24},
    }
    # No structuredContent, whatever the result; a finished one names no cell.
    done = mcp_call_tool_result([Text("Script completed\nWall time 0.0 seconds\nOutput:\n")])
    assert done == {
        "content": [{"type": "text", "text": "Script completed\nWall time 0.0 seconds\nOutput:\n"}],
        "isError": False,
    }
    assert mcp_text([]) == ""


def test_exec_source_from_arguments_feeds_the_pragma_parser() -> None:
    code = '// @exec: {"yield_time_ms": 5}\ntext(1)'
    assert exec_source_from_arguments({"code": code}) == code
    assert exec_source_from_arguments(json.dumps({"code": code})) == code
    assert parse_exec_input(exec_source_from_arguments({"code": code})).yield_time_ms == 5


@pytest.mark.parametrize("arguments", ["not json", "[1]", {"source": "x"}, {"code": 5}])
def test_exec_source_from_bad_arguments(arguments: object) -> None:
    with pytest.raises(ExecArgumentsError) as info:
        exec_source_from_arguments(arguments)  # type: ignore[arg-type]
    assert str(info.value) == "exec expects JSON arguments with a string `code` field"
    # One `except` handles every malformed exec input, a bad pragma's included.
    assert isinstance(info.value, ExecInputError) and not isinstance(info.value, PragmaError)


@pytest.mark.parametrize(
    ("arguments", "source"),
    [
        ("text(1)", "text(1)"),  # a freeform tool's raw input
        ('{"code": "text(1)"}', "text(1)"),  # JSON text of the object
        ({"code": "text(1)"}, "text(1)"),
        ("{ not json }", "{ not json }"),  # braces, but a program: taken as given
        ('{"other": 1}', '{"other": 1}'),  # JSON without `code` is not arguments
    ],
)
def test_exec_source_from_a_call_as_any_api_sends_it(arguments: object, source: str) -> None:
    assert exec_source_from_call(arguments) == source  # type: ignore[arg-type]


def test_exec_source_from_a_call_refuses_an_object_without_code() -> None:
    with pytest.raises(ExecArgumentsError):
        exec_source_from_call({"code": 5})
