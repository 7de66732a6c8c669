"""``as_settled`` and ``stream_settled``, the reference's promise combinators.

Ported from openai/codex ``codex-rs/code-mode-runtime/tests/settled.rs`` (mirror
wallentx/codex-termux, commit 5ec9ff77f282; the runtime's ``settled.js`` at 842301cbef73),
one test per upstream test, with the same programs and the same expected output: each
program prints one JSON value with ``text``.
"""

from __future__ import annotations

import json

import pytest
import trio

from code_mode import JSON, Terminated, YieldAfter, Yielded

from ..js_support import SAFETY, function_tool, request, run, session


async def _output(isolation: str, source: str) -> JSON:
    """The one JSON value the program printed (upstream ``assert_output``)."""
    event = await run(isolation, source)
    assert event.error_text is None, event.error_text
    [item] = event.content_items
    parsed: JSON = json.loads(item.text)
    return parsed


async def test_preserves_settlement_order_before_and_during_iteration(isolation: str) -> None:
    source = """
const resolve = [];
const results = as_settled(Array.from({length: 4}, (_, index) =>
    new Promise(done => { resolve[index] = done; })));
resolve[2]("two");
await Promise.resolve();
resolve[0]("zero");
await Promise.resolve();
const seen = [];
for await (const result of results) {
    seen.push(result);
    if (seen.length === 1) {
        resolve[3]("three");
        resolve[1]("one");
        await Promise.resolve();
    }
}
text(seen);
"""
    assert await _output(isolation, source) == [
        {"index": 2, "status": "fulfilled", "value": "two"},
        {"index": 0, "status": "fulfilled", "value": "zero"},
        {"index": 3, "status": "fulfilled", "value": "three"},
        {"index": 1, "status": "fulfilled", "value": "one"},
    ]


async def test_accepts_iterables_values_thenables_and_duplicate_promises(isolation: str) -> None:
    source = """
const shared = Promise.resolve("shared");
function* inputs() {
    yield 42;
    yield {then(resolve) { resolve("thenable"); }};
    yield shared;
    yield shared;
    yield Promise.reject({message: "failed"});
    yield {get then() { throw "getter failed"; }};
}
const seen = [];
for await (const result of as_settled(inputs())) seen.push(result);
text(seen.sort((a, b) => a.index - b.index));
"""
    assert await _output(isolation, source) == [
        {"index": 0, "status": "fulfilled", "value": 42},
        {"index": 1, "status": "fulfilled", "value": "thenable"},
        {"index": 2, "status": "fulfilled", "value": "shared"},
        {"index": 3, "status": "fulfilled", "value": "shared"},
        {"index": 4, "status": "rejected", "reason": {"message": "failed"}},
        {"index": 5, "status": "rejected", "reason": "getter failed"},
    ]


async def test_preserves_map_keys_and_completes_empty_inputs(isolation: str) -> None:
    source = """
const seen = [];
await stream_settled([], result => seen.push(result));
for await (const result of as_settled(new Map())) seen.push(result);
await stream_settled(new Map([
    ["success", 7],
    ["failure", Promise.reject("failed")],
]), result => seen.push(result));
text(seen);
"""
    assert await _output(isolation, source) == [
        {"index": "success", "status": "fulfilled", "value": 7},
        {"index": "failure", "status": "rejected", "reason": "failed"},
    ]


async def test_awaits_each_callback_including_rejected_inputs(isolation: str) -> None:
    source = """
const seen = [];
await stream_settled([Promise.reject("failed"), 2], async result => {
    seen.push(result);
    await new Promise(resolve => setTimeout(resolve, 1));
    seen.push(["callback finished", result.index]);
});
seen.push("stream finished");
text(seen);
"""
    assert await _output(isolation, source) == [
        {"index": 0, "status": "rejected", "reason": "failed"},
        ["callback finished", 0],
        {"index": 1, "status": "fulfilled", "value": 2},
        ["callback finished", 1],
        "stream finished",
    ]


async def test_propagates_callback_errors_and_closes_early_iterations(isolation: str) -> None:
    source = """
const seen = [];
const failure = new Error("callback failed");
try {
    await stream_settled([1, 2], async result => {
        seen.push(result);
        await new Promise(resolve => setTimeout(resolve, 1));
        throw failure;
    });
} catch (error) {
    seen.push(error === failure);
}
const results = as_settled([3, new Promise(() => {}), Promise.reject("unconsumed")]);
for await (const result of results) {
    seen.push(result);
    break;
}
seen.push(await results.next());
text(seen);
"""
    assert await _output(isolation, source) == [
        {"index": 0, "status": "fulfilled", "value": 1},
        True,
        {"index": 0, "status": "fulfilled", "value": 3},
        {"done": True},
    ]


async def test_preserves_identity_of_keys_values_and_rejections(isolation: str) -> None:
    source = """
const key = {};
const value = {method() { return 7; }};
value.self = value;
const failure = new Error("failed");
const seen = [];
await stream_settled(new Map([
    [key, Promise.resolve(value)],
    [failure, Promise.reject(failure)],
]), result => {
    seen.push(result.status === "fulfilled"
        ? result.index === key && result.value === value && result.value.self === value
            && result.value.method() === 7
        : result.index === failure && result.reason === failure);
});
text(seen);
"""
    assert await _output(isolation, source) == [True, True]


@pytest.mark.parametrize(
    "source",
    [
        "for await (const result of as_settled([new Promise(() => {})])) text(result);",
        "await stream_settled([new Promise(() => {})], text);",
    ],
)
async def test_terminates_helpers_waiting_for_unsettled_inputs(isolation: str, source: str) -> None:
    """A cell whose helper waits on an input that never settles yields (the program
    cannot end), and terminating it ends it ``Terminated`` with no output."""
    async with session(isolation) as runtime:
        with trio.fail_after(SAFETY):
            started = await runtime.execute(request(source), YieldAfter(0.05))
            assert await started.initial_event() == Yielded([])
            assert await runtime.terminate(started.cell_id) == Terminated([])


# Beyond upstream's tests: what the issue and the docs promise.


async def test_a_non_function_callback_is_a_type_error(isolation: str) -> None:
    source = """
const seen = [];
for (const emit of [undefined, 1, "text"]) {
    try { await stream_settled([1], emit); } catch (e) {
        seen.push([e instanceof TypeError, e.message]);
    }
}
text(seen);
"""
    assert await _output(isolation, source) == [
        [True, "stream_settled requires a callback"],
        [True, "stream_settled requires a callback"],
        [True, "stream_settled requires a callback"],
    ]


async def test_break_does_not_cancel_a_tool_call(isolation: str) -> None:
    """Closing the iterator drops later results but cancels nothing: the tool call
    that was still running completes (the program awaits it itself afterwards)."""
    source = """
const slow = tools.echo({n: 2});
for await (const r of as_settled([1, slow])) { text(r.index); break; }
text((await slow).n);
"""
    event = await run(isolation, source, [function_tool("echo")])
    assert [item.text for item in event.content_items] == ["0", "2"]


async def test_inputs_are_observed_once_and_tampering_breaks_only_the_program(
    isolation: str,
) -> None:
    """Each input's ``then`` is read once; a program that replaces
    ``Promise.prototype.then`` and the array iterator afterwards still gets results."""
    source = """
let reads = 0;
const thenable = { get then() { reads += 1; return (resolve) => resolve("t"); } };
const results = as_settled([thenable]);
Promise.prototype.then = () => { throw "tampered"; };
const seen = [];
for await (const r of results) seen.push(r.value);
seen.push(reads);
text(seen);
"""
    assert await _output(isolation, source) == ["t", 1]
