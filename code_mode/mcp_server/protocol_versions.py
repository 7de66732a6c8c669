"""Which MCP protocol revisions the server advertises: only the ones it serves.

The SDK's server answers ``server/discover`` with the stateless revision
(``2026-07-28``), so every client in its default ("auto") mode adopts it; but code
mode keeps cells and stored values per MCP session, which that revision has no
place for (no ``initialize``, no ``Mcp-Session-Id``: cross-call state travels in
handles the server mints, which code mode does not mint yet). Every ``exec`` of such
a client was refused. So the server answers ``server/discover`` with the revisions
of the ``initialize`` handshake alone: a client then settles on the stateful
revision, as the MCP SDKs do for a server that advertises no modern version (the Go
SDK's stateful server answers the same way). Serving the stateless revision over HTTP
is later work; until then, advertising it there would be a promise the server breaks.

Over stdio the SDK's answer stands: the connection is the session (one client at the
other end of the pipe), so the stateless revision keeps its cells there, and a
connection that answered ``server/discover`` takes no ``initialize`` afterwards.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

__all__ = ["HTTP_PROTOCOL_VERSIONS", "advertise_served_versions"]

HTTP_PROTOCOL_VERSIONS: tuple[str, ...] = HANDSHAKE_PROTOCOL_VERSIONS
"""The revisions a code mode server serves over HTTP: those of the ``initialize``
handshake."""


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
