"""`CodeModeSession`: the exec/wait façade over a session runtime."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from code_mode import (
    CodeModeSession,
    Notification,
    OutputItem,
    RuntimeConfig,
    Text,
    ToolKind,
    is_error_result,
    tool,
)
from code_mode._facade import resolve_yield_time_ms
from code_mode.model_tools.adapters import exec_json_parameters, wait_parameters
from code_mode.model_tools.descriptions import wait_description
from code_mode.model_tools.error_texts import missing_cell_text

SAFETY = 10.0  # seconds; a hang guard, never the thing under test
HEADER = re.compile(r"^(?P<status>.*)\nWall time \d+\.\d seconds\nOutput:\n$")


def status(items: list[OutputItem]) -> str:
    """The status line of a result, checking the header's exact shape."""
    first = items[0]
    assert isinstance(first, Text)
    match = HEADER.match(first.text)
    assert match is not None, first.text
    return match["status"]


def body(items: list[OutputItem]) -> list[OutputItem]:
    return items[1:]


class Gate:
    """A tool that blocks until the test opens it, announcing each call."""

    def __init__(self) -> None:
        self.called = trio.Event()
        self.opened = trio.Event()

        @tool
        async def gate() -> str:
            """Wait for the test."""
            self.called.set()
            await self.opened.wait()
            return "opened"

        self.tool = gate


@asynccontextmanager
async def gated(**options: Any) -> AsyncIterator[tuple[Gate, CodeModeSession]]:
    """A session (with ``options``) whose one tool is a fresh ``Gate``, under the hang
    guard; yields both."""
    gate = Gate()
    with trio.fail_after(SAFETY):
        async with CodeModeSession([gate.tool], **options) as cm:
            yield gate, cm


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_exec_returns_completed_result() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[add]) as cm:
            items = await cm.exec("text(await tools.add({ a: 2, b: 40 }))")
    assert status(items) == "Script completed"
    assert body(items) == [Text("42")]
    assert not is_error_result(items)


async def test_exec_failure_appends_the_error() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            items = await cm.exec('text("before");\nthrow new Error("boom");')
    assert status(items) == "Script failed"
    assert body(items)[0] == Text("before")
    last = body(items)[1]
    assert isinstance(last, Text) and last.text.startswith("Script error:\nError: boom")
    assert is_error_result(items)


async def test_yield_then_wait_returns_completion() -> None:
    source = 'text("before");\nyield_control();\ntext(await tools.gate());'
    async with gated() as (gate, cm):
        first = await cm.exec(source)
        assert status(first) == "Script running with cell ID 1"
        assert body(first) == [Text("before")]

        results: list[list[OutputItem]] = []
        async with trio.open_nursery() as nursery:

            async def wait_for_it() -> None:
                results.append(await cm.wait("1"))

            nursery.start_soon(wait_for_it)
            await gate.called.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # still waiting on the tool
            gate.opened.set()
    assert status(results[0]) == "Script completed"
    assert body(results[0]) == [Text("opened")]


async def test_yield_time_from_the_pragma() -> None:
    source = '// @exec: {"yield_time_ms": 20}\ntext("started");\ntext(await tools.gate());'
    async with gated() as (gate, cm):
        first = await cm.exec(source)
        assert status(first) == "Script running with cell ID 1"
        gate.opened.set()
        final = await cm.wait("1")
    assert status(final) == "Script completed"
    # Each result has only the output since the previous one.
    assert body(first) + body(final) == [Text("started"), Text("opened")]


async def test_wait_terminate_stops_the_program() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            first = await cm.exec('text("spinning");\nyield_control();\nwhile (true) {}')
            assert status(first) == "Script running with cell ID 1"
            stopped = await cm.wait("1", terminate=True)
            assert status(stopped) == "Script terminated"
            assert body(stopped) == []
            again = await cm.wait("1")
    assert status(again) == "Script failed"
    assert body(again) == [Text("Script error:\n" + missing_cell_text("1"))]


