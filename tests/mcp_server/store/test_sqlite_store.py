"""The SQLite store beyond the contract (which ``test_contract`` runs against it): one
file shared by processes, a killed server seen dead at once, expiry that deletes rows,
its bounds, and its faults (bad paths, a locked or corrupt file), each one line."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import pytest
import trio
import trio.testing

from code_mode.mcp_server.store import (
    DEFAULT_HEARTBEAT_TTL,
    CellRecord,
    Delivered,
    JournalEntry,
    StoreConfigError,
    StoreFull,
    StoreUnavailable,
    open_store,
    parse_store_url,
)
from code_mode.mcp_server.store.sqlite_store import (
    DEFAULT_BUSY_TIMEOUT,
    POLL_INTERVAL,
    SWEEP_PERIOD,
    SqliteStore,
    open_sqlite_store,
)
from code_mode.mcp_server.store.url import default_sqlite_path

from .sqlite_child import Child

BOUND = 10.0  # seconds any wait below may take at most (a bound, never the expected time)
T = TypeVar("T")


@asynccontextmanager
async def opened(
    url: str,
    *,
    session_ttl: float = 600,
    heartbeat_ttl: float = DEFAULT_HEARTBEAT_TTL,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[SqliteStore]:
    config = parse_store_url(url)
    async with open_sqlite_store(
        config,
        session_ttl=session_ttl,
        heartbeat_ttl=heartbeat_ttl,
        busy_timeout=busy_timeout,
        clock=clock,
    ) as store:
        yield store


@asynccontextmanager
async def child(url: str) -> AsyncIterator[Child]:
    started = await Child.start(url)
    try:
        yield started
    finally:
        await started.close()


async def woken(wait: Callable[[], Awaitable[T]], trigger: Callable[[], Awaitable[object]]) -> T:
    """What ``wait`` returned, blocked until ``trigger`` (not until its own timeout)."""
    got: list[tuple[T, float]] = []

    async def waiter() -> None:
        got.append((await wait(), trio.current_time()))

    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            sent = trio.current_time()
            await trigger()
    result, when = got[0]
    assert when - sent < BOUND / 2  # woken by the trigger, not by the timeout
    return result


def rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as raw:
        count: int = raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    raw.close()
    return count


async def test_values_events_commands_and_claims_are_shared_with_another_process(
    tmp_path: Path,
) -> None:
    url = f"sqlite://{tmp_path}/store.db"
    async with opened(url) as store, child(url) as other:
        session = await store.new_session()
        assert await store.save_values(session, {"a": "1"})
        assert await other.call("load_values", session) == {"a": "1"}
        assert await other.call("save_values", session, {"b": "2", "a": None})
        assert await store.load_values(session) == {"b": "2"}

        # A read blocked here is woken by an append there (the watcher: POLL_INTERVAL).
        cell = await store.register_cell(session, "here")
        read = await woken(
            lambda: store.read_events(cell, 0, timeout=BOUND),
            lambda: other.call("append_event", cell, "hi"),
        )
        assert read is not None and read.entries == ("hi",)
        received = await woken(
            lambda: store.receive_commands("here", timeout=BOUND),
            lambda: other.call("send_command", cell, "terminate"),
        )
        assert received == [Delivered(cell, "terminate")]

        # Claims of one dead server, from both processes at once: exactly one wins.
        for round_ in range(5):
            dead = f"dead-{round_}"
            cells = sorted([await store.register_cell(session, dead) for _ in range(3)])
            await store.retire(dead)
            claims = await claim_race(store, other, dead)
            winners = [name for name, claimed in claims.items() if claimed]
            assert len(winners) == 1 and claims[winners[0]] == cells, claims
            for each in cells:
                assert await store.cell(each) == CellRecord(each, session, winners[0])


async def claim_race(store: SqliteStore, other: Child, dead: str) -> dict[str, list[str]]:
    """The cells each process claimed of ``dead``, both claiming at once."""
    claims: dict[str, list[str]] = {}

    async def here() -> None:
        claims["here"] = [record.cell for record in await store.claim_cells(dead, "here")]

    async def there() -> None:
        claims["there"] = [record[0] for record in await other.call("claim_cells", dead, "there")]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(there)
        nursery.start_soon(here)
    return claims


async def test_a_killed_server_is_dead_at_once_and_loses_nothing(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/store.db"
    async with opened(url, heartbeat_ttl=600) as store:
        async with child(url) as other:
            await other.call("heartbeat", "child")
            session = await other.call("new_session")
            cell = await other.call("register_cell", session, "child")
            assert await other.call("save_values", session, {"k": "v"})
            assert await other.call("append_journal", cell, ["source", "{}"]) == 0
            assert await other.call("append_event", cell, "out") == 0
            assert await store.dead_servers() == []  # alive: its process runs
            assert await store.claim_cells("child", "parent") == []
            await other.kill()  # SIGKILL: no retire, its heartbeat good for 600 s
            assert await store.dead_servers() == ["child"]
            assert await store.claim_cells("child", "parent") == [
                CellRecord(cell, session, "parent")
            ]
        assert await store.load_values(session) == {"k": "v"}
        assert await store.read_journal(cell) == [JournalEntry("source", "{}")]
        read = await store.read_events(cell, 0)
        assert read is not None and read.entries == ("out",)
        assert await store.dead_servers() == []


async def test_two_stores_on_one_file_in_one_process(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/store.db"
    async with opened(url) as one, opened(url) as two:
        session = await one.new_session()
        cell = await one.register_cell(session, "a")
        read = await woken(
            lambda: one.read_events(cell, 0, timeout=BOUND),
            lambda: two.append_event(cell, "across"),
        )
        assert read is not None and read.entries == ("across",)
        await two.drop_cell(cell)
        assert await one.read_events(cell, 0, timeout=POLL_INTERVAL) is None


async def test_expired_rows_are_deleted(tmp_path: Path) -> None:
    now = [1_000_000.0]
    path = tmp_path / "store.db"
    async with opened(f"sqlite://{path}", clock=lambda: now[0], session_ttl=10) as store:
        session = await store.new_session()
        assert await store.save_values(session, {"k": "v"})
        cell = await store.register_cell(session, "a")
        await store.append_journal(cell, JournalEntry("source", "{}"))
        await store.append_event(cell, "e")
        assert await store.send_command(cell, "terminate")
        tables = ["sessions", "session_values", "cells", "journal", "events", "commands"]
        now[0] += 10
        assert await store.load_values(session) is None  # absent at once
        assert await store.cell(cell) is None
        assert all(rows(path, table) == 1 for table in tables)  # not deleted yet
        now[0] += SWEEP_PERIOD
        fresh = await store.new_session()  # the next creation sweeps
        assert {table: rows(path, table) for table in tables} == {
            "sessions": 1,
            "session_values": 0,
            "cells": 0,
            "journal": 0,
            "events": 0,
            "commands": 0,
        }
        assert await store.touch_session(fresh)


async def test_a_cell_is_bounded(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/store.db?max_cell_bytes=100"
    async with opened(url) as store:
        cell = await store.register_cell(await store.new_session(), "a")
        for index in range(3):  # 30 bytes each, its kind's included
            assert await store.append_journal(cell, JournalEntry("batch", "x" * 25)) == index
        assert await store.append_journal(cell, JournalEntry("batch", "x" * 25)) == 3
        assert await store.append_journal(cell, JournalEntry("batch", "y")) == 3
        journal = await store.read_journal(cell)
        assert journal is not None and [entry.kind for entry in journal][-2:] == [
            "batch",
            "unusable",
        ]
        assert len(journal) == 4
        assert await store.append_event(cell, "e" * 100) == 0
        with pytest.raises(StoreFull, match="max_cell_bytes"):
            await store.append_event(cell, "e")


async def test_max_bytes_caps_the_file(tmp_path: Path) -> None:
    async with opened(f"sqlite://{tmp_path}/store.db?max_bytes=131072") as store:
        session = await store.new_session()
        with pytest.raises(StoreUnavailable, match="is full") as caught:
            await store.save_values(session, {"big": "x" * 1_000_000})
        assert "\n" not in str(caught.value)
        assert await store.save_values(session, {"small": "1"})  # the rest still works


async def test_the_blocks_own_exception_comes_out_as_itself(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        async with opened(f"sqlite://{tmp_path}/store.db"):
            raise KeyError("mine")


async def test_a_cancel_scope_ends_a_blocking_read_and_the_store_closes(tmp_path: Path) -> None:
    async with opened(f"sqlite://{tmp_path}/store.db") as store:
        cell = await store.register_cell(await store.new_session(), "a")
        with trio.fail_after(BOUND):
            with trio.move_on_after(0.05):
                await store.read_events(cell, 0, timeout=BOUND)
            with trio.move_on_after(0.05):
                await store.receive_commands("a", timeout=BOUND)
    with pytest.raises(StoreUnavailable, match="closed"):
        await store.cell(cell)
    # Cancelled from outside while a read waits: the watcher's thread ends with the block.
    with trio.fail_after(BOUND), trio.move_on_after(0.05) as outside:
        async with opened(f"sqlite://{tmp_path}/store.db") as store:
            await store.read_events(cell, 0, timeout=BOUND)
    assert outside.cancelled_caught


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("", "is a folder"),
        ("file/store.db", "is not a folder"),
        ("/proc/code-mode-store.db", "cannot be written"),
    ],
)
async def test_a_path_that_cannot_be_used_is_one_line(tmp_path: Path, where: str, why: str) -> None:
    (tmp_path / "file").write_text("")
    path = where if where.startswith("/") else f"{tmp_path}/{where}"
    with pytest.raises(StoreConfigError, match=why) as caught:
        async with open_store(f"sqlite://{path}".rstrip("/"), session_ttl=60):
            pass
    assert "\n" not in str(caught.value)


async def test_a_file_of_another_application_is_refused(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "theirs.db") as raw:
        raw.execute("CREATE TABLE accounts (name TEXT)")
    raw.close()
    with pytest.raises(StoreConfigError, match="another application"):
        async with open_store(f"sqlite://{tmp_path}/theirs.db", session_ttl=60):
            pass


async def test_a_corrupt_or_locked_file_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "corrupt.db").write_bytes(b"not a database, " * 1000)
    with pytest.raises(StoreUnavailable, match="not a SQLite database") as caught:
        async with open_store(f"sqlite://{tmp_path}/corrupt.db", session_ttl=60):
            pass
    assert "\n" not in str(caught.value)
    url = f"sqlite://{tmp_path}/locked.db"
    async with opened(url):
        pass  # made, then left
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")  # another program holds the file
        with trio.fail_after(BOUND), pytest.raises(StoreUnavailable, match="locked"):
            async with opened(url, busy_timeout=0.1):
                pass
    finally:
        holder.close()


def test_the_default_file_is_under_the_users_state_folder() -> None:
    assert default_sqlite_path({"XDG_STATE_HOME": "/srv/state", "HOME": "/home/u"}) == Path(
        "/srv/state/code-mode/store.db"
    )
    for environ in ({"HOME": "/home/u"}, {"XDG_STATE_HOME": "relative", "HOME": "/home/u"}):
        assert default_sqlite_path(environ) == Path("/home/u/.local/state/code-mode/store.db")
