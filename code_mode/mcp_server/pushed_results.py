"""Push over MCP: the results of programs that finished after ``Script running``, as
resources the client is told about.

The MCP specification's answer to long-running calls, tasks, is not served by the
official SDK this server runs on (its 2.x types carry the 2025-11-25 task messages,
which no server or client of the SDK dispatches). What the specification and the SDK do
offer is *resource subscriptions*, so that is what push uses:

* each MCP session of a server started with ``push=True`` keeps the results pushed to
  it (:class:`~code_mode.CellFinished`) until the client collects them;
* the result of cell ``<id>`` is the resource ``code-mode://cells/<id>``; a client that
  subscribed (``resources/subscribe``) to it, or to ``code-mode://cells`` for every cell
  of its session, gets ``notifications/resources/updated`` with that URI the moment it
  is pushed;
* the client collects it once, either with ``resources/read`` (all of its text as the
  first content, as in a ``CallToolResult``, then images and audio as blob contents)
  or with a ``wait`` for that cell, which returns it at once as the usual
  ``CallToolResult``; after that the cell is unknown, as for any result returned.
"""

from __future__ import annotations

import attrs
import mcp.types as types
import trio
from mcp import MCPError
from mcp.server.session import ServerSession

from .._facade import CellFinished
from .._types import OutputItem
from ..model_tools.adapters import mcp_content, mcp_text

__all__ = ["CELLS_URI", "RESOURCE_NOT_FOUND", "PushedResults", "cell_of_uri", "cell_uri"]

CELLS_URI = "code-mode://cells"
"""Subscribe here to hear of every pushed result of the session; each one is the
sub-resource :func:`cell_uri`."""

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code the MCP specification gives an unknown resource."""


def cell_uri(cell_id: str) -> str:
    """The resource of cell ``cell_id``'s pushed result."""
    return f"{CELLS_URI}/{cell_id}"


def cell_of_uri(uri: str) -> str | None:
    """The cell a resource URI names (:func:`cell_uri`), ``None`` for another URI."""
    prefix = CELLS_URI + "/"
    if uri.startswith(prefix) and len(uri) > len(prefix) and "/" not in uri[len(prefix) :]:
        return uri[len(prefix) :]
    return None


@attrs.define
class PushedResults:
    """The pushed results of one MCP session that its client has not collected, and
    where the session's subscriptions are told of new ones."""

    _ready: dict[str, list[OutputItem]] = attrs.Factory(dict)
    _subscribed: set[str] = attrs.Factory(set)
    _subscriber: ServerSession | None = None
    _taken: trio.Event = attrs.Factory(trio.Event)

    @property
    def uncollected(self) -> int:
        """Results pushed and not collected yet (a draining server waits for them)."""
        return len(self._ready)

    async def wait_collected(self) -> None:
        """Return once every pushed result has been collected."""
        while self._ready:
            await self._taken.wait()

    async def on_finished(self, finished: CellFinished) -> None:
        """The session's ``on_finished``: keep the result, then tell a subscriber. The
        result is kept first, so a notification that cannot be sent (the client went
        away) loses nothing a later ``wait`` could collect."""
        self._ready[finished.cell_id] = finished.items
        uri = cell_uri(finished.cell_id)
        target = self._subscriber
        if target is None or not self._subscribed & {CELLS_URI, uri}:
            return
        notification = types.ResourceUpdatedNotification(
            params=types.ResourceUpdatedNotificationParams(uri=uri)
        )
        await target.send_notification(notification)

    def take(self, cell_id: str) -> list[OutputItem] | None:
        """Collect the result of ``cell_id`` (a ``wait`` for it), if it was pushed."""
        items = self._ready.pop(cell_id, None)
        if items is not None:
            self._taken.set()
            self._taken = trio.Event()
        return items

    def subscribe(self, uri: str, session: ServerSession) -> None:
        if uri != CELLS_URI and cell_of_uri(uri) is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"no such resource: {uri} (subscribe to {CELLS_URI} or {cell_uri('<id>')})",
            )
        self._subscribed.add(uri)
        self._subscriber = session

    def unsubscribe(self, uri: str) -> None:
        self._subscribed.discard(uri)

    def listing(self) -> list[types.Resource]:
        """The results waiting to be collected, as resources."""
        return [
            types.Resource(
                uri=cell_uri(cell_id),
                name=f"cell {cell_id}",
                description=f"The result of the program in cell {cell_id}, which has finished",
                mime_type="text/plain",
            )
            for cell_id in self._ready
        ]

    def read(self, uri: str) -> types.ReadResourceResult:
        """Collect the result at ``uri``: its items as resource contents."""
        cell_id = cell_of_uri(uri)
        items = self.take(cell_id) if cell_id is not None else None
        if items is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"no result at {uri}: not pushed, or already collected",
            )
        blocks = mcp_content(items)
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=mcp_text(blocks))
        ]
        contents.extend(
            types.BlobResourceContents(uri=uri, mime_type=block["mimeType"], blob=block["data"])
            for block in blocks
            if block["type"] != "text"
        )
        return types.ReadResourceResult(contents=contents)
