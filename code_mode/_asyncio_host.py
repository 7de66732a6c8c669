"""Running code_mode's trio machinery inside an asyncio application (guest mode).

code_mode is written for trio; most agent frameworks and ASGI servers are asyncio. Under
``asyncio.run`` (or anyio's asyncio backend) a :class:`~code_mode.CodeModeSession` runs
its trio side in a trio *guest run* on the asyncio loop
(:func:`trio.lowlevel.start_guest_run`, trio's documented way to share a thread with
another event loop): trio's tasks run as callbacks of the asyncio loop, trio's I/O wait
happens in a helper thread, and the engine's work runs in its worker threads/processes,
so the asyncio loop is never blocked while programs run.

Why one guest run per loop, shared: trio allows one run per thread (a second
``start_guest_run`` on the thread fails), so every session of an asyncio loop lives in
one run: :func:`acquire` starts it for the first user, and the last user's
:func:`release` ends it and waits until it has ended. Its lifetime is therefore the
union of its users' ``async with`` blocks: no trio task or thread outlives them, and
the sessions share the run's default engine, as sessions under one ``trio.run`` do.

Calls cross in both directions:

* asyncio -> trio: :meth:`GuestRun.call` runs a coroutine function as a task of the
  run's nursery and awaits its outcome on asyncio; cancelling the asyncio caller
  cancels the trio task and waits for it to end; its exception is re-raised.
* trio -> asyncio: :func:`code_mode.integrations.host_loop.on_host` (async tools,
  callbacks, an ASGI server's ``receive``/``send`` run on the asyncio loop).
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

import outcome
import sniffio
import trio

from .integrations.host_loop import HOST_LOOP

__all__ = [
    "GuestRun",
    "HeldContext",
    "acquire",
    "enter",
    "leave",
    "on_asyncio",
    "release",
    "trio_side",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")

_ENDED: Final = "code mode's trio run has ended: use the session inside its `async with` block"

_RUNS: Final[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GuestRun]] = (
    weakref.WeakKeyDictionary()
)


def on_asyncio() -> bool:
    """Whether the calling task is an asyncio task (not a trio one): then code_mode's
    trio side must run in the loop's guest run."""
    try:
        return sniffio.current_async_library() == "asyncio"
    except sniffio.AsyncLibraryNotFoundError:
        return False


class GuestRun:
    """The trio guest run of one asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._users = 0
        self._closing = False
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop = trio.Event()
        self._started: asyncio.Future[None] = loop.create_future()
        self._done: asyncio.Future[outcome.Outcome[None]] = loop.create_future()

    def _start(self) -> None:
        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=self._loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=self._loop.call_soon,
            done_callback=self._finished,
            host_uses_signal_set_wakeup_fd=True,
            strict_exception_groups=True,
        )

    async def _main(self) -> None:
        HOST_LOOP.set(self._loop)
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._started.set_result(None)
            await self._stop.wait()
            # Every user has left: whatever is left is a call made after its session
            # closed; it ends with the run.
            nursery.cancel_scope.cancel()

    def _finished(self, result: outcome.Outcome[None]) -> None:
        if _RUNS.get(self._loop) is self:
            del _RUNS[self._loop]
        if not self._started.done():
            self._started.set_exception(RuntimeError("code mode's trio guest run failed to start"))
            self._started.exception()  # retrieved: the run's own error is raised instead
        self._done.set_result(result)

    # -- asyncio -> trio ---------------------------------------------------------------

    def _spawn(
        self, function: Callable[[], Awaitable[_T]]
    ) -> tuple[asyncio.Future[outcome.Outcome[_T]], trio.CancelScope]:
        result: asyncio.Future[outcome.Outcome[_T]] = self._loop.create_future()
        scope = trio.CancelScope()

        async def in_trio() -> None:
            with scope:
                captured = await outcome.acapture(function)
            if not result.done():
                result.set_result(captured)

        def spawn() -> None:
            if self._nursery is None or (self._closing and self._users == 0):
                result.set_result(outcome.Error(RuntimeError(_ENDED)))
                return
            self._nursery.start_soon(in_trio)

        if self._done.done():  # a call after the session's block: nothing runs it
            result.set_result(outcome.Error(RuntimeError(_ENDED)))
            return result, scope
        assert self._token is not None
        self._token.run_sync_soon(spawn)
        return result, scope

    async def _outcome(
        self, result: asyncio.Future[outcome.Outcome[_T]], scope: trio.CancelScope
    ) -> _T:
        try:
            captured = await asyncio.shield(result)
        except asyncio.CancelledError:
            assert self._token is not None
            self._token.run_sync_soon(scope.cancel)
            await _uncancellable(result)
            raise
        if isinstance(captured, outcome.Error) and isinstance(captured.error, trio.Cancelled):
            raise RuntimeError("code mode's trio run ended during the call")
        return captured.unwrap()

    async def call(self, function: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``function()`` as a trio task of this run; return what it returns, raise
        what it raises."""
        result, scope = self._spawn(function)
        return await self._outcome(result, scope)

    async def hold(self, context: AbstractAsyncContextManager[Any]) -> HeldContext:
        """Enter ``context`` in a trio task of this run that keeps it entered until
        :meth:`HeldContext.close` (a trio context manager, such as a nursery, must be
        left by the task that entered it)."""
        entered: asyncio.Future[None] = self._loop.create_future()
        stop = trio.Event()

        async def holder() -> None:
            async with context:
                self._loop.call_soon(_resolve, entered)
                await stop.wait()

        result, scope = self._spawn(holder)
        try:
            waiting: list[asyncio.Future[Any]] = [entered, result]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            assert self._token is not None
            self._token.run_sync_soon(scope.cancel)
            await _uncancellable(result)
            raise
        if not entered.done():  # entering failed: raise why
            entered.cancel()
            await self._outcome(result, scope)
        return HeldContext(self, stop, result, scope)


