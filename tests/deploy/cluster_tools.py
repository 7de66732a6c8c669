"""The tools the servers of the balancer tests serve
(``--tools tests.deploy.cluster_tools:TOOLS``)."""

from __future__ import annotations

import os

from code_mode import tool


@tool
async def whoami() -> int:
    """The id of the server process running the program."""
    return os.getpid()


TOOLS = [whoami]
