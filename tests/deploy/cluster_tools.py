"""The tools the servers of the balancer tests serve
(``--tools tests.deploy.cluster_tools:TOOLS``)."""

from __future__ import annotations

import os

from code_mode import tool


@tool
async def whoami() -> int:
    """The id of the server process running the program."""
    return os.getpid()


@tool
def note(label: str) -> str:
    """Append ``label`` to the file named by ``CODE_MODE_NOTES`` (every server's calls
    in one file, so that a test counts how often each call ran)."""
    path = os.environ.get("CODE_MODE_NOTES")
    if path:
        with open(path, "a") as notes:  # one short append: atomic with O_APPEND
            notes.write(label + "\n")
    return label


TOOLS = [whoami, note]
