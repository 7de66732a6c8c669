"""MCP both ways: programs call MCP servers' tools, and code mode is an MCP server.

Needs the optional extra: ``pip install 'code-mode[mcp]'`` (the official ``mcp`` SDK,
2.x, which runs on trio through anyio, and ``hypercorn`` to serve HTTP on trio).

* Client side (:mod:`._client`, :mod:`._config`): :func:`connect_mcp_servers` starts
  the servers of an ``mcpServers`` configuration and yields their tools as nested tools
  (``mcp__<server>__<tool>``); :func:`list_mcp_tools` does the same for an SDK
  ``ClientSession`` you opened yourself.
* Server side (:mod:`._server`): :class:`CodeModeMcpServer` serves ``exec`` and
  ``wait`` over stdio or streamable HTTP, one ``CodeModeSession`` per MCP session.
* Command line (:mod:`._cli`): ``code-mode mcp serve`` and ``code-mode run
  --mcp-config``.

See ``docs/mcp.md``.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "code_mode.integrations.mcp needs the `mcp` package: pip install 'code-mode[mcp]'"
    ) from error

from ._client import (
    MCP_NAMESPACE_PREFIX,
    McpTool,
    McpToolError,
    call_tool_result_schema,
    list_mcp_tools,
    mcp_namespace,
)
from ._config import (
    DEFAULT_STARTUP_TIMEOUT,
    McpConfigError,
    McpServerConfig,
    McpServers,
    connect_mcp_servers,
    load_mcp_config,
    parse_mcp_config,
)
from ._server import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    MCP_HTTP_PATH,
    CodeModeMcpServer,
)

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "MCP_HTTP_PATH",
    "MCP_NAMESPACE_PREFIX",
    "CodeModeMcpServer",
    "McpConfigError",
    "McpServerConfig",
    "McpServers",
    "McpTool",
    "McpToolError",
    "call_tool_result_schema",
    "connect_mcp_servers",
    "list_mcp_tools",
    "load_mcp_config",
    "mcp_namespace",
    "parse_mcp_config",
]
