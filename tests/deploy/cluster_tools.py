"""The tools the servers of the balancer tests serve
(``--tools tests.deploy.cluster_tools:TOOLS``)."""

from __future__ import annotations

import os
import time

from code_mode import tool


@tool
async def whoami() -> int:
    """The id of the server process running the program."""
    return os.getpid()


@tool
def note(label: str) -> str:
    """Append ``label`` (with the server's pid and the time) to the file named by
    ``CODE_MODE_NOTES``: every server's calls in one file, so that a test counts how
    often each call ran, and where."""
    path = os.environ.get("CODE_MODE_NOTES")
    if path:
        with open(path, "a") as notes:  # one short append: atomic with O_APPEND
            notes.write(f"{label}\t{os.getpid()}\t{time.time():.3f}\n")
    return label


TOOLS = [whoami, note]
