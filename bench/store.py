"""The store's cost: latency per operation, memory vs SQLite vs Redis, and what an idle
session and a live cell take in Redis' memory and in the SQLite file (docs/deploy.md).

    python -m bench.store                  # 2000 operations of each kind
    python -m bench.store --ops 200        # a quick run

Starts its own ``redis-server`` on a loopback port in a temporary folder (it must be
installed), with no password and no persistence; the SQLite file is in that folder too.
Each operation is awaited one after another from one trio task (latency, not
throughput): p50 and p99 in microseconds; ``append + read event`` is one event appended
and read back, the round trip of a cell's output to a ``wait``.
Memory: ``MEMORY USAGE`` of an idle session's keys, and of a cell's keys once it holds
a journal of 20 entries (a source, the output handed back, batches) and 20 output events;
and ``INFO memory``'s ``used_memory`` growth over 1000 idle sessions; the SQLite file's
growth (``PRAGMA page_count``) over 1000 idle sessions and over 100 such cells.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from code_mode.mcp_server.store import JournalEntry, Store, open_store
from tests.mcp_server.store.redis_server import RedisServer


async def _latencies(op: Callable[[int], Awaitable[Any]], count: int) -> tuple[float, float]:
    times = []
    for index in range(count):
        start = time.perf_counter()
        await op(index)
        times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


async def _ops(store: Store, count: int) -> dict[str, tuple[float, float]]:
    session = await store.new_session()
    cell = await store.register_cell(session, "bench")
    entry = JournalEntry(
        "batch", '[{"t":"result","id":"tool-1","ok":true,"value":"' + "x" * 100 + '"}]'
    )
    event = '{"text": "' + "y" * 100 + '"}'
    return {
        "new_session": await _latencies(lambda _: store.new_session(), count),
        "save_values (1 key)": await _latencies(
            lambda i: store.save_values(session, {f"k{i % 10}": '"v"'}), count
        ),
        "load_values (10 keys)": await _latencies(lambda _: store.load_values(session), count),
        "register_cell": await _latencies(lambda _: store.register_cell(session, "b"), count),
        "append_journal": await _latencies(lambda _: store.append_journal(cell, entry), count),
        "append_event": await _latencies(lambda _: store.append_event(cell, event), count),
        "read_events (1 new)": await _latencies(
            lambda i: store.read_events(cell, count - 1 - (i % 10)), count
        ),
        "append + read event": await _latencies(lambda _: _round_trip(store, cell, event), count),
        "heartbeat": await _latencies(lambda _: store.heartbeat("bench"), count),
    }


async def _round_trip(store: Store, cell: str, event: str) -> None:
    offset = await store.append_event(cell, event)
    assert offset is not None
    read = await store.read_events(cell, offset, timeout=1.0)
    assert read is not None and read.entries == (event,)


async def _live_cell(store: Store) -> str:
    """A cell with a journal of 20 entries and 20 output events, of a session with one
    stored value."""
    session = await store.new_session()
    await store.save_values(session, {"answer": "42"})
    cell = await store.register_cell(session, "bench")
    await store.append_journal(cell, JournalEntry("source", "x" * 200))
    await store.append_journal(cell, JournalEntry("handed", "0"))
    for index in range(18):
        await store.append_journal(cell, JournalEntry("batch", f'[{{"t":"fire","id":{index}}}]'))
    for index in range(20):
        await store.append_event(cell, f'{{"text": "line {index}"}}')
    return cell


async def _file(store: Store, path: Path) -> dict[str, float]:
    """Bytes of the SQLite file per idle session and per live cell."""

    def size() -> int:
        with sqlite3.connect(path) as raw:
            pages = raw.execute("PRAGMA page_count").fetchone()[0]
            page_size = raw.execute("PRAGMA page_size").fetchone()[0]
        raw.close()
        return int(pages * page_size)

    before = size()
    for _ in range(1000):
        await store.new_session()
    sessions = size()
    for _ in range(100):
        await _live_cell(store)
    return {
        "sqlite: idle session (file growth / 1000, bytes)": (sessions - before) / 1000,
        "sqlite: live cell, 20 journal entries + 20 events (file growth / 100, bytes)": (
            size() - sessions
        )
        / 100,
    }


async def _memory(store: Any, redis: Any) -> dict[str, float]:
    session = await store.new_session()
    per_session = sum(
        [await store.memory_usage(f"code-mode:{kind}:{session}") for kind in ("s", "v")]
    )
    cell = await _live_cell(store)
    per_cell = sum(
        [await store.memory_usage(f"code-mode:{kind}:{cell}") for kind in ("c", "j", "e")]
    )
    before = int((await redis.info("memory"))["used_memory"])
    for _ in range(1000):
        await store.new_session()
    after = int((await redis.info("memory"))["used_memory"])
    return {
        "idle session (MEMORY USAGE, bytes)": per_session,
        "live cell, 20 journal entries + 20 events (MEMORY USAGE, bytes)": per_cell,
        "idle session (used_memory growth / 1000, bytes)": (after - before) / 1000,
    }


async def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        server = RedisServer(Path(folder))
        server.start()
        try:
            results = {}
            path = Path(folder) / "store.db"
            stores = (
                ("memory", "memory://"),
                ("sqlite", f"sqlite://{path}"),
                ("redis", server.url),
            )
            for name, url in stores:
                async with open_store(url, session_ttl=1800) as store:
                    results[name] = await _ops(store, count)
                    if name == "sqlite":
                        footprint = await _file(store, path)
                    if name == "redis":
                        import coredis

                        async with coredis.Redis(port=server.port, decode_responses=True) as raw:
                            memory = await _memory(store, raw)
        finally:
            server.stop()
    print(f"{'operation':24}", *(f"{name + ' p50/p99 us':>20}" for name, _ in stores))
    for op in results["memory"]:
        shown = (f"{results[name][op][0]:9.1f} /{results[name][op][1]:9.1f}" for name, _ in stores)
        print(f"{op:24}", *shown)
    for what, value in (memory | footprint).items():
        print(f"{what}: {value:.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="operations of each kind")
    trio.run(main, parser.parse_args().ops)
