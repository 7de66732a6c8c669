"""A worker process confines itself once V8 is up (``docs/security.md``).

The worker is started exactly as the engine starts it, with the test-only hook
``CODE_MODE_WORKER_SELFTEST=1``: its ``selftest`` op makes the worker itself try each
thing a V8 exploit would want (new processes, sockets, file writes, reads outside what
it needs, signals to the host) and report how each ended. Then it must still create an
isolate: the confinement must not break V8.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from code_mode._engine._process import _PACKAGE_DIR
from code_mode._engine._wire import FrameReader, frame
from code_mode._engine._worker_main import BOOTSTRAP, SELFTEST_ENV

from ..helpers import SAFETY

FORBIDDEN = {
    "fork": "EPERM",
    "spawn": "EPERM",
    "exec": "EPERM",
    "socket_inet": "EPERM",
    "socket_unix": "EPERM",
    "create_file": "EPERM",
    "append_file": "EPERM",
    "unlink_file": "EPERM",
    "make_dir": "EPERM",
    "signal_parent": "EPERM",
}
#: Refused by Landlock (where the kernel has it): reads outside what a worker needs.
UNREADABLE = {"read_secret": "EACCES", "read_etc_passwd": "EACCES"}
ALLOWED = {"thread": "ok", "read_package": "ok"}


def talk(directory: Path, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    """Start a worker as the engine does, send ``requests``, return every frame it
    sends until it exits (its stdin is closed after the last answer)."""
    worker = subprocess.Popen(
        [sys.executable, "-c", BOOTSTRAP, _PACKAGE_DIR, "confine"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=dict(os.environ, **{SELFTEST_ENV: "1"}),
    )
    assert worker.stdin is not None and worker.stdout is not None
    try:
        for header in requests:
            worker.stdin.write(frame(header))
        worker.stdin.flush()
        frames: list[dict[str, Any]] = []
        reader = FrameReader()
        # ready, one answer per request, and "closed" for the isolate
        while len(frames) < len(requests) + 2:
            data = os.read(worker.stdout.fileno(), 1 << 16)
            if not data:
                break
            frames.extend(header for header, _body in reader.feed(data))
        worker.stdin.close()
        assert worker.wait(timeout=SAFETY) == 0
        return frames
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_a_worker_refuses_what_its_confinement_forbids(tmp_path: Path) -> None:
    (tmp_path / "existing.txt").write_text("kept")
    (tmp_path / "secret.txt").write_text("secret")
    frames = talk(
        tmp_path,
        {"op": "selftest", "dir": str(tmp_path)},
        {"op": "create", "id": 1, "memory": 64 * 1024 * 1024, "max_message": 1 << 20},
        {"op": "close", "id": 1},
    )
    ready, selftest, created, closed = frames
    assert ready["ev"] == "ready"
    unconfined = " ".join(ready["unconfined"])
    assert "seccomp" not in unconfined, f"this machine lacks seccomp: {unconfined}"
    results = selftest["results"]
    expected = dict(FORBIDDEN, **ALLOWED)
    if "landlock" not in unconfined:
        expected.update(UNREADABLE)
    assert {name: results[name] for name in expected} == expected
    assert (tmp_path / "existing.txt").read_text() == "kept"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["existing.txt", "secret.txt"]
    # V8 still creates (and disposes of) isolates under the confinement.
    assert created == {"ev": "created", "id": 1, "error": None}
    assert closed == {"ev": "closed", "id": 1}
