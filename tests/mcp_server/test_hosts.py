"""Real MCP hosts, nobody's here, in their DEFAULT settings, against the server over
stdio (``code-mode mcp serve``) and streamable HTTP: an ``exec`` of a program calling
a tool returns its result, and a program handed back as ``Script running`` is resumed
with ``wait``.

The hosts: the MCP Python SDK's ``mcp.Client`` (mode "auto", which probes
``server/discover``), fastmcp's ``Client``, pydantic-ai's ``MCPToolset`` driven by its
scripted ``FunctionModel``, openai-agents' ``MCPServerStdio`` and
``MCPServerStreamableHttp`` (5 s client timeout), and the MCP Inspector CLI. The
asyncio ones run with ``asyncio.run`` in a worker thread, as in an application.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from code_mode.mcp_server import CodeModeMcpServer

from ..mcp_support import ROOT, SAFETY, TOOLS, node_command, serve_command
from .hosts_support import PER_CALL_PROCESSES, check_handed, in_asyncio, next_call

T = TypeVar("T")

CALLS_A_TOOL = "text(await tools.add({a: 2, b: 3}))"
YIELDS = (
    '// @exec: {"yield_time_ms": 0}\n'
    "await new Promise(r => setTimeout(r, 300)); text(await tools.add({a: 20, b: 22}))"
)
RUNNING = re.compile(r"Script running with cell ID (\S+)")


@asynccontextmanager
async def served_over_http() -> AsyncIterator[str]:
    server = CodeModeMcpServer(TOOLS)
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(server.serve_http, "127.0.0.1", 0)
        yield url
        nursery.cancel_scope.cancel()


def stdio_parameters() -> dict[str, Any]:
    command, args, env = serve_command()
    return {"command": command, "args": args, "env": env}


def text_of(content: Any) -> str:
    """The text blocks of a result's content, joined."""
    return "\n".join(block.text for block in content if getattr(block, "type", None) == "text")


