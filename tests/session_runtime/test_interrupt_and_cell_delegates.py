"""``SessionRuntime.terminate_all`` (an interrupted turn) and a delegate per cell.

Ports of the reference's tests where it has one:
``yielded_cells_retain_their_own_delegate_until_closed`` is openai/codex
``codex-rs/code-mode-runtime/src/service_contract_tests.rs`` (mirror
yuyaryshev/ycodex at c3403eed76693bb9f1ed856acc59b6f02ee59b6e); the interrupt follows
openai/codex #51835 (every cell not ended is terminated, nested tool calls cancelled,
an observation of one ends ``Terminated``, a later one finds no cell, stored values
survive).
"""

from __future__ import annotations

import gc
import weakref

import attrs
import pytest
import trio
import trio.testing

from code_mode import (
    CellId,
    Completed,
    MissingCell,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)

from ..helpers import SAFETY, GateDelegate, Task, config, request


class _SlowClose(GateDelegate):
    """``cell_closed`` waits for the test's ``release("close")``."""

    def __init__(self) -> None:
        super().__init__(gates=["close"])
        self.closing = trio.Event()

    async def cell_closed(self, cell_id: CellId) -> None:
        self.closing.set()
        await self.gates["close"].wait()
        await super().cell_closed(cell_id)


# -- terminate_all -------------------------------------------------------------------


async def test_terminate_all_ends_every_cell_and_keeps_stored_values(isolation: str) -> None:
    delegate = GateDelegate()
    with trio.fail_after(SAFETY):
        async with SessionRuntime(delegate, config(isolation)) as runtime:
            stored = await runtime.execute(request("store('kept', 1)"), YieldAfter(60))
            assert await stored.initial_event() == Completed([])
            # An earlier turn's background cell (handed back, nothing observes it).
            background = await runtime.execute(
                request("await tools.block({});", ["block"]), YieldAfter(0)
            )
            assert isinstance(await background.initial_event(), Yielded)
            # A finished cell whose result nobody received.
            finished = await runtime.execute(request("text('done')"), YieldAfter(0))
            # A spinning cell, observed by this turn's `exec`.
            spinning = await runtime.execute(request("text('a'); while (true) {}"), YieldAfter(60))
            first_call = await delegate.next_call()

            async with trio.open_nursery() as nursery:
                observing = Task.spawn(nursery, spinning.initial_event)
                await trio.testing.wait_all_tasks_blocked()
                await finished.initial_event()
                ended = await runtime.terminate_all()
            assert ended == [background.cell_id, finished.cell_id, spinning.cell_id]
            assert isinstance(await observing.wait(), Terminated)
            assert delegate.cancelled == [first_call.runtime_tool_call_id]
            assert sorted(delegate.closed) == sorted([stored.cell_id, *ended])
            assert runtime.cell_count == 0
            for cell_id in ended:
                with pytest.raises(MissingCell):
                    await runtime.observe(cell_id, YieldAfter(1))
            # The session goes on, with the values stored before the interrupt.
            after = await runtime.execute(request("text(load('kept'))"), YieldAfter(60))
            assert await after.initial_event() == Completed([Text("1")])
            assert await runtime.terminate_all() == []


async def test_terminate_all_spares_a_cell_admitted_while_it_waits(isolation: str) -> None:
    """Cells admitted after the interrupt began are the next turn's: left alone."""
    slow = _SlowClose()
    with trio.fail_after(SAFETY):
        async with SessionRuntime(slow, config(isolation)) as runtime:
            old = await runtime.execute(request("await new Promise(() => {})"), YieldAfter(0))
            await old.initial_event()
            async with trio.open_nursery() as nursery:
                interrupt = Task.spawn(nursery, runtime.terminate_all)
                await slow.closing.wait()
                new = await runtime.execute(request("await new Promise(() => {})"), YieldAfter(0))
                await new.initial_event()
                slow.release("close")
            assert await interrupt.wait() == [old.cell_id]
            assert runtime.cell_count == 1  # the new one runs on
            assert await runtime.terminate(new.cell_id) == Terminated([])


# -- a delegate per cell ---------------------------------------------------------------


async def test_yielded_cells_retain_their_own_delegate_until_closed(isolation: str) -> None:
    session_delegate = GateDelegate()
    delegate_a = GateDelegate(gates=["block_a"])
    delegate_b = GateDelegate()
    weak_a = weakref.ref(delegate_a)
    source = "await tools.block_a({}); await tools.block_a({});"
    with trio.fail_after(SAFETY):
        async with SessionRuntime(session_delegate, config(isolation)) as runtime:
            req_a = attrs.evolve(request(source, ["block_a"]), delegate=delegate_a)
            a = await runtime.execute(req_a, YieldAfter(0))
            del req_a
            first_a = await delegate_a.next_call()
            assert isinstance(await a.initial_event(), Yielded)

            b = await runtime.execute(
                attrs.evolve(request("await tools.block({});", ["block"]), delegate=delegate_b),
                YieldAfter(0),
            )
            await delegate_b.next_call()
            assert isinstance(await b.initial_event(), Yielded)

            # A's next callback still reaches A after B started in the same session.
            delegate_a.gates["block_a"].set()
            second_a = await delegate_a.next_call()
            assert second_a.runtime_tool_call_id != first_a.runtime_tool_call_id
            assert await runtime.observe(a.cell_id, YieldAfter(60)) == Completed([])
            with trio.fail_after(SAFETY):
                await delegate_a.closed_event.wait()
            assert delegate_a.closed == [a.cell_id]
            await trio.testing.wait_all_tasks_blocked()  # its close is over
            assert runtime.cell_count == 1
            del delegate_a, first_a, second_a, a
            gc.collect()
            assert weak_a() is None  # the runtime keeps nothing of a closed cell's delegate

            assert await runtime.terminate(b.cell_id) == Terminated([])
            await delegate_b.closed_event.wait()
            assert len(delegate_b.cancelled) == 1
            assert delegate_b.closed == [b.cell_id]
            # The session's delegate heard of neither cell.
            assert session_delegate.closed == []
            assert session_delegate.started.statistics().current_buffer_used == 0


async def test_a_request_without_a_delegate_uses_the_sessions(isolation: str) -> None:
    session_delegate = GateDelegate()
    with trio.fail_after(SAFETY):
        async with SessionRuntime(session_delegate, config(isolation)) as runtime:
            started = await runtime.execute(
                request("text(JSON.stringify(await tools.echo({x: 1})))", ["echo"]),
                YieldAfter(60),
            )
            assert await started.initial_event() == Completed([Text('{"x":1}')])
            await session_delegate.closed_event.wait()
            assert session_delegate.closed == [started.cell_id]


def test_the_delegate_is_not_part_of_a_requests_value() -> None:
    plain = request("text(1)")
    assert attrs.evolve(plain, delegate=GateDelegate()) == plain
    assert "delegate" not in repr(attrs.evolve(plain, delegate=GateDelegate()))
