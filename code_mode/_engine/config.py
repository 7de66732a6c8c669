"""`EngineConfig`: how an engine runs isolates, every limit with its documented default.

A frozen value of its own, below everything that reads it: the engine, the process
pool and each supervised worker take it as it is (the pool asks a worker nothing else,
and the field names are the same everywhere).
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from .._validators import non_negative_int, optional, positive_finite, positive_int

#: What a worker process uses besides its cells' memory (Python, V8, ICU data, warm
#: isolates: about 70 MiB measured, with headroom), left out of its memory budget.
WORKER_RESERVE_BYTES: Final = 128 * 1024 * 1024

#: What a cell's isolate uses beyond what its memory limit counts (the young
#: generation's semi-spaces, code, the isolate itself: about 25 MiB measured with a
#: full heap), charged to the budget with its limit.
ISOLATE_RESERVE_BYTES: Final = 32 * 1024 * 1024


@attrs.frozen(kw_only=True)
class EngineConfig:
    """How an :class:`Engine` runs isolates. Every field has a documented default."""

    isolation: Literal["process", "thread"] = attrs.field(
        default="process", validator=attrs.validators.in_(("process", "thread"))
    )
    """Where isolates run. ``"process"`` (the default) hosts them in supervised worker
    processes: V8 aborts its whole process on some failures (one huge allocation), and
    then only that worker dies; its cells fail with a clear error and the engine starts
    a new one. ``"thread"`` runs them on threads of this process: lower latency, but
    such a failure ends the application. See ``docs/security.md``."""

    worker_processes: int = attrs.field(default=1, validator=positive_int)
    """Most worker processes running at once in ``"process"`` mode (default 1). Each
    session's cells go to one worker (see ``session_placement``); while fewer than
    this many run and every one already has a session, one more is started ahead for
    the next session. More workers spread sessions wider, so a worker's death ends
    the cells of fewer sessions, at the price of a process each (about 30 MiB of
    PSS, 70 MiB RSS, measured with its warm isolate)."""

    session_placement: Literal["shared", "exclusive"] = attrs.field(
        default="shared", validator=attrs.validators.in_(("shared", "exclusive"))
    )
    """How sessions share the worker processes (``"process"`` mode). All the cells of a
    session run on one worker, for as long as that worker lives and is not recycled;
    a worker's death therefore ends only the cells of the sessions on it.

    ``"shared"`` (the default): a session is placed, at its first cell, on the worker
    with the fewest sessions, and many sessions share a worker. A fatal failure of one
    program ends the running cells of the sessions on its worker (about one
    ``worker_processes``-th of them).

    ``"exclusive"``: a worker serves one session at a time, so one program's fatal
    failure ends cells of its own session only (for an operator whose sessions belong
    to different users). A session holds its worker while it has cells there and gives
    it up when its last cell has closed; at most ``worker_processes`` sessions run
    cells at once. A new session's cell waits (in arrival order) until a worker is
    free, for at most ``worker_wait_timeout``, and then fails with ``exec runtime is
    at capacity: ...``. Set ``worker_processes`` to the number of sessions that may
    run cells at once; each busy session then costs a worker process. The cost, as
    measured, is in ``docs/security.md``."""

    worker_wait_timeout: float = attrs.field(default=10.0, validator=positive_finite)
    """Seconds a cell waits for a free worker process under
    ``session_placement="exclusive"`` when every one of the ``worker_processes``
    serves another session (default 10 s); then it fails with ``exec runtime is at
    capacity: each of the <N> worker processes serves another session (...)``. The
    caller of ``execute`` may give up sooner (cancelling it abandons the cell)."""

    isolates_per_worker: int = attrs.field(default=512, validator=positive_int)
    """Most isolates one worker process hosts at once (default 512), each with a thread
    and a few MiB of its own. When every worker is full and no more may start, a new
    cell fails at once with an error naming this setting, rather than the machine
    running out of memory or threads."""

    warm_isolates: int = attrs.field(default=1, validator=non_negative_int)
    """Isolates kept created ahead of time for the next cells of any session (default
    1), so starting a cell does not wait for V8 to build an isolate and run the
    prelude; in ``"process"`` mode, this many in each worker process, so that a
    session finds one on the worker its cells go to. 0 turns it off."""

    warm_isolates_burst: int = attrs.field(default=4, validator=positive_int)
    """Isolates built at once, ahead of the cells, while cells come faster than one
    isolate is built (default 4; at least ``warm_isolates`` count). Building one is
    about 3 ms of CPU and comes in two halves that run on different threads (V8's
    isolate, then the prelude on the isolate's own thread); building several at once
    keeps both cores of a small machine busy and a few isolates ahead of the cells,
    so back to back a cell seldom waits for a build. (On a 2-core machine 4 gave a
    back-to-back median about 20 % lower than 2, and a longer tail: builds and cells
    share the cores.) When cells are paced the pool refills to ``warm_isolates`` only,
    and 0.1 s after a burst it trims back to it, so an idle engine holds
    ``warm_isolates`` (each a few MiB)."""

    recycle_after_cells: int | None = attrs.field(default=1000, validator=optional(positive_int))
    """After hosting this many isolates, a worker process takes no new ones and exits
    once its last one closes; a fresh worker takes its place (default 1000; ``None``
    never recycles). This bounds what a long-lived worker accumulates (allocator
    fragmentation, V8's process-wide caches)."""

    worker_memory_limit_bytes: int | None = attrs.field(
        default=2 * 1024 * 1024 * 1024, validator=optional(positive_int)
    )
    """Most resident memory (RSS) one worker process may use, in bytes (default 2 GiB;
    ``None``: no limit). ``RuntimeConfig.memory_limit_bytes`` bounds what V8 counts (its
    heap, ArrayBuffers); some memory of a program lives outside both: ICU objects
    behind ``Intl.Segmenter``, ``Intl.DateTimeFormat`` or ``Intl.Collator``, the parser's
    memory for ``eval`` of a huge literal. The engine reads each worker's RSS every
    0.1 s; a worker above the limit is killed, and every cell it hosted fails with
    ``exec runtime ended unexpectedly: the JavaScript worker process died (killed: its
    resident memory of <M> MiB exceeded the limit of <N> bytes
    (EngineConfig.worker_memory_limit_bytes))``; a new worker serves the next cells.
    Only ``"process"`` mode: in ``"thread"`` mode isolates share the host's memory
    (see ``docs/security.md``)."""

    worker_memory_overcommit: float = attrs.field(default=16.0, validator=positive_finite)
    """How far the memory limits of the cells running on one worker process may add up
    past what the worker may use (default 16). A cell is admitted on a worker only while
    the ``RuntimeConfig.memory_limit_bytes`` of the cells running there, each plus 32 MiB
    for its isolate (what V8 uses beyond what the limit counts), its own included, add
    up to at most :attr:`worker_memory_budget_bytes`: ``(worker_memory_limit_bytes -
    128 MiB) * worker_memory_overcommit`` (the 128 MiB are the worker's own memory:
    Python, V8, ICU, warm isolates). At the defaults (2 GiB, 16) that is 106 cells of the
    default 256 MiB on a worker: most cells use a small part of their limit, and since a
    worker's death costs the cells that were waiting nothing (they are replayed
    elsewhere, see ``docs/runtime.md``) and the cells that were running are replayed
    alone, a worker pushed past its resident limit by cells that all fill their limits
    ends only what must end. ``1.0`` admits no more than could all fill their limits (six
    default cells per 2 GiB worker): programs then never take the worker past its limit
    together, at the price of cells waiting. A cell that does not fit goes to another
    worker (one is started while fewer than ``worker_processes`` run), or waits for
    cells to end, at most ``worker_wait_timeout`` seconds; then it fails with ``exec
    runtime is at capacity: ...`` naming these settings. A cell whose own limit is above
    the budget fails at once. No effect without a ``worker_memory_limit_bytes``, or in
    ``"thread"`` mode."""

    quarantine_after_deaths: int | None = attrs.field(default=2, validator=optional(positive_int))
    """Worker process deaths, within ``quarantine_seconds``, at which one of a session's
    cells was running (so may have caused it; a worker started to replay one suspect
    cell alone counts whenever it dies) before the session is *quarantined* (default 2;
    ``None``: never). A quarantined session's next cells run, for ``quarantine_seconds``,
    on quarantine workers: worker processes that serve only quarantined sessions,
    started beyond ``worker_processes`` (at most that many more; a quarantined session
    has one of its own while there are enough, and shares them beyond). Its programs
    then end no well-behaved session's cells, however often they kill their worker.
    The memory budget (``worker_memory_overcommit``) applies there too. ``"process"``
    mode only."""

    quarantine_seconds: float = attrs.field(default=600.0, validator=positive_finite)
    """How long a quarantine lasts, and the window in which worker deaths are counted
    towards one (default 600 s; see ``quarantine_after_deaths``)."""

    worker_heartbeat_timeout: float = attrs.field(default=10.0, validator=positive_finite)
    """Seconds a worker process may go without answering the engine's heartbeat
    (default 10 s) before it counts as hung (stopped with ``SIGSTOP``, deadlocked):
    it is then killed, its cells fail with ``exec runtime ended unexpectedly: the
    JavaScript worker process died (killed: it did not answer for <T> s
    (EngineConfig.worker_heartbeat_timeout))``, and a new worker replaces it. The
    heartbeat is a byte on a pipe of its own, echoed by a worker thread that never runs
    JavaScript, so a busy program (one long built-in call included) does not count as
    hung, and a host that was itself blocked finds the answer waiting."""

    isolate_close_timeout: float = attrs.field(default=2.0, validator=positive_finite)
    """Seconds the engine waits for a worker process to dispose of an isolate
    (default 2 s). Disposing waits for the isolate's JavaScript to stop, and a few
    built-ins ignore termination (``new Array(2 ** 26).sort()`` runs to its end). After
    this long the cell is closed anyway (its ``cell_closed`` runs, the session may
    end); the worker takes no new isolates and is killed as soon as the stuck
    isolate is the only one it hosts, so the other cells there are not disturbed.
    Only ``"process"`` mode: in ``"thread"`` mode each disposal runs on a thread of
    its own, so a stuck one delays only its own cell."""

    confine_workers: bool = True
    """Whether worker processes confine themselves once V8 is up (default ``True``):
    no new processes, no sockets, no file writes, reads only of what a worker needs
    (seccomp-bpf, Landlock, ``PR_SET_NO_NEW_PRIVS``, rlimits), so that a V8 exploit
    does not get the host user's powers. Where the kernel lacks a mechanism the worker
    runs without it and a warning is logged once. Turn it off only to debug a worker.
    See ``docs/security.md``."""

    @property
    def worker_memory_budget_bytes(self) -> int | None:
        """What the memory limits of the cells running on one worker process may add up
        to (see :attr:`worker_memory_overcommit`); None: no budget."""
        limit = self.worker_memory_limit_bytes
        if limit is None:
            return None
        return int(max(limit - WORKER_RESERVE_BYTES, 0) * self.worker_memory_overcommit)
