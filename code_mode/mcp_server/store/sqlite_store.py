"""The embedded shared store: sessions, cells, journals, events and commands in one
SQLite file (``sqlite:///path``), shared by the server processes of one machine.

What it is for: several servers on one machine (behind a balancer, or restarted one
after another) share their state without a Redis, and a server that exits, or is
killed, loses nothing: every operation is one committed transaction in a WAL file, and
another server claims its cells and resumes them from their journals. Redis remains
the store of servers on several machines (a SQLite file on a network filesystem is not
safe to share).

How it keeps the :class:`~.interface.Store` contract:

* **Never on the trio thread.** Each operation runs in a worker thread
  (:func:`trio.to_thread.run_sync`) on one of a few connections, as one transaction;
  one that writes takes the write lock first (``BEGIN IMMEDIATE``), so a
  read-modify-write (a claim of a dead server's cells) is atomic across processes, and
  writers of this process queue on a :class:`trio.Lock` rather than in SQLite's busy
  handler. A cancelled operation finishes its transaction (a thread cannot be
  stopped; none takes longer than the busy timeout), so no thread outlives the store.
* **Blocking reads** (:mod:`.sqlite_watch`) are woken at once by an append in this
  process, and within :data:`POLL_INTERVAL` (25 ms) by another process's, seen by a
  thread of the store's that watches the file; a cancel scope ends them at once.
* **Expiry.** Rows carry their expiry time (``session_ttl`` after their last write);
  an expired row is absent to every operation at once, and is deleted by the sweep
  that creating a session or a cell runs every :data:`SWEEP_PERIOD`, so the file holds
  what is live plus at most that period's worth of what expired.
* **Bounds.** A cell's journal, and its events, may each hold ``max_cell_bytes``
  (:data:`DEFAULT_MAX_CELL_BYTES`): a journal past it ends with one ``unusable`` entry
  (the cell is then not resumed, as for the runtime's own journal limit), an event past
  it raises :class:`StoreFull` (a cell's end, appended as ``final``, is kept past it, so
  that the cell can still end). ``max_bytes`` caps the whole file.
* **Dead servers.** A heartbeat records the server's process; a server whose process
  is gone from this machine is dead at once (:mod:`.processes`), not after its TTL.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import trio

from .handles import is_handle, new_handle
from .interface import (
    DEFAULT_HEARTBEAT_TTL,
    CellCommand,
    CellRecord,
    Delivered,
    Events,
    JournalEntry,
    JournalKind,
    StoreFull,
    StoreUnavailable,
)
from .processes import Process, is_gone, this_process
from .sqlite_file import (
    DROP_CELL,
    DROP_EXPIRED,
    Connections,
    check_path,
    connect,
    prepare,
    transaction,
    unavailable,
)
from .sqlite_watch import POLL_INTERVAL, Watch
from .url import StoreConfig

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_MAX_CELL_BYTES",
    "POLL_INTERVAL",
    "SWEEP_PERIOD",
    "SqliteStore",
    "open_sqlite_store",
]

SWEEP_PERIOD: Final = 60.0
"""Seconds between two deletions of expired rows (run by whichever operation creates a
session or a cell first after it): the file holds at most this much of what expired."""

DEFAULT_MAX_CELL_BYTES: Final = 256 * 1024 * 1024
"""Bytes (UTF-8) a cell's journal, and its events, may each hold (default 256 MiB):
above the runtime's own journal limit (``RuntimeConfig.max_journal_chars``, 64 Mi), so
that only a runaway cell meets it."""

DEFAULT_BUSY_TIMEOUT: Final = 5.0
"""Seconds an operation waits for another process's write lock before the store is
reported unavailable (default 5, like the Redis store's operation timeout)."""

_CONNECTIONS: Final = 4  # operations at once per process (one writes at a time)
_MAX_EVENTS_READ: Final = 1024  # events one read returns at most, as the Redis store
_RETIRED: Final = -math.inf  # alive_until of a retired server
_T = TypeVar("_T")
_LIVE: Final = "(expires IS NULL OR expires > ?)"
_NOTHING: Final = contextlib.nullcontext()  # (reusable: it holds nothing)


class SqliteStore:
    """A :class:`~.interface.Store` in a SQLite file; made by :func:`open_sqlite_store`.

    ``clock``: the wall clock that expiry and heartbeats are measured by (shared by the
    processes, unlike trio's); tests pass their own. ``here``: this process, as its
    heartbeats record it (:func:`.processes.this_process`)."""

    def __init__(
        self,
        config: StoreConfig,
        *,
        session_ttl: float | None,
        heartbeat_ttl: float,
        busy_timeout: float,
        clock: Callable[[], float],
        here: Process | None,
    ) -> None:
        self._config = config
        self._ttl = session_ttl
        self._heartbeat_ttl = heartbeat_ttl
        self._clock = clock
        self._max_cell = config.max_cell_bytes or DEFAULT_MAX_CELL_BYTES
        self._here = here

        def opener() -> sqlite3.Connection:
            path = Path(config.path)
            return connect(path, busy_timeout=busy_timeout, max_bytes=config.max_bytes)

        self._open = opener
        self._pool = Connections(opener, _CONNECTIONS)
        self._writing = trio.Lock()
        self._watch = Watch()
        self._next_sweep = -math.inf
        self._closed = False

    @property
    def name(self) -> str:
        return self._config.display

    @property
    def heartbeat_ttl(self) -> float:
        return self._heartbeat_ttl

    def __repr__(self) -> str:
        return f"SqliteStore({self.name!r})"

    async def _do(self, work: Callable[[sqlite3.Connection, float], _T], *, write: bool) -> _T:
        """``work(connection, now)`` in a worker thread, as one transaction."""

        def run(connection: sqlite3.Connection) -> _T:
            with transaction(connection, write=write):
                return work(connection, self._clock())

        try:
            async with self._writing if write else _NOTHING:
                # Checked with no checkpoint before the pool queues the operation: one
                # that passes is queued ahead of the close, which waits for it.
                if self._closed:
                    raise StoreUnavailable(f"the store {self.name} is closed")
                return await self._pool.run(run)
        except sqlite3.Error as error:
            raise unavailable(self.name, error) from None

    def _expiry(self, now: float) -> float | None:
        return now + self._ttl if self._ttl is not None else None

    # --- sessions
    def _touch(self, connection: sqlite3.Connection, session: str, now: float) -> bool:
        sql = f"UPDATE sessions SET expires = ? WHERE handle = ? AND {_LIVE}"
        return connection.execute(sql, (self._expiry(now), session, now)).rowcount == 1

    async def new_session(self) -> str:
        handle = new_handle()

        def work(connection: sqlite3.Connection, now: float) -> None:
            self._sweep(connection, now)
            sql = "INSERT INTO sessions (handle, expires) VALUES (?, ?)"
            connection.execute(sql, (handle, self._expiry(now)))

        await self._do(work, write=True)
        return handle

    async def touch_session(self, session: str) -> bool:
        if not is_handle(session):
            return False
        return await self._do(lambda c, now: self._touch(c, session, now), write=True)

    async def load_values(self, session: str) -> dict[str, str] | None:
        if not is_handle(session):
            return None

        def work(connection: sqlite3.Connection, now: float) -> dict[str, str] | None:
            if not self._touch(connection, session, now):
                return None
            sql = "SELECT key, value FROM session_values WHERE session = ?"
            return dict(connection.execute(sql, (session,)).fetchall())

        return await self._do(work, write=True)

    async def save_values(self, session: str, changes: dict[str, str | None]) -> bool:
        if not is_handle(session):
            return False

        def work(connection: sqlite3.Connection, now: float) -> bool:
            if not self._touch(connection, session, now):
                return False
            gone = [(session, key) for key, value in changes.items() if value is None]
            kept = [(session, key, value) for key, value in changes.items() if value is not None]
            connection.executemany("DELETE FROM session_values WHERE session = ? AND key = ?", gone)
            connection.executemany("INSERT OR REPLACE INTO session_values VALUES (?, ?, ?)", kept)
            return True

        return await self._do(work, write=True)

    async def drop_session(self, session: str) -> None:
        if not is_handle(session):
            return

        def work(connection: sqlite3.Connection, now: float) -> None:
            connection.execute("DELETE FROM session_values WHERE session = ?", (session,))
            connection.execute("DELETE FROM sessions WHERE handle = ?", (session,))

        await self._do(work, write=True)

    # --- the cell registry
    def _server_row(self, now: float) -> tuple[float, int | None, str | None, str | None]:
        here = self._here
        alive_until = now + self._heartbeat_ttl
        if here is None:
            return alive_until, None, None, None
        return alive_until, here.pid, here.machine, here.started

    async def heartbeat(self, server: str) -> None:
        def work(connection: sqlite3.Connection, now: float) -> None:
            connection.execute(
                "INSERT INTO servers (name, alive_until, pid, machine, started)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET"
                " alive_until = excluded.alive_until, pid = excluded.pid,"
                " machine = excluded.machine, started = excluded.started",
                (server, *self._server_row(now)),
            )

        await self._do(work, write=True)

    async def register_cell(self, session: str, server: str) -> str:
        handle = new_handle()

        def work(connection: sqlite3.Connection, now: float) -> None:
            self._sweep(connection, now)
            connection.execute(
                "INSERT INTO cells (handle, session, server, expires) VALUES (?, ?, ?, ?)",
                (handle, session, server, self._expiry(now)),
            )
            self._known_server(connection, server, now)

        await self._do(work, write=True)
        return handle

    def _known_server(self, connection: sqlite3.Connection, server: str, now: float) -> None:
        """``server`` is in the registry (a new one alive for a heartbeat's TTL)."""
        connection.execute(
            "INSERT OR IGNORE INTO servers (name, alive_until, pid, machine, started)"
            " VALUES (?, ?, ?, ?, ?)",
            (server, *self._server_row(now)),
        )

    async def cell(self, cell: str) -> CellRecord | None:
        if not is_handle(cell):
            return None

        def work(connection: sqlite3.Connection, now: float) -> CellRecord | None:
            sql = f"SELECT session, server, cursor FROM cells WHERE handle = ? AND {_LIVE}"
            row = connection.execute(sql, (cell, now)).fetchone()
            return CellRecord(cell, row[0], row[1], row[2]) if row is not None else None

        return await self._do(work, write=False)

    async def _update_cell(self, cell: str, assignments: str, *values: object) -> bool:
        """``UPDATE`` the live cell (its expiry refreshed); whether there was one."""
        if not is_handle(cell):
            return False

        def work(connection: sqlite3.Connection, now: float) -> bool:
            sql = f"UPDATE cells SET {assignments}, expires = ? WHERE handle = ? AND {_LIVE}"
            done = connection.execute(sql, (*values, self._expiry(now), cell, now))
            return done.rowcount == 1

        return await self._do(work, write=True)

    async def set_cursor(self, cell: str, offset: int) -> bool:
        return await self._update_cell(cell, "cursor = ?", max(0, offset))

    async def finish_cell(self, cell: str) -> None:
        await self._update_cell(cell, "server = NULL")

    async def drop_cell(self, cell: str) -> None:
        if not is_handle(cell):
            return

        def work(connection: sqlite3.Connection, now: float) -> None:
            for statement in DROP_CELL:
                connection.execute(statement, (cell,))

        await self._do(work, write=True)
        self._watch.wake(f"e:{cell}")

    async def retire(self, server: str) -> None:
        def work(connection: sqlite3.Connection, now: float) -> None:
            sql = "UPDATE servers SET alive_until = ? WHERE name = ?"
            connection.execute(sql, (_RETIRED, server))

        await self._do(work, write=True)

    def _is_dead(self, row: tuple[Any, ...], now: float) -> bool:
        """Whether the server of ``row`` (alive_until, pid, machine, started) is dead:
        its heartbeat lapsed, or its process is gone from this machine."""
        alive_until, pid, machine, started = row
        if alive_until <= now:
            return True
        return pid is not None and is_gone(Process(pid, machine, started), self._here)

    async def dead_servers(self) -> list[str]:
        def work(connection: sqlite3.Connection, now: float) -> list[str]:
            sql = "SELECT name, alive_until, pid, machine, started FROM servers ORDER BY name"
            rows = connection.execute(sql).fetchall()
            return [row[0] for row in rows if self._is_dead(row[1:], now)]

        return await self._do(work, write=False)

    async def claim_cells(self, dead: str, claimant: str) -> list[CellRecord]:
        if dead == claimant:
            return []

        def work(connection: sqlite3.Connection, now: float) -> tuple[list[CellRecord], int]:
            sql = "SELECT alive_until, pid, machine, started FROM servers WHERE name = ?"
            row = connection.execute(sql, (dead,)).fetchone()
            if row is None or not self._is_dead(row, now):
                return [], 0
            connection.execute("DELETE FROM servers WHERE name = ?", (dead,))
            self._known_server(connection, claimant, now)
            live = f"server = ? AND {_LIVE}"
            found = connection.execute(
                f"SELECT handle, session FROM cells WHERE {live} ORDER BY handle", (dead, now)
            ).fetchall()
            connection.execute(f"UPDATE cells SET server = ? WHERE {live}", (claimant, dead, now))
            sql = "UPDATE commands SET server = ? WHERE server = ?"
            moved = connection.execute(sql, (claimant, dead)).rowcount
            return [CellRecord(handle, session, claimant) for handle, session in found], moved

        claimed, moved = await self._do(work, write=True)
        if moved:
            self._watch.wake(f"q:{claimant}")
        return claimed

    # --- journals
    async def append_journal(self, cell: str, entry: JournalEntry) -> int | None:
        if not is_handle(cell):
            return None

        def work(connection: sqlite3.Connection, now: float) -> int | None:
            size = _bytes(entry.data) + len(entry.kind)  # (here: off the trio thread)
            sql = f"SELECT journal, journal_bytes FROM cells WHERE handle = ? AND {_LIVE}"
            row = connection.execute(sql, (cell, now)).fetchone()
            if row is None:
                return None
            index, used = row
            if used > self._max_cell:  # full: ends with its `unusable` entry already
                return int(index) - 1
            kind, data = entry.kind, entry.data
            if used + size > self._max_cell:
                kind, data, size_kept = "unusable", "", self._max_cell + 1
            else:
                size_kept = used + size
            sql = "INSERT INTO journal (cell, idx, kind, data) VALUES (?, ?, ?, ?)"
            connection.execute(sql, (cell, index, kind, data))
            connection.execute(
                "UPDATE cells SET journal = ?, journal_bytes = ?, expires = ? WHERE handle = ?",
                (index + 1, size_kept, self._expiry(now), cell),
            )
            return int(index)

        return await self._do(work, write=True)

    async def read_journal(self, cell: str) -> list[JournalEntry] | None:
        if not is_handle(cell):
            return None

        def work(connection: sqlite3.Connection, now: float) -> list[JournalEntry] | None:
            live = f"SELECT 1 FROM cells WHERE handle = ? AND {_LIVE}"
            if connection.execute(live, (cell, now)).fetchone() is None:
                return None
            sql = "SELECT kind, data FROM journal WHERE cell = ? ORDER BY idx"
            rows = connection.execute(sql, (cell,)).fetchall()
            return [JournalEntry(cast(JournalKind, kind), data) for kind, data in rows]

        return await self._do(work, write=False)

    # --- events
    async def append_event(self, cell: str, event: str, *, final: bool = False) -> int | None:
        if not is_handle(cell):
            return None

        def work(connection: sqlite3.Connection, now: float) -> int | None:
            size = _bytes(event)
            sql = f"SELECT events, event_bytes FROM cells WHERE handle = ? AND {_LIVE}"
            row = connection.execute(sql, (cell, now)).fetchone()
            if row is None:
                return None
            offset, used = row
            if used + size > self._max_cell and not final:  # the end is always kept
                raise StoreFull(
                    f"the store {self.name} keeps at most {self._max_cell} bytes of a "
                    f"cell's output (max_cell_bytes): cell {cell} passed it"
                )
            sql = "INSERT INTO events (cell, offset, event) VALUES (?, ?, ?)"
            connection.execute(sql, (cell, offset, event))
            connection.execute(
                "UPDATE cells SET events = ?, event_bytes = ?, expires = ? WHERE handle = ?",
                (offset + 1, used + size, self._expiry(now), cell),
            )
            return int(offset)

        offset = await self._do(work, write=True)
        if offset is not None:
            self._watch.wake(f"e:{cell}")
        return offset

    async def read_events(self, cell: str, offset: int, *, timeout: float = 0.0) -> Events | None:
        if not is_handle(cell):
            return None
        offset = max(0, offset)

        def work(connection: sqlite3.Connection, now: float) -> Events | None:
            live = f"SELECT 1 FROM cells WHERE handle = ? AND {_LIVE}"
            if connection.execute(live, (cell, now)).fetchone() is None:
                return None
            sql = "SELECT event FROM events WHERE cell = ? AND offset >= ? ORDER BY offset LIMIT ?"
            rows = connection.execute(sql, (cell, offset, _MAX_EVENTS_READ)).fetchall()
            return Events(tuple(row[0] for row in rows), offset + len(rows))

        async def read() -> Events | None:
            return await self._do(work, write=False)

        def ready(found: Events | None) -> bool:
            return found is None or bool(found.entries)

        return await self._watch.until(f"e:{cell}", read, ready, timeout)

    # --- commands
    async def send_command(self, cell: str, command: CellCommand) -> bool:
        if not is_handle(cell):
            return False

        def work(connection: sqlite3.Connection, now: float) -> str | None:
            sql = f"SELECT server FROM cells WHERE handle = ? AND {_LIVE}"
            row = connection.execute(sql, (cell, now)).fetchone()
            if row is None or row[0] is None:
                return None
            sql = "INSERT INTO commands (server, cell, command) VALUES (?, ?, ?)"
            connection.execute(sql, (row[0], cell, command))
            return str(row[0])

        server = await self._do(work, write=True)
        if server is not None:
            self._watch.wake(f"q:{server}")
        return server is not None

    async def receive_commands(self, server: str, *, timeout: float = 0.0) -> list[Delivered]:
        def queued(connection: sqlite3.Connection, now: float) -> bool:
            sql = "SELECT 1 FROM commands WHERE server = ? LIMIT 1"
            return connection.execute(sql, (server,)).fetchone() is not None

        def take(connection: sqlite3.Connection, now: float) -> list[Delivered]:
            sql = "SELECT id, cell, command FROM commands WHERE server = ? ORDER BY id LIMIT ?"
            rows = connection.execute(sql, (server, _MAX_EVENTS_READ)).fetchall()
            if rows:
                sql = "DELETE FROM commands WHERE server = ? AND id <= ?"
                connection.execute(sql, (server, rows[-1][0]))
            return [Delivered(cell, cast(CellCommand, command)) for _, cell, command in rows]

        async def read() -> list[Delivered]:
            # A read first: the write lock is taken only when there is something to take.
            if not await self._do(queued, write=False):
                return []
            return await self._do(take, write=True)

        return await self._watch.until(f"q:{server}", read, bool, timeout)

    # --- expiry
    def _sweep(self, connection: sqlite3.Connection, now: float) -> None:
        """Delete what expired, at most once per :data:`SWEEP_PERIOD` (in the caller's
        transaction, which writes anyway)."""
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_PERIOD
        for statement in DROP_EXPIRED:
            connection.execute(statement, {"now": now})


def _bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` (what the file keeps), without copying an ASCII one."""
    return len(text) if text.isascii() else len(text.encode())


def _sole(error: BaseException) -> BaseException:
    """The one exception inside nested groups of one (else the group itself)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


@asynccontextmanager
async def open_sqlite_store(
    config: StoreConfig,
    *,
    session_ttl: float | None,
    heartbeat_ttl: float = DEFAULT_HEARTBEAT_TTL,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[SqliteStore]:
    """A :class:`SqliteStore` for the block, once its file is usable: a path that
    cannot be used raises :class:`StoreConfigError`, a file that is locked or not a
    database :class:`StoreUnavailable`, here, at start-up. When the block ends, every
    operation has finished and the connections are closed."""
    await trio.to_thread.run_sync(check_path, Path(config.path), config.display)
    store = SqliteStore(
        config,
        session_ttl=session_ttl,
        heartbeat_ttl=heartbeat_ttl,
        busy_timeout=busy_timeout,
        clock=clock,
        here=await trio.to_thread.run_sync(this_process),
    )
    try:
        try:
            await store._pool.run(lambda connection: prepare(connection, store.name))
        except sqlite3.Error as error:
            raise unavailable(store.name, error) from None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store._watch.run, store._open)
            try:
                yield store
            finally:
                store._watch.stop()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The watcher's nursery wraps the block's own exception: give that back as itself.
        raise _sole(group) from None
    finally:
        store._closed = True
        await store._pool.close()
