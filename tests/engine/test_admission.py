"""The placement's memory budgets and quarantine, on stand-in workers (no processes).

A worker admits cells while their charges (memory limit plus the isolate's reserve)
fit its budget; a cell that does not fit waits, and fails after ``wait_timeout`` with an
error naming the settings. A session struck by worker deaths is placed on quarantine
workers, beyond ``worker_processes``, for ``quarantine_seconds``.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from code_mode._engine._placement import Place, Placer, Seat
from code_mode._engine.config import ISOLATE_RESERVE_BYTES, WORKER_RESERVE_BYTES, EngineConfig
from code_mode._v8 import IsolateUnavailable

MiB = 1024 * 1024


class _Worker:
    """What the placement reads of a worker process."""

    def __init__(self) -> None:
        self.alive = True
        self.retiring = False
        self.ready = True
        self.load = 0

    def retire(self) -> None:
        self.retiring = True


def _placer(size: int = 1, budget: int | None = 300, **settings: object) -> Placer:
    placer: Placer

    def start_worker(*, quarantine: bool = False) -> Place:
        place = Place(_Worker(), quarantine=quarantine)  # type: ignore[arg-type]
        placer.places.append(place)
        return place

    placer = Placer(
        "shared",
        size,
        start_worker=start_worker,
        memory_budget=budget,
        **settings,  # type: ignore[arg-type]
    )
    return placer


def test_the_budget_leaves_the_workers_own_memory_out() -> None:
    config = EngineConfig(worker_memory_overcommit=1.0)
    assert config.worker_memory_budget_bytes == 2048 * MiB - WORKER_RESERVE_BYTES
    # Six cells of the default 256 MiB (each with its isolate's reserve) per worker.
    assert config.worker_memory_budget_bytes // (256 * MiB + ISOLATE_RESERVE_BYTES) == 6
    # The default overcommits 16 times: 106 of them.
    default = EngineConfig().worker_memory_budget_bytes
    assert default == 16 * (2048 * MiB - WORKER_RESERVE_BYTES)
    assert default // (256 * MiB + ISOLATE_RESERVE_BYTES) == 106
    assert EngineConfig(worker_memory_limit_bytes=None).worker_memory_budget_bytes is None
    doubled = EngineConfig(worker_memory_overcommit=2.0).worker_memory_budget_bytes
    assert doubled == 2 * (2048 * MiB - WORKER_RESERVE_BYTES)


async def test_a_cell_waits_for_memory_and_is_admitted_when_another_ends() -> None:
    placer = _placer(budget=300)
    seat = Seat()
    place = await placer.place(seat, 200)
    placer.opened(place, seat, 200)
    admitted: list[Place] = []

    async def second() -> None:
        admitted.append(await placer.place(seat, 200))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(second)
        await trio.testing.wait_all_tasks_blocked()
        assert admitted == []  # 200 + 200 > 300: it waits
        placer.closed(place, seat, 200)
    assert admitted == [place]


async def test_a_cell_that_never_fits_fails_naming_the_settings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    placer = _placer(budget=300, wait_timeout=10.0)
    seat = Seat()
    with pytest.raises(IsolateUnavailable, match=r"worker_memory_overcommit"):
        placer.place_now(seat, 301)  # above the budget on its own: at once
    place = await placer.place(seat, 200)
    placer.opened(place, seat, 200)
    with pytest.raises(IsolateUnavailable, match=r"worker_wait_timeout") as raised:
        await placer.place(Seat(), 200)
    assert "worker_memory_limit_bytes" in str(raised.value)


async def test_a_struck_session_runs_on_a_quarantine_worker_for_a_while(
    autojump_clock: trio.testing.MockClock,
) -> None:
    placer = _placer(size=1, budget=None, quarantine_after=2, quarantine_seconds=600.0)
    culprit, bystander = Seat(), Seat()
    shared = placer.place_now(bystander)
    assert shared is not None
    placer.opened(shared, bystander)
    placer.opened(shared, culprit)
    placer.strike(culprit)
    assert placer.place_now(culprit) is shared  # one death: not yet
    placer.strike(culprit)
    quarantine = placer.place_now(culprit)
    assert quarantine is not None and quarantine.quarantine
    assert quarantine is not shared  # beyond worker_processes=1
    placer.opened(quarantine, culprit)
    assert placer.place_now(bystander) is shared  # others never go there
    assert placer.place_now(Seat()) is shared
    await trio.sleep(601)  # the quarantine is over
    assert placer.place_now(culprit) is shared
    placer.opened(shared, culprit)
    assert quarantine.worker.retiring  # nobody is seated there any more
