"""LangChain's and smolagents' MCP adapters, real clients of ``code-mode mcp serve`` over
stdio and streamable HTTP, in their default settings: the same script and acceptance
as test_hosts.py's LlamaIndex and ADK tests (``hosts_support``).

Their releases need the MCP SDK 1.x: langchain-mcp-adapters 0.3.2 pins ``mcp<2``, and
0.3.1 and mcpadapt 0.1.19 (smolagents' ``MCPClient``) install beside 2.x but fail to
import. So this file runs in a virtualenv of its own, ``nox -s hosts_mcp1``, as the
client, and the server runs from the ``code-mode`` command that ``CODE_MODE_SERVER``
names (an environment with ``code-mode[mcp]``). Elsewhere it is skipped.

Each runs its real agent with a scripted model (neither ships an offline one that
calls tools): LangChain's ``create_agent`` (the ``langchain`` package, on LangGraph)
with a ``BaseChatModel``, smolagents' ``ToolCallingAgent`` with a ``Model``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

try:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp import StdioServerParameters
    from smolagents import MCPClient
except ImportError as error:
    pytest.skip(
        f"LangChain's and smolagents' MCP adapters need the MCP SDK 1.x ({error}): "
        "run `nox -s hosts_mcp1`",
        allow_module_level=True,
    )

from ..mcp_support import SAFETY, serve_command, start_cli_server
from .hosts_support import PER_CALL_PROCESSES, check_handed, in_asyncio, next_call

SERVER = os.environ.get("CODE_MODE_SERVER", "")
if not SERVER:
    pytest.skip(
        "CODE_MODE_SERVER (a `code-mode` command with code-mode[mcp]) is not set: "
        "run `nox -s hosts_mcp1`",
        allow_module_level=True,
    )


@asynccontextmanager
async def served(transport: str) -> AsyncIterator[tuple[str, list[str], dict[str, str]] | str]:
    """The server over ``transport``: its (command, args, env) for stdio, or the URL of
    one serving streamable HTTP for the block."""
    if transport == "stdio":
        yield serve_command(executable=SERVER)
        return
    command, args, env = serve_command("--http", "127.0.0.1:0", executable=SERVER)
    async with trio.open_nursery() as nursery:
        server = await start_cli_server(nursery, command, args, env)
        yield server.url
        nursery.cancel_scope.cancel()


# -- LangChain -----------------------------------------------------------------------------


def langchain_connection(target: tuple[str, list[str], dict[str, str]] | str) -> dict[str, Any]:
    if isinstance(target, str):
        return {"transport": "streamable_http", "url": target}
    command, args, env = target
    return {"transport": "stdio", "command": command, "args": args, "env": env}


def as_handed(content: str | list[Any]) -> str:
    """A message's content as one string: itself, or its content blocks as JSON."""
    return content if isinstance(content, str) else json.dumps(content)


