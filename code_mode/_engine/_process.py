"""Isolates in worker processes (``RuntimeConfig.isolation = "process"``).

A session owns a small pool of worker processes (:mod:`._worker_main`), started and
supervised with trio. Each worker hosts many isolates and speaks the framed protocol of
:mod:`._wire` over its stdin/stdout. Per worker, two trio tasks run in the pool's
nursery: a *writer* that drains a queue of frames into the pipe (so ``post`` and
``cancel`` never block), and a *reader* that dispatches reports to the isolates' sinks.

When a worker dies (V8 aborts on a fatal out-of-memory, someone kills it, ...), its
reader sees the pipe close; every isolate it hosted is told
``exec runtime ended unexpectedly: the JavaScript worker process died (<why>)``, and
the next cell gets a fresh worker. Nothing else in the session is affected.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from ._backend import IsolateHandle, IsolateSink
from ._native import NativeIsolateError
from ._wire import FrameError, FrameReader, frame
from ._worker_main import BOOTSTRAP

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_STDERR_TAIL = 4096


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
    def __init__(self) -> None:
        self.done = trio.Event()
        self.error: str | None = None


class WorkerProcess:
    """One worker process and the isolates it hosts."""

    def __init__(self, pool: ProcessPool) -> None:
        self._pool = pool
        self._process: trio.Process | None = None
        self._send, self._receive = trio.open_memory_channel[bytes](float("inf"))
        self._sinks: dict[int, IsolateSink] = {}
        self._creating: dict[int, _PendingCreate] = {}
        self._closing: dict[int, trio.Event] = {}
        self._stderr = bytearray()
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
                [sys.executable, "-c", BOOTSTRAP, _PACKAGE_DIR],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as error:
            self._die(f"could not start: {error}")
            self.started.set()
            task_status.started()
            return
        self.started.set()
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._stderr_loop)
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
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
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

    async def _read_loop(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        reader = FrameReader()
        try:
            async for data in self._process.stdout:
                for header, body in reader.feed(data):
                    self._dispatch(header, body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, FrameError):
            pass

    def _dispatch(self, header: dict[str, Any], body: str | None) -> None:
        event = header.get("ev")
        isolate_id = int(header.get("id", -1))
        if event == "batch":
            sink = self._sinks.get(isolate_id)
            if sink is not None:
                sink.on_batch(None if header.get("oversized") else (body or ""))
        elif event == "task":
            sink = self._sinks.get(isolate_id)
            if sink is not None:
                sink.on_task(int(header["tag"]), str(header["outcome"]), str(header["detail"]))
        elif event == "created":
            pending = self._creating.pop(isolate_id, None)
            if pending is not None:
                pending.error = header.get("error")
                pending.done.set()
        elif event == "closed":
            self._sinks.pop(isolate_id, None)
            closing = self._closing.pop(isolate_id, None)
            if closing is not None:
                closing.set()

    async def _reap(self) -> None:
        process = self._process
        self._send.close()
        if process is not None:
            with trio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
        self._die(_describe_exit(None if process is None else process.returncode, self._stderr))
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
        for sink in sinks.values():
            sink.on_crash(message)
        for closing in self._closing.values():
            closing.set()
        self._closing.clear()
        self._pool._worker_died(self)

    # -- used by RemoteIsolate -----------------------------------------------------

    def send(self, header: dict[str, Any], body: str | None = None) -> None:
        if self.alive:
            with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
                self._send.send_nowait(frame(header, body))

    async def create(
        self, isolate_id: int, sink: IsolateSink, memory: int, max_message: int
    ) -> None:
        pending = _PendingCreate()
        self._creating[isolate_id] = pending
        self.send({"op": "create", "id": isolate_id, "memory": memory, "max_message": max_message})
        with trio.CancelScope(shield=True):
            await pending.done.wait()
        if pending.error is not None:
            raise NativeIsolateError(pending.error)
        if not self.alive:  # pragma: no cover - died right after creating
            raise NativeIsolateError("exec runtime ended unexpectedly")
        self._sinks[isolate_id] = sink

    async def close_isolate(self, isolate_id: int) -> None:
        if not self.alive or isolate_id not in self._sinks:
            self._sinks.pop(isolate_id, None)
            return
        closed = trio.Event()
        self._closing[isolate_id] = closed
        self.send({"op": "close", "id": isolate_id})
        with trio.CancelScope(shield=True):
            await closed.wait()

    def shutdown(self) -> None:
        """Close stdin: the worker closes its isolates and exits."""
        self._send.close()

    def kill(self) -> None:
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()


class RemoteIsolate:
    """An :class:`IsolateHandle` for an isolate inside a worker process."""

    def __init__(self, worker: WorkerProcess, isolate_id: int) -> None:
        self._worker = worker
        self._id = isolate_id

    def post(self, code: str, tag: int, quiet: bool = False) -> None:
        header: dict[str, Any] = {"op": "post", "id": self._id, "tag": tag}
        if quiet:
            header["quiet"] = True
        self._worker.send(header, code)

    def cancel(self, tag: int) -> None:
        self._worker.send({"op": "cancel", "id": self._id, "tag": tag})

    async def close(self) -> None:
        await self._worker.close_isolate(self._id)


class ProcessPool:
    """Up to ``size`` worker processes; each new isolate goes to the least loaded live
    one. Dead workers are dropped and replaced on demand."""

    def __init__(self, nursery: trio.Nursery, size: int) -> None:
        self._nursery = nursery
        self._size = size
        self.workers: list[WorkerProcess] = []
        self._ids = itertools.count(1)
        self._closed = False

    async def _start_worker(self) -> WorkerProcess:
        worker = WorkerProcess(self)
        self.workers.append(worker)
        await self._nursery.start(worker.run)
        return worker

    def _worker_died(self, worker: WorkerProcess) -> None:
        if worker in self.workers:
            self.workers.remove(worker)

    async def prestart(self) -> None:
        """Start the first worker early so the first cell does not wait for it."""
        if not self.workers and not self._closed:
            await self._start_worker()

    async def create_isolate(
        self, sink: IsolateSink, *, memory_limit_bytes: int, max_message_chars: int
    ) -> IsolateHandle:
        if self._closed:
            raise NativeIsolateError("code mode session is shutting down")
        live = [worker for worker in self.workers if worker.alive]
        if len(live) < self._size and (not live or min(w.load for w in live) > 0):
            worker = await self._start_worker()
        else:
            worker = min(live, key=lambda w: w.load)
        if not worker.alive:
            raise NativeIsolateError(
                "exec runtime ended unexpectedly: the JavaScript worker process died "
                f"({worker.death})"
            )
        isolate_id = next(self._ids)
        await worker.create(isolate_id, sink, memory_limit_bytes, max_message_chars)
        return RemoteIsolate(worker, isolate_id)

    async def aclose(self) -> None:
        """Ask every worker to exit and wait for them (killing any that hang)."""
        self._closed = True
        for worker in list(self.workers):
            worker.shutdown()
        with trio.CancelScope(shield=True):
            for worker in list(self.workers):
                with trio.move_on_after(10):
                    await worker.exited.wait()
                if not worker.exited.is_set():  # pragma: no cover
                    worker.kill()
                    await worker.exited.wait()


def child_process_count() -> int:
    """Live child processes of this process (for tests)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as children:
                count += len(children.read().split())
        except OSError:
            continue
    return count
