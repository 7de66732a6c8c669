"""Running one measurement in a fresh child process and reading its answer.

Every benchmark here measures in processes of its own: V8 reads its flags once per
process, the allocator state one measurement leaves behind would be the next one's
starting point, and a crash at a large size should be reported, not kill the runner.
The children (``bench.side``, ``bench.b6_scale``, ``bench.sessions --child``, the
peers) all answer the same way: one JSON object on the last line of standard output.
:func:`run_child` is the one place that starts such a child and reads that line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: The checkout: children run here, and find ``bench`` here.
ROOT = Path(__file__).resolve().parent.parent

#: How much of a failed child's standard error the exception keeps.
STDERR_TAIL = 3000


class ChildFailed(RuntimeError):
    """A child exited with an error, printed nothing, or outlived its timeout.

    ``returncode`` is ``None`` when it timed out; ``stderr`` is what it wrote there."""

    def __init__(self, what: str, returncode: int | None, stderr: str, timeout: float) -> None:
        self.what = what
        self.returncode = returncode
        self.stderr = stderr
        self.timeout = timeout
        super().__init__(
            f"{what} timed out after {timeout:.0f} s"
            if returncode is None
            else f"{what} failed with exit code {returncode}:\n{stderr[-STDERR_TAIL:]}"
        )

    @property
    def brief(self) -> str:
        """One line for a table: the timeout, or the exit code and the last lines of
        standard error."""
        if self.returncode is None:
            return f"timed out after {self.timeout:.0f} s"
        tail = self.stderr.strip().splitlines()[-5:]
        return f"exit code {self.returncode}: " + " | ".join(tail)


def python_module(module: str, *args: str, python: str = sys.executable) -> list[str]:
    """The command that runs ``python -m module args...`` (this interpreter by default)."""
    return [python, "-m", module, *args]


def run_child(
    command: Sequence[str],
    *,
    timeout: float,
    what: str | None = None,
    env: Mapping[str, str] | None = None,
    checkout: Path = ROOT,
) -> dict[str, Any]:
    """Run ``command`` in the checkout and return the JSON object on the last line of
    its standard output.

    ``env`` defaults to this process's environment; the checkout (this one unless
    ``checkout`` names another, such as a worktree of an older commit) is put first on
    ``PYTHONPATH`` either way, so a Python child imports its ``bench`` and
    ``code_mode`` even where it does not look in the current folder. Raises
    :class:`ChildFailed` (named ``what``, by default the command's first word) when the
    child fails, prints nothing or takes longer than ``timeout`` seconds."""
    name = what or command[0]
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(checkout), environment.get("PYTHONPATH")])
    )
    try:
        completed = subprocess.run(
            list(command),
            cwd=checkout,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        raise ChildFailed(name, None, "", timeout) from expired
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        raise ChildFailed(name, completed.returncode, completed.stderr, timeout)
    result: dict[str, Any] = json.loads(lines[-1])
    return result
