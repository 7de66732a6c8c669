"""The cell: one program's state machine (``docs/runtime.md``).

A cell owns an output buffer, at most one observer, a yield timer, the program's
timers, its in-flight callbacks (tool calls and notifications, each a task of the
session nursery: :class:`~.in_flight.CellCallbacks`) and its isolate, which its start
(:class:`~.start.CellStart`) obtains. Its life is one task in the session
nursery (:meth:`Cell.run`), with its own cancel scope.

Everything the isolate reports arrives through the :class:`EngineListener` methods,
synchronously on the trio thread, and is applied at once: output goes to the buffer,
tool calls are started, a yield resolves the observer. The cell task itself only
sleeps until the next deadline (the observer's yield timer or a program timer) or
until something asks it to move on: the program finished, someone wants it
terminated, or its completion was delivered.

Phases::

    RUNNING ──(program done, callbacks drained, writes committed)──▶ COMPLETED
       │                                                             │   │
       │ terminate()                                   delivered     │   │ terminate()
       ▼                                               to observer   ▼   ▼
    TERMINATING ──────────────────────────────────────────────▶ CLOSED ◀── CLAIMED

A completion that nobody observes yet stays *buffered* in ``COMPLETED``; the next
observation receives it, and ``terminate()`` *claims* it instead of terminating
(natural completion wins).

With a session that pushes (``CellHost.on_finished``), a completion that nobody
observes of a cell that was *handed back* (an observer received a ``Yielded`` or
``Pending`` of it, so its caller was told the program is still running) is pushed
instead of buffered: the decision is taken synchronously, on the trio thread, at the
moment the completion is settled with no observer attached, and the cell goes straight
to ``CLOSED``. So exactly one of the two gets it, the observer attached at that moment
or the push, and an observation or termination that comes later finds the cell gone
(``MissingCell``). The cell task delivers the push after releasing its isolate and
before its close path, so ``cell_closed`` follows the push.
"""

from __future__ import annotations

import math

import trio

from .._engine import (
    BufferMemoryExceeded,
    EngineEvent,
    Finished,
    HeapMemoryExceeded,
    Isolate,
    Notify,
    Output,
    Started,
    TimerCleared,
    TimerSet,
    ToolCallRequested,
    YieldRequested,
)
from .._errors import AlreadyTerminating, BusyObserver, MissingCell
from .._types import (
    CellEvent,
    CellId,
    Completed,
    ExecuteRequest,
    ObserveMode,
    OutputItem,
    Pending,
    PendingFrontier,
    StepToFrontier,
    Terminated,
    YieldAfter,
    Yielded,
)
from .host import ERROR_TRUNCATED_SUFFIX, CellHost, Phase, push_result, truncate_error
from .in_flight import CellCallbacks
from .one_shot import Observer, OneShot
from .start import CellStart
from .stepping import FrontierHold, ResultSink

__all__ = ["ERROR_TRUNCATED_SUFFIX", "Cell", "CellHost", "Phase"]


