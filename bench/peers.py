"""code_mode side by side with other sandboxes, on three workloads.

    python -m bench.peers                       # code_mode (both modes) and mini-racer
    python -m bench.peers --monty-python PY     # + pydantic-monty, installed for PY
    python -m bench.peers --isolated-vm DIR     # + isolated-vm, from DIR/node_modules
    python -m bench.peers --quick               # tiny sizes

The workloads, the same for every side:

* **W1**: a cell (snippet) that returns "done", each in fresh sandbox state (our
  cells get a fresh isolate each; monty a fresh session; isolated-vm a fresh isolate),
  paced 25 ms apart and back to back; the median per cell.
* **W2**: one host function call from inside a running program, per call (2,000 calls
  awaited one after the other).
* **W3**: stopping a busy loop. Ours: ``terminate()`` until ``Terminated``; mini-racer:
  cancelling ``eval_cancelable`` until the next evaluation answers (B4's baseline);
  monty and isolated-vm cannot be stopped from outside, so theirs is how far the loop
  overshoots a 50 ms time limit.

Each side runs in a fresh process of its own, one after the other, in ``--rounds``
rounds; the table shows each side's best round (medians within a round). The peers are
not dependencies of code_mode: a peer that is not installed is reported as skipped,
with what to install. These are the figures to catch, not targets: the targets are in
``bench.run`` (``bench/targets.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/peers.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import side as side_process
from bench.child_process import ROOT, python_module, run_child
from bench.provenance import machine
from bench.stats import percentile

FULL = {"cells": 40, "gap": 0.025, "burst_cells": 60, "calls": 2000, "reps": 3, "stop_reps": 40}
QUICK = {"cells": 5, "gap": 0.025, "burst_cells": 5, "calls": 100, "reps": 1, "stop_reps": 3}


def _median(values: list[float]) -> float:
    return percentile(values, 0.5)


def _ours_or_raw(side: str, sizes: dict[str, Any]) -> dict[str, Any]:
    """Our side (an isolation mode) or raw mini-racer, through ``bench.side``."""
    b1 = {"cells": sizes["cells"], "gap": sizes["gap"], "burst_cells": sizes["burst_cells"]}
    first = side_process.measure_in_child("B1", side, b1)
    calls = side_process.measure_in_child(
        "B2", side, {"calls": sizes["calls"], "reps": sizes["reps"]}
    )
    stop = side_process.measure_in_child("B4", side, {"reps": sizes["stop_reps"]})
    raw = side == side_process.RAW
    return {
        "w1_paced": _median(first["paced"]),
        "w1_burst": _median(first["burst"]),
        "w2": _median(calls["per_call"]),
        "w3": _median(stop["confirmed"] if raw else stop["terminated"]),
        "w3_how": "cancel until the next evaluation answers"
        if raw
        else "terminate() until Terminated",
    }


def _monty(python: str, sizes: dict[str, Any]) -> dict[str, Any]:
    return run_child(
        python_module("bench.peer_monty", json.dumps(sizes), python=python), timeout=600
    )


def _isolated_vm(folder: str, sizes: dict[str, Any]) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("no node on PATH")
    env = dict(os.environ, NODE_PATH=str(Path(folder) / "node_modules"))
    script = str(ROOT / "bench" / "peer_isolated_vm.js")
    return run_child([node, script, json.dumps(sizes)], timeout=600, env=env)


def _has_monty(python: str) -> bool:
    try:
        probe = subprocess.run(
            [python, "-c", "import pydantic_monty"], capture_output=True, check=False
        )
    except OSError:  # no such interpreter
        return False
    return probe.returncode == 0


def _has_isolated_vm(folder: str) -> bool:
    # Its native part: npm leaves the package without it when the build failed.
    return (Path(folder) / "node_modules" / "isolated-vm" / "out" / "isolated_vm.node").is_file()


def _best(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    best = dict(rounds[-1])
    for key in ("w1_paced", "w1_burst", "w2", "w2_sync", "w3"):
        values = [r[key] for r in rounds if key in r]
        if values:
            best[key] = min(values)
    return best


def _row(name: str, result: dict[str, Any]) -> str:
    w2 = f"{result['w2'] * 1e6:.0f} us"
    if "w2_sync" in result:
        w2 += f" ({result['w2_sync'] * 1e6:.1f} us sync)"
    return (
        f"| {name} | {result['w1_paced'] * 1000:.2f} ms | {result['w1_burst'] * 1000:.2f} ms "
        f"| {w2} | {result['w3'] * 1000:.2f} ms ({result['w3_how']}) |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--monty-python",
        default=os.environ.get("CODE_MODE_BENCH_MONTY_PYTHON", sys.executable),
        help="a Python with pydantic-monty installed (default: this one)",
    )
    parser.add_argument(
        "--isolated-vm",
        default=os.environ.get("CODE_MODE_BENCH_ISOLATED_VM", ""),
        help="a folder whose node_modules holds isolated-vm",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL

    sides: dict[str, Any] = {
        "code_mode, process": lambda: _ours_or_raw("process", sizes),
        "code_mode, thread": lambda: _ours_or_raw("thread", sizes),
        "raw mini-racer": lambda: _ours_or_raw(side_process.RAW, sizes),
    }
    skipped: list[str] = []
    if _has_monty(args.monty_python):
        sides["pydantic-monty"] = lambda: _monty(args.monty_python, sizes)
    else:
        skipped.append(f"pydantic-monty: `pip install pydantic-monty` for {args.monty_python}")
    if args.isolated_vm and _has_isolated_vm(args.isolated_vm):
        sides["isolated-vm"] = lambda: _isolated_vm(args.isolated_vm, sizes)
    else:
        skipped.append("isolated-vm: `npm install isolated-vm` in a folder, then --isolated-vm")

    facts = machine()
    print(f"machine: {json.dumps(facts)}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        names = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for name in names:
            print(f"round {round_ + 1}: {name}", file=sys.stderr, flush=True)
            results[name].append(sides[name]())

    print("\n| | W1 paced | W1 back to back | W2 per call | W3 |")
    print("|---|---|---|---|---|")
    for name, rounds in results.items():
        print(_row(name, _best(rounds)))
    for line in skipped:
        print(f"skipped {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
