"""Closing an isolate while evaluations are still queued on it.

mini-racer's context destructor cancels the evaluations queued on the isolate thread,
but does not wait for one that has just passed its cancellation check; it then clears
the V8 context, and that evaluation reads the cleared context (SIGSEGV at address 0
in ``ObjectManipulator::Call``). ``NativeIsolate.close`` therefore cancels what is in
flight and waits for each report before it frees the context.

The scenario posts evaluations in a tight loop from one thread while another closes
the isolate, isolate after isolate, in a fresh process (see ``native_child``), so a
crash fails the test with its signal. Without the waiting, the crash came within
0.5-9 s of this loop on a 2-core VM (6 runs of 6: 25-450 isolates); with it, none
in 195 s (about 9,400 isolates).
"""

from __future__ import annotations

import re

from ...native_child import run_child

SCENARIO = """
import json, threading, time
from code_mode._v8 import FIRST_PROGRAM_TAG, NativeIsolate, IsolateUnavailable, IsolateLimits

reports = []
start = json.dumps([{
    "t": "start", "source": SOURCE, "tools": [], "stored": {},
    "allow_remote_images": True, "max_stored_entries": 8,
    "max_stored_chars": 4096, "max_json_depth": 64, "memory_limit_bytes": 1 << 26,
}])

def poster(native, first_tag, stop):
    tag = first_tag
    while not stop.is_set():
        try:
            native.post("[]", tag)
        except IsolateUnavailable:
            return
        tag += 1
        if tag % 50 == 0:
            time.sleep(0)  # let the closing thread have the GIL now and then

for n in range(ISOLATES):
    native = NativeIsolate(
        limits=IsolateLimits(1 << 26, 1 << 20),
        on_batch=lambda text: None,
        on_task=lambda tag, outcome, detail: reports.append(outcome),
    )
    native.post(start, FIRST_PROGRAM_TAG, quiet=True, probe=FIRST_PROGRAM_TAG + 1)
    stop = threading.Event()
    thread = threading.Thread(target=poster, args=(native, FIRST_PROGRAM_TAG + 2, stop))
    thread.start()
    time.sleep(0.002)  # evaluations pile up on the isolate thread; close under them
    native.close()
    stop.set()
    thread.join()
print("closed", ISOLATES, "isolates;", reports.count("terminated"), "terminated")
"""


def _run(source: str, isolates: int) -> int:
    """Runs the scenario; returns how many evaluations were reported terminated."""
    result = run_child(f"SOURCE = {source!r}\nISOLATES = {isolates}\n{SCENARIO}", None)
    assert result.returncode == 0, result.describe()
    match = re.search(r"closed (\d+) isolates; (\d+) terminated", result.output)
    assert match is not None, result.describe()
    assert int(match[1]) == isolates
    return int(match[2])


def test_closing_while_evaluations_are_posted_in_a_loop_does_not_crash() -> None:
    _run('text("done")', isolates=800)


def test_closing_interrupts_a_spinning_program_and_reports_it() -> None:
    # close() cancels what is in flight: the spinning program is interrupted, and its
    # report arrives (close waits for it before it frees the context).
    assert _run("while (true) {}", isolates=150) >= 150
