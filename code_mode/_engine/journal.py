"""A cell's journal: what entered its isolate, so a new isolate can replay the program.

A program's JavaScript is a function of what the host hands it, in order: the start
command (its source, its tools, the stored values it can load, a seed for
``Math.random``), then each batch of commands (tool results, timer firings). The
isolate runs each batch as one task and drains its microtasks before the next, so the
same batches in the same order make the same program state, whatever the timing. The
only other inputs are the clock (``Date.now()``, ``new Date()``, ``Temporal.Now``),
whose readings the runtime reports (``{"t":"clock"}``) and a replay hands back in the
same order.

So the journal keeps, on the trio side, outside any worker:

* every batch posted to the isolate, as the very text that was posted;
* the clock readings the program made;
* a fingerprint of each event the isolate reported, in order.

When the isolate's worker process dies, :class:`~code_mode._engine.isolate.Isolate`
builds a new isolate elsewhere and posts the recorded batches again (the clock
readings travel with the start command). The events the new isolate reports are
checked against the fingerprints and dropped until the replay has caught up (the host
already acted on them: tools ran, output was handed on); from then on they are new.
An event that does not match is a *divergence* (a program whose behaviour depends on
something the journal does not hold, such as garbage-collection timing through
``WeakRef`` or ``FinalizationRegistry``): the cell then fails with a clear message.

The journal is bounded (``RuntimeConfig.max_journal_chars``): a cell whose inputs
pass the bound stops recording, and its worker's death then ends it as before.

A journal may also be *mirrored* (:class:`~.resume.JournalMirror`): each batch and
clock reading copied, as it is recorded, to a store outside the host, so that another
host can resume the cell when this one dies (:mod:`.resume`).
"""

from __future__ import annotations

import json
from array import array
from typing import TYPE_CHECKING

from ._bridge import EngineEvent, Finished, Output, TimerCleared, TimerSet, ToolCallRequested

if TYPE_CHECKING:
    from .._resumption import JournalMirror, Resumption

__all__ = ["Journal", "fingerprint"]


def fingerprint(event: EngineEvent) -> int:
    """A number that changes when the event would mean something else to the host.

    Tool calls are compared by id and tool (not by input, which may be megabytes:
    hashing it would cost the host what decoding it did); output by its item (a
    replay that prints different values diverged); the rest by kind and ids."""
    if isinstance(event, Output):
        return hash((Output, event.item))
    if isinstance(event, ToolCallRequested):
        return hash((ToolCallRequested, event.id, event.ident))
    if isinstance(event, TimerSet):
        return hash((TimerSet, event.id, event.delay))
    if isinstance(event, TimerCleared):
        return hash((TimerCleared, event.id))
    if isinstance(event, Finished):
        return hash((Finished, event.error_text))
    return hash(type(event))


class Journal:
    """What entered one isolate, and what it reported (see the module)."""

    __slots__ = (
        "_clock",
        "_limit",
        "_position",
        "_prints",
        "batches",
        "chars",
        "mirror",
        "usable",
    )

    def __init__(self, limit_chars: int, mirror: JournalMirror | None = None) -> None:
        self._limit = limit_chars
        #: Where each batch and clock reading is copied as it is recorded (see resume.py).
        self.mirror = mirror
        #: Every batch posted to the isolate, in order (the start command's first).
        self.batches: list[str] = []
        self._clock: list[float] = []
        self._prints = array("q")
        #: Characters recorded (batches; 24 per clock reading, 8 per event).
        self.chars = 0
        #: False once the journal passed its limit: the cell cannot be replayed.
        self.usable = limit_chars > 0
        if mirror is not None and not self.usable:
            mirror.record("unusable", "")
        #: Events of the replay checked so far (None: not replaying).
        self._position: int | None = None

    # -- recording -------------------------------------------------------------------

    def _grow(self, chars: int) -> bool:
        self.chars += chars
        if self.chars > self._limit:
            self.usable = False
            self.batches = []
            self._clock = []
            self._prints = array("q")
            if self.mirror is not None:
                self.mirror.record("unusable", "")
        return self.usable

    def posted(self, batch: str) -> None:
        """``batch`` went to the isolate."""
        if self.usable and self._grow(len(batch)):
            self.batches.append(batch)
            if self.mirror is not None:
                self.mirror.record("batch", batch)

    def clock(self, values: tuple[float, ...]) -> None:
        """The program read the clock (live, not from a replay)."""
        if self.usable and self._grow(24 * len(values)):
            self._clock.extend(values)
            if self.mirror is not None:
                self.mirror.record("clock", json.dumps(values))

    def restore(self, resumption: Resumption) -> None:
        """Start from what another host recorded (already mirrored: not copied again)."""
        self.batches = list(resumption.batches)
        self._clock = list(resumption.clock)
        self._grow(sum(map(len, self.batches)) + 24 * len(self._clock))

    @property
    def clock_readings(self) -> list[float]:
        return self._clock

    @property
    def events(self) -> int:
        """Events the host has acted on."""
        return len(self._prints)

    # -- replaying -------------------------------------------------------------------

    @property
    def replaying(self) -> bool:
        return self._position is not None

    def begin_replay(self) -> None:
        """A new isolate is about to get the recorded batches: its events are checked
        against those recorded until it has caught up."""
        self._position = 0 if self._prints else None

    def replayed(self, event: EngineEvent) -> bool | None:
        """Where the replay is: True for an event already acted on (drop it), None for
        a new one (act on it, and it is recorded), False for a divergence."""
        position = self._position
        if position is None:
            self.seen(event)
            return None
        if self._prints[position] != fingerprint(event):
            return False
        position += 1
        self._position = position if position < len(self._prints) else None
        return True

    def seen(self, event: EngineEvent) -> None:
        """The host acts on ``event`` (live)."""
        if self.usable and self._grow(8):
            self._prints.append(fingerprint(event))
