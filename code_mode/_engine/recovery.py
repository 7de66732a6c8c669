"""How an isolate outlives what ran it: a replay after its worker died, or its host.

The part of :class:`~.isolate.Isolate` that rebuilds a program from its journal (a
mixin, as ``_backlog.py`` is): :meth:`IsolateRecovery._replay` when the isolate's
worker process died under a cell that lives on (see ``journal.py``), and
:meth:`IsolateRecovery.resume` when another host, which is gone, ran the cell (see
``resume.py``). Both post the recorded batches to a new isolate; what it then reports
is checked against the journal (a replay) or sorted by a :class:`~.resume.ResumePlan`
(a resumption).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from .._config import RuntimeConfig
from .._resumption import Resumption
from .._v8 import IsolateLimits, IsolateUnavailable
from ._bridge import EngineEvent, EngineListener, MessageValidator, ToolCallRequested, dumps
from .journal import Journal
from .resume import DurableGate, ResumePlan, Verdict

if TYPE_CHECKING:
    from ._backend import IsolateHandle, IsolateSink, IsolateSource

__all__ = ["MAX_REPLAYS", "IsolateRecovery"]

#: Times one cell may be replayed after its worker died: a program that keeps landing
#: on dying workers is not resumed forever.
MAX_REPLAYS = 3

logger = logging.getLogger("code_mode.engine")


class IsolateRecovery:
    """Replays and resumptions of :class:`~.isolate.Isolate` (see the module)."""

    # Set by Isolate.
    _backend: IsolateSource
    _limits: IsolateLimits
    _config: RuntimeConfig
    _nursery: trio.Nursery | None
    _journal: Journal | None
    _gate: DurableGate | None
    _plan: ResumePlan | None
    _recovery: trio.CancelScope | None
    _replay_tag: int
    _replay_horizon: int
    _batches_posted: int
    _replays: int
    _replays_here: bool
    _alone: bool
    _native: IsolateHandle | None
    _listener: EngineListener | None
    _validator: MessageValidator | None
    _tool_kinds: dict[str, str]
    _source: str
    _next_tag: int
    _closed: bool
    _failed: bool
    _terminating: bool
    _outbox: list[str]
    _holding_calls: bool
    _calls_out: set[str]
    _quiet: trio.Event | None

    def _sink(self) -> IsolateSink:
        raise NotImplementedError

    def _post_with_probe(self, code: str) -> None:
        raise NotImplementedError

    def _new_validator(self) -> MessageValidator:
        raise NotImplementedError

    def _fail(self, message: str) -> None:
        raise NotImplementedError

    def resume(
        self,
        listener: EngineListener,
        *,
        source: str,
        tools: list[dict[str, str]],
        resumption: Resumption,
        not_idempotent: frozenset[str],
    ) -> None:
        """Take over a cell another host ran (see resume.py): its recorded batches are
        replayed, and what the replay reports is sorted by a :class:`ResumePlan`."""
        if self._native is None:
            raise RuntimeError("resuming a cell needs an isolate")
        if self._journal is None:  # not journaled here (thread mode, no mirror)
            self._journal = Journal(self._config.max_journal_chars)
        self._listener = listener
        self._source = source
        self._tool_kinds = {tool["ident"]: tool["kind"] for tool in tools}
        self._validator = self._new_validator()
        self._plan = ResumePlan(resumption, not_idempotent)
        self._journal.restore(resumption)
        self._batches_posted = len(resumption.batches)
        self._post_recorded(resumption.clock, resumption.batches)

    def _post_recorded(self, clock: Sequence[float], batches: Sequence[str]) -> None:
        """Post recorded batches to a new isolate, the clock readings they hand the
        program first; what it reports is a replay's until the last has run."""
        self._replay_horizon = self._batches_posted
        if clock:
            self._post_with_probe('[{"t":"replay","clock":' + dumps(list(clock)) + "}]")
        for batch in batches:
            self._post_with_probe(batch)
        self._replay_tag = self._next_tag - 1

    def _can_replay(self, running: bool) -> bool:
        """Whether a worker's death under this isolate is survived by a replay: the
        journal holds everything, and the program did not kill the worker it had to
        itself (replayed alone, and running JavaScript when that worker died too; one
        that was waiting there was ended from outside, and is replayed again)."""
        journal = self._journal
        return (
            journal is not None
            and self._replays_here
            and journal.usable
            and bool(journal.batches)
            and not (self._alone and running)
            and self._replays < MAX_REPLAYS
            and self._listener is not None
        )

    def _replay(self, message: str, *, alone: bool) -> None:
        """Rebuild the isolate and replay the journal into it. A program that was
        running JavaScript when its worker died may have caused the death: it is
        replayed *alone*, on a worker process of its own, so that if it was the
        cause, it takes no other cell with it the second time (then it fails)."""
        assert self._nursery is not None
        self._replays += 1
        self._alone = alone
        self._recovery = trio.CancelScope()
        self._nursery.start_soon(self._recover, message, self._recovery)

    @trio.lowlevel.enable_ki_protection
    async def _recover(self, message: str, scope: trio.CancelScope) -> None:
        """A new isolate, fed the journal's batches (see journal.py)."""
        journal = self._journal
        assert journal is not None
        native = None
        with scope:
            create = self._backend.create_isolate
            if self._alone:
                create = getattr(self._backend, "create_isolate_alone", create)
            # A worker may die while the new isolate is being made on it (another
            # kill, the same cause): try again, a few times.
            for attempt in range(MAX_REPLAYS):
                try:
                    native = await create(self._sink(), self._limits)
                    break
                except IsolateUnavailable as error:
                    if attempt + 1 < MAX_REPLAYS:
                        continue
                    if self._recovery is scope:
                        self._recovery = None
                        self._fail(f"{message}; it could not be resumed on another worker: {error}")
                    return
        if native is None or scope.cancelled_caught or self._recovery is not scope:
            if native is not None:
                await native.close()
            return
        self._recovery = None
        self._native = native
        self._validator = self._new_validator()
        journal.begin_replay()
        self._post_recorded(journal.clock_readings, journal.batches)
        logger.warning(
            "exec cell resumed on %s worker process (replay %d of %d, %d batches, "
            "%d events) after: %s",
            "a new, unshared" if self._alone else "another",
            self._replays,
            MAX_REPLAYS,
            len(journal.batches),
            journal.events,
            message,
        )

    def _act_durably(self, event: EngineEvent) -> bool:
        """Act on ``event`` of a mirrored or resumed cell (resume.py): sorted by the
        resume plan while the replay runs; a tool call recorded, and started only once
        the record is durable. False when the cell failed."""
        verdict: Verdict | str = Verdict.DELIVER
        if self._plan is not None:
            verdict = self._plan.classify(event)
            if isinstance(verdict, str):
                self._fail(verdict)
                return False
            if verdict is Verdict.DROP:
                return True
        listener = self._listener
        assert listener is not None
        if not isinstance(event, ToolCallRequested) or self._gate is None:
            listener.on_engine_event(event)
            return True
        if self._holding_calls:
            # Handed over (quiesce): not started here, nor recorded; the host that
            # resumes the cell replays the program up to this call and starts it.
            return True
        self._gate.mirror.record("rerun" if verdict is Verdict.RERUN else "call", event.id)
        self._calls_out.add(event.id)
        self._gate.after_durable(functools.partial(self._start_call, event))
        return True

    def _start_call(self, event: ToolCallRequested) -> None:
        if self._listener is not None and not (self._closed or self._failed):
            self._listener.on_engine_event(event)

    # -- a hand-over to another host -------------------------------------------------

    async def quiesce(self) -> None:
        """Bring a mirrored cell's program to a point another host can resume it from
        without running a tool call twice (its host is stopping on purpose): no tool
        call starts here from now on (one the program makes is started by the host
        that resumes it, whose replay reaches it again), and this returns once every
        call started here has been answered and its answer is journaled, or once the
        isolate is ending. The program keeps running meanwhile; stop it after this
        returns. Unbounded (a tool may take its time): the caller bounds it."""
        if self._gate is None:
            return  # not mirrored: nothing to resume from, nothing to wait for
        self._holding_calls = True
        while (self._calls_out or self._outbox) and not self._ending():
            self._quiet = trio.Event()
            await self._quiet.wait()

    def _ending(self) -> bool:
        return self._closed or self._failed or self._terminating

    def _answered(self, call_id: str) -> None:
        """``call_id``'s answer is on its way to the isolate (in the outbox)."""
        self._calls_out.discard(call_id)
        self._quieter()

    def _quieter(self) -> None:
        """Wake :meth:`quiesce` to look again (a call answered, the outbox posted, the
        isolate ending)."""
        if self._quiet is not None:
            self._quiet.set()
            self._quiet = None
