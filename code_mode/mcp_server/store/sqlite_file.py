"""The SQLite store's file: its schema, its connections, and its faults.

:mod:`.sqlite_store` keeps everything in one SQLite file that several server processes
on one machine open at once. This module makes such a file usable: it checks the path
(a folder, a file that cannot be written, a file of another application are one-line
:class:`StoreConfigError`\\ s), lends connections to worker threads
(:class:`Connections`), turns on WAL (readers never wait for the writer, and a
commit is one append to the ``-wal`` file, so a process killed at any point loses no
committed transaction), creates the tables, and turns SQLite's errors into the store's
(:func:`unavailable`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, TypeVar

import trio

from .interface import StoreConfigError, StoreUnavailable

__all__ = [
    "APPLICATION_ID",
    "DROP_CELL",
    "DROP_EXPIRED",
    "SCHEMA_VERSION",
    "Connections",
    "check_path",
    "connect",
    "prepare",
    "transaction",
    "unavailable",
]

APPLICATION_ID: Final = 0x436D_5374  # "CmSt": PRAGMA application_id of a store's file
"""Marks the file as a code mode store (``PRAGMA application_id``), so that a SQLite
file of another application named by mistake is refused rather than written into."""

SCHEMA_VERSION: Final = 1
"""``PRAGMA user_version`` of the tables below; a file of another version is refused."""

T = TypeVar("T")

_WAL_LIMIT: Final = 64 * 1024 * 1024  # bytes the -wal file is cut back to after a checkpoint

# Times are the store clock's seconds (wall clock: several processes compare them);
# ``expires`` NULL: never (no session_ttl). A cell counts its journal entries and events
# (the next index and offset) and their UTF-8 bytes, for the per-cell bound.
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS sessions (
    handle TEXT PRIMARY KEY,
    expires REAL
);
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires);
CREATE TABLE IF NOT EXISTS session_values (
    session TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session, key)
);
CREATE TABLE IF NOT EXISTS cells (
    handle TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    server TEXT,
    cursor INTEGER NOT NULL DEFAULT 0,
    expires REAL,
    journal INTEGER NOT NULL DEFAULT 0,
    journal_bytes INTEGER NOT NULL DEFAULT 0,
    events INTEGER NOT NULL DEFAULT 0,
    event_bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS cells_expiry ON cells (expires);
CREATE INDEX IF NOT EXISTS cells_server ON cells (server);
CREATE TABLE IF NOT EXISTS journal (
    cell TEXT NOT NULL,
    idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (cell, idx)
);
CREATE TABLE IF NOT EXISTS events (
    cell TEXT NOT NULL,
    offset INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (cell, offset)
);
CREATE TABLE IF NOT EXISTS servers (
    name TEXT PRIMARY KEY,
    alive_until REAL NOT NULL,
    pid INTEGER,
    machine TEXT,
    started TEXT
);
CREATE TABLE IF NOT EXISTS commands (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    server TEXT NOT NULL,
    cell TEXT NOT NULL,
    command TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS commands_server ON commands (server, id);
CREATE INDEX IF NOT EXISTS commands_cell ON commands (cell);
"""

_CELL_TABLES: Final = (("journal", "cell"), ("events", "cell"), ("commands", "cell"))

DROP_CELL: Final = tuple(
    f"DELETE FROM {table} WHERE {column} = ?"
    for table, column in (*_CELL_TABLES, ("cells", "handle"))
)
"""Statements that forget one cell (its handle, as each one's parameter)."""

DROP_EXPIRED: Final = (
    "DELETE FROM session_values WHERE session IN"
    " (SELECT handle FROM sessions WHERE expires <= :now)",
    "DELETE FROM sessions WHERE expires <= :now",
    *(
        f"DELETE FROM {table} WHERE {column} IN (SELECT handle FROM cells WHERE expires <= :now)"
        for table, column in _CELL_TABLES
    ),
    "DELETE FROM cells WHERE expires <= :now",
)
"""Statements that delete what expired by ``:now`` (children before their parents)."""


def check_path(path: Path, name: str) -> None:
    """Make ``path`` a file this process can write (its missing folders are created,
    readable by their owner only; so is a new file, which holds stored values), or
    raise :class:`StoreConfigError` saying why not, in one line. Blocking: call it in
    a thread."""
    if path.is_dir():
        raise StoreConfigError(f"the store {name} is a folder: name a file in it")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise StoreConfigError(f"the store {name}: {path.parent} is not a folder") from None
    except OSError as error:
        raise StoreConfigError(
            f"the store {name}: cannot create its folder: {_why(error)}"
        ) from None
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as error:
        raise StoreConfigError(f"the store {name} cannot be written: {_why(error)}") from None
    if not os.access(path.parent, os.W_OK):
        # SQLite creates its -wal and -shm files beside the database.
        raise StoreConfigError(f"the store {name}: its folder {path.parent} cannot be written")


