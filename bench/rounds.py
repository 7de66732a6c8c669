"""Rounds of fresh child processes, one per side, for the benchmarks B1-B5.

Each side (an isolation mode, or ``raw`` for the mini-racer baseline) measures in a
child of its own (``bench/side.py``). A benchmark runs several rounds; the order of the
sides alternates from one round to the next, so drift of the machine and "who runs
first" hit every side alike, and the samples of all rounds are pooled per side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .side import RAW, measure_in_child

#: ``{side: {key: samples}}``, the samples of every round pooled.
Pooled = dict[str, dict[str, list[float]]]


def with_baseline(modes: Sequence[str]) -> list[str]:
    """The sides of a benchmark compared with mini-racer: each mode, then ``raw``."""
    return [*modes, RAW]


def in_children(
    bench_id: str,
    sides: Sequence[str],
    rounds: int,
    params: dict[str, Any],
    keys: Sequence[str],
) -> Pooled:
    """``rounds`` rounds of one fresh child process per side, in alternating order;
    returns the samples each child reported under ``keys``, pooled per side."""
    pooled: Pooled = {side: {key: [] for key in keys} for side in sides}
    for index in range(rounds):
        for side in sides if index % 2 == 0 else reversed(sides):
            measured = measure_in_child(bench_id, side, params)
            for key in keys:
                pooled[side][key] += measured.get(key, [])
    return pooled
