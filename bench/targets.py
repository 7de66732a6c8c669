"""The targets the benchmarks are judged by, per isolation mode.

Ratios against the baseline's best figure measured in the same run, except B5 and B6,
which have absolute bounds. A ``target`` is PASS or FAIL; an ``aim`` is only reported.
"""

from __future__ import annotations

import math
from typing import Any

import attrs


@attrs.frozen
class Target:
    bench_id: str
    mode: str
    name: str
    value: float
    limit: float
    aim: float | None
    unit: str
    kind: str = "target"  # "target" is PASS/FAIL; "aim" is only reported

    @property
    def passed(self) -> bool:
        return not math.isnan(self.value) and self.value <= self.limit

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "passed": self.passed}


def _mode_targets(benchmarks: dict[str, Any], mode: str) -> list[Target]:
    """The targets of issue "benchmarks, round 2" for one isolation mode: ratios
    against the baseline's best figure measured in the same run, except B5 and B6
    (absolute bounds)."""
    found: list[tuple[Any, ...]] = []
    b1, b2, b3 = benchmarks.get("B1"), benchmarks.get("B2"), benchmarks.get("B3")
    b4, b5, b6 = benchmarks.get("B4"), benchmarks.get("B5"), benchmarks.get("B6")
    if b1 is not None and mode in b1["ratio"]:
        found.append(("B1", "latency, paced / baseline's best", b1["ratio"][mode], 0.3, 0.1, "x"))
        found.append(
            (
                "B1",
                "throughput, back to back / baseline's best",
                b1["burst_ratio"][mode],
                1.0,
                0.5,
                "x",
            )
        )
    if b2 is not None and mode in b2["ratio"]:
        found.append(
            ("B2", "sequential call cost / wrap_py_function", b2["ratio"][mode], 0.5, 0.25, "x")
        )
    if b3 is not None and mode in b3["vs_b2"]:
        found.append(
            ("B3", "parallel call cost / our sequential (B2)", b3["vs_b2"][mode], 1.0, 0.5, "x")
        )
    if b4 is not None and mode in b4["ratio"]:
        found.append(("B4", "terminate / cancel-and-confirm", b4["ratio"][mode], 2.0, 1.0, "x"))
        found.append(("B4", "terminate p99", b4["ours"][mode]["p99"], 20.0, None, "ms", "aim"))
    if b5 is not None and mode in b5["excess"]:
        found.append(
            ("B5", "yield overshoot - trio.sleep overshoot", b5["excess"][mode], 5.0, None, "ms")
        )
    if b6 is not None and mode in b6["summary"]:
        summary = b6["summary"][mode]
        wanted = max(b6["counts"])
        found += [
            ("B6", "RSS per idle live cell", summary["rss_per_idle_cell_mib"], 2.0, None, "MiB"),
            ("B6", "OS threads per live cell", summary["threads_per_live_cell"], 1.0, None, ""),
            (
                "B6",
                f"{wanted} concurrent cells complete (shortfall)",
                float(wanted - summary["largest_ok"]),
                0.0,
                None,
                "cells",
            ),
        ]
    return [Target(bench_id, mode, *rest) for bench_id, *rest in found]


def evaluate_targets(benchmarks: dict[str, Any]) -> list[Target]:
    """The brief's targets, per isolation mode, from whichever benchmarks ran."""
    modes: list[str] = []
    for result in benchmarks.values():
        modes += [mode for mode in result["modes"] if mode not in modes]
    return [target for mode in modes for target in _mode_targets(benchmarks, mode)]
