"""A one-shot slot a cell delivers one outcome into, and one task waits on.

Why not a ``trio.Event`` plus a field? Because of the window between a cancellation
and the cancelled task running again: a cell could hand output to a waiter that has
already been cancelled, and that output would be lost. ``wait_task_rescheduled`` lets
the waiter's *abort* run synchronously, at the moment trio decides to cancel it, so the
cell learns "this observer is gone" before it can deliver anything to it. Once an
outcome is delivered it is final: the waiting task will receive it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Generic, TypeVar

import outcome
import trio

from .._types import CellEvent, ObserveMode

T = TypeVar("T")


class OneShot(Generic[T]):
    """Delivers exactly one value or error to at most one waiting task."""

    def __init__(self, on_abandon: Callable[[OneShot[T]], None] | None = None) -> None:
        self._on_abandon = on_abandon
        self._result: outcome.Outcome[T] | None = None
        self._task: trio.lowlevel.Task | None = None
        self.abandoned = False

    @property
    def delivered(self) -> bool:
        return self._result is not None

    def deliver(self, value: T) -> None:
        self._settle(outcome.Value(value))

    def fail(self, error: BaseException) -> None:
        self._settle(outcome.Error(error))

    def _settle(self, result: outcome.Outcome[T]) -> None:
        if self._result is not None or self.abandoned:
            raise RuntimeError("OneShot settled twice")  # pragma: no cover - cell bug
        self._result = result
        if self._task is not None:
            task, self._task = self._task, None
            trio.lowlevel.reschedule(task, result)

    def _abandon(self) -> None:
        if self._result is None and not self.abandoned:
            self.abandoned = True
            if self._on_abandon is not None:
                self._on_abandon(self)

    async def wait(self) -> T:
        """Wait for the outcome. If cancelled first, the slot is abandoned (the cell
        is told synchronously) and nothing is consumed."""
        if self._result is not None:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return self._result.unwrap()
        if self._task is not None:
            raise RuntimeError("OneShot already has a waiting task")
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
        except trio.Cancelled:
            self._abandon()
            raise
        if self._result is not None:  # pragma: no cover - delivered during the checkpoint
            return self._result.unwrap()
        self._task = trio.lowlevel.current_task()

        def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            self._task = None
            self._abandon()
            return trio.lowlevel.Abort.SUCCEEDED

        value: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return value


class Observer(OneShot[CellEvent]):
    """An attached observation: its mode and, for ``YieldAfter``, its deadline.

    With an idle floor (``YieldAfter.idle_floor``), ``floor_deadline`` is when the
    observation gives up holding for output; ``holding`` says it is doing so now (its
    yield time passed with nothing new to hand over)."""

    def __init__(self, mode: ObserveMode, on_abandon: Callable[[OneShot[CellEvent]], None]):
        super().__init__(on_abandon)
        self.mode = mode
        self.deadline = math.inf
        self.floor_deadline = -math.inf
        self.holding = False
        self.initial = False
