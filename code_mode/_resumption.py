"""A copy of a cell's journal kept outside its host, and what another host reads back from it.

A host that may die under its cells (a stateless MCP server) copies each cell's
journal, record by record, to a store outside itself through a :class:`JournalMirror`;
when it dies, another host reads the records back as a :class:`Resumption` and
resumes the cell from it (``SessionRuntime.execute`` with ``ExecuteRequest.resume``;
how, in ``_engine/resume.py``). Both sides of that are here, as values, so that the
layers that keep the copy (the MCP server) and the one that replays it (the engine)
share one definition and import nothing of each other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal, Protocol

import attrs

__all__ = ["JournalMirror", "MirrorKind", "Resumption", "resumption_from_records"]

MirrorKind = Literal["batch", "clock", "call", "rerun", "unusable"]
"""What a mirrored record holds: a posted ``batch`` (its text), the ``clock`` readings
(a JSON list), a tool ``call`` the host started (its id), a call started again by a
resumption (``rerun``: its id), or ``unusable``: the journal passed its limit and the
copy cannot resume the cell."""


class JournalMirror(Protocol):
    """Where one cell's journal is copied as it grows (see the module)."""

    def record(self, kind: MirrorKind, text: str) -> None:
        """Copy one record (in order; never blocks: the copy is written behind)."""
        ...

    @property
    def behind(self) -> bool:
        """Whether records wait to be made durable, so that what depends on them must
        wait (False while the copy is not kept: before the cell has a handle, or while
        its store is unreachable)."""
        ...

    async def caught_up(self) -> None:
        """Return once every record made before the call is durable (at once when
        :attr:`behind` is False)."""
        ...


@attrs.frozen
class Resumption:
    """What a new host needs to take a cell over (read back from a mirror).

    ``batches``: every batch the dead host posted, in order (the start command's
    first); ``clock``: the program's clock readings; ``handed``: how many of its output
    items were handed on; ``started``: the tool calls the dead host started;
    ``reruns``: those an earlier resumption already ran again."""

    batches: tuple[str, ...]
    clock: tuple[float, ...] = ()
    handed: int = 0
    started: frozenset[str] = frozenset()
    reruns: frozenset[str] = frozenset()
    #: The ids of the calls whose result (or error) is in ``batches``, and of the timers
    #: whose firing is (filled from ``batches`` by :func:`resumption_from_records`).
    answered: frozenset[str] = frozenset()
    fired: frozenset[int] = frozenset()


def resumption_from_records(records: Iterable[tuple[str, str]], *, handed: int) -> Resumption | str:
    """A :class:`Resumption` from mirrored records (``(kind, text)``, in order), or why
    there is none. Parses every batch (off the trio thread: they may be megabytes)."""
    batches: list[str] = []
    clock: list[float] = []
    started: set[str] = set()
    reruns: set[str] = set()
    answered: set[str] = set()
    fired: set[int] = set()
    for kind, text in records:
        if kind == "batch":
            batches.append(text)
            for command in json.loads(text):
                if command.get("t") == "result":
                    answered.add(str(command["id"]))
                elif command.get("t") == "fire":
                    fired.add(int(command["id"]))
        elif kind == "clock":
            clock.extend(float(value) for value in json.loads(text))
        elif kind == "call":
            started.add(text)
        elif kind == "rerun":
            reruns.add(text)
        elif kind == "unusable":
            return (
                "its journal passed the limit of RuntimeConfig.max_journal_chars, so it "
                "cannot be replayed"
            )
    if not batches:
        return "its journal holds no start command"
    return Resumption(
        tuple(batches),
        tuple(clock),
        handed,
        frozenset(started),
        frozenset(reruns),
        frozenset(answered),
        frozenset(fired),
    )
