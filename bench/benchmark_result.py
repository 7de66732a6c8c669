"""The dictionary one benchmark (B1-B5) reports, built from its pooled samples.

Samples are seconds; a benchmark reports them in its unit (``MS`` or ``US`` is the
factor), as a summary per series (``baseline`` and each isolation mode), the ratio of
each mode's median to the baseline's, and each series' distribution for the plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .rounds import Pooled
from .stats import cdf, ratio, summarize

MS = 1e3
US = 1e6

#: ``"baseline"`` or an isolation mode -> samples (seconds).
Samples = dict[str, list[float]]


def summarize_benchmark(
    bench_id: str,
    title: str,
    unit: str,
    samples: Samples,
    scale: float,
    baseline_label: str,
    **extra: Any,
) -> dict[str, Any]:
    """One benchmark: a summary per series (``baseline`` and each mode) and the ratio
    of each mode's median to the baseline's."""
    summaries = {name: summarize(values, scale) for name, values in samples.items()}
    base = summaries["baseline"]
    modes = [name for name in samples if name != "baseline"]
    return {
        "id": bench_id,
        "title": title,
        "unit": unit,
        "baseline_label": baseline_label,
        "modes": modes,
        "baseline": base.to_json(),
        "ours": {mode: summaries[mode].to_json() for mode in modes},
        "ratio": {mode: ratio(summaries[mode].median, base.median) for mode in modes},
        "cdf": {name: cdf(values, scale) for name, values in samples.items()},
        **extra,
    }


def cpu_medians(pooled: Pooled, keys: Sequence[str], scale: float) -> dict[str, dict[str, float]]:
    """Median CPU time of the process tree per cell or call, per side and series
    (information: steadier than wall time on a shared machine)."""
    return {
        side: {key: summarize(series[key], scale).median for key in keys}
        for side, series in pooled.items()
    }
