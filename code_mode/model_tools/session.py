"""Where :class:`~code_mode.CodeModeSession` lived in earlier releases.

The façade is now :mod:`code_mode._facade`, exported from :mod:`code_mode` itself
(``from code_mode import CodeModeSession, is_error_result``); the names stay
importable from here for code written against earlier releases.
"""

from __future__ import annotations

from typing import Any

_NAMES = frozenset(
    {
        "YIELD_GRACE_MS",
        "YIELD_GRACE_THRESHOLD_MS",
        "CodeModeSession",
        "NestedTool",
        "Notification",
        "is_error_result",
        "resolve_yield_time_ms",
    }
)


def __getattr__(name: str) -> Any:
    # Imported on first use: the façade is a layer above this package.
    if name in _NAMES:
        from code_mode import _facade

        return getattr(_facade, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
