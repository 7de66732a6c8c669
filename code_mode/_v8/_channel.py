"""The layout of the runtime's outgoing buffer (the *channel*), defined once.

The JavaScript runtime writes each batch of messages to the host as UTF-16 into a
private ``ArrayBuffer`` and rings a native doorbell; :class:`~._native.NativeIsolate`
reads the buffer inside that call. Both sides need the same layout: Python reads it
from here, and the prelude gets it as constants (:func:`js_constants`, pasted ahead of
``js/channel.js`` by :mod:`._prelude`).

The buffer is a header of int32 slots, then up to :data:`CHUNK_UNITS` UTF-16 code units.
"""

from __future__ import annotations

from typing import Final

#: UTF-16 code units per doorbell (a longer batch rings ``more`` for each chunk).
CHUNK_UNITS: Final = 32768

#: Code units in this chunk.
COUNT: Final = 0
#: The chunk's index within its batch: 0 starts a new batch, so a batch cut short by
#: termination is dropped by the host.
INDEX: Final = 1
#: 1 while the queue may hold a message other than ``started`` (something a drain would
#: hand over); read by the host when an evaluation ends. May say 1 for nothing, never 0
#: for something.
QUEUED_FLAG: Final = 2
#: 1 when the batch being written holds only output (and ``started``): the host may keep
#: it back and hand it over with the next batch.
DEFER: Final = 3
#: The header's int32 slots.
HEADER_SLOTS: Final = 4
#: Where the UTF-16 units start.
UNITS_OFFSET: Final = 4 * HEADER_SLOTS


def byte_offset(slot: int) -> int:
    """Where header slot ``slot`` lies in the buffer."""
    return 4 * slot


def js_constants() -> str:
    """The layout as the prelude's constants (``RT_CHUNK``, ``RT_COUNT``, ...)."""
    return "\n".join(
        f"const {name} = {value};"
        for name, value in (
            ("RT_CHUNK", CHUNK_UNITS),
            ("RT_COUNT", COUNT),
            ("RT_INDEX", INDEX),
            ("RT_QUEUED", QUEUED_FLAG),
            ("RT_DEFER", DEFER),
            ("RT_HEADER_SLOTS", HEADER_SLOTS),
            ("RT_UNITS_OFFSET", UNITS_OFFSET),
        )
    )
