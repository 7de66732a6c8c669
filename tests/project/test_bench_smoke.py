"""Smoke test of the benchmark runner (``bench/``): tiny sizes, structure only.

Timings are not checked here; ``python -m bench.run`` is where they are judged.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from bench.ours import config, isolation_modes, variant_side
from bench.results import write_results
from bench.sizes import QUICK
from bench.suite import ALL, run_all
from bench.tables import format_table

ROOT = Path(__file__).resolve().parents[2]

TINY = attrs.evolve(
    QUICK,
    rounds=1,
    b1_cells=2,
    b1_gap=0.001,
    b1_burst_cells=1,
    b2_calls=5,
    b2_reps=1,
    b3_calls=5,
    b3_reps=1,
    b4_reps=2,
    b5_reps=1,
    b6_counts=(2,),
    b6_calls=2,
)

SUMMARY_KEYS = {"n", "median", "p90", "p99", "mean", "min", "max"}


def test_runner_produces_every_benchmark_and_target(tmp_path: Path) -> None:
    modes = isolation_modes()
    results = run_all(TINY)

    assert set(results) == {"meta", "benchmarks", "targets"}
    meta = results["meta"]
    assert meta["modes"] == modes
    assert meta["machine"]["pku"] in (True, False)
    assert meta["machine"]["kernel"] and meta["machine"]["cpu"]
    # Each side runs with its own V8 flags: ours are code_mode's, the baseline's
    # mini-racer's defaults.
    assert set(meta["v8_flags"]) == {*modes, "raw"}
    assert "--expose-gc-as=Atomics" in meta["v8_flags"][modes[0]]
    assert "--expose-gc-as=Atomics" not in meta["v8_flags"]["raw"]
    benchmarks = results["benchmarks"]
    assert list(benchmarks) == list(ALL)
    for bench_id in ("B1", "B2", "B3", "B4", "B5"):
        result = benchmarks[bench_id]
        assert result["id"] == bench_id
        assert result["modes"] == modes
        assert set(result["baseline"]) == SUMMARY_KEYS
        assert result["baseline"]["n"] >= 1
        for mode in modes:
            assert set(result["ours"][mode]) == SUMMARY_KEYS
            assert result["ours"][mode]["n"] >= 1
            assert result["ratio"][mode] > 0
        assert len(result["load"]) == 2
    b1 = benchmarks["B1"]
    best = b1["baseline_best"]
    assert best["median"] == min(b1["baseline"]["median"], b1["burst_baseline"]["median"])
    assert best["series"] in ("paced", "burst")
    for mode in modes:
        assert b1["burst"][mode]["n"] == TINY.b1_burst_cells
        assert b1["ratio"][mode] == b1["ours"][mode]["median"] / best["median"]
        assert b1["burst_ratio"][mode] == b1["burst"][mode]["median"] / best["median"]
        assert len(benchmarks["B2"]["gaps"]["cdf"][mode]) == 101
        assert benchmarks["B3"]["vs_b2"][mode] > 0
        assert not math.isnan(benchmarks["B5"]["excess"][mode])
    # CPU time and thread wake-ups, per side (information beside the timings; CPU
    # time is counted in clock ticks, so at these tiny sizes it may well be 0).
    for side in [*modes, "raw"]:
        assert b1["cpu"][side]["cpu_burst"] >= 0
        assert benchmarks["B2"]["cpu"][side]["cpu_per_call"] >= 0
        assert benchmarks["B2"]["cpu"][side]["thread waits per call"] >= 0
    b4 = benchmarks["B4"]
    assert b4["baseline"]["n"] == b4["baseline_cancel_only"]["n"] == TINY.b4_reps
    # Cancel-and-confirm includes the cancel: it can only take longer.
    assert b4["baseline"]["median"] >= b4["baseline_cancel_only"]["median"]

    b6 = benchmarks["B6"]
    assert b6["counts"] == [2]
    assert b6["sides"] == [*modes, "raw"]
    for side in b6["sides"]:
        points = b6["points"][side]
        assert [point["cells"] for point in points] == [2]
        assert all(point["ok"] for point in points), points
        for point in points:
            assert point["busy"]["completed"] == point["cells"]
            assert point["idle"]["threads_per_cell"] >= 0
        assert b6["summary"][side]["largest_ok"] == 2

    targets = results["targets"]
    assert {target["bench_id"] for target in targets} == set(ALL)
    assert {target["mode"] for target in targets} == set(modes)
    for target in targets:
        assert isinstance(target["passed"], bool)
        assert target["kind"] in ("target", "aim")
    for mode in modes:
        judged = {
            target["name"]: target["limit"]
            for target in targets
            if target["mode"] == mode and target["kind"] == "target"
        }
        assert judged["latency, paced / baseline's best"] == 0.3
        assert judged["throughput, back to back / baseline's best"] == 1.0
        assert judged["sequential call cost / wrap_py_function"] == 0.5
        assert judged["terminate / cancel-and-confirm"] == 2.0

    table = format_table(results)
    for bench_id in ALL:
        assert bench_id in table
    assert "PASS" in table or "FAIL" in table

    written = write_results(results, tmp_path, plots=False)
    assert sorted(path.name for path in written) == ["results.json", "results.md"]
    stored = json.loads((tmp_path / "results.json").read_text())
    assert set(stored["benchmarks"]) == set(ALL)
    assert "| id |" in (tmp_path / "results.md").read_text()


def test_runners_import_without_matplotlib() -> None:
    code = (
        "import sys, bench.run, bench.sessions, bench.peers\n"
        "assert 'matplotlib' not in sys.modules, 'a runner imported matplotlib'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_sessions_benchmark_measures_every_point(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.sessions", "--quick", "--no-plots", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "sessions.json").read_text())
    assert results["machine"]["pku"] in (True, False)
    s1 = {(point["mode"], point["sessions"]) for point in results["S1"]}
    assert s1 == {(mode, n) for mode in ("process", "thread") for n in (2, 5)}
    for point in results["S1"]:
        assert point["after"]["processes"] >= 1
        assert point["latency_crowded_ms"] > 0
    for point in results["S2"]:
        assert point["cells"] == 8 and point["cells_per_s"] > 0


def test_peers_table_has_our_sides_and_names_the_missing_peers(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.peers",
            "--quick",
            "--rounds",
            "1",
            "--monty-python",
            str(tmp_path / "no-python"),
            "--isolated-vm",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    rows = {
        line.split("|")[1].strip(): line
        for line in completed.stdout.splitlines()
        if line.startswith("| ") and " ms " in line
    }
    assert list(rows) == ["code_mode, process", "code_mode, thread", "raw mini-racer"]
    for row in rows.values():
        assert row.count(" ms") >= 3 and " us" in row
    assert "skipped pydantic-monty" in completed.stdout
    assert "skipped isolated-vm" in completed.stdout
    assert '"pku"' in completed.stdout.splitlines()[0]


def test_polling_benchmark_counts_turns_and_bytes() -> None:
    """P1 (``bench/polling.py``) on a short program: structure and the ordering only."""
    from bench.polling import STRATEGIES, format_table, measure

    tallies = measure(20.0, quiet=True)
    assert [tally.strategy for tally in tallies] == list(STRATEGIES)
    polling, floor, push = tallies
    assert all(tally.answer == "answer: 42" for tally in tallies)
    assert push.turns == 3 and push.waits == 0  # exec, the turn's end, the answer
    assert polling.turns > floor.turns >= push.turns
    assert polling.waits == polling.turns - 2  # every turn between exec and answer
    assert polling.conversation_bytes > max(floor.conversation_bytes, push.conversation_bytes)
    assert "| push | 3 | 0 (0) |" in format_table(tallies)


def test_a_variant_side_changes_one_runtime_config_field() -> None:
    """``python -m bench.run --also-with FIELD=JSON``: a side of its own whose
    configuration differs from its mode's in that field only."""
    side = variant_side("process", "max_journal_chars=0")
    assert side == "process+max_journal_chars=0"
    assert config(side) == attrs.evolve(config("process"), max_journal_chars=0)
    with pytest.raises(ValueError, match="not a RuntimeConfig field"):
        variant_side("process", "nope=1")
    with pytest.raises(ValueError, match="must be JSON"):
        variant_side("process", "max_journal_chars=lots")


