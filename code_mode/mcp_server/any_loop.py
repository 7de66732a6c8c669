"""The HTTP app under an asyncio ASGI server (uvicorn): the app runs in trio guest mode.

:meth:`~code_mode.mcp_server.CodeModeMcpServer.http_app` is written for trio (its
lifespan holds the sessions in a trio nursery). Called by a trio ASGI server
(hypercorn with ``worker_class="trio"``) it is used as is. Called by an asyncio one,
each ASGI call runs as a task of the loop's trio guest run (:mod:`code_mode._asyncio_host`),
and the server's ``receive``/``send`` are awaited back on the asyncio loop. The
``lifespan`` call holds the guest run: it starts with the server's start-up and ends
after its shutdown, so the sessions live exactly as long as the server; a request
arriving without a lifespan (``uvicorn --lifespan off``) is refused with a 500 and a
log line saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import _asyncio_host
from ..integrations.host_loop import on_host

__all__ = ["AnyLoopApp"]

logger = logging.getLogger("code_mode.mcp_server")

NO_LIFESPAN = (
    "code mode's HTTP app needs its ASGI lifespan on an asyncio server (it holds the "
    "sessions): run uvicorn with the default --lifespan auto or on"
)


class AnyLoopApp:
    """The app ``build()`` makes, served by a trio or an asyncio ASGI server.

    It is built on its first call, in trio: the MCP SDK's app creates anyio objects
    (locks) that belong to the event loop they are created on, so under uvicorn they
    must be made inside the guest run, not on the asyncio loop."""

    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        self._build = build
        self._app: ASGIApp | None = None
        self._run: _asyncio_host.GuestRun | None = None

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app itself (in trio)."""
        if self._app is None:
            self._app = self._build()
        await self._app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _asyncio_host.on_asyncio():
            await self.app(scope, receive, send)
            return
        if scope["type"] == "lifespan":
            run = await _asyncio_host.acquire()
            self._run = run
            try:
                await run.call(lambda: self.app(scope, _on_host(receive), _on_host_send(send)))
            finally:
                self._run = None
                await _asyncio_host.release(run)
            return
        current = self._run
        if current is None:
            logger.error(NO_LIFESPAN)
            if scope["type"] == "http":
                await send({"type": "http.response.start", "status": 500, "headers": []})
                await send({"type": "http.response.body", "body": NO_LIFESPAN.encode()})
            return
        await current.call(lambda: self.app(scope, _on_host(receive), _on_host_send(send)))


def _on_host(receive: Receive) -> Receive:
    async def received() -> Message:
        return await on_host(receive())

    return received


def _on_host_send(send: Send) -> Send:
    async def sent(message: Message) -> None:
        await on_host(send(message))

    return sent
