"""Assembles the JavaScript prelude evaluated in every new isolate."""

from __future__ import annotations

import functools
from pathlib import Path

_PARTS = ("output.js", "runtime.js")


@functools.cache
def prelude_source() -> str:
    """The prelude: one strict function that takes the two doorbells from the global
    object (where the native set-up left them), defines the runtime in its closure,
    installs ``__code_mode_recv`` and returns the private ``ArrayBuffer`` the host
    reads messages from."""
    js = Path(__file__).parent / "js"
    body = "\n".join((js / part).read_text(encoding="utf-8") for part in _PARTS)
    return (
        "(function () {\n"
        '"use strict";\n'
        "const rtBellMore = globalThis.__cm_bell_more;\n"
        "const rtBellEnd = globalThis.__cm_bell_end;\n"
        "delete globalThis.__cm_bell_more;\n"
        "delete globalThis.__cm_bell_end;\n"
        f"{body}\n"
        "return rtBuffer;\n"
        "})()\n"
    )
