"""The texts of calls that reached no program: what happened, and what to do about it.

A ``wait`` on a cell that is not there, or an ``exec`` naming a session that is gone,
comes back as a failed result whose text the model reads (and a user may read in a
log). The runtime's own errors carry the reference's terse messages (``exec cell 3 not
found``: :mod:`code_mode._errors`, which tests and ports of the reference compare); the
texts here begin with that same phrase, so nothing that looks for it breaks, and go on
to say what may have happened and the one thing that helps: run the program again.
A model given only ``exec cell 3 not found`` tends to retry the same ``wait``.
"""

from __future__ import annotations

from .._errors import BusyObserver, CodeModeError, MissingCell
from .._types import CellId

__all__ = ["call_error_text", "missing_cell_text", "missing_session_text"]

_RUN_AGAIN = (
    "Check that the ID is the one from `Script running with cell ID <id>`; if you still "
    "need the program's result, run the program again with `exec`."
)


def _idle(seconds: float) -> str:
    return f"{seconds:g} s"


def missing_cell_text(
    cell_id: str, *, other_deployments: bool = False, expires_after: float | None = None
) -> str:
    """The text of a ``wait`` on cell ``cell_id`` that is not there.

    In one session (in-process, or an MCP connection) a cell is gone once its final
    result was returned (or pushed), and an ID of another session is unknown here.
    With handles in a store (stateless MCP) it may also belong to another server
    deployment (``other_deployments``), or have expired: ``expires_after`` is the
    seconds a cell's record lives without a call (``None``: it never expires)."""
    reasons = [
        "its program already ended and its final result was returned",
        "it belongs to another session or server deployment"
        if other_deployments
        else "it was started in another session",
    ]
    if expires_after is not None:
        reasons.append(f"it expired after {_idle(expires_after)} without a call")
    listed = ", ".join(reasons[:-1]) + ", or " + reasons[-1]
    return f"{MissingCell(CellId(cell_id))}: {listed}. {_RUN_AGAIN}"


def missing_session_text(given: str, *, expires_after: float | None = None) -> str:
    """The text of an ``exec`` whose ``session`` argument names no session: it expired
    after ``expires_after`` seconds without a call (``None``: sessions do not
    expire), belongs to another server deployment, or was never issued. Its stored
    values are gone with it, so the text says so before saying how to go on."""
    expiry = (
        f"expired after {_idle(expires_after)} without a call, "
        if expires_after is not None
        else ""
    )
    return (
        f"code mode session {given} not found: it {expiry}belongs to another server "
        "deployment, or was never issued, and the values it stored are not available "
        "here. Call `exec` again without `session` to start a new session, then pass "
        "the handle from its `Session:` line."
    )


def call_error_text(error: CodeModeError) -> str:
    """The text of an ``exec``/``wait`` that failed with ``error`` before reaching a
    program: :func:`missing_cell_text` for a missing cell; for a cell another call
    is waiting on, the message and what to do; other errors' own messages."""
    if isinstance(error, MissingCell) and error.cell_id is not None:
        return missing_cell_text(error.cell_id)
    if isinstance(error, BusyObserver):
        return (
            f"{error}: another `wait` or `exec` call is already waiting on this program. "
            "Wait for that call to return, then call `wait` again."
        )
    return str(error)
