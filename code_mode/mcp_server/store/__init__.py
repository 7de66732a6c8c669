"""The MCP server's state outside the server: one `Store` interface, in memory, SQLite
or Redis.

Issue 29's stateless server keeps a session's stored values, the cell registry (which
server runs which cell; heartbeats; claims of a dead server's cells), each cell's
journal and output events, and commands to cells in a store, so that any server can
answer any call. :mod:`.interface` is the contract; :mod:`.memory_store` the embedded
default (``memory://``), :mod:`.sqlite_store` one file shared by the servers of one
machine (``sqlite:///path``), :mod:`.redis_store` the store of several machines
(``redis://``, ``rediss://``; the ``redis`` extra). :mod:`.handles` mints the
unguessable handles that name sessions and cells, :mod:`.url` parses a store's URL
without ever showing its password, and :func:`open_store` opens any of them.
"""

from __future__ import annotations

from .handles import HANDLE_BITS, is_handle, missing_cell, new_handle, same_handle
from .interface import (
    DEFAULT_HEARTBEAT_TTL,
    CellCommand,
    CellRecord,
    Delivered,
    Events,
    JournalEntry,
    JournalKind,
    Store,
    StoreConfigError,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from .memory_store import MemoryStore
from .opening import open_store
from .url import DEFAULT_STORE_URL, StoreConfig, default_store, parse_store_url

__all__ = [
    "DEFAULT_HEARTBEAT_TTL",
    "DEFAULT_STORE_URL",
    "HANDLE_BITS",
    "CellCommand",
    "CellRecord",
    "Delivered",
    "Events",
    "JournalEntry",
    "JournalKind",
    "MemoryStore",
    "Store",
    "StoreConfig",
    "StoreConfigError",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
    "default_store",
    "is_handle",
    "missing_cell",
    "new_handle",
    "open_store",
    "parse_store_url",
    "same_handle",
]
