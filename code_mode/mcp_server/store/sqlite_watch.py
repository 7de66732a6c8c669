"""Blocking reads of the SQLite store: woken at once from this process, within
:data:`POLL_INTERVAL` from another.

A ``read_events`` or ``receive_commands`` with a timeout waits until what it reads
exists. An append in this process wakes the readers of its key (a cell's events, a
server's commands) through a :class:`trio.Event` at once. SQLite tells other processes
nothing, so while any read waits one task (:meth:`Watch.run`) reads the file's change
counter (``PRAGMA data_version``, on a connection of its own) every
:data:`POLL_INTERVAL`, and wakes every reader when another process has committed
anything: the readers then read again. One cheap check for all the readers of a
process, rather than each reader querying again and again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Final, TypeVar

import attrs
import trio

__all__ = ["POLL_INTERVAL", "Watch"]

POLL_INTERVAL: Final = 0.025
"""Seconds between two checks for another process's commits while a read waits (25 ms).
SQLite has no notification between processes, so a ``wait`` served here sees output
that another server appended within this much: well under the 250 ms at which servers
append a running cell's output (``stateless_cells.PUMP_PERIOD``), for one cheap check
(a thread hop and a counter read from shared memory, 40 a second) only while some read
waits; a server's command loop always waits, so a server running on a SQLite store
checks 40 times a second."""

T = TypeVar("T")


@attrs.define
class _Waiting:
    """The readers of one key in this process, and the event the next change sets."""

    changed: trio.Event = attrs.Factory(trio.Event)
    readers: int = 0


class Watch:
    """This process's blocked reads, by key, and what wakes them."""

    def __init__(self) -> None:
        self._keys: dict[str, _Waiting] = {}
        self._someone = trio.Event()

    @contextmanager
    def _waiting(self, key: str) -> Iterator[_Waiting]:
        entry = self._keys.setdefault(key, _Waiting())
        entry.readers += 1
        self._someone.set()
        try:
            yield entry
        finally:
            entry.readers -= 1
            if not entry.readers:
                del self._keys[key]

    def wake(self, *keys: str) -> None:
        """Wake the readers of ``keys`` (of every key, with none)."""
        for key in keys or list(self._keys):
            entry = self._keys.get(key)
            if entry is not None:
                changed, entry.changed = entry.changed, trio.Event()
                changed.set()

    async def until(
        self, key: str, read: Callable[[], Awaitable[T]], ready: Callable[[T], bool], timeout: float
    ) -> T:
        """``read()`` until ``ready`` of what it read, or for ``timeout`` seconds (then
        what the last read found); once without waiting when ``timeout`` is 0."""
        if timeout <= 0:
            return await read()
        with self._waiting(key) as waiting:
            deadline = trio.current_time() + timeout
            while True:
                changed = waiting.changed  # taken before the read: a later change sets it
                found = await read()
                if ready(found) or trio.current_time() >= deadline:
                    return found
                with trio.move_on_at(deadline):
                    await changed.wait()

    async def run(self, version: Callable[[], Awaitable[int | None]]) -> None:
        """While a read waits, wake every reader when ``version()`` (the file's change
        counter; ``None``: it could not be read) changes. Runs until cancelled."""
        seen: int | None = None
        while True:
            while not self._keys:
                self._someone = trio.Event()
                await self._someone.wait()
            now = await version()
            if now is None or now != seen:
                self.wake()  # (also on a failure: the readers meet it themselves)
            seen = now
            await trio.sleep(POLL_INTERVAL)
