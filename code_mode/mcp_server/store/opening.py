"""`open_store`: the store of a URL or `StoreConfig`, open for a block.

``memory://`` needs nothing; a Redis URL needs the ``redis`` extra (coredis), imported
only then, and is checked at start-up (one ``PING``), so that ``code-mode mcp serve
--store URL`` fails at once, in one line, rather than at the first call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .interface import DEFAULT_HEARTBEAT_TTL, Store, StoreConfigError
from .memory_store import MemoryStore
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
    ``memory://``) for the block. ``session_ttl`` is the server's
    ``ServerLimits.session_idle_timeout``. Raises :class:`StoreConfigError` for a URL
    that cannot be used and :class:`StoreUnavailable` for a store that cannot be
    reached or refuses the credentials."""
    config = parse_store_url(where) if isinstance(where, str) else where
    if config is None or config.scheme == "memory":
        yield MemoryStore(session_ttl=session_ttl, heartbeat_ttl=heartbeat_ttl)
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
