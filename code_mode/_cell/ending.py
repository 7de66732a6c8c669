"""The cell task, and how a cell ends: completion delivered, claimed or pushed, or termination.

This is the second half of :class:`~.cell.Cell`, kept apart from the first (start,
observation, engine events, deadlines: :mod:`.cell`, all synchronous on the trio
thread) because it is the one that moves the cell's phase towards its end
(:mod:`.state`) and hands over final events. The cell task (:meth:`CellEnding.run`)
sleeps until the next deadline or until it is woken, and runs the end once the
program finished, failed, or someone terminates it:

* completion: stop or terminate the isolate, let notifications finish, cancel tool
  calls, commit the stored writes atomically with the move to ``COMPLETED``, then
  deliver the completion to the attached observer, keep it buffered, or push it;
* termination: interrupt the program, cancel every callback, hand out ``Terminated``;
* teardown, shielded, whatever ended the cell task.

Pushing (``CellHost.on_finished``): a completion that nobody observes of a cell that
was *handed back* (an observer received a ``Yielded`` or ``Pending`` of it, so its
caller was told the program is still running) is pushed instead of buffered. The
decision is taken synchronously, on the trio thread, at the moment the completion is
settled with no observer attached, and the cell moves to ``PUSHING``. So exactly one of
the two gets it, the observer attached at that moment or the push, and an observation
or termination that comes later finds the cell gone (``MissingCell``). The cell task
delivers the push after releasing its isolate and before its close path, so
``cell_closed`` follows the push.
"""

from __future__ import annotations

import math

import trio

from .._config import RuntimeConfig
from .._engine import Finished, Isolate
from .._types import CellEvent, CellId, Completed, Pending, Terminated, YieldAfter, Yielded
from .host import CellDelegate, CellHost, push_result, truncate_error
from .in_flight import CellCallbacks
from .one_shot import Observer, OneShot
from .output import OutputBuffer
from .start import CellStart
from .state import CellState, Failure, Phase, Seen

__all__ = ["CellEnding"]


