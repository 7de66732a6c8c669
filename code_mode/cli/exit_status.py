"""Exit statuses of the ``code-mode`` command, and telling a Ctrl-C from a failure."""

from __future__ import annotations

import logging

import trio

logger = logging.getLogger("code_mode")

#: The program completed (``run``), or the server stopped because its client left.
EXIT_OK = 0
#: The program failed or was terminated.
EXIT_FAILED = 1
#: A usage error: bad arguments, a file that cannot be read, a bad configuration.
EXIT_USAGE = 2
#: ``--timeout`` terminated the program (as coreutils' ``timeout``).
EXIT_TIMEOUT = 124
#: Ctrl-C (128 + SIGINT, as shells report it): a normal way to stop a server too.
EXIT_INTERRUPTED = 130


def is_interrupt(error: BaseException) -> bool:
    """Whether ``error`` is, or holds, a ``KeyboardInterrupt``.

    A Ctrl-C reaches ``trio.run`` through the session's and the server's nurseries,
    wrapped in exception groups, beside what stopping did to the work in flight:
    cancellations, or (in a server) a request handler failing to answer as it was
    stopped. The user asked to stop, so those are logged, not raised."""
    if isinstance(error, BaseExceptionGroup):
        interrupts, others = error.split(KeyboardInterrupt)
        if interrupts is None:
            return False
        if others is not None and not _all_cancelled(others):
            logger.debug("errors while stopping on Ctrl-C", exc_info=others)
        return True
    return isinstance(error, KeyboardInterrupt)


def _all_cancelled(group: BaseExceptionGroup[BaseException]) -> bool:
    return all(
        _all_cancelled(e) if isinstance(e, BaseExceptionGroup) else isinstance(e, trio.Cancelled)
        for e in group.exceptions
    )
