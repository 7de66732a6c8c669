"""The ``exec`` input: optional ``// @exec:`` pragma line, then JavaScript."""

from __future__ import annotations

import pytest

from code_mode.model_tools.pragma import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_YIELD_TIME_MS,
    ExecInput,
    PragmaError,
    parse_exec_input,
)

EMPTY = (
    "exec expects raw JavaScript source text (non-empty). Provide JS only, optionally with "
    'first-line `// @exec: {"yield_time_ms": 10000, "max_output_tokens": 1000}`.'
)
NO_CODE = "exec pragma must be followed by JavaScript source on subsequent lines"
NOT_OBJECT = (
    "exec pragma must be a JSON object with supported fields `yield_time_ms` and "
    "`max_output_tokens`"
)
INVALID_JSON_PREFIX = (
    "exec pragma must be valid JSON with supported fields `yield_time_ms` and `max_output_tokens`: "
)
BAD_VALUE = (
    "exec pragma fields `yield_time_ms` and `max_output_tokens` must be non-negative safe integers"
)


def test_defaults() -> None:
    assert DEFAULT_YIELD_TIME_MS == 10_000
    assert DEFAULT_MAX_OUTPUT_TOKENS == 10_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("text('hi')", ExecInput("text('hi')")),
        ("  text(1)\n", ExecInput("  text(1)\n")),
        (
            '// @exec: {"yield_time_ms": 10}\ntext("hi")',
            ExecInput('text("hi")', yield_time_ms=10),
        ),
        (
            '// @exec: {"yield_time_ms": 0, "max_output_tokens": 1000}\na\nb',
            ExecInput("a\nb", yield_time_ms=0, max_output_tokens=1000),
        ),
        (
            '// @exec: {"max_output_tokens": 5}\r\ntext(1)\r\n',
            ExecInput("text(1)\r\n", max_output_tokens=5),
        ),
        (
            '   \t// @exec:{"yield_time_ms":1}   \nx',
            ExecInput("x", yield_time_ms=1),
        ),
        ("// @exec: {}\nx", ExecInput("x")),
        (
            '// @exec: {"yield_time_ms": null, "max_output_tokens": null}\nx',
            ExecInput("x"),
        ),
        (
            '// @exec: {"yield_time_ms": 9007199254740991}\nx',
            ExecInput("x", yield_time_ms=2**53 - 1),
        ),
        # Not a pragma: wrong prefix, or the prefix on a later line.
        ("// @execute: {}\nx", ExecInput("// @execute: {}\nx")),
        ("//@exec: {}\nx", ExecInput("//@exec: {}\nx")),
        ('x\n// @exec: {"bogus": 1}', ExecInput('x\n// @exec: {"bogus": 1}')),
        # The source is kept verbatim after the first line break.
        ("// @exec: {}\n\n  indented\n", ExecInput("\n  indented\n")),
    ],
)
def test_success(text: str, expected: ExecInput) -> None:
    assert parse_exec_input(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", EMPTY),
        ("  \n\t\r\n ", EMPTY),
        ("// @exec: {}", NO_CODE),
        ("// @exec: {}\n", NO_CODE),
        ("// @exec: {}\r\n  \n", NO_CODE),
        ("// @exec: not json", None),  # no code takes precedence over bad JSON
        ("// @exec:\nx", NOT_OBJECT),
        ("// @exec:   \r\nx", NOT_OBJECT),
        ("// @exec: []\nx", NOT_OBJECT),
        ("// @exec: 5\nx", NOT_OBJECT),
        ('// @exec: "a"\nx', NOT_OBJECT),
        ("// @exec: null\nx", NOT_OBJECT),
        (
            '// @exec: {"yield_time_ms": 1, "timeout": 2, "zzz": 3}\nx',
            "exec pragma only supports `yield_time_ms` and `max_output_tokens`; got `timeout`",
        ),
        (
            '// @exec: {"bogus": "x"}\nx',
            "exec pragma only supports `yield_time_ms` and `max_output_tokens`; got `bogus`",
        ),
        ('// @exec: {"yield_time_ms": -1}\nx', BAD_VALUE),
        ('// @exec: {"yield_time_ms": 1.5}\nx', BAD_VALUE),
        ('// @exec: {"yield_time_ms": 1.0}\nx', BAD_VALUE),
        ('// @exec: {"max_output_tokens": "10"}\nx', BAD_VALUE),
        ('// @exec: {"max_output_tokens": true}\nx', BAD_VALUE),
        ('// @exec: {"max_output_tokens": [1]}\nx', BAD_VALUE),
        ('// @exec: {"yield_time_ms": 9007199254740992}\nx', BAD_VALUE),
        ('// @exec: {"max_output_tokens": 1e400}\nx', BAD_VALUE),
    ],
)
def test_errors(text: str, message: str | None) -> None:
    with pytest.raises(PragmaError) as info:
        parse_exec_input(text)
    assert str(info.value) == (message if message is not None else NO_CODE)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("directive", ["{", "{yield_time_ms: 1}", "{'a': 1}", '{"a": 1,}', "nope"])
def test_invalid_json_has_parser_detail(directive: str) -> None:
    with pytest.raises(PragmaError) as info:
        parse_exec_input(f"// @exec: {directive}\nx")
    message = str(info.value)
    assert message.startswith(INVALID_JSON_PREFIX)
    assert len(message) > len(INVALID_JSON_PREFIX)


def test_unknown_key_checked_before_values() -> None:
    with pytest.raises(PragmaError) as info:
        parse_exec_input('// @exec: {"yield_time_ms": -5, "other": 1}\nx')
    assert str(info.value).endswith("got `other`")
