"""The bridge protocol: messages from an isolate, validated as untrusted input.

The JavaScript runtime sends batches of JSON messages (see ``js/channel.js``). A program
can overwrite or call any global it sees, so nothing coming out of an isolate is
trusted: :class:`MessageValidator` checks every field, that tool call ids are fresh and
in order, that tools are enabled, that payloads respect the limits, and turns each
message into a typed :data:`EngineEvent`. Anything malformed raises
:class:`ProtocolViolation`, which fails that cell only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn, Protocol, TypeAlias

import attrs

from .._types import JSON, Audio, Image, ImageDetail, Text
from ._decode import (
    Steps,
    TooDeep,
    TooLarge,
    decode_inline,
    decode_steps,
    finish,
    host_bytes,
    host_bytes_steps,
)

_DETAILS: Final = {detail.value: detail for detail in ImageDetail}


class ProtocolViolation(Exception):
    """A message from the isolate broke the protocol or a limit.

    ``events_before`` holds the events of the same batch that came before the bad
    message (the isolate keeps the output among them)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.events_before: list[EngineEvent] = []


@attrs.frozen
class Started:
    """The program is about to run (arms yield timers)."""


@attrs.frozen
class Output:
    item: Text | Image | Audio
    size: int


@attrs.frozen
class Notify:
    text: str


@attrs.frozen
class ClockRead:
    """The program read the clock (``Date.now()``, ``new Date()``, ``Temporal.Now``):
    the values, in order, for the cell's journal (see ``journal.py``)."""

    values: tuple[float, ...]


@attrs.frozen
class YieldRequested:
    pass


@attrs.frozen
class ToolCallRequested:
    id: str
    ident: str
    input: JSON | None
    has_input: bool
    #: What ``input`` holds on the host as Python objects (see ``_decode.host_bytes``),
    #: counted against ``RuntimeConfig.max_tool_input_bytes`` while the call runs.
    host_bytes: int = attrs.field(default=0, eq=False)


@attrs.frozen
class TimerSet:
    id: int
    delay: float


@attrs.frozen
class TimerCleared:
    id: int


@attrs.frozen
class BufferMemoryExceeded:
    """The program tried to go over ``memory_limit_bytes`` of ArrayBuffer memory (see
    ``js/buffers.js``); the isolate sends nothing after it."""


@attrs.frozen
class HeapMemoryExceeded:
    """A built-in call would have taken the cell over ``memory_limit_bytes`` in one step
    (see ``js/allocations.js``); the isolate sends nothing after it."""


@attrs.frozen
class Finished:
    """The program ended. ``writes`` maps each key it stored to the value's JSON text,
    exactly as the runtime's ``store`` serialized (and checked) it: the host keeps and
    passes on that text without ever parsing it (see ``_session_runtime.py``).
    ``members`` maps each key to its member of the stored values' JSON object,
    ``"key":"<the text as a JSON string>"``, encoded in steps while the batch was
    parsed (:func:`member_steps`): the session then only joins them."""

    error_text: str | None
    writes: dict[str, str]
    members: dict[str, str] = attrs.field(factory=dict, eq=False)


EngineEvent: TypeAlias = (
    Started
    | Output
    | Notify
    | YieldRequested
    | ToolCallRequested
    | TimerSet
    | TimerCleared
    | BufferMemoryExceeded
    | HeapMemoryExceeded
    | Finished
    | ClockRead
)


class EngineListener(Protocol):
    """Receives what an isolate reports. Every method runs on the trio thread."""

    def on_engine_event(self, event: EngineEvent) -> None: ...

    def on_engine_idle(self) -> None: ...

    def on_engine_failure(self, message: str) -> None: ...


