"""The default engine: one per isolation mode per ``trio.run``, shared by sessions.

Code that opens 500 sessions without mentioning an engine should get one small pool
of workers, not 500. So a session given no engine borrows the *default engine* of the
current trio run for its isolation mode: the first such session starts it, later ones
share it, and it closes when the run ends.

It runs as a trio *system task* (``trio.lowlevel.spawn_system_task``): system tasks
are cancelled once the run's main task has returned, which is exactly when no session
can use the engine any more, and the run waits for them, so the engine's shielded
teardown (workers stopped, threads joined, isolates freed) completes before
``trio.run`` returns. Nothing of it outlives the run.

A system task must not raise, and trio raises ``KeyboardInterrupt`` (Ctrl+C) in
whichever unprotected task runs when the signal arrives: in a worker's read loop, say,
from where it would end the run as ``TrioInternalError``. So every background task
of an engine is KI-protected (``trio.lowlevel.enable_ki_protection``), as trio's own
system tasks are: Ctrl+C reaches the main task, and the user's code, instead.
"""

from __future__ import annotations

import logging
from typing import Literal

import trio

from .._v8 import IsolateUnavailable
from .config import EngineConfig
from .engine import Engine

logger = logging.getLogger("code_mode")


class _Slot:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.ready = trio.Event()
        self.error: BaseException | None = None


_SLOTS: trio.lowlevel.RunVar[dict[str, _Slot]] = trio.lowlevel.RunVar("code_mode_default_engines")


async def _serve(slot: _Slot, slots: dict[str, _Slot]) -> None:
    try:
        async with slot.engine:
            slot.ready.set()
            await trio.sleep_forever()
    except trio.Cancelled:
        raise  # the run is over: the engine block above has closed everything
    except Exception as error:  # a system task must not raise: it would end the run
        if slots.get(slot.engine.isolation) is slot:
            del slots[slot.engine.isolation]
        if slot.ready.is_set():
            logger.error("code_mode's default engine failed: %s", error)
        else:
            slot.error = error
            slot.ready.set()


async def default_engine(isolation: Literal["process", "thread"]) -> Engine:
    """The current trio run's default engine for ``isolation``, started on first use."""
    try:
        slots = _SLOTS.get()
    except LookupError:
        slots = {}
        _SLOTS.set(slots)
    slot = slots.get(isolation)
    if slot is None:
        slot = _Slot(Engine(EngineConfig(isolation=isolation)))
        slots[isolation] = slot
        trio.lowlevel.spawn_system_task(
            _serve, slot, slots, name=f"code_mode default engine ({isolation})"
        )
    await slot.ready.wait()
    if slot.error is not None:
        raise IsolateUnavailable(
            f"exec runtime could not start its default engine: {slot.error}"
        ) from slot.error
    return slot.engine


def default_engines() -> list[Engine]:
    """The default engines of the current trio run that have been started (for tests
    and diagnostics)."""
    try:
        return [slot.engine for slot in _SLOTS.get().values() if slot.ready.is_set()]
    except LookupError:
        return []
