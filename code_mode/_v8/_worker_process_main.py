"""Entry point of a JavaScript worker process (see :data:`BOOTSTRAP`).

The host writes frames (:mod:`._wire`, where each is defined) to a *command* pipe and
reads frames from a *frame* pipe: it creates, posts to, cancels and closes isolates;
we answer ``Ready``, ``Created``, ``Batch``, ``Task`` and ``Closed``. Both are file
descriptors of their own, passed at start (never stdin or stdout): V8 itself prints to
stdout (an exception thrown by a ``FinalizationRegistry`` callback, some warnings),
and a byte of that in the frame stream would corrupt it and end the worker with every
cell in it. Our stdout and stderr go to a pipe the host drains into a bounded log.

The heartbeat has a pipe pair of its own too, answered by :class:`_Heartbeat`, a
thread that never runs JavaScript and takes no lock an isolate's thread may hold: it
reads a byte and writes it back. So neither a busy isolate, a close waiting for one,
nor a large frame queued behind a slow host delays the answer.

Once V8 is initialised, and before any isolate or thread exists, the worker confines
itself (:mod:`._confine`: no new processes, sockets or file writes). The main thread
reads commands; ``Post`` and ``Cancel`` only queue work in V8 and return. Creating and
closing isolates block for milliseconds, so helper threads do them. Reports come from
the isolates' own threads and are written under one lock. When
the command pipe closes (the engine ends, or the host died) every isolate is closed and the
process exits. A fatal V8 error kills this process only; the host notices the closed
pipe and fails the cells that lived here.
"""

from __future__ import annotations

import os
import queue
import select
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import _confine
from ._native import NativeIsolate
from ._native_library import initialise_v8
from ._values import IsolateLimits, IsolateUnavailable, Outcome
from ._wire import (
    Batch,
    Cancel,
    Close,
    Closed,
    Create,
    Created,
    FrameReader,
    Post,
    Ready,
    Selftest,
    SelftestResults,
    SetLimits,
    Task,
)

#: The ``python -c`` program that starts a worker. It registers a bare ``code_mode``
#: package so that importing this module does not run ``code_mode/__init__.py`` (trio,
#: attrs, the session runtime, the engine): a worker needs only this package (``_v8``)
#: and starts in ~0.1 s. Its arguments: the package directory, ``confine`` or ``none``,
#: how many isolates it may build at once (``EngineConfig.warm_isolates_burst``), then
#: the four descriptors it inherits (:class:`Channels`: commands, frames, ping, pong).
BOOTSTRAP = """
import sys, types
package = types.ModuleType("code_mode")
package.__path__ = [sys.argv[1]]
sys.modules["code_mode"] = package
from code_mode._v8._worker_process_main import Channels, serve
channels = Channels(*(int(fd) for fd in sys.argv[4:8]))
serve(channels, confine=sys.argv[2] == "confine", warm_isolates_burst=int(sys.argv[3]))
"""

#: With this environment variable set to ``1``, a worker answers the ``selftest`` op
#: by trying what its confinement forbids (tests only: see ``_selftest.py``).
SELFTEST_ENV = "CODE_MODE_WORKER_SELFTEST"


@dataclass(frozen=True)
class Channels:
    """The descriptors a worker talks to its host through (each a pipe end it
    inherited): ``commands`` it reads frames from, ``frames`` it writes frames to,
    ``ping`` it reads heartbeat bytes from and ``pong`` it echoes them to."""

    commands: int
    frames: int
    ping: int
    pong: int


class _Writer:
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._broken = False

    def write(self, data: bytes) -> None:
        """Write one encoded frame (whole: frames of several threads never mix)."""
        with self._lock:
            view = memoryview(data)
            while view and not self._broken:
                try:
                    view = view[os.write(self._fd, view) :]
                except OSError:  # the host is gone
                    self._broken = True


