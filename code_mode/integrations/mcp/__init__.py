"""MCP servers as a tool source: programs call the tools of MCP servers.

Needs the optional extra: ``pip install 'code-mode[mcp]'`` (the official ``mcp`` SDK,
2.x, which runs on trio through anyio).

* :mod:`._config` -- reading an ``mcpServers`` configuration (the format Claude
  Desktop, VS Code and Cursor use);
* :mod:`._connect` -- :func:`connect_mcp_servers` starts (or connects to) the servers
  of a configuration and yields their tools as nested tools (``mcp__<server>__<tool>``);
* :mod:`._client` -- :func:`list_mcp_tools` does the same for an SDK ``ClientSession``
  you opened yourself.

The other direction, code mode served *as* an MCP server, is an application on top of
the façade: :mod:`code_mode.mcp_server`. See ``docs/mcp.md``.
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
from ._config import McpConfigError, McpServerConfig, load_mcp_config, parse_mcp_config
from ._connect import DEFAULT_STARTUP_TIMEOUT, McpServers, connect_mcp_servers

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "MCP_NAMESPACE_PREFIX",
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
