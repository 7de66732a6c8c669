"""What a results file records about where its numbers come from: the machine, the
checkout, the versions and V8 flags of each side.

Numbers measured on a shared 2-core machine mean little without the CPU (and whether
it has ``pku``, which V8's memory protection uses), the kernel, the load average and
the commit they were measured at, so every runner (``bench.run``, ``bench.sessions``,
``bench.peers``) records them.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import subprocess
from collections.abc import Sequence
from typing import Any

import attrs

from .child_process import ROOT
from .side import RAW, v8_flags
from .sizes import Sizes


def machine() -> dict[str, Any]:
    """The CPU model and its ``pku`` flag, the cores, the kernel and the load average."""
    flags = ""
    model = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1]
    return {
        "cpu": model,
        "pku": " pku " in f" {flags} ",
        "cores": os.cpu_count(),
        "kernel": os.uname().release,
        "load": os.getloadavg(),
    }


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def git_revision() -> str | None:
    """``<commit>`` of the checkout, with ``+dirty`` when code_mode/ has local changes."""
    try:
        commit = _git("rev-parse", "--short", "HEAD")
        status = _git("status", "--porcelain", "--", "code_mode")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if status else "")


def run_meta(quick: bool, sizes: Sizes, modes: Sequence[str]) -> dict[str, Any]:
    """The ``meta`` of a ``bench.run`` results file, read before the first benchmark."""
    from importlib.metadata import version

    from py_mini_racer import MiniRacer

    with MiniRacer() as racer:
        v8 = racer.v8_version
    return {
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": git_revision(),
        "quick": quick,
        "modes": list(modes),
        "sizes": attrs.asdict(sizes),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "machine": machine(),
        "loadavg_start": os.getloadavg(),
        "mini_racer": version("mini-racer"),
        "v8": v8,
        "v8_flags": {side: v8_flags(side) for side in [*modes, RAW]},
        "trio": version("trio"),
    }
