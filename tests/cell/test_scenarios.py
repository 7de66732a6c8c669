"""The cell scenarios of the runtime's design, one test each, numbered (the rules:
``docs/runtime.md``).

Ordering is established with delegate gates (a program waits on ``tools.gate()`` until
the test releases it) and with the tool calls a program makes after the step under
test: messages from an isolate arrive in order, so once the delegate sees the later
call, everything before it has been applied to the cell.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from code_mode import (
    AlreadyTerminating,
    Completed,
    Image,
    ImageDetail,
    Pending,
    PendingFrontier,
    SessionRuntime,
    Terminated,
    Text,
    YieldAfter,
    Yielded,
)

from ..helpers import SAFETY, GateDelegate, config, request, settled, yielded_cell


async def cancel_wait(awaitable_factory: object) -> None:
    """Start waiting and get cancelled before anything can arrive."""
    with trio.CancelScope() as scope:
        scope.cancel()
        await awaitable_factory()  # type: ignore[operator]


async def test_01_completion_and_its_output_are_buffered_until_the_first_observation(
    isolation: str,
) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(request('text("before observation")'), YieldAfter(0))
        # An expired yield timer resolves the initial observation when the program starts.
        assert await started.initial_event() == Yielded([])
        await settled(runtime, started.cell_id)
        assert delegate.closed == []  # buffered: the cell stays until observed

        event = await runtime.observe(started.cell_id, YieldAfter(0))
        assert event == Completed([Text("before observation")], error_text=None)
        with trio.fail_after(SAFETY):
            await delegate.closed_event.wait()
        assert delegate.closed == [started.cell_id]


async def test_02_a_yield_racing_with_creation_is_kept_for_the_first_yield_observer(
    isolation: str,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    source = """
        await tools.gate();
        text("before"); yield_control(); text("after");
        await tools.block();
    """
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(request(source, ["gate", "block"]), YieldAfter(60))
        await cancel_wait(started.initial_event)  # the exec caller went away
        assert (await delegate.next_call()).tool_name.name == "gate"
        delegate.release("gate")
        assert (await delegate.next_call()).tool_name.name == "block"

        assert await runtime.observe(started.cell_id, YieldAfter(60)) == Yielded([Text("before")])
        assert await runtime.observe(started.cell_id, YieldAfter(0)) == Yielded([Text("after")])
        assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_03_an_unattached_yield_after_the_first_observation_is_a_no_op(
    isolation: str,
) -> None:
    delegate = GateDelegate(gates=["gate", "gate2"])
    source = """
        text("a"); yield_control();
        await tools.gate(); text("b"); yield_control();
        await tools.gate2(); text("c"); yield_control();
        await tools.block();
    """
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        started = await runtime.execute(request(source, ["gate", "gate2", "block"]), YieldAfter(60))
        assert await started.initial_event() == Yielded([Text("a")])
        await delegate.next_call()  # gate
        delegate.release("gate")
        await delegate.next_call()  # gate2: "b" and its (unattached) yield were applied

        results: list[object] = []

        async def observe() -> None:
            results.append(await runtime.observe(started.cell_id, YieldAfter(60)))

        nursery.start_soon(observe)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []  # "b" stayed buffered: the earlier yield did nothing
        delegate.release("gate2")
        await delegate.next_call()  # block
        with trio.fail_after(SAFETY):
            while not results:
                await trio.testing.wait_all_tasks_blocked()
        assert results == [Yielded([Text("b"), Text("c")])]
        await runtime.terminate(started.cell_id)


async def test_04_an_expired_yield_timer_beats_output_already_queued(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'text("queued output"); await tools.block();'
        started = await yielded_cell(runtime, request(source, ["block"]), YieldAfter(0))
        await delegate.next_call()  # the output was produced and applied by now
        assert await runtime.terminate(started.cell_id) == Terminated([Text("queued output")])


async def test_05_an_observation_cancelled_before_it_is_processed_consumes_nothing(
    isolation: str,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    source = """
        yield_control();
        await tools.gate(); text("x"); yield_control();
        await tools.block();
    """
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await yielded_cell(runtime, request(source, ["gate", "block"]), YieldAfter(60))
        pending = await runtime.begin_observe(started.cell_id, YieldAfter(60))
        await cancel_wait(pending.event)
        await delegate.next_call()  # gate
        delegate.release("gate")
        await delegate.next_call()  # block
        assert await runtime.observe(started.cell_id, YieldAfter(0)) == Yielded([Text("x")])
        await runtime.terminate(started.cell_id)


async def test_06_a_cancelled_observers_output_survives_for_the_next_observer(
    isolation: str,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    source = 'yield_control(); await tools.gate(); text("x"); await tools.block();'
    async with (
        SessionRuntime(delegate, config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        started = await yielded_cell(runtime, request(source, ["gate", "block"]), YieldAfter(60))
        waiting = trio.CancelScope()

        observed: list[object] = []

        async def observe() -> None:
            with waiting:
                observed.append(await runtime.observe(started.cell_id, YieldAfter(60)))

        nursery.start_soon(observe)
        await delegate.next_call()  # gate
        delegate.release("gate")
        await delegate.next_call()  # block: "x" is buffered, the observer still waits
        waiting.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert waiting.cancelled_caught and observed == []
        assert await runtime.observe(started.cell_id, YieldAfter(0)) == Yielded([Text("x")])
        await runtime.terminate(started.cell_id)


async def test_07_a_cancelled_frontier_observer_leaves_the_frontier_for_the_next(
    isolation: str,
) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(
            request("await tools.block();", ["block"]), PendingFrontier()
        )
        await cancel_wait(started.initial_event)
        call = await delegate.next_call()
        assert call.runtime_tool_call_id == "tool-1"
        event = await runtime.observe(started.cell_id, PendingFrontier())
        assert event == Pending([], pending_tool_call_ids=["tool-1"])
        assert await runtime.terminate(started.cell_id) == Terminated([])
        assert delegate.cancelled == ["tool-1"]


class HoldingNotifyDelegate(GateDelegate):
    """``notify`` blocks until cancelled."""

    async def notify(self, call_id: str, cell_id: object, text: str) -> None:
        self.notified.set()
        await trio.sleep_forever()


async def test_08_termination_before_an_unobserved_completion_is_processed_wins(
    isolation: str,
) -> None:
    delegate = HoldingNotifyDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'store("k", 1); text("done"); notify("hold");'
        started = await yielded_cell(runtime, request(source), YieldAfter(0))
        with trio.fail_after(SAFETY):
            await delegate.notified.wait()  # completion now waits for the notification
        assert await runtime.terminate(started.cell_id) == Terminated([Text("done")])

        next_cell = await runtime.execute(request("text(String(load('k')))"), YieldAfter(60))
        assert await next_cell.initial_event() == Completed([Text("undefined")])


async def test_09_only_the_first_termination_claims_a_buffered_completion(isolation: str) -> None:
    async with (
        SessionRuntime(GateDelegate(), config(isolation)) as runtime,
        trio.open_nursery() as nursery,
    ):
        started = await yielded_cell(runtime, request('text("done")'), YieldAfter(0))
        await settled(runtime, started.cell_id)

        outcomes: list[object] = []

        async def terminate() -> None:
            try:
                outcomes.append(await runtime.terminate(started.cell_id))
            except AlreadyTerminating as error:
                outcomes.append(error)

        # Both queue on the registry lock, so the cell cannot close in between.
        async with runtime._registry_lock:
            nursery.start_soon(terminate)
            nursery.start_soon(terminate)
            await trio.testing.wait_all_tasks_blocked()
        with trio.fail_after(SAFETY):
            while len(outcomes) < 2:
                await trio.testing.wait_all_tasks_blocked()
        # Whichever terminate got the registry first claimed the completion.
        assert sorted(outcomes, key=lambda outcome: type(outcome).__name__) == [
            AlreadyTerminating(started.cell_id),
            Completed([Text("done")]),
        ]


async def test_10_completion_while_a_cancelled_observer_was_attached_is_rebuffered(
    isolation: str,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'await tools.gate(); text("after");'
        started = await runtime.execute(request(source, ["gate"]), YieldAfter(60))
        await delegate.next_call()
        await cancel_wait(started.initial_event)
        delegate.release("gate")
        await settled(runtime, started.cell_id)
        assert await runtime.observe(started.cell_id, YieldAfter(60)) == Completed([Text("after")])


async def test_11_a_frontier_observer_gets_initial_yield_and_completion_merged(
    isolation: str,
) -> None:
    delegate = GateDelegate(gates=["gate"])
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'await tools.gate(); text("before"); yield_control(); text("after");'
        started = await runtime.execute(request(source, ["gate"]), YieldAfter(60))
        await cancel_wait(started.initial_event)
        await delegate.next_call()
        delegate.release("gate")
        await settled(runtime, started.cell_id)
        event = await runtime.observe(started.cell_id, PendingFrontier())
        assert event == Completed([Text("before"), Text("after")])


async def test_12_parallel_tool_calls_settle_in_either_order(isolation: str) -> None:
    delegate = GateDelegate(gates=["first", "second"], errors={"first": RuntimeError("failed")})
    source = """
        // A rejection is the plain string (openai/codex module_loader.rs, 4f39251a010a).
        const first = tools.first().then((v) => "first ok", (e) => "first " + e);
        const second = tools.second().then((v) => "second", (e) => "second failed");
        text(await first);
        text(await second);
    """
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(request(source, ["first", "second"]), YieldAfter(60))
        ids = {(await delegate.next_call()).tool_name.name for _ in range(2)}
        assert ids == {"first", "second"}
        delegate.release("second")  # the second call settles first
        await trio.testing.wait_all_tasks_blocked()
        delegate.release("first")
        assert await started.initial_event() == Completed([Text("first failed"), Text("second")])


async def test_13_termination_after_a_yield_with_a_long_timer_pending_closes_at_once(
    isolation: str,
) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = "setTimeout(() => {}, 60000); yield_control(); await new Promise(() => {});"
        started = await yielded_cell(runtime, request(source), YieldAfter(60))
        with trio.fail_after(2):
            assert await runtime.terminate(started.cell_id) == Terminated([])
            await delegate.closed_event.wait()
        assert delegate.closed == [started.cell_id]


async def test_14_a_script_failure_keeps_its_writes_and_does_not_poison_the_next_cell(
    isolation: str,
) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        source = 'store("answer", 42); throw new Error("boom");'
        started = await runtime.execute(request(source), YieldAfter(60))
        assert await started.initial_event() == Completed(
            [], error_text="Error: boom\n    at exec_main.mjs:1:28"
        )
        healthy = await runtime.execute(request('text(load("answer"))'), YieldAfter(60))
        assert await healthy.initial_event() == Completed([Text("42")])


async def test_15_a_script_producing_every_effect_yields_them_in_order(isolation: str) -> None:
    delegate = GateDelegate(gates=["gate"])
    source = """
        text("one");
        image("data:image/png;base64,AAA");
        notify("note");
        yield_control();
        yield_control();
        await tools.gate();
        text("two");
        store("answer", 42);
    """
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        started = await runtime.execute(request(source, ["gate"]), YieldAfter(60))
        assert await started.initial_event() == Yielded(
            [Text("one"), Image("data:image/png;base64,AAA", ImageDetail.HIGH)]
        )
        await delegate.next_call()
        assert delegate.notifications == [("call-1", started.cell_id, "note")]
        delegate.release("gate")
        # The second yield had no observer (a no-op); the rest arrives with completion.
        assert await runtime.observe(started.cell_id, YieldAfter(60)) == Completed([Text("two")])
        later = await runtime.execute(request('text(load("answer"))'), YieldAfter(60))
        assert await later.initial_event() == Completed([Text("42")])


@pytest.mark.parametrize(
    "source",
    [
        "while (true) {}",
        "(function f() { Promise.resolve().then(f); })(); await new Promise(() => {});",
    ],
    ids=["busy-loop", "microtask-chain"],
)
async def test_16_terminate_interrupts_code_that_never_yields(source: str, isolation: str) -> None:
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        started = await yielded_cell(runtime, request(source), YieldAfter(0.01))
        # The latency itself is measured by benchmark B4; here a generous bound only.
        with trio.fail_after(1):
            assert await runtime.terminate(started.cell_id) == Terminated([])


async def test_output_still_queued_in_the_isolate_is_handed_over_by_terminate(
    isolation: str,
) -> None:
    """Output the runtime queued but could not send yet (its flush failed at the edge
    of the stack) is handed over when the spinning program is terminated: terminate
    skips the drain only when the isolate reports that nothing is queued."""
    source = """
    let done = false;
    function deep() {
      try { deep(); } catch {}
      if (!done) { try { text("edge"); done = true; } catch {} }
    }
    deep();
    while (true) {}
    """
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        # The program reaches the edge in milliseconds, and nothing it does afterwards
        # can tell the host so without sending the output: the yield's deadline is the
        # time it is given (50 ms was at times too little on a loaded machine, and
        # terminate then found nothing queued yet).
        started = await runtime.execute(request(source), YieldAfter(0.5))
        # Not sent while the program ran: it was still in the isolate's queue.
        assert await started.initial_event() == Yielded([])
        with trio.fail_after(SAFETY):
            assert await runtime.terminate(started.cell_id) == Terminated([Text("edge")])


async def test_a_nested_call_that_never_returns_cannot_delay_a_yield(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = 'text("asked"); await tools.block(); text("never");'
        started = await runtime.execute(request(source, ["block"]), YieldAfter(0.05))
        with trio.fail_after(SAFETY):  # hang guard; the deadline itself is 50 ms
            assert await started.initial_event() == Yielded([Text("asked")])
            assert await runtime.observe(started.cell_id, YieldAfter(0.05)) == Yielded([])
        assert delegate.cancelled == []  # the call is still in flight, unharmed
        assert await runtime.terminate(started.cell_id) == Terminated([])
        assert delegate.cancelled == ["tool-1"]


async def test_an_unobserved_cell_keeps_dispatching_sequential_calls(isolation: str) -> None:
    delegate = GateDelegate()
    async with SessionRuntime(delegate, config(isolation)) as runtime:
        source = """
            yield_control();
            let sum = 0;
            for (let i = 1; i <= 20; i++) sum += (await tools.echo({ i })).i;
            text(sum);
        """
        started = await yielded_cell(runtime, request(source, ["echo"]), YieldAfter(60))
        # Nobody observes now: the program must still run every call to the end.
        await settled(runtime, started.cell_id)
        calls = []
        while True:
            try:
                calls.append(delegate.started.receive_nowait().runtime_tool_call_id)
            except trio.WouldBlock:
                break
        assert calls == [f"tool-{i}" for i in range(1, 21)]
        assert await runtime.observe(started.cell_id, YieldAfter(60)) == Completed([Text("210")])


async def test_a_yield_window_counts_from_the_start_while_the_program_computes(
    isolation: str,
) -> None:
    # The program's `started` message only travels with its first batch, which this
    # program would send after a minute of computing: the window must not wait for it.
    source = "const t = Date.now(); while (Date.now() - t < 60000) {} text('late');"
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        started = await runtime.execute(request(source), YieldAfter(0.05))
        with trio.fail_after(SAFETY):  # hang guard; the window itself is 50 ms
            assert await started.initial_event() == Yielded([])
            assert await runtime.terminate(started.cell_id) == Terminated([])


@pytest.mark.parametrize(
    "source",
    [
        'text("phase 1"); while (true) {}',
        'text("a"); console.log("b"); text("c"); while (true) {}',
        'await tools.echo({}); text("after a call"); text("and more"); while (true) {}',
    ],
    ids=["first-item", "burst", "after-a-call"],
)
async def test_output_before_a_spin_reaches_the_yield(source: str, isolation: str) -> None:
    # Every item reaches the host as the program makes it, even when the program never
    # waits again: the yield that ends the window carries all of it, the terminate none.
    async with SessionRuntime(GateDelegate(), config(isolation)) as runtime:
        started = await runtime.execute(request(source, ["echo"]), YieldAfter(0.1))
        with trio.fail_after(SAFETY):  # hang guard; the window itself is 100 ms
            yielded = await started.initial_event()
            terminated = await runtime.terminate(started.cell_id)
        expected = [line.split('"')[1] for line in source.split(";") if '("' in line]
        assert yielded == Yielded([Text(text) for text in expected])
        assert terminated == Terminated([])
