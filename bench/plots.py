"""PNG plots of the results of ``bench.run`` and ``bench.sessions`` (needs matplotlib,
which is imported only from here)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from .stats import MiB

#: Colours per series: isolation modes, the mini-racer baseline, a second baseline.
COLORS = {
    "process": "#1f77b4",
    "thread": "#2ca02c",
    "default": "#1f77b4",
    "baseline": "#ff7f0e",
    "raw": "#ff7f0e",
    "baseline_confirmed": "#9467bd",
}


def _color(name: str) -> str:
    return COLORS.get(name.split()[0], "#7f7f7f")


def _label(name: str, result: dict[str, Any] | None = None) -> str:
    if name in ("baseline", "raw"):
        if result is not None:
            return f"mini-racer: {result['baseline_label']}"
        return "mini-racer"
    if name == "baseline_confirmed":
        return "mini-racer: cancel -> next eval answers"
    if name == "baseline burst":
        label = result["baseline_label"] if result is not None else ""
        return f"mini-racer: {label}, back to back"
    if name.endswith(" burst"):
        return f"code_mode ({name.split()[0]}), cells back to back"
    return f"code_mode ({name})"


def _cdf_axes(ax: Any, series: dict[str, list[float]], result: dict[str, Any] | None) -> None:
    for name, quantiles in series.items():
        if not quantiles:
            continue
        fractions = [index / (len(quantiles) - 1) for index in range(len(quantiles))]
        style = "--" if name.endswith(" burst") else "-"
        ax.plot(quantiles, fractions, style, label=_label(name, result), color=_color(name))
    ax.set_ylabel("fraction of samples")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _latency_plot(result: dict[str, Any], path: Path, log: bool = True) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    _cdf_axes(ax, result["cdf"], result)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(result["unit"])
    ax.set_title(f"{result['id']}: {result['title']} (CDF)", fontsize=10)
    return _save(fig, path)


def _calls_plot(b2: dict[str, Any] | None, b3: dict[str, Any] | None, path: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    groups: list[tuple[dict[str, Any], str]] = [
        (result, label)
        for result, label in ((b2, "sequential (B2)"), (b3, "Promise.all (B3)"))
        if result is not None
    ]
    series = [*groups[0][0]["modes"], "baseline"] if groups else []
    width = 0.8 / max(1, len(series))
    for index, name in enumerate(series):
        values = [
            result["baseline"]["median"] if name == "baseline" else result["ours"][name]["median"]
            for result, _ in groups
        ]
        positions = [
            group + (index - (len(series) - 1) / 2) * width for group in range(len(groups))
        ]
        left.bar(positions, values, width, label=_label(name), color=_color(name))
    left.set_xticks(list(range(len(groups))), [label for _, label in groups])
    left.set_ylabel("us per tool call (median)")
    left.set_title("cost per tool call", fontsize=10)
    left.legend(fontsize=8)
    left.grid(True, axis="y", alpha=0.3)
    if b2 is not None:
        _cdf_axes(right, b2["gaps"]["cdf"], None)
        right.set_xscale("log")
        right.set_xlabel("us between consecutive sequential calls")
        right.set_title("B2: time between sequential calls (CDF)", fontsize=10)
    else:
        right.set_visible(False)
    return _save(fig, path)


def _scale_plot(b6: dict[str, Any], path: Path) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for side in b6["sides"]:
        points = [point for point in b6["points"][side] if "idle" in point and "busy" in point]
        cells = [point["cells"] for point in points]
        style = {"color": _color(side), "label": _label(side)}
        axes[0].plot(cells, [p["busy"]["wall_s"] for p in points], "o-", **style)
        axes[1].plot(cells, [p["idle"]["rss_per_cell_mib"] for p in points], "o-", **style)
        axes[2].plot(cells, [p["idle"]["threads_per_cell"] for p in points], "o-", **style)
    axes[1].axhline(2.0, color="red", linestyle="--", linewidth=1, label="target 2 MiB")
    axes[2].axhline(1.0, color="red", linestyle="--", linewidth=1, label="target 1")
    axes[0].set_yscale("log")
    titles = (
        f"wall time, {b6['calls']} tool calls per cell (s)",
        "RSS per idle live cell (MiB)",
        "OS threads per idle live cell",
    )
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("concurrent cells")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[1].set_ylim(bottom=0)
    axes[2].set_ylim(bottom=0)
    return _save(fig, path)


def _targets_plot(results: dict[str, Any], path: Path) -> Path:
    targets = [t for t in results["targets"] if t["unit"] == "x" and t["value"] is not None]
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.45 * max(1, len(targets))))
    names = [f"{t['bench_id']} [{t['mode']}]: {t['name']}" for t in targets]
    values = [t["value"] for t in targets]
    colors = ["#2ca02c" if t["passed"] else "#d62728" for t in targets]
    ax.barh(names, values, color=colors)
    for index, target in enumerate(targets):
        ax.plot([target["limit"]] * 2, [index - 0.4, index + 0.4], color="black", linewidth=2)
        if target["aim"] is not None:
            ax.plot([target["aim"]] * 2, [index - 0.4, index + 0.4], "k:", linewidth=1.5)
    finite = [v for v in values if not math.isnan(v)]
    if finite and max(finite) > 20:
        ax.set_xscale("log")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlabel("ratio: green PASS, red FAIL; target = solid line, aim = dotted")
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def write_plots(results: dict[str, Any], out: Path) -> list[Path]:
    """Write one PNG per benchmark group into ``out``; returns their paths."""
    benchmarks = results["benchmarks"]
    written: list[Path] = []
    if "B1" in benchmarks:
        written.append(_latency_plot(benchmarks["B1"], out / "b1_cell_latency.png"))
    if "B2" in benchmarks or "B3" in benchmarks:
        written.append(
            _calls_plot(benchmarks.get("B2"), benchmarks.get("B3"), out / "b2_b3_tool_calls.png")
        )
    if "B4" in benchmarks:
        written.append(_latency_plot(benchmarks["B4"], out / "b4_terminate.png"))
    if "B5" in benchmarks:
        written.append(_latency_plot(benchmarks["B5"], out / "b5_yield.png", log=False))
    if "B6" in benchmarks:
        written.append(_scale_plot(benchmarks["B6"], out / "b6_scale.png"))
    if results["targets"]:
        written.append(_targets_plot(results, out / "targets.png"))
    return written


def sessions_plot(results: dict[str, Any], path: Path) -> Path:
    """``bench.sessions``' S1: the tree's memory and a cell's latency against the
    number of idle sessions open, per isolation mode."""
    fig, (memory, latency) = plt.subplots(1, 2, figsize=(10, 4))
    for mode, colour in (("process", "tab:blue"), ("thread", "tab:orange")):
        points = [p for p in results["S1"] if p.get("ok") and p["mode"] == mode]
        counts = [p["sessions"] for p in points]
        memory.plot(
            counts,
            [p["after"]["pss"] / MiB for p in points],
            "o-",
            color=colour,
            label=f"{mode}: tree PSS",
        )
        for key, style, label in (
            ("latency_crowded_ms", "o-", "N sessions open"),
            ("latency_alone_ms", "x--", "one session"),
        ):
            latency.plot(
                counts, [p[key] for p in points], style, color=colour, label=f"{mode}: {label}"
            )
    for axes in (memory, latency):
        axes.set_xscale("log")
        axes.set_xlabel("idle sessions open (each ran one cell)")
        axes.legend(fontsize=8)
        axes.grid(alpha=0.3)
    memory.set_ylabel("whole process tree, MiB (PSS)")
    memory.set_title("S1: memory of idle sessions")
    latency.set_ylabel("median cell latency, ms")
    latency.set_title("S1: latency with sessions open")
    return _save(fig, path)
