"""One side of one benchmark, measured in a process of its own.

V8 reads its flags once per process, from whoever initialises it first: measuring our
side and the baseline in one process would run one of them with the other's flags
(code_mode's ``--expose-gc-as``, or mini-racer's defaults), and the allocator state one
side leaves behind would be the other's starting point. So the runner starts a fresh
child for every (benchmark, side, round) (``bench/rounds.py``)::

    python -m bench.side '{"bench": "B1", "side": "thread", "params": {...}}'

``side`` is ``raw`` (mini-racer used directly, ``bench/raw.py``, with mini-racer's own
V8 flags) or an isolation mode (``process``, ``thread``: ``bench/ours.py``, with
code_mode's flags). The child prints one JSON object, its samples in seconds, on the
last line of standard output.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

from .child_process import python_module, run_child

RAW = "raw"


def _ours(bench: str, mode: str, params: dict[str, Any]) -> dict[str, Any]:
    import trio

    from . import ours

    if bench == "B1":
        cpu_paced: list[float] = []
        cpu_burst: list[float] = []
        paced = trio.run(
            functools.partial(
                ours.cell_latency, params["cells"], mode, gap=params["gap"], cpu=cpu_paced
            )
        )
        burst = trio.run(
            functools.partial(ours.cell_latency, params["burst_cells"], mode, cpu=cpu_burst)
        )
        return {"paced": paced, "burst": burst, "cpu_paced": cpu_paced, "cpu_burst": cpu_burst}
    if bench in ("B2", "B3"):
        run = trio.run(
            functools.partial(
                ours.tool_calls,
                params["calls"],
                params["reps"],
                parallel=bench == "B3",
                isolation=mode,
            )
        )
        return _calls_result(run)
    if bench == "B4":
        return {"terminated": trio.run(ours.terminate_latency, params["reps"], mode)}
    if bench == "B5":
        yielded = trio.run(ours.yield_punctuality, params["reps"], mode)
        return {"ours": yielded.ours, "sleep": yielded.sleep}
    raise ValueError(f"unknown benchmark {bench!r}")


def _calls_result(run: Any) -> dict[str, Any]:
    """What B2/B3 report, from either side's tool-call run."""
    return {
        "per_call": run.per_call,
        "gaps": run.gaps,
        "cpu_per_call": run.cpu_per_call,
        "waits_per_call": run.waits_per_call,
    }


def _raw(bench: str, params: dict[str, Any]) -> dict[str, Any]:
    from . import raw

    if bench == "B1":
        cpu_paced: list[float] = []
        cpu_burst: list[float] = []
        paced = raw.cell_latency(params["cells"], gap=params["gap"], cpu=cpu_paced)
        burst = raw.cell_latency(params["burst_cells"], cpu=cpu_burst)
        return {"paced": paced, "burst": burst, "cpu_paced": cpu_paced, "cpu_burst": cpu_burst}
    if bench in ("B2", "B3"):
        run = raw.tool_calls(params["calls"], params["reps"], parallel=bench == "B3")
        return _calls_result(run)
    if bench == "B4":
        cancelled = raw.cancel_latency(params["reps"])
        return {"cancelled": cancelled.cancelled, "confirmed": cancelled.confirmed}
    raise ValueError(f"no baseline for {bench!r}")


def measure(bench: str, side: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one side of one benchmark here (in the child)."""
    return _raw(bench, params) if side == RAW else _ours(bench, side, params)


def measure_in_child(
    bench: str, side: str, params: dict[str, Any], timeout: float = 300.0
) -> dict[str, Any]:
    """Run :func:`measure` in a fresh Python process and return its result; raises
    :class:`~bench.child_process.ChildFailed` when the child fails."""
    spec = json.dumps({"bench": bench, "side": side, "params": params})
    return run_child(
        python_module("bench.side", spec), timeout=timeout, what=f"{bench} ({side}) child"
    )


def v8_flags(side: str) -> list[str]:
    """The V8 flags the side runs with (read in this process, nothing initialised)."""
    if side == RAW:
        import inspect

        from py_mini_racer import _dll

        default = inspect.signature(_dll.init_mini_racer).parameters["flags"].default
        return list(default)
    from .engine_probe import code_mode_v8_flags

    return code_mode_v8_flags()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(args[0])
    result = measure(spec["bench"], spec["side"], spec["params"])
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
