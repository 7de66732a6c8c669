"""``exec``/``wait`` of a session as OpenAI Agents SDK function tools
(``code-mode[openai-agents]``).

::

    async with CodeModeSession(tools=[add]) as cm:
        agent = Agent(name="coder", model=model, tools=code_mode_function_tools(cm))
        result = await Runner.run(agent, "What is 2 + 40?")

The SDK's function tools take JSON arguments, so ``exec`` takes ``{"code": ...}`` as
over MCP. Output items become the SDK's structured outputs: text as
:class:`~agents.ToolOutputText`, images as :class:`~agents.ToolOutputImage`; audio,
which function tool outputs cannot carry, as a text saying so.
"""

from __future__ import annotations

from typing import Any

from agents import FunctionTool, RunContextWrapper, ToolOutputImage, ToolOutputText

from .._facade import CodeModeSession
from .._types import Audio, Image, OutputItem, Text

__all__ = ["code_mode_function_tools", "to_openai_agents"]


def to_openai_agents(items: list[OutputItem]) -> list[ToolOutputText | ToolOutputImage]:
    """A result's items as the SDK's tool outputs."""
    outputs: list[ToolOutputText | ToolOutputImage] = []
    for item in items:
        if isinstance(item, Text):
            outputs.append(ToolOutputText(text=item.text))
        elif isinstance(item, Image):
            detail = item.detail.value if item.detail is not None else None
            outputs.append(
                ToolOutputImage(
                    image_url=item.image_url,
                    detail=detail if detail in ("low", "high", "auto") else None,  # type: ignore[arg-type]
                )
            )
        elif isinstance(item, Audio):
            outputs.append(ToolOutputText(text="[audio output omitted: not supported here]"))
    return outputs


def code_mode_function_tools(session: CodeModeSession) -> list[FunctionTool]:
    """``exec`` and ``wait`` as function tools served by the entered ``session``, with
    its descriptions and JSON Schemas (not strict: ``wait``'s options are optional)."""

    def served(name: str) -> Any:
        async def invoke(
            _context: RunContextWrapper[Any], arguments: str
        ) -> list[ToolOutputText | ToolOutputImage]:
            return to_openai_agents(await session.handle_call(name, arguments or "{}"))

        return invoke

    return [
        FunctionTool(
            name=definition["name"],
            description=definition["description"],
            params_json_schema=definition["inputSchema"],
            on_invoke_tool=served(definition["name"]),
            strict_json_schema=False,
        )
        for definition in session.mcp_tools()
    ]
