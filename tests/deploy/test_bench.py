"""Smoke test of ``bench/deploy.py`` (tiny sizes, structure only: its numbers are
judged in docs/deploy.md, not here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.deploy import main

from .cluster import require_haproxy


def test_the_benchmark_runs_both_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_haproxy()
    argv = ["--servers", "1", "--clients", "2", "--programs", "1", "--rounds", "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "deploy.json").read_text())
    assert [(row["servers"], row["clients"], row["path"]) for row in rows] == [
        (1, 2, "direct"),
        (1, 2, "balancer"),
        (1, 2, "stateless"),
    ]
    # Two clients, one program each: an exec and at least one wait per program.
    assert all(row["requests"] >= 4 for row in rows)
    assert "| servers | clients | path |" in capsys.readouterr().out
