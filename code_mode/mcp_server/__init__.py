"""Code mode served as an MCP server: ``exec`` and ``wait`` to any MCP client.

An application on top of :class:`~code_mode.CodeModeSession`, one session per MCP
session, over stdio or streamable HTTP (:mod:`.server`), made to run as one of several
processes behind a load balancer: health and readiness checks and refusals in front of
the SDK's HTTP app (:mod:`.http_front`), per-process limits (:mod:`.limits`), a drain
that loses no finished result. ``code-mode mcp serve`` runs it from the command line;
``deploy/`` and ``docs/deploy.md`` run several.

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

from .client_timeouts import DEFAULT_MCP_MAX_YIELD_TIME_MS
from .http_front import HEALTH_PATH, READY_PATH
from .limits import (
    DEFAULT_DRAIN_DEADLINE,
    DEFAULT_EXEC_RETRY_WINDOW,
    DEFAULT_MAX_REQUEST_BODY_BYTES,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    ServerLimits,
)
from .server import MCP_HTTP_PATH, CodeModeMcpServer

__all__ = [
    "DEFAULT_DRAIN_DEADLINE",
    "DEFAULT_EXEC_RETRY_WINDOW",
    "DEFAULT_MAX_REQUEST_BODY_BYTES",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MCP_MAX_YIELD_TIME_MS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "HEALTH_PATH",
    "MCP_HTTP_PATH",
    "READY_PATH",
    "CodeModeMcpServer",
    "ServerLimits",
]
