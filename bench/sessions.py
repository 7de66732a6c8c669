"""S1 / S2: what many sessions cost on one engine.

    python -m bench.sessions                  # S1 at 10-1000 sessions, S2 at 200, both modes
    python -m bench.sessions --quick          # tiny sizes (a smoke run)
    python -m bench.sessions --out DIR        # sessions.json (+ sessions.png with matplotlib)
    python -m bench.sessions --placement exclusive --workers 8   # an engine set up so
    python -m bench.sessions --held 10,20 --placement exclusive  # busy sessions (S1b)
    python -m bench.sessions --replay         # S3: the journal, and resuming after a kill

* **S1, idle sessions.** A fresh process opens N sessions (no ``engine=``: they share
  the trio run's default engine, as an application's would), each runs one cell and
  stays open. Measured: the memory of the whole process tree (host plus worker
  processes; PSS, so shared pages are not counted once per process), the number of
  processes, and the latency of a short cell (run in a random open session, 25 ms
  apart) with N sessions open, against the same latency measured in that process with
  one session open before the others were opened.
* **S2, busy sessions.** 200 sessions at once, each running cells one after another
  (a tool call and a ``text``), for a fixed number of cells in all: cells per second,
  against one session running the same cells one after another in the same process.

* **S1b, busy sessions** (``--held``): as S1, but each session's cell stays running
  (it waits for a promise that never settles), so every session holds an isolate on
  its worker; under ``session_placement="exclusive"`` each then holds a worker
  process, which is what that placement costs.

* **S3, cells that survive their worker** (``--replay``, :mod:`bench.replay`): the
  journal's memory per live cell and per recorded tool result; the time to resume N
  bystanders (N = 1, 20, 200) after their worker is killed.

A busy session holds its cell's memory limit on its worker
(``EngineConfig.worker_memory_overcommit``): S1b runs on an engine of its own whose
overcommit admits every busy session's cell on one worker, as before that admission.

``--placement`` and ``--workers`` run the sessions on an ``Engine`` of their own with
``EngineConfig(session_placement=..., worker_processes=...)`` (``process`` mode only;
``--held`` under ``exclusive`` sets ``worker_processes`` to the number of sessions
unless ``--workers`` says otherwise); without them the sessions share the trio run's
default engine. Every point runs in a process of its own, so one point's memory never
inflates the next. The targets (issue "one engine for many sessions") are absolute: an idle session
costs at most 5 MiB of the tree (aim 0.5 MiB); 200 idle sessions use at most 8
processes in ``process`` mode; 1,000 sessions open at once fit (aim: tree under
2 GiB).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.child_process import ChildFailed, python_module, run_child
from bench.engine_probe import default_engines, wait_warm_pool_filled
from bench.provenance import machine
from bench.replay import s3_child
from bench.results import DEFAULT_OUT
from bench.stats import MiB, process_tree

# -- measuring a process tree ------------------------------------------------------------


def _rollup(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_memory() -> dict[str, Any]:
    """PSS and RSS of this process and its descendants, and how many there are."""
    pids = process_tree()
    return {
        "processes": len(pids),
        "pss": sum(_rollup(pid, "Pss") for pid in pids),
        "rss": sum(_rollup(pid, "Rss") for pid in pids),
        "threads": sum(len(os.listdir(f"/proc/{pid}/task")) for pid in pids),
    }


# -- the child side -----------------------------------------------------------------------


async def _cell(session: Any, source: str) -> float:
    begun = time.perf_counter()
    result = await session.exec(source)
    elapsed = time.perf_counter() - begun
    if not result[0].text.startswith("Script completed"):
        raise RuntimeError(f"cell failed: {result}")
    return elapsed


async def _start_held(session: Any) -> None:
    """A cell that stays running (never settles); the session's exit terminates it."""
    result = await session.exec('// @exec: {"yield_time_ms": 1}\nawait new Promise(() => {});')
    if "Script running" not in result[0].text:
        raise RuntimeError(f"cell did not stay running: {result}")