def json_depth_exceeds(value: JSON, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` arrays/objects (iterative)."""
    # The common shapes first, without the walk's stack: a scalar, or one object or
    # array of scalars (a tool's arguments or result, twice per tool call).
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return False
    if limit >= 1:
        for child in children:
            if isinstance(child, dict | list):
                break
        else:
            return False
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


def _reject_constant(name: str) -> NoReturn:
    # JSON.stringify never writes NaN or Infinity; Python's json module would accept them.
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    # `JSON.rawJSON("1e400")` can put a literal in a message that Python reads as an
    # infinity, which is not JSON data (it would fail the host's own json.dumps later).
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


#: One decoder for every batch: ``json.loads`` with an option builds a new decoder (and
#: its scanner) per call, a measurable part of a tool call's cost on the trio thread.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _loads(text: str) -> Any:
    return _DECODER.decode(text)


#: The same for encoding what goes to the isolate (tool results, commands):
#: ``json.dumps(value, ensure_ascii=False, allow_nan=False)`` builds an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, allow_nan=False)``, with one encoder."""
    return _ENCODER.encode(value)


#: Characters of a stored value's text encoded between two yields of
#: :func:`member_steps` (a fraction of a millisecond of the C encoder).
MEMBER_CHUNK_CHARS = 256 * 1024


def member_steps(key: str, text: str) -> Steps[str]:
    """``dumps(key) + ":" + dumps(text)``, in steps of :data:`MEMBER_CHUNK_CHARS`: the
    encoder escapes each character on its own (``ensure_ascii=False`` leaves every
    other character, a lone surrogate too, as it is), so the pieces joined are the
    same text. Encoding 8 MiB at once held the trio thread for 10 to 30 ms."""
    parts = [dumps(key), ':"']
    for start in range(0, len(text), MEMBER_CHUNK_CHARS):
        parts.append(dumps(text[start : start + MEMBER_CHUNK_CHARS])[1:-1])
        yield
    parts.append('"')
    return "".join(parts)


#: Clock readings one message may carry (the runtime sends them in batches of 1024).
MAX_CLOCK_READINGS = 1024


def _clock(message: dict[str, Any]) -> ClockRead:
    values = message.get("v")
    if not isinstance(values, list) or len(values) > MAX_CLOCK_READINGS:
        raise ProtocolViolation(f"a 'clock' message carries at most {MAX_CLOCK_READINGS} readings")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ProtocolViolation("a clock reading must be a number")
        if not math.isfinite(value):
            raise ProtocolViolation("a clock reading must be finite")
    return ClockRead(tuple(float(value) for value in values))


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
    """Validates the message stream of one cell, in order.

    ``tool_kinds`` (JS identifier -> ``"function"`` or ``"freeform"``), when given, also
    checks that each tool input has its tool's shape (a JSON object or a string);
    without it an input must be one of the two.
    """

    def __init__(
        self,
        *,
        tool_idents: frozenset[str] = frozenset(),
        max_json_depth: int,
        tool_kinds: Mapping[str, str] | None = None,
        max_host_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self._max_host_bytes = max_host_bytes
        self._checked_depth = False  # the batch being parsed was decoded by decode_bounded
        self._tool_kinds = dict(tool_kinds) if tool_kinds is not None else {}
        self._tool_idents = tool_idents | frozenset(self._tool_kinds)
        self._max_json_depth = max_json_depth
        self._started = False
        self._finished = False
        self._next_tool = 1
        self._next_timer = 1

    def parse_batch(self, text: str, *, inline: bool | None = None) -> list[EngineEvent]:
        """:meth:`parse_batch_steps` run to its end in one go."""
        return finish(self.parse_batch_steps(text, inline=inline))

    def parse_batch_steps(
        self, text: str, *, inline: bool | None = None
    ) -> Steps[list[EngineEvent]]:
        """Parse one batch (a JSON array of messages) into events, in steps.

        A batch that ``decode_inline`` leaves to slices is decoded by
        :func:`~._decode.decode_steps`: stopped at the depth limit (two more levels for
        the batch and its message) and at ``max_host_bytes`` of Python objects beyond
        its strings' characters, in steps, as are the host bytes of each tool input, so
        the isolate drives these steps a slice at a time (see ``_backlog.py``);
        ``inline`` is what ``decode_inline`` said, when the caller asked it already."""
        try:
            self._checked_depth = not (inline if inline is not None else decode_inline(text))
            if not self._checked_depth:
                batch = _loads(text)
            else:
                # Checked first, then built: nothing is built of a batch over its budget.
                for build in (False, True):
                    batch = yield from decode_steps(
                        text,
                        max_depth=self._max_json_depth + 2,
                        max_bytes=self._max_host_bytes,
                        build=build,
                    )
        except (RecursionError, TooDeep):
            raise ProtocolViolation(self._too_deep("a message")) from None
        except TooLarge:
            raise ProtocolViolation(
                f"a message batch would take more than {self._max_host_bytes} bytes on the "
                "host as Python objects (RuntimeConfig.max_tool_input_bytes)"
            ) from None
        except ValueError as error:
            raise ProtocolViolation(f"malformed message batch: {error}") from None
        if not isinstance(batch, list):
            raise ProtocolViolation("a message batch must be a JSON array")
        events: list[EngineEvent] = []
        for message in batch:
            try:
                event = self._parse(message)
            except ProtocolViolation as violation:
                violation.events_before = events
                raise
            if isinstance(event, ToolCallRequested) and isinstance(event.input, dict | list):
                # What the input holds, counted in steps too (a walk of its objects).
                size = yield from host_bytes_steps(event.input)
                event = attrs.evolve(event, host_bytes=size)
            elif isinstance(event, Finished) and event.writes:
                for key, text in event.writes.items():
                    event.members[key] = yield from member_steps(key, text)
            events.append(event)
        return events

    def _parse(self, message: Any) -> EngineEvent:
        if not isinstance(message, dict):
            raise ProtocolViolation("a message must be a JSON object")
        kind = message.get("t")
        if kind == "clock":
            # Travels at the end of a batch, so it may follow `done`.
            return _clock(message)
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
        if kind == "audio":
            url = _string(message, "audio_url")
            if not url[:5].lower() == "data:":
                raise ProtocolViolation("audio must be a data: URL")
            return Output(Audio(url), len(url))
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
            if (
                not isinstance(delay, int | float)
                or isinstance(delay, bool)
                or not math.isfinite(delay)
                or delay < 0
            ):
                raise ProtocolViolation("timer delay must be a non-negative number")
            return TimerSet(timer_id, float(delay) / 1000.0)
        if kind == "clear":
            timer_id = _int(message, "id")
            if not 0 < timer_id < self._next_timer:
                raise ProtocolViolation(f"clear of unknown timer id {timer_id}")
            return TimerCleared(timer_id)
        if kind == "done":
            return self._done(message)
        if kind == "memory":
            self._finished = True
            return BufferMemoryExceeded()
        if kind == "heap":
            self._finished = True
            return HeapMemoryExceeded()
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
        kind = self._tool_kinds.get(ident)
        if kind == "function" and not isinstance(value, dict):
            raise ProtocolViolation(f"tool `{ident}` input must be a JSON object")
        if kind == "freeform" and not isinstance(value, str):
            raise ProtocolViolation(f"tool `{ident}` input must be a string")
        if has_input and not isinstance(value, dict | str):
            raise ProtocolViolation(f"tool `{ident}` input must be a JSON object or a string")
        # (A message's input is two levels down in its batch: decode_bounded checked it.)
        if not self._checked_depth and json_depth_exceeds(value, self._max_json_depth):
            raise ProtocolViolation(self._too_deep(f"tool `{ident}` input"))
        # (The host bytes of an object input are counted by parse_batch_steps.)
        size = 0 if isinstance(value, dict | list) else host_bytes(value)
        return ToolCallRequested(call_id, ident, value, has_input, size)

    def _too_deep(self, what: str) -> str:
        # Also used when the text nests too deep for the JSON parser itself.
        return (
            f"{what} nests deeper than the limit of {self._max_json_depth} "
            "(RuntimeConfig.max_json_depth)"
        )

    def _done(self, message: dict[str, Any]) -> Finished:
        error = message.get("error")
        if error is not None and not isinstance(error, str):
            raise ProtocolViolation("field 'error' of a 'done' message must be a string or null")
        raw_writes = message.get("writes")
        if not isinstance(raw_writes, dict):
            raise ProtocolViolation("field 'writes' of a 'done' message must be an object")
        writes: dict[str, str] = {}
        for key, text in raw_writes.items():
            # Only the type is checked: the text is opaque to the host. The runtime's
            # `store` checked its depth and numbers; a text that is not valid JSON
            # could only make `load` of that key throw in a later cell.
            if not isinstance(text, str) or not text:
                raise ProtocolViolation("stored values must arrive as JSON text")
            writes[key] = text
        self._finished = True
        return Finished(error, writes)
