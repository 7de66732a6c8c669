"""The idleness probe queued with a command batch in one request.

``NativeIsolate.post(..., quiet=True, probe=p)`` queues the batch and, right behind
it, the probe ``p`` (in ``process`` mode, one frame through the pipe instead of two).
The probe's report must come after everything the batch's microtasks sent (that is
what makes it an idleness signal); a failed batch is still reported, and its probe
still runs after it; a cancel reaches the probe. Each scenario runs in a fresh
process (see ``native_child``): it drives V8 directly, without trio.
"""

from __future__ import annotations

from ...native_child import run_child

HARNESS = """
import json, queue, threading
from code_mode._v8 import FIRST_PROGRAM_TAG, NativeIsolate, IsolateLimits

events = queue.SimpleQueue()  # ("batch", text) and ("task", tag, outcome), in order
hold = None  # a threading.Event that the next batch report waits for

def on_batch(text):
    events.put(("batch", text))
    if hold is not None:
        entered.set()
        hold.wait()

native = NativeIsolate(
    limits=IsolateLimits(1 << 28, 1 << 20),
    on_batch=on_batch,
    on_task=lambda tag, outcome, detail: events.put(("task", tag, outcome)),
    keep_output=True,  # as in thread mode
)

def start(source):
    return json.dumps([{
        "t": "start", "source": source, "tools": [], "stored": {},
        "allow_remote_images": True, "max_stored_entries": 8,
        "max_stored_chars": 4096, "memory_limit_bytes": 1 << 28,
    }])

def until_task(tag):
    seen = []
    while True:
        event = events.get(timeout=30)
        seen.append(event)
        if event[0] == "task" and event[1] == tag:
            return seen

T = FIRST_PROGRAM_TAG
"""


def _run(body: str) -> None:
    result = run_child(HARNESS + body, None)
    assert result.returncode == 0, result.describe()
    assert "OK" in result.output, result.describe()


def test_the_probe_reports_after_what_the_batchs_microtasks_sent() -> None:
    _run(
        """
native.post(start('await null; await null; text("late");'), T, quiet=True, probe=T + 1)
seen = until_task(T + 1)
texts = [event[1] for event in seen if event[0] == "batch"]
assert any('"late"' in text for text in texts), seen
assert seen[-1] == ("task", T + 1, "ok"), seen
assert not any(event[0] == "task" and event[1] == T for event in seen), seen  # quiet
native.close()
print("OK")
"""
    )


def test_a_failed_batch_is_reported_and_its_probe_still_runs() -> None:
    _run(
        """
native.post("not json", T, quiet=True, probe=T + 1)
seen = until_task(T + 1)
tasks = [event for event in seen if event[0] == "task"]
assert [task[:2] for task in tasks] == [("task", T), ("task", T + 1)], seen
assert tasks[0][2] == "error" and tasks[1][2] == "ok", seen
native.close()
print("OK")
"""
    )


def test_a_cancel_reaches_the_probe_queued_behind_a_batch() -> None:
    _run(
        """
hold, entered = threading.Event(), threading.Event()
native.post(start('text("x");'), T, quiet=True, probe=T + 1)
assert entered.wait(30)  # the batch is running: its probe is still queued
native.cancel(T + 1)
hold.set()
seen = until_task(T + 1)
assert seen[-1] == ("task", T + 1, "terminated"), seen  # skipped, never run
native.close()
print("OK")
"""
    )
