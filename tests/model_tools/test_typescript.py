"""JSON Schema -> TypeScript rendering, MCP detection, identifiers and declarations."""

from __future__ import annotations

from typing import Any

import pytest

from code_mode import ToolDefinition, ToolKind
from code_mode.model_tools.mcp_results import (
    MCP_TYPES_PREAMBLE,
    is_mcp_call_tool_result,
    mcp_structured_content_schema,
)
from code_mode.model_tools.typescript import (
    MAX_DEPTH,
    MAX_RENDER_WORK_BYTES,
    MAX_RENDERED_BYTES,
    MAX_TOTAL_REF_EXPANSIONS,
    normalize_identifier,
    render_schema,
    tool_declaration,
)

from .schemas import mcp_result_schema, tool_definition

NODE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}},
    },
    "required": ["name"],
}

CASES: list[tuple[str, Any, str]] = [
    # booleans and non-objects
    ("true schema", True, "unknown"),
    ("false schema", False, "never"),
    ("non-object schema", 42, "unknown"),
    ("empty schema", {}, "unknown"),
    # const and enum
    ("const string", {"const": "a"}, '"a"'),
    ("const object is compact JSON", {"const": {"a": [1, 2]}}, '{"a":[1,2]}'),
    ("const wins over type", {"const": 1, "type": "string"}, "1"),
    ("const null", {"const": None}, "null"),
    ("enum", {"enum": ["a", 1, None, True]}, '"a" | 1 | null | true'),
    ("empty enum falls through", {"enum": [], "type": "string"}, "string"),
    ("non-ASCII literal kept raw", {"const": "café"}, '"café"'),
    # unions and intersections
    ("anyOf", {"anyOf": [{"type": "string"}, {"type": "number"}]}, "string | number"),
    ("oneOf", {"oneOf": [{"type": "boolean"}, {"type": "null"}]}, "boolean | null"),
    (
        "anyOf before oneOf",
        {"anyOf": [{"type": "string"}], "oneOf": [{"type": "number"}]},
        "string",
    ),
    ("empty anyOf falls to oneOf", {"anyOf": [], "oneOf": [{"type": "null"}]}, "null"),
    (
        "allOf",
        {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"required": []}]},
        "{ a?: string; } & { [key: string]: unknown; }",
    ),
    # type keywords
    ("string", {"type": "string"}, "string"),
    ("integer is number", {"type": "integer"}, "number"),
    ("number", {"type": "number"}, "number"),
    ("boolean", {"type": "boolean"}, "boolean"),
    ("null", {"type": "null"}, "null"),
    ("unknown keyword", {"type": "date"}, "unknown"),
    ("type array", {"type": ["string", "null"]}, "string | null"),
    ("type array skips non-strings", {"type": ["string", 5]}, "string"),
    (
        "type array with object and array",
        {"type": ["object", "array"], "items": {"type": "number"}},
        "{ [key: string]: unknown; } | Array<number>",
    ),
    # arrays
    ("array of", {"type": "array", "items": {"type": "string"}}, "Array<string>"),
    ("array without items", {"type": "array"}, "unknown[]"),
    (
        "tuple",
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
        "[string, number]",
    ),
    ("empty prefixItems", {"type": "array", "prefixItems": []}, "unknown[]"),
    ("items without type", {"items": {"type": "boolean"}}, "Array<boolean>"),
    ("nested arrays", {"items": {"items": {"type": "null"}}}, "Array<Array<null>>"),
    # objects
    ("bare object", {"type": "object"}, "{ [key: string]: unknown; }"),
    ("closed empty object", {"type": "object", "additionalProperties": False}, "{}"),
    (
        "properties sorted, required and optional",
        {
            "type": "object",
            "properties": {"b": {"type": "string"}, "a": {"type": "number"}},
            "required": ["b"],
        },
        "{ a?: number; b: string; }",
    ),
    (
        "code point order",
        {"properties": {"b": {}, "B": {}, "a": {}, "_": {}}},
        "{ B?: unknown; _?: unknown; a?: unknown; b?: unknown; }",
    ),
    (
        "quoted names",
        {"properties": {"foo-bar": {"type": "string"}, "1x": {}, "": {}}},
        '{ ""?: unknown; "1x"?: unknown; "foo-bar"?: string; }',
    ),
    (
        "quoted name escapes",
        {"properties": {'say "hi"': {"type": "string"}}, "required": ['say "hi"']},
        '{ "say \\"hi\\"": string; }',
    ),
    (
        "$ and _ names are identifiers",
        {"properties": {"$x": {}, "_y": {}}},
        "{ $x?: unknown; _y?: unknown; }",
    ),
    (
        "additionalProperties true",
        {"properties": {"a": {"type": "string"}}, "additionalProperties": True},
        "{ a?: string; [key: string]: unknown; }",
    ),
    (
        "additionalProperties schema",
        {"type": "object", "additionalProperties": {"type": "number"}},
        "{ [key: string]: number; }",
    ),
    (
        "additionalProperties false",
        {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
        "{ a?: string; }",
    ),
    (
        "absent additionalProperties with properties: no index",
        {"type": "object", "properties": {"a": {"type": "string"}}},
        "{ a?: string; }",
    ),
    ("required only", {"required": ["x"]}, "{ [key: string]: unknown; }"),
    (
        "nested object inline",
        {
            "type": "object",
            "properties": {"p": {"type": "object", "properties": {"q": {"type": "integer"}}}},
            "required": ["p"],
        },
        "{ p: { q?: number; }; }",
    ),
    (
        "descriptions make it multi-line",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "  City name.\n\n  In English.  "},
                "days": {"type": "integer"},
            },
            "required": ["city"],
            "additionalProperties": {"type": "string"},
        },
        "{\n  // City name.\n  // In English.\n  city: string;\n  days?: number;\n"
        "  [key: string]: string;\n}",
    ),
    (
        "empty description stays single-line",
        {"properties": {"a": {"type": "string", "description": ""}}},
        "{ a?: string; }",
    ),
    (
        "CRLF description lines",
        {"properties": {"a": {"type": "string", "description": "one\r\ntwo"}}},
        "{\n  // one\n  // two\n  a?: string;\n}",
    ),
    (
        # The reference indents only a member's first line (json_schema_types.rs,
        # render_object, openai/codex a186f5484dc8); this package re-indented the rest.
        "nested multi-line object: only its first line is indented",
        {
            "properties": {
                "outer": {
                    "description": "Outer.",
                    "properties": {"inner": {"type": "string", "description": "Inner."}},
                }
            }
        },
        "{\n  // Outer.\n  outer?: {\n  // Inner.\n  inner?: string;\n};\n}",
    ),
    # $ref
    (
        "$ref into $defs",
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/Point"}},
            "required": ["p"],
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        },
        "{ p: { x?: number; }; }",
    ),
    (
        "$ref into definitions with escapes",
        {
            "properties": {"v": {"$ref": "#/definitions/a~1b%20c"}},
            "definitions": {"a/b c": {"type": "string"}},
        },
        "{ v?: string; }",
    ),
    (
        "$ref to root recursion expands twice",
        NODE,
        "{ children?: Array<{ children?: Array<{ children?: Array<unknown>; name: string; }>; "
        "name: string; }>; name: string; }",
    ),
    (
        "$ref with sibling",
        {
            "properties": {
                "v": {
                    "$ref": "#/$defs/A",
                    "required": ["b"],
                    "properties": {"b": {"type": "number"}},
                }
            },
            "$defs": {"A": {"properties": {"a": {"type": "string"}}}},
        },
        "{ v?: ({ a?: string; }) & ({ b: number; }); }",
    ),
    (
        "$ref with annotation siblings only",
        {
            "properties": {"v": {"$ref": "#/$defs/A", "title": "A"}},
            "$defs": {"A": {"type": "string"}},
        },
        "{ v?: string; }",
    ),
    ("unresolvable $ref", {"properties": {"v": {"$ref": "#/$defs/Nope"}}}, "{ v?: unknown; }"),
    ("remote $ref", {"$ref": "https://example.com/schema.json"}, "unknown"),
    ("unresolvable $ref with sibling", {"$ref": "#/nope", "type": "string"}, "string"),
    (
        "$ref into array index",
        {"$ref": "#/$defs/xs/1", "$defs": {"xs": [{}, {"type": "null"}]}},
        "null",
    ),
]


