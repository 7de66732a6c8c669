"""What setting an isolate up leaves on the runtime's private channel buffer.

The prelude returns the buffer the runtime writes its messages into, carrying its
entry point (``recv``) and the empty argument array to call it with (``argv``) for
the host to take; reading one removes it (a getter that deletes itself), so the host
needs no second round trip to the isolate thread to delete it. The doorbells the
host attaches stay there until the runtime moves them into its closure.
"""

from __future__ import annotations

from ...native_child import run_child

CHILD = """
from code_mode._v8 import NativeIsolate, IsolateLimits

native = NativeIsolate(
    limits=IsolateLimits(1 << 28, 1 << 20),
    on_batch=lambda text: None,
    on_task=lambda tag, outcome, detail: None,
)
dll, ctx, buffer = native._dll, native._ctx, native._keep[0]
kinds = {}
for name in ("recv", "argv", "more", "end"):
    key = native._string_value(name)
    value = dll.mr_get_object_item(ctx, buffer, key)
    kinds[name] = int(value.contents.type)
    dll.mr_free_value(ctx, value)
    dll.mr_free_value(ctx, key)
# What the host kept: the entry point (a function) and its arguments (an array).
print(kinds, int(native._recv.contents.type), int(native._argv.contents.type))
native.close()
"""

#: mini-racer value types: no such key, an array, a function.
MISSING, ARRAY, FUNCTION = 206, 6, 100


def test_the_host_takes_recv_and_argv_off_the_buffer_and_leaves_the_doorbells() -> None:
    result = run_child(CHILD, None)
    assert result.returncode == 0, result.describe()
    expected = {"recv": MISSING, "argv": MISSING, "more": FUNCTION, "end": FUNCTION}
    assert f"{expected} {FUNCTION} {ARRAY}" in result.output, result.describe()