def langchain_model() -> Any:
    """A LangChain chat model playing :func:`next_call` (langchain-core's fake chat
    models cannot call tools): each turn it reads the ``ToolMessage``s it is given."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from pydantic import Field

    class ScriptedChatModel(BaseChatModel):
        handed: list[str] = Field(default_factory=list)

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **_: Any) -> ScriptedChatModel:  # type: ignore[override]
            names = sorted(getattr(tool, "name", "") for tool in tools)
            assert names == ["exec", "wait"], names
            return self

        def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
            self.handed = [as_handed(m.content) for m in messages if isinstance(m, ToolMessage)]
            step = next_call(self.handed)
            if step is None:
                message = AIMessage(content="done")
            else:
                name, arguments = step
                call = {"name": name, "args": arguments, "id": f"c{len(self.handed)}"}
                message = AIMessage(content="", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    return ScriptedChatModel()


async def run_langchain_agent(tools: list[Any]) -> list[str]:
    """LangChain's ``create_agent`` with ``tools`` and the scripted model, run to its
    end; what its model was handed (a ``ToolMessage``'s content: here a list of
    content blocks, as JSON)."""
    from langchain.agents import create_agent

    model = langchain_model()
    result = await create_agent(model, tools).ainvoke(
        {"messages": [{"role": "user", "content": "add numbers with code mode"}]}
    )
    assert result["messages"][-1].content == "done", result
    handed: list[str] = model.handed
    return handed


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_langchain_multi_server_client(transport: str) -> None:
    """``MultiServerMCPClient(...).get_tools()``, the documented way: each tool call
    opens a new MCP session (over stdio, a new server process): the cell and the
    stored value are found by a later call all the same, by the handles the model
    passes back."""

    async def run(connection: dict[str, Any]) -> list[str]:
        client = MultiServerMCPClient({"code-mode": connection})  # type: ignore[dict-item]
        return await run_langchain_agent(await client.get_tools())

    with trio.fail_after(PER_CALL_PROCESSES):
        async with served(transport) as target:
            connection = langchain_connection(target)
            handed = await in_asyncio(lambda: run(connection))
    check_handed(handed)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_langchain_tools_over_one_held_session(transport: str) -> None:
    """``load_mcp_tools`` on ``client.session(...)``, the documented way to keep one
    session: ``exec`` -> ``wait`` and ``store`` -> ``load`` work."""

    async def run(connection: dict[str, Any]) -> list[str]:
        client = MultiServerMCPClient({"code-mode": connection})  # type: ignore[dict-item]
        async with client.session("code-mode") as session:
            return await run_langchain_agent(await load_mcp_tools(session))

    with trio.fail_after(SAFETY):
        async with served(transport) as target:
            connection = langchain_connection(target)
            handed = await in_asyncio(lambda: run(connection))
    check_handed(handed)


# -- smolagents ----------------------------------------------------------------------------


def smolagents_model() -> Any:
    """A smolagents ``Model`` playing :func:`next_call` (smolagents ships no offline
    model), ending with the ``final_answer`` tool: each step it reads the tool
    responses in its messages (``Observation:`` and the tool's output), as the model
    is given them."""
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )

    class ScriptedModel(Model):
        handed: list[str]

        def generate(self, messages: list[ChatMessage], **_: Any) -> ChatMessage:
            self.handed = [
                block["text"]
                for message in messages
                if message.role == MessageRole.TOOL_RESPONSE
                for block in message.content or []
            ]
            step = next_call(self.handed)
            name, arguments = step if step is not None else ("final_answer", {"answer": "done"})
            function = ChatMessageToolCallFunction(name=name, arguments=arguments)
            call = ChatMessageToolCall(
                id=f"c{len(self.handed)}", type="function", function=function
            )
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    return ScriptedModel(model_id="scripted")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_smolagents_mcp_client_with_a_scripted_model(transport: str) -> None:
    """smolagents' ``MCPClient`` (mcpadapt: one session, held on a thread of its own)
    and a ``ToolCallingAgent`` running a scripted model; the model is handed
    ``Observation:`` and the first content item's text, stripped."""
    from smolagents import ToolCallingAgent
    from smolagents.monitoring import LogLevel

    def run(parameters: Any) -> list[str]:
        with MCPClient(parameters) as tools:
            assert sorted(tool.name for tool in tools) == ["exec", "wait"]
            model = smolagents_model()
            agent = ToolCallingAgent(tools=tools, model=model, verbosity_level=LogLevel.OFF)
            assert agent.run("add numbers with code mode") == "done"
            handed: list[str] = model.handed
            return handed

    with trio.fail_after(SAFETY):
        async with served(transport) as target:
            if isinstance(target, str):
                parameters: Any = {"url": target, "transport": "streamable-http"}
            else:
                command, args, env = target
                parameters = StdioServerParameters(command=command, args=args, env=env)
            handed = await trio.to_thread.run_sync(run, parameters)
    assert all(text.startswith("Observation:\n") for text in handed), handed
    check_handed(handed)
