"""Reading an MCP servers configuration: the ``mcpServers`` JSON of common MCP hosts.

::

    {"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
               "env": {"DEBUG": "1"}},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}
    }}

An entry with ``command`` is a stdio server (a child process); one with ``url`` is a
streamable HTTP server. ``type`` (``"stdio"``, ``"http"``/``"streamable-http"``) may say
so explicitly; ``"disabled": true`` skips an entry; other keys hosts add (``alwaysAllow``,
``timeout``...) are ignored; ``tool_input_schema_max_bytes`` (a positive integer,
codex's key) lets the server's tools have longer input types in the ``exec``
description. SSE servers are refused: the transport is deprecated.
Starting the servers is :mod:`._connect`'s job.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

__all__ = ["McpConfigError", "McpServerConfig", "load_mcp_config", "parse_mcp_config"]

_STDIO_KEYS: Final = frozenset({"command", "args", "env", "cwd"})
_HTTP_TYPES: Final = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})


class McpConfigError(ValueError):
    """The ``mcpServers`` configuration is malformed, or a server could not be
    started; the message names the server."""


@attrs.frozen(kw_only=True)
class McpServerConfig:
    """One MCP server to connect to: a stdio ``command`` or a streamable HTTP ``url``.

    ``name`` is the key of its ``mcpServers`` entry; its tools are
    ``mcp__<name>__<tool>``. For stdio, ``env`` is added to a small safe default
    environment (the SDK's: ``PATH``, ``HOME``...), not to the whole environment of
    the host, so secrets are passed on purpose only.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    tool_input_schema_max_bytes: int | None = None
    """The server's limit of a rendered input type in the ``exec`` description
    (codex's per-server key of that name): its tools' types may be this long, when
    more than the session's limit (16 000 by default)."""

    def __attrs_post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"MCP server `{self.name}` needs either a `command` or a `url`")


def _strings(name: str, key: str, value: Any, kind: type) -> Any:
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise McpConfigError(f"MCP server `{name}`: `{key}` must be a list of strings")
        return tuple(value)
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"MCP server `{name}`: `{key}` must map strings to strings")
    return dict(value)


def _server_config(name: str, entry: Any) -> McpServerConfig | None:
    if not isinstance(entry, dict):
        raise McpConfigError(f"MCP server `{name}` must be a JSON object")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type")
    if kind == "sse":
        raise McpConfigError(
            f"MCP server `{name}`: the SSE transport is not supported (use streamable HTTP)"
        )
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise McpConfigError(f"MCP server `{name}`: unknown `type` {kind!r}")
    limit = entry.get("tool_input_schema_max_bytes")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise McpConfigError(
            f"MCP server `{name}`: `tool_input_schema_max_bytes` must be a positive integer"
        )
    if "url" in entry and kind != "stdio":
        url = entry["url"]
        if not isinstance(url, str) or not url:
            raise McpConfigError(f"MCP server `{name}`: `url` must be a non-empty string")
        headers = _strings(name, "headers", entry.get("headers", {}), dict)
        return McpServerConfig(
            name=name, url=url, headers=headers, tool_input_schema_max_bytes=limit
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise McpConfigError(f"MCP server `{name}` needs a `command` (stdio) or a `url` (HTTP)")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f"MCP server `{name}`: `cwd` must be a string")
    return McpServerConfig(
        name=name,
        command=command,
        args=_strings(name, "args", entry.get("args", []), list),
        env=_strings(name, "env", entry.get("env", {}), dict),
        cwd=cwd,
        tool_input_schema_max_bytes=limit,
    )


def parse_mcp_config(data: Any) -> list[McpServerConfig]:
    """The servers of an ``mcpServers`` document (the decoded JSON), in file order,
    without the disabled ones. Raises :class:`McpConfigError` naming the problem."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise McpConfigError('an MCP configuration is a JSON object with an "mcpServers" object')
    servers: list[McpServerConfig] = []
    for name, entry in data["mcpServers"].items():
        if not name:
            raise McpConfigError("an MCP server name must not be empty")
        config = _server_config(name, entry)
        if config is not None:
            servers.append(config)
    return servers


def load_mcp_config(path: str | os.PathLike[str]) -> list[McpServerConfig]:
    """:func:`parse_mcp_config` of a JSON file (``OSError`` if it cannot be read)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpConfigError(f"{path}: not valid JSON: {error}") from None
    return parse_mcp_config(data)
