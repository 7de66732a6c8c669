"""Decoding a large batch in steps (``_engine/_decode.py``): the same values as the C
decoder, the same refusals, a depth and a budget of host bytes checked as it goes, and
a yield every few hundred values (so that it runs in slices of the trio thread's time,
see ``test_slices.py``)."""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import pytest

from code_mode._engine._bridge import (
    MEMBER_CHUNK_CHARS,
    Finished,
    MessageValidator,
    ProtocolViolation,
    ToolCallRequested,
    member_steps,
)
from code_mode._engine._decode import (
    INLINE_BATCH_CHARS,
    STEP_VALUES,
    Steps,
    TooDeep,
    TooLarge,
    decode_bounded,
    decode_inline,
    decode_steps,
    host_bytes,
    host_bytes_steps,
    text_depth_exceeds,
    text_depth_steps,
)


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice([1, -0, 2.5e10, -3.25, 'a"b\\\u00e9\U0001f600', "", None, True, 10**20])
    if roll < 0.65:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice("abc\u00e9"): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_it_decodes_what_the_c_decoder_decodes() -> None:
    rng = random.Random(26)
    for _ in range(2000):
        text = json.dumps(
            _value(rng), indent=rng.choice([None, 1]), ensure_ascii=rng.random() < 0.5
        )
        expected = json.loads(text)
        assert decode_bounded(text, max_depth=100, max_bytes=1 << 30) == expected
        assert decode_bounded(text, max_depth=100, max_bytes=1 << 30, build=False) is None


@pytest.mark.parametrize(
    "text", ["[1,]", '{"a":1,}', "[", "", "1 2", "[NaN]", "[Infinity]", "[1e999]", "{1:2}", "tru"]
)
@pytest.mark.parametrize("build", [True, False])
def test_it_refuses_what_is_not_strict_json(text: str, build: bool) -> None:
    with pytest.raises(ValueError):
        decode_bounded(text, max_depth=10, max_bytes=1 << 20, build=build)


@pytest.mark.parametrize("build", [True, False])
def test_depth_is_checked_without_recursion(build: bool) -> None:
    assert decode_bounded("[" * 10 + "]" * 10, max_depth=10, max_bytes=1 << 20) is not None
    with pytest.raises(TooDeep):
        decode_bounded("[" * 11 + "]" * 11, max_depth=10, max_bytes=1 << 20, build=build)
    with pytest.raises(TooDeep):  # far deeper than Python's recursion limit
        decode_bounded("[" * 100_000, max_depth=128, max_bytes=1 << 30, build=build)
    assert text_depth_exceeds('{"a":[[1]]}', 2)
    assert not text_depth_exceeds('{"a":[[1]]}', 3)


def test_the_budget_counts_objects_not_characters() -> None:
    arrays = "[" + ",".join(["[]"] * 100_000) + "]"  # 300 KB of JSON
    value = decode_bounded(arrays, max_depth=4, max_bytes=1 << 30)
    # What it holds on the host, within 10 % of what sys.getsizeof says.
    actual = sys.getsizeof(value) + sum(sys.getsizeof(item) for item in value)
    assert 0.9 * actual <= host_bytes(value) <= 1.3 * actual
    assert host_bytes(value) > 20 * len(arrays)
    with pytest.raises(TooLarge):
        decode_bounded(arrays, max_depth=4, max_bytes=1 << 20, build=False)
    # A string's characters are bounded by the text itself: only its header counts.
    text = json.dumps(["x" * 1_000_000])
    assert decode_bounded(text, max_depth=4, max_bytes=1024) == ["x" * 1_000_000]