async def test_wait_on_missing_cell() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            items = await cm.wait("9")
    assert status(items) == "Script failed"
    # The reference's words first, then what may have happened and what to do.
    assert body(items) == [
        Text(
            "Script error:\nexec cell 9 not found: its program already ended and its final "
            "result was returned, or it was started in another session. Check that the ID "
            "is the one from `Script running with cell ID <id>`; if you still need the "
            "program's result, run the program again with `exec`."
        )
    ]
    assert is_error_result(items)


async def test_wait_on_finished_cell_is_not_found() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            done = await cm.exec('text("done")')
            assert status(done) == "Script completed"
            items = await cm.wait("1")
    assert body(items) == [Text("Script error:\n" + missing_cell_text("1"))]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "   ",
            "exec expects raw JavaScript source text (non-empty). Provide JS only, optionally "
            'with first-line `// @exec: {"yield_time_ms": 10000, "max_output_tokens": 1000}`.',
        ),
        (
            '// @exec: {"yield_time_ms": 10}\n',
            "exec pragma must be followed by JavaScript source on subsequent lines",
        ),
        (
            '// @exec: {"timeout": 1}\ntext(1)',
            "exec pragma only supports `yield_time_ms` and `max_output_tokens`; got `timeout`",
        ),
    ],
)
async def test_pragma_error_is_a_failed_result(source: str, message: str) -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            items = await cm.exec(source)
            # No cell was started: the next program is cell 1.
            nxt = await cm.exec("yield_control();\nwhile (true) {}")
            assert status(nxt) == "Script running with cell ID 1"
    assert status(items) == "Script failed"
    assert body(items) == [Text(f"Script error:\n{message}")]


async def test_max_output_tokens_from_the_pragma_truncates() -> None:
    source = '// @exec: {"max_output_tokens": 10}\nfor (let i = 0; i < 100; i++) text(`line ${i}`);'
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            items = await cm.exec(source)
    assert status(items) == "Script completed"
    [output] = body(items)
    assert isinstance(output, Text)
    assert output.text.startswith(
        "Warning: truncated output (original token count: 198)\nTotal output lines: 100\n\n"
    )
    assert "tokens truncated" in output.text


async def test_notifications_reach_an_async_callback() -> None:
    received: list[Notification] = []
    delivered = trio.Event()

    async def on_notify(notification: Notification) -> None:
        received.append(notification)
        delivered.set()

    with trio.fail_after(SAFETY):
        async with CodeModeSession(on_notify=on_notify) as cm:
            items = await cm.exec('notify("halfway");\ntext("done")', call_id="call-7")
            await delivered.wait()
    assert status(items) == "Script completed"
    assert received == [Notification(call_id="call-7", cell_id="1", text="halfway")]  # type: ignore[arg-type]


async def test_notifications_reach_a_plain_callback_with_default_call_ids() -> None:
    received: list[Notification] = []

    with trio.fail_after(SAFETY):
        async with CodeModeSession(on_notify=received.append) as cm:
            await cm.exec('notify("one")')
            await cm.exec('notify("two")')
            await trio.testing.wait_all_tasks_blocked()
    assert [(n.call_id, n.cell_id, n.text) for n in received] == [
        ("exec-1", "1", "one"),
        ("exec-2", "2", "two"),
    ]


# --- handle_call for each API shape -----------------------------------------------------


async def test_handle_call_openai_shapes() -> None:
    # Responses API: exec is a custom tool (raw input), wait a function (JSON text).
    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[add]) as cm:
            first = await cm.handle_call("exec", 'text("a");\nyield_control();\nwhile (true) {}')
            assert status(first) == "Script running with cell ID 1"
            stopped = await cm.handle_call("wait", '{"cell_id": "1", "terminate": true}')
            assert status(stopped) == "Script terminated"
            done = await cm.handle_call("exec", "text(await tools.add({ a: 1, b: 2 }))")
    assert body(done) == [Text("3")]


