"""Assembles the JavaScript prelude evaluated in every new isolate.

The runtime's files (``js/``) are pasted, in the order of :data:`_PARTS`, into one
strict function, so they share one closure: a file may use what the files before it
define. ``js/builtins.js`` comes first (it captures every built-in the others use) and
describes the whole runtime: what each file does, the protocol with the host, and the
"Compiled ahead" rule (a function expression in parentheses is compiled with the
prelude, in the warm isolate, not on a cell's clock)."""

from __future__ import annotations

import functools
from pathlib import Path

from ._channel import js_constants

#: The runtime's files, in the order they are pasted (see ``js/builtins.js``).
_PARTS = (
    "builtins.js",
    "output.js",
    "audio.js",
    "channel.js",
    "cell_state.js",
    "stack_trace.js",
    "globals.js",
    "tools.js",
    "start.js",
    "commands.js",
    "install.js",
    "settled.js",
    "buffers.js",
    "estimates.js",
    "lengths.js",
    "walks.js",
    "intl.js",
    "patterns.js",
    "allocations.js",
    "clock.js",
    "finalization.js",
)
#: Compiled on first use (``rtCompileLazy`` in ``js/buffers.js``), by the name of the
#: function that carries each: its source travels in a comment, which V8 skips at
#: little cost, as the body of a function whose source text the runtime reads back.
_LAZY = {
    "buffers_impl.js": "rtBuffersImplSource",
    "allocations_impl.js": "rtAllocationsImplSource",
}


def compact(name: str, text: str) -> str:
    """``text`` without its indentation, blank lines and whole-line ``//`` comments.

    Every new isolate parses the prelude, and V8's scanner pays for every character,
    comments and indentation included: about 0.1 ms of the prelude's 2 ms per isolate
    (see docs/performance.md, optimisation 48). Only whole lines are dropped and only
    leading and trailing blanks removed, so every statement keeps its line break
    (automatic semicolon insertion reads the same code) and comments at the end of a
    line stay. That is exact as long as no string or template literal spans lines,
    which the runtime's sources never need; a line that could start or continue one
    (an odd number of backticks, or a backslash at its end) is refused."""
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.count("`") % 2 or line.rstrip().endswith("\\"):
            raise ValueError(f"{name}:{number}: a literal may span lines here")
        stripped = line.strip()
        if stripped and not stripped.startswith("//"):
            lines.append(stripped)
    return "\n".join(lines)


@functools.cache
def prelude_source() -> str:
    """The prelude: one strict function that defines the runtime in its closure and
    returns the private ``ArrayBuffer`` the host reads messages from (on which it then
    leaves the two native doorbells). The buffer carries, for the host to take once,
    ``recv`` (the runtime's entry point) and ``argv`` (an empty array to call it with):
    neither is reachable from any global, and reading one removes it from the buffer."""
    js = Path(__file__).parent / "js"
    lazy = []
    for part, holder in _LAZY.items():
        text = compact(part, (js / part).read_text(encoding="utf-8"))
        if "*/" in text:
            raise ValueError(f"{part} must not contain */")
        lazy.append(f"function {holder}() {{/*\n{text}\n*/}}")
    body = "\n".join(
        [*(compact(part, (js / part).read_text(encoding="utf-8")) for part in _PARTS), *lazy]
    )
    return (
        "(function () {\n"
        '"use strict";\n'
        # The host attaches the two native doorbells to the returned buffer as
        # `more` and `end`; they are moved into this closure on first use.
        "let rtBellMoreNative, rtBellEndNative;\n"
        # The channel's buffer layout, defined once in _channel.py.
        f"{js_constants()}\n"
        # (In parentheses: compiled with the prelude, see "Compiled ahead" in builtins.js.)
        "const rtBellsReady = (function rtBellsReady() {\n"
        "  if (rtBellEndNative === undefined) {\n"
        "    rtBellMoreNative = rtBuffer.more; rtBellEndNative = rtBuffer.end;\n"
        "    delete rtBuffer.more; delete rtBuffer.end;\n"
        "  }\n"
        "});\n"
        "function rtBellMore() { rtBellsReady(); rtBellMoreNative(); }\n"
        "const rtBellEnd = (function rtBellEnd() { rtBellsReady(); rtBellEndNative(); });\n"
        f"{body}\n"
        # The host reads each of `recv` and `argv` once, and that read removes it: one
        # call into the isolate each (a read), where a read and a delete were two.
        "const rtHandOnce = (function rtHandOnce(key, value) {\n"
        "  rtObjectDefineProperty(rtBuffer, key, { __proto__: null, configurable: true,\n"
        "    get: (function rtHandOver() { delete rtBuffer[key]; return value; }) });\n"
        "});\n"
        'rtHandOnce("recv", rtRecv); rtHandOnce("argv", []);\n'
        "return rtBuffer;\n"
        "})()\n"
    )
