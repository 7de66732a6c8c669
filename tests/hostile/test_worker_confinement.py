"""A worker process confines itself once V8 is up (``docs/security.md``).

The worker is started exactly as the engine starts it, with the test-only hook
``CODE_MODE_WORKER_SELFTEST=1``: its ``selftest`` op makes the worker itself try each
thing a V8 exploit would want (new processes, sockets, file writes, reads outside what
it needs, signals to the host) and report how each ended. Then it must still create an
isolate: the confinement must not break V8.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

from code_mode._engine._worker_process import _PACKAGE_DIR
from code_mode._v8 import (
    BOOTSTRAP,
    SELFTEST_ENV,
    Close,
    Closed,
    Create,
    Created,
    FrameReader,
    HostFrame,
    IsolateLimits,
    Ready,
    Selftest,
    SelftestResults,
    WorkerFrame,
)

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


class Worker:
    """A worker started as the engine starts it (its own pipes for frames and the
    heartbeat, passed as descriptors), with the self-test hook on."""

    def __init__(self) -> None:
        pipes = [os.pipe() for _ in range(4)]  # commands, frames, ping, pong
        theirs = [pipes[0][0], pipes[1][1], pipes[2][0], pipes[3][1]]
        self.commands, self.frames, self.ping, self.pong = (
            pipes[0][1],
            pipes[1][0],
            pipes[2][1],
            pipes[3][0],
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", BOOTSTRAP, _PACKAGE_DIR, "confine", "1", *map(str, theirs)],
            stdin=subprocess.DEVNULL,
            pass_fds=theirs,
            env=dict(os.environ, **{SELFTEST_ENV: "1"}),
        )
        for fd in theirs:
            os.close(fd)
        self._reader = FrameReader()
        self._frames: list[WorkerFrame] = []

    def next_frame(self) -> WorkerFrame:
        while not self._frames:
            readable, _, _ = select.select([self.frames], [], [], SAFETY)
            assert readable, "the worker did not answer"
            data = os.read(self.frames, 1 << 16)
            assert data, "the worker exited"
            self._frames.extend(self._reader.feed(data))  # type: ignore[arg-type]
        return self._frames.pop(0)

    def ask(self, command: HostFrame) -> WorkerFrame:
        os.write(self.commands, command.encode())
        return self.next_frame()

    def heartbeat(self) -> bytes:
        """A ping, and the worker's echo of it."""
        os.write(self.ping, b"p")
        readable, _, _ = select.select([self.pong], [], [], SAFETY)
        assert readable, "the heartbeat was not answered"
        return os.read(self.pong, 16)

    def close(self) -> int:
        os.close(self.commands)
        try:
            return self.process.wait(timeout=SAFETY)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            for fd in (self.frames, self.ping, self.pong):
                os.close(fd)


def test_a_worker_refuses_what_its_confinement_forbids(tmp_path: Path) -> None:
    (tmp_path / "existing.txt").write_text("kept")
    (tmp_path / "secret.txt").write_text("secret")
    worker = Worker()
    try:
        ready = worker.next_frame()
        echo = worker.heartbeat()  # answered under the confinement
        selftest = worker.ask(Selftest(str(tmp_path)))
        created = worker.ask(Create(1, IsolateLimits(64 * 1024 * 1024, 1 << 20)))
        closed = worker.ask(Close(1))
    finally:
        assert worker.close() == 0
    assert isinstance(ready, Ready)
    assert echo == b"p"
    assert isinstance(selftest, SelftestResults)
    unconfined = " ".join(ready.unconfined)
    assert "seccomp" not in unconfined, f"this machine lacks seccomp: {unconfined}"
    results = selftest.results
    expected = dict(FORBIDDEN, **ALLOWED)
    if "landlock" not in unconfined:
        expected.update(UNREADABLE)
    assert {name: results[name] for name in expected} == expected
    assert (tmp_path / "existing.txt").read_text() == "kept"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["existing.txt", "secret.txt"]
    # V8 still creates (and disposes of) isolates under the confinement.
    assert created == Created(1, None)
    assert closed == Closed(1)
