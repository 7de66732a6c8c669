"""What a server behind a load balancer answers before the SDK's streamable HTTP app.

Besides MCP at ``/mcp``, a server process answers:

* ``GET /healthz``: ``200 ok`` while the process serves HTTP, draining included (a
  liveness probe: failing it means the process should be restarted);
* ``GET /readyz``: ``200 ready`` while the server takes new sessions, ``503`` with the
  reason while it drains or is full (the balancer's check: a server failing it gets no
  new sessions but keeps its own).

and refuses, before the SDK parses anything, each with a JSON-RPC error body that the
SDK's client raises as an ``MCPError`` carrying the message:

* a body over ``ServerLimits.max_request_body_bytes``: 413;
* a request opening a session (a ``POST`` without ``Mcp-Session-Id``, of a stateful
  revision) while the server drains or is full: 503, which the balancer may retry on
  another server, as nothing of it was kept. A request of the stateless revision
  carries no session id either; it goes through, and the server refuses only a new
  program while it drains (a ``wait`` must still reach its cell);
* a request of a session this server has closed (idle, or drained): 404, MCP's answer
  for a session that is gone, which makes a client start a new one. A ``DELETE`` still
  goes through, so that the SDK forgets the session.

It also counts the requests in flight that are not ``GET`` streams, so that a draining
server stops only once the results it handed out have been sent.
"""

from __future__ import annotations

from typing import Final, Protocol

import mcp.types as types
import trio
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HEALTH_PATH", "READY_PATH", "SESSION_HEADER", "HttpFront", "SessionDoor"]

HEALTH_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
SESSION_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"


class SessionDoor(Protocol):
    """What the front asks the server about sessions."""

    def new_session_refusal(self) -> str | None:
        """Why no new session is taken now (draining, full), or ``None``."""
        ...

    def session_refusal(self, key: str) -> str | None:
        """Why the session ``key`` is gone (closed by this server), or ``None``."""
        ...

    def deleted(self, key: str) -> None:
        """The client deleted the session ``key``."""
        ...


class HttpFront:
    """An ASGI app in front of ``app`` (the SDK's streamable HTTP app); see the module
    documentation."""

    def __init__(self, app: ASGIApp, door: SessionDoor, max_body_bytes: int) -> None:
        self._app = app
        self._door = door
        self._max_body_bytes = max_body_bytes
        self._in_flight = 0
        self._quiet = trio.Event()
        self._quiet.set()

    @property
    def requests_in_flight(self) -> int:
        """Requests being answered, ``GET`` streams aside."""
        return self._in_flight

    async def wait_quiet(self) -> None:
        """Return once no request (``GET`` streams aside) is being answered."""
        while self._in_flight:
            await self._quiet.wait()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        method = scope["method"]
        path = scope["path"]
        if method in ("GET", "HEAD") and path in (HEALTH_PATH, READY_PATH):
            await self._health(path, scope, send)
            return
        if method == "GET":  # the session's stream: open for as long as the session
            await self._serve(scope, receive, send)
            return
        self._in_flight += 1
        if self._in_flight == 1:
            self._quiet = trio.Event()
        try:
            await self._serve(scope, receive, send)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._quiet.set()

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        key = _header(scope, SESSION_HEADER)
        if key is not None and method != "DELETE":
            gone = self._door.session_refusal(key)
            if gone is not None:
                await _json_rpc_error(send, 404, types.INVALID_REQUEST, gone)
                return
        if key is None and method == "POST" and not _stateless(scope):
            refusal = self._door.new_session_refusal()
            if refusal is not None:
                await _json_rpc_error(send, 503, types.INTERNAL_ERROR, refusal)
                return
        if method == "POST":
            limited = await self._limited_body(scope, receive, send)
            if limited is None:
                return
            receive = limited
        await self._app(scope, receive, send)
        if method == "DELETE" and key is not None:
            self._door.deleted(key)

    async def _limited_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """``receive`` replaying the whole body once it is known to fit; ``None`` once
        a 413 has been sent instead."""
        limit = self._max_body_bytes
        too_large = (
            f"request body over this server's limit of {limit} bytes "
            "(ServerLimits.max_request_body_bytes)"
        )
        declared = _header(scope, "content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _json_rpc_error(send, 413, types.INVALID_REQUEST, too_large)
            return None
        body = bytearray()
        kept: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                kept.append(message)  # the client went away: the app sees it too
                break
            body.extend(message.get("body", b""))
            if len(body) > limit:
                await _json_rpc_error(send, 413, types.INVALID_REQUEST, too_large)
                return None
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]
        replay.extend(kept)

        async def replayed() -> Message:
            if replay:
                return replay.pop(0)
            return await receive()

        return replayed

    async def _health(self, path: str, scope: Scope, send: Send) -> None:
        if path == HEALTH_PATH:
            status, text = 200, "ok"
        else:
            refusal = self._door.new_session_refusal()
            status, text = (200, "ready") if refusal is None else (503, refusal)
        body = (text + "\n").encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )


async def _json_rpc_error(send: Send, status: int, code: int, message: str) -> None:
    """A JSON-RPC error without a request id (the request was not parsed), as the SDK
    answers its own refusals, so that its client surfaces ``message``."""
    error = types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _stateless(scope: Scope) -> bool:
    """Whether the request names the stateless revision (``MCP-Protocol-Version``)."""
    return _header(scope, PROTOCOL_VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers", []):
        if key.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None
