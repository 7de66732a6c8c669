"""The host <-> worker-process pipe protocol: every frame, defined once for both ends.

A frame is ``[u32 total length][u32 header length][header][body]`` (big-endian). Each
kind of frame is one class below; the host (``_engine/_worker_process.py``) and the
worker (:mod:`._worker_process_main`) both encode with its :meth:`encode` and read with
:class:`FrameReader`, which hands out the same objects, so neither end writes or
reads a header of its own.

* host -> worker: :class:`Create`, :class:`SetLimits`, :class:`Post`, :class:`Cancel`,
  :class:`Close` (an isolate ``id``), :class:`Selftest`;
* worker -> host: :class:`Ready` (V8 is up; ``unconfined`` lists what of the
  confinement could not be applied), :class:`Created` (with an ``error`` or none),
  :class:`Batch` (a batch of the isolate's messages, or ``None``: dropped as
  oversized), :class:`Task` (an evaluation ended), :class:`Closed`,
  :class:`SelftestResults`.

Most frames have a small JSON header (``{"op": "close", "id": 3}``: ``op`` names the
class, the other keys are its fields, limits as :class:`IsolateLimits`' own names);
the body carries the bulky part verbatim (program code, message batches) so it is
never escaped twice. The three frames of every tool call (:class:`Post` to the worker,
:class:`Batch` and :class:`Task` back) have a binary header instead: a letter and
fixed-size integers, so neither side encodes or parses JSON for them. A JSON header
starts with ``{``, so the reader tells them apart by the first byte. This module
imports nothing of trio or attrs, so the worker process starts fast.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, TypeAlias

from ._values import OUTCOMES, IsolateLimits, Outcome

_LENGTHS = struct.Struct(">II")
_POST = struct.Struct(">cIIIB")  # b"P", isolate id, tag, probe tag (0: none), quiet
_BATCH = struct.Struct(">cI")  # b"B" (body: the batch) or b"O" (oversized), isolate id
_TASK = struct.Struct(">cIIB")  # b"T", isolate id, tag, outcome (body: the detail)
_OUTCOME_CODES = {outcome: code for code, outcome in enumerate(OUTCOMES)}

#: Upper bound of one frame; a bigger one means a corrupt stream.
MAX_FRAME = 1 << 30


class FrameError(Exception):
    """The byte stream does not contain valid frames."""


#: One encoder for every header: ``json.dumps`` with an option builds one per call.
_HEADER_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _pack(head: bytes, body: str | None) -> bytes:
    data = b"" if body is None else body.encode("utf-8", "surrogatepass")
    # (One copy of the body, not one per `+`: a frame may carry megabytes.)
    return b"".join((_LENGTHS.pack(len(head) + len(data) + 4, len(head)), head, data))


class _JsonFrame:
    """A frame with a JSON header: ``op`` and the dataclass's fields (an
    :class:`IsolateLimits` as an object of its own fields)."""

    __slots__ = ()
    OP: ClassVar[str]

    def encode(self) -> bytes:
        header: dict[str, Any] = {"op": self.OP}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            header[field.name] = (
                dataclasses.asdict(value) if isinstance(value, IsolateLimits) else value
            )
        return _pack(_HEADER_ENCODER.encode(header).encode("utf-8"), None)

    @classmethod
    def decode(cls, header: dict[str, Any]) -> _JsonFrame:
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            value = header.get(field.name)
            kind = str(field.type)
            if kind == "IsolateLimits":
                if not isinstance(value, dict):
                    raise FrameError(f"corrupt frame: {cls.OP} without limits")
                value = IsolateLimits(
                    memory_limit_bytes=_int(value.get("memory_limit_bytes")),
                    max_message_chars=_int(value.get("max_message_chars")),
                )
            elif kind == "int":
                value = _int(value)
            elif kind == "str":
                if not isinstance(value, str):
                    raise FrameError(f"corrupt frame: {cls.OP}.{field.name} is not text")
            elif kind == "str | None":
                if value is not None and not isinstance(value, str):
                    raise FrameError(f"corrupt frame: {cls.OP}.{field.name} is not text")
            elif kind == "list[str]":
                if not isinstance(value, list):
                    raise FrameError(f"corrupt frame: {cls.OP}.{field.name} is not a list")
                value = [str(item) for item in value]
            elif kind == "dict[str, str]":
                if not isinstance(value, dict):
                    raise FrameError(f"corrupt frame: {cls.OP}.{field.name} is not an object")
                value = {str(key): str(item) for key, item in value.items()}
            values[field.name] = value
        return cls(**values)


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise FrameError("corrupt frame: a number is missing")
    return value


# -- host -> worker ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Create(_JsonFrame):
    """Create isolate ``id`` with ``limits``; answered by :class:`Created`."""

    OP: ClassVar[str] = "create"
    id: int
    limits: IsolateLimits


@dataclass(frozen=True, slots=True)
class SetLimits(_JsonFrame):
    """Change isolate ``id``'s limits (a warm isolate handed to a session)."""

    OP: ClassVar[str] = "limits"
    id: int
    limits: IsolateLimits


class Post(NamedTuple):
    """Post ``body`` (commands' JSON text) to isolate ``id`` under ``tag``; ``quiet``:
    report only a failure; ``probe``: queue the idleness probe behind it under that
    tag (see ``NativeIsolate.post``). Binary (tags are positive: 0 stands for no probe).
    (The three frames of every tool call are named tuples, immutable values too: a
    frozen dataclass took twice as long to build, on every crossing.)"""

    id: int
    tag: int
    body: str
    quiet: bool = False
    probe: int | None = None

    def encode(self) -> bytes:
        return _pack(_POST.pack(b"P", self.id, self.tag, self.probe or 0, self.quiet), self.body)


