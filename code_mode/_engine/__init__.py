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
  the cell uses to answer tool calls;
* :class:`IsolateUnavailable` -- no isolate could be had (V8 could not create one, its
  worker process died, or its engine is closed).

A worker process imports only ``_native``, ``_wire``, ``_confine`` and
``_worker_process_main`` (its bootstrap registers this package without running this
file), so it starts without trio or attrs.
"""

from ._backend import IsolateSource
from ._bridge import (
    BufferMemoryExceeded,
    EngineEvent,
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
from ._default import default_engine
from ._native import IsolateUnavailable
from .engine import Engine, EngineConfig, SessionSeat
from .isolate import EngineListener, Isolate

__all__ = [
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
    "json_depth_exceeds",
]
