"""One JavaScript worker process, supervised from the host (``isolation="process"``).

A pool of these (:mod:`._process_pool`) belongs to an engine; each worker
(``code_mode._v8._worker_process_main`` is its side) is started and supervised with
trio. Each worker hosts many isolates and speaks the framed protocol of
``code_mode._v8`` (each frame defined once there, for both ends) over its stdin/stdout.
A worker knows nothing of its pool: it takes the engine's :class:`EngineConfig` as it
is, and tells whoever started it that it died or retired through the callbacks it was
given (the pool asks; the worker never reaches back into it). Per worker, two trio
tasks run in the pool's nursery: a *writer* that drains a queue of frames into the pipe
(so ``post`` and ``cancel`` never block), and a *reader* that dispatches reports to the
isolates' sinks.

When a worker dies (V8 aborts on a fatal out-of-memory, someone kills it, ...), its
reader sees the pipe close; every isolate it hosted is told
``exec runtime ended unexpectedly: the JavaScript worker process died (<why>)``, with
whether its program was running or waiting at that moment (:mod:`._worker_death`),
and the next cell gets a fresh worker. Nothing else in the session is affected.

A third task per worker, the *watchdog*, kills a worker that uses more resident memory
than ``EngineConfig.worker_memory_limit_bytes`` or stops answering the heartbeat for
``EngineConfig.worker_heartbeat_timeout`` seconds (stopped, deadlocked); its cells then
fail the same way, with the reason naming the setting.
"""

from __future__ import annotations

import contextlib
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
    Ping,
    Pong,
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
_STDERR_TAIL = 4096
#: How often the watchdog looks at a worker (its memory, the heartbeat).
WATCH_INTERVAL = 0.1
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_MiB = 1024 * 1024


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
        self._send, self._receive = trio.open_memory_channel[bytes](float("inf"))
        # Frames go straight into the pipe (non-blocking) while the writer task has
        # nothing queued: no task switch per frame. Only what the pipe does not take
        # at once waits for the writer task, and then everything after it too.
        self._stdin_fd: int | None = None
        self._queued = 0
        self._sinks: dict[int, IsolateSink] = {}
        self._creating: dict[int, _PendingCreate] = {}
        self._closing: dict[int, trio.Event] = {}
        self._stuck: set[int] = set()  # isolates whose disposal outlasted close_timeout
        self._kill_reason: str | None = None
        self._last_pong = 0.0
        self._stderr = bytearray()
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

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the process and serve it until it exits (a task of the pool)."""
        try:
            self._process = await trio.lowlevel.open_process(
                [
                    sys.executable,
                    "-c",
                    BOOTSTRAP,
                    _PACKAGE_DIR,
                    "confine" if self._config.confine_workers else "none",
                    str(self._config.warm_isolates_burst),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except BaseException as error:  # OSError, or cancelled before it started
            self._die(f"could not start: {error}" if isinstance(error, OSError) else "not started")
            self.started.set()
            self.exited.set()
            task_status.started()
            if isinstance(error, OSError):
                return
            raise
        self.started.set()
        task_status.started()
        if isinstance(self._process.stdin, trio.lowlevel.FdStream):
            self._stdin_fd = self._process.stdin.fileno()  # non-blocking
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._stderr_loop)
                nursery.start_soon(self._watchdog)
                await self._read_loop()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await self._reap()

    async def _write_loop(self) -> None:
        assert self._process is not None and self._process.stdin is not None
        stdin = self._process.stdin
        try:
            async for data in self._receive:
                chunks = [data]
                while True:
                    try:
                        chunks.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await stdin.send_all(b"".join(chunks))
                self._queued -= len(chunks)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._stdin_fd = None  # never write to a closed (maybe reused) descriptor
            with (
                trio.CancelScope(shield=True),
                contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError),
            ):
                await stdin.aclose()

    async def _stderr_loop(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        try:
            async for data in self._process.stderr:
                self._stderr += data
                del self._stderr[:-_STDERR_TAIL]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _watchdog(self) -> None:
        """Kill the worker when it is above its memory limit or stops answering."""
        assert self._process is not None
        pid = self._process.pid
        limit = self._config.worker_memory_limit_bytes
        timeout = self._config.worker_heartbeat_timeout
        interval = timeout / 4
        self._last_pong = next_ping = trio.current_time()
        while True:
            now = trio.current_time()
            if now - self._last_pong > timeout:
                self.kill_for(
                    f"killed: it did not answer for {timeout:g} s "
                    "(EngineConfig.worker_heartbeat_timeout)"
                )
                return
            if now >= next_ping:
                self.send(Ping())
                next_ping = now + interval
            if limit is not None:
                resident = resident_bytes(pid)
                if resident is not None and resident > limit:
                    self.kill_for(
                        f"killed: its resident memory of {resident // _MiB} MiB exceeded the "
                        f"limit of {limit} bytes (EngineConfig.worker_memory_limit_bytes)"
                    )
                    return
            await trio.sleep(WATCH_INTERVAL)

    async def _read_loop(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        reader = FrameReader()
        try:
            async for data in self._process.stdout:
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
        elif isinstance(report, Pong):
            self._last_pong = trio.current_time()
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
            or _describe_exit(None if process is None else process.returncode, self._stderr)
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
        data = command.encode()
        if not self.alive:
            return
        fd = self._stdin_fd
        if fd is not None and self._queued == 0:
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                written = 0
            except OSError:
                return  # the pipe is broken: the reader sees the worker die
            if written == len(data):
                return
            data = data[written:]
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
        """Close stdin: the worker closes its isolates and exits."""
        self._stdin_fd = None
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
