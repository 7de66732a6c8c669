"""Parsing the input of the ``exec`` tool: JavaScript source plus an optional pragma.

``exec`` is a freeform tool: the model sends raw JavaScript, not JSON, so it never has
to escape quotes and newlines. The two per-call options travel in an optional first
line comment, which is still valid JavaScript::

    // @exec: {"yield_time_ms": 10000, "max_output_tokens": 1000}
    const r = await tools.search({ q: "trio" });

The error messages are exact strings, the reference implementation's: models were
trained on them and correct their input when they read them.
"""

from __future__ import annotations

import json
from typing import Final

import attrs

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_YIELD_TIME_MS",
    "MAX_SAFE_INTEGER",
    "PRAGMA_PREFIX",
    "ExecInput",
    "ExecInputError",
    "PragmaError",
    "parse_exec_input",
]

PRAGMA_PREFIX: Final = "// @exec:"
"""What the first line starts with (after optional leading whitespace) to be a pragma."""

DEFAULT_YIELD_TIME_MS: Final = 10_000
"""``yield_time_ms`` when the pragma does not give one: ``exec`` returns after 10 s if
the program is still running, and the model continues with ``wait``."""

DEFAULT_MAX_OUTPUT_TOKENS: Final = 10_000
"""``max_output_tokens`` when the pragma does not give one."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: larger values cannot be written exactly as
JSON numbers by a JS-minded model, so they are refused rather than silently rounded."""

_EMPTY_INPUT: Final = (
    "exec expects raw JavaScript source text (non-empty). Provide JS only, optionally with "
    'first-line `// @exec: {"yield_time_ms": 10000, "max_output_tokens": 1000}`.'
)
_NO_CODE: Final = "exec pragma must be followed by JavaScript source on subsequent lines"
_NOT_OBJECT: Final = (
    "exec pragma must be a JSON object with supported fields `yield_time_ms` and "
    "`max_output_tokens`"
)
_INVALID_JSON: Final = (
    "exec pragma must be valid JSON with supported fields `yield_time_ms` and "
    "`max_output_tokens`: {detail}"
)
_UNKNOWN_KEY: Final = (
    "exec pragma only supports `yield_time_ms` and `max_output_tokens`; got `{key}`"
)
_BAD_VALUE: Final = (
    "exec pragma fields `yield_time_ms` and `max_output_tokens` must be non-negative safe integers"
)
_FIELDS: Final = ("yield_time_ms", "max_output_tokens")


class ExecInputError(ValueError):
    """The ``exec`` input cannot be run; ``str(error)`` is the exact message to return
    to the model as a failed result. Catch this one to handle every malformed ``exec``
    input: a bad pragma (:class:`PragmaError`) or JSON arguments without a string
    ``code`` (:class:`~.adapters.ExecArgumentsError`)."""


class PragmaError(ExecInputError):
    """The ``// @exec:`` first line of an ``exec`` input was rejected."""


@attrs.frozen
class ExecInput:
    """A parsed ``exec`` input.

    ``source`` is the program to run. ``yield_time_ms`` and ``max_output_tokens`` are
    ``None`` when the pragma did not set them, so the caller can tell "default" from an
    explicit value and apply its own defaults (:data:`DEFAULT_YIELD_TIME_MS`,
    :data:`DEFAULT_MAX_OUTPUT_TOKENS`) or session limits.
    """

    source: str
    yield_time_ms: int | None = None
    max_output_tokens: int | None = None


def parse_exec_input(text: str) -> ExecInput:
    """Split ``exec`` input into its optional pragma and the JavaScript source.

    The rules, checked in this order (the reference implementation's):

    1. input that is empty or only whitespace is refused;
    2. the input is split at its first ``\\n``; if the first line, left-trimmed, does not
       start with ``// @exec:``, the whole input is the source (no pragma);
    3. a pragma with nothing but whitespace after it is refused (there is no program);
    4. an empty directive (the text after the prefix, trimmed) is not a JSON object;
    5. the directive must parse as JSON;
    6. ... and be a JSON object;
    7. its keys must be ``yield_time_ms`` / ``max_output_tokens`` (the first other key,
       in the order written, is reported);
    8. each value must be ``null`` (= not given) or an integer in
       ``0 ..= 2**53 - 1`` (booleans and floats such as ``1.0`` are refused, as a
       strict JSON-to-integer decoder would). Every bad value, too large ones
       included, gets one message (the reference implementation has a separate
       per-field message for values above ``2**53 - 1``).

    On success the source is everything after the first ``\\n``, so the program's
    line 1 is the line after the pragma. A ``\\r`` of a ``\\r\\n`` line end stays on
    the pragma line, where trimming removes it.

    Raises :class:`PragmaError` with the exact message of the first rule broken.
    """
    if not text.strip():
        raise PragmaError(_EMPTY_INPUT)
    first_line, _, rest = text.partition("\n")
    stripped = first_line.lstrip()
    if not stripped.startswith(PRAGMA_PREFIX):
        return ExecInput(source=text)
    if not rest.strip():
        raise PragmaError(_NO_CODE)
    directive = stripped[len(PRAGMA_PREFIX) :].strip()
    if not directive:
        raise PragmaError(_NOT_OBJECT)
    try:
        value = json.loads(directive)
    except ValueError as error:  # a decode error, or an integer of 5000 digits
        raise PragmaError(_INVALID_JSON.format(detail=error)) from None
    if not isinstance(value, dict):
        raise PragmaError(_NOT_OBJECT)
    for key in value:
        if key not in _FIELDS:
            raise PragmaError(_UNKNOWN_KEY.format(key=key))
    yield_time_ms = _field(value.get("yield_time_ms"))
    max_output_tokens = _field(value.get("max_output_tokens"))
    return ExecInput(source=rest, yield_time_ms=yield_time_ms, max_output_tokens=max_output_tokens)


def _field(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PragmaError(_BAD_VALUE)
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise PragmaError(_BAD_VALUE)
    return value
