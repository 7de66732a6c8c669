"""The peer pydantic-monty (a Python interpreter in Rust, run in a pool of worker
processes), measured on the workloads of ``bench.peers``. Run by ``bench.peers`` with an
interpreter that has ``pydantic_monty`` installed; prints one JSON line.

    python -m bench.peer_monty '{"cells": 40, "gap": 0.025, "burst_cells": 60, ...}'

Each W1 cell checks a fresh session out of a warm pool (a fresh interpreter state,
as each of our cells gets a fresh isolate). W2 calls a host function from one snippet
(``external_lookup``). W3 is how far a busy loop overshoots a 50 ms feed limit (monty
has no call to stop a running feed from outside but its time limits).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

STOP_AFTER = 0.05


def measure(params: dict[str, Any]) -> dict[str, Any]:
    import pydantic_monty  # type: ignore[import-not-found, unused-ignore]

    def cell(pool: Any) -> float:
        start = time.perf_counter()
        with pool.checkout() as session:
            value = session.feed_run('"done"')
        elapsed = time.perf_counter() - start
        if value != "done":
            raise RuntimeError(f"monty returned {value!r}")
        return elapsed

    with pydantic_monty.Monty(min_processes=2) as pool:
        for _ in range(5):
            cell(pool)
        paced: list[float] = []
        for _ in range(params["cells"]):
            time.sleep(params["gap"])
            paced.append(cell(pool))
        burst = [cell(pool) for _ in range(params["burst_cells"])]

        calls = params["calls"]
        per_call: list[float] = []
        lookup = {"echo": lambda value: value}
        code = f"for i in range({calls}):\n    echo(i)\n'done'"
        for _ in range(params["reps"]):
            with pool.checkout(limits={"max_suspensions": calls + 10}) as session:
                start = time.perf_counter()
                if session.feed_run(code, external_lookup=lookup) != "done":
                    raise RuntimeError("monty's call loop did not finish")
                per_call.append((time.perf_counter() - start) / calls)

        overshoot: list[float] = []
        limits = {"max_feed_duration_secs": STOP_AFTER}
        for _ in range(params["stop_reps"]):
            with pool.checkout(limits=limits) as session:
                start = time.perf_counter()
                try:
                    session.feed_run("while True:\n    pass")
                except pydantic_monty.MontyError:
                    pass
                else:
                    raise RuntimeError("monty's busy loop was not stopped")
                overshoot.append(time.perf_counter() - start - STOP_AFTER)
    return {
        "w1_paced": statistics.median(paced),
        "w1_burst": statistics.median(burst),
        "w2": statistics.median(per_call),
        "w3": statistics.median(overshoot),
        "w3_how": f"overshoot of a {STOP_AFTER * 1000:.0f} ms feed limit",
        "version": pydantic_monty.__version__,
    }


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
