"""The store under test: each contract test runs once in memory, once in a SQLite file
and once in a real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from code_mode.mcp_server.store import Store, open_store

from .redis_server import RedisServer

StoreFactory = Callable[..., AbstractAsyncContextManager[Store]]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """``make_store(session_ttl=..., heartbeat_ttl=...)``: a store of this run's kind."""
    server: RedisServer | None = None
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
    url = server.url if server is not None else "memory://"
    if request.param == "sqlite":
        url = f"sqlite://{tmp_path}/store.db"

    @asynccontextmanager
    async def make(
        *, session_ttl: float | None = 60.0, heartbeat_ttl: float = 60.0
    ) -> AsyncIterator[Store]:
        async with open_store(url, session_ttl=session_ttl, heartbeat_ttl=heartbeat_ttl) as store:
            yield store

    yield make
