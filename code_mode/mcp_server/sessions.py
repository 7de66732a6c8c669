"""The code mode sessions of a running MCP server: one per MCP session, each in a task.

:class:`SessionPool` opens a :class:`~code_mode.CodeModeSession` on an MCP session's
first request (:func:`open_session_pool` holds their tasks), keeps it while calls are in
flight, closes it when it idles past ``ServerLimits.session_idle_timeout``, is deleted
or the server drains, and remembers why, to answer later requests of it. A
:class:`SessionEntry` routes its programs' ``notify(...)`` to the request in flight
(:func:`serve_call`) or to the session's stream, and runs its ``exec`` calls in a
task group of its own so that a client's timeout loses no cell
(:mod:`.client_timeouts`).
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import attrs
import mcp.types as types
import trio
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession

from .._facade import CodeModeSession, Notification
from ..model_tools.adapters import EXEC_TOOL_NAME
from .client_timeouts import AbandonedExecs, exec_key, with_progress
from .http_front import SESSION_HEADER
from .limits import ServerLimits
from .pushed_results import PushedResults
from .refusals import DRAINED, DRAINING, full_text, idle_text

__all__ = [
    "Listener",
    "Refused",
    "SessionEntry",
    "SessionPool",
    "open_session_pool",
    "serve_call",
    "session_key",
]

logger = logging.getLogger("code_mode.mcp")

_STDIO_KEY: Final = "stdio"

_REMEMBERED_CLOSED_SESSIONS: Final = 10_000
"""Sessions closed by the server whose ids are remembered, to answer their requests
404 with the reason (older ones get the SDK's own 404 once it has forgotten them)."""


class Refused(Exception):
    """A call the server cannot serve; the message goes back as a failed result."""


@attrs.define
class Listener:
    """An ``exec``/``wait`` request in flight, where notifications of its cell go."""

    session: ServerSession
    request_id: types.RequestId | None
    wants_progress: bool
    sent: int = 0


class SessionEntry:
    """One MCP session's code mode session, owned by a task of the pool."""

    def __init__(self, key: str, exec_retry_window: float) -> None:
        self.key = key
        self.session: CodeModeSession | None = None
        self.calls: trio.Nursery | None = None  # where its exec calls run
        self.execs = AbandonedExecs(exec_retry_window)
        self.busy = 0
        self.quiet = trio.Event()  # set while no exec/wait of the session is in flight
        self.quiet.set()
        self.closed_reason: str | None = None  # why the server closed it, if it did
        self.idle_scope = trio.CancelScope()
        self.by_call: dict[str, Listener] = {}
        self.by_cell: dict[str, Listener] = {}
        self.standalone: ServerSession | None = None
        self.results: PushedResults | None = None  # with push: results to collect
        # The session handle (:mod:`.stateless`) whose stored values this session's
        # exec calls use when they name none: minted at a stateful session's first exec.
        self.handle: str | None = None
        self.stateful = False  # an MCP session's own: open between calls, until it ends
        self.counted = True  # against ServerLimits.max_sessions (SessionPool.use)

    async def notify(self, note: Notification) -> None:
        listener = self.by_cell.get(str(note.cell_id)) or self.by_call.get(note.call_id)
        if listener is not None and listener.wants_progress:
            listener.sent += 1
            await listener.session.report_progress(listener.sent, message=note.text)
            return
        target = listener.session if listener is not None else self.standalone
        if target is None:
            return
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level="info", logger=f"code-mode cell {note.cell_id}", data=note.text
            )
        )
        related = listener.request_id if listener is not None else None
        await target.send_notification(notification, related_request_id=related)


class Elsewhere(Protocol):
    """What a session handle has at work outside the code mode session of the MCP
    session that remembers it (:mod:`.stateless_cells`: its cells run in the session
    handle's own code mode session, and their ends wait in the store)."""

    def holds(self, session: str) -> bool:
        """Whether a cell of ``session`` runs here, or its end waits to be collected
        from a store in this process."""
        ...

    async def wait_changed(self) -> None:
        """Return at the next change of what :meth:`holds` answers."""
        ...


