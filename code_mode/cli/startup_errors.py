"""One line for a start-up error of ``code-mode``: ``code-mode: <what>: <culprit>``.

A bad option, tools file, ``--mcp-config`` or port is found while trio runs, inside
the task groups of the server and of the MCP connections, so it arrives wrapped in
exception groups beside the cancellations it caused. :func:`startup_error` finds it;
the command prints its message alone and exits with status 2, never a traceback.
"""

from __future__ import annotations

import errno

__all__ = ["STARTUP_ERRORS", "describe", "startup_error"]

STARTUP_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, OSError, ImportError)
"""What a bad input raises: a bad value or tool (``ValueError``, ``TypeError``; the
``--mcp-config`` errors are ``ValueError``\\ s), a file or port (``OSError``), a missing
extra (``ImportError``)."""


def startup_error(error: BaseException) -> Exception | None:
    """The start-up error in ``error`` (itself, or the first in its groups), if any."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = startup_error(inner)
            if found is not None:
                return found
        return None
    return error if isinstance(error, STARTUP_ERRORS) else None


def describe(error: Exception, where: str | None = None) -> str:
    """``error`` as the text after ``code-mode: `` (one line); ``where`` names the
    culprit of an ``OSError`` that names no file (the address being served)."""
    if isinstance(error, OSError) and error.strerror:
        what = error.strerror.lower()
        if error.errno == errno.EADDRINUSE:
            what = "address already in use (another server on that port?)"
        culprit = error.filename if error.filename is not None else where
        text = f"{what}: {culprit}" if culprit is not None else what
    else:
        text = str(error) or type(error).__name__
    return " ".join(text.split())
