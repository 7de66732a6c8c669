"""Summary statistics of timing samples (no third-party dependencies)."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from typing import Any

import attrs


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (0..1) by linear interpolation between order statistics."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return ordered[low]
    weight = position - low
    return ordered[low] * (1 - weight) + ordered[high] * weight


@attrs.frozen
class Summary:
    """Distribution of one measured quantity (all in the same unit)."""

    n: int
    median: float
    p90: float
    p99: float
    mean: float
    min: float
    max: float

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def summarize(samples: Sequence[float], scale: float = 1.0) -> Summary:
    """Summarise ``samples`` multiplied by ``scale`` (e.g. ``1e3`` for seconds -> ms)."""
    values = [sample * scale for sample in samples]
    if not values:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan)
    return Summary(
        n=len(values),
        median=statistics.median(values),
        p90=percentile(values, 0.90),
        p99=percentile(values, 0.99),
        mean=statistics.fmean(values),
        min=min(values),
        max=max(values),
    )


def ratio(ours: float, baseline: float) -> float:
    """``ours / baseline``; NaN when the baseline is zero or missing."""
    if not baseline or math.isnan(baseline) or math.isnan(ours):
        return math.nan
    return ours / baseline


def _children(pid: int) -> list[int]:
    children: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return children
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                children += [int(child) for child in listing.read().split()]
        except OSError:
            continue
    return children


def process_tree(root: int | None = None) -> list[int]:
    """``root`` (default: this process) and all its descendants."""
    pids = [os.getpid() if root is None else root]
    index = 0
    while index < len(pids):
        pids += _children(pids[index])
        index += 1
    return pids


def tree_threads() -> int:
    """OS threads of this process and its descendants (worker processes included)."""
    total = 0
    for pid in process_tree():
        try:
            total += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return total


def tree_rss_bytes() -> int:
    """Resident set size of this process and its descendants, from ``statm``."""
    total = 0
    for pid in process_tree():
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE")
