"""The B1-B6 suite: run the selected benchmarks, each mode and the baseline in
children of their own, and judge the targets."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import ours
from .b1_cells import bench_b1
from .b2_b3_calls import bench_b2, bench_b3
from .b4_terminate import bench_b4
from .b5_yield import bench_b5
from .b6_scale import bench_b6
from .provenance import run_meta
from .sizes import QUICK, Sizes
from .targets import evaluate_targets

#: Every benchmark, in the order they run (B3 is compared with B2's result).
ALL = ("B1", "B2", "B3", "B4", "B5", "B6")


def run_all(
    sizes: Sizes,
    only: Sequence[str] = ALL,
    progress: Callable[[str], None] | None = None,
    modes: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run the selected benchmarks for each isolation mode (default: all there are);
    returns ``{"meta", "benchmarks", "targets"}``."""
    say = progress or (lambda _message: None)
    modes = list(modes) if modes is not None else ours.isolation_modes()
    started = time.perf_counter()
    meta = run_meta(sizes == QUICK, sizes, modes)
    benchmarks: dict[str, Any] = {}
    for bench_id in ALL:
        if bench_id not in only:
            continue
        say(f"{bench_id} ...")
        begin = time.perf_counter()
        load_before = os.getloadavg()[0]
        if bench_id == "B1":
            benchmarks["B1"] = bench_b1(sizes, modes)
        elif bench_id == "B2":
            benchmarks["B2"] = bench_b2(sizes, modes)
        elif bench_id == "B3":
            benchmarks["B3"] = bench_b3(sizes, modes, benchmarks.get("B2"))
        elif bench_id == "B4":
            benchmarks["B4"] = bench_b4(sizes, modes)
        elif bench_id == "B5":
            benchmarks["B5"] = bench_b5(sizes, modes)
        else:
            benchmarks["B6"] = bench_b6(sizes, modes, say)
        benchmarks[bench_id]["seconds"] = time.perf_counter() - begin
        benchmarks[bench_id]["load"] = [load_before, os.getloadavg()[0]]
        say(f"{bench_id} done in {benchmarks[bench_id]['seconds']:.1f} s")
    meta["duration_s"] = time.perf_counter() - started
    meta["loadavg_end"] = os.getloadavg()
    return {
        "meta": meta,
        "benchmarks": benchmarks,
        "targets": [target.to_json() for target in evaluate_targets(benchmarks)],
    }