async def _latency(sessions: Sequence[Any], cells: int, gap: float) -> list[float]:
    import trio

    rng = random.Random(7)
    samples = []
    for _ in range(cells):
        samples.append(await _cell(rng.choice(sessions), 'text("done")'))
        await trio.sleep(gap)
    return samples


async def _settle() -> None:
    """Let warm-pool refills and isolate disposals finish before measuring."""
    import gc

    import trio

    for engine in [*default_engines(), *_OWN_ENGINES]:
        await wait_warm_pool_filled(engine, timeout=30)
    await trio.sleep(0.5)
    gc.collect()


#: Engines a child opened itself (``--placement`` / ``--workers``), for _settle.
_OWN_ENGINES: list[Any] = []


@contextlib.asynccontextmanager
async def _engine(mode: str, placement: str, workers: int, held: int = 0) -> Any:
    """The engine the sessions of a point share: the default one (``placement`` is
    ``-``, ``workers`` 0 and no busy sessions), or one of their own set up so."""
    if mode != "process" or (placement == "-" and workers == 0 and not held):
        yield None
        return
    from code_mode import Engine, EngineConfig
    from code_mode._engine.config import ISOLATE_RESERVE_BYTES, WORKER_RESERVE_BYTES

    settings: dict[str, Any] = {"isolation": mode}
    if held:  # every busy session's cell admitted on one worker (see the module)
        charge = 256 * MiB + ISOLATE_RESERVE_BYTES
        budget = 2048 * MiB - WORKER_RESERVE_BYTES
        settings["worker_memory_overcommit"] = float(max(1, -(-(held + 2) * charge // budget)))
    if placement != "-":
        settings["session_placement"] = placement
    if workers:
        settings["worker_processes"] = workers
    async with Engine(EngineConfig(**settings)) as engine:
        _OWN_ENGINES.append(engine)
        try:
            yield engine
        finally:
            _OWN_ENGINES.remove(engine)


async def s1_child(
    mode: str,
    count: int,
    latency_cells: int,
    placement: str = "-",
    workers: int = 0,
    held: int = 0,
) -> dict[str, Any]:
    from code_mode import CodeModeSession, RuntimeConfig

    config = RuntimeConfig(isolation=mode)  # type: ignore[arg-type]
    if mode != "process":
        placement, workers = "-", 0  # an engine setting of process mode only
    if held and placement == "exclusive" and not workers:
        workers = count + 1  # every busy session holds a worker (the first one too)
    async with (
        _engine(mode, placement, workers, count if held else 0) as engine,
        CodeModeSession(config=config, engine=engine) as first,
    ):
        await _cell(first, 'text("warm")')
        await _settle()
        alone = await _latency([first], latency_cells, 0.025)
        await _settle()
        before = tree_memory()
        opened = time.perf_counter()
        async with contextlib.AsyncExitStack() as stack:
            sessions = [first]
            for _ in range(count):
                session = await stack.enter_async_context(
                    CodeModeSession(config=config, engine=engine)
                )
                if held:
                    await _start_held(session)
                else:
                    await _cell(session, 'text("hello")')
                sessions.append(session)
            opened = time.perf_counter() - opened
            await _settle()
            after = tree_memory()
            crowded = await _latency(sessions, latency_cells, 0.025)
    return {
        "mode": mode,
        "placement": placement,
        "workers": workers,
        "held": bool(held),
        "sessions": count,
        "open_s": opened,
        "before": before,
        "after": after,
        "pss_per_session_mib": (after["pss"] - before["pss"]) / count / MiB,
        "rss_per_session_mib": (after["rss"] - before["rss"]) / count / MiB,
        "latency_alone_ms": statistics.median(alone) * 1e3,
        "latency_crowded_ms": statistics.median(crowded) * 1e3,
    }


async def s2_child(
    mode: str, sessions: int, cells_each: int, placement: str = "-", workers: int = 0
) -> dict[str, Any]:
    if mode != "process":
        placement, workers = "-", 0  # an engine setting of process mode only
    async with _engine(mode, placement, workers) as engine:
        result = await _s2(mode, sessions, cells_each, engine)
    result.update(placement=placement, workers=workers)
    return result


async def _s2(mode: str, sessions: int, cells_each: int, engine: Any) -> dict[str, Any]:
    import trio

    from code_mode import CodeModeSession, RuntimeConfig, tool

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    source = "text(String(await tools.add({ a: 1, b: 2 })))"
    config = RuntimeConfig(isolation=mode)  # type: ignore[arg-type]
    total = sessions * cells_each

    async with CodeModeSession(tools=[add], config=config, engine=engine) as single:
        await _cell(single, source)
        await _settle()
        begun = time.perf_counter()
        for _ in range(total):
            await _cell(single, source)
        sequential = time.perf_counter() - begun

    async with contextlib.AsyncExitStack() as stack:
        opened = [
            await stack.enter_async_context(
                CodeModeSession(tools=[add], config=config, engine=engine)
            )
            for _ in range(sessions)
        ]
        await _settle()

        async def run(session: Any) -> None:
            for _ in range(cells_each):
                await _cell(session, source)

        begun = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for session in opened:
                nursery.start_soon(run, session)
        concurrent = time.perf_counter() - begun
    return {
        "mode": mode,
        "sessions": sessions,
        "cells": total,
        "cells_per_s": total / concurrent,
        "one_session_cells_per_s": total / sequential,
        "ratio_vs_one_session": (total / concurrent) / (total / sequential),
    }


# -- the parent side ----------------------------------------------------------------------


def measure_point(*args: str, timeout: float = 600) -> dict[str, Any]:
    """Run one S1 or S2 point in a child process; a failing child is a point with
    ``ok`` false and the error."""
    try:
        result = run_child(
            python_module("bench.sessions", "--child", *args),
            timeout=timeout,
            what=f"sessions point {' '.join(args)}",
        )
    except ChildFailed as failure:
        return {"ok": False, "error": str(failure)}
    result["ok"] = True
    return result


def run(
    counts: Sequence[int],
    s2_sessions: int,
    s2_cells: int,
    latency_cells: int,
    *,
    placement: str = "-",
    workers: int = 0,
    held: Sequence[int] = (),
    modes: Sequence[str] = ("process", "thread"),
) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "S1": [], "S2": []}
    setting = (placement, str(workers))
    for mode in modes:
        for count in counts:
            point = measure_point("s1", mode, str(count), str(latency_cells), *setting)
            results["S1"].append(point)
            print(_describe_s1(mode, count, point), flush=True)
        for count in held:
            point = measure_point("s1", mode, str(count), str(latency_cells), *setting, "1")
            results["S1"].append(point)
            print(_describe_s1(mode, count, point), flush=True)
        if s2_sessions:
            point = measure_point("s2", mode, str(s2_sessions), str(s2_cells), *setting)
            results["S2"].append(point)
            print(_describe_s2(mode, point), flush=True)
    results["machine"]["load_after"] = os.getloadavg()
    return results


def _setting(point: dict[str, Any]) -> str:
    placement, workers = point.get("placement", "-"), point.get("workers", 0)
    if placement == "-" and not workers:
        return ""
    return f" [{placement if placement != '-' else 'shared'}, {workers or 1} workers]"


def _describe_s1(mode: str, count: int, point: dict[str, Any]) -> str:
    if not point["ok"]:
        return f"S1 {mode:7} {count:5} sessions: FAILED {point['error'][-300:]}"
    after = point["after"]
    busy = " busy" if point.get("held") else ""
    return (
        f"S1 {mode:7} {count:5}{busy} sessions{_setting(point)}: "
        f"{point['pss_per_session_mib']:.3f} MiB/session (PSS), "
        f"{point['rss_per_session_mib']:.3f} MiB/session (RSS); tree {after['pss'] / MiB:.0f} MiB "
        f"PSS in {after['processes']} processes, {after['threads']} threads; cell latency "
        f"{point['latency_crowded_ms']:.2f} ms open vs {point['latency_alone_ms']:.2f} ms alone"
    )


def _describe_s2(mode: str, point: dict[str, Any]) -> str:
    if not point["ok"]:
        return f"S2 {mode:7}: FAILED {point['error'][-300:]}"
    return (
        f"S2 {mode:7} {point['sessions']} sessions at once{_setting(point)}: "
        f"{point['cells_per_s']:.0f} cells/s "
        f"({point['cells']} cells); one session alone: {point['one_session_cells_per_s']:.0f} "
        f"cells/s ({point['ratio_vs_one_session']:.2f}x)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument(
        "--placement",
        choices=("shared", "exclusive"),
        help="EngineConfig.session_placement of an engine of the sessions' own",
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="EngineConfig.worker_processes of that engine"
    )
    parser.add_argument(
        "--replay", action="store_true", help="S3: the journal, and resuming after a kill"
    )
    parser.add_argument(
        "--held",
        default="",
        help="S1b only: comma-separated counts of sessions each keeping a cell running",
    )
    args = parser.parse_args(argv)
    if args.child:
        import trio

        kind, mode, *rest = args.child
        if kind == "s3":
            print(json.dumps(trio.run(s3_child, int(mode), int(rest[0]))))
            return 0
        child = s1_child if kind == "s1" else s2_child
        values = [n if n in ("-", "shared", "exclusive") else int(n) for n in rest]
        result = trio.run(child, mode, *values)
        print(json.dumps(result))
        return 0
    setting: dict[str, Any] = {"placement": args.placement or "-", "workers": args.workers}
    if args.replay:
        return _run_s3(args.out, quick=args.quick)
    if args.held:
        held = [int(n) for n in args.held.split(",")]
        results = run((), 0, 0, 3 if args.quick else 40, held=held, modes=("process",), **setting)
    elif args.quick:
        results = run((2, 5), s2_sessions=4, s2_cells=2, latency_cells=3, **setting)
    else:
        results = run(
            (10, 100, 200, 1000), s2_sessions=200, s2_cells=5, latency_cells=40, **setting
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sessions.json").write_text(json.dumps(results, indent=2))
    if not args.no_plots:
        with contextlib.suppress(ImportError):  # matplotlib is only needed here
            from bench.plots import sessions_plot

            sessions_plot(results, args.out / "sessions.png")
    failed = [p for p in results["S1"] + results["S2"] if not p["ok"]]
    return 1 if failed else 0


def _run_s3(out: Path, *, quick: bool) -> int:
    points = [(1, 0), (20, 0), (20, 10)]
    if not quick:
        points += [(1, 2), (20, 2), (200, 2)]
    results: dict[str, Any] = {"machine": machine(), "S3": []}
    for bystanders, tool_results in points:
        point = measure_point("s3", str(bystanders), str(tool_results))
        results["S3"].append(point)
        if not point["ok"]:
            print(f"S3 {bystanders} bystanders: FAILED {point['error'][-300:]}", flush=True)
            continue
        print(
            f"S3 {bystanders:4} bystanders, {tool_results:2} results each: journal "
            f"{point['journal_bytes_per_cell']:.0f} B/cell; resumed in "
            f"{point['resume_s'] * 1e3:.0f} ms (overcommit {point['overcommit']:g}); "
            f"tool calls repeated: {point['hold_calls_repeated']}, errors: {point['errors']}",
            flush=True,
        )
    by = {(p["bystanders"], p["results"]): p for p in results["S3"] if p["ok"]}
    if (20, 0) in by and (20, 10) in by:
        per_result = (
            by[(20, 10)]["journal_bytes_per_cell"] - by[(20, 0)]["journal_bytes_per_cell"]
        ) / 10
        results["journal_bytes_per_result"] = per_result
        print(f"S3 journal per recorded tool result: {per_result:.0f} B", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sessions_replay.json").write_text(json.dumps(results, indent=2))
    return 0 if all(p["ok"] for p in results["S3"]) else 1


if __name__ == "__main__":
    sys.exit(main())