@pytest.mark.parametrize(
    ("schema", "expected"), [(s, e) for _, s, e in CASES], ids=[n for n, _, _ in CASES]
)
def test_render_schema(schema: Any, expected: str) -> None:
    assert render_schema(schema) == expected


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 35


def test_deep_nesting_is_cut_off() -> None:
    schema: Any = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    assert render_schema(schema) == "Array<" * MAX_DEPTH + "unknown" + ">" * MAX_DEPTH


def test_ref_resolves_against_explicit_root() -> None:
    root = {"$defs": {"A": {"type": "boolean"}}}
    assert render_schema({"$ref": "#/$defs/A"}, root=root) == "boolean"


def test_each_ref_target_expands_twice_along_a_path() -> None:
    """Upstream counts expansions per target (json_schema_types.rs,
    ``MAX_LOCAL_REF_EXPANSIONS_PER_PATH``, openai/codex commit a186f5484dc8): a chain of
    distinct targets resolves; this package counted every expansion on the path."""
    schema = {
        "$ref": "#/$defs/a",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"}, "c": {"type": "string"}},
    }
    assert render_schema(schema) == "string"
    loop = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    assert render_schema(loop) == "unknown"


# Upstream's json_schema_types_tests.rs (openai/codex commit a186f5484dc8).


