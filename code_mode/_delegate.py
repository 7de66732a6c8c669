"""The host application's side of a session: `SessionRuntimeDelegate`, the
`ExecuteRequest` that may carry one per cell, and how the runtime renders what a
delegate raises."""

from __future__ import annotations

from typing import Protocol

import attrs

from ._resumption import JournalMirror, Resumption
from ._types import JSON, CellId, NestedToolCall, ToolDefinition


class SessionRuntimeDelegate(Protocol):
    """What a session calls back into.

    Cancellation is trio cancellation: when a cell ends or the session shuts down, the
    runtime cancels the scope a callback runs in. A delegate that must clean up does
    so in ``except trio.Cancelled:`` or ``finally:`` and re-raises.
    """

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        """Run one nested tool call. The return value (JSON data) resolves the
        program's promise; raising any ``Exception`` rejects it with a plain
        string, ``str(exception)`` (not an ``Error``: ``catch (e)`` gets the text itself,
        as the reference's runtime gives it)."""
        ...

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        """Deliver a ``notify(text)`` of the program, now, as a side channel of the
        ``exec`` call ``call_id``. Failures are logged and never reach the program."""
        ...

    async def cell_closed(self, cell_id: CellId) -> None:
        """Called exactly once per admitted cell, after its outcome is settled and all
        its callbacks have finished. Must not return until the host can no longer
        route anything to the cell. Errors are logged; the cell is removed anyway."""
        ...


@attrs.frozen
class ExecuteRequest:
    """What ``SessionRuntime.execute`` runs: a program, the tools it may call, and the id
    of the model's ``exec`` call (passed back to ``notify``).

    ``delegate``: the :class:`~code_mode.SessionRuntimeDelegate` this cell calls back
    into (its tool calls, notifications and ``cell_closed``), kept by the cell until
    it is closed, whatever later cells use; ``None`` for the session's. The runtime
    holds no reference to it once the cell is closed. Not compared: two requests
    that differ only in their delegate are equal.

    ``journal_mirror``: where the cell's journal is copied as it grows, so that another
    host can resume the cell if this one dies (a stateless MCP server sets it; see
    :mod:`code_mode._resumption`). ``resume``: run no new program but take over one
    another host ran, from such a copy (``source`` and ``enabled_tools`` must be the
    ones it ran with). Neither is compared."""

    tool_call_id: str
    enabled_tools: list[ToolDefinition]
    source: str
    delegate: SessionRuntimeDelegate | None = attrs.field(
        default=None, eq=False, repr=False, kw_only=True
    )
    journal_mirror: JournalMirror | None = attrs.field(
        default=None, eq=False, repr=False, kw_only=True
    )
    resume: Resumption | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)


def describe_exception(error: BaseException) -> str:
    """``str(error)``, or the exception's type name when that is empty or itself fails:
    a delegate's exception is foreign code, and rendering it must not escape the cell
    (an ``__str__`` that raises would end the whole session nursery)."""
    try:
        text = str(error)
    except Exception:
        text = ""
    return text or type(error).__name__
