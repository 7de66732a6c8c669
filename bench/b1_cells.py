"""B1, cell latency: ``execute`` -> ``Completed`` of ``text("done")``, against
``MiniRacer()`` + ``eval`` + ``close()``, paced and back to back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .benchmark_result import MS, Samples, cpu_medians, summarize_benchmark
from .rounds import in_children, with_baseline
from .side import RAW
from .sizes import Sizes
from .stats import cdf, ratio, summarize


def bench_b1(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B1: cell latency, ``execute`` -> ``Completed`` of ``text("done")``.

    Two figures per side. *Latency*: cells started ``b1_gap`` apart (an agent thinks
    between two cells; the baseline waits as long between its evaluations), so each
    cell meets the system at rest. *Throughput*: the same back to back. Both of ours
    are compared with the baseline's best figure, paced or back to back, whichever
    is faster: pacing can slow the baseline down (its CPU clocks down, its caches go
    cold), and a ratio against a handicapped baseline would flatter us."""
    params = {"cells": sizes.b1_cells, "gap": sizes.b1_gap, "burst_cells": sizes.b1_burst_cells}
    pooled = in_children(
        "B1",
        with_baseline(modes),
        sizes.rounds,
        params,
        ("paced", "burst", "cpu_paced", "cpu_burst"),
    )
    samples: Samples = {"baseline": pooled[RAW]["paced"]}
    samples.update({mode: pooled[mode]["paced"] for mode in modes})
    result = summarize_benchmark(
        "B1",
        f"cell latency: execute -> Completed, cells {sizes.b1_gap * 1000:.0f} ms apart"
        " unless marked",
        "ms",
        samples,
        MS,
        "MiniRacer() + eval + close()",
    )
    result["gap_s"] = sizes.b1_gap
    burst_baseline = summarize(pooled[RAW]["burst"], MS).to_json()
    result["burst_baseline"] = burst_baseline
    result["burst"] = {mode: summarize(pooled[mode]["burst"], MS).to_json() for mode in modes}
    paced_median = result["baseline"]["median"]
    burst_median = burst_baseline["median"]
    best_is_burst = burst_median < paced_median
    best = burst_median if best_is_burst else paced_median
    result["baseline_best"] = {"median": best, "series": "burst" if best_is_burst else "paced"}
    result["ratio"] = {mode: ratio(result["ours"][mode]["median"], best) for mode in modes}
    result["burst_ratio"] = {mode: ratio(result["burst"][mode]["median"], best) for mode in modes}
    result["cpu"] = cpu_medians(pooled, ("cpu_paced", "cpu_burst"), MS)
    result["cdf"]["baseline burst"] = cdf(pooled[RAW]["burst"], MS)
    for mode in modes:
        result["cdf"][f"{mode} burst"] = cdf(pooled[mode]["burst"], MS)
    return result
