"""The idleness probe that the isolate's own thread posts after a command batch.

``NativeIsolate.post(..., quiet=True, probe=p)`` is one crossing from the host; the
isolate thread posts the probe ``p`` once the batch succeeded. Its report must come
after everything the batch's microtasks sent (that is what makes it an idleness
signal), must not come after a failed batch, and a cancel must reach a probe that is
not posted yet. Each scenario runs in a fresh process (see ``native_child``): it
drives V8 directly, without trio.
"""

from __future__ import annotations

from .native_child import run_child

HARNESS = """
import json, queue, threading
from code_mode._engine._native import FIRST_PROGRAM_TAG, NativeIsolate

events = queue.SimpleQueue()  # ("batch", text) and ("task", tag, outcome), in order
hold = None  # a threading.Event that the next batch report waits for

def on_batch(text):
    events.put(("batch", text))
    if hold is not None:
        entered.set()
        hold.wait()

native = NativeIsolate(
    memory_limit_bytes=1 << 28,
    max_message_chars=1 << 20,
    on_batch=on_batch,
    on_task=lambda tag, outcome, detail: events.put(("task", tag, outcome)),
)

def start(source):
    return json.dumps([{
        "t": "start", "source": source, "tools": [], "stored": {},
        "allow_remote_images": True, "max_stored_entries": 8,
        "max_stored_bytes": 4096, "memory_limit_bytes": 1 << 28,
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


def test_no_probe_follows_a_failed_batch() -> None:
    _run(
        """
native.post("not json", T, quiet=True, probe=T + 1)
seen = until_task(T)
assert seen[-1][2] == "error", seen
# Tasks run in order: had the probe been posted, it would report before this one.
native.post("[]", T + 2)
seen = until_task(T + 2)
assert not any(event[0] == "task" and event[1] == T + 1 for event in seen), seen
native.close()
print("OK")
"""
    )


def test_cancelling_a_probe_not_posted_yet_skips_it() -> None:
    _run(
        """
hold, entered = threading.Event(), threading.Event()
native.post(start('text("x");'), T, quiet=True, probe=T + 1)
assert entered.wait(30)  # the batch is running: its output report is being made
native.cancel(T + 1)
hold.set()
# The program's completion is sent by the microtasks that follow the batch: once it
# arrived, the batch has ended and its probe, had it been kept, is queued already.
seen = []
while not any(event[0] == "batch" and '"done"' in event[1] for event in seen):
    seen.append(events.get(timeout=30))
native.post("[]", T + 2)
seen += until_task(T + 2)
assert not any(event[0] == "task" and event[1] == T + 1 for event in seen), seen
native.close()
print("OK")
"""
    )
