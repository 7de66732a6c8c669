"""``code-mode mcp serve --store URL``: a malformed or unreachable store is one line on
stderr and exit 2, before anything is served; the password is never printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .redis_server import RedisServer, free_port


def serve(*store: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "code_mode", "mcp", "serve", "--http", "127.0.0.1:0", *store],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("bogus://x", "unknown store bogus://"),
        ("redis://:hunter2@h:6379/42", "database must be a number"),
        ("sqlite:///", "sqlite:// needs a file's path"),
        ("sqlite:///proc/code-mode.db", "the store sqlite:///proc/code-mode.db cannot be written"),
    ],
)
def test_malformed_store_url_exits_2_in_one_line(url: str, why: str) -> None:
    done = serve("--store", url)
    assert done.returncode == 2
    assert done.stderr.startswith("code-mode: --store: ") and why in done.stderr
    assert done.stderr.count("\n") == 1 and "hunter2" not in done.stderr


def test_a_sqlite_store_that_is_a_folder_exits_2_in_one_line(tmp_path: Path) -> None:
    done = serve("--store", f"sqlite://{tmp_path}")
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr
        == f"code-mode: --store: the store sqlite://{tmp_path} is a folder: name a file in it\n"
    )


def test_unreachable_store_exits_2_in_one_line() -> None:
    done = serve("--store", f"redis://:hunter2@127.0.0.1:{free_port()}/0")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("code-mode: --store: the store redis://:***@127.0.0.1:")
    assert done.stderr.count("\n") == 1 and "hunter2" not in done.stderr


def test_wrong_password_exits_2_naming_it(redis_server: RedisServer) -> None:
    done = serve("--store", f"redis://:hunter2@127.0.0.1:{redis_server.port}/0")
    assert done.returncode == 2, done.stderr
    assert "wrong password" in done.stderr and "hunter2" not in done.stderr
    assert done.stderr.count("\n") == 1
