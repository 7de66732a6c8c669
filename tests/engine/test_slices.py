"""Long work on the trio thread in slices (``_engine/_slices.py``): the other tasks run
between two slices, the work's result or error comes back, and a cancelled caller
closes the work where it stood."""

from __future__ import annotations

import time
from collections.abc import Generator

import pytest
import trio

from code_mode._engine._slices import SLICE_SECONDS, in_slices


def busy_steps(count: int, step_seconds: float, log: list[str]) -> Generator[None, None, int]:
    """``count`` steps that each keep the thread busy for ``step_seconds``."""
    try:
        for _ in range(count):
            end = time.perf_counter() + step_seconds
            while time.perf_counter() < end:
                pass
            log.append("step")
            yield
        return count
    finally:
        log.append("closed")


async def test_other_tasks_run_between_the_slices() -> None:
    log: list[str] = []

    async def tick() -> None:
        while True:
            log.append("tick")
            await trio.lowlevel.checkpoint()

    # 40 steps of a quarter of a slice each: ten slices at least.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        assert await in_slices(busy_steps(40, SLICE_SECONDS / 4, log)) == 40
        nursery.cancel_scope.cancel()
    work = log[log.index("step") : log.index("closed")]
    assert work.count("step") == 40
    # The ticker ran between the slices: at most two slices in a row (each pass of the
    # trio loop runs each task once, in an order trio shuffles: the last of one pass
    # may be followed by the first of the next), each of at most five steps (four fit
    # in a slice; the fifth ends it late).
    runs = [run for run in "".join("s" if e == "step" else "t" for e in work).split("t") if run]
    assert max(len(run) for run in runs) <= 10
    assert len(runs) >= 4


async def test_an_error_of_the_work_is_raised_to_the_caller() -> None:
    def failing() -> Generator[None, None, None]:
        yield
        raise ValueError("malformed")

    with pytest.raises(ValueError, match="malformed"):
        await in_slices(failing())


async def test_a_cancelled_caller_closes_the_work_between_two_slices() -> None:
    log: list[str] = []
    with trio.move_on_after(SLICE_SECONDS * 3) as scope:
        await in_slices(busy_steps(10_000, SLICE_SECONDS / 4, log))
    assert scope.cancelled_caught
    assert log[-1] == "closed"
    assert log.count("step") < 10_000


async def test_works_of_several_tasks_take_turns() -> None:
    log: list[str] = []
    order: list[str] = []

    def named(name: str) -> Generator[None, None, str]:
        for _ in range(20):
            order.append(name)
            yield from busy_steps(1, SLICE_SECONDS / 2, log)
        return name

    results: list[str] = []

    async def run(name: str) -> None:
        results.append(await in_slices(named(name)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, "a")
        nursery.start_soon(run, "b")
    assert sorted(results) == ["a", "b"]
    # Both progressed before either finished: the turn went from one to the other.
    first_done = min(len(order) - order[::-1].index(name) for name in ("a", "b"))
    assert set(order[:first_done]) == {"a", "b"}
