"""``exec``/``wait`` of a session as a pydantic-ai toolset (``code-mode[pydantic-ai]``).

::

    async with CodeModeSession(tools=[add]) as cm:
        agent = Agent(model, toolsets=[code_mode_toolset(cm)])
        result = await agent.run("What is 2 + 40?")

Output items become pydantic-ai content: text as strings, images as
:class:`~pydantic_ai.ImageUrl` (a ``data:`` URL stays one), audio as
:class:`~pydantic_ai.AudioUrl`.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import AudioUrl, ImageUrl
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

from .._facade import CodeModeSession
from .._types import Audio, Image, OutputItem, Text

__all__ = ["code_mode_toolset", "to_pydantic_ai"]


def to_pydantic_ai(items: list[OutputItem]) -> list[str | ImageUrl | AudioUrl]:
    """A result's items as pydantic-ai tool return content."""
    content: list[str | ImageUrl | AudioUrl] = []
    for item in items:
        if isinstance(item, Text):
            content.append(item.text)
        elif isinstance(item, Image):
            content.append(ImageUrl(url=item.image_url))
        elif isinstance(item, Audio):
            content.append(AudioUrl(url=item.audio_url))
    return content


def code_mode_toolset(session: CodeModeSession) -> FunctionToolset[Any]:
    """``exec`` (arguments ``{"code": ...}``) and ``wait`` for an agent, served by the
    entered ``session`` with its descriptions and JSON Schemas."""

    def served(name: str) -> Any:
        async def call(**arguments: Any) -> list[str | ImageUrl | AudioUrl]:
            return to_pydantic_ai(await session.handle_call(name, arguments))

        return call

    tools = [
        Tool.from_schema(
            served(definition["name"]),
            name=definition["name"],
            description=definition["description"],
            json_schema=definition["inputSchema"],
        )
        for definition in session.mcp_tools()
    ]
    return FunctionToolset(tools)
