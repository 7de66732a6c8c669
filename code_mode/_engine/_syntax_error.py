"""Where a program's syntax error is: line and column, from V8's own report.

V8 gives the position of a syntax error only in the report of an exception that
leaves the host's call uncaught (mini-racer's error text: ``<file>:<line>: SyntaxError:
<message>``, the source line, then spaces and carets under the error), not on the
error object a program or the runtime can catch. So when a program does not parse, the
runtime parses the same source once more outside any ``try`` (which runs none of it;
see ``rtThrowSyntaxError`` in ``js/start.js``) and :func:`syntax_error_text` turns
that report into the cell's error, in the shape of a runtime error's first frame::

    SyntaxError: missing ) after argument list
        at exec_main.mjs:2:9
"""

from __future__ import annotations

import re
from typing import Final

from .._validators import utf16_length

#: Mirrors js/stack_trace.js: the file name of the program in stack traces, the text put
#: before the program's first line, and the lines V8's AsyncFunction wrapper adds
#: before the body.
RT_FILE: Final = "exec_main.mjs"
RT_PREFIX: Final = '"use strict";'
RT_LINE_OFFSET: Final = 2

# The file is whatever V8 knew when it stopped (the runtime gives none): ignore it.
_REPORT: Final = re.compile(
    r"\A[^\n]*?:(?P<line>\d+): (?P<error>SyntaxError: [^\n]*)\n"
    r"(?:[^\n]*\n(?P<indent> *)\^)?"
)
# JavaScript's line terminators.
_LINE_BREAK: Final = re.compile("\r\n|[\n\r\u2028\u2029]")


def syntax_error_text(report: str, source: str) -> str | None:
    """The cell's error for a program ``source`` that does not parse, from V8's
    ``report`` of the runtime's second parse; ``None`` if ``report`` is not one.

    Line and column are 1-based positions in ``source``, as in stack traces. An error
    V8 finds past the program's end (an unclosed string or block, which V8 reports at
    its own closing line) is placed just after the program's last character."""
    match = _REPORT.match(report)
    if match is None:
        return None
    lines = _LINE_BREAK.split(source)
    line = int(match["line"]) - RT_LINE_OFFSET
    if line < 1:
        return None
    if line > len(lines):
        line, column = len(lines), utf16_length(lines[-1]) + 1
    elif match["indent"] is None:
        return f"{match['error']}\n    at {RT_FILE}:{line}"
    else:
        column = len(match["indent"]) + 1
        if line == 1:
            column = max(1, column - len(RT_PREFIX))
    return f"{match['error']}\n    at {RT_FILE}:{line}:{column}"