async def test_handle_call_anthropic_and_mcp_shapes() -> None:
    # Anthropic `input` and MCP `arguments`: decoded objects; exec as {"code": ...}.
    gate = Gate()
    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[add, gate.tool]) as cm:
            first = await cm.handle_call(
                "exec", {"code": '// @exec: {"yield_time_ms": 0}\ntext(await tools.gate())'}
            )
            assert status(first) == "Script running with cell ID 1"
            gate.opened.set()
            final = await cm.handle_call(
                "wait", {"cell_id": "1", "yield_time_ms": 10000, "max_tokens": 100}
            )
            assert status(final) == "Script completed"
            assert body(final) == [Text("opened")]
            as_text = await cm.handle_call("exec", json.dumps({"code": "text(7)"}))
            assert body(as_text) == [Text("7")]
            numeric_id = await cm.handle_call("wait", {"cell_id": 99})
    assert body(numeric_id) == [Text("Script error:\n" + missing_cell_text("99"))]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("wait", "{not json", "failed to parse function arguments: Expecting property name"),
        ("wait", "[1]", "wait expects JSON arguments"),
        ("wait", {}, "failed to parse function arguments: missing field `cell_id`"),
        (
            "wait",
            {"cell_id": "1", "yield_time_ms": -1},
            "failed to parse function arguments: `yield_time_ms` must be a non-negative integer",
        ),
        (
            "wait",
            {"cell_id": "1", "terminate": "yes"},
            "failed to parse function arguments: `terminate` must be a boolean",
        ),
        ("exec", {"source": "x"}, "exec expects JSON arguments with a string `code` field"),
        ("exec", {"code": ""}, "exec expects raw JavaScript source text (non-empty)."),
    ],
)
async def test_handle_call_malformed_arguments(name: str, arguments: Any, message: str) -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession() as cm:
            items = await cm.handle_call(name, arguments)
    assert status(items) == "Script failed"
    [error] = body(items)
    assert isinstance(error, Text)
    assert error.text.startswith(f"Script error:\n{message}")


async def test_handle_call_refuses_other_tools() -> None:
    async with CodeModeSession() as cm:
        with pytest.raises(ValueError, match="serves only `exec` and `wait`, not `search`"):
            await cm.handle_call("search", {})


async def test_calls_outside_the_block_are_refused() -> None:
    cm = CodeModeSession()
    with pytest.raises(RuntimeError, match="async with"):
        await cm.exec("text(1)")


# --- tool definitions -------------------------------------------------------------------


@tool(namespace="geo")
async def distance(a: str, b: str) -> float:
    """Kilometres between two cities."""
    return 1.0


def test_exec_and_wait_definitions() -> None:
    cm = CodeModeSession(
        tools=[add, distance], namespace_descriptions={"geo": "Geography helpers."}
    )
    exec_tool = cm.exec_tool
    assert exec_tool.name == "exec"
    assert exec_tool.kind is ToolKind.FREEFORM
    assert exec_tool.input_schema is None
    assert "### `add`\nAdd two integers." in exec_tool.description
    assert "## geo\nGeography helpers.\n\n### `geo__distance`" in exec_tool.description
    assert (
        "declare const tools: { geo__distance(args: { a: string; b: string; }): "
        "Promise<number>; };" in exec_tool.description
    )
    wait_tool = cm.wait_tool
    assert wait_tool.kind is ToolKind.FUNCTION
    assert wait_tool.input_schema == wait_parameters()
    assert wait_tool.description == wait_description()
    assert [t.name for t in cm.tools] == ["add", "geo__distance"]


def test_adapter_tool_lists() -> None:
    cm = CodeModeSession(tools=[add])
    openai_exec, openai_wait = cm.openai_tools()
    assert openai_exec["type"] == "custom" and openai_exec["name"] == "exec"
    assert openai_exec["description"] == cm.exec_tool.description
    assert openai_wait["type"] == "function" and openai_wait["name"] == "wait"
    anthropic_exec, anthropic_wait = cm.anthropic_tools()
    assert anthropic_exec["input_schema"] == exec_json_parameters()
    assert anthropic_wait["input_schema"] == wait_parameters()
    mcp_exec, mcp_wait = cm.mcp_tools()
    assert mcp_exec["inputSchema"] == exec_json_parameters()
    assert mcp_wait["name"] == "wait"


def test_deferred_mode_keeps_the_description_short() -> None:
    cm = CodeModeSession(tools=[add], deferred=True)
    assert "### `add`" not in cm.exec_tool.description
    assert "ALL_TOOLS" in cm.exec_tool.description


