"""What a server says when it refuses, or ends, a client's work: each text names the
limit or the event, and what the client should do next (usually: start a new session,
which a load balancer sends to another server).

The texts of sessions that are gone begin ``Session not found``, as the SDK's own
answer for an unknown session does, so that clients that look for it still do.
"""

from __future__ import annotations

__all__ = [
    "DRAINED",
    "DRAINING",
    "NO_NEW_PROGRAMS",
    "deadline_text",
    "full_text",
    "idle_text",
    "terminated_text",
]

DRAINING = (
    "this server is shutting down and takes no new sessions: connect again (a load "
    "balancer sends the new session to another server)"
)
DRAINED = (
    "Session not found: this server is shutting down, and closed the session once its "
    "programs had finished. Start a new session (a load balancer sends it to another "
    "server)."
)
NO_NEW_PROGRAMS = (
    "this server is shutting down: no new program starts here. Wait on the programs "
    "still running, then start a new session to continue (a load balancer sends it to "
    "another server)."
)


def full_text(max_sessions: int) -> str:
    return (
        f"code mode serves at most {max_sessions} sessions at once on this server "
        "(ServerLimits.max_sessions); try again when one has ended (a load balancer "
        "tries another server)"
    )


def idle_text(timeout: float | None) -> str:
    return (
        f"Session not found: it was closed after {timeout:g} s without a request "
        "(ServerLimits.session_idle_timeout); its programs were terminated and its stored "
        "values dropped. Start a new session."
    )


def deadline_text(deadline: float) -> str:
    return (
        f"Session not found: this server is shutting down; its drain deadline of "
        f"{deadline:g} s (ServerLimits.drain_deadline) passed and the programs still "
        "running were terminated. Start a new session."
    )


def terminated_text(deadline: float) -> str:
    return (
        f"This server is shutting down: its drain deadline of {deadline:g} s "
        "(ServerLimits.drain_deadline) passed, so the program was terminated. Start a new "
        "session to continue (a load balancer sends it to another server)."
    )


class _Refused(Exception):
    """A call the server cannot serve; the message goes back as a failed result."""
