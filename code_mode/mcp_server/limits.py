"""`ServerLimits`: what one MCP server process takes on, in one frozen object.

A server is one process among several behind a load balancer (``docs/deploy.md``), so
each limit protects that process under load, and each refusal says which limit it
was, so that a client, or the balancer, can go elsewhere.
"""

from __future__ import annotations

import math
from typing import Any, Final

import attrs

DEFAULT_MAX_SESSIONS: Final = 64
"""Code mode sessions served at once (default 64): each one owns V8 isolates (and, in
the default process isolation, worker processes), so this is far below the SDK's own
limit on open HTTP sessions."""

DEFAULT_SESSION_IDLE_TIMEOUT: Final = 30 * 60.0
"""Seconds a session may go without a request before it is closed with its cells
(default 30 minutes, the SDK's)."""

DEFAULT_MAX_REQUEST_BODY_BYTES: Final = 4 * 1024 * 1024
"""Bytes of one HTTP request's body (default 4 MiB, the SDK's): room for a program of
``RuntimeConfig.max_source_bytes`` (1 MiB) however JSON escapes it."""

DEFAULT_DRAIN_DEADLINE: Final = 60.0
"""Seconds a stopping server (SIGTERM) lets running programs finish (default 60)."""

DEFAULT_HANDOVER_GRACE: Final = 10.0
"""Seconds a draining server lets a stateless cell's tool calls in flight finish before
it hands the cell over to another server (default 10)."""

DEFAULT_EXEC_RETRY_WINDOW: Final = 120.0
"""Seconds an abandoned ``exec`` waits for its client's retry (default 120)."""


def _positive_int(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"ServerLimits.{attribute.name} must be a positive integer, got {value!r}")


def _positive_seconds(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.name == "session_idle_timeout":
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(
            f"ServerLimits.{attribute.name} must be a positive number of seconds, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class ServerLimits:
    """Limits of one :class:`~code_mode.mcp_server.CodeModeMcpServer` process.

    ``RuntimeConfig`` bounds what one program may do; these bound how much work the
    server takes on at once, and how it stops. Over stdio only ``session_idle_timeout``
    (never, for the one session) and ``drain_deadline`` apply.
    """

    max_sessions: int = attrs.field(default=DEFAULT_MAX_SESSIONS, validator=_positive_int)
    """Code mode sessions open at once (default 64). While that many are open, the
    readiness check (``/readyz``) fails, a request opening an MCP session is answered
    503 (``code mode serves at most <N> sessions at once on this server``; a balancer
    retries it on another server), and the first ``exec``/``wait`` of an MCP session
    opened meanwhile fails with that message. A session counts from its first
    ``exec``/``wait`` until it ends."""

    session_idle_timeout: float | None = attrs.field(
        default=DEFAULT_SESSION_IDLE_TIMEOUT, validator=_positive_seconds
    )
    """Seconds a session may go without a request (an ``exec``/``wait`` in progress
    counts as one) before it is closed: its running programs are terminated, its stored
    values dropped (default 1800, 30 minutes; ``None``: never). A later request of the
    session is answered 404 (``Session not found: closed after <N> s without a
    request ...``), MCP's answer that makes a client start a new session."""

    max_request_body_bytes: int = attrs.field(
        default=DEFAULT_MAX_REQUEST_BODY_BYTES, validator=_positive_int
    )
    """Bytes of one HTTP request's body (default 4 MiB). A larger request is answered
    413 (``request body over this server's limit of <N> bytes
    (ServerLimits.max_request_body_bytes)``) before any of it is parsed."""

    drain_deadline: float = attrs.field(default=DEFAULT_DRAIN_DEADLINE, validator=_positive_seconds)
    """Seconds a draining server (:meth:`~code_mode.mcp_server.CodeModeMcpServer.drain`,
    on SIGTERM from the command line) waits for its sessions' programs to finish and
    their results to be received (default 60). Past it the programs still running are
    terminated: a call waiting on one gets ``Script terminated`` and a text saying the
    server stopped. A supervisor's grace period (Kubernetes'
    ``terminationGracePeriodSeconds``) must be longer."""

    handover_grace: float = attrs.field(default=DEFAULT_HANDOVER_GRACE, validator=_positive_seconds)
    """Seconds a draining server with a shared store (``--store redis://...``) gives a
    stateless client's running program to finish its tool calls in flight before it
    stops the program and hands it to another server, which resumes it (default 10).
    No new call starts meanwhile (the server resuming the program starts it). A call
    still running at the end is cancelled and runs again on the server that resumes
    the program: once, and only for an idempotent tool; a program whose
    non-idempotent call was cancelled so fails there, saying why. Counted within
    ``drain_deadline``."""

    exec_retry_window: float = attrs.field(
        default=DEFAULT_EXEC_RETRY_WINDOW, validator=_positive_seconds
    )
    """Seconds after its client abandoned an ``exec`` (a client timeout: it sends
    ``notifications/cancelled``) during which an ``exec`` of the same session with the
    same arguments is taken for its retry and answered from the cell the first one
    started, rather than running the program again (default 120; see
    :mod:`~code_mode.mcp_server.client_timeouts`). Past it, an undelivered result is
    dropped; the program, if still running, goes on, and a ``wait`` reaches it."""
