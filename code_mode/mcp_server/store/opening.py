"""`open_store`: the store of a URL or `StoreConfig`, open for a block.

``memory://`` needs nothing; ``sqlite://`` the standard library, its file checked and
its tables made at start-up; a Redis URL needs the ``redis`` extra (coredis), imported
only then, and is checked at start-up (one ``PING``), so that ``code-mode mcp serve
--store URL`` fails at once, in one line, rather than at the first call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .interface import DEFAULT_HEARTBEAT_TTL, Store, StoreConfigError
from .memory_store import MemoryStore
from .sqlite_store import open_sqlite_store
from .url import StoreConfig, parse_store_url

__all__ = ["open_store"]


@asynccontextmanager
async def open_store(
    where: str | StoreConfig | None = None,
    *,
    session_ttl: float | None,
    heartbeat_ttl: float = DEFAULT_HEARTBEAT_TTL,
) -> AsyncIterator[Store]:
    """The store at ``where`` (a URL, a parsed :class:`StoreConfig`, ``None``:
    ``memory://``) for the block: in memory, in a SQLite file, or in Redis.
    ``session_ttl`` is the server's ``ServerLimits.session_idle_timeout``. Raises
    :class:`StoreConfigError` for a URL or file that cannot be used and
    :class:`StoreUnavailable` for a store that cannot be reached, refuses the
    credentials, or is locked or corrupt."""
    config = parse_store_url(where) if isinstance(where, str) else where
    if config is None or config.scheme == "memory":
        yield MemoryStore(session_ttl=session_ttl, heartbeat_ttl=heartbeat_ttl)
        return
    if config.scheme == "sqlite":
        async with open_sqlite_store(
            config, session_ttl=session_ttl, heartbeat_ttl=heartbeat_ttl
        ) as sqlite_store:
            yield sqlite_store
        return
    try:
        from .redis_store import open_redis_store
    except ImportError:
        raise StoreConfigError(
            f"{config.scheme}:// needs the coredis package: pip install 'code-mode[redis]'"
        ) from None
    async with open_redis_store(
        config, session_ttl=session_ttl, heartbeat_ttl=heartbeat_ttl
    ) as store:
        yield store
