"""A worker's channels to its host: frames nothing else writes to, a heartbeat nothing starves.

V8 prints to its process's stdout (an exception thrown by a ``FinalizationRegistry``
callback is printed there, megabytes of it in a loop); when stdout was the frame pipe,
that corrupted the stream and the worker died with every cell in it. Frames now travel
on descriptors of their own and stdout/stderr go to a bounded log drain. The heartbeat
is echoed by a worker thread that runs no JavaScript, and the host reads the answer
before judging it, so neither a long built-in nor a host whose trio thread was blocked
makes a live worker count as hung.
"""

from __future__ import annotations

import json
import time

import trio
import trio.testing

from code_mode import Completed, Pending, SessionRuntime, Text, YieldAfter

from ..helpers import NO_REPLAY, SAFETY, GateDelegate, engine, request, start_holding
from ..native_child import run_child

#: Each program below runs as session B while session A waits on a gated tool.
PRINTING = {
    # V8 prints each exception a cleanup callback throws, with the program's text.
    "finalization-registry-throws": """
        const r = new FinalizationRegistry(() => { throw new Error("boom ".repeat(1000)); });
        for (let i = 0; i < 200000; i++) r.register({i}, i);
        for (let j = 0; j < 30; j++) {
          let g = []; for (let i = 0; i < 100000; i++) g.push({i});
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        text("b done");
    """,
    "many-registries": """
        const regs = [];
        for (let k = 0; k < 30; k++) {
          const r = new FinalizationRegistry(() => { throw new RangeError("x".repeat(100)); });
          for (let i = 0; i < 10000; i++) r.register({i}, i);
          regs.push(r);
        }
        for (let j = 0; j < 20; j++) {
          let g = []; for (let i = 0; i < 100000; i++) g.push({i});
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        text("b done");
    """,
}

CHILD = """
import json, sys
import trio
from code_mode import Engine, EngineConfig, SessionRuntime, YieldAfter
from code_mode import RuntimeConfig
from tests.helpers import GateDelegate, request, start_holding

PROGRAM = {program!r}


async def main():
    async with Engine(EngineConfig(worker_processes=1)) as eng:
        a_tools = GateDelegate(gates=["hold"])
        no_replay = RuntimeConfig(max_journal_chars=0)
        async with (
            SessionRuntime(a_tools, no_replay, engine=eng) as a,
            SessionRuntime(GateDelegate(), no_replay, engine=eng) as b,
        ):
            started_a = await start_holding(a)
            first = await started_a.initial_event()
            (worker,) = eng._pool.workers
            started_b = await b.execute(request(PROGRAM), YieldAfter(120))
            end_b = await started_b.initial_event()
            a_tools.release("hold")
            end_a = await a.observe(started_a.cell_id, YieldAfter(60))
            print(json.dumps({{
                "a": [repr(first), repr(end_a)], "b": repr(end_b),
                "alive": worker.alive, "same": eng._pool.workers == [worker],
                "log_bytes": worker.log_bytes, "tail": len(worker._log_tail),
            }}))


trio.run(main)
"""


def test_v8_printing_to_stdout_leaves_the_worker_and_its_bystanders_running() -> None:
    for name, program in PRINTING.items():
        result = run_child(CHILD.format(program=program), None, timeout=300)
        assert result.returncode == 0, (name, result.describe())
        outcome = json.loads(result.output.strip().splitlines()[-1])
        assert outcome["b"] == repr(Completed([Text("b done")])), (name, outcome)
        assert outcome["a"] == [
            repr(Pending([Text("a1")], ["tool-1"])),
            repr(Completed([Text("a2")])),
        ], (name, outcome)
        assert outcome["alive"] and outcome["same"], (name, outcome)
        # Whatever V8 printed (24 MB for the first, before the prelude caught what a
        # callback throws) went to the drain, which keeps a bounded tail.
        assert outcome["tail"] <= 4096


