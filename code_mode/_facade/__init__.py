"""The façade: a model's ``exec`` and ``wait`` calls served from a session runtime.

* :mod:`.toolset` -- :class:`Toolset`: the nested tools, checked, ordered and
  described once (no session needed to list them);
* :mod:`.session` -- :class:`CodeModeSession`: parsing, timing and formatting the
  calls, and pushing results;
* :mod:`.delegate` -- the runtime's delegate: routing nested calls, notifications,
  and holding calls that need the host's approval;
* :mod:`.program_check` -- checking a program's tool calls before it runs.
"""

from .delegate import Approval
from .session import (
    YIELD_GRACE_MS,
    YIELD_GRACE_THRESHOLD_MS,
    CellFinished,
    CodeModeSession,
    Notification,
    resolve_yield_time_ms,
)
from .toolset import Toolset

__all__ = [
    "YIELD_GRACE_MS",
    "YIELD_GRACE_THRESHOLD_MS",
    "Approval",
    "CellFinished",
    "CodeModeSession",
    "Notification",
    "Toolset",
    "resolve_yield_time_ms",
]