@dataclass(frozen=True, slots=True)
class Cancel(_JsonFrame):
    """Interrupt isolate ``id``'s evaluation ``tag``."""

    OP: ClassVar[str] = "cancel"
    id: int
    tag: int


@dataclass(frozen=True, slots=True)
class Close(_JsonFrame):
    """Close isolate ``id``; answered by :class:`Closed`."""

    OP: ClassVar[str] = "close"
    id: int


@dataclass(frozen=True, slots=True)
class Selftest(_JsonFrame):
    """Try what the confinement forbids, in ``dir`` (tests only: see ``_selftest.py``)."""

    OP: ClassVar[str] = "selftest"
    dir: str


# -- worker -> host ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ready(_JsonFrame):
    """V8 is initialised; ``unconfined`` lists what of the confinement is missing."""

    OP: ClassVar[str] = "ready"
    unconfined: list[str]


@dataclass(frozen=True, slots=True)
class Created(_JsonFrame):
    """Isolate ``id`` exists now, or could not be created (``error``)."""

    OP: ClassVar[str] = "created"
    id: int
    error: str | None = None


class Batch(NamedTuple):
    """A batch of isolate ``id``'s messages (JSON text), or ``None``: one dropped for
    being larger than its ``max_message_chars``. Binary."""

    id: int
    text: str | None

    def encode(self) -> bytes:
        if self.text is None:
            return _pack(_BATCH.pack(b"O", self.id), "")
        return _pack(_BATCH.pack(b"B", self.id), self.text)


class Task(NamedTuple):
    """Isolate ``id``'s evaluation ``tag`` ended with ``outcome``. Binary."""

    id: int
    tag: int
    outcome: Outcome
    detail: str

    def encode(self) -> bytes:
        head = _TASK.pack(b"T", self.id, self.tag, _OUTCOME_CODES[self.outcome])
        return _pack(head, self.detail)


@dataclass(frozen=True, slots=True)
class Closed(_JsonFrame):
    """Isolate ``id`` is gone."""

    OP: ClassVar[str] = "closed"
    id: int


@dataclass(frozen=True, slots=True)
class SelftestResults(_JsonFrame):
    """What each forbidden action of :class:`Selftest` gave (``"ok"`` or an error)."""

    OP: ClassVar[str] = "selftest-results"
    results: dict[str, str]


HostFrame: TypeAlias = Create | SetLimits | Post | Cancel | Close | Selftest
"""What the host sends."""
WorkerFrame: TypeAlias = Ready | Created | Batch | Task | Closed | SelftestResults
"""What a worker sends."""
Frame: TypeAlias = HostFrame | WorkerFrame

_BY_OP: dict[str, type[_JsonFrame]] = {
    cls.OP: cls for cls in (Create, SetLimits, Cancel, Close, Selftest, Ready, Created, Closed)
}
_BY_OP[SelftestResults.OP] = SelftestResults


class FrameReader:
    """Incremental decoder: feed bytes, take complete frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray) -> list[Frame]:
        buffer = self._buffer
        buffer += data
        frames: list[Frame] = []
        while len(buffer) >= 8:
            total, head_length = _LENGTHS.unpack_from(buffer)
            if total > MAX_FRAME or head_length > total - 4:
                raise FrameError("corrupt frame header")
            if len(buffer) < total + 4:
                break
            head = bytes(buffer[8 : 8 + head_length])
            if head[:1] == b"{":
                frames.append(_json(head))
            else:
                # The body is decoded where it lies: a frame of megabytes is not
                # copied twice first (each copy of 16 MiB cost the host's event loop
                # milliseconds, more with the page faults of fresh memory).
                with memoryview(buffer) as view, view[8 + head_length : total + 4] as body:
                    frames.append(_binary(head, body))
            del buffer[: total + 4]
        return frames


def _json(head: bytes) -> Frame:
    try:
        header = json.loads(head)
    except ValueError as error:
        raise FrameError(f"corrupt frame: {error}") from None
    if not isinstance(header, dict):
        raise FrameError("corrupt frame: header is not an object")
    cls = _BY_OP.get(header.get("op"))  # type: ignore[arg-type]
    if cls is None:
        raise FrameError("corrupt frame: unknown op")
    return cls.decode(header)  # type: ignore[return-value]


def _text(body: bytes | memoryview) -> str:
    return str(body, "utf-8", "surrogatepass")


def _binary(head: bytes, body: bytes | memoryview) -> Frame:
    """A frame with a binary header."""
    kind = head[:1]
    try:
        if kind == b"P":
            _, isolate_id, tag, probe, quiet = _POST.unpack(head)
            return Post(isolate_id, tag, _text(body), quiet=bool(quiet), probe=probe or None)
        if kind == b"B":
            return Batch(_BATCH.unpack(head)[1], _text(body))
        if kind == b"O":
            return Batch(_BATCH.unpack(head)[1], None)
        if kind == b"T":
            _, isolate_id, tag, outcome = _TASK.unpack(head)
            return Task(isolate_id, tag, OUTCOMES[outcome], _text(body))
    except (struct.error, IndexError):
        raise FrameError("corrupt frame: bad binary header") from None
    raise FrameError("corrupt frame: unknown header")
