"""Each stateless cell's journal, copied to the store as it grows, and read back to resume it.

A cell handed back running (``Script running with cell ID <handle>``) can outlive the
server running it: another server resumes it from the copy of its journal in the
store (:mod:`.takeover`). :class:`StoreMirror` is the library's
:class:`~code_mode._resumption.JournalMirror` over a :class:`~.store.Store`: it keeps
the records of a cell from its start, and once the cell has a handle writes them, in
order, behind the cell (one task per cell). The engine holds each batch and each tool
call until the records before it are written (``behind``), so the copy never lags
what the program saw or what a tool did.

While the store is unreachable the copy falls behind without holding the cell up
(``behind`` is False): the cell keeps running, the records are written when the store
is back, and a server that dies meanwhile leaves a copy that may re-run a call its
program had seen finish. A server stopping with its store down loses more than that
anyway: see ``docs/deploy.md``.

Besides the engine's records, the copy holds the program (``source``: its text and
the id of the ``exec`` call that ran it) and how many output items the ``exec`` call
handed back (``handed``); the output a ``wait`` was given is the cell's event stream.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from typing import Final

import trio

from .._resumption import MirrorKind, Resumption, resumption_from_records
from .cell_events import decode_event
from .store import JournalEntry, JournalKind, Store, StoreError

__all__ = ["CellCopy", "StoreMirror", "read_copy"]

logger = logging.getLogger("code_mode.mcp")

_RETRY: Final = 0.5  # seconds before a write the store refused is tried again


class StoreMirror:
    """A cell's journal copied to ``store`` (see the module). ``program``: the source
    and ``exec`` call id of a cell started here, the copy's first record; ``handle``:
    the cell's, when it is known from the start (a resumed cell, whose copy has its
    program already: what it does waits for the copy from its first step)."""

    def __init__(
        self,
        store: Store,
        *,
        program: tuple[str, str] | None = None,
        handle: str | None = None,
    ) -> None:
        self._store = store
        self._program = program
        self._records: deque[tuple[JournalKind, str]] = deque()
        self._recorded = 0  # records made (written or not)
        self._written = 0
        self._handle = handle
        self._unreachable = False
        self._progress = trio.Event()
        self._wake = trio.Event()

    # -- JournalMirror ----------------------------------------------------------------

    def record(self, kind: MirrorKind, text: str) -> None:
        self._records.append((kind, text))
        self._recorded += 1
        self._wake.set()

    @property
    def behind(self) -> bool:
        lagging = self._written < self._recorded
        return self._handle is not None and not self._unreachable and lagging

    async def caught_up(self) -> None:
        target = self._recorded
        while self._written < target and self._handle is not None and not self._unreachable:
            await self._progress.wait()

    # -- the server's side -----------------------------------------------------------

    async def flushed(self) -> None:
        """Return once every record made so far is written (waiting out an unreachable
        store): the server hands on a program's output only after the records it
        depends on are in the store."""
        target = self._recorded
        while self._written < target and self._handle is not None:
            await self._progress.wait()

    async def write(
        self,
        handle: str,
        handed: int | None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Write the copy under ``handle`` until cancelled (the cell ended): first the
        program and ``handed``, the output items its ``exec`` call handed back (``None``
        for a resumed cell, whose copy already says), then what was recorded before the
        cell had a handle, then the rest as it comes. Started once what was recorded so
        far is written (or the store failed): a handle is handed back only for a cell
        another server can resume."""
        first: list[tuple[JournalKind, str]] = []
        if self._program is not None:
            source, call_id = self._program
            first.append(("source", json.dumps({"source": source, "call_id": call_id})))
        if handed is not None:
            first.append(("handed", str(handed)))
        self._records.extendleft(reversed(first))
        self._recorded += len(first)
        self._handle = handle
        try:
            await self._writing(handle, task_status)
        finally:
            # Not written any more (the cell ended, or its server hands it over): the
            # cell must not wait for a copy nobody writes.
            self._handle = None
            self._notify()

    async def _writing(self, handle: str, task_status: trio.TaskStatus[None]) -> None:
        started = False
        while True:
            while self._records:
                kind, text = self._records[0]
                try:
                    await self._store.append_journal(handle, JournalEntry(kind, text))
                except StoreError as error:
                    if not self._unreachable:
                        logger.warning("code mode store: %s (copying cell journals)", error)
                    self._unreachable = True
                    self._notify()  # whoever waits for the copy goes on without it
                    if not started:
                        started = True
                        task_status.started()
                    await trio.sleep(_RETRY)
                    continue
                self._records.popleft()
                self._written += 1
                self._unreachable = False
                self._notify()
            if not started:
                started = True
                task_status.started()
            self._wake = trio.Event()
            await self._wake.wait()

    def _notify(self) -> None:
        self._progress.set()
        self._progress = trio.Event()


class CellCopy:
    """What the store holds of a cell another server ran: its program, and how to
    resume it (or why it cannot be)."""

    def __init__(self, source: str, call_id: str, resumption: Resumption | str) -> None:
        self.source = source
        self.call_id = call_id
        self.resumption = resumption


async def read_copy(store: Store, handle: str) -> CellCopy | None:
    """The copy of ``handle``'s journal, ``None`` when the store no longer knows the
    cell. The output already handed on is counted from the ``exec`` call's record
    and the cell's event stream."""
    entries = await store.read_journal(handle)
    events = await store.read_events(handle, 0)
    if entries is None or events is None:
        return None
    if any(decode_event(event).end is not None for event in events.entries[-1:]):
        return None  # it ended: its server stopped before it said so to the registry
    if not entries or entries[0].kind != "source":
        return CellCopy("", "", "its journal was not copied to the store")
    program = json.loads(entries[0].data)
    handed = sum(len(decode_event(event).items) for event in events.entries)
    records: list[tuple[str, str]] = []
    for entry in entries[1:]:
        if entry.kind == "handed":
            handed += int(entry.data)
        else:
            records.append((entry.kind, entry.data))
    resumption = await trio.to_thread.run_sync(
        lambda: resumption_from_records(records, handed=handed)
    )
    return CellCopy(str(program["source"]), str(program["call_id"]), resumption)
