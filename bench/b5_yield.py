"""B5, yield punctuality: how far ``YieldAfter(0.05)`` overshoots with a tool call in
flight, against the overshoot of ``trio.sleep(0.05)`` in the same process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .benchmark_result import MS, Samples, summarize_benchmark
from .rounds import in_children
from .sizes import Sizes


def bench_b5(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B5: overshoot of ``YieldAfter(0.05)`` with a tool call in flight, against the
    overshoot of ``trio.sleep(0.05)`` measured interleaved with it (same process)."""
    pooled = in_children("B5", list(modes), 1, {"reps": sizes.b5_reps}, ("ours", "sleep"))
    samples: Samples = {"baseline": [value for mode in modes for value in pooled[mode]["sleep"]]}
    samples.update({mode: pooled[mode]["ours"] for mode in modes})
    result = summarize_benchmark(
        "B5",
        "yield punctuality: YieldAfter(0.05) overshoot",
        "ms",
        samples,
        MS,
        "trio.sleep(0.05) overshoot",
    )
    result["excess"] = {
        mode: result["ours"][mode]["median"] - result["baseline"]["median"] for mode in modes
    }
    result["excess_p90"] = {
        mode: result["ours"][mode]["p90"] - result["baseline"]["p90"] for mode in modes
    }
    return result
