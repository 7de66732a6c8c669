"""Decoding a large batch on a thread (``_engine/_decode.py``): the same values as the
C decoder, the same refusals, a depth and a budget of host bytes checked as it goes."""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import pytest

from code_mode._engine._bridge import MessageValidator, ProtocolViolation, ToolCallRequested
from code_mode._engine._decode import (
    INLINE_BATCH_CHARS,
    TooDeep,
    TooLarge,
    decode_bounded,
    decode_inline,
    host_bytes,
    text_depth_exceeds,
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
