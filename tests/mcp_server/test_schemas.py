"""The ``exec`` and ``wait`` tools as ``tools/list`` serves them, in every revision:
optional arguments optional to every host, defaults stated, no output schema.

Hosts turn a served ``inputSchema`` into their own tool type in different ways: the
MCP SDKs read ``required``; smolagents (through mcpadapt) reads only ``properties``
and takes an argument as optional when it says ``nullable`` (without it, a ``wait``
without ``max_tokens`` was refused: "Argument max_tokens is required"); pydantic-ai
makes a tool strict, every property required, when its schema allows it. And a host
that finds an ``outputSchema`` may expect ``structuredContent``, which our results do
not carry (all of their text is in the first content item)."""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

from code_mode.mcp_server import CodeModeMcpServer

from ..mcp_support import SAFETY, add, serve_command
from .http_support import http_server

REQUIRED = {"exec": ["code"], "wait": ["cell_id"]}
DEFAULTS = {"wait": {"yield_time_ms": 10000, "max_tokens": 10000, "terminate": False}}


def check(tools: list[types.Tool]) -> None:
    assert sorted(tool.name for tool in tools) == ["exec", "wait"]
    for tool in tools:
        schema: dict[str, Any] = tool.input_schema
        assert tool.output_schema is None, tool.name
        assert schema.get("required") == REQUIRED[tool.name], tool.name
        optional = set(schema["properties"]) - set(REQUIRED[tool.name])
        # One addressing model: exec takes a session handle in every revision.
        expected = {"yield_time_ms", "max_tokens", "terminate"} if tool.name == "wait" else set()
        if tool.name == "exec":
            expected = {"session"}
        assert optional == expected, tool.name
        for name, spec in schema["properties"].items():
            # smolagents (mcpadapt) reads `nullable`, not `required`.
            assert spec.get("nullable", False) is (name in optional), (tool.name, name)
            assert "default" in spec or name not in DEFAULTS.get(tool.name, {})
            if name in DEFAULTS.get(tool.name, {}):
                assert spec["default"] == DEFAULTS[tool.name][name]
                assert f"default {str(spec['default']).lower()}" in spec["description"]
        # A converter that goes strict when the schema allows it (pydantic-ai for
        # OpenAI models) must find optional arguments and leave them optional.
        transformer = OpenAIJsonSchemaTransformer(schema, strict=None)
        transformer.walk()
        assert transformer.is_strict_compatible is not bool(optional), tool.name


@pytest.mark.parametrize("push", [False, True])
async def test_stdio_listing(push: bool) -> None:
    command, args, env = serve_command(*(["--push"] if push else []))
    with trio.fail_after(SAFETY):
        async with (
            stdio_client(StdioServerParameters(command=command, args=args, env=env)) as streams,
            ClientSession(*streams) as session,
        ):
            await session.initialize()
            check((await session.list_tools()).tools)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_listing_in_each_revision(mode: str) -> None:
    """``legacy``: the stateful revisions (``initialize``); ``auto``, the SDK's
    default: the stateless one; ``exec`` takes ``session`` in both."""
    server = CodeModeMcpServer(tools=[add])
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, Client(url, mode=mode) as client:  # type: ignore[arg-type]
            check((await client.list_tools()).tools)
