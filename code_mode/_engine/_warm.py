"""Warm isolates: isolates prepared ahead of time for any session of an engine.

A new cell takes one without waiting for V8 (see :class:`WarmIsolates`).
"""

from __future__ import annotations

import trio

from .._v8 import TASK_OK, IsolateLimits, IsolateUnavailable, Outcome
from ._backend import IsolateBackend, IsolateHandle, IsolateSink


class _SinkSlot:
    """Forwards reports to a sink chosen after the isolate was created, and sets the
    ``first_task`` events when the isolate has finished its first evaluation normally."""

    def __init__(self) -> None:
        self.target: IsolateSink | None = None
        self.crashed = False
        self.first_task: list[trio.Event] = []

    def on_batch(self, text: str | None) -> None:
        if self.target is not None:
            self.target.on_batch(text)

    def on_task(self, tag: int, outcome: Outcome, detail: str) -> None:
        if self.target is not None:
            self.target.on_task(tag, outcome, detail)
        if outcome == TASK_OK:
            # Not on an interrupted evaluation: the cell is terminating or failing,
            # and closes the isolate next, which counts too (see WarmIsolates._take).
            self.first_task_done()

    def release(self) -> None:
        self.target = None

    def first_task_done(self) -> None:
        waiting, self.first_task = self.first_task, []
        for event in waiting:
            event.set()

    def on_crash(self, message: str) -> None:
        self.crashed = True
        if self.target is not None:
            self.target.on_crash(message)

    def evaluating(self) -> bool:
        return self.target is not None and self.target.evaluating()


#: How long a refill waits at most for the cell that took a warm isolate to get through
#: its start (see :class:`WarmIsolates`).
REFILL_DELAY = 0.05

#: A burst of back-to-back cells is over when no cell took a warm isolate for this
#: long; the pool then closes what it holds beyond ``count`` (see :class:`WarmIsolates`).
BURST_IDLE = 0.1


