"""Fixtures of the MCP server's tests: a real redis-server for the store's tests and
for several servers sharing one, and a shared store of either kind (Redis, SQLite)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .store.redis_server import MISSING_REDIS, RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server with a password, stopped after the test."""
    if shutil.which("redis-server") is None:
        pytest.skip(MISSING_REDIS)
    server = RedisServer(tmp_path, password="s3cret-Pw")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["redis", "sqlite"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a store that several servers share: a fresh redis-server, or a
    SQLite file (the servers of one machine)."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/store.db"
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.url
