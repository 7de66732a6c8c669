"""Assembles the JavaScript prelude evaluated in every new isolate."""

from __future__ import annotations

import functools
from pathlib import Path

_PARTS = ("output.js", "runtime.js", "buffers.js")
#: Compiled on first use (see ``js/buffers.js``). It travels in a comment, which V8
#: skips at little cost, inside a function whose source text the runtime reads back.
_LAZY = "buffers_impl.js"
_LAZY_HEAD = "function rtBuffersImplSource() {/*"
_LAZY_TAIL = "*/}"


@functools.cache
def prelude_source() -> str:
    """The prelude: one strict function that defines the runtime in its closure and
    returns the private ``ArrayBuffer`` the host reads messages from (on which it then
    leaves the two native doorbells). The buffer carries, for the host to take once,
    ``recv`` (the runtime's entry point) and ``argv`` (an empty array to call it with):
    neither is reachable from any global."""
    js = Path(__file__).parent / "js"
    lazy = (js / _LAZY).read_text(encoding="utf-8")
    if "*/" in lazy:
        raise ValueError(f"{_LAZY} must not contain */")
    body = "\n".join(
        [
            *((js / part).read_text(encoding="utf-8") for part in _PARTS),
            f"{_LAZY_HEAD}{lazy}{_LAZY_TAIL}",
            f"const RT_LAZY_HEAD = {len(_LAZY_HEAD)}, RT_LAZY_TAIL = {len(_LAZY_TAIL)};",
        ]
    )
    return (
        "(function () {\n"
        '"use strict";\n'
        # The host attaches the two native doorbells to the returned buffer as
        # `more` and `end`; they are moved into this closure on first use.
        "let rtBellMoreNative, rtBellEndNative;\n"
        # (In parentheses: compiled with the prelude, see "Compiled ahead" in runtime.js.)
        "const rtBellsReady = (function rtBellsReady() {\n"
        "  if (rtBellEndNative === undefined) {\n"
        "    rtBellMoreNative = rtBuffer.more; rtBellEndNative = rtBuffer.end;\n"
        "    delete rtBuffer.more; delete rtBuffer.end;\n"
        "  }\n"
        "});\n"
        "function rtBellMore() { rtBellsReady(); rtBellMoreNative(); }\n"
        "const rtBellEnd = (function rtBellEnd() { rtBellsReady(); rtBellEndNative(); });\n"
        f"{body}\n"
        "rtBuffer.recv = rtRecv; rtBuffer.argv = [];\n"
        "return rtBuffer;\n"
        "})()\n"
    )
