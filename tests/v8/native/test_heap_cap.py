"""V8's own heap limit per isolate (``_v8/_heap_cap.py``), as V8 itself reports it.

The limit is set on the isolate thread inside the callback that reports the prelude's
evaluation (no set-up round trip of its own), and lowered when a warm isolate is handed
to a session with a lower memory limit (a probe posted for it, whose completion lowers
it before anything posted after it runs). V8's heap statistics (``mr_heap_stats``)
say what V8 enforces: ``heap_size_limit``, its default far above either limit.
"""

from __future__ import annotations

import json

from ...native_child import run_child

CHILD = """
import json, threading
from code_mode._v8 import FIRST_PROGRAM_TAG, NativeIsolate, IsolateLimits

MiB = 1 << 20
ended = threading.Event()
native = NativeIsolate(
    limits=IsolateLimits(256 * MiB, 1 << 20),
    on_batch=lambda text: None,
    on_task=lambda tag, outcome, detail: ended.set(),
)

def heap_size_limit():
    raw = native._dll.mr_heap_stats(native._ctx)
    contents = raw.contents
    text = contents.value.bytes_val[0 : contents.len].decode()
    native._dll.mr_free_value(native._ctx, raw)
    return json.loads(text)["heap_size_limit"]

limits = {"set_up": heap_size_limit()}
native.set_limits(IsolateLimits(32 * MiB, 1 << 20))
native.post("[]", FIRST_PROGRAM_TAG)  # runs after the lowering
assert ended.wait(10)
limits["lowered"] = heap_size_limit()
native.close()
print(json.dumps(limits))
"""

MiB = 1024 * 1024


def test_v8s_heap_limit_follows_the_cells_limit_from_set_up_on() -> None:
    result = run_child(CHILD, None)
    assert result.returncode == 0, result.describe()
    limits = json.loads(result.output.strip().splitlines()[-1])
    # V8's old generation is capped at half as much again as the cell's limit
    # (HeapCap.v8_limit); heap_size_limit adds the young generation, which neither
    # changes. V8's own default is over 1 GiB.
    assert limits["set_up"] < 1024 * MiB, limits
    assert limits["set_up"] - limits["lowered"] == (256 - 32) * 3 // 2 * MiB, limits
