"""Fuzzing the model-facing entry points: whatever the model sends, ``exec``/``wait``
return a result (``Script failed`` for bad input) and never raise.

Inputs mix the shapes the façade decodes (pragma lines, ``{"code": ...}`` objects,
``wait`` argument objects and their JSON text) with what used to break it: lone
surrogates, integers of thousands of digits, numbers too large for a float.
"""

from __future__ import annotations

import json
from typing import Any

import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from code_mode import OutputItem, RuntimeConfig, Text
from code_mode._facade import CodeModeSession, resolve_yield_time_ms
from code_mode.model_tools.formatting import format_result
from code_mode.model_tools.pragma import PragmaError, parse_exec_input

# Any code point, lone surrogates included.
TEXT = st.text(st.characters(exclude_categories=()), max_size=40)
HUGE_INT = st.one_of(
    st.integers(), st.just(10**400), st.just(-(10**400)), st.builds(lambda: 10**5000 - 1)
)
SCALAR = st.one_of(st.none(), st.booleans(), HUGE_INT, st.floats(), TEXT)
JSONISH = st.recursive(
    SCALAR,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=8,
)
WAIT_KEYS = st.sampled_from(["cell_id", "yield_time_ms", "max_tokens", "terminate", "x"])
WAIT_ARGS = st.dictionaries(WAIT_KEYS, JSONISH, max_size=4)


BIG = "\u0000big\u0000"


def _mark_big(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**4000:
        return BIG
    if isinstance(value, list):
        return [_mark_big(item) for item in value]
    if isinstance(value, dict):
        return {key: _mark_big(item) for key, item in value.items()}
    return value


def dumps(value: Any) -> str:
    """JSON text as a model could write it: 5000-digit integers (which Python's json
    will not write) and infinities (as ``Infinity``) included."""
    text = json.dumps(_mark_big(value), ensure_ascii=False)
    return text.replace(json.dumps(BIG), "9" * 5000)


PRAGMA = st.builds(
    lambda directive, source: f"// @exec: {directive}\n{source}",
    st.one_of(TEXT, JSONISH.map(dumps), st.dictionaries(TEXT, JSONISH, max_size=2).map(dumps)),
    st.one_of(TEXT, st.just("text(1)"), TEXT.map(lambda t: f"import x from {dumps(t)};")),
)
EXEC_ARGS = st.one_of(
    TEXT,
    PRAGMA,
    st.builds(lambda code, extra: {"code": code, **extra}, PRAGMA | TEXT, WAIT_ARGS),
    JSONISH.map(dumps),
    st.builds(lambda code, n: dumps({"code": code, "n": n}), PRAGMA | TEXT, HUGE_INT),
)
CALLS = st.one_of(
    st.tuples(st.just("exec"), EXEC_ARGS),
    st.tuples(st.just("wait"), WAIT_ARGS | WAIT_ARGS.map(dumps) | TEXT),
    st.tuples(st.just("wait"), st.builds(lambda c: {"cell_id": c, "terminate": True}, TEXT)),
)


def assert_result(items: list[OutputItem]) -> None:
    assert items and isinstance(items[0], Text)
    assert items[0].text.startswith("Script ")
    for item in items:
        if isinstance(item, Text):
            item.text.encode("utf-8")  # well-formed: any UTF-8 API can carry it


@settings(max_examples=300, deadline=None)
@given(EXEC_ARGS.filter(lambda value: isinstance(value, str)))
def test_parsing_exec_input_raises_only_pragma_errors(text: str) -> None:
    try:
        parse_exec_input(text)
    except PragmaError as error:
        assert_result(format_result(str(error), wall_time=0.0, cell_id=""))


@settings(max_examples=300, deadline=None)
@given(HUGE_INT, st.one_of(st.none(), HUGE_INT))
def test_any_yield_time_resolves(requested: int, cap: int | None) -> None:
    resolved = resolve_yield_time_ms(requested, cap)
    assert 0 <= resolved / 1000 < float("inf")


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(CALLS, min_size=1, max_size=8), st.sampled_from(["process", "thread"]))
# Found by this test: a cell id with more digits than str() converts.
@example([("wait", {"cell_id": 10**5000})], "thread")
def test_handle_call_never_raises(calls: list[tuple[str, Any]], isolation: str) -> None:
    async def main() -> None:
        config = RuntimeConfig(isolation=isolation)  # type: ignore[arg-type]
        with trio.fail_after(60):
            async with CodeModeSession(config=config, max_yield_time_ms=100) as session:
                for name, arguments in calls:
                    assert_result(await session.handle_call(name, arguments))
                    if name == "wait" and isinstance(arguments, dict):
                        cell_id = arguments.get("cell_id")
                        if isinstance(cell_id, str):
                            assert_result(await session.wait(cell_id, yield_time_ms=10**400))

    trio.run(main)
