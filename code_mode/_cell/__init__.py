"""The cell layer: one program's state machine, its start, and its in-flight work.

* :mod:`.cell` -- :class:`Cell`: its start, observers, yield timer, program timers,
  and the engine's events, each dispatched by type to one handler;
* :mod:`.ending` -- the cell task, and how a cell ends (completion, termination,
  the push, teardown);
* :mod:`.state` -- its one state machine: the phases, their transitions, how the
  program ended;
* :mod:`.output` -- its output buffer, within its limits;
* :mod:`.stepping` -- where the program stands at its frontier, and the hold there;
* :mod:`.host` -- what a cell needs from its session;
* :mod:`.start` -- how a cell gets its isolate and starts its program;
* :mod:`.in_flight` -- its tool calls and notifications, tasks of the session nursery;
* :mod:`.one_shot` -- the slot an observer waits on, and the observer itself.

The session runtime imports from here only.
"""

from .cell import Cell, CellHost
from .one_shot import Observer, OneShot

__all__ = ["Cell", "CellHost", "Observer", "OneShot"]
