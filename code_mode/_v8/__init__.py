"""The worker half: V8 isolates, the JavaScript runtime in them, and the wire to the host.

Everything that runs inside a worker process (``EngineConfig.isolation="process"``)
lives here, with the worker's entry module (:mod:`._worker_process_main`): mini-racer
through :mod:`._native` and :mod:`._native_library`, V8's heap limit
(:mod:`._heap_cap`), protection keys (:mod:`._pkeys`), the confinement
(:mod:`._confine`, :mod:`._selftest`), the JavaScript prelude (:mod:`._prelude` and
``js/``) and its channel (:mod:`._channel`), and the framed pipe protocol
(:mod:`._wire`). In ``"thread"`` mode the engine runs :class:`NativeIsolate` in the host
process itself. This package imports neither trio nor attrs nor anything of
``code_mode`` outside itself (``tests/project/test_layers.py``), so a worker starts in
~0.1 s and all of it is testable without trio.

This module is the contract between the halves; the engine (``code_mode._engine``, the
trio half: supervision, pooling, placement, warm isolates) imports from here only:

* :class:`IsolateLimits` -- what one isolate may use, one value from the cell's
  configuration down to V8, under the same names on the wire;
* the outcomes of an evaluation (``TASK_*``, :data:`Outcome`), :data:`QUEUED`, the tags
  (:data:`FIRST_PROGRAM_TAG`) and the host's two fixed commands (:data:`PROBE`,
  :data:`DRAIN`);
* :class:`IsolateUnavailable`;
* :class:`NativeIsolate` -- one isolate (``thread`` mode uses it directly);
* the frames of the pipe protocol (:mod:`._wire`), each defined once for both ends,
  and :data:`BOOTSTRAP`, the program that starts a worker.
"""

from ._native import KEPT_OUTPUT_CHARS, NativeIsolate, live_isolate_count
from ._values import (
    DRAIN,
    FIRST_PROGRAM_TAG,
    OUTCOMES,
    PROBE,
    QUEUED,
    TASK_ERROR,
    TASK_OK,
    TASK_OOM,
    TASK_TERMINATED,
    IsolateLimits,
    IsolateUnavailable,
    Outcome,
)
from ._wire import (
    Batch,
    Cancel,
    Close,
    Closed,
    Create,
    Created,
    FrameError,
    FrameReader,
    HostFrame,
    Post,
    Ready,
    Selftest,
    SelftestResults,
    SetLimits,
    Task,
    WorkerFrame,
)
from ._worker_process_main import BOOTSTRAP, SELFTEST_ENV

__all__ = [
    "BOOTSTRAP",
    "DRAIN",
    "FIRST_PROGRAM_TAG",
    "KEPT_OUTPUT_CHARS",
    "OUTCOMES",
    "PROBE",
    "QUEUED",
    "SELFTEST_ENV",
    "TASK_ERROR",
    "TASK_OK",
    "TASK_OOM",
    "TASK_TERMINATED",
    "Batch",
    "Cancel",
    "Close",
    "Closed",
    "Create",
    "Created",
    "FrameError",
    "FrameReader",
    "HostFrame",
    "IsolateLimits",
    "IsolateUnavailable",
    "NativeIsolate",
    "Outcome",
    "Post",
    "Ready",
    "Selftest",
    "SelftestResults",
    "SetLimits",
    "Task",
    "WorkerFrame",
    "live_isolate_count",
]
