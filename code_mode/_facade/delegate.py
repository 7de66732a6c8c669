"""The façade's side of a session runtime: routing nested calls, ``notify``, approvals.

Approval before a tool runs (as Cloudflare's codemode offers: tools that require
approval, paused runs that resume): a call of a tool marked ``@tool(requires_approval=
True)`` does not start until the host approves it. Meanwhile the ``exec``/``wait``
observing the program returns at once with ``Script running with cell ID <id>`` and a
line naming the call (:func:`approval_line`), so the model's turn can end while a human
decides; the program itself waits at that call (other calls it made run on).
``approve`` lets the call run; ``deny`` rejects it in the program with the reason, a
plain string, as a failed tool's error is. The program's end reaches the host as any
program's does (a later ``wait``, or the push).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable

import attrs
import trio

from .._tool_names import normalize_identifier
from .._types import JSON, CellId, NestedToolCall, ToolName
from ..integrations.host_loop import on_host
from ..integrations.routing import NestedTool, ToolRouter

__all__ = ["Approval", "FacadeDelegate", "Notification", "NotifyCallback", "approval_line"]


@attrs.frozen
class Notification:
    """A program's ``notify(text)``: ``call_id`` is the ``exec`` call the program was
    started by (pass it to ``exec``/``handle_call`` to correlate), ``cell_id`` the
    program's cell."""

    call_id: str
    cell_id: CellId
    text: str


NotifyCallback = Callable[[Notification], Awaitable[None] | None]
"""``on_notify``: a plain or an async function of a :class:`Notification`."""


@attrs.frozen
class Approval:
    """A nested call waiting for the host's decision: ``call_id`` is the runtime's id
    of the call (``tool-1``...), ``tool`` the identifier the program called
    (``tools.<tool>``), ``input`` its JSON input."""

    cell_id: CellId
    call_id: str
    tool: str
    input: JSON


def approval_line(approval: Approval) -> str:
    """The line a ``Script running`` result gives for a call awaiting approval."""
    return (
        f"Tool call {approval.call_id} (`tools.{approval.tool}`) is awaiting approval: "
        "the program waits at that call until the user approves or denies it."
    )


class ApprovalDenied(Exception):
    """The host denied a call; its text is what the program's promise rejects with."""


@attrs.define
class _Waiting:
    approval: Approval
    decided: trio.Event = attrs.Factory(trio.Event)
    denial: str | None = None


class FacadeDelegate:
    """The runtime's delegate: routes nested calls (holding those that need approval)
    and hands notifications to ``on_notify``."""

    def __init__(
        self,
        tools: Iterable[NestedTool],
        on_notify: NotifyCallback | None,
        *,
        preempt: Callable[[CellId], Awaitable[bool]],
    ) -> None:
        listed = list(tools)
        self._route = ToolRouter(listed).invoke_tool
        self._on_notify = on_notify
        self._preempt = preempt
        self._identifiers = {
            nested.definition.tool_name: normalize_identifier(nested.definition.name)
            for nested in listed
        }
        self._needs_approval: frozenset[ToolName] = frozenset(
            nested.definition.tool_name
            for nested in listed
            if getattr(nested, "requires_approval", False) is True
        )
        self._waiting: dict[tuple[CellId, str], _Waiting] = {}

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        if call.tool_name in self._needs_approval:
            await self._approval(call)
        return await self._route(call)

    async def _approval(self, call: NestedToolCall) -> None:
        """Wait for the host's decision on ``call``; raises :class:`ApprovalDenied`."""
        key = (call.cell_id, call.runtime_tool_call_id)
        identifier = self._identifiers[call.tool_name]
        waiting = _Waiting(
            Approval(call.cell_id, call.runtime_tool_call_id, identifier, call.input)
        )
        self._waiting[key] = waiting
        try:
            # The observation in progress returns now, naming this call.
            await self._preempt(call.cell_id)
            await waiting.decided.wait()
        finally:
            self._waiting.pop(key, None)
        if waiting.denial is not None:
            raise ApprovalDenied(waiting.denial)

    def awaiting(self, cell_id: CellId) -> list[Approval]:
        """The calls of ``cell_id`` awaiting approval, oldest first."""
        return [w.approval for (cell, _), w in self._waiting.items() if cell == cell_id]

    def decide(self, cell_id: CellId, call_id: str, denial: str | None) -> bool:
        """Approve (``denial`` None) or deny a waiting call; False if none waits."""
        waiting = self._waiting.pop((cell_id, call_id), None)
        if waiting is None:
            return False
        waiting.denial = denial
        waiting.decided.set()
        return True

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        if self._on_notify is None:
            return
        outcome = self._on_notify(Notification(call_id, cell_id, text))
        if inspect.isawaitable(outcome):
            await on_host(outcome)  # under asyncio: on the asyncio loop

    async def cell_closed(self, cell_id: CellId) -> None:
        return None