def test_exec_path_lists_the_files_both_processes_run() -> None:
    """The file count quoted in docs/architecture.md: the tool sees the host's entry,
    the worker's main thread, its native doorbell thread and the way back."""
    from bench.exec_path import by_file, measure

    calls = measure(Path(__file__).resolve().parents[2])
    functions = {(side, name, function) for _, side, name, function in calls}
    for expected in [
        ("host", "_facade/session.py", "exec"),
        ("host", "_engine/_worker_process.py", "load"),
        ("worker", "_v8/_native.py", "post"),  # the worker's main thread
        ("worker", "_v8/_native.py", "_on_callback"),  # its doorbell thread
        ("host", "model_tools/formatting.py", "format_result"),  # the way back
    ]:
        assert expected in functions, (expected, sorted(functions))
    files = by_file(calls)
    assert [seconds for seconds, *_ in files] == sorted(seconds for seconds, *_ in files)
    assert len({(side, name) for _, side, name, _ in files}) == len(files)


def test_exec_path_counts_file_switches_and_classes_spread_over_files() -> None:
    """What issue 36 measures a reader's hops by: host calls and the switches between
    files among them; classes whose bases (of the package) live in other modules."""
    import importlib

    from bench.exec_path import file_switches, spread_classes

    calls = [
        (0.1, "host", "a.py", "f"),
        (0.2, "worker", "w.py", "g"),
        (0.3, "host", "a.py", "h"),
        (0.4, "host", "b.py", "i"),
        (0.5, "host", "a.py", "j"),
    ]
    assert file_switches(calls) == (4, 2)
    assert file_switches(calls, "worker") == (1, 0)
    spread = spread_classes(Path(__file__).resolve().parents[2])
    assert spread == sorted(spread)
    for name in spread:
        module, _, qualname = name.rpartition(".")
        cls = getattr(importlib.import_module(module), qualname)
        assert any(
            base.__module__.startswith("code_mode") and base.__module__ != module
            for base in cls.__bases__
        ), name