class CellEnding:
    """The end of a cell's life (see the module's docstring); :class:`~.cell.Cell`
    builds the state it reads and runs the rest."""

    id: CellId
    delegate: CellDelegate
    _host: CellHost
    _config: RuntimeConfig
    _state: CellState
    _isolate: Isolate | None
    _output: OutputBuffer
    _observer: Observer | None
    _seen: Seen
    _terminators: list[OneShot[CellEvent]]
    _completion: Completed | None
    _timers: dict[int, float]
    _callbacks: CellCallbacks
    _known: trio.Event
    _wake: trio.Event

    _start: CellStart
    _run_deadline: float

    def _on_deadlines(self) -> None:
        raise NotImplementedError  # pragma: no cover - the cell's

    def _yield_or_hold(self, observer: Observer) -> None:
        raise NotImplementedError  # pragma: no cover - the cell's

    # ------------------------------------------------------------------------------
    # Delivery (synchronous, trio thread)

    def _resolve(self, event: CellEvent) -> None:
        observer, self._observer = self._observer, None
        assert observer is not None
        observer.deliver(event)
        if isinstance(event, Yielded | Pending):
            self._seen = Seen.HANDED_BACK
        self._wake.set()

    def _settle_completion(self) -> None:
        """Commit the stored writes atomically with the move to ``COMPLETED``, then
        deliver the completion, or keep it buffered until someone observes or claims
        it, or push it (synchronous: the cell also settles a ``Finished`` with nothing
        left to wait for in the report that says so)."""
        end = self._state.end
        if isinstance(end, Failure):
            error_text: str | None = end.message
        else:
            assert isinstance(end, Finished)
            error_text = end.error_text
            storage_error = self._host.commit_writes(end.writes, end.members)
            if storage_error is not None:
                error_text = storage_error
        if error_text is not None:
            error_text = truncate_error(error_text, self._config.max_error_text_bytes)
        self._completion = Completed(self._output.take(), error_text)
        self._state.move(Phase.COMPLETED)
        if self._observer is not None:
            self._deliver_completion(self._observer)
        else:
            self._push_if_handed_back()

    def _deliver_completion(self, observer: Observer) -> None:
        assert self._completion is not None
        if isinstance(observer.mode, YieldAfter):
            items = self._output.take_initial_yield()
            if items is not None:
                self._resolve(Yielded(items))
                self._push_if_handed_back()
                return
        event = self._output.completed(self._completion)
        self._state.move(Phase.CLOSED)
        self._resolve(event)

    def _claim_completion(self) -> Completed:
        """A termination claims the buffered completion instead (natural completion
        wins)."""
        assert self._completion is not None
        self._state.move(Phase.CLAIMED)
        self._wake.set()
        return self._output.completed(self._completion)

    def _push_if_handed_back(self) -> None:
        """A buffered completion with no observer attached: push it instead, if this
        session pushes and the cell's caller was told it is still running."""
        if (
            self._host.on_finished is not None
            and self._seen is Seen.HANDED_BACK
            and self._state.phase is Phase.COMPLETED
            and self._observer is None
        ):
            assert self._completion is not None
            self._completion = self._output.completed(self._completion)
            self._state.move(Phase.PUSHING)
            self._wake.set()

    def _finish_termination(self) -> None:
        event = Terminated(self._output.take_all())
        if self._observer is not None:
            self._resolve(event)
        for waiter in self._terminators:
            if not waiter.abandoned and not waiter.delivered:
                waiter.deliver(event)
        self._terminators.clear()
        self._state.move(Phase.CLOSED)

    # ------------------------------------------------------------------------------
    # The cell task

    async def run(self, stored_json: str) -> None:
        """The cell's life, as a task of the session nursery: start the program with
        ``stored_json`` (the session's values when it was admitted), run it, release
        its isolate, push its end if that is where it goes, close."""
        if not await self._start.run(stored_json):
            self._host.forget_cell(self.id)
            return
        try:
            await self._lifecycle()
        finally:
            with trio.CancelScope(shield=True):
                await self._teardown()
            await self._push_and_close()

    async def _lifecycle(self) -> None:
        if self._start.error is not None:
            self._state.record_end(Finished(self._start.error, {}))
        while True:
            if self._state.terminating:
                await self._terminate()
                return
            if not self._state.program_live:
                break
            await self._sleep_until_next_deadline()
            self._on_deadlines()
        await self._complete()

    async def _sleep_until_next_deadline(self) -> None:
        deadline = min(self._timers.values(), default=math.inf)
        if self._state.program_live:
            deadline = min(deadline, self._run_deadline)
        if self._observer is not None:
            deadline = min(deadline, self._observer.deadline)
        if self._wake.is_set():
            self._wake = trio.Event()
            await trio.lowlevel.checkpoint()
            return
        with trio.move_on_at(deadline):
            await self._wake.wait()
        self._wake = trio.Event()

    # ------------------------------------------------------------------------------
    # The cell task's end

    async def _complete(self) -> None:
        """The program finished (or broke a limit): drain, commit, deliver; then wait
        while the completion is buffered."""
        if self._state.phase is Phase.ENDING:
            await self._finish_program()
        while self._state.phase is Phase.COMPLETED:
            await self._sleep_until_next_deadline()

    async def _finish_program(self) -> None:
        self._timers.clear()
        if self._isolate is not None:
            if isinstance(self._state.end, Failure):
                await self._isolate.terminate()
            else:
                self._isolate.stop()
        # 1. In-flight notifications finish (they are not cancelled), unless someone
        #    terminates the cell meanwhile; then tool calls are cancelled.
        if self._callbacks.overflowed:
            await self._callbacks.cancel(notifications=True)
        #    The observer's yield time still counts meanwhile: a slow delegate holds
        #    the completion back, not the caller (who gets a ``Yielded``, and the
        #    completion later, from ``wait`` or as a push).
        while self._callbacks.notifying and self._state.phase is Phase.ENDING:
            await self._sleep_until_next_deadline()
            observer = self._observer
            if observer is not None and observer.deadline <= trio.current_time():
                self._yield_or_hold(observer)
        if self._state.terminating:
            await self._terminate()
            return
        await self._callbacks.cancel(notifications=False)
        if self._state.terminating:
            await self._terminate()
            return
        self._settle_completion()

    async def _terminate(self) -> None:
        """Interrupt the program, cancel callbacks, hand out ``Terminated``."""
        self._timers.clear()
        if self._isolate is not None:
            await self._isolate.terminate()
        await self._callbacks.cancel(notifications=True)
        self._finish_termination()
        # Let whoever waits for ``Terminated`` run before the teardown starts closing
        # the isolate: closing wakes a disposal thread (thread mode) and a refill of the
        # warm pool, which would otherwise compete with it for the GIL and both cores
        # (0.3 ms of B4). Two scheduler passes: trio runs a batch of runnable tasks in
        # random order, and the waiter, rescheduled by the delivery, is in the first.
        await trio.lowlevel.cancel_shielded_checkpoint()
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def _teardown(self) -> None:
        """Runs shielded, whatever ended the task (including a session cancelled by
        an exception): nothing of the cell survives it (its close path follows)."""
        if self._state.program_ending or self._state.terminating:
            if self._isolate is not None:
                await self._isolate.terminate()
            await self._callbacks.cancel(notifications=True)
            self._finish_termination()
        self._callbacks.close()  # (a cell that completed at once never cancelled them)
        if self._state.phase is Phase.COMPLETED:
            self._state.move(Phase.CLOSED)
        if self._isolate is not None:
            await self._isolate.close()

    async def _push_and_close(self) -> None:
        """After the teardown: deliver the push, if the completion goes there, then
        run the session's close path for the cell."""
        try:
            if self._state.phase is Phase.PUSHING:
                # Never before ``execute`` returned the id (it always does for a
                # cell that started), so the host knows what the push is about.
                await self._known.wait()
                assert self._completion is not None
                await push_result(self._host, self.id, self._completion)
        finally:
            if self._state.phase is Phase.PUSHING:
                self._state.move(Phase.CLOSED)
            with trio.CancelScope(shield=True):
                await self._host.close_cell(self.id)
            self.delegate.release()