async def check_exec_then_wait(call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> None:
    """The acceptance, for a host whose one tool call is ``call_tool(name, arguments)``
    returning a result with MCP ``content``."""

    async def run(name: str, arguments: dict[str, Any]) -> str:
        return text_of((await call_tool(name, arguments)).content)

    called = await run("exec", {"code": CALLS_A_TOOL})
    assert called.startswith("Script completed"), called
    assert called.splitlines()[-1] == "5", called
    started = await run("exec", {"code": YIELDS})
    running = RUNNING.search(started)
    assert running is not None, started
    finished = await run("wait", {"cell_id": running.group(1), "yield_time_ms": 3000})
    assert finished.startswith("Script completed"), finished
    assert finished.splitlines()[-1] == "42", finished


# -- the MCP Python SDK ------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_mcp_sdk_client_in_auto_mode(transport: str) -> None:
    from mcp import Client, StdioServerParameters

    async def over(target: Any) -> None:
        async with Client(target) as client:  # mode="auto": probes server/discover
            # The stateless revision (2026-07-28), over either transport: over HTTP
            # the cells are named by handles (test_stateless.py), over stdio the
            # connection is the session.
            assert client.protocol_version == "2026-07-28", client.protocol_version
            await check_exec_then_wait(client.call_tool)

    with trio.fail_after(SAFETY):
        if transport == "stdio":
            await over(StdioServerParameters(**stdio_parameters()))
        else:
            async with served_over_http() as url:
                await over(url)


# -- fastmcp -------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_fastmcp_client(transport: str) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def over(target: Any) -> None:
        async with Client(target) as client:
            await check_exec_then_wait(functools.partial(client.call_tool, raise_on_error=False))

    with trio.fail_after(SAFETY):
        if transport == "stdio":
            parameters = stdio_parameters()
            await in_asyncio(lambda: over(StdioTransport(**parameters)))
        else:
            async with served_over_http() as url:
                await in_asyncio(lambda: over(url))


# -- pydantic-ai ---------------------------------------------------------------------------


def scripted_model() -> Any:
    """pydantic-ai's ``FunctionModel`` playing a model that runs a tool-calling
    program, starts a longer one and resumes it with ``wait`` (reading the cell id
    from the result it was given), then answers with what it got."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def returns(messages: list[ModelMessage]) -> list[str]:
        """The tool results the model was given, each as one text. Never a dict:
        pydantic-ai gives the model a result's structured content in place of its
        text when there is some, and our results have none."""
        contents = [
            part.content
            for message in messages
            for part in message.parts
            if part.part_kind == "tool-return"
        ]
        assert not any(isinstance(content, dict) for content in contents), contents
        return [
            "\n".join(map(str, content)) if isinstance(content, list) else str(content)
            for content in contents
        ]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert {tool.name for tool in info.function_tools} == {"exec", "wait"}
        seen = returns(messages)
        if not seen:
            return ModelResponse(parts=[ToolCallPart("exec", {"code": CALLS_A_TOOL})])
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("exec", {"code": YIELDS})])
        if len(seen) == 2:
            running = RUNNING.search(seen[1])
            assert running is not None, seen
            arguments = {"cell_id": running.group(1), "yield_time_ms": 3000}
            return ModelResponse(parts=[ToolCallPart("wait", arguments)])
        return ModelResponse(parts=[TextPart(json.dumps(seen))])

    return FunctionModel(model)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_pydantic_ai_toolset_with_a_scripted_model(transport: str) -> None:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    async def over(target: Any) -> list[str]:
        # Over stdio, the 5 s `init_timeout` (its only other timeout) covers launching
        # the server's process, which a loaded test machine can take longer over; the
        # read timeout, the one a call meets, stays the default.
        options = {"init_timeout": SAFETY} if transport == "stdio" else {}
        agent = Agent(scripted_model(), toolsets=[MCPToolset(target, **options)])
        result = await agent.run("add numbers with code mode")
        seen: list[str] = json.loads(result.output)
        return seen

    with trio.fail_after(SAFETY):
        if transport == "stdio":
            parameters = stdio_parameters()
            seen = await in_asyncio(lambda: over(StdioTransport(**parameters)))
        else:
            async with served_over_http() as url:
                seen = await in_asyncio(lambda: over(url))
    assert "Script completed" in seen[0] and seen[0].rstrip().endswith("5"), seen
    assert "Script running with cell ID" in seen[1], seen
    assert "Script completed" in seen[2] and seen[2].rstrip().endswith("42"), seen


# -- openai-agents -------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_openai_agents_mcp_servers(transport: str) -> None:
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    async def over(server: Any) -> None:
        async with server:
            assert server.client_session_timeout_seconds == 5  # the default, kept
            names = [tool.name for tool in await server.list_tools()]
            assert names == ["exec", "wait"]
            await check_exec_then_wait(server.call_tool)

    with trio.fail_after(SAFETY):
        if transport == "stdio":
            parameters = stdio_parameters()
            await in_asyncio(lambda: over(MCPServerStdio(params=parameters)))  # type: ignore[arg-type]
        else:
            async with served_over_http() as url:
                await in_asyncio(lambda: over(MCPServerStreamableHttp(params={"url": url})))


async def test_openai_agents_stdio_a_7_s_program_within_the_5_s_timeout(tmp_path: Path) -> None:
    """openai-agents' default client timeout is 5 s: a 7 s program is handed back as
    ``Script running`` within it (the server's 4 s yield cap), never raises in the
    client, its cell id reaches the caller, and it runs once."""
    from agents.mcp import MCPServerStdio

    runs = tmp_path / "runs.txt"
    program = (
        f"await tools.record({{path: {json.dumps(str(runs))}, line: 'ran'}});"
        "await new Promise(r => setTimeout(r, 7000)); text('slept')"
    )

    async def client() -> list[str]:
        seen: list[str] = []
        async with MCPServerStdio(params=stdio_parameters()) as server:  # type: ignore[arg-type]
            started = await server.call_tool("exec", {"code": program})
            seen.append(text_of(started.content))
            running = RUNNING.search(seen[-1])
            assert running is not None, seen
            while True:
                waited = await server.call_tool("wait", {"cell_id": running.group(1)})
                seen.append(text_of(waited.content))
                if not seen[-1].startswith("Script running"):
                    return seen

    with trio.fail_after(SAFETY):
        seen = await in_asyncio(client)
    assert RUNNING.match(seen[0]) is not None, seen
    assert seen[-1].startswith("Script completed"), seen
    assert seen[-1].splitlines()[-1] == "slept", seen
    assert runs.read_text() == "ran\n"


async def test_openai_agents_runner_stdio_a_7_s_program_reaches_the_model(tmp_path: Path) -> None:
    """The same acceptance through a real ``Agent`` and ``Runner``: the SDK's
    ``ScriptedModel`` plays the model, ``MCPServerStdio`` in its default settings
    (5 s client timeout, no retries configured) carries its calls. The model is handed
    ``Script running with cell ID ...`` (no timeout error), resumes the cell with
    ``wait`` until it completes, and the program ran exactly once."""
    from agents import Agent, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)  # no trace export attempted without an API key
    runs = tmp_path / "runs.txt"
    program = (
        f"await tools.record({{path: {json.dumps(str(runs))}, line: 'ran'}});"
        "await new Promise(r => setTimeout(r, 7000)); text('slept')"
    )
    handed: list[str] = []  # every tool output the model was given, in order

    def output_of(call: ModelCall) -> str:
        item = [i for i in call.input if isinstance(i, dict)][-1]
        assert item.get("type") == "function_call_output", item
        output = item["output"]
        text = output if isinstance(output, str) else json.dumps(output)
        handed.append(text)
        return text

    def wait_or_answer(call: ModelCall) -> ModelStep:
        seen = output_of(call)
        if "Script running" not in seen:
            return ModelStep(output=[assistant_message(seen)])
        cell = re.search(r"cell ID ([\w-]+)", handed[0])  # (a handle: URL-safe base64)
        assert cell is not None, handed
        model.enqueue(ModelStep.respond(wait_or_answer))
        arguments = json.dumps({"cell_id": cell.group(1)})  # the server's default yield
        return ModelStep(output=[function_call("wait", arguments, call_id=f"w{len(handed)}")])

    model = ScriptedModel(
        [
            ModelStep(output=[function_call("exec", {"code": program}, call_id="e")]),
            ModelStep.respond(wait_or_answer),
        ]
    )

    async def client() -> str:
        async with MCPServerStdio(params=stdio_parameters()) as server:  # type: ignore[arg-type]
            assert server.client_session_timeout_seconds == 5  # the default, kept
            agent = Agent(name="coder", model=model, mcp_servers=[server])
            result = await Runner.run(agent, "run the slow program")
            return str(result.final_output)

    with trio.fail_after(SAFETY):
        final = await in_asyncio(client)
    model.assert_complete()
    assert RUNNING.search(handed[0]) is not None, handed
    assert len(handed) >= 2, handed  # exec handed back running, then at least one wait
    assert not any("timed out" in text or "Error" in text for text in handed), handed
    assert "Script completed" in final and "slept" in final, final
    assert runs.read_text() == "ran\n"


# -- the MCP Inspector CLI -----------------------------------------------------------------


async def inspector_call(target: list[str], tool: str, *arguments: str) -> dict[str, Any]:
    """One ``tools/call`` by the Inspector CLI (one invocation, one MCP session), its
    JSON answer; ``target`` is a URL or a command (the Inspector's own options after it:
    ``--tool-arg`` takes every word that follows)."""
    called = await trio.run_process(
        [
            *(node_command("mcp-inspector"), "--cli", "-e", f"PYTHONPATH={ROOT}", *target),
            *("--method", "tools/call", "--tool-name", tool, "--tool-arg", *arguments),
        ],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert called.returncode == 0, called.stderr.decode()
    result: dict[str, Any] = json.loads(called.stdout)
    return result


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_mcp_inspector_cli(transport: str) -> None:
    with trio.fail_after(SAFETY * 2):
        if transport == "stdio":
            command, args, _ = serve_command()
            result = await inspector_call([command, *args], "exec", f"code={CALLS_A_TOOL}")
        else:
            async with served_over_http() as url:
                target = [url, "--transport", "http"]
                result = await inspector_call(target, "exec", f"code={CALLS_A_TOOL}")
    assert result["isError"] is False
    [content] = result["content"]  # all of the text in the first item
    assert content["text"].startswith("Script completed\n")
    assert content["text"].endswith("\nOutput:\n5")


async def test_mcp_inspector_cli_a_wait_in_a_later_invocation_finds_the_cell() -> None:
    """What docs/mcp.md's table says of the Inspector: each invocation is an MCP
    session of its own; a ``wait`` in a later one finds the cell by its handle."""
    with trio.fail_after(SAFETY * 2):
        async with served_over_http() as url:
            target = [url, "--transport", "http"]
            started = await inspector_call(target, "exec", f"code={YIELDS}")
            running = RUNNING.search(started["content"][0]["text"])
            assert running is not None, started
            waited = await inspector_call(
                target, "wait", f"cell_id={running.group(1)}", "yield_time_ms=20000"
            )
    assert waited["isError"] is False, waited
    [content] = waited["content"]
    assert content["text"].startswith("Script completed\n")
    assert content["text"].endswith("\nOutput:\n42")


# -- LlamaIndex ----------------------------------------------------------------------------
# llama-index's workflows inspect the attributes of pydantic models, the deprecated ones
# too (inspect.getmembers): hundreds of pydantic deprecation warnings a run, none ours.
quiet_llama_index = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecationWarning"
)


def llama_index_model(handed: list[str]) -> Any:
    """llama-index-core's ``MockFunctionCallingLLM`` playing :func:`next_call`; ``handed``
    is kept as the tool messages it was given, each as the text the model reads."""
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    def respond(messages: list[ChatMessage], **_: Any) -> ChatMessage:
        handed[:] = [str(m.content) for m in messages if m.role == MessageRole.TOOL]
        call = next_call(handed)
        if call is None:
            return ChatMessage(role=MessageRole.ASSISTANT, content="done")
        name, arguments = call
        block = ToolCallBlock(tool_call_id=f"c{len(handed)}", tool_name=name, tool_kwargs=arguments)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])

    return MockFunctionCallingLLM(response_generator=respond)


async def run_llama_index_agent(client: Any) -> list[str]:
    """A ``FunctionAgent`` with the tools of ``McpToolSpec(client).to_tool_list_async()``
    and the scripted model, run to its end; what its model was handed."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.tools.mcp import McpToolSpec

    handed: list[str] = []
    tools = await McpToolSpec(client).to_tool_list_async()
    assert [tool.metadata.name for tool in tools] == ["exec", "wait"]
    agent = FunctionAgent(tools=tools, llm=llama_index_model(handed))
    await agent.run(user_msg="add numbers with code mode")
    return handed


@quiet_llama_index
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_llama_index_basic_client_with_a_scripted_model(transport: str) -> None:
    """LlamaIndex's documented client, ``BasicMCPClient``, opens a new MCP session for
    each call (over stdio, a new server process): the cell and the stored value are
    found by a later call all the same, by the handles the model passes back."""
    from llama_index.tools.mcp import BasicMCPClient

    with trio.fail_after(PER_CALL_PROCESSES):
        if transport == "stdio":
            command, args, env = serve_command()
            handed = await in_asyncio(
                lambda: run_llama_index_agent(BasicMCPClient(command, args=args, env=env))
            )
        else:
            async with served_over_http() as url:
                handed = await in_asyncio(lambda: run_llama_index_agent(BasicMCPClient(url)))
    # What the model is handed: str() of the SDK's CallToolResult, newlines escaped.
    assert handed[0].startswith("meta={'code-mode/session': "), handed
    assert "content=[TextContent(type='text'" in handed[0], handed
    check_handed(handed)


@quiet_llama_index
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_llama_index_tool_spec_over_one_held_session(transport: str) -> None:
    """``McpToolSpec`` takes any client with ``list_tools`` and ``call_tool``: given the
    MCP SDK's ``Client``, held open by the application, every call is in one session,
    and ``exec`` -> ``wait`` and ``store`` -> ``load`` work."""
    from mcp import Client, StdioServerParameters

    async def over(target: Any) -> list[str]:
        async with Client(target) as client:
            return await run_llama_index_agent(client)

    with trio.fail_after(SAFETY):
        if transport == "stdio":
            parameters = StdioServerParameters(**stdio_parameters())
            handed = await in_asyncio(lambda: over(parameters))
        else:
            async with served_over_http() as url:
                handed = await in_asyncio(lambda: over(url))
    check_handed(handed)


# -- Google ADK ----------------------------------------------------------------------------


def adk_model() -> Any:
    """A ``BaseLlm`` playing :func:`next_call` (ADK ships no offline model): each turn
    it reads the function responses in the request, as the model is given them."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from pydantic import Field

    class ScriptedLlm(BaseLlm):
        model: str = "scripted"
        handed: list[str] = Field(default_factory=list)

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncIterator[LlmResponse]:
            self.handed = [
                json.dumps(part.function_response.response)
                for content in llm_request.contents
                for part in content.parts or []
                if part.function_response is not None
            ]
            call = next_call(self.handed)
            if call is None:
                part = types.Part(text="done")
            else:
                name, arguments = call
                part = types.Part(function_call=types.FunctionCall(name=name, args=arguments))
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    return ScriptedLlm()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_google_adk_toolset_with_a_scripted_model(transport: str) -> None:
    """ADK's ``McpToolset`` in its default settings (5 s per request) under an
    ``InMemoryRunner``, a scripted ``BaseLlm`` as the model."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.adk.tools.mcp_tool import (
        McpToolset,
        StdioConnectionParams,
        StreamableHTTPConnectionParams,
    )
    from google.genai import types
    from mcp import StdioServerParameters

    async def run(connection: Any) -> list[str]:
        toolset = McpToolset(connection_params=connection)
        model = adk_model()
        agent = LlmAgent(name="coder", model=model, tools=[toolset])
        runner = InMemoryRunner(agent=agent)
        try:
            session = await runner.session_service.create_session(
                app_name=runner.app_name, user_id="user"
            )
            message = types.Content(role="user", parts=[types.Part(text="add numbers")])
            async for _ in runner.run_async(
                user_id="user", session_id=session.id, new_message=message
            ):
                pass
        finally:
            await runner.close()
            await toolset.close()
        handed: list[str] = model.handed
        return handed

    with trio.fail_after(SAFETY):
        if transport == "stdio":
            parameters = StdioServerParameters(**stdio_parameters())
            handed = await in_asyncio(lambda: run(StdioConnectionParams(server_params=parameters)))
        else:
            async with served_over_http() as url:
                handed = await in_asyncio(lambda: run(StreamableHTTPConnectionParams(url=url)))
    # What the model is handed: the CallToolResult dumped to a dict (1.x key names).
    assert json.loads(handed[0])["isError"] is False, handed
    check_handed(handed)
