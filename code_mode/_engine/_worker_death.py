"""What each cell of a dead worker process is told, so a model knows whether to retry.

Every isolate of a worker process that dies is gone, whichever program caused the
death. The cells that only shared the worker with that program should not have their
model retry in vain, or give up on a program that was fine. Which program caused a
fatal V8 abort is not reported by V8 (the process is simply gone), so the text rests
on what the host knows for certain at that moment: whether each isolate had an
evaluation under way, one the host had posted and the worker had not yet reported as
ended (:meth:`~._backend.IsolateSink.evaluating`). The worker's reports are read to
the end of the pipe before its death is handled, so an evaluation that ended before
the crash counts as ended.

* A program that was **waiting** (for a tool call, a timer, the host) ran no
  JavaScript when the worker died: a fatal abort happens on a thread that runs
  JavaScript (V8's collector included, which runs when the program allocates) or
  builds an isolate, so it did not cause one. Its text says another program on the same
  worker process (or something outside it, such as a ``kill``) ended it, and that
  running it again may succeed.
* A program that was **running** is told so, with how many other programs on that
  worker were running at the same moment: when it was the only one, it most likely
  caused the death (or was running when the worker was killed from outside).

The heuristic is exact for fatal aborts, which happen while JavaScript runs. It is a
likelihood for a worker killed for its resident memory
(``EngineConfig.worker_memory_limit_bytes``): memory V8 does not count may be held by
a program that is waiting now, allocated while it ran; the program running at the
kill is the likely grower, not a certain one.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._backend import IsolateSink

#: Appended to a waiting program's text.
COLLATERAL = (
    " while this program was waiting, not running: another program on the same worker "
    "process, or something outside it, ended the worker, not this program; running it "
    "again may succeed"
)

#: Appended to the text of the only program that was running.
ALONE = " while this program was running, the only program running on that worker process"


def death_notices(message: str, sinks: Sequence[IsolateSink]) -> list[tuple[IsolateSink, str]]:
    """Each sink with the text its isolate's crash is reported with (``message`` is
    ``exec runtime ended unexpectedly: the JavaScript worker process died (<why>)``)."""
    running = [sink.evaluating() for sink in sinks]
    count = sum(running)
    notices = []
    for sink, was_running in zip(sinks, running, strict=True):
        if not was_running:
            notices.append((sink, message + COLLATERAL))
        elif count == 1:
            notices.append((sink, message + ALONE))
        else:
            others = count - 1
            company = "was one other program" if others == 1 else f"were {others} other programs"
            notices.append(
                (sink, f"{message} while this program was running, as {company} on that worker")
            )
    return notices
