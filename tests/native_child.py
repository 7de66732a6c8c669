"""Run a scenario in a fresh Python process, the way a user's program starts.

Native faults (a V8 crash) must fail one test with the child's signal, not take the
whole test run down, and the child must start the library exactly as an application
does: nothing in it touches V8 before the library itself does.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap

import attrs

#: How many fresh processes each child-process scenario runs in
#: (``CODE_MODE_STRESS_RUNS``, default 1; 20 to hunt rare native crashes).
RUNS = int(os.environ.get("CODE_MODE_STRESS_RUNS", "1"))

#: What a scenario script gets before its own body when it names an isolation mode:
#: ``trio``, a tool ``add`` and ``session(**kwargs)``, a CodeModeSession factory.
PRELUDE = """
import trio
from code_mode import CodeModeSession, RuntimeConfig, tool

@tool
async def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    await trio.sleep(0.001)
    return a + b

def session(**kwargs):
    config = RuntimeConfig(isolation=ISOLATION, **kwargs.pop("config", {}))
    return CodeModeSession(tools=[add], config=config, **kwargs)
"""


#: A child scenario's ``tree_rss()``: the resident memory of the child and, unless
#: ``host_only``, of every process below it (its worker processes), in bytes.
TREE_RSS = """
def tree_rss(host_only=False):
    import os
    total, todo, seen = 0, [os.getpid()], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * 4096
            if host_only:
                break
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as c:
                    todo.extend(int(x) for x in c.read().split())
        except OSError:
            pass
    return total
"""


@functools.cache
def cpu_has_pku() -> bool:
    """Whether this CPU has memory protection keys (``pku`` in /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return any(
                line.startswith("flags") and " pku" in f" {line.split(':', 1)[1]} "
                for line in cpuinfo
            )
    except OSError:
        return False


@functools.cache
def cpu_description() -> str:
    """CPU model and whether it has ``pku``, for test logs."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}; memory protection keys (pku): {'yes' if cpu_has_pku() else 'no'}"


@attrs.frozen
class ChildResult:
    returncode: int
    output: str

    def describe(self) -> str:
        if self.returncode < 0:
            how = f"killed by {signal.Signals(-self.returncode).name}"
        else:
            how = f"exit status {self.returncode}"
        return f"child {how} on {cpu_description()}\n--- output ---\n{self.output[-6000:]}"


def run_child(
    body: str,
    isolation: str | None,
    *,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> ChildResult:
    """Run ``body`` in a new interpreter (``-X faulthandler``). With ``isolation``,
    the body defines ``async def main()`` after :data:`PRELUDE`, and is run with
    ``trio.run(main)``."""
    script = textwrap.dedent(body)
    if isolation is not None:
        script = f"ISOLATION = {isolation!r}\n{PRELUDE}\n{script}\ntrio.run(main)\n"
    env = dict(os.environ, PYTHONFAULTHANDLER="1", **(env or {}))
    completed = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    return ChildResult(completed.returncode, completed.stdout)
