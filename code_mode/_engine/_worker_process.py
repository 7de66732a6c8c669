"""One JavaScript worker process, supervised from the host (``isolation="process"``).

A pool of these (:mod:`._process_pool`) belongs to an engine; each worker
(``code_mode._v8._worker_process_main`` is its side) is started and supervised with
trio. Each worker hosts many isolates and speaks the framed protocol of
``code_mode._v8`` (each frame defined once there, for both ends) over a pipe pair of its
own (passed to the process as extra descriptors: never its stdin/stdout, which V8
itself prints to). Its stdout and stderr go to a *log drain*: read as they come, the
last few KiB kept (they tell an out-of-memory death from another) and the first
:data:`LOG_BYTES` logged (``code_mode.worker``, debug), the rest counted and dropped.
A worker knows nothing of its pool: it takes the engine's :class:`EngineConfig` as it
is, and tells whoever started it that it died or retired through the callbacks it was
given (the pool asks; the worker never reaches back into it). Per worker, trio tasks
run in the pool's nursery: a *writer* that drains a queue of frames into the pipe (so
``post`` and ``cancel`` never block), a *reader* that dispatches reports to the
isolates' sinks, and the log drain.

When a worker dies (V8 aborts on a fatal out-of-memory, someone kills it, ...), its
reader sees the pipe close; every isolate it hosted is told
``exec runtime ended unexpectedly: the JavaScript worker process died (<why>)``, with
whether its program was running or waiting at that moment (:mod:`._worker_death`),
and the next cell gets a fresh worker. Nothing else in the session is affected.

One more task per worker, the *watchdog*, kills a worker that uses more resident
memory than ``EngineConfig.worker_memory_limit_bytes`` or leaves a heartbeat
unanswered for ``EngineConfig.worker_heartbeat_timeout`` seconds (stopped,
deadlocked); its cells then fail the same way, with the reason naming the setting.
The heartbeat is a byte on a pipe pair of its own, echoed by a worker thread that runs
no JavaScript (see ``_worker_process_main``). The watchdog judges a ping by whether
its answer has arrived, reading the answer pipe itself before judging: a host whose
trio thread was blocked for longer than the timeout finds the answer waiting, and
does not kill a worker that did answer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import trio

from .._v8 import (
    BOOTSTRAP,
    Batch,
    Cancel,
    Close,
    Closed,
    Create,
    Created,
    FrameError,
    FrameReader,
    HostFrame,
    IsolateLimits,
    IsolateUnavailable,
    Post,
    Ready,
    SetLimits,
    Task,
    WorkerFrame,
)
from ._backend import HandleBase, IsolateSink
from ._worker_death import death_notices
from .config import EngineConfig

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
#: The last bytes of a worker's stdout and stderr kept (to describe its death).
_LOG_TAIL = 4096
#: Bytes of a worker's stdout and stderr logged (``code_mode.worker``, debug level);
#: beyond them the output is only counted, whatever a program makes V8 print.
LOG_BYTES = 64 * 1024
#: Seconds a worker may take to start (its heartbeat is answered once V8 is up and
#: the worker confined: before that, unanswered pings count against this instead).
START_TIMEOUT = 30.0
#: How often the watchdog looks at a worker (its memory, the heartbeat).
WATCH_INTERVAL = 0.1
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_MiB = 1024 * 1024

worker_log = logging.getLogger("code_mode.worker")


def resident_bytes(pid: int) -> int | None:
    """Resident memory of process ``pid`` (``None`` once it is gone). Reading procfs is
    a memory copy in the kernel, never a wait on a device, so the trio thread does it."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return None


def _describe_exit(returncode: int | None, stderr: bytes | bytearray) -> str:
    text = stderr.decode("utf-8", "replace").lower()
    if "out of memory" in text or "oom" in text or "allocation failed" in text:
        return "out of memory"
    if returncode is None:
        return "its pipe closed"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


