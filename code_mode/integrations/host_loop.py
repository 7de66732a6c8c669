"""Awaiting the application's own coroutines on the asyncio loop that hosts trio.

Under ``asyncio.run`` code_mode runs trio in *guest mode* on the asyncio loop
(:mod:`code_mode._asyncio_host`). Code the application wrote for asyncio (an ``async``
tool, an ``on_notify``/``on_finished`` callback, an ASGI server's ``receive``/``send``)
must not be awaited inside a trio task: asyncio's futures mean nothing to trio
(``trio.run received unrecognized yield message <Future pending>``). :func:`on_host`
runs such an awaitable as an asyncio task on the host loop and waits for it from trio;
under plain ``trio.run`` it simply awaits it.

The host loop is a :class:`trio.lowlevel.RunVar`, set by the guest run's main task, so
it is per trio run and nothing outside the run can see a stale one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import trio

__all__ = ["HOST_LOOP", "hosted_on_asyncio", "on_host"]

_T = TypeVar("_T")

HOST_LOOP: trio.lowlevel.RunVar[asyncio.AbstractEventLoop | None] = trio.lowlevel.RunVar(
    "code_mode_host_loop", default=None
)
"""The asyncio loop hosting this trio run in guest mode, or ``None`` under ``trio.run``."""


async def on_host(awaitable: Awaitable[_T]) -> _T:
    """Await ``awaitable`` where it was written to run: on the hosting asyncio loop as
    an asyncio task (this trio task waits for it; cancelling this task cancels it and
    waits for it to end, so it never outlives the call), or right here under trio."""
    loop = _host_loop()
    if loop is None:
        return await awaitable
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    task: asyncio.Future[_T] = asyncio.ensure_future(awaitable, loop=loop)

    def finished(_: object) -> None:
        token.run_sync_soon(done.set)

    task.add_done_callback(finished)
    try:
        await done.wait()
    except trio.Cancelled:
        task.cancel()
        with trio.CancelScope(shield=True):
            await done.wait()
        raise
    if task.cancelled():
        # Cancelled from the asyncio side (not by us): a failure of the call, not a
        # trio cancellation; BaseException would escape the tool router.
        raise RuntimeError("the asyncio task was cancelled")
    return task.result()


def hosted_on_asyncio() -> bool:
    """Whether this trio run is a guest on an asyncio loop."""
    return _host_loop() is not None


def _host_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return HOST_LOOP.get()
    except RuntimeError:  # no trio run at all (a tool awaited by asyncio code directly)
        return None
