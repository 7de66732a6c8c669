"""Benchmark runner: code_mode against raw mini-racer, measured in the same run.

    python -m bench.run                 # full sizes (about 5 minutes on 2 cores)
    python -m bench.run --quick         # tiny sizes, a smoke run
    python -m bench.run --out DIR       # where results.json, results.md and PNGs go
    python -m bench.run --no-plots      # no matplotlib needed
    python -m bench.run --only B1,B4    # a subset
    python -m bench.run --isolation thread   # one EngineConfig.isolation mode only

Every target is a ratio against a baseline measured in the same run with mini-racer
used directly (see ``bench/raw.py``), except where the issue sets an absolute bound
(B5 against ``trio.sleep``, B6 against fixed budgets). Each side (our side once per
isolation mode, ``process`` and ``thread``, and the baseline) runs in a fresh process
of its own with its own V8 flags (``bench/side.py``), in rounds whose order alternates
so that drift of the machine hits every side. A ratio compares with the baseline's
best figure (B1: paced or back to back, whichever is faster; B4: until V8 confirmed
the stop). The results record the machine: CPU model and its ``pku`` flag, kernel,
load average before and after each benchmark.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/run.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attrs

from bench import b6_scale as scale
from bench import ours
from bench import side as side_process
from bench.sessions import machine
from bench.side import RAW
from bench.stats import percentile, ratio, summarize

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
ALL = ("B1", "B2", "B3", "B4", "B5", "B6")


@attrs.frozen(kw_only=True)
class Sizes:
    """Repetition counts. ``rounds`` alternates ours/baseline blocks."""

    rounds: int
    b1_cells: int  # per round and side, cells started b1_gap seconds apart
    b1_gap: float
    b1_burst_cells: int  # per round and side, cells back to back (info only)
    b2_calls: int
    b2_reps: int  # per round and side
    b3_calls: int
    b3_reps: int
    b4_reps: int  # per round and side
    b5_reps: int  # per mode
    b6_counts: tuple[int, ...]
    b6_calls: int
    b6_timeout: float


FULL = Sizes(
    rounds=5,
    b1_cells=40,
    b1_gap=0.025,
    b1_burst_cells=60,
    b2_calls=2000,
    b2_reps=3,
    b3_calls=1000,
    b3_reps=3,
    b4_reps=60,
    b5_reps=100,
    b6_counts=(1, 10, 100, 500),
    b6_calls=20,
    b6_timeout=240.0,
)

QUICK = Sizes(
    rounds=1,
    b1_cells=3,
    b1_gap=0.01,
    b1_burst_cells=2,
    b2_calls=20,
    b2_reps=2,
    b3_calls=20,
    b3_reps=2,
    b4_reps=3,
    b5_reps=2,
    b6_counts=(1, 3),
    b6_calls=3,
    b6_timeout=60.0,
)

MS = 1e3
US = 1e6

Samples = dict[str, list[float]]  # "baseline" or an isolation mode -> samples


def _cdf(samples: Sequence[float], scale: float, points: int = 101) -> list[float]:
    """The distribution as ``points`` evenly spaced quantiles (for plots, compact)."""
    if not samples:
        return []
    values = [sample * scale for sample in samples]
    return [percentile(values, index / (points - 1)) for index in range(points)]


def _result(
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
        "cdf": {name: _cdf(values, scale) for name, values in samples.items()},
        **extra,
    }


def _sides(modes: Sequence[str], baseline: bool) -> list[str]:
    return [*modes, RAW] if baseline else list(modes)


def _in_children(
    bench_id: str,
    sides: Sequence[str],
    rounds: int,
    params: dict[str, Any],
    keys: Sequence[str],
) -> dict[str, dict[str, list[float]]]:
    """``rounds`` rounds of one fresh child process per side (see ``bench/side.py``);
    the order of the sides alternates between rounds, so drift of the machine and
    "who runs first" hit every side alike. Returns ``{side: {key: samples}}``."""
    pooled = {side: {key: [] for key in keys} for side in sides}
    for index in range(rounds):
        for side in sides if index % 2 == 0 else reversed(sides):
            measured = side_process.measure_in_child(bench_id, side, params)
            for key in keys:
                pooled[side][key] += measured.get(key, [])
    return pooled


def bench_b1(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B1: cell latency, ``execute`` -> ``Completed`` of ``text("done")``.

    Two figures per side. *Latency*: cells started ``b1_gap`` apart (an agent thinks
    between two cells; the baseline waits as long between its evaluations), so each
    cell meets the system at rest. *Throughput*: the same back to back. Both of ours
    are compared with the baseline's best figure, paced or back to back, whichever
    is faster: pacing can slow the baseline down (its CPU clocks down, its caches go
    cold), and a ratio against a handicapped baseline would flatter us."""
    params = {"cells": sizes.b1_cells, "gap": sizes.b1_gap, "burst_cells": sizes.b1_burst_cells}
    pooled = _in_children(
        "B1",
        _sides(modes, True),
        sizes.rounds,
        params,
        ("paced", "burst", "cpu_paced", "cpu_burst"),
    )
    samples: Samples = {"baseline": pooled[RAW]["paced"]}
    samples.update({mode: pooled[mode]["paced"] for mode in modes})
    result = _result(
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
    result["cpu"] = _cpu(pooled, ("cpu_paced", "cpu_burst"), MS)
    result["cdf"]["baseline burst"] = _cdf(pooled[RAW]["burst"], MS)
    for mode in modes:
        result["cdf"][f"{mode} burst"] = _cdf(pooled[mode]["burst"], MS)
    return result


def _cpu(
    pooled: dict[str, dict[str, list[float]]], keys: Sequence[str], scale: float
) -> dict[str, dict[str, float]]:
    """Median CPU time of the process tree per cell or call, per side and series
    (information: steadier than wall time on a shared machine)."""
    return {
        side: {key: summarize(series[key], scale).median for key in keys}
        for side, series in pooled.items()
    }


def _calls(
    sizes: Sizes, modes: Sequence[str], *, parallel: bool
) -> tuple[Samples, Samples, dict[str, dict[str, float]]]:
    bench_id = "B3" if parallel else "B2"
    params = {
        "calls": sizes.b3_calls if parallel else sizes.b2_calls,
        "reps": sizes.b3_reps if parallel else sizes.b2_reps,
    }
    pooled = _in_children(
        bench_id,
        _sides(modes, True),
        sizes.rounds,
        params,
        ("per_call", "gaps", "cpu_per_call", "waits_per_call"),
    )
    per_call: Samples = {"baseline": pooled[RAW]["per_call"]}
    gaps: Samples = {"baseline": pooled[RAW]["gaps"]}
    for mode in modes:
        per_call[mode] = pooled[mode]["per_call"]
        gaps[mode] = pooled[mode]["gaps"]
    cpu = _cpu(pooled, ("cpu_per_call",), US)
    for side, series in pooled.items():  # thread wake-ups per call (a count, unscaled)
        cpu[side]["thread waits per call"] = summarize(series["waits_per_call"]).median
    return per_call, gaps, cpu


def bench_b2(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B2: sequential ``await tools.echo(...)``, cost per call."""
    per_call, gaps, cpu = _calls(sizes, modes, parallel=False)
    return _result(
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
            "cdf": {name: _cdf(values, US) for name, values in gaps.items()},
        },
    )


def bench_b3(sizes: Sizes, modes: Sequence[str], b2: dict[str, Any] | None) -> dict[str, Any]:
    """B3: ``Promise.all`` of tool calls, cost per call (compared with B2's)."""
    per_call, _, cpu = _calls(sizes, modes, parallel=True)
    result = _result(
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


def bench_b4(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B4: ``terminate()`` of ``while (true) {}`` until ``Terminated``.

    ``Terminated`` means the JavaScript has stopped, so the baseline is the same
    promise: ``task.cancel()`` of ``eval_cancelable`` until a following evaluation in
    that context answers (V8 confirmed the stop). How long until ``CancelledError``
    alone (asyncio gives up waiting; V8 may still be running) is reported beside it."""
    pooled = _in_children(
        "B4",
        _sides(modes, True),
        sizes.rounds,
        {"reps": sizes.b4_reps},
        ("terminated", "confirmed", "cancelled"),
    )
    samples: Samples = {"baseline": pooled[RAW]["confirmed"]}
    samples.update({mode: pooled[mode]["terminated"] for mode in modes})
    result = _result(
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
    result["cdf"]["baseline cancel only"] = _cdf(pooled[RAW]["cancelled"], MS)
    return result


def bench_b5(sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """B5: overshoot of ``YieldAfter(0.05)`` with a tool call in flight, against the
    overshoot of ``trio.sleep(0.05)`` measured interleaved with it (same process)."""
    pooled = _in_children("B5", _sides(modes, False), 1, {"reps": sizes.b5_reps}, ("ours", "sleep"))
    samples: Samples = {"baseline": [value for mode in modes for value in pooled[mode]["sleep"]]}
    samples.update({mode: pooled[mode]["ours"] for mode in modes})
    result = _result(
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


def bench_b6(
    sizes: Sizes, modes: Sequence[str], progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """B6: 1..500 concurrent cells; wall time, threads and RSS per live cell."""
    sides = [*modes, "raw"]
    points: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for cells in sizes.b6_counts:
        for side in sides:
            point = scale.measure_point(side, cells, sizes.b6_calls, sizes.b6_timeout)
            points[side].append(point)
            if progress is not None:
                status = "ok" if point["ok"] else f"FAILED ({point.get('error')})"
                progress(f"  B6 {side:8} {cells:4} cells: {status}")
    summary: dict[str, dict[str, Any]] = {}
    for side in sides:
        ok = [point for point in points[side] if point["ok"]]
        largest = max((point["cells"] for point in ok), default=0)
        at_largest = next((point for point in ok if point["cells"] == largest), None)
        summary[side] = {
            "largest_ok": largest,
            "rss_per_idle_cell_mib": (
                at_largest["idle"]["rss_per_cell_mib"] if at_largest is not None else math.nan
            ),
            "threads_per_live_cell": max(
                (point["idle"]["threads_per_cell"] for point in ok), default=math.nan
            ),
        }
    return {
        "id": "B6",
        "title": f"scale: concurrent cells, {sizes.b6_calls} tool calls each",
        "modes": list(modes),
        "sides": sides,
        "counts": list(sizes.b6_counts),
        "calls": sizes.b6_calls,
        "points": points,
        "summary": summary,
    }


# -- targets -----------------------------------------------------------------------------


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


# -- running and reporting ---------------------------------------------------------------


def _git_revision() -> str | None:
    """``<commit>`` of the checkout, with ``+dirty`` when code_mode/ has local changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "code_mode"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if status else "")


def _meta(quick: bool, sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    from importlib.metadata import version

    from py_mini_racer import MiniRacer

    with MiniRacer() as racer:
        v8 = racer.v8_version
    return {
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": _git_revision(),
        "quick": quick,
        "modes": list(modes),
        "sizes": attrs.asdict(sizes),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "machine": machine(),
        "loadavg_start": os.getloadavg(),
        "mini_racer": version("mini-racer"),
        "v8": v8,
        "v8_flags": {side: side_process.v8_flags(side) for side in [*modes, RAW]},
        "trio": version("trio"),
    }


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
    meta = _meta(sizes == QUICK, sizes, modes)
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


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def write_results(
    results: dict[str, Any],
    out: Path,
    *,
    plots: bool = True,
    copy_plots_to: Path | None = None,
) -> list[Path]:
    """Write ``results.json``, ``results.md`` and (unless ``plots`` is false) the PNGs
    into ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "results.md"]
    written[0].write_text(json.dumps(_json_safe(results), indent=2) + "\n", encoding="utf-8")
    written[1].write_text(
        describe_run(results) + "\n\n" + format_table(results, markdown=True) + "\n",
        encoding="utf-8",
    )
    if plots:
        from bench.plots import write_plots  # matplotlib is only needed here

        images = write_plots(results, out)
        written += images
        if copy_plots_to is not None:
            copy_plots_to.mkdir(parents=True, exist_ok=True)
            for image in images:
                shutil.copy2(image, copy_plots_to / image.name)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="code_mode benchmarks vs raw mini-racer")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    size.add_argument("--full", action="store_true", help="full sizes (the default)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs (no matplotlib)")
    parser.add_argument("--copy-plots-to", type=Path, help="also copy the PNGs here")
    parser.add_argument("--only", default=",".join(ALL), help="comma-separated, e.g. B1,B4")
    parser.add_argument(
        "--isolation",
        default="all",
        help="RuntimeConfig.isolation mode(s) to measure, comma-separated, or 'all'",
    )
    args = parser.parse_args(argv)
    only = [item.strip().upper() for item in args.only.split(",") if item.strip()]
    unknown = sorted(set(only) - set(ALL))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    available = ours.isolation_modes()
    if args.isolation == "all":
        modes = available
    else:
        modes = [mode.strip() for mode in args.isolation.split(",") if mode.strip()]
        bad = sorted(set(modes) - set(available))
        if bad:
            parser.error(f"unknown isolation mode(s) {bad}; available: {available}")
    sizes = QUICK if args.quick else FULL

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = run_all(sizes, only, progress, modes)
    print(describe_run(results) + "\n")
    print(format_table(results))
    written = write_results(
        results, args.out, plots=not args.no_plots, copy_plots_to=args.copy_plots_to
    )
    print(f"\nwrote {', '.join(str(path) for path in written)}")
    print(f"total {results['meta']['duration_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
