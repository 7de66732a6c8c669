"""A cell's state machine: its phases, the only transitions between them, and how its program ended.

Every question a cell asks about where it is ("is the program still live?", "is
output still kept?", "does its final result still have to reach someone?") is a
property of :class:`CellState`, answered from the phase alone (plus, for output, the
way the program ended), and every change of phase goes through
:meth:`CellState.move`, which checks it against :data:`TRANSITIONS`:

=========== =========== =====================================================
from        to          when
=========== =========== =====================================================
RUNNING     ENDING      the program finished or failed (a broken limit too)
RUNNING     TERMINATING ``terminate()``, or the session shuts down
ENDING      COMPLETED   callbacks drained, stored writes committed
ENDING      TERMINATING ``terminate()`` while its notifications drain
TERMINATING CLOSED      ``Terminated`` handed out
COMPLETED   CLOSED      delivered to an observer, or discarded at shutdown
COMPLETED   CLAIMED     ``terminate()`` receives it (natural completion wins)
COMPLETED   PUSHING     settled, unobserved, in a cell that was handed back
PUSHING     CLOSED      the push delivered
RUNNING     CLOSED      (and ENDING) the teardown of a cancelled cell task,
                        which hands out ``Terminated``
=========== =========== =====================================================
"""

from __future__ import annotations

import enum

import attrs
import trio

from .._engine import Finished

__all__ = ["TRANSITIONS", "CellState", "Failure", "Phase", "ProgramEnd", "Seen"]


class Phase(enum.Enum):
    #: The program is live: it runs, or waits on its tool calls and timers.
    RUNNING = "running"
    #: The program finished or failed (:attr:`CellState.end`); the cell task drains
    #: its callbacks and commits its writes.
    ENDING = "ending"
    #: Someone asked for the program to stop; ``Terminated`` is on its way.
    TERMINATING = "terminating"
    #: The completion is settled and buffered until someone observes or claims it.
    COMPLETED = "completed"
    #: A termination received the buffered completion (natural completion wins).
    CLAIMED = "claimed"
    #: The completion goes to the session's push (``CellHost.on_finished``).
    PUSHING = "pushing"
    #: Nothing of the cell is left to hand over.
    CLOSED = "closed"


TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.RUNNING: frozenset({Phase.ENDING, Phase.TERMINATING, Phase.CLOSED}),
    Phase.ENDING: frozenset({Phase.COMPLETED, Phase.TERMINATING, Phase.CLOSED}),
    Phase.TERMINATING: frozenset({Phase.CLOSED}),
    Phase.COMPLETED: frozenset({Phase.CLAIMED, Phase.PUSHING, Phase.CLOSED}),
    Phase.CLAIMED: frozenset(),
    Phase.PUSHING: frozenset({Phase.CLOSED}),
    Phase.CLOSED: frozenset(),
}
"""The only moves :meth:`CellState.move` makes (a move to the same phase is none)."""


@attrs.frozen
class Failure:
    """The program failed: the engine failed, or a limit was broken. ``cut`` says the
    cell saw the limit broken at this point of the message stream, so nothing the
    program produced after it is kept (otherwise what it had queued still is)."""

    message: str
    cut: bool = False


ProgramEnd = Finished | Failure
"""How a program ended: it finished (with its error, if any, and writes), or failed."""


class Seen(enum.Enum):
    """What the cell's observers have been given so far (it only moves forward, except
    that an initial observer nobody waited for is as if it never was)."""

    UNOBSERVED = "unobserved"
    OBSERVED = "observed"
    #: An observer got a ``Yielded`` or ``Pending``: its caller was told the program
    #: is still running, so a session that pushes pushes the completion.
    HANDED_BACK = "handed back"


class CellState:
    """A cell's phase, and how its program ended once it did."""

    def __init__(self) -> None:
        self._phase = Phase.RUNNING
        self._changed = trio.Event()
        #: How the program ended, once it did (recorded once; the first end wins).
        self.end: ProgramEnd | None = None

    @property
    def phase(self) -> Phase:
        return self._phase

    def move(self, phase: Phase) -> None:
        """Go to ``phase`` (one of :data:`TRANSITIONS`), waking whoever waits for it."""
        if phase is self._phase:
            return
        assert phase in TRANSITIONS[self._phase], f"cell phase {self._phase} -> {phase}"
        self._phase = phase
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, phase: Phase) -> None:
        while self._phase is not phase:
            await self._changed.wait()

    def record_end(self, end: ProgramEnd) -> bool:
        """The program ended (``end``): a live program moves to ``ENDING``. False,
        changing nothing, if an end was already recorded."""
        if self.end is not None:
            return False
        self.end = end
        if self._phase is Phase.RUNNING:
            self.move(Phase.ENDING)
        return True

    @property
    def terminating(self) -> bool:
        """Someone asked for the program to stop (``terminate()``, a shutdown)."""
        return self._phase is Phase.TERMINATING

    @property
    def program_live(self) -> bool:
        """The program runs (or waits on its tool calls and timers): it has neither
        finished nor failed, and nobody terminates it."""
        return self._phase is Phase.RUNNING

    @property
    def program_ending(self) -> bool:
        """The program runs or has just ended, and nobody terminates it: what it
        produces still goes to observers as it comes."""
        return self._phase in (Phase.RUNNING, Phase.ENDING)

    @property
    def keeps_output(self) -> bool:
        """Output is kept until the outcome is settled, including what a failed or
        terminated program had queued and the isolate hands over late; never past a
        broken limit (:attr:`Failure.cut`)."""
        if isinstance(self.end, Failure) and self.end.cut:
            return False
        return self._phase in (Phase.RUNNING, Phase.ENDING, Phase.TERMINATING)

    @property
    def observable(self) -> bool:
        """A new observation can attach: the program is not being terminated and its
        completion has not gone anywhere yet."""
        return self._phase in (Phase.RUNNING, Phase.ENDING, Phase.COMPLETED)

    @property
    def result_pending(self) -> bool:
        """The program's final result has yet to reach anyone: it runs, it is being
        terminated, or it finished and nobody has observed that yet."""
        return self._phase in (Phase.RUNNING, Phase.ENDING, Phase.TERMINATING, Phase.COMPLETED)