def test_small_or_text_heavy_batches_are_decoded_inline() -> None:
    assert decode_inline("[" + "[]," * (INLINE_BATCH_CHARS // 3 - 1) + "[]]")
    assert not decode_inline("[" + "[]," * 10_000 + "[]]")
    assert decode_inline(json.dumps([{"t": "text", "text": "x" * 200_000}]))
    assert not decode_inline(json.dumps([{"t": "text", "text": "x" * 300_000}]))


def _validator(max_host_bytes: int = 1 << 24) -> MessageValidator:
    return MessageValidator(
        tool_kinds={"echo": "function"}, max_json_depth=8, max_host_bytes=max_host_bytes
    )


def test_a_large_batch_gives_the_events_a_small_one_gives() -> None:
    payload = {"a": [[1, "x"]] * 20_000}
    messages = [{"t": "started"}, {"t": "tool", "id": "tool-1", "name": "echo", "input": payload}]
    text = json.dumps(messages)
    assert not decode_inline(text)
    events = _validator().parse_batch(text)
    assert events[1] == ToolCallRequested("tool-1", "echo", payload, True)
    assert isinstance(events[1], ToolCallRequested)
    assert events[1].host_bytes == host_bytes(payload)


def test_a_large_batch_over_the_budget_or_too_deep_is_a_violation() -> None:
    started = '[{"t":"started"},{"t":"tool","id":"tool-1","name":"echo","input":'
    arrays = started + '{"a":[' + ",".join(["[]"] * 100_000) + "]}}]"
    with pytest.raises(ProtocolViolation, match=r"RuntimeConfig\.max_tool_input_bytes"):
        _validator(max_host_bytes=1 << 20).parse_batch(arrays)
    deep = started + '{"a":' + "[" * 8 + "]" * 8 + "}, " + " " * 10_000 + '"x":1}]'
    with pytest.raises(ProtocolViolation, match=r"RuntimeConfig\.max_json_depth"):
        _validator().parse_batch(deep)


def _yields(steps: Steps[Any]) -> tuple[int, Any]:
    """How many times ``steps`` yield, and their result."""
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return count, stop.value
        count += 1


def test_the_steps_yield_every_few_hundred_values() -> None:
    # 100 000 empty arrays (each a value, and a container of nothing), then one object
    # of 20 000 keys and one list of 20 000 numbers.
    value: Any = [[] for _ in range(100_000)] + [{str(i): i for i in range(20_000)}]
    value.append(list(range(20_000)))
    text = json.dumps(value)
    least = 140_000 // STEP_VALUES - 1
    for build in (False, True):
        count, decoded = _yields(decode_steps(text, max_depth=4, max_bytes=1 << 30, build=build))
        assert count >= least
        assert decoded == (value if build else None)
    count, size = _yields(host_bytes_steps(value))
    assert count >= least
    assert size == host_bytes(value)
    count, deep = _yields(text_depth_steps(text, 1))
    assert deep is True and count == 0  # (refused at the second bracket)
    count, deep = _yields(text_depth_steps(text, 2))
    assert deep is False and count >= least


def test_a_stored_value_is_encoded_in_steps_as_json_dumps_encodes_it() -> None:
    # Every character the encoder escapes, wide characters, and a lone surrogate, at
    # the edges of the chunks too.
    pieces = ['"', "\\", "\n", "\x00", "\x1f", "é", "\U0001f600", "\ud800", "x" * 1000]
    rng = random.Random(26)
    text = "".join(rng.choice(pieces) for _ in range(3 * MEMBER_CHUNK_CHARS // 100))
    text += "\ud83d" * (MEMBER_CHUNK_CHARS - len(text) % MEMBER_CHUNK_CHARS) + "\ude00"
    for key in ("k", 'a"\u00e9'):
        count, member = _yields(member_steps(key, text))
        expected = json.dumps(key, ensure_ascii=False) + ":" + json.dumps(text, ensure_ascii=False)
        assert member == expected
        assert count == -(-len(text) // MEMBER_CHUNK_CHARS)


def test_a_finished_program_brings_its_members_encoded() -> None:
    for size in (1000, 300_000):  # decoded at once, and in steps
        writes = {"k": json.dumps(["x" * size, '"']), "j": "1"}
        text = json.dumps([{"t": "started"}, {"t": "done", "error": None, "writes": writes}])
        assert decode_inline(text) is (size == 1000)
        events = _validator().parse_batch(text)
        assert events[1] == Finished(None, writes)
        assert isinstance(events[1], Finished)
        assert events[1].members == {
            key: json.dumps(key) + ":" + json.dumps(value, ensure_ascii=False)
            for key, value in writes.items()
        }
