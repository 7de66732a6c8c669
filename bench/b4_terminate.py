"""B4, terminate latency: ``terminate()`` of ``while (true) {}`` until ``Terminated``,
against cancelling mini-racer's ``eval_cancelable`` until V8 confirmed the stop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .benchmark_result import MS, Samples, summarize_benchmark
from .rounds import in_children, with_baseline
from .side import RAW
from .sizes import Sizes
from .stats import cdf, ratio, summarize


def bench_b4(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B4: ``terminate()`` of ``while (true) {}`` until ``Terminated``.

    ``Terminated`` means the JavaScript has stopped, so the baseline is the same
    promise: ``task.cancel()`` of ``eval_cancelable`` until a following evaluation in
    that context answers (V8 confirmed the stop). How long until ``CancelledError``
    alone (asyncio gives up waiting; V8 may still be running) is reported beside it."""
    pooled = in_children(
        "B4",
        with_baseline(modes),
        sizes.rounds,
        {"reps": sizes.b4_reps},
        ("terminated", "confirmed", "cancelled"),
    )
    samples: Samples = {"baseline": pooled[RAW]["confirmed"]}
    samples.update({mode: pooled[mode]["terminated"] for mode in modes})
    result = summarize_benchmark(
        "B4",
        "terminate latency: terminate() -> Terminated",
        "ms",
        samples,
        MS,
        "eval_cancelable: task.cancel() -> the next eval answers",
    )
    cancel_only = summarize(pooled[RAW]["cancelled"], MS)
    result["baseline_cancel_only"] = cancel_only.to_json()
    result["ratio_cancel_only"] = {
        mode: ratio(result["ours"][mode]["median"], cancel_only.median) for mode in modes
    }
    result["cdf"]["baseline cancel only"] = cdf(pooled[RAW]["cancelled"], MS)
    return result
