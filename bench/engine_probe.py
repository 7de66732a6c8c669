"""The benchmarks' only reads of code_mode's engine internals, in one place.

A measurement of threads or memory is only fair when the engine is at rest: the
engine keeps a few isolates warm and refills that pool in the background after a cell
took one, so two readings taken while a refill runs would count different numbers of
isolates: ``Engine.wait_until_settled`` says when it is. code_mode has no public call
for the engines a trio run opened by default, nor for the V8 flags it starts V8 with,
so the functions here read those private names; when the engine grows public methods
for them, only this file changes.
"""

from __future__ import annotations

from typing import Any

import trio


async def wait_warm_pool_filled(engine: Any, timeout: float) -> None:
    """Return once ``engine`` builds no warm isolate any more (at once when it keeps
    no warm pool); ``trio.TooSlowError`` after ``timeout`` seconds. A code_mode from
    before ``Engine.wait_until_settled`` is read directly, so before/after runs work."""
    with trio.fail_after(timeout):
        if hasattr(engine, "wait_until_settled"):
            await engine.wait_until_settled()
            return
        warm = engine._warm
        while warm is not None and warm._filling:
            await warm._fill_done.wait()


def default_engines() -> list[Any]:
    """The engines opened for sessions that were given no ``engine=`` in this trio run
    (none with a code_mode from before engines, so before/after runs still work)."""
    try:
        from code_mode._engine import _default
    except ImportError:
        return []
    return list(_default.default_engines())


def code_mode_v8_flags() -> list[str]:
    """The V8 flags code_mode initialises V8 with (read without initialising it)."""
    try:
        from code_mode._v8._native_library import V8_FLAGS
    except ImportError:  # a code_mode from before the library had a module of its own
        from code_mode._v8._native import V8_FLAGS

    return list(V8_FLAGS)
