"""The generated ``exec`` and ``wait`` descriptions.

The full ``exec`` description for a representative tool set is pinned by a golden file;
regenerate it after an intended change with ``UPDATE_GOLDEN=1 pytest tests/model_tools``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from code_mode import ToolDefinition, ToolKind, ToolName
from code_mode.model_tools.descriptions import (
    NamespaceDescription,
    augment_tool_definition,
    exec_description,
    exec_sections,
    tool_reference,
    tool_sample,
    wait_description,
)
from code_mode.model_tools.mcp_results import MCP_TYPES_PREAMBLE
from code_mode.model_tools.typescript import tool_declaration

from .schemas import mcp_result_schema, tool_definition

GOLDEN = Path(__file__).parent / "golden" / "exec_description.txt"


_tool = tool_definition


NAMESPACES = {
    "mcp__docs__": NamespaceDescription(
        "mcp__docs", "  Search and read the team's documentation.\nRead-only.  "
    ),
    "mcp__tracker__": NamespaceDescription("mcp__tracker", "Issue tracker of the project."),
    "mcp__quiet__": NamespaceDescription("mcp__quiet", "   "),
}

TOOLS = [
    _tool(
        "get_weather",
        "Current weather for a city.",
        input_schema={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. `Paris`."},
                "units": {"enum": ["metric", "imperial"]},
                "days": {"type": "integer", "description": "Forecast days.\nAt most 7."},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "temperature": {"type": "number"},
                "conditions": {"type": ["string", "null"]},
                "alerts": {"type": "array", "items": {"$ref": "#/$defs/Alert"}},
            },
            "required": ["temperature"],
            "$defs": {
                "Alert": {
                    "type": "object",
                    "properties": {
                        "level": {"const": "warning"},
                        "text": {"type": "string"},
                    },
                    "required": ["level", "text"],
                }
            },
        },
    ),
    _tool(
        "apply-patch",
        "Apply a patch in the unified diff format.",
        kind=ToolKind.FREEFORM,
    ),
    _tool(
        "mcp__docs__search",
        "Full-text search over the docs.",
        namespace="mcp__docs__",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"type": "string"}},
                        {"type": "null"},
                    ]
                },
                "page-size": {"type": "integer"},
                "range": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                },
            },
            "required": ["query"],
        },
        output_schema=mcp_result_schema(
            {
                "type": "object",
                "properties": {
                    "hits": {
                        "type": "array",
                        "items": {
                            "allOf": [
                                {"$ref": "#/$defs/Doc"},
                                {"properties": {"score": {"type": "number"}}},
                            ]
                        },
                    }
                },
                "required": ["hits"],
                # Refs in structuredContent resolve in it, as upstream renders it (and as
                # an MCP server's outputSchema, which becomes structuredContent, has them).
                "$defs": {
                    "Doc": {
                        "properties": {"id": {"type": "string"}, "title": {"type": "string"}},
                        "required": ["id"],
                    }
                },
            }
        ),
    ),
    _tool(
        "mcp__docs__read",
        "Read one page.",
        namespace="mcp__docs__",
        input_schema={
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "section": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            },
            "required": ["id"],
        },
        output_schema=mcp_result_schema(),
    ),
    _tool(
        "mcp__tracker__create_issue",
        "Open an issue.",
        namespace="mcp__tracker__",
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "parent": {"$ref": "#/$defs/Issue"},
                "extra": True,
            },
            "required": ["title"],
            "additionalProperties": True,
            "$defs": {
                "Issue": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "parent": {"$ref": "#/$defs/Issue"}},
                    "required": ["id"],
                }
            },
        },
        output_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        },
    ),
    _tool("mcp__quiet__ping", "Ping.", namespace="mcp__quiet__"),
    _tool("1st-tool", "", input_schema={"type": "object"}, output_schema={"type": "string"}),
    _tool(
        "mcp__docs__feedback",
        "Send feedback (back in the docs namespace).",
        namespace="mcp__docs__",
        input_schema={
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
        output_schema=False,  # type: ignore[arg-type]
    ),
]


ADD = _tool(
    "add",
    "Add two integers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    output_schema={"type": "integer"},
)


@pytest.mark.parametrize(
    ("name", "options"),
    [
        # MCP tools among others: the reference's MCP wording and types.
        ("exec_description.txt", {"tools": TOOLS, "namespace_descriptions": NAMESPACES}),
        # One plain tool, served as MCP serves exec: no MCP concept (issue 35, item 6).
        ("exec_description_without_mcp.txt", {"tools": [ADD], "code_argument": "code",
                                              "image_detail": False}),
        # Deferred: the same text for every catalog (issue 35, item 6).
        ("exec_description_deferred.txt", {"tools": TOOLS, "deferred": True}),
    ],
)  # fmt: skip
def test_exec_description_golden(name: str, options: dict[str, Any]) -> None:
    golden = GOLDEN.with_name(name)
    description = exec_description(**options)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(description, encoding="utf-8")
    assert description == golden.read_text(encoding="utf-8")


# The reference's texts, verbatim (openai/codex
# codex-rs/code-mode-protocol/src/description.rs, commit 4f39251a010a:
# EXEC_DESCRIPTION_TEMPLATE, WAIT_DESCRIPTION_TEMPLATE, DEFERRED_NESTED_TOOLS_GUIDANCE).
REFERENCE_EXEC_TEMPLATE = "\n".join(
    [
        "Run JavaScript code to orchestrate/compose tool calls",
        ("- Evaluates the provided JavaScript code in a fresh V8 isolate as an async module."),
        (
            "- All nested tools are available on the global `tools` object, for example "
            "`await tools.exec_command(...)`. Tool names are exposed as normalized "
            "JavaScript identifiers, for example `await tools.mcp__ologs__get_profile(...)`."
        ),
        "- Nested tool methods take either a string or an object as their input argument.",
        "- Nested tools return either an object or a string, based on the description.",
        "- Runs raw JavaScript -- no Node, no file system, no network access, no console.",
        (
            "- Accepts raw JavaScript source text, not JSON, quoted strings, or markdown "
            "code fences."
        ),
        (
            "- You may optionally start the tool input with a first-line pragma like `// "
            '@exec: {"yield_time_ms": 10000, "max_output_tokens": 1000}`.'
        ),
        (
            "- `yield_time_ms` asks `exec` to yield early if the script is still running. "
            "Defaults to 10000 ms."
        ),
        (
            "- `max_output_tokens` sets the token budget for direct `exec` results. Defaults "
            "to 10000 tokens."
        ),
        (
            "- When the JS code is fully evaluated, the isolate's lifetime ends and "
            "unawaited promises are silently discarded."
        ),
        "",
        "- Global helpers:",
        (
            "- `exit()`: Immediately ends the current script successfully (like an early "
            "return from the top level)."
        ),
        (
            "- `text(value: string | number | boolean | undefined | null)`: Appends a text "
            "item. Non-string values are stringified with `JSON.stringify(...)` when "
            "possible."
        ),
        (
            '- `image(imageUrlOrItem: string | { image_url: string; detail?: "auto" | "low" '
            '| "high" | "original" | null } | ImageContent, detail?: "auto" | "low" | "high" '
            '| "original" | null)`: Appends an image item. `image_url` should be a '
            "base64-encoded `data:` URL. To forward an MCP tool image, pass an individual "
            "`ImageContent` block from `result.content`, for example "
            "`image(result.content[0])`. MCP image blocks may request detail with `_meta: { "
            '"codex/imageDetail": "original" }`. When provided, the second `detail` argument '
            "overrides any detail embedded in the first argument."
        ),
        (
            "- `audio(audioUrlOrItem: string | { audio_url: string } | AudioContent)`: "
            "Appends an audio item. `audio_url` should be a base64-encoded `data:` URL. To "
            "forward an MCP tool audio block, pass an individual `AudioContent` block from "
            "`result.content`, for example `audio(result.content[0])`."
        ),
        (
            "- `generatedImage(result: { image_url: string; output_hint?: string })`: "
            "Appends an image-generation result and its optional output hint. HTTP(S) URLs "
            "are not supported."
        ),
        (
            "- `store(key: string, value: any)`: stores a serializable value under a string "
            "key for later `exec` calls in the same session."
        ),
        (
            "- `load(key: string)`: returns the stored value for a string key, or "
            "`undefined` if it is missing."
        ),
        (
            "- `notify(value: string | number | boolean | undefined | null)`: immediately "
            "injects an extra `custom_tool_call_output` for the current `exec` call. Values "
            "are stringified like `text(...)`."
        ),
        (
            "- `setTimeout(callback: () => void, delayMs?: number)`: schedules a callback to "
            "run later and returns a timeout id. Pending timeouts do not keep `exec` alive "
            "by themselves; await an explicit promise if you need to wait for one."
        ),
        "- `clearTimeout(timeoutId?: number)`: cancels a timeout created by `setTimeout`.",
        (
            "- `ALL_TOOLS`: metadata for the enabled nested tools as `{ name, description }` "
            "entries."
        ),
        (
            "- `yield_control()`: yields the accumulated output to the model immediately "
            "while the script keeps running."
        ),
    ]
)
REFERENCE_WAIT = "\n".join(
    [
        "- Use `wait` only after `exec` returns `Script running with cell ID ...`.",
        "- `cell_id` identifies the running `exec` cell to resume.",
        (
            "- `yield_time_ms` controls how long to wait for more output before yielding "
            "again. Defaults to 10000 ms."
        ),
        (
            "- `max_tokens` limits how much new output this wait call returns. Defaults to "
            "10000 tokens."
        ),
        "- `terminate: true` stops the running cell; false or omitted waits for output.",
        (
            "- `wait` returns only the new output since the last yield, or the final "
            "completion or termination result for that cell."
        ),
        "- If the cell is still running, `wait` may yield again with the same `cell_id`.",
        (
            "- If the cell has already finished, `wait` returns the completed result and "
            "closes the cell."
        ),
    ]
)
REFERENCE_DEFERRED = "\n".join(
    [
        (
            "Some deferred nested tools may be omitted from this description. They are still "
            "available on the global `tools` object and listed in `ALL_TOOLS`."
        ),
        "To find one, filter `ALL_TOOLS` by `name` and `description`.",
        "",
        "Tool availability can change between calls.",
    ]
)
# Where this package's text departs from the reference's to say only what is true of
# this host (issue 27): examples from the session's own tools (none here), what a tool
# takes and returns, what `notify` does, and `console`, which exists here.
TRUE_OF_THIS_HOST = {
    (
        "- All nested tools are available on the global `tools` object, for example "
        "`await tools.exec_command(...)`. Tool names are exposed as normalized "
        "JavaScript identifiers, for example `await tools.mcp__ologs__get_profile(...)`."
    ): (
        "- All nested tools are available on the global `tools` object. Tool names are "
        "exposed as normalized JavaScript identifiers (a character other than a letter, a "
        "digit, `_` or `$` becomes `_`)."
    ),
    "- Nested tool methods take either a string or an object as their input argument.": (
        "- Nested tool methods take an object as their input argument."
    ),
    "- Nested tools return either an object or a string, based on the description.": (
        "- Nested tools return JSON data (an object, a string, a number, ...), based on the "
        "description."
    ),
    (
        "- `notify(value: string | number | boolean | undefined | null)`: immediately "
        "injects an extra `custom_tool_call_output` for the current `exec` call. Values "
        "are stringified like `text(...)`."
    ): (
        "- `notify(value: string | number | boolean | undefined | null)`: immediately sends "
        "the host a notification for the current `exec` call. Values are stringified like "
        "`text(...)`."
    ),
    "- Runs raw JavaScript -- no Node, no file system, no network access, no console.": (
        "- Runs raw JavaScript -- no Node, no file system, no network access."
    ),
}


def test_description_parts_in_order() -> None:
    """Upstream ``build_exec_tool_description``: template, Shared MCP Types, then the
    tool reference, joined by blank lines, with no heading of its own (the
    ``# Tools`` heading of earlier versions is gone)."""
    description = exec_description(TOOLS, namespace_descriptions=NAMESPACES)
    assert description.startswith("Run JavaScript code to orchestrate/compose tool calls\n")
    shared = description.index("\n\nShared MCP Types:\n```ts\n" + MCP_TYPES_PREAMBLE + "\n```\n\n")
    tools = description.index("\n\n### `get_weather`\n")
    assert shared < tools
    assert description.count("Shared MCP Types:") == 1
    assert "# Tools" not in description


def test_guide_is_the_reference_template_plus_our_extras() -> None:
    """The guide is upstream's template word for word, except for the lines that
    would not be true of this host (:data:`TRUE_OF_THIS_HOST`), followed by the two
    helpers upstream does not have. (Upstream's helper lines speak of MCP: so does this
    description, ``mcp=True``.)"""
    guide = exec_sections([], mcp=True)[0]
    reference = "\n".join(
        TRUE_OF_THIS_HOST.get(line, line) for line in REFERENCE_EXEC_TEMPLATE.splitlines()
    )
    assert guide.startswith(reference + "\n")
    extras = guide[len(reference) + 1 :].splitlines()
    assert [line.split("`")[1].split("(")[0] for line in extras] == [
        "console.log",
        "forward_output",
    ]
    assert "Shared MCP Types" not in guide


def test_wait_description_is_the_reference_text() -> None:
    assert wait_description() == REFERENCE_WAIT


def test_reference_blocks() -> None:
    reference = tool_reference(TOOLS, NAMESPACES)
    blocks = reference.split("\n\n")
    assert "### `get_weather`\nCurrent weather for a city." in reference
    assert "### `apply_patch` (`apply-patch`)\nApply a patch" in reference
    assert "apply_patch(input: string): Promise<unknown>;" in reference
    assert "## mcp__docs\nSearch and read the team's documentation.\nRead-only." in blocks
    # A namespace with a blank description has no heading; a returning one repeats it.
    assert "## mcp__quiet" not in reference
    assert reference.count("## mcp__docs\n") == 2
    assert reference.count("## mcp__tracker\n") == 1
    # An empty description still gets its declaration.
    assert "### `_st_tool` (`1st-tool`)\nexec tool declaration:\n```ts\n" in reference


def test_tool_without_schemas_block() -> None:
    reference = tool_reference([_tool("foo", "bar")])
    assert reference == (
        "### `foo`\nbar\n\nexec tool declaration:\n```ts\n"
        "declare const tools: { foo(args: unknown): Promise<unknown>; };\n```"
    )


def test_unknown_namespace_key_gets_no_heading() -> None:
    reference = tool_reference([_tool("x", "d", namespace="nowhere")], NAMESPACES)
    assert reference.startswith("### `x`\nd")


def test_sample_and_augment() -> None:
    tool = TOOLS[0]
    sample = tool_sample(tool)
    assert sample == (
        f"{tool.description}\n\nexec tool declaration:\n```ts\n{tool_declaration(tool)}\n```"
    )
    augmented = augment_tool_definition(tool)
    assert augmented.description == sample
    assert augmented.name == tool.name and augmented.input_schema == tool.input_schema


def test_deferred_mode_is_short_and_uses_the_reference_wording() -> None:
    """Upstream ``exec_description_mentions_deferred_nested_tools_when_available`` and
    ``code_mode_only_description_renders_shared_mcp_types_for_deferred_tools``
    (description.rs, commits f0e15b916ff0 and a6b99ee5c45e): the guidance text, and the
    shared MCP types kept for deferred MCP tools."""
    description = exec_description(TOOLS, namespace_descriptions=NAMESPACES, deferred=True)
    full = exec_description(TOOLS, namespace_descriptions=NAMESPACES)
    assert len(description) < len(full)
    assert "declare const tools" not in description
    guide = exec_sections(TOOLS, deferred=True)[0]
    assert description.startswith(guide + "\n\n" + REFERENCE_DEFERRED + "\n\nShared MCP Types:")
    assert description.endswith("\n```")


def test_deferred_without_mcp_tools() -> None:
    """A deferred toolset that says it has no MCP (``mcp=False``) gets the guide and the
    guidance only; by default a deferred description keeps the MCP parts, whatever the
    catalog holds (see the next test)."""
    description = exec_description([_tool("a", "b")], deferred=True, mcp=False)
    guide = exec_sections([], deferred=True, mcp=False)[0]
    assert description == guide + "\n\n" + REFERENCE_DEFERRED
    assert "MCP" not in description
    assert "Shared MCP Types:" in exec_description([_tool("a", "b")], deferred=True)


# Deferred catalogs before and after a change: tools added, removed, renamed, of the
# other kind, returning an MCP result or not, the search tool staying.
CATALOGS = [
    [],
    [_tool("a", "b")],
    [_tool("deferred_echo", "Echo a value.", kind=ToolKind.FREEFORM)],
    TOOLS,
    [_tool("sample", "Deferred tool", output_schema=mcp_result_schema())],
    [_tool("mcp__x__y-z", "Renamed.", namespace="mcp__x__")],
]


def test_a_deferred_description_does_not_change_with_the_catalog() -> None:
    """Issue 35, item 6, after upstream ``mcp_types_stay_stable_when_a_deferred_tool_
    changes_its_output_schema`` and ``nested_guidance_survives_catalog_changes_and_
    respects_overrides`` (openai/codex ``codex-rs/code-mode-protocol/src/
    description_override_tests.rs``, mirror wallentx/codex-termux 21a6962eac13, whose
    ``build_exec_tool_description`` ignores its deferred tools): a deferred catalog
    changes nothing in the text (no deferred tool named as an example, no input kind
    taken from it, the MCP parts there or not by configuration), so a model's prompt
    cache survives the change. Only configuration changes it."""
    for mcp in (None, True, False):
        for code_argument in (None, "code"):
            texts = {
                exec_description(
                    tools,
                    namespace_descriptions=NAMESPACES,
                    deferred=True,
                    mcp=mcp,
                    code_argument=code_argument,
                )
                for tools in CATALOGS
            }
            assert len(texts) == 1, (mcp, code_argument)
            [text] = texts
            assert ("Shared MCP Types:" in text) is (mcp is not False)
            for tool in TOOLS:
                assert f"tools.{tool.name}(" not in text
            assert "either a string or an object" in text


def test_a_description_without_mcp_tools_names_no_mcp_concept() -> None:
    """Issue 35, item 6: the ``exec`` description of a session whose tools return no MCP
    result says nothing of MCP (before, ``codex/imageDetail`` and ``ImageContent`` were
    in the ``image`` line of a session whose only tool was ``add``)."""
    add = _tool(
        "add",
        "Add two integers.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        output_schema={"type": "integer"},
    )
    for image_detail in (True, False):
        for code_argument in (None, "code"):
            text = exec_description([add], image_detail=image_detail, code_argument=code_argument)
            for concept in ("MCP", "Content", "codex/", "CallToolResult", "_meta"):
                assert concept not in text, (concept, image_detail, code_argument)
            assert "`image(imageUrlOrItem: string | { image_url: string" in text
            assert "`audio(audioUrlOrItem: string | { audio_url: string })`" in text
            assert "`forward_output(...results: unknown[])`" in text
    # With an MCP tool the reference's lines come back, each once.
    mcp_tool = _tool("mcp__s__t", "MCP tool.", output_schema=mcp_result_schema())
    text = exec_description([add, mcp_tool])
    assert text.count('"codex/imageDetail"') == 1 and text.count("Shared MCP Types:") == 1


def test_code_argument_wording() -> None:
    description = exec_description([], code_argument="code")
    assert "Put the program's JavaScript source text in the `code` argument" in description
    assert "not JSON" not in description
    assert "not JSON" in exec_description([])


def test_sections_take_extra_helper_lines() -> None:
    """A host adding helpers (e.g. push wording) extends the list, not the texts."""
    line = "- `later()`: a helper of the host."
    sections = exec_sections([], extra_helpers=[line])
    assert sections[0].endswith("\n" + line)
    assert "\n\n".join(exec_sections([])) == exec_description([])


def test_all_tools_descriptions_put_the_namespace_description_first() -> None:
    """Upstream ``code_mode_exports_all_tools_metadata_for_namespaced_mcp_tools``
    (openai/codex codex-rs/core/tests/suite/code_mode.rs, commit 4f39251a010a): the
    namespace's description, a blank line, the tool's, then its declaration."""
    tool = ToolDefinition(
        name="mcp__rmcp__echo",
        tool_name=ToolName("echo", "mcp__rmcp__"),
        description="Echo back the provided message and include environment data.",
        kind=ToolKind.FUNCTION,
        input_schema={
            "type": "object",
            "properties": {"env_var": {"type": "string"}, "message": {"type": "string"}},
            "required": ["message"],
        },
    )
    namespaces = {
        "mcp__rmcp__": NamespaceDescription(
            "mcp__rmcp", "Use these tools to exercise the rmcp test server."
        )
    }
    assert augment_tool_definition(tool, namespaces).description == (
        "Use these tools to exercise the rmcp test server.\n\n"
        "Echo back the provided message and include environment data.\n\n"
        "exec tool declaration:\n"
        "```ts\n"
        "declare const tools: { mcp__rmcp__echo(args: { env_var?: string; message: string; }):"
        " Promise<unknown>; };\n"
        "```"
    )
    assert augment_tool_definition(tool).description.startswith("Echo back")


def test_push_and_the_idle_floor_only_add_lines_to_the_reference_texts() -> None:
    """With push (``on_finished``) or an idle floor, the reference's lines all stay, in
    order; the hosts' notes are lines of their own next to the ones they qualify."""
    plain = exec_description([]).splitlines()
    pushed = exec_description([], push=True).splitlines()
    at = next(i for i, line in enumerate(plain) if line.startswith("- `yield_time_ms`"))
    assert pushed[: at + 1] == plain[: at + 1]
    assert "you will be given its result when it finishes" in pushed[at + 1]
    assert pushed[at + 2 :] == plain[at + 1 :]
    wait = wait_description(push=True, idle_floor_ms=30_000).splitlines()
    assert wait[0] == REFERENCE_WAIT.splitlines()[0]
    assert wait[1].startswith("- You do not need `wait`")
    assert any("for up to 30 seconds in all" in line for line in wait)
    assert len(wait) == len(REFERENCE_WAIT.splitlines()) + 2
