"""What a ``bench.run`` run prints and writes into ``results.md``: a description of the
run (when, which code, what machine, how loaded) and three tables (the measurements,
B6's scale points, the targets), as aligned text or Markdown."""

from __future__ import annotations

import math
from typing import Any

from .side import RAW


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


MEASUREMENT_HEADER = ["id", "benchmark", "unit", "series", "median", "p90", "p99", "ratio", "n"]
SCALE_HEADER = [
    "cells",
    "side",
    "ok",
    "busy wall s",
    "idle start s",
    "threads/idle cell",
    "RSS MiB/idle cell",
    "peak threads",
    "peak RSS MiB",
]
TARGET_HEADER = ["id", "mode", "target", "value", "limit", "aim", "status"]


def _measurement_row(
    result: dict[str, Any], series: str, summary: dict[str, Any], ratio_value: float | None
) -> list[str]:
    return [
        result["id"],
        result["title"],
        result["unit"],
        series,
        _fmt(summary["median"]),
        _fmt(summary["p90"]),
        _fmt(summary["p99"]),
        "" if ratio_value is None else _fmt(ratio_value),
        str(summary["n"]),
    ]


def _rows_measurements(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for bench_id, result in results["benchmarks"].items():
        if bench_id == "B6":
            continue
        paced = " (paced)" if "burst" in result else ""
        for mode in result["modes"]:
            rows.append(
                _measurement_row(
                    result,
                    f"code_mode ({mode}){paced}",
                    result["ours"][mode],
                    result["ratio"][mode],
                )
            )
        label = f"baseline{paced}: {result['baseline_label']}"
        rows.append(_measurement_row(result, label, result["baseline"], None))
        for mode in result.get("burst", {}):
            label = f"code_mode ({mode}), back to back"
            rows.append(
                _measurement_row(result, label, result["burst"][mode], result["burst_ratio"][mode])
            )
        if "burst_baseline" in result:
            label = f"baseline, back to back: {result['baseline_label']}"
            rows.append(_measurement_row(result, label, result["burst_baseline"], None))
        for side, series in result.get("cpu", {}).items():
            for key, value in series.items():
                what = key.replace("cpu_", "").replace("_", " ")
                name = "baseline" if side == RAW else f"code_mode ({side})"
                waits = key.startswith("thread waits")
                rows.append(
                    [
                        result["id"],
                        (
                            "voluntary context switches of the process tree per call [info]"
                            if waits
                            else f"CPU time of the process tree, {what} [info]"
                        ),
                        "" if waits else result["unit"],
                        name,
                        _fmt(value),
                        "",
                        "",
                        "",
                        "",
                    ]
                )
        if bench_id == "B4":
            label = "baseline [info]: task.cancel() -> CancelledError only"
            rows.append(_measurement_row(result, label, result["baseline_cancel_only"], None))
    return rows


def _rows_scale(results: dict[str, Any]) -> list[list[str]]:
    b6 = results["benchmarks"].get("B6")
    if b6 is None:
        return []
    rows = []
    for index, cells in enumerate(b6["counts"]):
        for side in b6["sides"]:
            point = b6["points"][side][index]
            if "idle" not in point or "busy" not in point:
                rows.append([str(cells), side, "NO", *(["-"] * 6)])
                continue
            idle, busy = point["idle"], point["busy"]
            rows.append(
                [
                    str(cells),
                    side,
                    "yes" if point["ok"] else "NO",
                    _fmt(busy["wall_s"], 3),
                    _fmt(idle["start_s"], 3),
                    _fmt(idle["threads_per_cell"]),
                    _fmt(idle["rss_per_cell_mib"]),
                    str(busy["peak_threads_delta"]),
                    _fmt(busy["peak_rss_delta_mib"], 1),
                ]
            )
    return rows


def _rows_targets(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for target in results["targets"]:
        if target["kind"] == "aim":
            status = "met" if target["passed"] else "missed"
        else:
            status = "PASS" if target["passed"] else "FAIL"
        unit = f" {target['unit']}" if target["unit"] else ""
        rows.append(
            [
                target["bench_id"],
                target["mode"],
                target["name"],
                f"{_fmt(target['value'])}{unit}",
                f"<= {_fmt(target['limit'])}{unit}",
                "" if target["aim"] is None else f"{_fmt(target['aim'])}{unit}",
                status,
            ]
        )
    return rows


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_table(results: dict[str, Any], markdown: bool = False) -> str:
    """The measurements, the B6 scale table and the targets, as text or Markdown."""
    table = _markdown_table if markdown else _text_table
    parts = []
    measurements = _rows_measurements(results)
    if measurements:
        parts.append(table(MEASUREMENT_HEADER, measurements))
    scale_rows = _rows_scale(results)
    if scale_rows:
        parts.append(table(SCALE_HEADER, scale_rows))
    parts.append(table(TARGET_HEADER, _rows_targets(results)))
    return "\n\n".join(parts)


def describe_run(results: dict[str, Any]) -> str:
    """A few lines about the run: when, which code, on what machine, how loaded."""
    meta = results["meta"]
    start = meta.get("loadavg_start") or [math.nan]
    end = meta.get("loadavg_end") or [math.nan]
    facts = meta.get("machine") or {}
    lines = [
        f"Run {meta['started_at']}, git {meta.get('git') or '?'}, "
        f"modes {', '.join(meta['modes'])}, "
        f"{meta.get('duration_s', math.nan):.0f} s, mini-racer {meta['mini_racer']} "
        f"(V8 {meta['v8']}), Python {meta['python']}.",
        f"Machine: {facts.get('cpu', '?')}, {meta['cpus']} CPUs, "
        f"pku {'yes' if facts.get('pku') else 'no'}, kernel {facts.get('kernel', '?')}, "
        f"load average {start[0]:.1f} -> {end[0]:.1f}.",
    ]
    loads = [
        f"{bench_id} {result['load'][0]:.1f}->{result['load'][1]:.1f}"
        for bench_id, result in results["benchmarks"].items()
        if "load" in result
    ]
    if loads:
        lines.append("Load per benchmark: " + ", ".join(loads) + ".")
    flags = meta.get("v8_flags") or {}
    if flags:
        lines.append(
            "V8 flags (each side in its own processes): "
            + "; ".join(f"{side} {' '.join(values)}" for side, values in flags.items())
            + "."
        )
    b1 = results["benchmarks"].get("B1")
    if b1 is not None and "baseline_best" in b1:
        best = b1["baseline_best"]
        lines.append(
            f"B1 ratios use the baseline's best figure: {_fmt(best['median'])} ms "
            f"({best['series']})."
        )
    return "\n".join(lines)
