"""`CodeModeSession`: ``terminate_all`` (an interrupted turn), ``check_programs`` and
approvals (``@tool(requires_approval=True)``, ``approve``/``deny``).

The interrupt follows openai/codex #51835 (every cell that has not ended is
terminated, background cells of earlier turns included; an ``exec``/``wait`` observing
one returns ``Script terminated``; a later ``wait`` gets ``exec cell <id> not
found``; stored values survive). ``check_programs`` and approvals have no reference
counterpart (they follow pydantic monty's pre-run check and Cloudflare codemode's
approvals): the texts they produce are the ones the calls themselves produce.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio
import trio.testing

from code_mode import Approval, CellFinished, CodeModeSession, Text, tool
from code_mode._facade.program_check import ProgramCheck
from code_mode.model_tools.error_texts import missing_cell_text

from .test_facade import SAFETY, add, body, gated, status

# -- terminate_all -------------------------------------------------------------------


async def test_terminate_all_ends_every_program_of_the_session() -> None:
    pushed: list[CellFinished] = []
    async with gated(on_finished=pushed.append) as (gate, cm):
        assert status(await cm.exec("store('kept', 'yes'); text('stored')")) == ("Script completed")
        # An earlier turn's program, still running in the background.
        background = await cm.exec('// @exec: {"yield_time_ms": 0}\nawait tools.gate();')
        assert status(background) == "Script running with cell ID 2"
        await gate.called.wait()
        results: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def this_turn() -> None:
                results.append(await cm.exec("text('spinning'); while (true) {}"))

            nursery.start_soon(this_turn)
            await trio.testing.wait_all_tasks_blocked()
            await cm.terminate_all()
        [observed] = results
        assert status(observed) == "Script terminated"
        for cell_id in ("2", "3"):
            missing = await cm.wait(cell_id)
            assert status(missing) == "Script failed"
            assert body(missing) == [Text("Script error:\n" + missing_cell_text(cell_id))]
        assert pushed == []  # programs the host ends are never pushed
        after = await cm.exec("text(load('kept'))")
        assert (status(after), body(after)) == ("Script completed", [Text("yes")])
        assert not gate.opened.is_set()  # the nested call was cancelled, not finished


# -- check_programs ------------------------------------------------------------------


@tool
async def shout(text: str, times: int = 1) -> str:
    """Repeat a text in capitals."""
    return text.upper() * times


CHECKED: list[tuple[str, str]] = [
    ("await tools.nope({});", "tool `nope` is not enabled in exec"),
    ("await tools['no-pe']();", "tool `no-pe` is not enabled in exec"),
    (
        "await tools.add({a: 1});",
        "invalid arguments for tool `add`: field `b`: missing required field",
    ),
    ("await tools.add();", "invalid arguments for tool `add`: field `a`: missing required field"),
    (
        "await tools.add({a: 1, b: 2, c: 3});",
        "invalid arguments for tool `add`: field `c`: unexpected field (allowed fields: a, b)",
    ),
    (
        "await tools.add({a: 'one', b: 2});",
        "invalid arguments for tool `add`: field `a`: expected integer, got string",
    ),
    (
        "const n = 2; await tools.shout({text: 'a', times: n, loud: true});",
        None,  # type: ignore[list-item]  # `times` is not a literal: it might fail first
    ),
    (
        "const n = 2; await tools.shout({loud: true, text: 'a', times: n});",
        "invalid arguments for tool `shout`: field `loud`: unexpected field "
        "(allowed fields: text, times)",
    ),
    ("await tools.add('x');", "tool `add` expects a JSON object for arguments"),
    ("await tools.add([1, 2]);", "tool `add` expects a JSON object for arguments"),
]


@pytest.mark.parametrize(("source", "expected"), CHECKED)
async def test_a_checked_program_fails_with_the_calls_own_text(
    source: str, expected: str | None
) -> None:
    """The text is the one the call produces when the program runs unchecked."""
    ran: list[str] = []

    @tool
    async def side_effect() -> None:
        """Record that a tool ran."""
        ran.append("ran")

    program = f"await tools.side_effect();\n{source}"
    with trio.fail_after(SAFETY):
        async with CodeModeSession([add, shout, side_effect], check_programs=True) as checked:
            result = await checked.exec(program)
        if expected is None:
            assert ran == ["ran"]
            return
        assert ran == []  # failed before any tool ran
        assert (status(result), body(result)) == (
            "Script failed",
            [Text(f"Script error:\n{expected}")],
        )
        async with CodeModeSession([add, shout, side_effect]) as unchecked:
            ran_unchecked = await unchecked.exec(program)
        assert body(ran_unchecked) == body(result)
        assert ran == ["ran"]


@pytest.mark.parametrize(
    "source",
    [
        "text(await tools.add({a: 1, b: 2}));",
        "try { await tools.nope(); } catch (e) { text(e); }",
        "await tools.nope().catch((e) => text(e));",
        "await Promise.allSettled([tools.nope()]);",
        "for await (const r of as_settled([tools.nope()])) text(r.status);",
        "const tools2 = tools; text(typeof tools2.nope);",  # not a call of `tools.x`
        "const {add} = tools; text(await add({a: 1, b: 2}));",
        "// tools.nope()\ntext('/* tools.nope() */ `${1}` tools.nope()');",
        "const b = 2; text(await tools.add({a: 1, b}));",
        "const o = {b: 2}; text(await tools.add({a: 1, ...o}));",
        "text(await tools.add({a: 1, b: 2, c: undefined}));",
        "text(typeof tools.toString());",
        "function f(tools) { return tools.nope(); } text('defined');",  # a local `tools`
    ],
)
async def test_what_the_check_lets_through(source: str) -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession([add], check_programs=True) as cm:
            assert status(await cm.exec(source)) == "Script completed"


def test_the_check_costs_little_per_exec() -> None:
    """Measured, not asserted against a deadline: the numbers go in docs/agent.md."""
    check = ProgramCheck([add, shout], [add.definition, shout.definition])
    program = "const r = await tools.add({a: 1, b: 2});\ntext(`sum ${r}`);\n" * 40
    started = time.perf_counter()
    for _ in range(100):
        assert check.error(program) is None
    per_exec_ms = (time.perf_counter() - started) * 10
    assert per_exec_ms < 1000  # a hang guard only


# -- approvals -----------------------------------------------------------------------


@tool(requires_approval=True)
async def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


AWAITING = (
    "Tool call tool-1 (`tools.delete_file`) is awaiting approval: the program waits at "
    "that call until the user approves or denies it."
)


async def test_an_approved_call_runs_and_the_program_goes_on() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession([delete_file]) as cm:
            started = await cm.exec(
                "text('before'); text(await tools.delete_file({path: '/tmp/x'})); text('after');"
            )
            assert status(started) == "Script running with cell ID 1"
            assert body(started) == [Text("before"), Text(AWAITING)]
            assert cm.awaiting_approval("1") == [
                Approval("1", "tool-1", "delete_file", {"path": "/tmp/x"})
            ]
            # A wait while the call is undecided returns at once, naming it again.
            again = await cm.wait("1", yield_time_ms=60_000)
            assert (status(again), body(again)) == (
                "Script running with cell ID 1",
                [Text(AWAITING)],
            )
            assert await cm.approve("1", "tool-1") is True
            assert await cm.approve("1", "tool-1") is False  # decided already
            done = await cm.wait("1", yield_time_ms=60_000)
            assert (status(done), body(done)) == (
                "Script completed",
                [Text("deleted /tmp/x"), Text("after")],
            )
            assert cm.awaiting_approval("1") == []


async def test_a_denied_call_rejects_with_the_reason_as_a_plain_string() -> None:
    pushed: list[CellFinished] = []
    arrived = trio.Event()

    def on_finished(finished: CellFinished) -> None:
        pushed.append(finished)
        arrived.set()

    with trio.fail_after(SAFETY):
        async with CodeModeSession([delete_file], on_finished=on_finished) as cm:
            started = await cm.exec(
                "try { await tools.delete_file({path: '/'}); }"
                " catch (e) { text(typeof e + ': ' + e); }"
                " await tools.delete_file({path: '/etc'});"
            )
            assert status(started) == "Script running with cell ID 1"
            assert await cm.deny("1", "tool-1", "not the root directory") is True
            # A wait returns as soon as the second call waits in turn.
            again = await cm.wait("1", yield_time_ms=60_000)
            assert status(again) == "Script running with cell ID 1"
            assert body(again)[:2] == [
                Text("string: not the root directory"),
                Text(AWAITING.replace("tool-1", "tool-2")),
            ]
            [second] = cm.awaiting_approval("1")
            assert second.call_id == "tool-2"
            assert await cm.deny("1", "tool-2", "no") is True  # nothing observes it now
            await arrived.wait()  # the end is pushed as usual
            [finished] = pushed
            assert status(finished.items) == "Script failed"
            assert body(finished.items) == [Text("Script error:\nno")]


async def test_terminating_a_program_drops_its_waiting_calls() -> None:
    with trio.fail_after(SAFETY):
        async with CodeModeSession([delete_file]) as cm:
            await cm.exec("await tools.delete_file({path: 'x'});")
            assert len(cm.awaiting_approval("1")) == 1
            assert status(await cm.wait("1", terminate=True)) == "Script terminated"
            assert cm.awaiting_approval("1") == []
            assert await cm.approve("1", "tool-1") is False
