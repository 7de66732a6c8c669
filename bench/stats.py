"""Summary statistics of timing samples (no third-party dependencies)."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from typing import Any

import attrs

MiB = 1024 * 1024


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


def cdf(samples: Sequence[float], scale: float, points: int = 101) -> list[float]:
    """The distribution of ``samples`` multiplied by ``scale``, as ``points`` evenly
    spaced quantiles (for plots, compact)."""
    if not samples:
        return []
    values = [sample * scale for sample in samples]
    return [percentile(values, index / (points - 1)) for index in range(points)]


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


def tree_cpu_seconds() -> float:
    """CPU time (user + system) used so far by this process and its live descendants,
    from ``/proc/<pid>/stat`` (clock ticks, including threads that have exited).

    Wall-clock latency on a shared machine depends on what else runs; the CPU a
    workload costs much less so, which makes it the steadier figure for comparing
    two versions of the code (differences over a whole loop, so that the tick
    resolution does not matter)."""
    ticks = 0
    for pid in process_tree():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_thread_waits() -> dict[int, int]:
    """Voluntary context switches of every live thread of this process tree, by
    thread id: each is a thread going to sleep until something wakes it, so their
    number per operation counts the thread wake-ups (crossings) that operation
    needs. Unlike time, the count hardly depends on what else the machine runs."""
    counts: dict[int, int] = {}
    for pid in process_tree():
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as status:
                    for line in status:
                        if line.startswith("voluntary_ctxt_switches:"):
                            counts[int(tid)] = int(line.split()[1])
                            break
            except (OSError, ValueError):
                continue
    return counts


def waits_between(before: dict[int, int], after: dict[int, int]) -> int:
    """Voluntary context switches between two :func:`tree_thread_waits` snapshots
    (threads that ended in between are not counted)."""
    return sum(count - before.get(tid, 0) for tid, count in after.items())
