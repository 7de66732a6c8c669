"""The values both halves share: an isolate's limits, how an evaluation ended, its tags.

They cross the process boundary (:mod:`._wire`) and the thread boundary (``thread``
mode) under these names and no others. Plain frozen dataclasses: this package imports
neither attrs nor trio, so a worker process starts without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal


@dataclass(frozen=True, slots=True)
class IsolateLimits:
    """What one isolate may use: ``memory_limit_bytes`` of V8 heap and ArrayBuffer
    memory (``RuntimeConfig.memory_limit_bytes``), and ``max_message_chars`` UTF-16
    characters in one batch of messages to the host (``RuntimeConfig``'s message
    limit). One value from the cell's configuration down to V8, under the same names
    on the wire."""

    memory_limit_bytes: int
    max_message_chars: int


class IsolateUnavailable(Exception):
    """No isolate could be had: V8 could not create or prepare one, its worker process
    died, or its engine is closed."""


Outcome = Literal["ok", "error", "oom", "terminated"]
"""How an evaluation posted to an isolate ended."""

TASK_OK: Final = "ok"
TASK_ERROR: Final = "error"
TASK_OOM: Final = "oom"
TASK_TERMINATED: Final = "terminated"
#: Every outcome, in the order of their codes on the wire.
OUTCOMES: Final[tuple[Outcome, ...]] = (TASK_OK, TASK_ERROR, TASK_OOM, TASK_TERMINATED)

#: The ``detail`` of an ``ok`` or ``terminated`` report when the runtime's queue may
#: still hold output (only a drain would hand it over); ``""`` when it holds none.
QUEUED: Final = "queued"

#: An empty batch of commands: the idleness probe (see ``NativeIsolate.post``).
PROBE: Final = "[]"

#: The last call on an interrupted isolate: flush only the output it had queued.
DRAIN: Final = '[{"t":"drain"}]'

#: The first tag of a program's evaluations; the tags below are the isolate's own
#: (set-up, and the probes that lower a warm isolate's heap limit).
FIRST_PROGRAM_TAG: Final = 1024
