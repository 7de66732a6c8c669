"""Which MCP protocol revisions the server advertises: the ones it serves, all of them.

The server answers ``server/discover`` with the revisions of the ``initialize``
handshake (stateful: the MCP session keeps the cells and stored values) and the
stateless revision (``2026-07-28``: no ``initialize``, no ``Mcp-Session-Id``; cells
and sessions travel as handles the server mints, :mod:`.stateless`), so a client in
its default ("auto") mode adopts the stateless one, and a client that insists on the
handshake (``mode="legacy"``, the Inspector) gets the stateful one, on the same
endpoint. This is the SDK's own answer; it is made explicit here so that what the
server advertises is what it serves, in one place.

Over stdio the connection is the session (one client at the other end of the pipe),
so both revisions keep their cells in it.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

__all__ = ["HTTP_PROTOCOL_VERSIONS", "advertise_served_versions"]

HTTP_PROTOCOL_VERSIONS: tuple[str, ...] = (
    *HANDSHAKE_PROTOCOL_VERSIONS,
    *MODERN_PROTOCOL_VERSIONS,
)
"""The revisions a code mode server serves over HTTP: those of the ``initialize``
handshake (stateful) and the stateless one."""


def advertise_served_versions(server: Server[Any]) -> None:
    """Make ``server`` answer ``server/discover`` over HTTP with
    :data:`HTTP_PROTOCOL_VERSIONS`, over stdio as the SDK does (its capabilities and
    instructions unchanged)."""

    async def discover(
        ctx: ServerRequestContext[Any], params: types.RequestParams | None
    ) -> types.DiscoverResult:
        over_stdio = ctx.request is None  # no HTTP request: the stdio connection
        versions = MODERN_PROTOCOL_VERSIONS if over_stdio else HTTP_PROTOCOL_VERSIONS
        return types.DiscoverResult(
            supported_versions=list(versions),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions,
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)