class Cell:
    """One program and everything it is waiting on."""

    def __init__(self, cell_id: CellId, request: ExecuteRequest, host: CellHost) -> None:
        self.id = cell_id
        self._request = request
        self._host = host
        self._config = host.config
        self._phase = Phase.RUNNING
        self._phase_changed = trio.Event()
        self._isolate: Isolate | None = None
        self._start = CellStart(
            cell_id,
            request,
            backend=host.backend,
            config=host.config,
            listener=self,
            on_started=self._on_started,
            nursery=host.nursery,
        )

        self._buffer: list[OutputItem] = []
        self._buffer_bytes = 0
        self._initial_yield: list[OutputItem] | None = None
        self._has_been_observed = False
        self._observer: Observer | None = None
        self._terminators: list[OneShot[CellEvent]] = []
        self._frontier_ready = False
        self._hold = FrontierHold()  # StepToFrontier: see stepping.py
        self._started = False

        self._finished: Finished | None = None
        self._failure: str | None = None
        self._accept_output = True
        self._terminate_requested = False
        self._completion: Completed | None = None
        self._handed_back = False  # an observer got a Yielded or Pending of this cell
        self._push: Completed | None = None  # the completion to push, once decided
        self._known = trio.Event()  # ``execute`` has returned this cell's id

        self._timers: dict[int, float] = {}
        self._run_deadline = math.inf  # RuntimeConfig.max_cell_seconds, from the start
        self._callbacks = CellCallbacks(
            cell_id=cell_id,
            call_id=request.tool_call_id,
            nursery=host.nursery,
            delegate=host.delegate,
            config=host.config,
            results_to=self._tool_results_to,
            wake_cell=self._wake_up,
        )
        self._wake = trio.Event()

    @property
    def phase(self) -> Phase:
        return self._phase

    @phase.setter
    def phase(self, phase: Phase) -> None:
        if phase is not self._phase:
            self._phase = phase
            self._phase_changed.set()
            self._phase_changed = trio.Event()

    @property
    def result_pending(self) -> bool:
        """Whether the program's final result has yet to reach anyone: it runs, it is
        being terminated, or it finished and nobody has observed that yet."""
        return self._phase in (Phase.RUNNING, Phase.TERMINATING, Phase.COMPLETED)

    async def wait_for_phase(self, phase: Phase) -> None:
        """Wait until the cell is in ``phase`` (a seam for tests and tools)."""
        while self._phase is not phase:
            await self._phase_changed.wait()

    # ------------------------------------------------------------------------------
    # Start-up: admitted under the session's registry lock, started in the cell task

    def admit(self, initial_mode: ObserveMode) -> Observer:
        """Attach the initial observer, before the program can produce anything, so
        no early event is missed (under the registry lock; then start :meth:`run`)."""
        observer = self._attach(initial_mode)
        observer.initial = True
        return observer

    async def wait_started(self) -> None:
        """Wait until :meth:`run` (or :meth:`start_now`) started the program. Raises
        ``RuntimeFailure`` when V8 cannot start an isolate. Cancellable: a caller that
        gives up (a hung worker process) abandons the cell, which then closes whatever
        it got without ever counting as admitted."""
        await self._start.wait()

    def start_now(self, stored_json: str) -> bool:
        """Start the program at once, synchronously, when the engine has a warm
        isolate ready (see :class:`~._cell_start.CellStart`); False when the cell task
        must do it."""
        return self._start.now(stored_json)

    def mark_known(self) -> None:
        """``execute`` is returning this cell's id: from now on its caller can expect
        a push for it (one is never delivered before)."""
        self._known.set()

    def _on_started(self, isolate: Isolate) -> None:
        """The start command is on its way to an isolate that is created and idle, so
        the program starts now (give or take a thread wake-up): a yield window counts
        from here, not from ``execute`` (which may have waited for the isolate). The
        isolate's own ``started`` message travels with its first batch of output and
        only confirms the order of the message stream."""
        self._isolate = isolate
        self._started = True
        self._run_deadline = trio.current_time() + self._config.max_cell_seconds
        observer = self._observer
        if observer is not None and isinstance(observer.mode, YieldAfter):
            self._arm(observer)

    # ------------------------------------------------------------------------------
    # Observation and termination (called by the session, synchronously)

    def begin_observe(self, mode: ObserveMode) -> Observer:
        if self.phase in (Phase.TERMINATING, Phase.CLAIMED, Phase.CLOSED):
            raise MissingCell(self.id)
        if self._observer is not None:
            raise BusyObserver(self.id)
        return self._attach(mode)

    def _attach(self, mode: ObserveMode) -> Observer:
        observer = Observer(mode, self._on_abandon)
        self._observer = observer
        self._has_been_observed = True
        if self.phase is Phase.COMPLETED:
            self._deliver_completion(observer)
            return observer
        resumed = self._resume()
        if isinstance(mode, YieldAfter):
            if self._initial_yield is not None:
                items, self._initial_yield = self._initial_yield, None
                self._resolve(Yielded(items))
            elif self._started:
                self._arm(observer)
        elif (
            self._started
            and not resumed
            and (self._frontier_ready or (self._isolate is not None and self._isolate.idle))
        ):
            self._deliver_frontier()
        return observer

    def _resume(self) -> bool:
        """Any new observation ends a hold at the frontier (StepToFrontier): what was
        held goes to the program, in order. Whether anything was sent (the program
        then moves on, to a frontier it has not reached yet)."""
        if not self._hold.held:
            return False
        sent = self._hold.release(self._tool_results_isolate())
        if sent:
            self._frontier_ready = False
            self._wake.set()
        return sent

    def _arm(self, observer: Observer) -> None:
        mode = observer.mode
        assert isinstance(mode, YieldAfter)
        now = trio.current_time()
        if mode.idle_floor is not None and mode.idle_floor > mode.seconds:
            observer.floor_deadline = now + mode.idle_floor
        if mode.seconds <= 0:
            self._yield_or_hold(observer)
            return
        observer.deadline = now + mode.seconds
        self._wake.set()

    def _yield_or_hold(self, observer: Observer) -> None:
        """``observer``'s yield time is up: hand over the output so far, or, with
        nothing new to hand over and an idle floor still ahead, hold on until output,
        the end, or the floor."""
        if not self._buffer and observer.floor_deadline > trio.current_time():
            observer.deadline = observer.floor_deadline
            observer.holding = True
            self._wake.set()
            return
        self._resolve(Yielded(self._take_buffer()))

    def _on_abandon(self, observer: OneShot[CellEvent]) -> None:
        if self._observer is observer:
            self._observer = None
            if isinstance(observer, Observer) and observer.initial:
                # Nobody waited for the first event: as if the cell had never been
                # observed, so a later yield is kept as the initial yield.
                self._has_been_observed = False
            self._wake.set()

    def request_terminate(self) -> OneShot[CellEvent]:
        """Begin termination and return where its ``Terminated`` will arrive (or,
        for a buffered completion, that ``Completed`` at once)."""
        waiter: OneShot[CellEvent] = OneShot()
        if self.phase is Phase.RUNNING:
            self.phase = Phase.TERMINATING
            self._terminate_requested = True
            self._terminators.append(waiter)
            self._interrupt_now()
            self._wake.set()
        elif self.phase is Phase.COMPLETED:
            assert self._completion is not None
            self.phase = Phase.CLAIMED
            waiter.deliver(self._merged_completion())
            self._wake.set()
        elif self.phase in (Phase.TERMINATING, Phase.CLAIMED):
            raise AlreadyTerminating(self.id)
        else:
            raise MissingCell(self.id)
        return waiter

    def request_shutdown(self) -> None:
        """Session shutdown or drop: terminate, or discard a buffered completion."""
        if self.phase is Phase.RUNNING:
            self.phase = Phase.TERMINATING
            self._terminate_requested = True
            self._interrupt_now()
        elif self.phase is Phase.COMPLETED:
            self.phase = Phase.CLOSED
        self._wake.set()

    def preempt(self) -> bool:
        """End the attached observation now with ``Yielded`` (the output so far); the
        program keeps running. False, changing nothing, when no observation is
        attached or the cell is already ending."""
        observer = self._observer
        if observer is None or self.phase is not Phase.RUNNING:
            return False
        if self._isolate is not None and self._finished is None and self._failure is None:
            # As at a deadline: output the isolate keeps back belongs in this yield
            # (and if it brings the program's end, the observer gets that instead).
            self._isolate.collect_output()
            if self._observer is not observer:
                return True
        items = (self._initial_yield or []) + self._take_buffer()
        self._initial_yield = None
        self._resolve(Yielded(items))
        return True

    def _interrupt_now(self) -> None:
        """Stop the JavaScript at once, before the cell task runs the termination:
        V8 gets the interrupt one task switch earlier, and nothing the program does
        from now on is acted on (only output it had queued is still handed over)."""
        if self._isolate is not None:
            self._isolate.interrupt()

    # ------------------------------------------------------------------------------
    # Delivery

    def _take_buffer(self) -> list[OutputItem]:
        items, self._buffer = self._buffer, []
        self._buffer_bytes = 0
        return items

    def _resolve(self, event: CellEvent) -> None:
        observer, self._observer = self._observer, None
        assert observer is not None
        observer.deliver(event)
        if isinstance(event, Yielded | Pending):
            self._handed_back = True
        self._wake.set()

    def _deliver_frontier(self) -> None:
        self._frontier_ready = False
        items = (self._initial_yield or []) + self._take_buffer()
        self._initial_yield = None
        observer = self._observer
        if observer is not None and isinstance(observer.mode, StepToFrontier):
            # The reference's stepping: the calls started since the last frontier,
            # and the cell holds here until the next observation.
            self._hold.held = True
            self._resolve(Pending(items, self._hold.take_started_ids()))
            return
        self._resolve(Pending(items, self._callbacks.pending_tool_call_ids()))

    def _merged_completion(self) -> Completed:
        assert self._completion is not None
        items = (self._initial_yield or []) + self._completion.content_items
        self._initial_yield = None
        return Completed(items, self._completion.error_text)

    def _deliver_completion(self, observer: Observer) -> None:
        assert self._completion is not None
        if isinstance(observer.mode, YieldAfter) and self._initial_yield is not None:
            items, self._initial_yield = self._initial_yield, None
            self._resolve(Yielded(items))
            self._push_if_handed_back()
            return
        event = self._merged_completion()
        self.phase = Phase.CLOSED
        self._resolve(event)

    def _push_if_handed_back(self) -> None:
        """A buffered completion with no observer attached: push it instead, if this
        session pushes and the cell's caller was told it is still running."""
        if (
            self._host.on_finished is not None
            and self._handed_back
            and self.phase is Phase.COMPLETED
            and self._observer is None
        ):
            self._push = self._merged_completion()
            self.phase = Phase.CLOSED
            self._wake.set()

    # ------------------------------------------------------------------------------
    # EngineListener: what the isolate reports (synchronous, trio thread)

    def on_engine_event(self, event: EngineEvent) -> None:
        if isinstance(event, Output):
            # Output is kept until the outcome is settled, including what a failed
            # or terminated program had queued and the isolate hands over late.
            if not self._accept_output or self.phase in (
                Phase.COMPLETED,
                Phase.CLAIMED,
                Phase.CLOSED,
            ):
                return
        elif (
            self.phase is not Phase.RUNNING
            or self._finished is not None
            or self._failure is not None
        ):
            return
        if isinstance(event, Output):
            self._buffer.append(event.item)
            self._buffer_bytes += event.size
            if self._observer is not None and self._observer.holding:
                # Handed over at the cell task's next pass, with whatever else the
                # program output in the same breath.
                self._observer.deadline = trio.current_time()
                self._wake.set()
            if self._buffer_bytes > self._config.max_output_bytes:
                self._breach(
                    f"exec cell exceeded its limit of {self._config.max_output_bytes} "
                    "buffered output bytes (RuntimeConfig.max_output_bytes)"
                )
            elif len(self._buffer) > self._config.max_output_items:
                self._breach(
                    f"exec cell exceeded its limit of {self._config.max_output_items} "
                    "buffered output items (RuntimeConfig.max_output_items)"
                )
        elif isinstance(event, Started):
            pass  # the cell counts as started from the moment its start was posted
        elif isinstance(event, YieldRequested):
            self._on_yield_requested()
        elif isinstance(event, ToolCallRequested):
            problem = self._callbacks.start_tool_call(self._start.tools[event.ident], event)
            if problem is None:
                self._frontier_ready = False
                self._hold.tool_call_started(event.id)
            else:
                self._breach(problem)
        elif isinstance(event, Notify):
            problem = self._callbacks.start_notification(event.text)
            if problem is not None:
                self._breach(problem)
        elif isinstance(event, TimerSet):
            if len(self._timers) >= self._config.max_pending_timers:
                self._breach(
                    f"code mode cell exceeded its limit of {self._config.max_pending_timers} "
                    "pending timers (RuntimeConfig.max_pending_timers)"
                )
                return
            self._timers[event.id] = trio.current_time() + event.delay
            self._wake.set()
        elif isinstance(event, TimerCleared):
            if self._timers.pop(event.id, None) is not None:
                self._wake.set()
        elif isinstance(event, BufferMemoryExceeded):
            self._breach(
                f"exec cell exceeded its memory limit of {self._config.memory_limit_bytes} "
                "bytes (RuntimeConfig.memory_limit_bytes) in ArrayBuffer memory"
            )
        elif isinstance(event, HeapMemoryExceeded):
            self._breach(
                f"exec cell exceeded its memory limit of {self._config.memory_limit_bytes} "
                "bytes (RuntimeConfig.memory_limit_bytes)"
            )
        elif isinstance(event, Finished):
            self._finished = event
            self._wake.set()
            callbacks = self._callbacks
            if not (callbacks.in_flight or callbacks.overflowed or self._isolate is None):
                # Nothing to wait for or cancel: complete here, in the report that
                # says so, rather than one task switch later in the cell task (a
                # short cell's latency). The cell task still runs the teardown.
                self._timers.clear()
                self._isolate.stop()
                self._settle_completion()

    def on_engine_idle(self) -> None:
        if self.phase is not Phase.RUNNING or self._finished is not None or not self._started:
            return
        if self._failure is not None or self._hold.held:
            return
        observer = self._observer
        if observer is not None and isinstance(observer.mode, PendingFrontier | StepToFrontier):
            self._deliver_frontier()
        elif not self._has_been_observed:
            self._frontier_ready = True
        else:
            self._hold.take_started_ids()  # a frontier nobody steps to still passes

    def on_engine_failure(self, message: str) -> None:
        """The engine failed (out of memory, crash, protocol violation): output the
        program had queued before that point is still handed over by the drain."""
        if self._failure is None and self._finished is None:
            self._failure = message
            self._wake.set()

    def _breach(self, message: str) -> None:
        """The cell saw a limit broken at this point of the message stream: the
        program ends here, and nothing it produced after this point is kept."""
        if self._failure is None and self._finished is None:
            self._accept_output = False
            self.on_engine_failure(message)

    def _on_yield_requested(self) -> None:
        observer = self._observer
        if observer is not None:
            if isinstance(observer.mode, YieldAfter):
                self._resolve(Yielded(self._take_buffer()))
        elif not self._has_been_observed and self._initial_yield is None:
            self._initial_yield = self._take_buffer()

    # ------------------------------------------------------------------------------
    # What the callbacks (``_callbacks.py``) ask of the cell

    def _tool_results_to(self) -> ResultSink | None:
        """Where a finished tool call's outcome goes: the isolate, which it is sent to
        at once (so the frontier moves on); the hold, while the cell is held at its
        frontier (StepToFrontier); or None once the program has finished, failed or
        is ending (the outcome is dropped)."""
        isolate = self._tool_results_isolate()
        if isolate is None:
            return None
        if self._hold.held:
            return self._hold
        self._frontier_ready = False
        return isolate

    def _tool_results_isolate(self) -> Isolate | None:
        """The isolate, while the program can still take input."""
        if self._isolate is None or self.phase is not Phase.RUNNING:
            return None
        if self._finished is not None or self._failure is not None:
            return None
        return self._isolate

    def _wake_up(self) -> None:
        self._wake.set()

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
            try:
                if self._push is not None:
                    # Never before ``execute`` returned the id (it always does for a
                    # cell that started), so the host knows what the push is about.
                    await self._known.wait()
                    await push_result(self._host, self.id, self._push)
            finally:
                with trio.CancelScope(shield=True):
                    await self._host.close_cell(self.id)

    async def _lifecycle(self) -> None:
        if self._start.error is not None:
            self._finished = Finished(self._start.error, {})
        while True:
            if self._terminate_requested:
                await self._terminate()
                return
            if self._finished is not None or self._failure is not None:
                break
            await self._sleep_until_next_deadline()
            self._on_deadlines()
        await self._complete()

    async def _sleep_until_next_deadline(self) -> None:
        deadline = min(self._timers.values(), default=math.inf)
        if self.phase is Phase.RUNNING and self._finished is None and self._failure is None:
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

    def _on_deadlines(self) -> None:
        if self.phase is not Phase.RUNNING or self._finished is not None or self._failure:
            return
        now = trio.current_time()
        if now >= self._run_deadline:
            # Not a point of the message stream: what the program had queued until now
            # is still handed over (the drain), as for a termination.
            self.on_engine_failure(
                "exec cell exceeded its running-time limit of "
                f"{self._config.max_cell_seconds:g} seconds (RuntimeConfig.max_cell_seconds)"
            )
            return
        observer = self._observer
        if observer is not None and observer.deadline <= now and self._isolate is not None:
            # Output the isolate keeps back belongs in this yield (it may also bring
            # the program's end, or a broken limit: then that is what counts).
            self._isolate.collect_output()
            if self.phase is not Phase.RUNNING or self._finished is not None or self._failure:
                return
            observer = self._observer
        if observer is not None and observer.deadline <= now:
            self._yield_or_hold(observer)
        due = sorted(
            (deadline, timer_id) for timer_id, deadline in self._timers.items() if deadline <= now
        )
        for _, timer_id in due:
            del self._timers[timer_id]
            if self._hold.held:
                self._hold.hold_timer(timer_id)
            elif self._isolate is not None:
                self._frontier_ready = False
                self._isolate.send_timer_fired(timer_id)

    async def _complete(self) -> None:
        """The program finished (or broke a limit): drain, commit, deliver."""
        if self._completion is None:
            await self._finish_program()
        while self.phase is Phase.COMPLETED:
            await self._sleep_until_next_deadline()

    async def _finish_program(self) -> None:
        self._timers.clear()
        if self._isolate is not None:
            if self._failure is not None:
                await self._isolate.terminate()
            else:
                self._isolate.stop()
        # 1. In-flight notifications finish (they are not cancelled), unless someone
        #    terminates the cell meanwhile; then tool calls are cancelled.
        if self._callbacks.overflowed:
            await self._callbacks.cancel(notifications=True)
        while self._callbacks.notifying and not self._terminate_requested:
            await self._sleep_until_next_deadline()
        if self._terminate_requested:
            await self._terminate()
            return
        await self._callbacks.cancel(notifications=False)
        if self._terminate_requested:
            await self._terminate()
            return
        self._settle_completion()

    def _settle_completion(self) -> None:
        """Commit the stored writes atomically with the transition to COMPLETED, then
        deliver the completion, or keep it buffered until someone observes or claims
        it (synchronous: see :meth:`on_engine_event` for ``Finished``)."""
        if self._failure is not None:
            error_text: str | None = self._failure
        else:
            assert self._finished is not None
            error_text = self._finished.error_text
            storage_error = self._host.commit_writes(self._finished.writes)
            if storage_error is not None:
                error_text = storage_error
        if error_text is not None:
            error_text = truncate_error(error_text, self._config.max_error_text_bytes)
        self._completion = Completed(self._take_buffer(), error_text)
        self.phase = Phase.COMPLETED
        if self._observer is not None:
            self._deliver_completion(self._observer)
        else:
            self._push_if_handed_back()

    async def _terminate(self) -> None:
        """Interrupt the program, cancel callbacks, hand out ``Terminated``."""
        self.phase = Phase.TERMINATING
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

    def _finish_termination(self) -> None:
        items = (self._initial_yield or []) + self._take_buffer()
        self._initial_yield = None
        event = Terminated(items)
        if self._observer is not None:
            self._resolve(event)
        for waiter in self._terminators:
            if not waiter.abandoned and not waiter.delivered:
                waiter.deliver(event)
        self._terminators.clear()
        self.phase = Phase.CLOSED

    async def _teardown(self) -> None:
        """Runs shielded, whatever ended the task (including a session cancelled by
        an exception): nothing of the cell survives it (its close path follows)."""
        if self.phase in (Phase.RUNNING, Phase.TERMINATING):
            if self._isolate is not None:
                await self._isolate.terminate()
            await self._callbacks.cancel(notifications=True)
            self._finish_termination()
        self._callbacks.close()  # (a cell that completed at once never cancelled them)
        if self.phase is not Phase.CLAIMED:
            self.phase = Phase.CLOSED
        if self._isolate is not None:
            await self._isolate.close()