class SessionPool:
    """The code mode sessions of a running server, each in a task of ``nursery``."""

    def __init__(
        self,
        nursery: trio.Nursery,
        open_session: Callable[[SessionEntry], CodeModeSession],
        limits: ServerLimits,
    ) -> None:
        self._nursery = nursery
        self._open_session = open_session
        self._idle_timeout = limits.session_idle_timeout
        self._exec_retry_window = limits.exec_retry_window
        self._max_sessions = limits.max_sessions
        self._entries: dict[str, SessionEntry] = {}
        self._closed: OrderedDict[str, str] = OrderedDict()
        self._lock = trio.Lock()
        self.draining = False
        """No session is opened any more (the server drains)."""
        self.elsewhere: Elsewhere | None = None
        """What a stateful MCP session's handle has at work: it keeps the MCP session
        live, as its own cells did (a drain closes it once that is done)."""

    def __len__(self) -> int:
        """The sessions counted against ``max_sessions`` (see :meth:`use`)."""
        return sum(entry.counted for entry in self._entries.values())

    # -- what the HTTP front asks (:class:`.http_front.SessionDoor`) -------------------

    def new_session_refusal(self) -> str | None:
        """Why no new session is taken now (draining, full), or ``None``."""
        if self.draining:
            return DRAINING
        if len(self) >= self._max_sessions:
            return full_text(self._max_sessions)
        return None

    def session_refusal(self, key: str) -> str | None:
        """Why the session ``key`` is gone, or ``None``; while draining, a session with
        nothing left to finish is closed now, so that its client starts a new session
        (elsewhere) rather than a program here."""
        reason = self._closed.get(key)
        if reason is None and self.draining and not self.is_live(key):
            self.close(key, DRAINED)
            reason = DRAINED
        return reason

    def deleted(self, key: str) -> None:
        """The client deleted the session ``key``."""
        self.close(key)

    def closed_reason(self, key: str) -> str | None:
        """Why the server closed the session ``key``, if it did (recently)."""
        return self._closed.get(key)

    def is_live(self, key: str) -> bool:
        """Whether the session ``key`` has a call in flight, a program whose final
        result has not been received yet, or a pushed result not yet collected."""
        entry = self._entries.get(key)
        if entry is None or entry.session is None:
            return False
        pushed = entry.results is not None and entry.results.uncollected > 0
        return (
            entry.busy > 0
            or entry.session.runtime.pending_results > 0
            or pushed
            or self._held(entry)
        )

    def _held(self, entry: SessionEntry) -> bool:
        elsewhere = self.elsewhere
        return entry.handle is not None and elsewhere is not None and elsewhere.holds(entry.handle)

    @asynccontextmanager
    async def use(self, key: str, *, counted: bool = True) -> AsyncIterator[SessionEntry]:
        """The session of ``key`` (opened if needed), kept from expiring meanwhile.
        ``counted=False``: a session opened for a stateful MCP session's handle, which
        that MCP session already counts against ``max_sessions``."""
        async with self._lock:  # one opening at a time: no two sessions for one key
            entry = self._entries.get(key)
            if entry is None:
                if self.draining:
                    raise Refused(DRAINING)
                if counted and len(self) >= self._max_sessions:
                    raise Refused(full_text(self._max_sessions))
                entry = SessionEntry(key, self._exec_retry_window)
                entry.counted = counted
                await self._nursery.start(self._run, entry)
                self._entries[key] = entry
            entry.busy += 1
            if entry.busy == 1:
                entry.quiet = trio.Event()
            entry.idle_scope.deadline = math.inf
        try:
            yield entry
        finally:
            entry.busy -= 1
            if entry.busy == 0:
                entry.quiet.set()
                if self._idle_timeout is not None:
                    entry.idle_scope.deadline = trio.current_time() + self._idle_timeout

    def peek(self, key: str) -> SessionEntry | None:
        """The session of ``key`` if it is open (never opens one)."""
        return self._entries.get(key)

    def close(self, key: str, reason: str | None = None) -> None:
        """End the session of ``key``, if any: its cells are terminated. With a
        ``reason``, later requests of the session are refused with it (404)."""
        if reason is not None:
            self._remember(key, reason)
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry.closed_reason = reason
            entry.idle_scope.cancel()

    def close_if_quiet(self, key: str) -> None:
        """Close the session of ``key`` if no call or task uses it: for a stateless
        session, whose state is in the store, the code mode session is only needed
        while an ``exec`` runs or a cell of it is pumped (:mod:`.stateless`), so that
        ``max_sessions`` counts the sessions at work, not every handle ever used."""
        entry = self._entries.get(key)
        # (An exec its client abandoned keeps it for a retry: then the idle timeout.)
        if entry is not None and entry.busy == 0 and not entry.stateful and not entry.execs:
            self.close(key)

    def close_all(self, reason: str | None = None) -> None:
        for key in list(self._entries):
            self.close(key, reason)

    async def settle(self) -> None:
        """Close each session once it has no call in flight, no program whose final
        result has not been received and no pushed result not yet collected; return
        when all are closed. No session opens meanwhile (:attr:`draining`)."""
        while self._entries:  # again for a session whose opening was under way
            async with trio.open_nursery() as nursery:
                for entry in list(self._entries.values()):
                    nursery.start_soon(self._settle, entry)

    async def _settle(self, entry: SessionEntry) -> None:
        session = entry.session
        assert session is not None  # set before the entry is in the pool
        results = entry.results
        while True:
            if entry.busy:
                await entry.quiet.wait()
            elif session.runtime.cell_count:
                await session.runtime.wait_no_cells()
            elif results is not None and results.uncollected:
                await results.wait_collected()
            elif self.elsewhere is not None and self._held(entry):
                await self.elsewhere.wait_changed()
            else:
                break
        if self._entries.get(entry.key) is entry:
            self.close(entry.key, DRAINED)

    def _remember(self, key: str, reason: str) -> None:
        self._closed[key] = reason
        self._closed.move_to_end(key)
        while len(self._closed) > _REMEMBERED_CLOSED_SESSIONS:
            self._closed.popitem(last=False)

    async def _run(self, entry: SessionEntry, *, task_status: trio.TaskStatus[None]) -> None:
        session = self._open_session(entry)
        try:
            # The calls' nursery outlives the session: closing the session ends the
            # programs, which lets the exec calls in it return.
            async with trio.open_nursery() as calls, session:
                entry.calls = calls
                entry.session = session
                task_status.started()
                with entry.idle_scope:
                    await trio.sleep_forever()
                # Neither closed by the server nor deleted (gone from the pool): idle.
                if entry.closed_reason is None and self._entries.get(entry.key) is entry:
                    entry.closed_reason = idle_text(self._idle_timeout)
                    self._remember(entry.key, entry.closed_reason)
                # Forgotten before its cells are terminated: a request arriving now
                # is not served by a session that is closing.
                self._forget(entry)
                logger.debug("closing code mode session of MCP session %s", entry.key)
        except Exception:
            # A failure to close one session must not take the server (and every other
            # session) down with it.
            logger.exception("code mode session of MCP session %s failed", entry.key)
        finally:
            self._forget(entry)

    def _forget(self, entry: SessionEntry) -> None:
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]


