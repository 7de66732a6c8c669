"""The cell: one program, from its start to its end (``docs/runtime.md``).

A cell owns an output buffer (:mod:`.output`), at most one observer, a yield timer,
the program's timers, its in-flight callbacks (tool calls and notifications, each a
task of the session nursery: :class:`~.in_flight.CellCallbacks`) and its isolate,
which its start (:class:`~.start.CellStart`) obtains. Its life is one task in the
session nursery (:meth:`Cell.run`), with its own cancel scope. Where it stands is one
state machine, :class:`~.state.CellState` (its phases and their transitions are
drawn there); how it ends is :mod:`.ending`.

Everything the isolate reports arrives through the :class:`EngineListener` methods,
synchronously on the trio thread, and is applied at once, each kind of event by its
handler (:data:`_ON_EVENT`): output goes to the buffer, tool calls are started, a
yield resolves the observer. The cell task itself only sleeps until the next deadline
(the observer's yield timer or a program timer) or until something asks it to move
on: the program ended, someone wants it terminated, or its completion was delivered.

A completion that nobody observes yet stays buffered in ``COMPLETED``; the next
observation receives it, and ``terminate()`` *claims* it instead of terminating
(natural completion wins), unless the session pushes it (:mod:`.ending`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import trio

from .._delegate import ExecuteRequest
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
    ObserveMode,
    Pending,
    PendingFrontier,
    StepToFrontier,
    YieldAfter,
    Yielded,
)
from .ending import CellEnding
from .host import ERROR_TRUNCATED_SUFFIX, CellDelegate, CellHost
from .in_flight import CellCallbacks
from .one_shot import Observer, OneShot
from .output import OutputBuffer
from .start import CellStart
from .state import CellState, Failure, Phase, Seen
from .stepping import Frontier, FrontierHold, ResultSink

__all__ = ["ERROR_TRUNCATED_SUFFIX", "Cell", "CellHost", "Phase"]


class Cell(CellEnding):
    """One program and everything it is waiting on."""

    def __init__(self, cell_id: CellId, request: ExecuteRequest, host: CellHost) -> None:
        self.id = cell_id
        #: Where this cell's callbacks go (its request's, else the session's), until
        #: it is closed: read by the session for ``cell_closed``.
        self.delegate = CellDelegate(
            request.delegate if request.delegate is not None else host.delegate
        )
        if request.delegate is not None:  # held by `self.delegate` alone
            request = attrs.evolve(request, delegate=None)
        self._host = host
        self._config = host.config
        self._state = CellState()
        self._isolate: Isolate | None = None  # once its start command is posted
        self._start = CellStart(
            cell_id,
            request,
            backend=host.backend,
            config=host.config,
            listener=self,
            on_started=self._on_started,
            nursery=host.nursery,
        )
        self._output = OutputBuffer(host.config)
        self._observer: Observer | None = None
        self._seen = Seen.UNOBSERVED
        self._terminators: list[OneShot[CellEvent]] = []
        self._hold = FrontierHold()  # and where the program stands: see stepping.py
        self._completion: Completed | None = None  # once settled
        self._known = trio.Event()  # ``execute`` has returned this cell's id
        self._timers: dict[int, float] = {}
        self._run_deadline = math.inf  # RuntimeConfig.max_cell_seconds, from the start
        self._callbacks = CellCallbacks(
            cell_id=cell_id,
            call_id=request.tool_call_id,
            nursery=host.nursery,
            delegate=self.delegate,
            config=host.config,
            results_to=self._tool_results_to,
            wake_cell=self._wake_up,
        )
        self._wake = trio.Event()

    @property
    def phase(self) -> Phase:
        return self._state.phase

    @property
    def output_handed(self) -> int:
        """Output items handed to observers so far."""
        return self._output.taken

    @property
    def result_pending(self) -> bool:
        """Whether the program's final result has yet to reach anyone: it runs, it is
        being terminated, or it finished and nobody has observed that yet."""
        return self._state.result_pending

    async def wait_for_phase(self, phase: Phase) -> None:
        """Wait until the cell is in ``phase`` (a seam for tests and tools)."""
        await self._state.wait_for(phase)

    @property
    def _started(self) -> bool:
        """The program's start command is posted (the cell has its isolate)."""
        return self._isolate is not None

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
        isolate ready (see :class:`~.start.CellStart`); False when the cell task
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
        self._run_deadline = trio.current_time() + self._config.max_cell_seconds
        observer = self._observer
        if observer is not None and isinstance(observer.mode, YieldAfter):
            self._arm(observer)

    # ------------------------------------------------------------------------------
    # Observation and termination (called by the session, synchronously)

    def begin_observe(self, mode: ObserveMode) -> Observer:
        if not self._state.observable:
            raise MissingCell(self.id)
        if self._observer is not None:
            raise BusyObserver(self.id)
        return self._attach(mode)

    def _attach(self, mode: ObserveMode) -> Observer:
        observer = Observer(mode, self._on_abandon)
        self._observer = observer
        if self._seen is Seen.UNOBSERVED:
            self._seen = Seen.OBSERVED
        if self._state.phase is Phase.COMPLETED:
            self._deliver_completion(observer)
            return observer
        resumed = self._resume()
        if isinstance(mode, YieldAfter):
            items = self._output.take_initial_yield()
            if items is not None:
                self._resolve(Yielded(items))
            elif self._started:
                self._arm(observer)
        elif (
            self._isolate is not None
            and not resumed
            and (self._hold.frontier is Frontier.REACHED or self._isolate.idle)
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
        if not self._output.items and observer.floor_deadline > trio.current_time():
            observer.deadline = observer.floor_deadline
            observer.holding = True
            self._wake.set()
            return
        self._resolve(Yielded(self._output.take()))

    def _on_abandon(self, observer: OneShot[CellEvent]) -> None:
        if self._observer is observer:
            self._observer = None
            if isinstance(observer, Observer) and observer.initial:
                # Nobody waited for the first event: as if the cell had never been
                # observed, so a later yield is kept as the initial yield.
                self._seen = Seen.UNOBSERVED
            self._wake.set()

    def request_terminate(self) -> OneShot[CellEvent]:
        """Begin termination and return where its ``Terminated`` will arrive (or,
        for a buffered completion, that ``Completed`` at once)."""
        waiter: OneShot[CellEvent] = OneShot()
        phase = self._state.phase
        if self._state.program_ending:
            self._terminators.append(waiter)
            self._begin_termination()
        elif phase is Phase.COMPLETED:
            waiter.deliver(self._claim_completion())
        elif phase in (Phase.TERMINATING, Phase.CLAIMED):
            raise AlreadyTerminating(self.id)
        else:
            raise MissingCell(self.id)
        return waiter

    async def quiesce(self) -> None:
        """Start no tool call from now on, and return once every call started has
        been answered and its answer journaled (``Isolate.quiesce``): the program may
        then be stopped and resumed by another host without running a call twice."""
        isolate = self._isolate
        if isolate is not None and self._state.program_live:
            await isolate.quiesce()

    def request_shutdown(self) -> None:
        """Session shutdown or drop: terminate, or discard a buffered completion."""
        if self._state.program_ending:
            self._begin_termination()
        elif self._state.phase is Phase.COMPLETED:
            self._state.move(Phase.CLOSED)
        self._wake.set()

    def _begin_termination(self) -> None:
        """Stop the JavaScript at once, before the cell task runs the termination:
        V8 gets the interrupt one task switch earlier, and nothing the program does
        from now on is acted on (only output it had queued is still handed over)."""
        self._state.move(Phase.TERMINATING)
        if self._isolate is not None:
            self._isolate.interrupt()
        self._wake.set()

    def preempt(self) -> bool:
        """End the attached observation now with ``Yielded`` (the output so far); the
        program keeps running. False, changing nothing, when no observation is
        attached or the cell is already ending."""
        observer = self._observer
        if observer is None or not self._state.program_ending:
            return False
        if self._isolate is not None and self._state.program_live:
            # As at a deadline: output the isolate keeps back belongs in this yield
            # (and if it brings the program's end, the observer gets that instead).
            self._isolate.collect_output()
            if self._observer is not observer:
                return True
        self._resolve(Yielded(self._output.take_all()))
        return True

    def _deliver_frontier(self) -> None:
        self._hold.moved()
        items = self._output.take_all()
        observer = self._observer
        if observer is not None and isinstance(observer.mode, StepToFrontier):
            # The reference's stepping: the calls started since the last frontier,
            # and the cell holds here until the next observation.
            self._hold.hold()
            self._resolve(Pending(items, self._hold.take_started_ids()))
            return
        self._resolve(Pending(items, self._callbacks.pending_tool_call_ids()))

    # ------------------------------------------------------------------------------
    # EngineListener: what the isolate reports (synchronous, trio thread)

    def on_engine_event(self, event: EngineEvent) -> None:
        """Apply ``event`` by its handler in :data:`_ON_EVENT`. Output is kept while
        the cell keeps output (:attr:`~.state.CellState.keeps_output`); every other
        event is acted on only while the program is live."""
        if isinstance(event, Output):
            acted_on = self._state.keeps_output
        else:
            acted_on = self._state.program_live
        if acted_on:
            _ON_EVENT[type(event)](self, event)

    def _on_output(self, event: Output) -> None:
        breach = self._output.add(event.item, event.size)
        if self._observer is not None and self._observer.holding:
            # Handed over at the cell task's next pass, with whatever else the
            # program output in the same breath.
            self._observer.deadline = trio.current_time()
            self._wake.set()
        if breach is not None:
            self._breach(breach)

    def _on_started_event(self, event: Started) -> None:
        pass  # the cell counts as started from the moment its start was posted

    def _on_yield_requested(self, event: YieldRequested) -> None:
        observer = self._observer
        if observer is not None:
            if isinstance(observer.mode, YieldAfter):
                self._resolve(Yielded(self._output.take()))
        elif self._seen is Seen.UNOBSERVED:
            self._output.keep_initial_yield()

    def _on_tool_call(self, event: ToolCallRequested) -> None:
        problem = self._callbacks.start_tool_call(self._start.tools[event.ident], event)
        if problem is None:
            self._hold.moved()
            self._hold.tool_call_started(event.id)
        else:
            self._breach(problem)

    def _on_notify(self, event: Notify) -> None:
        problem = self._callbacks.start_notification(event.text)
        if problem is not None:
            self._breach(problem)

    def _on_timer_set(self, event: TimerSet) -> None:
        if len(self._timers) >= self._config.max_pending_timers:
            self._breach(
                f"code mode cell exceeded its limit of {self._config.max_pending_timers} "
                "pending timers (RuntimeConfig.max_pending_timers)"
            )
            return
        self._timers[event.id] = trio.current_time() + event.delay
        self._wake.set()

    def _on_timer_cleared(self, event: TimerCleared) -> None:
        if self._timers.pop(event.id, None) is not None:
            self._wake.set()

    def _on_buffer_memory_exceeded(self, event: BufferMemoryExceeded) -> None:
        self._breach(
            f"exec cell exceeded its memory limit of {self._config.memory_limit_bytes} "
            "bytes (RuntimeConfig.memory_limit_bytes) in ArrayBuffer memory"
        )

    def _on_heap_memory_exceeded(self, event: HeapMemoryExceeded) -> None:
        self._breach(
            f"exec cell exceeded its memory limit of {self._config.memory_limit_bytes} "
            "bytes (RuntimeConfig.memory_limit_bytes)"
        )

    def _on_finished(self, event: Finished) -> None:
        self._state.record_end(event)
        self._wake.set()
        callbacks = self._callbacks
        if not (callbacks.in_flight or callbacks.overflowed or self._isolate is None):
            # Nothing to wait for or cancel: complete here, in the report that says
            # so, rather than one task switch later in the cell task (a short cell's
            # latency). The cell task still runs the teardown.
            self._timers.clear()
            self._isolate.stop()
            self._settle_completion()

    def on_engine_idle(self) -> None:
        if not self._state.program_live or not self._started or self._hold.held:
            return
        observer = self._observer
        if observer is not None and isinstance(observer.mode, PendingFrontier | StepToFrontier):
            self._deliver_frontier()
        elif self._seen is Seen.UNOBSERVED:
            self._hold.reached()
        else:
            self._hold.take_started_ids()  # a frontier nobody steps to still passes

    def on_engine_failure(self, message: str) -> None:
        """The engine failed (out of memory, crash, protocol violation): output the
        program had queued before that point is still handed over by the drain."""
        if self._state.record_end(Failure(message)):
            self._wake.set()

    def _breach(self, message: str) -> None:
        """The cell saw a limit broken at this point of the message stream: the
        program ends here, and nothing it produced after this point is kept."""
        if self._state.record_end(Failure(message, cut=True)):
            self._wake.set()

    # ------------------------------------------------------------------------------
    # What the callbacks (:mod:`.in_flight`) ask of the cell

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
        self._hold.moved()
        return isolate

    def _tool_results_isolate(self) -> Isolate | None:
        """The isolate, while the program is live (can still take input)."""
        return self._isolate if self._state.program_live else None

    def _wake_up(self) -> None:
        self._wake.set()

    # ------------------------------------------------------------------------------
    # Deadlines (the cell task wakes for them: see :mod:`.ending`)

    def _on_deadlines(self) -> None:
        if not self._state.program_live:
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
            if not self._state.program_live:
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
                self._hold.moved()
                self._isolate.send_timer_fired(timer_id)


_ON_EVENT: dict[type[Any], Callable[[Cell, Any], None]] = {
    Output: Cell._on_output,
    Started: Cell._on_started_event,
    YieldRequested: Cell._on_yield_requested,
    ToolCallRequested: Cell._on_tool_call,
    Notify: Cell._on_notify,
    TimerSet: Cell._on_timer_set,
    TimerCleared: Cell._on_timer_cleared,
    BufferMemoryExceeded: Cell._on_buffer_memory_exceeded,
    HeapMemoryExceeded: Cell._on_heap_memory_exceeded,
    Finished: Cell._on_finished,
}
"""Each engine event's handler, by the event's type (every member of ``EngineEvent``)."""