def test_renders_recursive_local_refs_with_escaped_pointer_segments() -> None:
    clause = {"$ref": "#/$defs/Boolean~1Clause~0v1"}
    schema = {
        "type": "object",
        "properties": {"clauses": {"type": "array", "items": clause}},
        "$defs": {
            "Boolean/Clause~v1": {
                "type": "object",
                "properties": {"query": {"$ref": "#/$defs/Query"}},
            },
            "Query": {
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "properties": {"clauses": {"type": "array", "items": clause}},
                    },
                ]
            },
        },
    }
    rendered = render_schema(schema)
    assert "clauses?: Array<{ query?: string | { clauses?: Array<{" in rendered
    assert "query?: string | { clauses?: Array<unknown>; };" in rendered


def test_renders_ref_siblings_uri_fragments_and_all_of_precedence() -> None:
    label = {"$ref": "#/$defs/Label", "enum": ["A"], "$defs": {"Label": {"type": "string"}}}
    assert render_schema(label) == '(string) & ("A")'
    spaced = {"$ref": "#/$defs/Foo%20Bar", "$defs": {"Foo Bar": {"type": "string"}}}
    assert render_schema(spaced) == "string"
    choice = {
        "allOf": [
            {"$ref": "#/$defs/Choice"},
            {"type": "object", "properties": {"value": {"type": "string"}}},
        ],
        "$defs": {"Choice": {"oneOf": [{"type": "string"}, {"type": "number"}]}},
    }
    assert render_schema(choice) == "(string | number) & { value?: string; }"


def test_leaves_local_refs_under_nested_schema_resources_unresolved() -> None:
    schema = {
        "$defs": {"Choice": {"type": "string"}},
        "type": "object",
        "properties": {
            "nested": {
                "$id": "urn:nested",
                "$defs": {"Choice": {"type": "number"}},
                "type": "object",
                "properties": {"value": {"$ref": "#/$defs/Choice"}},
            }
        },
    }
    assert render_schema(schema) == "{ nested?: { value?: unknown; }; }"


def test_bounds_expansions_without_charging_dangling_refs() -> None:
    properties: dict[str, Any] = {
        f"a_missing_{i}": {"$ref": f"#/$defs/Missing{i}"} for i in range(MAX_TOTAL_REF_EXPANSIONS)
    }
    properties["z_valid"] = {"$ref": "#/$defs/Valid"}
    schema = {"type": "object", "properties": properties, "$defs": {"Valid": {"type": "string"}}}
    assert "z_valid?: string;" in render_schema(schema)
    many = {f"property_{i}": {"$ref": "#/$defs/Item"} for i in range(MAX_TOTAL_REF_EXPANSIONS + 2)}
    rendered = render_schema(
        {"type": "object", "properties": many, "$defs": {"Item": {"type": "string"}}}
    )
    assert rendered.count("string") == MAX_TOTAL_REF_EXPANSIONS
    assert rendered.count("unknown") == 2


