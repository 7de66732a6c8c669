"""No cell lost to a client's timeout: progress while a call waits, retries joined.

MCP clients give up on a request after a timeout of their own (openai-agents: 5 s by
default; see ``docs/mcp.md`` for the hosts), and a program may run longer. Three
things keep its cell:

* the server caps how long one ``exec``/``wait`` blocks
  (:data:`DEFAULT_MCP_MAX_YIELD_TIME_MS`, under the shortest common timeout), so the
  call returns ``Script running with cell ID <id>`` before the client gives up;
* while a call waits, a client that asked for progress (a ``progressToken``) is sent a
  progress notification every :data:`PROGRESS_INTERVAL` seconds, which clients such
  as the TypeScript SDK and the Inspector take to extend their timeout;
* a retried ``exec`` is answered from the cell its first try started
  (:class:`AbandonedExecs`), so a program never runs twice because a client retried.

What counts as a retry: an ``exec`` of the same MCP session with the same arguments
(the same program text, compared exactly), arriving while an earlier one that its
client abandoned (cancelled: the MCP SDKs send ``notifications/cancelled`` when their
timeout fires) has not had its result delivered, within
``ServerLimits.exec_retry_window`` seconds of the abandonment. The retry gets the
result the first try produced, or waits for it: its output, and either the final
result or ``Script running with cell ID <id>``. An ``exec`` whose earlier twin was
answered is a new program, as the model asked. A retry in a *new* MCP session (the
isolated-session retry of openai-agents over HTTP) cannot be told from another
client sending the same program, so it runs again: the yield cap is what prevents
that timeout in the first place.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import attrs
import trio

__all__ = [
    "DEFAULT_MCP_MAX_YIELD_TIME_MS",
    "PROGRESS_INTERVAL",
    "AbandonedExecs",
    "exec_key",
    "with_progress",
]

DEFAULT_MCP_MAX_YIELD_TIME_MS: Final = 4_000
"""The MCP server's default cap on how long one ``exec``/``wait`` blocks, in ms
(4 s): under openai-agents' default client timeout of 5 s, the shortest of the
common hosts. A program that runs longer is handed back as ``Script running`` and
continued with ``wait``. ``code-mode mcp serve --max-yield-ms``."""

PROGRESS_INTERVAL: Final = 1.0
"""Seconds between the progress notifications of a call that waits (when the client
sent a ``progressToken``)."""

T = TypeVar("T")


async def with_progress(
    report: Callable[[], Awaitable[None]], call: Callable[[], Awaitable[T]]
) -> T:
    """``await call()``, calling ``report()`` every :data:`PROGRESS_INTERVAL` seconds
    meanwhile (a failure to report is the client's problem, not the call's)."""

    async def beat() -> None:
        while True:
            await trio.sleep(PROGRESS_INTERVAL)
            try:
                await report()
            except Exception:  # the client's stream is gone: the call still runs
                return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(beat)
        result = await call()
        nursery.cancel_scope.cancel()
    return result


def exec_key(arguments: Any) -> str:
    """What identifies an ``exec`` call for retries: its arguments, exactly."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)


@attrs.define(eq=False)
class _Run:
    """One ``exec`` running in the session's nursery, its result kept for its caller."""

    call_id: str
    done: trio.Event = attrs.field(factory=trio.Event)
    result: list[Any] | None = None
    error: Exception | None = None
    abandoned_at: float | None = None


class AbandonedExecs:
    """The ``exec`` calls of one MCP session, run so that a client's retry finds them.

    Each ``exec`` runs in a task of the session (``nursery``), not of the request: a
    request cancelled by its client leaves the program and its first result be, kept
    for a retry (see the module documentation)."""

    def __init__(self, retry_window: float) -> None:
        self._window = retry_window
        self._abandoned: dict[str, _Run] = {}
        self._call_ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._abandoned)

    async def serve(
        self,
        nursery: trio.Nursery,
        key: str,
        route: Callable[[str], Callable[[], None]],
        call: Callable[[str], Awaitable[list[Any]]],
    ) -> list[Any]:
        """The result of the ``exec`` ``key``: of the abandoned one with that key if
        any, else of ``call(call_id)`` started now. ``route(call_id)`` points the
        call's notifications at this request and returns how to undo that."""
        self._expire()
        run = self._abandoned.pop(key, None)
        if run is None:
            run = _Run(f"mcp-exec-{next(self._call_ids)}")
            nursery.start_soon(self._run, run, call)
        unroute = route(run.call_id)
        try:
            await run.done.wait()
        except trio.Cancelled:  # the client gave up: a retry may come for it
            run.abandoned_at = trio.current_time()
            self._abandoned[key] = run
            raise
        finally:
            unroute()
        if run.error is not None:
            raise run.error
        if run.result is None:  # the session closed under it
            raise RuntimeError("the session closed before the program's first result")
        return run.result

    async def _run(self, run: _Run, call: Callable[[str], Awaitable[list[Any]]]) -> None:
        try:
            run.result = await call(run.call_id)
        except Exception as error:  # its caller raises it
            run.error = error
        finally:
            run.done.set()

    def _expire(self) -> None:
        now = trio.current_time()
        for key, run in list(self._abandoned.items()):
            at = run.abandoned_at
            if at is not None and run.done.is_set() and now - at > self._window:
                del self._abandoned[key]
