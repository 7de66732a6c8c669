"""Shared fixtures: every test checks that it leaves no thread or isolate behind, and
has a state folder of its own (where ``code-mode mcp serve`` keeps its default store)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from code_mode._v8._native import live_isolate_count

from .native_child import cpu_description


def pytest_report_header() -> str:
    """Native behaviour depends on the CPU (memory protection keys): say which."""
    return f"cpu: {cpu_description()}"


def os_thread_count() -> int:
    """OS threads of this process (V8 isolate threads included)."""
    return len(os.listdir("/proc/self/task"))


@pytest.fixture(autouse=True)
def no_leaked_isolates() -> Iterator[None]:
    before = live_isolate_count()
    yield
    assert live_isolate_count() == before, "a test leaked a V8 isolate"


@pytest.fixture(autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$XDG_STATE_HOME`` for each test: ``code-mode mcp serve`` keeps its
    default store (a SQLite file) there, and no test may see another's, or the user's."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture(params=["process", "thread"])
def isolation(request: pytest.FixtureRequest) -> str:
    """Runs a test once per isolation mode (``RuntimeConfig.isolation``)."""
    mode: str = request.param
    return mode
