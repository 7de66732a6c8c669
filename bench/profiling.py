"""Workloads for a profiler: our side of B1 or B2 in a loop, nothing else.

    py-spy record --native --threads --subprocesses -o b2.svg -- python -m bench.profiling b2
    py-spy record --native --threads -o b1.svg -- python -m bench.profiling b1 --isolation thread
    pyinstrument -m bench.profiling b1 --seconds 5

Only the code_mode side runs (no baseline), in the default isolation mode unless
``--isolation`` says otherwise; see ``docs/performance.md`` for what the profiles show.
"""

from __future__ import annotations

import argparse
import time

import trio

from code_mode import SessionRuntime

from . import ours
from .measurement import expect


async def _loop(workload: str, seconds: float, calls: int, isolation: str) -> int:
    delegate = ours.BenchDelegate()
    source = 'text("done");' if workload == "b1" else ours.sequential_source(calls)
    cells = 0
    deadline = time.perf_counter() + seconds
    async with SessionRuntime(delegate, config=ours.config(isolation)) as runtime:
        while time.perf_counter() < deadline:
            started = await runtime.execute(ours.request(source), ours.UNTIL_DONE)
            expect(await started.initial_event(), ours.DONE)
            cells += 1
    return cells


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=("b1", "b2"))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--calls", type=int, default=2000, help="tool calls per b2 cell")
    parser.add_argument(
        "--isolation", default=ours.isolation_modes()[0], choices=ours.isolation_modes()
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cells = trio.run(_loop, args.workload, args.seconds, args.calls, args.isolation)
    elapsed = time.perf_counter() - start
    print(f"{args.workload} ({args.isolation}): {cells} cells in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
