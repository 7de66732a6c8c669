"""The bridge protocol: messages from an isolate, validated as untrusted input.

The JavaScript runtime sends batches of JSON messages (see ``js/runtime.js``). A program
can overwrite or call any global it sees, so nothing coming out of an isolate is
trusted: :class:`MessageValidator` checks every field, that tool call ids are fresh and
in order, that tools are enabled, that payloads respect the limits, and turns each
message into a typed :data:`EngineEvent`. Anything malformed raises
:class:`ProtocolViolation`, which fails that cell only.
"""

from __future__ import annotations

import json
from typing import Any, Final, TypeAlias

import attrs

from .._types import JSON, Image, ImageDetail, Text

_DETAILS: Final = {detail.value: detail for detail in ImageDetail}


class ProtocolViolation(Exception):
    """A message from the isolate broke the protocol or a limit."""


@attrs.frozen
class Started:
    """The program is about to run (arms yield timers)."""


@attrs.frozen
class Output:
    item: Text | Image
    size: int


@attrs.frozen
class Notify:
    text: str


@attrs.frozen
class YieldRequested:
    pass


@attrs.frozen
class ToolCallRequested:
    id: str
    ident: str
    input: JSON | None
    has_input: bool


@attrs.frozen
class TimerSet:
    id: int
    delay: float


@attrs.frozen
class TimerCleared:
    id: int


@attrs.frozen
class Finished:
    error_text: str | None
    writes: dict[str, JSON]


EngineEvent: TypeAlias = (
    Started
    | Output
    | Notify
    | YieldRequested
    | ToolCallRequested
    | TimerSet
    | TimerCleared
    | Finished
)


def json_depth_exceeds(value: JSON, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` arrays/objects (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


def _string(message: dict[str, Any], key: str) -> str:
    value = message.get(key)
    if not isinstance(value, str):
        raise ProtocolViolation(f"field {key!r} of a {message.get('t')!r} message must be a string")
    return value


def _int(message: dict[str, Any], key: str) -> int:
    value = message.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolViolation(
            f"field {key!r} of a {message.get('t')!r} message must be an integer"
        )
    return value


class MessageValidator:
    """Validates the message stream of one cell, in order."""

    def __init__(self, *, tool_idents: frozenset[str], max_json_depth: int) -> None:
        self._tool_idents = tool_idents
        self._max_json_depth = max_json_depth
        self._started = False
        self._finished = False
        self._next_tool = 1
        self._next_timer = 1

    def parse_batch(self, text: str) -> list[EngineEvent]:
        """Parse one batch (a JSON array of messages) into events."""
        try:
            batch = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise ProtocolViolation(f"malformed message batch: {error}") from None
        if not isinstance(batch, list):
            raise ProtocolViolation("a message batch must be a JSON array")
        return [self._parse(message) for message in batch]

    def _parse(self, message: Any) -> EngineEvent:
        if not isinstance(message, dict):
            raise ProtocolViolation("a message must be a JSON object")
        kind = message.get("t")
        if self._finished:
            raise ProtocolViolation(f"{kind!r} message after completion")
        if kind == "started":
            if self._started:
                raise ProtocolViolation("duplicate 'started' message")
            self._started = True
            return Started()
        if not self._started:
            raise ProtocolViolation(f"{kind!r} message before 'started'")
        if kind == "text":
            text = _string(message, "text")
            return Output(Text(text), len(text.encode("utf-8", "surrogatepass")))
        if kind == "image":
            url = _string(message, "image_url")
            detail = _DETAILS.get(_string(message, "detail"))
            if detail is None:
                raise ProtocolViolation("invalid image detail")
            return Output(Image(url, detail), len(url))
        if kind == "notify":
            return Notify(_string(message, "text"))
        if kind == "yield":
            return YieldRequested()
        if kind == "tool":
            return self._tool(message)
        if kind == "timer":
            timer_id = _int(message, "id")
            if timer_id != self._next_timer:
                raise ProtocolViolation(f"timer id {timer_id} is out of order")
            self._next_timer += 1
            delay = message.get("ms")
            if not isinstance(delay, int | float) or isinstance(delay, bool) or delay < 0:
                raise ProtocolViolation("timer delay must be a non-negative number")
            return TimerSet(timer_id, float(delay) / 1000.0)
        if kind == "clear":
            return TimerCleared(_int(message, "id"))
        if kind == "done":
            return self._done(message)
        raise ProtocolViolation(f"unknown message type {kind!r}")

    def _tool(self, message: dict[str, Any]) -> ToolCallRequested:
        call_id = _string(message, "id")
        if call_id != f"tool-{self._next_tool}":
            raise ProtocolViolation(f"tool call id {call_id!r} is not fresh")
        self._next_tool += 1
        ident = _string(message, "name")
        if ident not in self._tool_idents:
            raise ProtocolViolation(f"tool `{ident}` is not enabled in exec")
        has_input = "input" in message
        value = message.get("input")
        if json_depth_exceeds(value, self._max_json_depth):
            raise ProtocolViolation(
                f"tool `{ident}` input nests deeper than the limit of "
                f"{self._max_json_depth} (RuntimeConfig.max_json_depth)"
            )
        return ToolCallRequested(call_id, ident, value, has_input)

    def _done(self, message: dict[str, Any]) -> Finished:
        error = message.get("error")
        if error is not None and not isinstance(error, str):
            raise ProtocolViolation("field 'error' of a 'done' message must be a string or null")
        raw_writes = message.get("writes")
        if not isinstance(raw_writes, dict):
            raise ProtocolViolation("field 'writes' of a 'done' message must be an object")
        writes: dict[str, JSON] = {}
        for key, text in raw_writes.items():
            if not isinstance(text, str):
                raise ProtocolViolation("stored values must arrive as JSON text")
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                raise ProtocolViolation(f"stored value {key!r} is not valid JSON") from None
            if json_depth_exceeds(value, self._max_json_depth):
                raise ProtocolViolation(
                    f"stored value {key!r} nests deeper than the limit of "
                    f"{self._max_json_depth} (RuntimeConfig.max_json_depth)"
                )
            writes[key] = value
        self._finished = True
        return Finished(error, writes)
