"""Reading ``exec`` and ``wait`` arguments as any LLM API delivers them.

An API with free-text tools (OpenAI's custom tools) sends ``exec`` the raw source;
JSON-only APIs (Anthropic, MCP) send ``{"code": ...}``, as an object or as its JSON
text; ``wait`` always takes JSON. The functions here turn each form into what the
session needs, and name what is wrong in words the model can act on, since the error
text becomes the failed result it reads. (Split from :mod:`.adapters`, which
re-exports every name, so that each module stays one concern.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .pragma import DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_YIELD_TIME_MS, ExecInputError

__all__ = [
    "EXEC_CODE_ARGUMENT",
    "ExecArgumentsError",
    "WaitArgumentsError",
    "exec_source_from_arguments",
    "exec_source_from_call",
    "wait_arguments_from_call",
]

EXEC_CODE_ARGUMENT: Final = "code"
"""The string argument that carries the source where ``exec`` must take JSON."""


class ExecArgumentsError(ExecInputError):
    """JSON ``exec`` arguments without a string ``code`` field."""


def exec_source_from_arguments(arguments: Mapping[str, Any] | str) -> str:
    """Extract the ``exec`` input from JSON arguments (Anthropic, MCP).

    ``arguments`` is the decoded object or its JSON text. The result goes to
    :func:`~.pragma.parse_exec_input` exactly like a freeform input. Raises
    :class:`ExecArgumentsError` when there is no string ``code``; like a bad pragma's
    :class:`~.pragma.PragmaError` it is an :class:`~.pragma.ExecInputError`, so a host
    handles every malformed ``exec`` input in one ``except``.
    """
    message = f"exec expects JSON arguments with a string `{EXEC_CODE_ARGUMENT}` field"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:  # a decode error, or an integer of 5000 digits
            raise ExecArgumentsError(message) from None
    if not isinstance(arguments, Mapping):
        raise ExecArgumentsError(message)
    code = arguments.get(EXEC_CODE_ARGUMENT)
    if not isinstance(code, str):
        raise ExecArgumentsError(message)
    return code


def exec_source_from_call(arguments: Mapping[str, Any] | str) -> str:
    """The ``exec`` input of a call as any API delivers it: the raw source (a freeform
    tool's input), or ``{"code": ...}`` as an object or as its JSON text (JSON-only
    APIs). JSON text of an object cannot be a valid program (``{"code": ...}`` is a
    syntax error in JavaScript), so no program is misread. Raises
    :class:`ExecArgumentsError` for an object without a string ``code``."""
    if not isinstance(arguments, str):
        return exec_source_from_arguments(arguments)
    text = arguments.strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            decoded = json.loads(text)
        except ValueError:  # a decode error, or an integer of 5000 digits
            return arguments
        if isinstance(decoded, dict) and isinstance(decoded.get(EXEC_CODE_ARGUMENT), str):
            return exec_source_from_arguments(decoded)
    return arguments


class WaitArgumentsError(ValueError):
    """``wait`` arguments that cannot be served; the message is the failed result's."""


def wait_arguments_from_call(arguments: Mapping[str, Any] | str) -> tuple[str, int, int, bool]:
    """``wait`` arguments as any API delivers them (an object or its JSON text), as
    ``(cell_id, yield_time_ms, max_tokens, terminate)``. Unknown keys are ignored; a
    numeric ``cell_id`` is accepted as its decimal string. Raises
    :class:`WaitArgumentsError` (``failed to parse function arguments: ...``)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as error:  # a decode error, or an integer of 5000 digits
            raise WaitArgumentsError(f"failed to parse function arguments: {error}") from None
    if not isinstance(arguments, Mapping):
        raise WaitArgumentsError("wait expects JSON arguments")
    cell_id = arguments.get("cell_id")
    if isinstance(cell_id, int) and not isinstance(cell_id, bool):
        if cell_id.bit_length() > 64:  # no cell has such an id (and str() may refuse it)
            raise WaitArgumentsError("failed to parse function arguments: no such `cell_id`")
        cell_id = str(cell_id)
    if not isinstance(cell_id, str):
        problem = "missing field `cell_id`" if cell_id is None else "`cell_id` must be a string"
        raise WaitArgumentsError(f"failed to parse function arguments: {problem}")

    def integer(key: str, default: int) -> int:
        value = arguments.get(key)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WaitArgumentsError(
                f"failed to parse function arguments: `{key}` must be a non-negative integer"
            )
        return value

    terminate = arguments.get("terminate", False)
    if terminate is None:
        terminate = False
    if not isinstance(terminate, bool):
        raise WaitArgumentsError(
            "failed to parse function arguments: `terminate` must be a boolean"
        )
    return (
        cell_id,
        integer("yield_time_ms", DEFAULT_YIELD_TIME_MS),
        integer("max_tokens", DEFAULT_MAX_OUTPUT_TOKENS),
        terminate,
    )