async def test_whatever_reaches_a_workers_stdout_or_stderr_goes_to_the_drain() -> None:
    """8 MiB of garbage written into each of the worker's stdout and stderr (as V8
    writes there, from inside the process; here through ``/proc/<pid>/fd``) while a
    cell waits: the frames are untouched, the worker and its cell go on."""
    delegate = GateDelegate(gates=["hold"])
    async with (
        engine("process", worker_processes=1) as eng,
        SessionRuntime(delegate, NO_REPLAY, engine=eng) as a,
    ):
        started = await start_holding(a)
        assert await started.initial_event() == Pending([Text("a1")], ["tool-1"])
        assert eng._pool is not None
        (worker,) = eng._pool.workers
        garbage = b"\x00\xff{not a frame}\n" * (512 * 1024)  # 8 MiB

        def write(fd: int) -> None:
            with open(f"/proc/{worker.pid}/fd/{fd}", "wb") as stream:
                stream.write(garbage)

        for fd in (1, 2):
            await trio.to_thread.run_sync(write, fd)  # blocks while the drain reads
        with trio.fail_after(SAFETY):
            while worker.log_bytes < 2 * len(garbage):
                await trio.testing.wait_all_tasks_blocked(0.01)  # the drain reads the rest
        assert len(worker._log_tail) <= 4096
        delegate.release("hold")
        assert await a.observe(started.cell_id, YieldAfter(SAFETY)) == Completed([Text("a2")])
        assert eng._pool.workers == [worker] and worker.alive


#: Sorts two million numbers as strings: one built-in call of about three seconds
#: on a 2-core machine, which never returns to the runtime in between.
LONG_BUILTIN = """
const a = new Array(2 ** 21);
for (let i = 0; i < a.length; i++) a[i] = (i * 7919) % 1000003;
const t = Date.now();
a.sort();
text(String(Date.now() - t));
"""


async def test_a_long_builtin_does_not_starve_the_heartbeat() -> None:
    timeout = 0.25
    delegate = GateDelegate(gates=["hold"])
    async with (
        engine("process", worker_processes=1, worker_heartbeat_timeout=timeout) as eng,
        SessionRuntime(delegate, NO_REPLAY, engine=eng) as a,
        SessionRuntime(GateDelegate(), NO_REPLAY, engine=eng) as b,
    ):
        started_a = await start_holding(a)
        assert await started_a.initial_event() == Pending([Text("a1")], ["tool-1"])
        (pid,) = eng.worker_pids()
        started_b = await b.execute(request(LONG_BUILTIN), YieldAfter(12 * SAFETY))
        with trio.fail_after(12 * SAFETY):
            end_b = await started_b.initial_event()
        assert isinstance(end_b, Completed) and end_b.error_text is None, end_b
        (spent,) = end_b.content_items
        assert isinstance(spent, Text)
        assert int(spent.text) > 4 * timeout * 1000  # many heartbeats fell inside the call
        delegate.release("hold")
        assert await a.observe(started_a.cell_id, YieldAfter(SAFETY)) == Completed([Text("a2")])
        assert eng.worker_pids() == [pid]


async def test_a_blocked_host_does_not_count_a_live_worker_as_hung() -> None:
    """The host's trio thread blocked for 4 heartbeat timeouts (as a huge message's
    decoding once did): the worker answered meanwhile, and is not killed for it."""
    timeout = 0.25
    delegate = GateDelegate(gates=["hold"])
    async with (
        engine("process", worker_processes=1, worker_heartbeat_timeout=timeout) as eng,
        SessionRuntime(delegate, NO_REPLAY, engine=eng) as a,
    ):
        started = await start_holding(a)
        assert await started.initial_event() == Pending([Text("a1")], ["tool-1"])
        (pid,) = eng.worker_pids()
        for _ in range(3):
            time.sleep(4 * timeout)  # noqa: ASYNC251 (the trio thread blocked on purpose)
            await trio.sleep(timeout)  # the watchdog looks (and pings) again
        delegate.release("hold")
        assert await a.observe(started.cell_id, YieldAfter(SAFETY)) == Completed([Text("a2")])
        assert eng.worker_pids() == [pid]
