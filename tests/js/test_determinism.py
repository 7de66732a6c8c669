"""A cell's nondeterminism, which a replay must see again (``js/clock.js``):
``Math.random`` seeded by the start command, the clock (``Date.now()``, ``new Date()``,
``Date()``, ``Temporal.Now``) read live and reported, or handed back from a replay's
recorded readings.

These tests wrap ``Isolate.start`` to pass a seed, or to send the ``replay`` command
(the recorded readings) before the start, as a replay does (``_engine/journal.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from code_mode import Completed, Text
from code_mode._engine.isolate import Isolate
from tests.js_support import run

ORIGINAL_START = Isolate.start
SEQUENCE = "text(JSON.stringify(Array.from({ length: 5 }, () => Math.random())))"


def start_with(
    monkeypatch: pytest.MonkeyPatch,
    *,
    random_seed: int | None = None,
    clock: Sequence[float] = (),
) -> None:
    def start(self: Isolate, listener: Any, **kwargs: Any) -> None:
        if clock:
            self._send_text('{"t":"replay","clock":' + json.dumps(list(clock)) + "}")
        ORIGINAL_START(self, listener, seed=random_seed, **kwargs)

    monkeypatch.setattr(Isolate, "start", start)


def values(event: object) -> Any:
    assert isinstance(event, Completed) and event.error_text is None, event
    item = event.content_items[0]
    assert isinstance(item, Text)
    return json.loads(item.text)


async def test_a_seed_gives_the_same_sequence(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_with(monkeypatch, random_seed=42)
    first = values(await run(isolation, SEQUENCE))
    again = values(await run(isolation, SEQUENCE))
    start_with(monkeypatch, random_seed=43)
    other = values(await run(isolation, SEQUENCE))
    assert first == again
    assert other != first
    assert all(0 <= value < 1 for value in first + other)
    assert len(set(first)) == 5


async def test_without_a_seed_each_cell_draws_its_own(isolation: str) -> None:
    first = values(await run(isolation, SEQUENCE))
    second = values(await run(isolation, SEQUENCE))
    assert first != second


async def test_the_generator_looks_uniform(isolation: str) -> None:
    source = (
        "const counts = new Array(10).fill(0);"
        " for (let i = 0; i < 1e5; i++) counts[Math.floor(Math.random() * 10)]++;"
        " text(JSON.stringify(counts))"
    )
    counts = values(await run(isolation, source))
    assert sum(counts) == 100_000
    assert all(9_400 < count < 10_600 for count in counts), counts


async def test_a_replayed_clock_returns_its_values_then_the_live_clock(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_with(monkeypatch, clock=[1000, 2000, 3000])
    source = (
        "text(JSON.stringify([Date.now(), new Date().getTime(), Date(), Date.now(),"
        " new Date(5).getTime()]))"
    )
    now, constructed, called, live, given = values(await run(isolation, source))
    assert (now, constructed, given) == (1000, 2000, 5)
    assert called.startswith("Thu Jan 01 1970")  # 3000 ms after the epoch
    assert live > 1_600_000_000_000


async def test_the_live_clock_is_the_real_one(isolation: str) -> None:
    source = "text(JSON.stringify([Date.now(), new Date().getTime(), typeof Date()]))"
    now, constructed, kind = values(await run(isolation, source))
    assert 0 <= constructed - now < 10_000 and now > 1_600_000_000_000
    assert kind == "string"


async def test_date_keeps_its_shape(isolation: str) -> None:
    source = (
        "text(JSON.stringify([Date.name, Date.length, Date.now.name, Math.random.name,"
        " new Date() instanceof Date, Object.getPrototypeOf(new Date(1)) === Date.prototype,"
        " Date.prototype.constructor === Date, String(Date.now), String(Math.random)]))"
    )
    assert values(await run(isolation, source)) == [
        "Date",
        7,
        "now",
        "random",
        True,
        True,
        True,
        "function () { [native code] }",
        "function () { [native code] }",
    ]


async def test_a_subclass_of_date_reads_the_clock(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_with(monkeypatch, clock=[7000])
    source = (
        "class D extends Date {}; const d = new D();"
        " text(JSON.stringify([d.getTime(), d instanceof D]))"
    )
    assert values(await run(isolation, source)) == [7000, True]
