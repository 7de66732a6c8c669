"""The examples run as shipped (CI runs them through this file)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import trio

from code_mode.cli import main as cli_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAFETY = 10.0  # seconds; a hang guard, never the thing under test


def run_example(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Run the ``main()`` of ``examples/<name>`` (an async function); return its
    answer as text and what it printed."""
    namespace = runpy.run_path(str(EXAMPLES / name))

    async def run() -> str:
        with trio.fail_after(SAFETY):
            return str(await namespace["main"]())

    answer = trio.run(run)
    return answer, capsys.readouterr().out


def assert_in_order(output: str, steps: list[str]) -> None:
    """Each step is found in ``output``, in this order."""
    position = 0
    for step in steps:
        found = output.find(step, position)
        assert found >= 0, f"missing or out of order: {step!r}\n{output}"
        position = found


#: The model's ``exec`` (with a pragma), handed back still running as cell 1.
EXEC_HANDED_BACK = [
    "model -> exec:\n// @exec:",
    "exec result:\nScript running with cell ID 1\nWall time ",
]


def test_agent_loop_example(capsys: pytest.CaptureFixture[str]) -> None:
    answer, output = run_example("agent_loop.py", capsys)
    assert answer == "Here you go: Lisbon: sunny, 21 °C, population 545,923"
    steps = [
        "user: What is the weather in Lisbon",
        *EXEC_HANDED_BACK,
        'model -> wait:\n{"cell_id": "1"}',
        "wait result:\nScript completed\nWall time ",
        "Output:\nLisbon: sunny, 21 °C, population 545,923\n",
        "assistant: Here you go:",
    ]
    assert "[notify from cell 1] Looking up Lisbon...\n" in output
    assert_in_order(output, steps)


def test_agent_loop_push_example_ends_the_turn_and_resumes_on_the_push(
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer, output = run_example("agent_loop_push.py", capsys)
    assert answer == "Done: checkout had 17 errors yesterday."
    steps = [
        "user: How many errors did checkout have",
        *EXEC_HANDED_BACK,
        "You will be given its result when it finishes",
        "assistant: I'm counting the errors",  # the turn ends: no wait
        "pushed (cell 1):\nScript completed\nWall time ",
        "checkout had 17 errors yesterday",
        "assistant: Done: checkout had 17 errors yesterday.",
    ]
    assert_in_order(output, steps)
    assert "model -> wait" not in output


def test_hello_js_runs_with_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["run", str(EXAMPLES / "hello.js")]) == 0
    output = capsys.readouterr().out
    assert "The answer is 42." in output
