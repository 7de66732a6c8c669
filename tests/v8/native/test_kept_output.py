"""Output-only batches kept back in the native layer (``NativeIsolate._deliver``).

The runtime flushes every output item at once; the native layer keeps a batch that
holds only output until the next batch (sent with it, as one), the end of the
evaluation, a size limit, or ``flush_output``. So a short program crosses back once,
and a program that prints and then spins still has its output handed over. Each
scenario runs in a fresh process (see ``native_child``), driving V8 without trio, with
``keep_output`` (as in ``thread`` mode) unless it says otherwise.
"""

from __future__ import annotations

from .test_probe import _run

#: The start of a child that runs a program printing "a", then spinning, with
#: ``wait_until(check, what, each)``: poll ``check`` (calling ``each`` before each
#: pause) for at most 30 s.
SPINNING = """
import time
native.post(start('text("a"); while (true) {}'), T, quiet=True, probe=T + 1)

def wait_until(check, what, each=lambda: None):
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, what
        each()
        time.sleep(0.001)
"""


def test_a_short_program_crosses_back_in_one_batch() -> None:
    _run(
        """
native.post(start('text("a"); console.log("b");'), T, quiet=True, probe=T + 1)
seen = until_task(T + 1)
batches = [json.loads(event[1]) for event in seen if event[0] == "batch"]
assert len(batches) == 1, seen
assert [message["t"] for message in batches[0]] == ["started", "text", "text", "done"], seen
assert [m.get("text") for m in batches[0][1:3]] == ["a", "b"], seen
native.close()
print("OK")
"""
    )


def test_output_kept_back_is_handed_over_on_request_while_the_program_spins() -> None:
    _run(
        SPINNING
        + """
wait_until(lambda: not events.empty(), "no batch", each=native.flush_output)
first = events.get()
assert first[0] == "batch", first
assert [m["t"] for m in json.loads(first[1])] == ["started", "text"], first
assert events.empty()  # still running (it spins until cancelled): no report
native.cancel(T)
seen = until_task(T)
assert [event[0] for event in seen] == ["task"], seen  # nothing handed over twice
native.close()
print("OK")
"""
    )


def test_kept_output_goes_before_the_report_of_an_interrupted_evaluation() -> None:
    _run(
        SPINNING
        + """
wait_until(lambda: native._kept, "no output kept")  # it printed (and now spins)
assert events.empty()
native.cancel(T)
seen = until_task(T)
assert seen[-1] == ("task", T, "terminated"), seen
batches = [json.loads(event[1]) for event in seen if event[0] == "batch"]
assert [[m["t"] for m in batch] for batch in batches] == [["started", "text"]], seen
native.close()
print("OK")
"""
    )


def test_output_past_the_kept_limit_is_handed_over_at_once() -> None:
    _run(
        """
from code_mode._v8._native import KEPT_OUTPUT_CHARS
items = KEPT_OUTPUT_CHARS // 20 + 1
native.post(
    start(f'for (let i = 0; i < {items}; i++) text("x".repeat(20)); while (true) {{}}'),
    T, quiet=True, probe=T + 1,
)
first = events.get(timeout=30)  # without flush_output, while the program spins
assert first[0] == "batch", first
assert all(m["t"] in ("started", "text") for m in json.loads(first[1])), first
native.cancel(T)
until_task(T)
native.close()
print("OK")
"""
    )


def test_an_urgent_message_takes_the_kept_output_with_it() -> None:
    _run(
        """
native.post(start('text("a"); setTimeout(() => {}, 60000); while (true) {}'), T,
            quiet=True, probe=T + 1)
first = events.get(timeout=30)
assert [m["t"] for m in json.loads(first[1])] == ["started", "text", "timer"], first
native.cancel(T)
until_task(T)
native.close()
print("OK")
"""
    )


def test_without_keep_output_every_batch_goes_at_once() -> None:
    # A worker process's isolates: its host handles the first batch while the worker
    # makes the second, and could not ask for kept output without waiting for it.
    _run(
        """
native.close()
native = NativeIsolate(
    limits=IsolateLimits(1 << 28, 1 << 20), on_batch=on_batch,
    on_task=lambda tag, outcome, detail: events.put(("task", tag, outcome)),
)
native.post(start('text("a"); while (true) {}'), T, quiet=True, probe=T + 1)
first = events.get(timeout=30)  # without flush_output, while the program spins
assert [m["t"] for m in json.loads(first[1])] == ["started", "text"], first
native.cancel(T)
until_task(T)
native.close()
print("OK")
"""
    )
