"""The cell layer: one program's state machine, its start, and its in-flight work.

* :mod:`.cell` -- :class:`Cell`, the state machine (output buffer, observers, yield
  timer, program timers, completion, termination, teardown);
* :mod:`.host` -- what a cell needs from its session, and its phases;
* :mod:`.start` -- how a cell gets its isolate and starts its program;
* :mod:`.in_flight` -- its tool calls and notifications, tasks of the session nursery;
* :mod:`.one_shot` -- the slot an observer waits on, and the observer itself.

The session runtime imports from here only.
"""

from .cell import Cell, CellHost
from .one_shot import Observer, OneShot

__all__ = ["Cell", "CellHost", "Observer", "OneShot"]
