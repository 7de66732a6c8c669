"""The store's one interface: what a server keeps outside itself, as a `Store` protocol.

Issue 29's stateless server keeps nothing that another server could not take over:
a session's stored values, which server runs which cell (and whether that server is
still alive), each cell's journal (what it received, so that another server can replay
it) and its output events (so that a ``wait`` landing on another server can read
them), and the commands sent to a cell (terminate, preempt). Everything here is
async and trio-friendly (a blocking read is an ``await`` that a cancel scope ends), and
every value the store holds is text: the server encodes what it keeps, the store only
keeps it. Three implementations: :mod:`.memory_store` (the embedded default: one
process), :mod:`.sqlite_store` (one file, shared by the servers of one machine) and
:mod:`.redis_store` (shared by servers anywhere); the same contract tests run against
all three (``tests/mcp_server/store/``).
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

import attrs

from ..._resumption import MirrorKind

__all__ = [
    "DEFAULT_HEARTBEAT_TTL",
    "CellCommand",
    "CellRecord",
    "Delivered",
    "Events",
    "JournalEntry",
    "JournalKind",
    "Store",
    "StoreConfigError",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
]

DEFAULT_HEARTBEAT_TTL: Final = 15.0
"""Seconds a server's heartbeat keeps it alive (default 15): a server that has not
called :meth:`Store.heartbeat` for this long is dead, and its cells may be claimed. A
server beats several times per period (a third of it, say), so that one slow beat is
not a death."""

JournalKind = Literal[
    MirrorKind,  # what the engine records (code_mode._resumption)
    "source",  # the program and the id of the exec call that ran it (JSON)
    "handed",  # how many output items the exec call handed back
]
"""What one journal entry records (``code_mode.mcp_server.journal_copy``): a server
resuming the cell replays the batches in order (``code_mode._resumption``)."""

CellCommand = Literal["terminate", "preempt"]
"""What may be sent to a cell through the store, to whichever server runs it."""


class StoreError(Exception):
    """The store failed; the message names the store (its URL, never its password)."""


class StoreConfigError(StoreError, ValueError):
    """A store URL that cannot be used; the message says why, in one line."""


class StoreUnavailable(StoreError):
    """The store cannot be reached, refused the credentials, or did not answer in time.

    Raised by any operation while Redis is down (or a SQLite store's file is locked,
    corrupt or full), so that a call fails with a clear message instead of crashing
    the server; the operation may be retried once the store is back."""


class StoreFull(StoreError):
    """The store refuses to keep more of one cell: its output events passed the
    store's bound per cell (the SQLite store's ``max_cell_bytes``). Retrying does not
    help: the server ends the cell, saying so, with an end appended as ``final`` (which
    the bound does not refuse); the cell's record, and what it holds, stay until they
    expire or the end is collected."""


@attrs.frozen
class JournalEntry:
    """One entry of a cell's journal: its kind, and what the server encoded (text)."""

    kind: JournalKind
    data: str


@attrs.frozen
class CellRecord:
    """Where a cell stands in the registry: its session, the server running it
    (``None`` once the cell has finished: its events are kept for a late ``wait``), and
    how far its events have been handed to the client (the offset the next ``wait``
    reads from, whichever server it lands on)."""

    cell: str
    session: str
    server: str | None
    cursor: int = 0


@attrs.frozen
class Delivered:
    """A command sent to a cell, as received by the server running it."""

    cell: str
    command: CellCommand


@attrs.frozen
class Events:
    """Output events read from a cell: ``entries[i]`` is the event at offset
    ``offset + i``; ``next_offset`` is where the next read starts."""

    entries: tuple[str, ...]
    next_offset: int


