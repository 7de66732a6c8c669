"""The journal's own work per B2 tool call, timed alone: CPU time a loaded machine
cannot blur.

    python -m bench.journal_cost            # ns per call, best of 7 repeats

B2 (``bench/b2_b3_calls.py``) costs a few hundred microseconds per call, and on a
shared machine its rounds vary by more than the 5% issue 26 allows the journal; so
besides running B2 with and without it (``python -m bench.run --only B1,B2
--isolation process --also-with max_journal_chars=0``), this times exactly what the
journal adds to one B2 call on the host (``code_mode/_engine/isolate.py``): the batch
carrying the tool's result recorded as posted (``Journal.posted``), the isolate's
``ToolCallRequested`` event fingerprinted and recorded (``Journal.replayed``, which
calls ``Journal.seen``), at the default ``RuntimeConfig.max_journal_chars`` and at
``0`` (replay off: the journal object is still there and returns at once). A cell's
journal grows over its calls, as in B2's 2000-call cells, so each repeat records
``CALLS`` calls into one journal.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from code_mode import RuntimeConfig
from code_mode._engine._bridge import ToolCallRequested
from code_mode._engine.journal import Journal

CALLS = 2000  # B2's calls per cell
REPEATS = 7


def _inputs() -> tuple[list[str], list[ToolCallRequested]]:
    """B2's messages, as the host sees them: each call's event and result batch."""
    events = [
        ToolCallRequested(id=f"tool-{i}", ident="echo", input={"i": i}, has_input=True)
        for i in range(CALLS)
    ]
    batches = [
        "[" + json.dumps({"t": "result", "id": f"tool-{i}", "ok": True, "value": {"i": i}}) + "]"
        for i in range(CALLS)
    ]
    return batches, events


def _per_call(record: Callable[[list[str], list[ToolCallRequested]], None]) -> float:
    """Seconds per call, the best of ``REPEATS`` cells of ``CALLS`` calls."""
    batches, events = _inputs()
    best = float("inf")
    for _ in range(REPEATS):
        start = time.process_time()
        for _ in range(20):
            record(batches, events)
        best = min(best, (time.process_time() - start) / (20 * CALLS))
    return best


def _with(limit: int) -> Callable[[list[str], list[ToolCallRequested]], None]:
    def record(batches: list[str], events: list[ToolCallRequested]) -> None:
        journal = Journal(limit)
        for batch, event in zip(batches, events, strict=True):
            journal.posted(batch)
            journal.replayed(event)

    return record


def _loop_only(batches: list[str], events: list[ToolCallRequested]) -> None:
    for _batch, _event in zip(batches, events, strict=True):
        pass


def main() -> int:
    loop = _per_call(_loop_only)
    default = _per_call(_with(RuntimeConfig().max_journal_chars)) - loop
    off = _per_call(_with(0)) - loop
    print(f"journal, default limit: {default * 1e9:.0f} ns per call")
    print(f"journal, max_journal_chars=0: {off * 1e9:.0f} ns per call")
    print(json.dumps({"default_ns": default * 1e9, "off_ns": off * 1e9}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
