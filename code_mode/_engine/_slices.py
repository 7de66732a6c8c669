"""Long work that holds the GIL, done on the trio thread a slice at a time.

Decoding a large batch of an isolate's messages, counting what a tool input holds,
checking the depth of a large tool result: Python code, which holds the GIL whichever
thread runs it. On a thread of its own it would make the trio thread wait for the GIL
each time that thread gives it up (on every ``epoll`` wait, every read of a pipe),
up to ``sys.getswitchinterval()`` each time, so a pass of the trio loop would take tens
of milliseconds for as long as the work runs (see ``_decode.py``). Here the work is a
generator of steps (:data:`~._decode.Steps`), and :func:`in_slices` runs it on the trio
thread for at most :data:`SLICE_SECONDS` at a time, then lets every other task run.

One slice runs at a time in a trio run (:data:`SLICERS`, by a limiter that hands the
turn to each waiting task in order), so that many isolates decoding at once still
add up to one slice per pass of the trio loop.
"""

from __future__ import annotations

import time
from typing import TypeVar

import trio

from ._decode import Steps

T = TypeVar("T")

#: How long one slice may run before other tasks get the trio thread back: well within
#: the pause a host notices, and long enough that a task switch costs little beside it.
SLICE_SECONDS = 0.002

#: Slices that run at once (one after the other in one pass of the trio loop).
SLICERS = 1

_LIMITER: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("code_mode_slices")


def _limiter() -> trio.CapacityLimiter:
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = trio.CapacityLimiter(SLICERS)
        _LIMITER.set(limiter)
        return limiter


async def in_slices(steps: Steps[T]) -> T:
    """Run ``steps`` to their end, :data:`SLICE_SECONDS` at a time, and return their
    result (or raise their error). Cancellable between two slices. The caller goes on
    with the result in a step of its own: acting on it does not lengthen the last slice
    (a schedule point that cannot be cancelled comes first, so the result is not lost)."""
    limiter = _limiter()
    clock = time.perf_counter
    try:
        while True:
            async with limiter:  # (a checkpoint: the other tasks run in between)
                deadline = clock() + SLICE_SECONDS
                try:
                    while clock() < deadline:
                        next(steps)
                except StopIteration as stop:
                    result: T = stop.value
                    break
        await trio.lowlevel.cancel_shielded_checkpoint()
        return result
    finally:
        steps.close()