class Store(Protocol):
    """Sessions, the cell registry, journals, events and commands, outside the server.

    Handles (sessions' and cells') are minted by the store (:func:`.handles.new_handle`:
    unguessable); a handle the store does not know, guessed or foreign, is answered as
    absent (``None``/``False``), which the server turns into ``exec cell <id> not
    found``. Keys expire ``session_ttl`` seconds after their last use (the server's
    ``ServerLimits.session_idle_timeout``): nothing grows without bound. Every
    operation may raise :class:`StoreUnavailable`.
    """

    @property
    def name(self) -> str:
        """The store as the operator wrote it, without any password (for messages)."""
        ...

    @property
    def heartbeat_ttl(self) -> float:
        """Seconds a heartbeat keeps a server alive (a server beats a third of it)."""
        ...

    # --- sessions: stored values per session handle
    async def new_session(self) -> str:
        """Mint a session handle with no stored values."""
        ...

    async def touch_session(self, session: str) -> bool:
        """Keep the session alive (its TTL starts again); ``False``: no such session."""
        ...

    async def load_values(self, session: str) -> dict[str, str] | None:
        """The session's stored values (``None``: no such session); refreshes its TTL."""
        ...

    async def save_values(self, session: str, changes: dict[str, str | None]) -> bool:
        """Set (or, for ``None``, delete) stored values; ``False``: no such session."""
        ...

    async def drop_session(self, session: str) -> None:
        """Forget the session and its values (its cells are dropped by the server)."""
        ...

    # --- the cell registry: which server runs which cell, and which servers live
    async def heartbeat(self, server: str) -> None:
        """``server`` is alive for the next ``heartbeat_ttl`` seconds."""
        ...

    async def register_cell(self, session: str, server: str) -> str:
        """Mint a cell handle for a cell of ``session`` that ``server`` runs."""
        ...

    async def cell(self, cell: str) -> CellRecord | None:
        """The cell's record, ``None`` for a cell the store does not know."""
        ...

    async def set_cursor(self, cell: str, offset: int) -> bool:
        """The client has been given the cell's events before ``offset``; ``False``:
        no such cell."""
        ...

    async def finish_cell(self, cell: str) -> None:
        """The cell finished: no server runs it any more (its journal and events stay
        until they expire or :meth:`drop_cell`, for a ``wait`` that reads them)."""
        ...

    async def drop_cell(self, cell: str) -> None:
        """Forget the cell: record, journal, events and commands (readers are woken)."""
        ...

    async def retire(self, server: str) -> None:
        """``server`` stops now: it counts as dead at once (its heartbeat is dropped),
        so that another server claims its cells without waiting out the TTL."""
        ...

    async def dead_servers(self) -> list[str]:
        """Servers whose heartbeat expired and whose cells nobody has claimed yet."""
        ...

    async def claim_cells(self, dead: str, claimant: str) -> list[CellRecord]:
        """Move the live cells of ``dead`` (and its pending commands) to ``claimant``,
        atomically: of servers claiming the same dead server at once, exactly one gets
        its cells, the others an empty list; so does a claim of a server still alive."""
        ...

    # --- each cell's journal: what it received, append-only, for a replay
    async def append_journal(self, cell: str, entry: JournalEntry) -> int | None:
        """Append ``entry``; its index, or ``None`` for an unknown cell."""
        ...

    async def read_journal(self, cell: str) -> list[JournalEntry] | None:
        """The whole journal in order, ``None`` for an unknown cell."""
        ...

    # --- each cell's output events: appended by its server, read by any
    async def append_event(self, cell: str, event: str, *, final: bool = False) -> int | None:
        """Append ``event``; its offset, or ``None`` for an unknown cell. Wakes readers.
        ``final``: the cell's end, kept past a per-cell bound (:class:`StoreFull` is
        for output only), so that a cell whose output filled its share still ends."""
        ...

    async def read_events(self, cell: str, offset: int, *, timeout: float = 0.0) -> Events | None:
        """Events from ``offset`` on; with none yet, waits up to ``timeout`` seconds for
        one (an empty ``entries`` after that). ``None`` for an unknown cell."""
        ...

    # --- commands to a cell, delivered to the server running it
    async def send_command(self, cell: str, command: CellCommand) -> bool:
        """Queue ``command`` for the server running ``cell``; ``False`` when no server
        runs it (unknown or finished cell)."""
        ...

    async def receive_commands(self, server: str, *, timeout: float = 0.0) -> list[Delivered]:
        """The commands queued for ``server``'s cells, oldest first, removed from the
        queue; with none, waits up to ``timeout`` seconds for one."""
        ...
