"""The engine layer: where V8 isolates live, and the bridge to the JavaScript in them.

This module is the engine's whole surface for the layers above (the cell and the
session runtime import from here, never from the underscored modules beside it):

* :class:`Engine` / :class:`EngineConfig` -- isolates in worker processes or threads,
  warm isolates, supervision; shared by sessions like a connection pool;
  :class:`SessionSeat` -- one session's place on an engine (which worker its cells use);
* :func:`default_engine` -- the engine of the current ``trio.run`` for sessions that
  name none;
* :class:`Isolate` and :class:`EngineListener` -- one cell's isolate, and what it
  reports to the cell;
* the events an isolate reports (:mod:`._bridge`), already validated, and the helpers
  the cell uses to answer tool calls (a large result's depth is checked in slices of
  the trio thread's time: :func:`in_slices`);
* :class:`IsolateUnavailable` -- no isolate could be had (V8 could not create one, its
  worker process died, or its engine is closed).

What runs inside a worker process (V8, the JavaScript runtime, the wire protocol) is
the worker half, ``code_mode._v8``, below this package; a worker imports nothing of
this one, so it starts without trio or attrs.
"""

from .._v8 import IsolateUnavailable
from ._backend import IsolateSource
from ._bridge import (
    BufferMemoryExceeded,
    EngineEvent,
    EngineListener,
    Finished,
    HeapMemoryExceeded,
    Notify,
    Output,
    Started,
    TimerCleared,
    TimerSet,
    ToolCallRequested,
    YieldRequested,
    dumps,
    json_depth_exceeds,
)
from ._decode import INLINE_BATCH_CHARS, text_depth_steps
from ._default import default_engine
from ._slices import in_slices
from .config import EngineConfig
from .engine import Engine, SessionSeat
from .isolate import Isolate

__all__ = [
    "INLINE_BATCH_CHARS",
    "BufferMemoryExceeded",
    "Engine",
    "EngineConfig",
    "EngineEvent",
    "EngineListener",
    "Finished",
    "HeapMemoryExceeded",
    "Isolate",
    "IsolateSource",
    "IsolateUnavailable",
    "Notify",
    "Output",
    "SessionSeat",
    "Started",
    "TimerCleared",
    "TimerSet",
    "ToolCallRequested",
    "YieldRequested",
    "default_engine",
    "dumps",
    "in_slices",
    "json_depth_exceeds",
    "text_depth_steps",
]
