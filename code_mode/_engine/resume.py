"""Resuming a cell on another host from a copy of its journal, and keeping that copy durable.

A cell's journal (:mod:`.journal`) lets an isolate be rebuilt when its *worker* dies:
the host that recorded it is still there, with the cell's tool calls, timers and
output. When the *host* dies (a stateless MCP server, killed), another host must take
the cell over from a copy of the journal kept outside both: a :class:`JournalMirror`
(the server's store) receives every record as it is made, and :class:`Resumption`
is what a new host reads back from it. The new host replays the program from the
copied batches and, having no memory of what the dead host did, decides for each
event the replay reports what it meant (:class:`ResumePlan`):

* output the dead host had handed on (the first :attr:`Resumption.handed` items) is
  dropped; the rest, which died with the host's buffers, is handed on now;
* a tool call whose result is in the copied batches is dropped (the recorded result
  answers it); one the dead host had started without a recorded result was *in
  flight*: it runs again, at most once (a ``rerun`` record says it did, and a second
  death fails the cell instead), unless its tool is not idempotent
  (``ToolDefinition.idempotent``), when the cell fails with a clear message; a call
  the dead host never started is new;
* a timer whose firing is in the batches is dropped; any other is armed again.

For the copy to be trusted, nothing may happen that the copy does not show: a batch
reaches the isolate, and a tool call reaches its tool, only once every record before
it is durable (:class:`DurableGate`). A program's output is handed on by the server
only after the records it depends on (its clock readings) are durable too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Final

import trio

from .._resumption import JournalMirror, Resumption
from ._bridge import (
    EngineEvent,
    Notify,
    Output,
    Started,
    TimerCleared,
    TimerSet,
    ToolCallRequested,
    YieldRequested,
)

__all__ = ["DurableGate", "ResumePlan", "Verdict"]


class Verdict(Enum):
    """What a resumed host does with an event its replay reported."""

    DROP = "drop"  # the dead host acted on it; its effect survived it
    DELIVER = "deliver"  # act on it now (new, or its effect died with the dead host)
    RERUN = "rerun"  # a tool call that was in flight: run it again, once


_SILENT: Final = (YieldRequested, Started, Notify)


class ResumePlan:
    """Classifies the events of a resumed cell's replay (see the module).

    ``not_idempotent``: the identifiers of tools that must not run twice."""

    def __init__(self, resumption: Resumption, not_idempotent: frozenset[str]) -> None:
        self._resumption = resumption
        self._to_drop = resumption.handed
        self._not_idempotent = not_idempotent

    def classify(self, event: EngineEvent) -> Verdict | str:
        """The verdict on ``event``, or the text the cell fails with."""
        resumption = self._resumption
        if isinstance(event, Output):
            if self._to_drop > 0:
                self._to_drop -= 1
                return Verdict.DROP
            return Verdict.DELIVER
        if isinstance(event, ToolCallRequested):
            if event.id in resumption.answered:
                return Verdict.DROP
            if event.id not in resumption.started:
                return Verdict.DELIVER
            return self._in_flight(event)
        if isinstance(event, TimerSet | TimerCleared):
            return Verdict.DROP if event.id in resumption.fired else Verdict.DELIVER
        if isinstance(event, _SILENT):
            # A yield the server's pump does not need; a notification the dead host
            # delivered or not (nothing records which): neither is acted on twice.
            return Verdict.DROP
        return Verdict.DELIVER

    def _in_flight(self, event: ToolCallRequested) -> Verdict | str:
        tool = event.ident
        if event.id in self._resumption.reruns:
            return (
                f"exec cell could not be resumed: its call of tools.{tool} was in flight "
                "when two servers running it stopped, and a call runs again at most once"
            )
        if tool in self._not_idempotent:
            return (
                f"exec cell could not be resumed: its call of tools.{tool} was in flight "
                "when the server running it stopped, and that tool may not run twice "
                "(it is not idempotent)"
            )
        return Verdict.RERUN


class DurableGate:
    """Holds actions (posting a batch, starting a tool call) until every journal record
    made before them is durable in the mirror; runs them in order, then calls
    ``on_clear`` (what waited behind them may go). Its task lives in ``nursery`` and
    ends with :meth:`close`."""

    def __init__(
        self, mirror: JournalMirror, nursery: trio.Nursery, on_clear: Callable[[], None]
    ) -> None:
        self.mirror = mirror
        self._nursery = nursery
        self._on_clear = on_clear
        self._held: deque[Callable[[], None]] = deque()
        self._running = False
        self._closed = False
        self._scope: trio.CancelScope | None = None  # the drain's, while it runs

    @property
    def holding(self) -> bool:
        """Whether an action waits (the isolate is not idle meanwhile)."""
        return bool(self._held) or self._running

    def after_durable(self, action: Callable[[], None]) -> None:
        """Run ``action`` now if nothing is waiting to be made durable, else once it is."""
        if not self._held and not self._running and not self.mirror.behind:
            action()
            return
        self._held.append(action)
        if not self._running and not self._closed:
            self._running = True
            self._nursery.start_soon(self._drain, name="code_mode journal gate")

    @trio.lowlevel.enable_ki_protection
    async def _drain(self) -> None:
        self._scope = trio.CancelScope()
        try:
            with self._scope:
                # What the actions hold back in turn joins ``_held`` (this task still
                # runs), so it goes in the next round, in order.
                while self._held:
                    actions = list(self._held)
                    self._held.clear()
                    await self.mirror.caught_up()
                    for action in actions:
                        action()
        finally:
            self._running = False
        if not self._closed:
            self._on_clear()

    def close(self) -> None:
        """Drop what waits (the cell ended) and end the task."""
        self._closed = True
        self._held.clear()
        if self._scope is not None:
            self._scope.cancel()