class _PendingCreate:
    def __init__(self, sink: IsolateSink) -> None:
        self.sink = sink
        self.done = trio.Event()
        self.error: str | None = None
        self.abandoned = False  # the caller was cancelled: close the isolate on arrival


class WorkerProcess:
    """One worker process and the isolates it hosts, run by ``config`` (its
    ``confine_workers``, ``warm_isolates_burst``, ``worker_memory_limit_bytes``,
    ``worker_heartbeat_timeout`` and ``isolate_close_timeout``). ``died`` is called once
    when it is gone, ``retired`` when it stops taking new isolates, ``unconfined`` with
    what of the confinement the worker could not apply."""

    def __init__(
        self,
        config: EngineConfig,
        *,
        died: Callable[[WorkerProcess], None],
        retired: Callable[[WorkerProcess], None],
        unconfined: Callable[[list[str]], None],
    ) -> None:
        self._config = config
        self._died = died
        self._retired = retired
        self._unconfined = unconfined
        self._process: trio.Process | None = None
        self._send, self._receive = trio.open_memory_channel[bytes | memoryview](float("inf"))
        # Frames go straight into the pipe (non-blocking) while the writer task has
        # nothing queued: no task switch per frame. Only what the pipe does not take
        # at once waits for the writer task, and then everything after it too.
        self._command_fd: int | None = None
        self._queued = 0
        self._sinks: dict[int, IsolateSink] = {}
        self._creating: dict[int, _PendingCreate] = {}
        self._closing: dict[int, trio.Event] = {}
        self._stuck: set[int] = set()  # isolates whose disposal outlasted close_timeout
        self._kill_reason: str | None = None
        self._killed_for_memory: int | None = None  # resident bytes, if killed for them
        #: Started for one suspect cell, replayed alone here (``ProcessPool.create_alone``).
        self.alone = False
        #: The isolates that were running JavaScript when the worker died.
        self.running_at_death: list[int] = []
        self._log_tail = bytearray()
        self.log_bytes = 0  # bytes the worker wrote to its stdout and stderr
        #: Set when the worker is started: the host's ends of its pipes.
        self._commands: trio.lowlevel.FdStream | None = None
        self._frames: trio.lowlevel.FdStream | None = None
        self._ping_fd: int | None = None
        self._pong_fd: int | None = None
        self.hosted = 0  # isolates created here so far
        self.retiring = False  # takes no new isolates; exits when the last one closes
        self.ready = False  # V8 is up in the worker
        self.ready_event = trio.Event()
        self.alive = True
        self.started = trio.Event()
        self.exited = trio.Event()
        self.death: str | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def load(self) -> int:
        return len(self._sinks) + len(self._creating)

    @trio.lowlevel.enable_ki_protection
    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the process and serve it until it exits (a task of the pool)."""
        # Four pipes: commands, frames, ping, pong; the worker's ends are passed to it.
        pipes = [os.pipe2(os.O_CLOEXEC) for _ in range(4)]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][0], pipes[3][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][1], pipes[3][0]]
        try:
            self._process = await trio.lowlevel.open_process(
                [
                    sys.executable,
                    "-c",
                    BOOTSTRAP,
                    _PACKAGE_DIR,
                    "confine" if self._config.confine_workers else "none",
                    str(self._config.warm_isolates_burst),
                    *(str(fd) for fd in theirs),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=theirs,
            )
        except BaseException as error:  # OSError, or cancelled before it started
            for fd in ours:
                os.close(fd)
            self._die(f"could not start: {error}" if isinstance(error, OSError) else "not started")
            self.started.set()
            self.exited.set()
            task_status.started()
            if isinstance(error, OSError):
                return
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        # FdStream makes each descriptor non-blocking and owns it from now on.
        self._commands = trio.lowlevel.FdStream(ours[0])
        self._frames = trio.lowlevel.FdStream(ours[1])
        ping = trio.lowlevel.FdStream(ours[2])
        pong = trio.lowlevel.FdStream(ours[3])
        self._command_fd, self._ping_fd, self._pong_fd = ours[0], ours[2], ours[3]
        self.started.set()
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._log_drain)
                nursery.start_soon(self._watchdog)
                await self._read_loop()
                nursery.cancel_scope.cancel()
        finally:
            self._ping_fd = self._pong_fd = None
            with trio.CancelScope(shield=True):
                for stream in (self._frames, ping, pong):
                    with contextlib.suppress(OSError, trio.ClosedResourceError):
                        await stream.aclose()
                await self._reap()

    @trio.lowlevel.enable_ki_protection
    async def _write_loop(self) -> None:
        assert self._commands is not None
        commands = self._commands
        try:
            async for data in self._receive:
                chunks = [data]
                while True:
                    try:
                        chunks.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                # (One frame alone is sent as it is: it may hold megabytes.)
                await commands.send_all(chunks[0] if len(chunks) == 1 else b"".join(chunks))
                self._queued -= len(chunks)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._command_fd = None  # never write to a closed (maybe reused) descriptor
            with (
                trio.CancelScope(shield=True),
                contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError),
            ):
                await commands.aclose()

    @trio.lowlevel.enable_ki_protection
    async def _log_drain(self) -> None:
        """Read the worker's stdout and stderr as they come (a worker blocked on a
        full pipe would stop), keeping a bounded tail and logging a bounded head."""
        assert self._process is not None and self._process.stdout is not None
        try:
            async for data in self._process.stdout:
                if self.log_bytes < LOG_BYTES:
                    head = data[: LOG_BYTES - self.log_bytes]
                    worker_log.debug(
                        "worker %s: %s", self.pid, head.decode("utf-8", "replace").rstrip()
                    )
                    if self.log_bytes + len(data) >= LOG_BYTES:
                        worker_log.debug(
                            "worker %s: further output is not logged (%d bytes logged)",
                            self.pid,
                            LOG_BYTES,
                        )
                self.log_bytes += len(data)
                self._log_tail += data
                del self._log_tail[:-_LOG_TAIL]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def _answered(self) -> bool | None:
        """Whether the worker echoed a heartbeat byte since the last look (read from
        the answer pipe now, not by a task that may not have run yet); None once the
        pipe is closed."""
        fd = self._pong_fd
        if fd is None:
            return None
        answered = False
        while True:
            try:
                data = os.read(fd, 4096)
            except BlockingIOError:
                return answered
            except OSError:
                return None
            if not data:
                return None
            answered = True

    def _ping(self) -> None:
        fd = self._ping_fd
        if fd is not None:
            with contextlib.suppress(OSError):  # full (unanswered) or closed: no matter
                os.write(fd, b"p")

    @trio.lowlevel.enable_ki_protection
    async def _watchdog(self) -> None:
        """Kill the worker when it is above its memory limit or leaves a heartbeat
        unanswered for ``worker_heartbeat_timeout`` seconds."""
        assert self._process is not None
        pid = self._process.pid
        limit = self._config.worker_memory_limit_bytes
        timeout = self._config.worker_heartbeat_timeout
        interval = timeout / 4
        unanswered_since: float | None = None  # when the oldest unanswered ping went
        next_ping = trio.current_time()
        while True:
            now = trio.current_time()
            answered = self._answered()
            if answered is None:
                return  # the worker is gone: the reader sees it
            if answered:
                unanswered_since = None
            elif unanswered_since is not None and now - unanswered_since > (
                timeout if self.ready else max(timeout, START_TIMEOUT)
            ):
                self.kill_for(
                    f"killed: it did not answer for {timeout:g} s "
                    "(EngineConfig.worker_heartbeat_timeout)"
                    if self.ready
                    else f"killed: it did not start within {START_TIMEOUT:g} s"
                )
                return
            if now >= next_ping:
                self._ping()
                if unanswered_since is None:
                    unanswered_since = now
                next_ping = now + interval
            if limit is not None:
                resident = resident_bytes(pid)
                if resident is not None and resident > limit:
                    self._killed_for_memory = resident
                    self.kill_for(
                        f"killed: its resident memory of {resident // _MiB} MiB exceeded the "
                        f"limit of {limit} bytes (EngineConfig.worker_memory_limit_bytes)"
                    )
                    return
            await trio.sleep(WATCH_INTERVAL)

    async def _read_loop(self) -> None:
        assert self._frames is not None
        reader = FrameReader()
        try:
            async for data in self._frames:
                for report in reader.feed(data):
                    self._dispatch(report)  # type: ignore[arg-type]
        except (trio.BrokenResourceError, trio.ClosedResourceError, FrameError):
            pass

    def _dispatch(self, report: WorkerFrame) -> None:
        if isinstance(report, Batch):
            sink = self._sinks.get(report.id)
            if sink is not None:
                sink.on_batch(report.text)
        elif isinstance(report, Task):
            sink = self._sinks.get(report.id)
            if sink is not None:
                sink.on_task(report.tag, report.outcome, report.detail)
        elif isinstance(report, Ready):
            if report.unconfined and self._config.confine_workers:
                self._unconfined(report.unconfined)
            self.ready = True
            self.ready_event.set()
        elif isinstance(report, Created):
            pending = self._creating.pop(report.id, None)
            if pending is not None:
                pending.error = report.error
                pending.done.set()
                if pending.abandoned:
                    if pending.error is None:
                        self.send(Close(report.id))
                    self.retire_if_idle()
                elif pending.error is None:
                    # Hosted from now on, in the same step that took it out of
                    # _creating: were it registered only when create() resumes, a
                    # retiring worker could see a load of 0 in between (another
                    # isolate's "closed" in the same read) and shut down under it.
                    self._sinks[report.id] = pending.sink
        elif isinstance(report, Closed):
            self._sinks.pop(report.id, None)
            self._stuck.discard(report.id)
            closing = self._closing.pop(report.id, None)
            if closing is not None:
                closing.set()
            self.retire_if_idle()

    def retire(self) -> None:
        """Take no new isolates from now on; exit once the last one is closed."""
        self.retiring = True
        self._retired(self)

    def retire_if_idle(self) -> None:
        if self.retiring and self.load == 0:
            if self._stuck:
                # Only isolates that cannot be disposed of are left: nobody else is
                # disturbed by ending them with the process.
                self.kill_for("killed: an isolate could not be disposed of")
            else:
                self.shutdown()

    async def _reap(self) -> None:
        process = self._process
        self._send.close()
        if process is not None:
            with trio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
        self._die(
            self._kill_reason
            or _describe_exit(None if process is None else process.returncode, self._log_tail)
        )
        self.exited.set()

    def _die(self, why: str) -> None:
        if not self.alive:
            return
        self.alive = False
        self.death = why
        message = f"exec runtime ended unexpectedly: the JavaScript worker process died ({why})"
        for pending in self._creating.values():
            pending.error = message
            pending.done.set()
        self._creating.clear()
        sinks, self._sinks = self._sinks, {}
        self.running_at_death = [i for i, sink in sinks.items() if sink.evaluating()]
        resident, limit = self._killed_for_memory, self._config.worker_memory_limit_bytes
        if self.alone and resident is not None and limit is not None:
            # It ran this one cell only: the cell took it past the limit, whatever
            # its own limit let it count (memory outside V8's heap, running or not).
            text = (
                "exec cell exceeded the memory a worker process may use: its worker, "
                f"which ran it alone, reached a resident memory of {resident // _MiB} MiB, "
                f"above the limit of {limit} bytes (EngineConfig.worker_memory_limit_bytes)"
            )
            for sink in sinks.values():
                sink.on_crash(text)
            sinks = {}
        for sink, text in death_notices(message, list(sinks.values())):
            sink.on_crash(text)
        for closing in self._closing.values():
            closing.set()
        self._closing.clear()
        self._died(self)

    # -- used by RemoteIsolate -----------------------------------------------------

    def send(self, command: HostFrame) -> None:
        """Send one frame (never blocks)."""
        if not self.alive:
            return
        data: bytes | memoryview = command.encode()
        if not self.alive:
            return
        fd = self._command_fd
        if fd is not None and self._queued == 0:
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                written = 0
            except OSError:
                return  # the pipe is broken: the reader sees the worker die
            if written == len(data):
                return
            if written:
                data = memoryview(data)[written:]  # (the rest, not a copy of it)
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            self._send.send_nowait(data)
            self._queued += 1

    async def create(self, isolate_id: int, sink: IsolateSink, limits: IsolateLimits) -> None:
        pending = _PendingCreate(sink)
        self._creating[isolate_id] = pending
        self.send(Create(isolate_id, limits))
        try:
            await pending.done.wait()
        except trio.Cancelled:
            if not pending.done.is_set():
                # The isolate is closed when it arrives (a hung worker is killed by
                # the watchdog), so a caller that gives up does not wait for the worker.
                pending.abandoned = True
            elif self._sinks.pop(isolate_id, None) is not None:
                # It arrived, but nobody will use it.
                self.send(Close(isolate_id))
                self.retire_if_idle()
            raise
        if pending.error is not None:
            raise IsolateUnavailable(pending.error)
        if not self.alive:  # pragma: no cover - died right after creating
            raise IsolateUnavailable("exec runtime ended unexpectedly")

    async def close_isolate(self, isolate_id: int) -> None:
        if not self.alive or isolate_id not in self._sinks:
            self._sinks.pop(isolate_id, None)
            self.retire_if_idle()
            return
        closed = trio.Event()
        self._closing[isolate_id] = closed
        self.send(Close(isolate_id))
        timeout = self._config.isolate_close_timeout
        with trio.CancelScope(shield=True), trio.move_on_after(timeout):
            await closed.wait()
        if not closed.is_set() and self.alive:
            # Stuck in a built-in that ignores termination: stop waiting for it, and
            # retire the worker so that it ends once nothing else lives in it.
            self._closing.pop(isolate_id, None)
            self._sinks.pop(isolate_id, None)
            self._stuck.add(isolate_id)
            self.retire()
            self.retire_if_idle()

    def shutdown(self) -> None:
        """Close the command pipe: the worker closes its isolates and exits."""
        self._command_fd = None
        self._send.close()

    def kill_for(self, reason: str) -> None:
        """Kill the process; its cells fail with ``reason``."""
        if self._kill_reason is None and self.alive:
            self._kill_reason = reason
        self.kill()

    @property
    def stuck(self) -> bool:
        """Some isolate here could not be disposed of in time."""
        return bool(self._stuck)

    def kill(self) -> None:
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()


class RemoteIsolate(HandleBase):
    """An :class:`IsolateHandle` for an isolate inside a worker process."""

    __slots__ = ("_id", "_worker")

    def __init__(self, worker: WorkerProcess, isolate_id: int) -> None:
        super().__init__()
        self._worker = worker
        self._id = isolate_id

    @property
    def isolate_id(self) -> int:
        """Its id within its worker process."""
        return self._id

    def post(self, code: str, tag: int, quiet: bool = False, probe: int | None = None) -> None:
        self._worker.send(Post(self._id, tag, code, quiet, probe))

    def cancel(self, tag: int) -> None:
        self._worker.send(Cancel(self._id, tag))

    def set_limits(self, limits: IsolateLimits) -> None:
        self._worker.send(SetLimits(self._id, limits))

    def collect_output(self) -> None:
        pass  # a worker process keeps no output back (see NativeIsolate._deliver)

    async def _close(self) -> None:
        await self._worker.close_isolate(self._id)
