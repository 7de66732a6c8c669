"""The ``code-mode`` command, driven as a user would: a real subprocess, real signals."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import code_mode

SAFETY = 30.0  # seconds; a hang guard, never the thing under test
COMMAND = [sys.executable, "-m", "code_mode"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=SAFETY)


def _program(tmp_path: Path, source: str) -> str:
    path = tmp_path / "program.js"
    path.write_text(source, encoding="utf-8")
    return str(path)


def test_ctrl_c_on_a_spinning_program_prints_one_line_and_exits_130(tmp_path: Path) -> None:
    program = _program(tmp_path, 'text("spinning");\nwhile (true) {}\n')
    process = subprocess.Popen(
        [*COMMAND, "run", "--yield-seconds", "0.1", program],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        seen = []
        while "spinning" not in (line := process.stdout.readline()):
            assert line, f"the program's output never came: {seen}"
            seen.append(line)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=SAFETY)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err == "code-mode: interrupted\n"


def test_timeout_terminates_prints_the_output_and_fails(tmp_path: Path) -> None:
    program = _program(tmp_path, 'text("before the loop");\nwhile (true) {}\n')
    result = _run("run", "--timeout", "0.5", program)
    assert result.returncode == 124
    assert result.stdout == "== Terminated\nbefore the loop\n"
    assert result.stderr == "code-mode: terminated after the timeout of 0.5 s\n"


def test_a_program_within_its_timeout_completes(tmp_path: Path) -> None:
    program = _program(tmp_path, "text(await tools.add({ a: 2, b: 40 }));\n")
    result = _run("run", "--timeout", "20", program)
    assert (result.returncode, result.stdout, result.stderr) == (0, "== Completed\n42\n", "")


def test_version() -> None:
    result = _run("--version")
    assert result.stdout == f"code-mode {code_mode.__version__}\n"


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]])
def test_help_lists_the_demo_tools_in_plain_text(args: list[str]) -> None:
    result = _run(*args)
    assert result.returncode == 0
    for name in ("echo", "add", "sleep", "weather"):
        assert f"\n  {name} " in result.stdout
    assert "``" not in result.stdout and ":func:" not in result.stdout


def test_a_syntax_error_names_its_line_and_column(tmp_path: Path) -> None:
    program = _program(tmp_path, 'text("fine");\nconst = 1;\n')
    result = _run("run", program)
    assert result.returncode == 1, result
    assert "SyntaxError: Unexpected token '='\n    at exec_main.mjs:2:7\n" in result.stdout
    assert "fine" not in result.stdout  # nothing of the program ran


def test_a_program_that_throws_is_headed_failed(tmp_path: Path) -> None:
    program = _program(tmp_path, 'text("so far");\nawait tools.search({});\n')
    result = _run("run", "--timeout", "20", program)
    assert result.returncode == 1
    assert result.stdout == "== Failed\nso far\nerror: tool `search` is not enabled in exec\n"
