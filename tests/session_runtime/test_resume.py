"""A cell taken over by another host from a copy of its journal (``ExecuteRequest.resume``).

Host A runs a program with a journal mirror (as a stateless MCP server does) until it
waits on a gated tool; then A "dies": the test keeps only what the mirror had made
durable, closes A, and resumes the cell on a second session runtime (host B) from
those records. Every ordering is an event: a program at its pending frontier, a mirror
that makes records durable only when the test says so.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio
import trio.testing

from code_mode import (
    CellEvent,
    CellId,
    Completed,
    PendingFrontier,
    SessionRuntime,
    YieldAfter,
)
from code_mode._resumption import MirrorKind, Resumption, resumption_from_records

from ..helpers import GateDelegate, config, function_tool, request

PROGRAM = r"""
const r = Math.random();
const t = Date.now();
text(`before ${r} ${t}`);
const a = await tools.first({ n: 1 });
text(`first ${JSON.stringify(a)}`);
const timer = new Promise((resolve) => setTimeout(resolve, 50));
const b = await tools.hold({ n: 2 });
await timer;
store("kept", { a, b });
text(`after ${r} ${t} ${JSON.stringify(b)}`);
"""


class Mirror:
    """A journal mirror in memory: records are durable once :meth:`persist` (or, when
    ``automatic``, every ``caught_up``) says so."""

    def __init__(self, *, automatic: bool = True) -> None:
        self.records: list[tuple[MirrorKind, str]] = []
        self.durable = 0
        self.automatic = automatic
        self._progress = trio.Event()
        self._recorded = trio.Event()

    def record(self, kind: MirrorKind, text: str) -> None:
        self.records.append((kind, text))
        self._recorded.set()

    async def recorded(self, count: int) -> tuple[MirrorKind, str]:
        """The ``count``-th record, once it is made."""
        with trio.fail_after(30):
            while len(self.records) < count:
                self._recorded = trio.Event()
                await self._recorded.wait()
        return self.records[count - 1]

    @property
    def behind(self) -> bool:
        return self.durable < len(self.records)

    async def caught_up(self) -> None:
        target = len(self.records)
        await trio.lowlevel.checkpoint()
        while self.durable < target:
            if self.automatic:
                self.durable = max(self.durable, target)
                return
            await self._progress.wait()

    def persist(self) -> None:
        self.durable = len(self.records)
        self._progress.set()
        self._progress = trio.Event()

    def copy(self) -> list[tuple[MirrorKind, str]]:
        """What another host could read: the durable records."""
        return self.records[: self.durable]


def texts(event: CellEvent) -> list[str]:
    return [getattr(item, "text", "") for item in event.content_items]


@asynccontextmanager
async def host(
    delegate: GateDelegate, mirror: Mirror | None, isolation: str
) -> AsyncIterator[SessionRuntime]:
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        if mirror is not None:
            runtime.journal_mirrors = lambda cell_id, request: mirror
        yield runtime


async def run_until_hold(
    runtime: SessionRuntime, delegate: GateDelegate, source: str = PROGRAM
) -> tuple[CellId, list[str]]:
    """Start ``source`` and return once it waits on ``hold`` (with what it printed)."""
    started = await runtime.execute(request(source, ["first", "hold"]), PendingFrontier())
    seen = texts(await started.initial_event())
    while (await delegate.next_call()).tool_name.name != "hold":
        pass
    seen += texts(await runtime.observe(started.cell_id, PendingFrontier()))
    return started.cell_id, seen


async def died_at_hold(isolation: str) -> tuple[int, list[tuple[MirrorKind, str]], list[str]]:
    """Host A runs :data:`PROGRAM` until it waits on ``hold``, then dies: the output
    items it had handed back, the durable copy of the journal, and what it printed."""
    mirror = Mirror()
    delegate = GateDelegate(gates=["hold"])
    async with host(delegate, mirror, isolation) as a:
        cell, seen = await run_until_hold(a, delegate)
        return a.output_handed(cell), mirror.copy(), seen


def calls_made(delegate: GateDelegate) -> list[str]:
    names = []
    while True:
        try:
            names.append(delegate.started.receive_nowait().tool_name.name)
        except trio.WouldBlock:
            return names


async def resume_on(
    runtime: SessionRuntime, resumption: Resumption | str, tools: list[str]
) -> CellId:
    assert isinstance(resumption, Resumption), resumption
    resumed = attrs.evolve(request(PROGRAM, tools), resume=resumption)
    started = await runtime.execute(resumed, YieldAfter(0))
    await started.initial_event()
    return started.cell_id


async def test_a_cell_resumes_on_another_host_with_exactly_its_output(isolation: str) -> None:
    handed, copy, seen = await died_at_hold(isolation)
    # A is gone: `first` ran there, `hold` was in flight.
    assert seen[0].startswith("before ") and seen[1:] == ['first {"n":1}'], seen
    assert handed == 2
    kinds = [kind for kind, _ in copy]
    assert kinds.count("call") == 2 and "batch" in kinds and "clock" in kinds, kinds
    b_delegate = GateDelegate(gates=["hold"])
    async with host(b_delegate, Mirror(), isolation) as b:
        resumed = await resume_on(
            b, resumption_from_records(copy, handed=handed), ["first", "hold"]
        )
        assert (await b_delegate.next_call()).tool_name.name == "hold"  # run again, once
        b_delegate.release("hold")
        end = await b.observe(resumed, YieldAfter(30))
        assert calls_made(b_delegate) == []  # `first` was answered from the journal
        assert isinstance(end, Completed) and end.error_text is None, end
        _, r, t = seen[0].split(" ")
        # Nothing handed twice; the values printed before are the values resumed with.
        assert texts(end) == [f'after {r} {t} {{"n":2}}'], texts(end)
        assert json.loads(b.stored_values["kept"]) == {"a": {"n": 1}, "b": {"n": 2}}


async def test_output_not_yet_handed_on_is_handed_by_the_new_host(isolation: str) -> None:
    mirror = Mirror()
    delegate = GateDelegate(gates=["hold"])
    async with host(delegate, mirror, isolation) as a:
        started = await a.execute(
            request("text('one'); await tools.hold({}); text('two')", ["hold"]), YieldAfter(30)
        )
        await delegate.next_call()
        # 'one' is in A's buffer, never observed: A dies with it.
        handed = a.output_handed(started.cell_id)
        copy = mirror.copy()
    assert handed == 0
    b_delegate = GateDelegate()
    async with host(b_delegate, None, isolation) as b:
        resumed = attrs.evolve(
            request("text('one'); await tools.hold({}); text('two')", ["hold"]),
            resume=resumption_from_records(copy, handed=handed),
        )
        started = await b.execute(resumed, YieldAfter(30))
        end = await started.initial_event()
        assert isinstance(end, Completed) and texts(end) == ["one", "two"], end


async def test_a_tool_that_is_not_idempotent_is_not_run_twice(isolation: str) -> None:
    handed, copy, _ = await died_at_hold(isolation)
    b_delegate = GateDelegate(gates=["hold"])
    async with host(b_delegate, None, isolation) as b:
        tools = [function_tool("first"), attrs.evolve(function_tool("hold"), idempotent=False)]
        resumed = attrs.evolve(
            request(PROGRAM),
            enabled_tools=tools,
            resume=resumption_from_records(copy, handed=handed),
        )
        started = await b.execute(resumed, YieldAfter(30))
        end = await started.initial_event()
        assert isinstance(end, Completed), end
        assert end.error_text is not None and "tools.hold was in flight" in end.error_text
        assert "not idempotent" in end.error_text
        assert calls_made(b_delegate) == []


async def test_a_call_in_flight_runs_again_at_most_once(isolation: str) -> None:
    handed, copy, _ = await died_at_hold(isolation)
    # B resumes it, runs `hold` again, and dies too, with `hold` still in flight.
    b_mirror = Mirror()
    b_delegate = GateDelegate(gates=["hold"])
    async with host(b_delegate, b_mirror, isolation) as b:
        await resume_on(b, resumption_from_records(copy, handed=handed), ["first", "hold"])
        await b_delegate.next_call()
        second = copy + b_mirror.copy()
    assert ("rerun", "tool-2") in second
    c_delegate = GateDelegate(gates=["hold"])
    async with host(c_delegate, None, isolation) as c:
        resumed = attrs.evolve(
            request(PROGRAM, ["first", "hold"]),
            resume=resumption_from_records(second, handed=handed),
        )
        end = await (await c.execute(resumed, YieldAfter(30))).initial_event()
        assert isinstance(end, Completed) and end.error_text is not None, end
        assert "runs again at most once" in end.error_text
        assert calls_made(c_delegate) == []


async def test_nothing_reaches_a_tool_or_the_isolate_before_its_record_is_durable(
    isolation: str,
) -> None:
    mirror = Mirror(automatic=False)
    delegate = GateDelegate()
    async with host(delegate, mirror, isolation) as a:
        started = await a.execute(
            request("const v = await tools.first({n: 1}); text(JSON.stringify(v))", ["first"]),
            YieldAfter(0),
        )
        assert texts(await started.initial_event()) == []
        await trio.testing.wait_all_tasks_blocked()
        # The start command waits for its record: the program has not run.
        assert [kind for kind, _ in mirror.records] == ["batch"]
        mirror.persist()
        # The program ran and called `first`: the call is recorded, not yet started.
        assert await mirror.recorded(2) == ("call", "tool-1")
        await trio.testing.wait_all_tasks_blocked()
        assert calls_made(delegate) == []
        mirror.persist()
        call = await delegate.next_call()
        assert call.tool_name.name == "first"
        # The tool's result waits for its record: the program has not seen it.
        assert (await mirror.recorded(3))[0] == "batch" and mirror.behind
        await trio.testing.wait_all_tasks_blocked()
        assert mirror.behind and len(mirror.records) == 3
        mirror.persist()
        end = await a.observe(started.cell_id, YieldAfter(30))
        assert isinstance(end, Completed) and texts(end) == ['{"n":1}'], end


HANDED_OVER = """
const a = await tools.first({ n: 1 });
const b = await tools.hold({ n: 2 });
const c = await tools.first({ n: 3 });
text(`${a.n} ${b.n} ${c.n}`);
"""


async def test_a_quiesced_cell_changes_hosts_without_a_call_run_twice(isolation: str) -> None:
    # A host stopping on purpose (a drain): the call in flight finishes there, the next
    # one does not start there, and the host that resumes the cell starts it.
    mirror = Mirror()
    delegate = GateDelegate(gates=["hold"])
    async with host(delegate, mirror, isolation) as a, trio.open_nursery() as nursery:
        started = await a.execute(request(HANDED_OVER, ["first", "hold"]), PendingFrontier())
        cell = started.cell_id
        assert texts(await started.initial_event()) == []  # its frontier: `hold` in flight
        assert [(await delegate.next_call()).tool_name.name for _ in "ab"] == ["first", "hold"]
        quiet = trio.Event()

        async def quiesce() -> None:
            await a.quiesce(cell)
            quiet.set()

        nursery.start_soon(quiesce)
        await trio.testing.wait_all_tasks_blocked()
        assert not quiet.is_set()  # `hold` is in flight: it may finish here
        delegate.release("hold")
        with trio.fail_after(30):
            await quiet.wait()
        # The program went on to call `first({n: 3})` and waits on it: not started here.
        assert texts(await a.observe(cell, PendingFrontier())) == []
        assert calls_made(delegate) == []
        assert texts(await a.terminate(cell)) == []
        handed, copy = a.output_handed(cell), mirror.copy()
    assert [text for kind, text in copy if kind in ("call", "rerun")] == ["tool-1", "tool-2"]
    b_delegate = GateDelegate()
    async with host(b_delegate, None, isolation) as b:
        resumed = attrs.evolve(
            request(HANDED_OVER, ["first", "hold"]),
            resume=resumption_from_records(copy, handed=handed),
        )
        end = await (await b.execute(resumed, YieldAfter(30))).initial_event()
        assert isinstance(end, Completed) and texts(end) == ["1 2 3"], end
        call = await b_delegate.next_call()
        assert call.tool_name.name == "first" and call.input == {"n": 3}
        assert calls_made(b_delegate) == []


async def test_quiesce_returns_at_once_for_a_cell_without_a_mirror(isolation: str) -> None:
    delegate = GateDelegate(gates=["hold"])
    async with host(delegate, None, isolation) as a:
        started = await a.execute(request(HANDED_OVER, ["first", "hold"]), PendingFrontier())
        assert texts(await started.initial_event()) == []  # its frontier: `hold` in flight
        assert [(await delegate.next_call()).tool_name.name for _ in "ab"] == ["first", "hold"]
        with trio.fail_after(30):
            await a.quiesce(started.cell_id)  # nothing to hand over: nothing waited for
        delegate.release("hold")
        end = await a.observe(started.cell_id, YieldAfter(30))
        assert isinstance(end, Completed) and texts(end) == ["1 2 3"], end


def test_a_journal_past_its_limit_cannot_be_resumed() -> None:
    assert resumption_from_records([("batch", "[]"), ("unusable", "")], handed=0) == (
        "its journal passed the limit of RuntimeConfig.max_journal_chars, so it cannot be replayed"
    )
    assert resumption_from_records([], handed=0) == "its journal holds no start command"


def test_the_copy_says_which_calls_were_answered_and_which_timers_fired() -> None:
    records: list[tuple[MirrorKind, str]] = [
        ("batch", '[{"t":"start"}]'),
        ("call", "tool-1"),
        ("batch", '[{"t":"result","id":"tool-1","ok":true,"value":1},{"t":"fire","id":3}]'),
        ("clock", "[1.5, 2.5]"),
        ("call", "tool-2"),
        ("rerun", "tool-2"),
    ]
    resumption = resumption_from_records(records, handed=4)
    assert isinstance(resumption, Resumption)
    assert resumption.answered == {"tool-1"} and resumption.fired == {3}
    assert resumption.started == {"tool-1", "tool-2"} and resumption.reruns == {"tool-2"}
    assert resumption.clock == (1.5, 2.5) and resumption.handed == 4
    assert len(resumption.batches) == 2
