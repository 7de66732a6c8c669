"""The warm-isolate pool: when replacements are built, and that a cell needing an
isolate takes the one on its way instead of building a second one beside it.

A fake backend stands in for V8, so these tests pin the pool's scheduling exactly
(with trio's ``MockClock`` for the fallback delay)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from code_mode._engine._backend import HandleBase, IsolateHandle, IsolateSink
from code_mode._engine._warm import BURST_IDLE, REFILL_DELAY, WarmIsolates
from code_mode._v8 import IsolateLimits

LIMITS = IsolateLimits(memory_limit_bytes=1 << 20, max_message_chars=1 << 10)


class FakeHandle(HandleBase):
    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number
        self.closed = False

    def post(self, code: str, tag: int, quiet: bool = False, probe: int | None = None) -> None:
        pass

    def cancel(self, tag: int) -> None:
        pass

    async def _close(self) -> None:
        self.closed = True


class FakeBackend:
    """Counts creations; ``sinks[n]`` is what isolate ``n`` reports to."""

    def __init__(self) -> None:
        self.sinks: list[IsolateSink] = []
        self.handles: list[FakeHandle] = []

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> FakeHandle:
        await trio.lowlevel.checkpoint()
        self.sinks.append(sink)
        self.handles.append(FakeHandle(len(self.handles)))
        return self.handles[-1]

    async def aclose(self) -> None:
        return None


class Sink:
    def __init__(self) -> None:
        self.tasks: list[tuple[int, str, str]] = []

    def on_batch(self, text: str | None) -> None:
        pass

    def on_task(self, tag: int, outcome: str, detail: str) -> None:
        self.tasks.append((tag, outcome, detail))

    def on_crash(self, message: str) -> None:
        pass


@asynccontextmanager
async def warm_pool(burst: int = 1) -> AsyncIterator[tuple[WarmIsolates, FakeBackend]]:
    """A pool of one, filled; closed (and checked empty of live fakes) on exit."""
    backend = FakeBackend()
    async with trio.open_nursery() as nursery:
        warm = WarmIsolates(backend, nursery, count=1, burst=burst, limits=LIMITS)
        warm.refill()
        await assert_built(backend, 1)
        yield warm, backend
        await warm.aclose()
    assert all(handle.closed for handle in backend.handles)


async def assert_built(backend: FakeBackend, count: int) -> None:
    """Once every task is blocked, the backend has built ``count`` isolates in all."""
    await trio.testing.wait_all_tasks_blocked()
    assert len(backend.handles) == count


async def take(warm: WarmIsolates, sink: Sink | None = None) -> IsolateHandle:
    """Take the warm isolate, and let every task run as far as it can."""
    handle = await warm.create_isolate(sink or Sink(), LIMITS)
    await trio.testing.wait_all_tasks_blocked()
    return handle


async def test_a_replacement_waits_for_the_first_evaluation_of_the_isolate_taken(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with warm_pool() as (warm, backend):
        sink = Sink()
        taken = await take(warm, sink)
        assert len(backend.handles) == 1  # the cell starts without competition
        backend.sinks[0].on_task(16, "ok", "")  # its first evaluation ended
        assert sink.tasks == [(16, "ok", "")]  # reports still reach the cell
        await assert_built(backend, 2)
        await taken.close()


async def test_a_replacement_is_built_after_the_refill_delay_at_the_latest(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with warm_pool() as (warm, backend):
        taken = await take(warm)  # a cell that never reports
        mock_clock.jump(REFILL_DELAY * 0.9)
        await assert_built(backend, 1)
        mock_clock.jump(REFILL_DELAY * 0.2)
        await assert_built(backend, 2)
        await taken.close()


async def test_closing_the_isolate_taken_releases_its_replacement(
    mock_clock: trio.testing.MockClock,
) -> None:
    # A short cell may be closed before its first evaluation is reported.
    async with warm_pool() as (warm, backend):
        taken = await take(warm)
        assert len(backend.handles) == 1
        await taken.close()
        assert backend.handles[0].closed
        await assert_built(backend, 2)


async def test_a_cell_needing_an_isolate_takes_the_replacement_on_its_way(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with warm_pool() as (warm, backend):
        first = await warm.create_isolate(Sink(), LIMITS)
        second_sink = Sink()
        second = await warm.create_isolate(second_sink, LIMITS)  # no clock jump needed
        # The pending replacement was built at once and handed over: two isolates in
        # all, not a third one built beside it.
        assert len(backend.handles) == 2
        backend.sinks[1].on_task(20, "ok", "")
        assert second_sink.tasks == [(20, "ok", "")]
        await assert_built(backend, 3)  # and the second one's replacement follows
        for handle in (first, second):
            await handle.close()


async def test_after_a_cell_had_to_wait_the_next_replacement_is_built_at_once(
    mock_clock: trio.testing.MockClock,
) -> None:
    # Cells that find the pool empty come faster than isolates are built (back to
    # back): delaying the replacement until the cell's first evaluation would only
    # make the next cell wait longer, so it is built beside the cell.
    async with warm_pool() as (warm, backend):
        first = await take(warm)  # found ready: its replacement waits
        assert len(backend.handles) == 1
        second = await take(warm)  # found the pool empty and waited
        # No report from either cell and no clock jump: the third is built already.
        assert len(backend.handles) == 3
        third = await take(warm)  # and the next cell finds it ready
        assert len(backend.handles) == 3
        for handle in (first, second, third):
            await handle.close()


async def test_closing_the_pool_does_not_wait_out_a_delayed_replacement(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with warm_pool() as (warm, backend):
        taken = await take(warm)
        with trio.fail_after(REFILL_DELAY / 2):  # MockClock: only a jump could pass it
            await warm.aclose()
        assert len(backend.handles) == 1  # nothing was built for a closed pool
        await taken.close()


async def test_back_to_back_the_pool_builds_its_burst_at_once(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with warm_pool(burst=2) as (warm, backend):
        first = await take(warm)  # found ready: its replacement waits for it
        assert len(backend.handles) == 1
        second = await take(warm)  # waited: the pending one was built and taken ...
        assert len(backend.handles) == 4  # ... and two more are built side by side
        third = await take(warm)  # found one ready, and one more is ready
        assert len(backend.handles) == 4
        fourth = await take(warm)  # found the last one ready: paced again, so ...
        assert len(backend.handles) == 4  # ... its replacement waits for it
        mock_clock.jump(REFILL_DELAY * 1.1)
        await assert_built(backend, 5)  # and the pool goes back to one isolate
        assert len(warm._ready) == 1
        for handle in (first, second, third, fourth):
            await handle.close()


async def test_after_a_burst_the_pool_goes_back_to_its_count(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with warm_pool(burst=2) as (warm, backend):
        first = await take(warm)
        second = await take(warm)  # waited: two are built side by side, both ready
        assert len(backend.handles) == 4
        mock_clock.jump(BURST_IDLE * 0.9)
        await trio.testing.wait_all_tasks_blocked()
        assert not any(handle.closed for handle in backend.handles)
        assert len(warm._ready) == 2  # the next cell of a burst finds one at once
        # No cell took one for BURST_IDLE: the one beyond the pool's count is closed.
        mock_clock.jump(BURST_IDLE * 0.2)
        await trio.testing.wait_all_tasks_blocked()
        assert [handle.closed for handle in backend.handles[2:]] == [False, True]
        assert len(warm._ready) == 1
        third = await take(warm)  # and the one kept still serves the next cell
        assert len(backend.handles) == 4
        for handle in (first, second, third):
            await handle.close()


async def test_closing_the_pool_waits_for_a_trim_that_is_closing_isolates(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A trim that has begun closing the isolates beyond the pool's count finishes
    (shielded); the pool's ``aclose`` must not return before it, or the engine would
    close the threads that trim is closing isolates on (found as "BlockingWorkers is
    closed" in a default engine's teardown)."""
    release = trio.Event()
    closing: list[int] = []

    class SlowHandle(FakeHandle):
        async def _close(self) -> None:
            closing.append(self.number)
            if self.number == 3:  # the one the trim closes; the others close at once
                await release.wait()
            await super()._close()

    backend = FakeBackend()

    async def create(sink: IsolateSink, limits: IsolateLimits) -> FakeHandle:
        await trio.lowlevel.checkpoint()
        backend.sinks.append(sink)
        backend.handles.append(SlowHandle(len(backend.handles)))
        return backend.handles[-1]

    backend.create_isolate = create  # type: ignore[method-assign]
    closed = trio.Event()
    async with trio.open_nursery() as nursery:
        warm = WarmIsolates(backend, nursery, count=1, burst=2, limits=LIMITS)
        warm.refill()
        await trio.testing.wait_all_tasks_blocked()
        taken = [await take(warm), await take(warm)]  # the second waited: a burst
        assert len(warm._ready) == 2
        mock_clock.jump(BURST_IDLE * 1.1)
        await trio.testing.wait_all_tasks_blocked()
        assert closing == [3]  # the trim is closing the isolate beyond the count

        async def close_pool() -> None:
            await warm.aclose()
            closed.set()

        nursery.start_soon(close_pool)
        await trio.testing.wait_all_tasks_blocked()
        held = not closed.is_set()  # held by the trim's close in progress ...
        release.set()  # (released first either way, so a failure cannot hang)
        assert held
        await trio.testing.wait_all_tasks_blocked()
        assert closed.is_set()
        for handle in taken:
            await handle.close()
    assert all(handle.closed for handle in backend.handles)
