"""Shared by the tests of real MCP hosts: ``test_hosts.py``, and ``test_hosts_mcp1.py``,
which runs in a virtualenv of its own with the MCP SDK 1.x (``nox -s hosts_mcp1``), so
this module imports neither the MCP SDK nor code_mode's server.

:func:`next_call` plays a model that reads what its host handed it: it runs a program
that calls a tool and stores its result, then, in a later call, one that loads it
(passing back the session handle when a result names one, ``Session: <handle>``) and
yields, and resumes that one with ``wait`` (the cell id read from the result it was
given) until it ends. :func:`check_handed` is the acceptance of what the host handed
the model, one string per call, in whatever form the host gives it (a text, a repr, a
JSON dump): each contains the program's output.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from ..mcp_support import SAFETY

T = TypeVar("T")

STORES = "const sum = await tools.add({a: 2, b: 3}); store('sum', sum); text(`sum=${sum}`)"
LOADS_THEN_YIELDS = (
    '// @exec: {"yield_time_ms": 100}\n'
    "text(`loaded ${load('sum')}`);"
    "await new Promise(r => setTimeout(r, 500));"
    "text(`resumed ${await tools.add({a: 40, b: 2})}`)"
)
WAIT_YIELD_MS = 3000  # each wait's yield time, under the server's 4 s cap
MAX_CALLS = 10  # a hang guard on the script: a program still running after 8 waits
# A hang guard for a host that opens a session per call: over stdio, it starts a server
# process for each (the listing and three calls), as slowly as the machine's load makes it.
PER_CALL_PROCESSES = SAFETY * 2

# Handles and numbers alike are URL-safe base64 characters: a host that hands the model
# a repr or a JSON dump escapes the newline after them (``\\n``), which ``\S+`` would take.
CELL_ID = re.compile(r"Script running with cell ID ([\w-]+)")
SESSION = re.compile(r"Session: ([\w-]+)")


async def in_asyncio(make: Callable[[], Awaitable[T]]) -> T:
    """``make()`` run to its end under ``asyncio.run`` in a worker thread."""

    async def main() -> T:
        return await make()

    return await trio.to_thread.run_sync(asyncio.run, main())


def session_of(handed: list[str]) -> dict[str, str]:
    """``{"session": <handle>}`` from the latest result naming one, else nothing (the
    stateful revision: the MCP session is the session)."""
    for text in reversed(handed):
        if found := SESSION.search(text):
            return {"session": found.group(1)}
    return {}


def next_call(handed: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The model's next tool call, ``(name, arguments)``, given every tool result it was
    handed so far, in order; ``None`` when it is done."""
    if not handed:
        return "exec", {"code": STORES}
    if len(handed) == 1:
        return "exec", {"code": LOADS_THEN_YIELDS, **session_of(handed)}
    if len(handed) >= MAX_CALLS or "Script running" not in handed[-1]:
        return None
    running = CELL_ID.search(handed[1])
    assert running is not None, handed
    return "wait", {"cell_id": running.group(1), "yield_time_ms": WAIT_YIELD_MS}


def check_handed(handed: list[str]) -> None:
    """The acceptance of what a host handed the model over one :func:`next_call` script:
    (a) the tool-calling program's result; (c) the value it stored, loaded by the next
    call; (b) that call's program handed back running, and its rest returned by
    ``wait``; each a string that (d) contains the program's output. It holds for hosts
    that open a new MCP session (over stdio, a new server process) for each tool call
    too: the session and the cell are named by handles the model passes back."""
    assert len(handed) >= 3, handed
    called, started, *waited = handed
    assert "Script completed" in called and "sum=5" in called, called
    assert CELL_ID.search(started) is not None, started
    assert "loaded 5" in started, started
    finished = waited[-1]
    assert "Script completed" in finished and "resumed 42" in finished, waited
    assert "loaded" not in finished, finished  # the rest only