class HeldContext:
    """A context manager that a trio task of a guest run holds entered."""

    def __init__(
        self,
        run: GuestRun,
        stop: trio.Event,
        result: asyncio.Future[outcome.Outcome[None]],
        scope: trio.CancelScope,
    ) -> None:
        self.run = run
        self._stop = stop
        self._result = result
        self._scope = scope

    async def close(self) -> None:
        """Leave the context (in its task) and wait; raises what leaving raised."""
        assert self.run._token is not None
        self.run._token.run_sync_soon(self._stop.set)
        await self.run._outcome(self._result, self._scope)


async def acquire() -> GuestRun:
    """The running asyncio loop's guest run, started if needed; pair with
    :func:`release`."""
    loop = asyncio.get_running_loop()
    while True:
        run = _RUNS.get(loop)
        if run is None:
            run = GuestRun(loop)
            _RUNS[loop] = run
            run._start()
        if not run._closing:
            break
        await _uncancellable(run._done)  # the last user is ending it: start a new one
    run._users += 1
    try:
        await asyncio.shield(run._started)
    except BaseException:
        await release(run)
        raise
    return run


async def release(run: GuestRun) -> None:
    """One user of ``run`` is done; the last one ends the run and waits for its end
    (raising what the run raised)."""
    run._users -= 1
    if run._users > 0:
        return
    run._closing = True
    if run._token is not None:
        run._token.run_sync_soon(run._stop.set)
    await _uncancellable(run._done)
    run._done.result().unwrap()


async def enter(context: AbstractAsyncContextManager[Any]) -> HeldContext:
    """Enter ``context`` in the running loop's guest run (started if needed) and keep
    it entered until :func:`leave`."""
    run = await acquire()
    try:
        return await run.hold(context)
    except BaseException:
        await release(run)
        raise


async def leave(held: HeldContext) -> None:
    """Leave what :func:`enter` entered; the last user of the guest run ends it."""
    try:
        await held.close()
    finally:
        await release(held.run)


async def _uncancellable(future: asyncio.Future[Any]) -> None:
    """Wait for ``future`` even if this task is cancelled meanwhile (the cancellation is
    re-raised afterwards): a trio task must not outlive the asyncio call that made it."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Hosted(Protocol):
    @property
    def _guest(self) -> HeldContext | None: ...


_S = TypeVar("_S", bound=_Hosted)


def trio_side(
    method: Callable[Concatenate[_S, _P], Awaitable[_T]],
) -> Callable[Concatenate[_S, _P], Awaitable[_T]]:
    """Decorate an async method of an object entered on asyncio (its ``_guest`` is the
    held context): called from an asyncio task, the method runs in the guest run; from
    a trio task (the guest run's own, or under ``trio.run``) it runs as it is."""

    @functools.wraps(method)
    async def forward(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        guest = self._guest
        if guest is not None and on_asyncio():
            return await guest.run.call(functools.partial(method, self, *args, **kwargs))
        return await method(self, *args, **kwargs)

    return forward
