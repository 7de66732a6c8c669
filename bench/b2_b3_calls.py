"""B2 and B3, tool calls from a cell: sequential ``await tools.echo(...)`` (B2) and a
``Promise.all`` of them (B3), cost per call, against mini-racer's
``wrap_py_function`` in asyncio."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .benchmark_result import US, Samples, cpu_medians, summarize_benchmark
from .rounds import in_children, with_baseline
from .side import RAW
from .sizes import Sizes
from .stats import cdf, ratio, summarize


def _calls(
    sizes: Sizes, modes: Sequence[str], *, parallel: bool
) -> tuple[Samples, Samples, dict[str, dict[str, float]]]:
    bench_id = "B3" if parallel else "B2"
    params = {
        "calls": sizes.b3_calls if parallel else sizes.b2_calls,
        "reps": sizes.b3_reps if parallel else sizes.b2_reps,
    }
    pooled = in_children(
        bench_id,
        with_baseline(modes),
        sizes.rounds,
        params,
        ("per_call", "gaps", "cpu_per_call", "waits_per_call"),
    )
    per_call: Samples = {"baseline": pooled[RAW]["per_call"]}
    gaps: Samples = {"baseline": pooled[RAW]["gaps"]}
    for mode in modes:
        per_call[mode] = pooled[mode]["per_call"]
        gaps[mode] = pooled[mode]["gaps"]
    cpu = cpu_medians(pooled, ("cpu_per_call",), US)
    for side, series in pooled.items():  # thread wake-ups per call (a count, unscaled)
        cpu[side]["thread waits per call"] = summarize(series["waits_per_call"]).median
    return per_call, gaps, cpu


def bench_b2(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B2: sequential ``await tools.echo(...)``, cost per call."""
    per_call, gaps, cpu = _calls(sizes, modes, parallel=False)
    return summarize_benchmark(
        "B2",
        f"sequential tool calls ({sizes.b2_calls} per cell), per call",
        "us",
        per_call,
        US,
        "wrap_py_function loop (asyncio)",
        calls=sizes.b2_calls,
        cpu=cpu,
        gaps={
            "summary": {name: summarize(values, US).to_json() for name, values in gaps.items()},
            "cdf": {name: cdf(values, US) for name, values in gaps.items()},
        },
    )


def bench_b3(sizes: Sizes, modes: Sequence[str], b2: dict[str, Any] | None) -> dict[str, Any]:
    """B3: ``Promise.all`` of tool calls, cost per call (compared with B2's)."""
    per_call, _, cpu = _calls(sizes, modes, parallel=True)
    result = summarize_benchmark(
        "B3",
        f"parallel tool calls ({sizes.b3_calls} in Promise.all), per call",
        "us",
        per_call,
        US,
        "wrap_py_function + Promise.all (asyncio)",
        calls=sizes.b3_calls,
        cpu=cpu,
    )
    result["vs_b2"] = {
        mode: (
            ratio(result["ours"][mode]["median"], b2["ours"][mode]["median"])
            if b2 is not None and mode in b2["ours"]
            else math.nan
        )
        for mode in modes
    }
    return result
