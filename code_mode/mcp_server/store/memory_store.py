"""The embedded store: sessions, cells, journals, events and commands in this process.

The default (``memory://``): one process, no network, today's behaviour. It keeps the
:class:`~.interface.Store` contract to the letter (the same tests run against it and
Redis) with plain dictionaries: expiry is lazy (entries are kept in order of last use,
so the expired ones are at the front and are dropped by the next operation, at
constant amortized cost), blocking reads wait on a :class:`trio.Event` that the next
append sets, and a claim is atomic because nothing in it awaits.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import attrs
import trio

from .handles import new_handle, same_handle
from .interface import (
    DEFAULT_HEARTBEAT_TTL,
    CellCommand,
    CellRecord,
    Delivered,
    Events,
    JournalEntry,
)

__all__ = ["MemoryStore"]


@attrs.define
class _Session:
    handle: str
    expires: float
    values: dict[str, str] = attrs.Factory(dict)


@attrs.define
class _Cell:
    handle: str
    session: str
    server: str | None
    expires: float
    cursor: int = 0
    journal: list[JournalEntry] = attrs.Factory(list)
    events: list[str] = attrs.Factory(list)
    changed: trio.Event = attrs.Factory(trio.Event)

    def wake(self) -> None:
        changed, self.changed = self.changed, trio.Event()
        changed.set()


@attrs.define
class _Server:
    alive_until: float
    cells: set[str] = attrs.Factory(set)


@attrs.define
class _Queue:
    commands: list[Delivered] = attrs.Factory(list)
    changed: trio.Event = attrs.Factory(trio.Event)

    def wake(self) -> None:
        changed, self.changed = self.changed, trio.Event()
        changed.set()


class MemoryStore:
    """A :class:`~.interface.Store` in this process's memory (``memory://``).

    ``session_ttl``: seconds a session, or a cell, lives after its last use (``None``:
    until dropped); ``heartbeat_ttl``: seconds a heartbeat keeps a server alive."""

    def __init__(
        self, *, session_ttl: float | None = None, heartbeat_ttl: float = DEFAULT_HEARTBEAT_TTL
    ) -> None:
        self._ttl = session_ttl
        self._heartbeat_ttl = heartbeat_ttl
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._cells: OrderedDict[str, _Cell] = OrderedDict()
        self._servers: dict[str, _Server] = {}
        self._queues: dict[str, _Queue] = {}

    @property
    def name(self) -> str:
        return "memory://"

    @property
    def heartbeat_ttl(self) -> float:
        return self._heartbeat_ttl

    def __repr__(self) -> str:
        return f"MemoryStore(sessions={len(self._sessions)}, cells={len(self._cells)})"

    # --- expiry
    def _expiry(self) -> float:
        return trio.current_time() + self._ttl if self._ttl is not None else float("inf")

    def _sweep(self) -> None:
        now = trio.current_time()
        while self._sessions:
            first = next(iter(self._sessions.values()))
            if first.expires > now:
                break
            del self._sessions[first.handle]
        while self._cells:
            cell = next(iter(self._cells.values()))
            if cell.expires > now:
                break
            self._forget_cell(cell)

    def _session(self, handle: str) -> _Session | None:
        self._sweep()
        found = self._sessions.get(handle)
        if found is None or not same_handle(handle, found.handle):
            return None
        found.expires = self._expiry()
        self._sessions.move_to_end(handle)
        return found

    def _cell(self, handle: str) -> _Cell | None:
        self._sweep()
        found = self._cells.get(handle)
        if found is None or not same_handle(handle, found.handle):
            return None
        found.expires = self._expiry()
        self._cells.move_to_end(handle)
        return found

    def _forget_cell(self, cell: _Cell) -> None:
        del self._cells[cell.handle]
        server = self._servers.get(cell.server) if cell.server is not None else None
        if server is not None:
            server.cells.discard(cell.handle)
        queue = self._queues.get(cell.server) if cell.server is not None else None
        if queue is not None:
            queue.commands = [d for d in queue.commands if d.cell != cell.handle]
        cell.wake()

    # --- sessions
    async def new_session(self) -> str:
        await trio.lowlevel.checkpoint()
        self._sweep()
        handle = new_handle()
        self._sessions[handle] = _Session(handle, self._expiry())
        return handle

    async def touch_session(self, session: str) -> bool:
        await trio.lowlevel.checkpoint()
        return self._session(session) is not None

    async def load_values(self, session: str) -> dict[str, str] | None:
        await trio.lowlevel.checkpoint()
        found = self._session(session)
        return dict(found.values) if found is not None else None

    async def save_values(self, session: str, changes: dict[str, str | None]) -> bool:
        await trio.lowlevel.checkpoint()
        found = self._session(session)
        if found is None:
            return False
        for key, value in changes.items():
            if value is None:
                found.values.pop(key, None)
            else:
                found.values[key] = value
        return True

    async def drop_session(self, session: str) -> None:
        await trio.lowlevel.checkpoint()
        if self._session(session) is not None:
            del self._sessions[session]

    # --- the cell registry
    async def heartbeat(self, server: str) -> None:
        await trio.lowlevel.checkpoint()
        alive_until = trio.current_time() + self._heartbeat_ttl
        known = self._servers.get(server)
        if known is None:
            self._servers[server] = _Server(alive_until)
        else:
            known.alive_until = alive_until

    async def register_cell(self, session: str, server: str) -> str:
        await trio.lowlevel.checkpoint()
        self._sweep()
        handle = new_handle()
        self._cells[handle] = _Cell(handle, session, server, self._expiry())
        self._servers.setdefault(server, _Server(trio.current_time() + self._heartbeat_ttl))
        self._servers[server].cells.add(handle)
        return handle

    async def cell(self, cell: str) -> CellRecord | None:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is None:
            return None
        return CellRecord(found.handle, found.session, found.server, found.cursor)

    async def set_cursor(self, cell: str, offset: int) -> bool:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is None:
            return False
        found.cursor = max(0, offset)
        return True

    async def finish_cell(self, cell: str) -> None:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is not None and found.server is not None:
            server = self._servers.get(found.server)
            if server is not None:
                server.cells.discard(cell)
            found.server = None

    async def drop_cell(self, cell: str) -> None:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is not None:
            self._forget_cell(found)

    async def retire(self, server: str) -> None:
        await trio.lowlevel.checkpoint()
        known = self._servers.get(server)
        if known is not None:
            known.alive_until = -math.inf

    async def dead_servers(self) -> list[str]:
        await trio.lowlevel.checkpoint()
        now = trio.current_time()
        return [name for name, server in self._servers.items() if server.alive_until <= now]

    async def claim_cells(self, dead: str, claimant: str) -> list[CellRecord]:
        await trio.lowlevel.checkpoint()
        self._sweep()
        server = self._servers.get(dead)
        if server is None or server.alive_until > trio.current_time() or dead == claimant:
            return []
        del self._servers[dead]
        taker = self._servers.setdefault(
            claimant, _Server(trio.current_time() + self._heartbeat_ttl)
        )
        claimed = []
        for handle in sorted(server.cells):
            cell = self._cells.get(handle)
            if cell is not None:
                cell.server = claimant
                taker.cells.add(handle)
                claimed.append(CellRecord(handle, cell.session, claimant))
        queue = self._queues.pop(dead, None)
        if queue is not None and queue.commands:
            self._queue(claimant).commands.extend(queue.commands)
            self._queue(claimant).wake()
        return claimed

    def _queue(self, server: str) -> _Queue:
        queue = self._queues.get(server)
        if queue is None:
            queue = self._queues[server] = _Queue()
        return queue

    # --- journals
    async def append_journal(self, cell: str, entry: JournalEntry) -> int | None:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is None:
            return None
        found.journal.append(entry)
        return len(found.journal) - 1

    async def read_journal(self, cell: str) -> list[JournalEntry] | None:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        return list(found.journal) if found is not None else None

    # --- events
    async def append_event(self, cell: str, event: str, *, final: bool = False) -> int | None:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is None:
            return None
        found.events.append(event)
        found.wake()
        return len(found.events) - 1

    async def read_events(self, cell: str, offset: int, *, timeout: float = 0.0) -> Events | None:
        await trio.lowlevel.checkpoint()
        offset = max(0, offset)
        found = self._cell(cell)
        with trio.move_on_after(max(0.0, timeout)):
            while found is not None and offset >= len(found.events) and timeout > 0:
                await found.changed.wait()
                found = self._cell(cell)
        found = self._cell(cell)
        if found is None:
            return None
        return Events(tuple(found.events[offset:]), max(offset, len(found.events)))

    # --- commands
    async def send_command(self, cell: str, command: CellCommand) -> bool:
        await trio.lowlevel.checkpoint()
        found = self._cell(cell)
        if found is None or found.server is None:
            return False
        queue = self._queue(found.server)
        queue.commands.append(Delivered(found.handle, command))
        queue.wake()
        return True

    async def receive_commands(self, server: str, *, timeout: float = 0.0) -> list[Delivered]:
        await trio.lowlevel.checkpoint()
        queue = self._queue(server)
        with trio.move_on_after(max(0.0, timeout)):
            while not queue.commands and timeout > 0:
                await queue.changed.wait()
        commands, queue.commands = queue.commands, []
        return commands

    def stats(self) -> dict[str, Any]:
        """Counts, for tests and benchmarks."""
        return {"sessions": len(self._sessions), "cells": len(self._cells)}