async def test_programs_see_augmented_descriptions() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[add]) as cm:
            items = await cm.exec("text(ALL_TOOLS[0].description)")
    [description] = body(items)
    assert isinstance(description, Text)
    assert description.text.startswith("Add two integers.\n\nexec tool declaration:\n```ts\n")


def test_namespace_members_are_grouped() -> None:
    @tool(namespace="geo")
    async def area(city: str) -> float:
        return 1.0

    cm = CodeModeSession(tools=[distance, add, area])
    assert [t.name for t in cm.tools] == ["geo__distance", "geo__area", "add"]


def test_conflicting_tool_names_are_refused() -> None:
    @tool(name="add")
    async def other(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="two tools are named `add`"):
        CodeModeSession(tools=[add, other])
    with pytest.raises(TypeError, match="not a tool"):
        CodeModeSession(tools=[42])  # type: ignore[list-item]


async def test_the_first_tool_of_a_normalized_identifier_wins(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Upstream ``code_mode_uses_the_first_dynamic_tool_for_a_normalized_name``
    (openai/codex codex-rs/core/tests/suite/code_mode.rs, commit 83915c7ca1c2):
    ``foo-bar`` then ``foo_bar``: one ``ALL_TOOLS`` entry, ``foo_bar``, with the first
    tool's description, and ``tools.foo_bar`` calls the first. (This was a
    ``ValueError`` here before.)"""

    @tool(name="foo-bar")
    async def first() -> str:
        """First normalized dynamic tool."""
        return "first-winner"

    @tool(name="foo_bar")
    async def shadowed() -> str:
        """Shadowed normalized dynamic tool."""
        return "shadowed"

    source = (
        'const matches = ALL_TOOLS.filter(({ name }) => name === "foo_bar");\n'
        "const output = await tools.foo_bar({});\n"
        "text(JSON.stringify({count: matches.length, name: matches[0]?.name ?? null,"
        " description: matches[0]?.description ?? null, output}));"
    )
    with caplog.at_level("WARNING", logger="code_mode"):
        cm = CodeModeSession(tools=[first, shadowed])
    assert "code mode leaves out tool `foo_bar`: `tools.foo_bar` is already tool `foo-bar`" in (
        caplog.text
    )
    assert [definition.name for definition in cm.tools] == ["foo-bar"]
    description = cm.exec_tool.description
    assert "First normalized dynamic tool." in description
    assert "Shadowed normalized dynamic tool." not in description
    with trio.fail_after(SAFETY):
        async with cm:
            items = await cm.exec(source)
    [output] = body(items)
    assert isinstance(output, Text)
    result = json.loads(output.text)
    assert (result["count"], result["name"], result["output"]) == (1, "foo_bar", "first-winner")
    assert "First normalized dynamic tool." in result["description"]
    assert "Shadowed normalized dynamic tool." not in result["description"]


@pytest.mark.parametrize(
    ("requested", "limit", "expected"),
    [
        (9999, None, 9999),
        (10000, None, 11000),
        (10001, None, 11001),
        (10000, 0, 0),
        (9999, 5000, 5000),
        (10000, 10000, 10000),
        (10000, 10500, 10500),
        (10000, 11000, 11000),
        (10000, 12000, 11000),
        (0, None, 0),
    ],
)
def test_yield_grace_and_limit(requested: int, limit: int | None, expected: int) -> None:
    # Reference 5.4.1 (resolve_yield_timeout_applies_grace_before_session_limits).
    assert resolve_yield_time_ms(requested, limit) == expected


async def test_max_yield_time_caps_exec() -> None:
    async with gated(max_yield_time_ms=0) as (gate, cm):
        first = await cm.exec("text(await tools.gate())")
        assert status(first) == "Script running with cell ID 1"
        # Capped at 0 ms: returns at once although the program is still blocked.
        again = await cm.wait("1", yield_time_ms=60_000)
        assert status(again) == "Script running with cell ID 1"
        gate.opened.set()


async def test_config_reaches_the_runtime() -> None:
    config = RuntimeConfig(max_source_bytes=16)
    with trio.fail_after(SAFETY):
        async with CodeModeSession(config=config) as cm:
            assert cm.runtime.config is config
            items = await cm.exec("text('this source is longer than sixteen bytes')")
    assert status(items) == "Script failed"
