"""Blocking reads of the SQLite store: woken at once from this process, within
:data:`POLL_INTERVAL` from another.

A ``read_events`` or ``receive_commands`` with a timeout waits until what it reads
exists. An append in this process wakes the readers of its key (a cell's events, a
server's commands) through a :class:`trio.Event` at once. SQLite tells other processes
nothing, so while any read waits one thread of the store's (:meth:`Watch.run`) reads
the file's change counter (``PRAGMA data_version``, on a connection of its own) every
:data:`POLL_INTERVAL`, and wakes every reader when another process has committed
anything: the readers then read again. One cheap check for all the readers of a
process, rather than each reader querying again and again; and in a thread of its own
that sleeps between checks, so that trio's thread is woken only when something changed
(a trio task checking 40 times a second cost an idle server 2.8 % of a core on the
development machine, the thread 0.6 %).
"""

from __future__ import annotations

import sqlite3
import threading
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
(a counter read from shared memory, 40 a second, in a thread of its own) only while
some read waits; a server's command loop always waits, so a server running on a SQLite
store checks 40 times a second."""

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
        self._someone = threading.Event()  # set while a read waits: the thread polls
        self._stopping = threading.Event()

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
                if not self._keys and not self._stopping.is_set():
                    self._someone.clear()  # (never once stopping: the thread must see it)

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

    async def run(self, connect: Callable[[], sqlite3.Connection]) -> None:
        """Watch the file in a thread of its own, on a connection of its own (made by
        ``connect``), until :meth:`stop` (call it before cancelling this)."""
        token = trio.lowlevel.current_trio_token()
        limiter = trio.CapacityLimiter(1)  # (not one of the default limiter's tokens)
        await trio.to_thread.run_sync(self._poll, connect, token, limiter=limiter)

    def stop(self) -> None:
        """End :meth:`run`'s thread (at once: it waits on these events)."""
        self._stopping.set()
        self._someone.set()

    def _poll(
        self, connect: Callable[[], sqlite3.Connection], token: trio.lowlevel.TrioToken
    ) -> None:
        connection: sqlite3.Connection | None = None
        seen: int | None = None
        try:
            while True:
                self._someone.wait()
                if self._stopping.wait(POLL_INTERVAL):
                    return
                try:
                    connection = connection or connect()
                    now = int(connection.execute("PRAGMA data_version").fetchone()[0])
                except sqlite3.Error:
                    now = None  # every reader reads again, and meets the failure itself
                if now is None or now != seen:
                    seen = now
                    token.run_sync_soon(self.wake)
        except trio.RunFinishedError:
            return
        finally:
            if connection is not None:
                connection.close()