class _Heartbeat:
    """Echoes each byte the host writes to ``ping`` back on ``pong``, on a thread of
    its own that runs no JavaScript and takes no lock but the GIL (which no native
    call of an isolate holds for long: see ``_native_library.held_library``). It ends
    when the host closes ``ping`` or :meth:`stop` is called."""

    def __init__(self, ping: int, pong: int) -> None:
        self._ping = ping
        self._pong = pong
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(target=self._main, name="code-mode-heartbeat")

    def start(self) -> None:
        self._thread.start()

    def _main(self) -> None:
        poller = select.poll()
        poller.register(self._ping, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self._wake_read in ready:
                return
            try:
                data = os.read(self._ping, 64)
                if not data:
                    return
                os.write(self._pong, data)
            except OSError:
                return

    def stop(self) -> None:
        """End the thread and join it."""
        os.write(self._wake_write, b"x")
        self._thread.join()
        os.close(self._wake_read)
        os.close(self._wake_write)


#: Idle closing threads a worker keeps for the next close (see :class:`_Closers`).
CLOSERS_KEPT_IDLE = 2


class _Closers:
    """Runs each close on a thread of its own: an idle one if there is one, a new one
    otherwise; up to ``keep_idle`` idle threads wait for the next close.

    A close may wait for JavaScript stuck in a builtin, so it must hold up neither new
    isolates nor the closing of others: closes never queue behind one another. Back to
    back cells close an isolate each, and starting a thread for every one cost about
    75 us of CPU (a hand-over to an idle thread: under 10 us). (The host's
    ``BlockingWorkers`` does the same for thread mode, but hands results to trio, which a
    worker process does not import.)"""

    def __init__(self, close: Callable[[int], None], keep_idle: int) -> None:
        self._close = close
        self._keep_idle = keep_idle
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[int | None]] = []  # one inbox per idle thread
        self._threads: list[threading.Thread] = []
        self._stopping = False

    def submit(self, isolate_id: int) -> None:
        with self._lock:
            if self._idle:
                self._idle.pop().put(isolate_id)
                return
            self._threads = [thread for thread in self._threads if thread.is_alive()]
            inbox: queue.SimpleQueue[int | None] = queue.SimpleQueue()
            inbox.put(isolate_id)
            thread = threading.Thread(target=self._main, args=(inbox,), name="code-mode-close")
            self._threads.append(thread)
        thread.start()

    def _main(self, inbox: queue.SimpleQueue[int | None]) -> None:
        while True:
            isolate_id = inbox.get()
            if isolate_id is None:
                return
            self._close(isolate_id)
            with self._lock:
                if self._stopping or len(self._idle) >= self._keep_idle:
                    return
                self._idle.append(inbox)

    def join(self) -> None:
        """Let the closes under way finish, stop the idle threads and join them all."""
        with self._lock:
            self._stopping = True
            idle, self._idle = self._idle, []
            threads = list(self._threads)
        for inbox in idle:
            inbox.put(None)
        for thread in threads:
            thread.join()


def serve(channels: Channels, *, confine: bool = True, warm_isolates_burst: int = 1) -> None:
    """Serve the host on ``channels`` until it closes the command pipe."""
    # V8 first, on the main thread, before any other thread exists: every thread of
    # this process then descends from V8's initialising thread and inherits its
    # protection-key rights (see _pkeys.py).
    initialise_v8()
    heartbeat = _Heartbeat(channels.ping, channels.pong)  # its pipe, before the rlimits
    # Then the confinement: V8 has loaded its library and ICU data, and no other thread
    # exists yet, so every later one (isolate threads included) inherits it.
    unconfined = _confine.confine() if confine else ["all confinement (turned off)"]
    heartbeat.start()
    try:
        _serve_commands(channels, unconfined, warm_isolates_burst)
    finally:
        # Even when serving failed: a worker that cannot serve must stop answering
        # the heartbeat, so that the host kills it instead of waiting on it.
        heartbeat.stop()


def _serve_commands(channels: Channels, unconfined: list[str], warm_isolates_burst: int) -> None:
    """Announce ``Ready``, then carry out commands until the command pipe closes."""
    selftest = os.environ.get(SELFTEST_ENV) == "1"
    writer = _Writer(channels.frames)
    writer.write(Ready(unconfined).encode())
    isolates: dict[int, NativeIsolate] = {}
    lock = threading.Lock()
    # Creating runs on helper threads (several at once when the host's warm pool builds
    # ahead of back-to-back cells); each close on a thread of its own: closing may wait
    # for JavaScript stuck in a builtin, and must hold up neither new isolates nor the
    # closing of others.
    creating = ThreadPoolExecutor(
        max_workers=max(1, warm_isolates_burst), thread_name_prefix="code-mode-create"
    )

    def create(isolate_id: int, limits: IsolateLimits) -> None:
        def on_batch(text: str | None) -> None:
            writer.write(Batch(isolate_id, text).encode())

        def on_task(tag: int, outcome: Outcome, detail: str) -> None:
            writer.write(Task(isolate_id, tag, outcome, detail).encode())

        try:
            native = NativeIsolate(limits=limits, on_batch=on_batch, on_task=on_task)
        except IsolateUnavailable as error:
            writer.write(Created(isolate_id, str(error)).encode())
            return
        with lock:
            isolates[isolate_id] = native
        writer.write(Created(isolate_id).encode())

    def close(isolate_id: int) -> None:
        with lock:
            native = isolates.pop(isolate_id, None)
        if native is not None:
            native.close()
        writer.write(Closed(isolate_id).encode())

    closing = _Closers(close, CLOSERS_KEPT_IDLE)

    reader = FrameReader()
    while True:
        data = os.read(channels.commands, 1 << 16)
        if not data:
            break
        for command in reader.feed(data):
            if isinstance(command, Post):
                with lock:
                    native = isolates.get(command.id)
                if native is not None:
                    native.post(command.body, command.tag, command.quiet, command.probe)
            elif isinstance(command, Cancel):
                with lock:
                    native = isolates.get(command.id)
                if native is not None:
                    native.cancel(command.tag)
            elif isinstance(command, SetLimits):
                with lock:
                    native = isolates.get(command.id)
                if native is not None:
                    native.set_limits(command.limits)
            elif isinstance(command, Create):
                creating.submit(create, command.id, command.limits)
            elif isinstance(command, Close):
                closing.submit(command.id)
            elif isinstance(command, Selftest) and selftest:
                from ._selftest import try_forbidden

                writer.write(SelftestResults(try_forbidden(command.dir)).encode())
    creating.shutdown(wait=True)
    closing.join()
    with lock:
        remaining = list(isolates.values())
        isolates.clear()
    for native in remaining:
        native.close()
