"""A program that ends while its notifications drain slowly (issue 26, item 3).

Completion waits for the notifications in flight (they are not cancelled), but the
caller's yield time still counts meanwhile: it gets a ``Yielded`` with the output so
far when its time is up, and the completion later, from ``observe`` (``wait``).
"""

from __future__ import annotations

import trio
import trio.testing

from code_mode import CellId, Completed, SessionRuntime, Text, YieldAfter, Yielded

from ..helpers import SAFETY, GateDelegate, config, request


class SlowNotifications(GateDelegate):
    """Notifications that wait until the test lets them through."""

    def __init__(self) -> None:
        super().__init__()
        self.let_through = trio.Event()

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        await self.let_through.wait()
        await super().notify(call_id, cell_id, text)


async def test_yield_time_counts_while_notifications_drain(isolation: str) -> None:
    delegate = SlowNotifications()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'for (let i = 0; i < 64; i++) notify("n" + i); text("ended");'
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source), YieldAfter(0.2))
            first = await started.initial_event()
        # The program ended at once; its notifications are still with the delegate.
        assert first == Yielded([Text("ended")])
        assert delegate.notifications == []
        delegate.let_through.set()
        with trio.fail_after(SAFETY):
            end = await runtime.observe(started.cell_id, YieldAfter(SAFETY))
        assert end == Completed([])
        assert len(delegate.notifications) == 64


async def test_a_completion_within_the_yield_time_still_waits_for_notifications(
    isolation: str,
) -> None:
    delegate = SlowNotifications()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'notify("one"); text("ended");'
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source), YieldAfter(SAFETY))
            await trio.testing.wait_all_tasks_blocked()
            delegate.let_through.set()
            first = await started.initial_event()
        assert first == Completed([Text("ended")])
        assert [text for _, _, text in delegate.notifications] == ["one"]