class WarmIsolates:
    """Keeps ``count`` isolates created ahead of time, so starting a cell does not pay
    for V8 isolate creation and the prelude (most of a short cell's latency).

    Each isolate taken is replaced in the background, in the engine nursery. The
    isolates are plain, unstarted ones: a program only ever sees a fresh isolate.

    *When* the replacement is built matters on a small machine: creating an isolate
    is about 3 ms of CPU on a thread of its own, and doing it at the moment a cell
    starts competes with that very cell (on 2 cores: the trio thread, the cell's
    isolate and the new isolate). So a replacement waits until the isolate just taken
    has finished its first evaluation (the program's synchronous start: a short cell
    is then done), or for :data:`REFILL_DELAY` at most, or until someone needs an
    isolate and none is ready; then it is built at once. Except when the cell taking
    an isolate had to wait for it: cells then come faster than isolates are built,
    and the next ones are built at once, while the cell runs: up to ``burst`` of them
    side by side (a build is two halves on two threads, V8's isolate and then the
    prelude on the isolate's own thread, so two builds keep two cores busy where one
    build leaves a core waiting). Paced cells refill the pool to ``count`` only, and
    once no cell took an isolate for :data:`BURST_IDLE`, the isolates beyond ``count``
    are closed: an idle engine holds ``count`` of them, each a few MiB.
    """

    def __init__(
        self,
        backend: IsolateBackend,
        nursery: trio.Nursery,
        *,
        count: int,
        limits: IsolateLimits,
        burst: int = 1,
    ) -> None:
        self._backend = backend
        self._nursery = nursery
        self._count = count
        self._burst = max(count, burst)
        self._limits = limits
        self._ready: list[tuple[_SinkSlot, IsolateHandle]] = []
        self._filling = 0
        self._fill_done = trio.Event()
        self._waiting_fills: list[trio.Event] = []  # go signals of delayed refills
        self._closed = False
        self._taken = 0  # isolates handed to cells so far
        self._trim: trio.CancelScope | None = None  # while a burst's end is awaited
        self._trim_done = trio.Event()  # set when the last trim task has returned
        self._trim_done.set()

    @property
    def ready_count(self) -> int:
        """Isolates ready to be taken now."""
        return len(self._ready)

    async def wait_for_fill(self) -> None:
        """Until the next build ends (for tests and benchmarks)."""
        await self._fill_done.wait()

    def refill(self, after: _SinkSlot | None = None, *, burst: bool = False) -> None:
        """Start replacements for missing isolates; with ``after``, each waits for
        that isolate's first evaluation to end; with ``burst``, up to ``burst``
        isolates are built or ready rather than ``count`` (see the class docstring)."""
        target = self._burst if burst else self._count
        if target > self._count and self._trim is None and not self._closed:
            self._trim = trio.CancelScope()
            self._trim_done = trio.Event()
            self._nursery.start_soon(self._trim_after_burst, self._trim, self._trim_done)
        while not self._closed and len(self._ready) + self._filling < target:
            self._filling += 1
            go = trio.Event()
            if after is None:
                go.set()
            else:
                self._waiting_fills.append(go)
                after.first_task.append(go)
            self._nursery.start_soon(self._fill_one, go)

    @trio.lowlevel.enable_ki_protection
    async def _trim_after_burst(self, scope: trio.CancelScope, done: trio.Event) -> None:
        """Once cells stop taking isolates, close those beyond ``count``. ``done`` is set
        when it returns: :meth:`aclose` waits for it, since a trim that has begun closing
        isolates finishes (shielded) and needs the engine's disposal threads meanwhile."""
        try:
            with scope:
                while True:
                    taken = self._taken
                    await trio.sleep(BURST_IDLE)
                    if self._taken == taken and not self._filling:
                        break
                extra, self._ready = self._ready[self._count :], self._ready[: self._count]
                with trio.CancelScope(shield=True):
                    for _slot, handle in extra:
                        await handle.close()
        finally:
            if self._trim is scope:
                self._trim = None
            done.set()

    def _hurry(self) -> None:
        waiting, self._waiting_fills = self._waiting_fills, []
        for go in waiting:
            go.set()

    @trio.lowlevel.enable_ki_protection
    async def _fill_one(self, go: trio.Event) -> None:
        slot = _SinkSlot()
        try:
            with trio.move_on_after(REFILL_DELAY):
                await go.wait()
            if go in self._waiting_fills:
                self._waiting_fills.remove(go)
            handle = None
            if not self._closed:
                handle = await self._backend.create_isolate(slot, self._limits)
        except IsolateUnavailable:
            handle = None
        finally:
            self._filling -= 1
            self._fill_done.set()
            self._fill_done = trio.Event()
        if handle is None:
            return
        if self._closed:
            await handle.close()
        else:
            self._ready.append((slot, handle))

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        waited = False
        while True:
            taken = self._take(sink, limits, waited=waited)
            if taken is not None:
                return taken
            if not self._filling or self._closed:
                break
            # A replacement is on its way: build it now and take it, rather than
            # building a second isolate beside it.
            waited = True
            self._hurry()
            await self._fill_done.wait()
        handle = await self._backend.create_isolate(sink, limits)
        self.refill(burst=True)
        return handle

    def take_ready_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle | None:
        return self._take(sink, limits, waited=False)

    def _take(
        self, sink: IsolateSink, limits: IsolateLimits, *, waited: bool
    ) -> IsolateHandle | None:
        while self._ready:
            slot, handle = self._ready.pop(0)
            if slot.crashed:
                continue
            if limits != self._limits:
                handle.set_limits(limits)
            slot.target = sink
            # Closing it counts as the end of its first evaluation for the refill (a
            # short cell may be closed before that is reported).
            handle.when_closing(slot.first_task_done)
            # Once closed, the isolate reports nothing the cell wants, and the slot must
            # not keep the cell (and all it holds) alive for as long as anything still
            # refers to the native isolate.
            handle.when_closed(slot.release)
            self._taken += 1
            # Cells that find the pool empty come faster than isolates are built
            # (say, back to back): then the replacement is built at once, beside
            # this cell, rather than after it; waiting would only make the next
            # cell wait longer.
            if waited:
                self.refill(burst=True)
            else:
                self.refill(after=slot)
            return handle
        return None

    async def wait_until_filled(self) -> None:
        """Return once no refill is in progress."""
        while self._filling:
            await self._fill_done.wait()

    @trio.lowlevel.enable_ki_protection
    async def aclose(self) -> None:
        self._closed = True
        self._hurry()
        trim, trim_done = self._trim, self._trim_done
        if trim is not None:
            trim.cancel()
        with trio.CancelScope(shield=True):
            await trim_done.wait()
            while self._filling:
                await self._fill_done.wait()
            ready, self._ready = self._ready, []
            for _slot, handle in ready:
                await handle.close()
