"""A generic built-in over a huge length, then ``terminate`` (issue 26): the session
must still close.

``Array.prototype.indexOf.call({ length: 2 ** 53 }, 1)`` walks every index of an
object that has none: V8 would take days. The program is terminated while it runs, and
leaving ``async with CodeModeSession`` must return (in thread mode it never did: the
isolate's closing waited for the walk; it now waits at most
``_thread_backend.CLOSE_PATIENCE``, and the disposal goes on on its own thread). In a
child process, in each isolation mode.
"""

from __future__ import annotations

import json

from ..native_child import run_child

SCENARIO = """
import json, re, time

async def main():
    began = time.monotonic()
    async with session() as s:
        first = await s.exec(
            '// @exec: {"yield_time_ms": 300}\\n'
            "Array.prototype.indexOf.call({ length: 2 ** 53 }, 1); text('never')"
        )
        cell = re.search(r"cell ID (\\S+)", first[0].text).group(1)
        ended = await s.wait(cell, terminate=True)
        terminated = time.monotonic() - began
    print("RESULT " + json.dumps({
        "first": first[0].text, "ended": ended[0].text, "terminated": terminated,
        "closed": time.monotonic() - began,
    }), flush=True)
"""


def test_terminating_a_long_builtin_lets_the_session_close(isolation: str) -> None:
    result = run_child(SCENARIO, isolation, timeout=45)
    assert result.returncode == 0, result.describe()
    line = next(line for line in result.output.splitlines() if line.startswith("RESULT "))
    outcome = json.loads(line.removeprefix("RESULT "))
    print(f"\n{isolation}: {outcome}")
    assert "Script running with cell ID" in outcome["first"], outcome
    assert "Script terminated" in outcome["ended"], outcome
    assert outcome["closed"] < 20, outcome
