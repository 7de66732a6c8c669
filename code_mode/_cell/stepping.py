"""Holding a cell at its pending frontier, for hosts that step programs (``StepToFrontier``).

The reference's cell actor runs its engine in a *pause-until-resumed* mode: at a pending
frontier observed with ``PendingFrontier`` the engine stops taking commands, so tool
results and timer firings that arrive meanwhile wait in its queue until the next
observation resumes it (openai/codex ``codex-rs/code-mode-runtime/src/runtime/mod.rs``,
``next_runtime_command``; ``cell_actor/mod.rs``). A host that replays or steps programs
deterministically (an evaluation harness) sees the program move only between its own
calls, each step ending at the next frontier.

:class:`FrontierHold` is that queue for a :class:`~.cell.Cell`: while the cell is held,
finished tool calls and due timers are kept here, in the order they came, and
:meth:`FrontierHold.release` hands them to the isolate, in that order, when the next
observation attaches. It also keeps the ids of the tool calls a program started since
its previous frontier, which a stepped ``Pending`` lists (the reference's rule; the
non-stepping ``PendingFrontier`` lists every call still outstanding instead).
"""

from __future__ import annotations

import enum
from typing import Protocol

__all__ = ["Frontier", "FrontierHold", "ResultSink"]


class Frontier(enum.Enum):
    """Where a program stands with respect to its pending frontier."""

    #: It runs, or was sent something since it was last at a frontier.
    MOVING = "moving"
    #: It reached a frontier before anyone observed it: the first observation that
    #: wants a ``Pending`` gets it at once.
    REACHED = "reached"
    #: It is held there until the next observation (``StepToFrontier``).
    HELD = "held"


class ResultSink(Protocol):
    """Where a finished tool call's outcome goes: the isolate, or a hold."""

    def send_tool_result(self, call_id: str, value_json: str) -> None: ...

    def send_tool_error(self, call_id: str, message: str) -> None: ...


class _Isolate(ResultSink, Protocol):
    def send_timer_fired(self, timer_id: int) -> None: ...


class FrontierHold:
    """Tool outcomes and timer firings held back while a cell waits at its frontier,
    and where the program stands with respect to that frontier."""

    def __init__(self) -> None:
        self.frontier = Frontier.MOVING
        self._queue: list[tuple[str, str, str] | int] = []  # outcomes, or a timer id
        self._started_ids: list[str] = []

    @property
    def held(self) -> bool:
        return self.frontier is Frontier.HELD

    def hold(self) -> None:
        """The program is at its frontier and stays there until :meth:`release`."""
        self.frontier = Frontier.HELD

    def reached(self) -> None:
        """The program reached a frontier nobody has observed yet."""
        if self.frontier is Frontier.MOVING:
            self.frontier = Frontier.REACHED

    def moved(self) -> None:
        """The program was sent something (or its frontier was handed over): it is no
        longer at the frontier it reached."""
        if self.frontier is Frontier.REACHED:
            self.frontier = Frontier.MOVING

    # ResultSink: where outcomes go while the cell is held.
    def send_tool_result(self, call_id: str, value_json: str) -> None:
        self._queue.append(("result", call_id, value_json))

    def send_tool_error(self, call_id: str, message: str) -> None:
        self._queue.append(("error", call_id, message))

    def hold_timer(self, timer_id: int) -> None:
        """A timer came due while the cell is held: it fires on release."""
        self._queue.append(timer_id)

    def tool_call_started(self, call_id: str) -> None:
        self._started_ids.append(call_id)

    def take_started_ids(self) -> list[str]:
        """The ids of the tool calls started since the last frontier, and forget them
        (a frontier passes whether or not anyone steps to it)."""
        ids, self._started_ids = self._started_ids, []
        return ids

    def release(self, isolate: _Isolate | None) -> bool:
        """Stop holding: send what was held to ``isolate`` (or drop it, when there is
        none any more), in order. Whether anything was sent."""
        self.frontier = Frontier.MOVING
        queue, self._queue = self._queue, []
        if isolate is None:
            return False
        for entry in queue:
            if isinstance(entry, int):
                isolate.send_timer_fired(entry)
            elif entry[0] == "result":
                isolate.send_tool_result(entry[1], entry[2])
            else:
                isolate.send_tool_error(entry[1], entry[2])
        return bool(queue)
