"""Code mode served as an MCP server: ``exec`` and ``wait`` to any MCP client.

An application on top of :class:`~code_mode.CodeModeSession`, one session per MCP
session, over stdio or streamable HTTP (:mod:`.server`). ``code-mode mcp serve`` runs
it from the command line.

Needs the optional extra: ``pip install 'code-mode[mcp]'`` (the official ``mcp`` SDK
and ``hypercorn`` to serve HTTP on trio). See ``docs/mcp.md``.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "code_mode.mcp_server needs the `mcp` package: pip install 'code-mode[mcp]'"
    ) from error

from .server import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    MCP_HTTP_PATH,
    CodeModeMcpServer,
)

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MCP_HTTP_PATH",
    "CodeModeMcpServer",
]
