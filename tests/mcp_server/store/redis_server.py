"""A real ``redis-server`` on a loopback port in a temporary folder, for the store's tests
(and the benchmark): started, stopped and restarted by the test that owns it."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

MISSING_REDIS = (
    "redis-server not found: install it with `apt-get install -y redis-server` (as .ci/run does)"
)
needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason=MISSING_REDIS)

_START_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port``, without persistence, optionally with a
    password (``requirepass``)."""

    def __init__(self, folder: Path, *, password: str | None = None) -> None:
        self.folder = folder
        self.port = free_port()
        self.password = password
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        secret = f":{self.password}@" if self.password else ""
        return f"redis://{secret}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            "redis-server",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.folder),
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        if self.password:
            command += ["--requirepass", self.password]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT
        while True:  # bounded poll: redis accepts connections once it is ready
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited: {(self.folder / 'redis.log').read_text()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=_START_TIMEOUT)
            self._process = None

    def pause(self) -> None:
        """Stop answering (SIGSTOP), data kept: an outage that :meth:`resume` ends."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)
