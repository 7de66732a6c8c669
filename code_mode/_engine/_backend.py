"""Where isolates live: in this process (``thread``) or in worker processes (``process``).

Both backends give the same narrow interface, so :class:`~code_mode._engine.isolate.Isolate`
and everything above it do not care which one runs the JavaScript:

* :class:`IsolateHandle`: post an evaluation under a tag, cancel it, close the isolate;
  each backend has one handle class (:class:`HandleBase` underneath), and whoever
  hands a handle on and must hear of its closing (the warm pool, the placement) adds a
  hook to it (:meth:`HandleBase.when_closing`, :meth:`HandleBase.when_closed`) rather
  than wrapping it;
* :class:`IsolateSink`: what the isolate reports back, always on the trio thread.

``thread`` runs each isolate on its own thread inside the host process: the fastest
path, but a fatal V8 failure (some out-of-memory conditions abort instead of throwing)
takes the whole Python process down. ``process`` runs isolates in worker processes
that speak the same protocol over pipes (:mod:`._process_pool`, :mod:`._worker_process`):
a fatal failure kills only that worker; its cells fail with a clear error and a new
worker replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .._v8 import IsolateLimits, Outcome


class IsolateSink(Protocol):
    """Receives what an isolate reports. Called on the trio thread."""

    def on_batch(self, text: str | None) -> None:
        """A batch of JSON messages, or ``None`` for one dropped as oversized."""

    def on_task(self, tag: int, outcome: Outcome, detail: str) -> None:
        """The evaluation ``tag`` ended (``ok``, ``error``, ``oom``, ``terminated``)."""

    def on_crash(self, message: str) -> None:
        """The isolate is gone without a result (its worker process died)."""

    def evaluating(self) -> bool:
        """An evaluation posted to the isolate has not been reported as ended yet: its
        JavaScript is running or about to (asked when its worker process dies, see
        :mod:`._worker_death`)."""
        ...


class IsolateHandle(Protocol):
    """Controls one isolate. ``post`` and ``cancel`` never block. A ``quiet`` post
    reports only failures: its success is implied by the next evaluation's. With
    ``probe``, the idleness probe (:data:`code_mode._v8.PROBE`) is
    queued right behind it under that tag: one request (in ``process`` mode, one
    frame) for the two."""

    def post(self, code: str, tag: int, quiet: bool = False, probe: int | None = None) -> None: ...

    def cancel(self, tag: int) -> None: ...

    def set_limits(self, limits: IsolateLimits) -> None:
        """Change the heap limit and the largest message (before the program starts:
        a warm isolate was prepared with the defaults)."""
        ...

    def collect_output(self) -> None:
        """Report output the isolate keeps back while its program runs (see
        ``NativeIsolate._deliver``) now (``thread`` mode; a worker process keeps
        none back)."""
        ...

    def when_closing(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when :meth:`close` begins."""
        ...

    def when_closed(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when :meth:`close` has ended (or failed)."""
        ...

    async def close(self) -> None: ...


class HandleBase:
    """What every backend's handle shares: the hooks of :meth:`close`. A subclass
    closes the isolate in :meth:`_close`."""

    __slots__ = ("_closed_hooks", "_closing_hooks")

    def __init__(self) -> None:
        self._closing_hooks: list[Callable[[], None]] = []
        self._closed_hooks: list[Callable[[], None]] = []

    def when_closing(self, hook: Callable[[], None]) -> None:
        self._closing_hooks.append(hook)

    def when_closed(self, hook: Callable[[], None]) -> None:
        self._closed_hooks.append(hook)

    async def close(self) -> None:
        closing, self._closing_hooks = self._closing_hooks, []
        for hook in closing:
            hook()
        try:
            await self._close()
        finally:
            closed, self._closed_hooks = self._closed_hooks, []
            for hook in closed:
                hook()

    async def _close(self) -> None:
        raise NotImplementedError


class IsolateSource(Protocol):
    """Creates isolates (what a cell needs: an engine, or a backend inside one)."""

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        """A new isolate with the prelude installed; raises ``IsolateUnavailable``."""
        ...

    def take_ready_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle | None:
        """A warm isolate if one is ready now (taken without waiting, so a cell can
        start without a task switch), or None: then :meth:`create_isolate`."""
        ...


class IsolateBackend(IsolateSource, Protocol):
    """Creates isolates, and has resources of its own to release."""

    async def aclose(self) -> None: ...