def test_repeated_large_ref_expansions_exhaust_render_work_budget() -> None:
    item = {
        "type": "object",
        "properties": {"value": {"type": "string", "description": "x" * (MAX_RENDERED_BYTES // 2)}},
    }
    properties = {
        f"property_{i}": {"$ref": "#/$defs/Item"} for i in range(MAX_TOTAL_REF_EXPANSIONS)
    }
    schema = {"type": "object", "properties": properties, "$defs": {"Item": item}}
    assert render_schema(schema) == "unknown"


def test_oversized_ref_literal_exhausts_render_work_budget() -> None:
    schema = {"$ref": "#/$defs/Value", "$defs": {"Value": {"const": "x" * MAX_RENDER_WORK_BYTES}}}
    assert render_schema(schema) == "unknown"


def test_rendered_schema_has_a_hard_size_cap() -> None:
    description = "x" * MAX_RENDERED_BYTES
    schema = {
        "type": "object",
        "properties": {"value": {"type": "string", "description": description}},
    }
    assert render_schema(schema) == "unknown"


@pytest.mark.parametrize(
    ("name", "identifier"),
    [
        ("get_weather", "get_weather"),
        ("hidden-dynamic-tool", "hidden_dynamic_tool"),
        ("1abc", "_abc"),
        ("a1", "a1"),
        ("", "_"),
        ("$ok", "$ok"),
        ("mcp__ologs__get_profile", "mcp__ologs__get_profile"),
        ("a.b c", "a_b_c"),
        ("café", "caf_"),
        ("\uff46\uff55ll", "__ll"),  # full-width letters are not ASCII
        ("a\u0661", "a_"),  # nor are other digits
    ],
)
def test_normalize_identifier(name: str, identifier: str) -> None:
    assert normalize_identifier(name) == identifier


def test_mcp_detection() -> None:
    assert is_mcp_call_tool_result(mcp_result_schema())
    assert mcp_structured_content_schema(mcp_result_schema()) is True
    assert mcp_structured_content_schema(mcp_result_schema({"type": "string"})) == {
        "type": "string"
    }
    broken: Any
    for broken in (
        {"properties": {}},
        None,
        {"type": "object"},
        mcp_result_schema() | {"properties": {"content": {"type": "array"}}},
    ):
        assert not is_mcp_call_tool_result(broken)
    no_meta = mcp_result_schema()
    del no_meta["properties"]["_meta"]
    assert not is_mcp_call_tool_result(no_meta)
    bad_is_error = mcp_result_schema()
    bad_is_error["properties"]["isError"] = {"type": "string"}
    assert not is_mcp_call_tool_result(bad_is_error)


def _tool(name: str = "get_weather", **fields: Any) -> ToolDefinition:
    return tool_definition(name, "d", **fields)


def test_tool_declaration_function() -> None:
    tool = _tool(
        "hidden-dynamic-tool",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
    )
    assert tool_declaration(tool) == (
        "declare const tools: { hidden_dynamic_tool(args: { city: string; }): "
        "Promise<{ ok: boolean; }>; };"
    )


def test_tool_declaration_without_schemas() -> None:
    assert (
        tool_declaration(_tool("foo"))
        == "declare const tools: { foo(args: unknown): Promise<unknown>; };"
    )


def test_tool_declaration_freeform_ignores_input_schema() -> None:
    tool = _tool("apply_patch", kind=ToolKind.FREEFORM, input_schema={"type": "object"})
    assert (
        tool_declaration(tool)
        == "declare const tools: { apply_patch(input: string): Promise<unknown>; };"
    )


def test_tool_declaration_mcp_output() -> None:
    plain = _tool("search", output_schema=mcp_result_schema())
    assert tool_declaration(plain).endswith("Promise<CallToolResult>; };")
    typed = _tool(
        "search",
        output_schema=mcp_result_schema(
            {"type": "object", "properties": {"n": {"type": "integer"}}}
        ),
    )
    assert tool_declaration(typed).endswith("Promise<CallToolResult<{ n?: number; }>>; };")
    # structuredContent's refs resolve in structuredContent itself, as upstream's
    # code_mode_types_structured_content_result_refs (description.rs, openai/codex
    # 4f39251a010a) has them: an MCP server's outputSchema keeps its own $defs.
    refs = mcp_result_schema(
        {"$ref": "#/$defs/R", "$defs": {"R": {"type": "array", "items": {"type": "string"}}}}
    )
    assert tool_declaration(_tool("s", output_schema=refs)).endswith(
        "Promise<CallToolResult<Array<string>>>; };"
    )
    outer = mcp_result_schema({"$ref": "#/$defs/R"})
    outer["$defs"] = {"R": {"type": "string"}}
    assert tool_declaration(_tool("s", output_schema=outer)).endswith("Promise<CallToolResult>; };")


def test_tool_declaration_multi_line() -> None:
    tool = _tool(
        "weather_tool",
        input_schema={
            "type": "object",
            "properties": {
                "weather": {
                    "type": "array",
                    "description": "look up weather for a given list of locations",
                    "items": {
                        "type": "object",
                        "properties": {"location": {"type": "string"}},
                        "required": ["location"],
                    },
                }
            },
            "required": ["weather"],
        },
        output_schema={
            "type": "object",
            "properties": {
                "forecast": {"type": "string", "description": "human readable weather forecast"}
            },
            "required": ["forecast"],
        },
    )
    assert tool_declaration(tool) == (
        "declare const tools: { weather_tool(args: {\n"
        "  // look up weather for a given list of locations\n"
        "  weather: Array<{ location: string; }>;\n"
        "}): Promise<{\n"
        "  // human readable weather forecast\n"
        "  forecast: string;\n"
        "}>; };"
    )


def test_mcp_preamble_declares_the_shared_types() -> None:
    for name in (
        "Role",
        "MetaObject",
        "Annotations",
        "Icon",
        "TextResourceContents",
        "BlobResourceContents",
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
        "ContentBlock",
    ):
        assert f"type {name} =" in MCP_TYPES_PREAMBLE
    # The reference's declaration (openai/codex codex-rs/code-mode-protocol/src/
    # description.rs, MCP_TYPESCRIPT_PREAMBLE, commit 4f39251a010a).
    assert "type CallToolResult<TStructured = { [key: string]: unknown }> = {" in MCP_TYPES_PREAMBLE
    assert "type MetaObject = Record<string, unknown>;" in MCP_TYPES_PREAMBLE
    assert "```" not in MCP_TYPES_PREAMBLE