class Connections:
    """Connections to the file, each lent to one worker thread at a time; at most
    ``size`` threads at once. Closing waits for every operation to finish."""

    def __init__(self, opener: Callable[[], sqlite3.Connection], size: int) -> None:
        self._open = opener
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._limiter = trio.CapacityLimiter(size)

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await trio.to_thread.run_sync(self._lend, work, limiter=self._limiter)

    def _lend(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            connection = self._open()
        try:
            return work(connection)
        finally:
            with self._lock:
                self._idle.append(connection)

    async def close(self) -> None:
        with trio.CancelScope(shield=True):
            for _ in range(int(self._limiter.total_tokens)):  # every operation has ended
                await self._limiter.acquire_on_behalf_of(object())
            with self._lock:
                idle, self._idle = self._idle, []
            await trio.to_thread.run_sync(_close_all, idle)


def _close_all(connections: list[sqlite3.Connection]) -> None:
    for connection in connections:
        connection.close()


def connect(path: Path, *, busy_timeout: float, max_bytes: int | None) -> sqlite3.Connection:
    """A connection to the store's file, usable from any one thread at a time, in
    autocommit mode (each operation opens its own transaction with
    :func:`transaction`). ``busy_timeout``: seconds a statement waits for another
    process's write lock before the store is reported unavailable. ``max_bytes``: the
    file's cap (``PRAGMA max_page_count``): past it, writes fail with "full"."""
    connection = sqlite3.connect(  # (timeout: SQLite's busy timeout)
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        # NORMAL: a commit is durable once in the -wal file, against any process death
        # (the OS writes it out); only a power loss may lose the last commits, never
        # the file's consistency.
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT}")
        if max_bytes is not None:
            page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
            connection.execute(f"PRAGMA max_page_count = {max(1, max_bytes // page_size)}")
    except BaseException:
        connection.close()
        raise
    return connection


def prepare(connection: sqlite3.Connection, name: str) -> None:
    """Turn on WAL and create the tables, once, whichever process comes first; refuse
    a file of another application or another version of the tables."""
    with transaction(connection):
        application = int(connection.execute("PRAGMA application_id").fetchone()[0])
        version = int(connection.execute("PRAGMA user_version").fetchone()[0])
        tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if application not in (0, APPLICATION_ID) or (application == 0 and tables):
        raise StoreConfigError(f"the store {name} is a SQLite file of another application")
    if application == APPLICATION_ID and version != SCHEMA_VERSION:
        raise StoreConfigError(
            f"the store {name} has tables of version {version}; this code mode "
            f"reads version {SCHEMA_VERSION}"
        )
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StoreUnavailable(f"the store {name} cannot use WAL (journal mode {mode})")
    if application == 0:
        with transaction(connection, write=True):
            for statement in _SCHEMA.split(";"):
                if statement.strip():  # (executescript would commit first)
                    connection.execute(statement)
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection, *, write: bool = False) -> Iterator[None]:
    """One transaction: ``BEGIN IMMEDIATE`` for one that writes (the write lock is
    taken first, so a read-modify-write such as a claim is atomic across processes,
    and never fails half-way on another writer's snapshot), a plain ``BEGIN`` for
    one that only reads (a consistent snapshot of several tables)."""
    connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
    except BaseException:
        connection.rollback()
        raise
    connection.execute("COMMIT")


def unavailable(name: str, error: sqlite3.Error) -> StoreUnavailable:
    """SQLite's error as the store's, in one line naming the store."""
    code = getattr(error, "sqlite_errorname", "")
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreUnavailable(
            f"the store {name} is locked by another process (waited for it, then gave up)"
        )
    if code.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        return StoreUnavailable(f"the store {name} is not a SQLite database, or is corrupt")
    if code.startswith("SQLITE_FULL"):
        return StoreUnavailable(f"the store {name} is full (its max_bytes, or the disk)")
    detail = " ".join(str(error).split()) or type(error).__name__
    return StoreUnavailable(f"the store {name} failed: {detail}")


def _why(error: OSError) -> str:
    what = (error.strerror or str(error)).lower()
    return f"{what}: {error.filename}" if error.filename else what
