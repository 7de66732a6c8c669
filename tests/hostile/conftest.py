"""Fixtures of the hostile-program corpus."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["process", "thread"])
def isolation(request: pytest.FixtureRequest) -> str:
    """The isolation mode a corpus program runs in (``RuntimeConfig.isolation``).

    Programs marked ``fatal_in_thread_mode`` are skipped in ``"thread"`` mode: they
    abort (or could exhaust) the whole host process there, by design of that mode.
    """
    mode: str = request.param
    return mode