@asynccontextmanager
async def open_session_pool(
    open_session: Callable[[SessionEntry], CodeModeSession],
    limits: ServerLimits,
    *,
    draining: bool = False,
) -> AsyncIterator[SessionPool]:
    """A pool whose sessions run in tasks of this block; leaving it closes them all."""
    async with trio.open_nursery() as nursery:
        pool = SessionPool(nursery, open_session, limits)
        pool.draining = draining
        try:
            yield pool
        finally:
            pool.close_all()


async def serve_call(
    entry: SessionEntry,
    ctx: ServerRequestContext[SessionPool],
    name: str,
    arguments: dict[str, Any],
) -> list[Any]:
    """Run one exec/wait on ``entry``'s session with its notifications routed to this
    request, reporting progress meanwhile if the client asked for it
    (:mod:`.client_timeouts`)."""
    meta = ctx.meta or {}
    listener = Listener(
        ctx.session,
        ctx.request_id,
        wants_progress="progress_token" in meta or "progressToken" in meta,
    )
    entry.standalone = ctx.session
    if not listener.wants_progress:
        return await _serve_routed(entry, listener, name, arguments)

    async def beat() -> None:
        listener.sent += 1
        await listener.session.report_progress(listener.sent)

    return await with_progress(beat, lambda: _serve_routed(entry, listener, name, arguments))


async def _serve_routed(
    entry: SessionEntry, listener: Listener, name: str, arguments: dict[str, Any]
) -> list[Any]:
    session = entry.session
    assert session is not None and entry.calls is not None
    assert name == EXEC_TOOL_NAME  # a wait reads the store (:mod:`.stateless`)

    def route(call_id: str) -> Callable[[], None]:
        entry.by_call[call_id] = listener

        def unroute() -> None:
            if entry.by_call.get(call_id) is listener:
                del entry.by_call[call_id]

        return unroute

    async def call(call_id: str) -> list[Any]:
        return await session.handle_call(name, arguments, call_id=call_id)

    return await entry.execs.serve(entry.calls, exec_key(arguments), route, call)


def session_key(ctx: ServerRequestContext[SessionPool]) -> str:
    """Which MCP session a request belongs to: the one stdio client, or the HTTP
    transport's session id."""
    request = ctx.request
    if request is None:
        return _STDIO_KEY
    headers: Any = getattr(request, "headers", None)
    key = headers.get(SESSION_HEADER) if headers is not None else None
    if not isinstance(key, str) or not key:
        raise Refused(
            "code mode needs a stateful MCP session: connect with the initialize handshake "
            "over streamable HTTP (stateless requests keep no cells between calls)"
        )
    return key
