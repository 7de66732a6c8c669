"""What a confined worker is not allowed to do, tried for real (tests only).

A worker started with ``CODE_MODE_WORKER_SELFTEST=1`` answers the ``selftest`` op with
:func:`try_forbidden`: each action below is attempted inside the worker, after its
confinement, and reported as ``"ok"`` or the name of the error that refused it. The
tests assert that every forbidden action is refused and that the allowed ones (a new
thread, reading the package) still work.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path


def _fork() -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - only if the confinement failed
        os._exit(0)
    os.waitpid(pid, 0)


def _spawn() -> None:
    pid = os.posix_spawn("/bin/true", ["true"], {})
    os.waitpid(pid, 0)


def _socket(family_name: str) -> Callable[[], None]:
    def attempt() -> None:
        import socket

        socket.socket(getattr(socket, family_name), socket.SOCK_STREAM).close()

    return attempt


def _thread() -> None:
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()


def try_forbidden(directory: str) -> dict[str, str]:
    """Try each action; ``directory`` holds ``existing.txt`` and ``secret.txt``."""
    base = Path(directory)
    actions: dict[str, Callable[[], object]] = {
        "fork": _fork,
        "spawn": _spawn,
        "socket_inet": _socket("AF_INET"),
        "socket_unix": _socket("AF_UNIX"),
        "create_file": lambda: open(base / "new.txt", "w").close(),
        "append_file": lambda: open(base / "existing.txt", "a").close(),
        "unlink_file": lambda: os.unlink(base / "existing.txt"),
        "make_dir": lambda: os.mkdir(base / "new-dir"),
        "read_secret": lambda: (base / "secret.txt").read_bytes(),
        "read_etc_passwd": lambda: Path("/etc/passwd").read_bytes(),
        "signal_parent": lambda: os.kill(os.getppid(), 0),
        # allowed
        "thread": _thread,
        "read_package": lambda: Path(__file__).read_bytes(),
        # last: were it allowed, the worker would become /bin/true
        "exec": lambda: os.execv("/bin/true", ["true"]),
    }
    results: dict[str, str] = {}
    for name, action in actions.items():
        try:
            action()
            results[name] = "ok"
        except OSError as error:
            results[name] = errno.errorcode.get(error.errno or 0, type(error).__name__)
    return results
